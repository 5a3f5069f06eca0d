//! `toolgauge run SUITE`: models x scenarios x trials with self-correction,
//! reports written as trials finish.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{CliError, EXIT_FAILED};
use crate::harness::{self, Clock, ProgressMode, RunPlan, Shard};
use crate::live::LiveOptions;
use crate::live::recording::Replayer;
use crate::model::Model;
use crate::pipeline::feedback::FeedbackStyle;
use crate::pipeline::{ExecMode, ExecOptions};
use crate::report::{self, Aggregate, Fanout, RunRecord, Thresholds, TrialReader, TrialsCsv};
use crate::scenario::load_suite;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ClockArg {
    Virtual,
    Real,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FeedbackArg {
    PointerList,
    Json,
    Bare,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A folder of scenario files (read recursively; `models/` and
    /// `examples/` are skipped), or one scenario file.
    #[arg(value_name = "SUITE")]
    pub suite: PathBuf,
    /// Model files, or folders of them. Default: the nearest models/ folder
    /// in SUITE or above it.
    #[arg(long = "models", value_name = "PATH")]
    pub models: Vec<PathBuf>,
    /// Trials per model x scenario.
    #[arg(long, default_value_t = 20)]
    pub trials: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Trials running at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// `virtual`: simulated latency costs no wall time and timings are
    /// exact; `real`: wall time.
    #[arg(long, value_enum, default_value = "virtual")]
    pub clock: ClockArg,
    /// How errors are worded for the model.
    #[arg(long, value_enum, default_value = "pointer-list")]
    pub feedback: FeedbackArg,
    /// Run every call of a turn alone, one after the other.
    #[arg(long)]
    pub serial: bool,
    /// Report folder. Default: reports/<run-id>/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Exit 1 when any model x scenario succeeds less often than this.
    #[arg(long, value_name = "RATE")]
    pub min_success: Option<f64>,
    /// Exit 1 when pass^K of any model x scenario is under RATE.
    #[arg(long, value_name = "K:RATE")]
    pub min_pass_k: Option<String>,
    /// Run the K-th of N deterministic parts (1-based).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Save every live exchange (request and response, keys redacted) in DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer live models from a recording in DIR: no network, no keys.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Continue a killed run in DIR: trials already in DIR/trials.csv are
    /// kept, the rest are run; the files come out as from one run.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: &RunArgs) -> Result<ExitCode, CliError> {
    let thresholds = Thresholds {
        min_success: args.min_success.map(check_rate).transpose()?,
        min_pass_k: args.min_pass_k.as_deref().map(parse_pass_k).transpose()?,
    };
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(CliError)?;
    if args.trials == 0 {
        return Err(CliError::new("--trials must be at least 1"));
    }
    let out = match (&args.resume, &args.out) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => dir.clone(),
        (None, None) => PathBuf::from("reports").join(run_id()),
    };
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError(format!("{}: cannot create: {e}", out.display())))?;

    let mut models = load_models(args)?;
    let live_options = LiveOptions {
        record: args.record.clone(),
        replay: args.replay.clone(),
    };
    let replayer = args
        .replay
        .as_deref()
        .map(Replayer::load)
        .transpose()
        .map_err(|e| CliError(format!("--replay: {e}")))?
        .map(std::sync::Arc::new);
    for model in &mut models {
        model
            .connect(&live_options, replayer.clone())
            .map_err(CliError)?;
    }
    // Network I/O needs the real clock: on the paused one, every request
    // timeout would fire at once.
    let live_network = replayer.is_none() && models.iter().any(|m| m.is_live());
    if live_network && matches!(args.clock, ClockArg::Virtual) && !args.quiet {
        eprintln!("live models: running on the real clock");
    }
    let sandbox_root = tempfile::tempdir()
        .map_err(|e| CliError(format!("cannot create a sandbox folder: {e}")))?;
    let scenarios = load_suite(&args.suite, sandbox_root.path()).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        CliError(format!(
            "{} bad scenario file(s); no trial was run:\n{}",
            errors.len(),
            lines.join("\n")
        ))
    })?;

    for model in &models {
        let missing = model.unanswerable(&scenarios);
        if let Some(first) = missing.first() {
            return Err(CliError(format!(
                "model {:?} has no recorded result for {} scenario(s), e.g. {first:?}; \
                 run only the scenarios its result file covers",
                model.name(),
                missing.len()
            )));
        }
    }
    let plan = RunPlan {
        scenarios,
        models,
        trials: args.trials,
        seed: args.seed,
        concurrency: args.concurrency,
        clock: match args.clock {
            ClockArg::Virtual if !live_network => Clock::Virtual,
            _ => Clock::Real,
        },
        feedback: match args.feedback {
            FeedbackArg::PointerList => FeedbackStyle::PointerList,
            FeedbackArg::Json => FeedbackStyle::Json,
            FeedbackArg::Bare => FeedbackStyle::Bare,
        },
        exec: ExecOptions {
            mode: if args.serial {
                ExecMode::Serial
            } else {
                ExecMode::Parallel
            },
            ..ExecOptions::default()
        },
        shard,
    };

    let trials_path = out.join("trials.csv");
    // Resuming: the earlier rows move aside and are replayed, in job order,
    // into a new trials.csv, one trial at a time.
    let earlier = out.join("trials.csv.resumed");
    if let Some(dir) = &args.resume {
        if !trials_path.exists() {
            return Err(CliError(format!(
                "--resume {}: no trials.csv there",
                dir.display()
            )));
        }
        let check = TrialReader::open(&plan, &trials_path)
            .map_err(|e| CliError(format!("--resume: {e}")))?;
        for trial in check {
            trial.map_err(|e| CliError(format!("--resume: {e}")))?;
        }
        std::fs::rename(&trials_path, &earlier).map_err(|e| CliError(format!("--resume: {e}")))?;
    }
    write_run_json(&plan, args, &thresholds, &out)?;

    let io_error = |e: std::io::Error| CliError(format!("{}: {e}", out.display()));
    let mut trials_csv = TrialsCsv::create(&trials_path).map_err(io_error)?;
    let mut aggregate = Aggregate::new(&plan);
    let progress = if args.quiet {
        ProgressMode::Quiet
    } else {
        ProgressMode::Auto
    };
    {
        let mut sinks = Fanout(vec![&mut trials_csv, &mut aggregate]);
        let replay: Option<harness::Replay<'_>> = match &args.resume {
            Some(_) => {
                let reader = TrialReader::open(&plan, &earlier).map_err(io_error)?;
                Some(Box::new(reader.map_while(Result::ok)))
            }
            None => None,
        };
        harness::run(&plan, &mut sinks, replay, progress).map_err(io_error)?;
    }
    if args.resume.is_some() {
        std::fs::remove_file(&earlier).map_err(io_error)?;
    }
    let (violations, table) =
        report::write_summaries(&plan, &aggregate, &thresholds, &out).map_err(io_error)?;
    if !args.quiet {
        println!("{table}");
        eprintln!("reports written to {}", out.display());
    }
    if violations.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{} model x scenario result(s) below threshold:",
            violations.len()
        );
        for v in &violations {
            eprintln!("  {} / {}: {}", v.model, v.scenario, v.message);
        }
        Ok(ExitCode::from(EXIT_FAILED))
    }
}

