//! `toolgauge run SUITE`: models x scenarios x trials with self-correction,
//! reports written as trials finish.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::progress::{Progress, ProgressMode};
use super::{CliError, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::harness::{
    BudgetLimits, Clock, PreparedRun, RunEnding, RunError, RunRequest, Shard, Spent,
};
use crate::pipeline::FeedbackStyle;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Folders of scenario files (read recursively; `models/` and
    /// `examples/` are skipped), or scenario files, run as one suite. With
    /// `--resume`, the run's own suites.
    #[arg(value_name = "SUITE", required_unless_present = "resume")]
    pub suites: Vec<PathBuf>,
    /// Model files, or folders of them. Default: the nearest models/ folder
    /// in SUITE or above it.
    #[arg(long = "models", value_name = "PATH")]
    pub models: Vec<PathBuf>,
    /// A live model file that may play a scenario's simulated user, which
    /// names it by its name in `task.user.model`; it is not measured. A
    /// suite may name no key of yours otherwise: a model file inside it
    /// that plays the user must carry no `api_key_env`.
    #[arg(long = "user-model", value_name = "FILE")]
    pub user_models: Vec<PathBuf>,
    /// An OpenAI-compatible chat model (a model file, kind openai) that
    /// judges for the scenarios' judging servers (`"judge": true`: tau2's
    /// NL assertions). Its endpoint and key go only to judging servers
    /// that `toolgauge import tau2` wrote on this machine or that
    /// --judge-server names, each named when the run starts; a suite
    /// that marks any other server a judge is refused.
    #[arg(long = "judge-model", value_name = "FILE")]
    pub judge_model: Option<PathBuf>,
    /// A judging server that may take the judge though `import tau2` did
    /// not write it: its command as the scenario writes it, words joined
    /// by one space (or its URL). Repeatable.
    #[arg(
        long = "judge-server",
        value_name = "COMMAND",
        requires = "judge_model"
    )]
    pub judge_servers: Vec<String>,
    /// Judge each conversation N times, to report how often the verdict
    /// flips [default: 1]; the first verdict counts.
    #[arg(long = "judge-repeats", value_name = "N", requires = "judge_model",
          value_parser = clap::value_parser!(u32).range(1..=20))]
    pub judge_repeats: Option<u32>,
    /// Trials per model x scenario [default: 20].
    #[arg(long)]
    pub trials: Option<u32>,
    /// Seed of every random choice [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Trials running at once [default: 64]. The only setting `--resume`
    /// lets change: it does not change results.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// `virtual`: simulated latency costs no wall time and timings are
    /// exact; `real`: wall time [default: virtual].
    #[arg(long, value_enum)]
    pub clock: Option<Clock>,
    /// How errors are worded for the model [default: pointer-list].
    #[arg(long, value_enum)]
    pub feedback: Option<FeedbackStyle>,
    /// Run every call of a turn alone, one after the other.
    #[arg(long)]
    pub serial: bool,
    /// Report folder. Default: reports/<run-id>/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into an `--out` folder that already holds a run, replacing it.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Exit 1 when any model x scenario succeeds less often than this.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub min_success: Option<f64>,
    /// Exit 1 when pass^K of any model x scenario is under RATE.
    #[arg(long, value_name = "K:RATE", value_parser = parse_pass_k)]
    pub min_pass_k: Option<(u64, f64)>,
    /// The share of a model x scenario's trials it may lose to
    /// infrastructure (transport errors, replies not of the provider's
    /// format, tools that cannot run) before the run fails [default: 0,
    /// any lost trial fails the run].
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub max_lost: Option<f64>,
    /// Run the K-th of N deterministic parts (1-based); `auto/N` takes K
    /// from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based) + 1.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Save every live exchange (request and response, keys redacted) in DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer live models from a recording in DIR: no network, no keys.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Continue a killed run in DIR with the configuration in DIR/run.json:
    /// trials already in DIR/trials.csv are kept, the rest are run; the
    /// files come out as from one run. A flag that contradicts run.json is
    /// an error.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "force"])]
    pub resume: Option<PathBuf>,
    /// Do not write session.jsonl (every call and result of every trial):
    /// for pure throughput runs.
    #[arg(long)]
    pub no_session: bool,
    /// Probe every live model's endpoint first (`toolgauge doctor`; the
    /// findings are kept in the run folder as doctor-<model>.json and
    /// reused on --resume) and warn when tool results or errors do not
    /// reach the model.
    #[arg(long)]
    pub doctor: bool,
    /// Stop before a request would take the models' spending past USD
    /// dollars, at their prices (every live model needs api.prices):
    /// finished trials are kept, and `--resume` continues the run.
    #[arg(long, value_name = "USD", value_parser = parse_dollars, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Stop before a request would take the models' input and output
    /// tokens past N; finished trials are kept, and `--resume` continues.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Send live models' requests through their providers' batch APIs
    /// (OpenAI Batch, Anthropic Message Batches, Gemini batch mode), at
    /// half price: trials under way form a round, sent as one batch,
    /// polled until it ends; a multi-turn trial asks once per round.
    /// Costs are at the batch rate, batch ids in DIR/batches.jsonl, and
    /// `--resume` follows a batch already submitted. Replies come whole
    /// (no streaming); --concurrency (default 1000 here) bounds a round.
    #[arg(long)]
    pub batch: bool,
    /// No progress output (the verdict is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Print the per-scenario table after the verdict, however long (by
    /// default only when it has at most 40 rows).
    #[arg(long)]
    pub table: bool,
}

impl RunArgs {
    /// The flags as a request: values parsed, nothing resolved yet.
    fn request(&self) -> Result<RunRequest, CliError> {
        Ok(RunRequest {
            suites: self.suites.clone(),
            models: self.models.clone(),
            user_models: self.user_models.clone(),
            judge_model: self.judge_model.clone(),
            judge_repeats: self.judge_repeats.unwrap_or(1),
            judge_servers: self.judge_servers.clone(),
            trials: self.trials,
            seed: self.seed,
            concurrency: self.concurrency,
            clock: self.clock,
            feedback: self.feedback,
            serial: self.serial,
            no_session: self.no_session,
            out: self.out.clone(),
            force: self.force,
            min_success: self.min_success,
            min_pass_k: self.min_pass_k,
            max_lost: self.max_lost,
            shard: self.shard,
            record: self.record.clone(),
            replay: self.replay.clone(),
            resume: self.resume.clone(),
            doctor: self.doctor,
            budget: BudgetLimits {
                max_cost: self.max_cost,
                max_tokens: self.max_tokens,
            },
            batch: self.batch,
        })
    }
}

pub fn run(args: &RunArgs) -> Result<ExitCode, CliError> {
    let prepared = PreparedRun::prepare(&args.request()?)?;
    say_notes(&prepared, args.quiet);
    let out = prepared.out.clone();
    let mut progress = Progress::new(if args.quiet {
        ProgressMode::Quiet
    } else {
        ProgressMode::Auto
    });
    // SIGINT and SIGTERM stop the run the same way; between trials and
    // after them a stop at once says where the run's trials are.
    super::signals::doing(
        "while running; every finished trial is in trials.csv (run --resume continues it)",
    );
    let ending = prepared.execute(&mut progress, args.table, super::signals::requested());
    super::signals::doing(
        "while writing the run's reports; every trial is in trials.csv (report html writes report.html again)",
    );
    let ending = match ending {
        Ok(ending) => ending,
        Err(RunError::Io(e)) => return Err(CliError::Usage(format!("{}: {e}", out.display()))),
        Err(RunError::BatchUnfinished(batch)) => {
            say_batches(&out);
            say_how_to_follow(&out, &args.models);
            return Err(RunError::BatchUnfinished(batch).into());
        }
        Err(error) => return Err(error.into()),
    };
    let (table, violations) = match ending {
        RunEnding::Interrupted { finished, total } => {
            // A batch sent runs on at its provider: say which.
            say_batches(&out);
            let (signal, code) = super::signals::received().unwrap_or(("SIGINT", EXIT_INTERRUPTED));
            eprintln!(
                "interrupted ({signal}): {finished} of {total} trial(s) are in {}; \
                 continue with: {}",
                out.join("trials.csv").display(),
                resume_command(&out, &args.models)
            );
            return Ok(ExitCode::from(code));
        }
        RunEnding::BudgetSpent {
            finished,
            total,
            spent,
            limits,
            cut,
        } => {
            say_budget_spent(&out, &args.models, finished, total, spent, limits);
            say_cut_spend(cut);
            return Ok(ExitCode::from(EXIT_FAILED));
        }
        RunEnding::Finished {
            verdict: table,
            violations,
            sources,
        } => {
            sources.iter().for_each(say_server_stats);
            (table, violations)
        }
    };
    println!("{table}");
    if !args.quiet {
        eprintln!("reports written to {}", out.display());
    }
    if violations.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{} model x scenario result(s) below threshold:",
        violations.len()
    );
    for v in &violations {
        let line = format!("  {} / {}: {}", v.model, v.scenario, v.message);
        eprintln!("{}", super::for_terminal(&line));
    }
    Ok(ExitCode::from(EXIT_FAILED))
}

/// What setting the run up found: warnings always, the rest unless quiet.
fn say_notes(prepared: &PreparedRun, quiet: bool) {
    for warning in &prepared.notes.warnings {
        eprintln!("warning: {}", super::for_terminal(warning));
    }
    if !quiet {
        for line in &prepared.notes.info {
            eprintln!("{}", super::for_terminal(line));
        }
    }
}

/// A batch could not be followed: what is kept, how to go on.
fn say_how_to_follow(out: &Path, models: &[PathBuf]) {
    eprintln!(
        "the run stopped: every finished trial is in {}; continue with: {} \
         (it follows the batch, not sending it again)",
        out.join("trials.csv").display(),
        resume_command(out, models)
    );
}