fn check_rate(rate: f64) -> Result<f64, CliError> {
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(CliError(format!("rate {rate} must be between 0 and 1")))
    }
}

fn parse_pass_k(text: &str) -> Result<(u64, f64), CliError> {
    let (k, rate) = text
        .split_once(':')
        .ok_or_else(|| CliError(format!("--min-pass-k {text}: use K:RATE, e.g. 3:0.8")))?;
    let k: u64 = k
        .parse()
        .map_err(|_| CliError(format!("--min-pass-k {text}: K must be a whole number")))?;
    let rate: f64 = rate
        .parse()
        .map_err(|_| CliError(format!("--min-pass-k {text}: RATE must be a number")))?;
    if k == 0 {
        return Err(CliError::new("--min-pass-k: K must be at least 1"));
    }
    Ok((k, check_rate(rate)?))
}

fn load_models(args: &RunArgs) -> Result<Vec<Model>, CliError> {
    let sources = if args.models.is_empty() {
        // The nearest `models/` folder: the suite's own, or a parent's
        // (`run scenarios/bfcl` finds scenarios/models).
        let default = args
            .suite
            .ancestors()
            .map(|dir| dir.join("models"))
            .find(|models| models.is_dir())
            .unwrap_or_else(|| PathBuf::from("scenarios/models"));
        vec![default]
    } else {
        args.models.clone()
    };
    let mut files = Vec::new();
    for source in &sources {
        if source.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(source)
                .map_err(|e| CliError(format!("{}: cannot read: {e}", source.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else if source.exists() {
            files.push(source.clone());
        } else {
            return Err(CliError(format!(
                "{}: no such model file or folder (use --models)",
                source.display()
            )));
        }
    }
    if files.is_empty() {
        return Err(CliError::new("no model files found (use --models PATH)"));
    }
    let mut models: Vec<Model> = Vec::new();
    for file in files {
        let model = Model::load(&file).map_err(CliError::new)?;
        if models.iter().any(|m| m.name() == model.name()) {
            return Err(CliError(format!(
                "{}: model name {:?} is used twice",
                file.display(),
                model.name()
            )));
        }
        models.push(model);
    }
    Ok(models)
}

fn write_run_json(
    plan: &RunPlan,
    args: &RunArgs,
    thresholds: &Thresholds,
    out: &Path,
) -> Result<(), CliError> {
    let record = RunRecord {
        toolgauge: env!("CARGO_PKG_VERSION").to_owned(),
        suite: args.suite.clone(),
        trials: plan.trials,
        seed: plan.seed,
        concurrency: plan.concurrency,
        clock: plan.clock,
        feedback: plan.feedback,
        serial: args.serial,
        shard: args.shard.clone(),
        min_success: thresholds.min_success,
        min_pass_k: thresholds.min_pass_k,
        models: plan.models.iter().map(|m| m.file.clone()).collect(),
        scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
    };
    record
        .write(out)
        .map_err(|e| CliError(format!("{}: {e}", out.display())))
}

/// `run-YYYYMMDD-HHMMSS` in UTC.
fn run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "run-{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