/// The command that resumes the run in `out`, with the model files the
/// user gave (a live model's key goes only where a file given names).
fn resume_command(out: &Path, models: &[PathBuf]) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut command = format!("toolgauge run --resume {}", absolute(out).display());
    for model in models {
        command.push_str(&format!(" --models {}", absolute(model).display()));
    }
    command
}

/// The run's batches, each with how it ended, from its ledger.
fn say_batches(out: &Path) {
    let entries = crate::batch::ledger::entries(out).unwrap_or_default();
    for batch in crate::harness::batch_records(entries) {
        eprintln!("{}", super::for_terminal(&batch.to_string()));
    }
}

/// What the trials the budget cut had spent: paid, and in no row of
/// trials.csv (`--resume` runs those trials again from their start).
fn say_cut_spend((cut, trials): (Spent, usize)) {
    if trials == 0 {
        return;
    }
    eprintln!(
        "of that, ${:.4} and {} tokens over {} request(s) went to {trials} trial(s) the budget cut: \
         paid, and in no report's rows (a resume runs them again from their start)",
        cut.cost, cut.tokens, cut.requests
    );
}

/// The budget ended the run: what was spent, what is kept, how to go on.
/// Not a model's failure; the run is not complete, so it does not pass.
fn say_budget_spent(
    out: &Path,
    models: &[PathBuf],
    finished: u64,
    total: u64,
    spent: Spent,
    limits: BudgetLimits,
) {
    let mut limit = Vec::new();
    if let Some(usd) = limits.max_cost {
        limit.push(format!("${:.4} of --max-cost ${usd}", spent.cost));
    }
    if let Some(tokens) = limits.max_tokens {
        limit.push(format!("{} of --max-tokens {tokens} tokens", spent.tokens));
    }
    eprintln!(
        "budget spent ({}, over {} request(s)): the next request could pass it, so none was sent; \
         {finished} of {total} trial(s) are in {}; continue with: {}",
        limit.join(", "),
        spent.requests,
        out.join("trials.csv").display(),
        resume_command(out, models)
    );
}

/// Where `--shard auto/N` reads its index.
const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// A `--shard` that is neither K/N nor auto/N with its index set.
#[derive(Debug, thiserror::Error)]
enum BadShard {
    #[error(transparent)]
    Shard(#[from] crate::harness::ShardError),
    #[error(
        "auto/N takes K from {JOB_INDEX} (a Kubernetes Indexed Job's, 0-based), which is {0}; \
         give K/N elsewhere"
    )]
    NoIndex(&'static str),
}

/// `--shard K/N` or `auto/N`, as clap parses the flag.
fn parse_shard(text: &str) -> Result<Shard, BadShard> {
    let Some(count) = text.strip_prefix("auto/") else {
        return Ok(Shard::parse(text)?);
    };
    let index = std::env::var(JOB_INDEX).map_err(|_| BadShard::NoIndex("not set"))?;
    let index: u32 = index
        .trim()
        .parse()
        .map_err(|_| BadShard::NoIndex("not a whole number"))?;
    let one_based = index.checked_add(1).ok_or(BadShard::NoIndex("too large"))?;
    Ok(Shard::parse(&format!("{one_based}/{count}"))?)
}

/// A `--max-cost` that is not a positive number of dollars.
#[derive(Debug, thiserror::Error)]
#[error("give US dollars above 0, e.g. 2.50")]
struct BadDollars;

/// `--max-cost USD`, as clap parses the flag.
fn parse_dollars(text: &str) -> Result<f64, BadDollars> {
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(BadDollars),
    }
}

/// One MCP server's start-ups and calls over the run.
fn say_server_stats(s: &crate::tool::mcp::SourceStats) {
    eprintln!(
        "MCP server {}: {} start-up(s), {:.1} ms on average; {} tools/call, p50 {:.2} ms, p95 {:.2} ms, {} error result(s){}",
        s.source,
        s.startups,
        s.startup_ms_mean,
        s.calls,
        s.call_ms_p50,
        s.call_ms_p95,
        s.call_errors,
        if s.bad_outputs > 0 {
            format!(", {} breaking the tool's outputSchema", s.bad_outputs)
        } else {
            String::new()
        }
    );
}

/// A `--min-pass-k` that is not K:RATE.
#[derive(Debug, thiserror::Error)]
enum BadPassK {
    #[error("use K:RATE, e.g. 3:0.8")]
    Form,
    #[error("K must be a whole number")]
    K,
    #[error("RATE must be a number")]
    Rate,
    #[error("K must be at least 1")]
    Zero,
}

/// `--min-pass-k K:RATE`, as clap parses the flag.
fn parse_pass_k(text: &str) -> Result<(u64, f64), BadPassK> {
    let (k, rate) = text.split_once(':').ok_or(BadPassK::Form)?;
    let k: u64 = k.parse().map_err(|_| BadPassK::K)?;
    let rate: f64 = rate.parse().map_err(|_| BadPassK::Rate)?;
    if k == 0 {
        return Err(BadPassK::Zero);
    }
    Ok((k, rate))
}
