//! `toolgauge run SUITE`: models x scenarios x trials with self-correction,
//! reports written as trials finish.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::{CliError, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::harness::record::{RunRecord, SuitePaths};
use crate::harness::{self, Clock, ProgressMode, RunError, RunPlan, Shard};
use crate::model::{self, LiveOptions, ModelFile, Replayer};
use crate::pipeline::{ExecMode, ExecOptions, FeedbackStyle};
use crate::report::{
    self, JobKey, Reporters, RunFiles, RunInfo, SessionFile, Thresholds, TrialReader,
};
use crate::scenario::load_suites;

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
    /// Folders of scenario files (read recursively; `models/` and
    /// `examples/` are skipped), or scenario files, run as one suite. With
    /// `--resume`, the run's own suites.
    #[arg(value_name = "SUITE", required_unless_present = "resume")]
    pub suites: Vec<PathBuf>,
    /// Model files, or folders of them. Default: the nearest models/ folder
    /// in SUITE or above it.
    #[arg(long = "models", value_name = "PATH")]
    pub models: Vec<PathBuf>,
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
    pub clock: Option<ClockArg>,
    /// How errors are worded for the model [default: pointer-list].
    #[arg(long, value_enum)]
    pub feedback: Option<FeedbackArg>,
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
    #[arg(long, value_name = "RATE")]
    pub min_success: Option<f64>,
    /// Exit 1 when pass^K of any model x scenario is under RATE.
    #[arg(long, value_name = "K:RATE")]
    pub min_pass_k: Option<String>,
    /// The share of a model x scenario's trials it may lose to
    /// infrastructure (transport errors, replies not of the provider's
    /// format, tools that cannot run) before the run fails [default: 0,
    /// any lost trial fails the run].
    #[arg(long, value_name = "RATE")]
    pub max_lost: Option<f64>,
    /// Run the K-th of N deterministic parts (1-based).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
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
    /// No progress output (the verdict is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Print the per-scenario table after the verdict, however long (by
    /// default only when it has at most 40 rows).
    #[arg(long)]
    pub table: bool,
}

const DEFAULT_TRIALS: u32 = 20;
const DEFAULT_SEED: u64 = 1;
const DEFAULT_CONCURRENCY: usize = 64;

/// The settings of a run, from the command line or, when resuming, from
/// the run's own run.json.
struct Settings {
    suite: SuitePaths,
    trials: u32,
    seed: u64,
    concurrency: usize,
    clock: Clock,
    feedback: FeedbackStyle,
    serial: bool,
    no_session: bool,
    shard: Option<Shard>,
    thresholds: Thresholds,
}

impl Settings {
    /// `live_network`: the run talks to live models, so it needs the real
    /// clock whatever was asked.
    fn resolve(
        args: &RunArgs,
        recorded: Option<&RunRecord>,
        live_network: bool,
    ) -> Result<Settings, CliError> {
        let min_success = args.min_success.map(check_rate).transpose()?;
        let min_pass_k = args.min_pass_k.as_deref().map(parse_pass_k).transpose()?;
        let max_lost = args.max_lost.map(check_rate).transpose()?;
        let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
        let clock = args.clock.map(|clock| match clock {
            ClockArg::Virtual if !live_network => Clock::Virtual,
            _ => Clock::Real,
        });
        let feedback = args.feedback.map(|feedback| match feedback {
            FeedbackArg::PointerList => FeedbackStyle::PointerList,
            FeedbackArg::Json => FeedbackStyle::Json,
            FeedbackArg::Bare => FeedbackStyle::Bare,
        });
        let settings = match recorded {
            None => Settings {
                // Whole paths: `--resume` works from any folder.
                suite: SuitePaths(
                    args.suites
                        .iter()
                        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                        .collect(),
                ),
                trials: args.trials.unwrap_or(DEFAULT_TRIALS),
                seed: args.seed.unwrap_or(DEFAULT_SEED),
                concurrency: args.concurrency.unwrap_or(DEFAULT_CONCURRENCY),
                clock: clock.unwrap_or(if live_network {
                    Clock::Real
                } else {
                    Clock::Virtual
                }),
                feedback: feedback.unwrap_or_default(),
                serial: args.serial,
                no_session: args.no_session,
                shard,
                thresholds: Thresholds {
                    min_success,
                    min_pass_k,
                    max_lost: max_lost.unwrap_or(0.0),
                },
            },
            Some(run) => {
                let same = args.suites.len() == run.suite.0.len()
                    && args
                        .suites
                        .iter()
                        .zip(&run.suite.0)
                        .all(|(a, b)| same_path(a, b));
                if !args.suites.is_empty() && !same {
                    let given = SuitePaths(args.suites.clone());
                    return Err(contradiction("SUITE", given, &run.suite));
                }
                Settings {
                    suite: run.suite.clone(),
                    trials: recorded_value("--trials", args.trials, run.trials)?,
                    seed: recorded_value("--seed", args.seed, run.seed)?,
                    concurrency: args.concurrency.unwrap_or(run.concurrency),
                    clock: recorded_value("--clock", clock, run.clock)?,
                    feedback: recorded_value("--feedback", feedback, run.feedback)?,
                    serial: recorded_value("--serial", args.serial.then_some(true), run.serial)?,
                    no_session: recorded_value(
                        "--no-session",
                        args.no_session.then_some(true),
                        run.no_session,
                    )?,
                    shard: recorded_option(
                        "--shard",
                        shard.map(|s| s.to_string()),
                        run.shard.clone(),
                    )?
                    .as_deref()
                    .map(Shard::parse)
                    .transpose()
                    .map_err(|e| CliError::Usage(format!("run.json: shard: {e}")))?,
                    thresholds: Thresholds {
                        min_success: recorded_option(
                            "--min-success",
                            min_success,
                            run.min_success,
                        )?,
                        min_pass_k: recorded_option("--min-pass-k", min_pass_k, run.min_pass_k)?,
                        max_lost: recorded_value("--max-lost", max_lost, run.max_lost)?,
                    },
                }
            }
        };
        if settings.trials == 0 {
            return Err(CliError::new("--trials must be at least 1"));
        }
        if settings.concurrency == 0 {
            return Err(CliError::new(
                "--concurrency must be at least 1 (trials running at once)",
            ));
        }
        if let Some((k, _)) = settings.thresholds.min_pass_k
            && k > u64::from(settings.trials)
        {
            return Err(CliError::Usage(format!(
                "--min-pass-k: K = {k} is more than the {} trial(s) per model x scenario; \
                 pass^{k} needs at least {k} trials (--trials {k})",
                settings.trials
            )));
        }
        Ok(settings)
    }
}

/// A setting given on the command line of `--resume` must agree with the
/// run's.
fn recorded_value<T: PartialEq + Serialize>(
    flag: &str,
    given: Option<T>,
    recorded: T,
) -> Result<T, CliError> {
    match given {
        Some(value) if value != recorded => {
            Err(contradiction(flag, shown(&value), shown(&recorded)))
        }
        _ => Ok(recorded),
    }
}

fn recorded_option<T: PartialEq + Serialize>(
    flag: &str,
    given: Option<T>,
    recorded: Option<T>,
) -> Result<Option<T>, CliError> {
    match (given, recorded) {
        (Some(value), None) => Err(contradiction(flag, shown(&value), "none")),
        (Some(value), Some(recorded)) => recorded_value(flag, Some(value), recorded).map(Some),
        (None, recorded) => Ok(recorded),
    }
}

fn contradiction(
    setting: &str,
    given: impl std::fmt::Display,
    recorded: impl std::fmt::Display,
) -> CliError {
    CliError::Usage(format!(
        "--resume: {setting} {given} contradicts the run being resumed, which has {recorded} \
         (run.json); leave {setting} out to continue the run as it was"
    ))
}

/// A setting as a person would type it (`real`, `3`, `[3,0.8]`).
fn shown(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// Two spellings of one path (`scenarios` and `./scenarios/`).
fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.components().eq(b.components()),
    }
}

pub fn run(args: &RunArgs) -> Result<ExitCode, CliError> {
    let recorded = args.resume.as_deref().map(read_recorded_run).transpose()?;
    let out = match (&args.resume, &args.out) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => dir.clone(),
        (None, None) => PathBuf::from("reports").join(run_id()),
    };
    if args.resume.is_none() && !args.force {
        refuse_to_overwrite(&out)?;
    }

    let files = match &recorded {
        Some(run) => recorded_models(args, run)?,
        None => load_models(&args.models, args.suites.first().map(PathBuf::as_path))?,
    };
    if args.replay.is_some() && !files.iter().any(ModelFile::is_live) {
        return Err(CliError::new(
            "--replay answers live models from a recording, and no model of this run is live \
             (kind openai, anthropic or gemini); leave --replay out, or name live models with --models",
        ));
    }
    let live_options = LiveOptions {
        record: args.record.clone(),
        replay: args.replay.clone(),
    };
    let replayer = args
        .replay
        .as_deref()
        .map(Replayer::load)
        .transpose()
        .map_err(|e| CliError::Usage(format!("--replay: {e}")))?
        .map(std::sync::Arc::new);
    let models = files
        .iter()
        .map(|file| model::build(file, &live_options, replayer.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    // Network I/O needs the real clock: on the paused one, every request
    // timeout would fire at once.
    let live_network = replayer.is_none() && files.iter().any(ModelFile::is_live);
    if live_network && args.clock.is_none_or(|c| matches!(c, ClockArg::Virtual)) && !args.quiet {
        eprintln!("live models: running on the real clock");
    }
    let settings = Settings::resolve(args, recorded.as_ref(), live_network)?;
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::Usage(format!("{}: cannot create: {e}", out.display())))?;
    if replayer.is_none() {
        for file in files.iter().filter(|f| f.is_live()) {
            super::doctor::before_run(file, &out, args.doctor)?;
        }
    }

    let sandbox_root = tempfile::tempdir()
        .map_err(|e| CliError::Usage(format!("cannot create a sandbox folder: {e}")))?;
    let suite = load_suites(&settings.suite.0, sandbox_root.path()).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        CliError::Usage(format!(
            "{} bad scenario file(s); no trial was run:\n{}",
            errors.len(),
            lines.join("\n")
        ))
    })?;
    for skipped in &suite.skipped {
        eprintln!("warning: {skipped}");
    }
    let scenarios = suite.scenarios;
    // Real tools (MCP servers, endpoints, commands) take real time: on the
    // paused clock every call's timeout would fire at once.
    let mut settings = settings;
    if settings.clock == Clock::Virtual && scenarios.iter().any(|s| s.registry.has_real_tools()) {
        if !args.quiet {
            eprintln!(
                "real tools (MCP servers, HTTP endpoints, commands): running on the real clock"
            );
        }
        settings.clock = Clock::Real;
    }
    if let Some(run) = &recorded {
        run.check_suite(&scenarios)
            .map_err(|e| CliError::Usage(format!("--resume: {e}; resuming would mix two runs")))?;
    }

    for model in &models {
        let missing = model.unanswerable(&scenarios);
        if let Some(first) = missing.first() {
            return Err(CliError::Usage(format!(
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
        trials: settings.trials,
        seed: settings.seed,
        concurrency: settings.concurrency,
        clock: settings.clock,
        exec: ExecOptions {
            mode: if settings.serial {
                ExecMode::Serial
            } else {
                ExecMode::Parallel
            },
            feedback: settings.feedback,
            ..ExecOptions::default()
        },
        shard: settings.shard,
        session_log: !settings.no_session,
    };
    let info = plan.info(settings.thresholds.clone());

    let trials_path = out.join("trials.csv");
    let (earlier, last_kept) = match args.resume {
        Some(_) => {
            let (path, last) = set_aside_finished_trials(&plan, &info, &out)?;
            (Some(path), last)
        }
        None => (None, None),
    };
    write_run_json(&plan, &files, &settings, &out)?;

    let io_error = |e: std::io::Error| CliError::Usage(format!("{}: {e}", out.display()));
    let session_path = out.join("session.jsonl");
    let session = match (settings.no_session, &args.resume) {
        (true, _) => None,
        (false, None) => Some(SessionFile::create(&session_path).map_err(io_error)?),
        (false, Some(_)) => {
            Some(SessionFile::resume(&session_path, &info, last_kept).map_err(io_error)?)
        }
    };
    let mut run_files = RunFiles::create(&out, session).map_err(io_error)?;
    let progress = if args.quiet {
        ProgressMode::Quiet
    } else {
        ProgressMode::Auto
    };
    let table = {
        let mut reporters = Reporters::new(&info, run_files.reporters());
        let replay: Option<harness::Replay<'_>> = match &earlier {
            Some(earlier) => {
                let reader = TrialReader::open(&info, earlier).map_err(io_error)?;
                Some(Box::new(reader.map_while(Result::ok)))
            }
            None => None,
        };
        // SIGINT and SIGTERM stop the run the same way.
        let outcome = harness::run_until(
            &plan,
            &mut reporters,
            replay,
            progress,
            super::signals::requested(),
        );
        // Every server stopped (no process left), then their measures kept.
        crate::tool::mcp::shutdown_all();
        match outcome {
            Ok(()) => {
                let sources = crate::tool::mcp::source_stats();
                if !sources.is_empty() {
                    write_run_json(&plan, &files, &settings, &out)?;
                    write_tool_sources(&sources, &out)?;
                    for s in &sources {
                        eprintln!(
                            "MCP server {}: {} start-up(s), {:.1} ms on average; {} tools/call, p50 {:.2} ms, p95 {:.2} ms, {} error result(s)",
                            s.source,
                            s.startups,
                            s.startup_ms_mean,
                            s.calls,
                            s.call_ms_p50,
                            s.call_ms_p95,
                            s.call_errors
                        );
                    }
                }
            }
            Err(RunError::Interrupted { finished, total }) => {
                let (signal, code) =
                    super::signals::received().unwrap_or(("SIGINT", EXIT_INTERRUPTED));
                let resume = std::path::absolute(&out).unwrap_or_else(|_| out.clone());
                eprintln!(
                    "interrupted ({signal}): {finished} of {total} trial(s) are in {}; \
                     continue with: toolgauge run --resume {}",
                    trials_path.display(),
                    resume.display()
                );
                return Ok(ExitCode::from(code));
            }
            Err(RunError::Io(e)) => return Err(io_error(e)),
            Err(error @ RunError::NotRecorded(_)) => return Err(CliError::new(error)),
        }
        report::terminal_summary(
            &info,
            reporters.stats(),
            args.table,
            Some(&out.join("report.html")),
        )
    };
    if let Some(earlier) = &earlier {
        std::fs::remove_file(earlier).map_err(io_error)?;
    }
    let violations = std::mem::take(&mut run_files.gate.violations);
    println!("{table}");
    if !args.quiet {
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
        Err(CliError::Usage(format!(
            "rate {rate} must be between 0 and 1"
        )))
    }
}

fn parse_pass_k(text: &str) -> Result<(u64, f64), CliError> {
    let (k, rate) = text
        .split_once(':')
        .ok_or_else(|| CliError::Usage(format!("--min-pass-k {text}: use K:RATE, e.g. 3:0.8")))?;
    let k: u64 = k
        .parse()
        .map_err(|_| CliError::Usage(format!("--min-pass-k {text}: K must be a whole number")))?;
    let rate: f64 = rate
        .parse()
        .map_err(|_| CliError::Usage(format!("--min-pass-k {text}: RATE must be a number")))?;
    if k == 0 {
        return Err(CliError::new("--min-pass-k: K must be at least 1"));
    }
    Ok((k, check_rate(rate)?))
}

fn load_models(paths: &[PathBuf], suite: Option<&Path>) -> Result<Vec<ModelFile>, CliError> {
    let sources = if paths.is_empty() {
        // The nearest `models/` folder: the suite's own, or a parent's
        // (`run scenarios/bfcl` finds scenarios/models).
        let default = suite
            .unwrap_or(Path::new("."))
            .ancestors()
            .map(|dir| dir.join("models"))
            .find(|models| models.is_dir())
            .unwrap_or_else(|| PathBuf::from("scenarios/models"));
        vec![default]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for source in &sources {
        if source.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(source)
                .map_err(|e| CliError::Usage(format!("{}: cannot read: {e}", source.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else if source.exists() {
            files.push(source.clone());
        } else {
            return Err(CliError::Usage(format!(
                "{}: no such model file or folder (use --models)",
                source.display()
            )));
        }
    }
    if files.is_empty() {
        return Err(CliError::new("no model files found (use --models PATH)"));
    }
    let mut models: Vec<ModelFile> = Vec::new();
    for file in files {
        let model = ModelFile::load(&file)?;
        if models.iter().any(|m| m.name == model.name) {
            return Err(CliError::Usage(format!(
                "{}: model name {:?} is used twice",
                file.display(),
                model.name
            )));
        }
        models.push(model);
    }
    Ok(models)
}

/// tool_sources.csv: one row per MCP server the run used.
fn write_tool_sources(
    sources: &[crate::tool::mcp::SourceStats],
    out: &Path,
) -> Result<(), CliError> {
    let path = out.join("tool_sources.csv");
    let mut writer = csv::Writer::from_path(&path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    for source in sources {
        writer.serialize(source).map_err(CliError::new)?;
    }
    writer.flush().map_err(CliError::new)
}

fn write_run_json(
    plan: &RunPlan,
    models: &[ModelFile],
    settings: &Settings,
    out: &Path,
) -> Result<(), CliError> {
    let record = RunRecord {
        toolgauge: env!("CARGO_PKG_VERSION").to_owned(),
        suite: settings.suite.clone(),
        trials: plan.trials,
        seed: plan.seed,
        concurrency: plan.concurrency,
        clock: plan.clock,
        feedback: plan.exec.feedback,
        serial: settings.serial,
        no_session: settings.no_session,
        shard: settings.shard.map(|s| s.to_string()),
        min_success: settings.thresholds.min_success,
        min_pass_k: settings.thresholds.min_pass_k,
        max_lost: settings.thresholds.max_lost,
        models: models.to_vec(),
        scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
        scenario_infos: crate::harness::scenario_infos(&plan.scenarios),
        suite_digest: Some(crate::scenario::suite_digest(&plan.scenarios)),
        shell_isolation: plan
            .scenarios
            .iter()
            .any(|s| s.registry.lookup(crate::tool::SHELL_TOOL).is_some())
            .then(|| crate::tool::shell::isolation().as_str().to_owned()),
        tool_sources: crate::tool::mcp::source_stats(),
    };
    record
        .write(out)
        .map_err(|e| CliError::Usage(format!("{}: {e}", out.display())))
}

/// The run being resumed, as its run.json describes it.
fn read_recorded_run(dir: &Path) -> Result<RunRecord, CliError> {
    if !dir.join("trials.csv").is_file() && !dir.join("trials.csv.resumed").is_file() {
        return Err(CliError::Usage(format!(
            "--resume {}: no trials.csv there: is it a run's report folder?",
            dir.display()
        )));
    }
    RunRecord::read(dir).map_err(|e| {
        CliError::Usage(format!(
            "--resume {}: cannot read the run's configuration: {e}",
            dir.display()
        ))
    })
}

/// Resuming: the finished trials move aside to trials.csv.resumed, to be
/// replayed in job order into a new trials.csv. A resume that was itself
/// killed left two files; the one with more finished trials is kept (both
/// hold a prefix of the same job order). Every kept trial must belong to
/// this run, or it would be silently dropped. Gives the kept file and its
/// last trial.
fn set_aside_finished_trials(
    plan: &RunPlan,
    info: &RunInfo,
    out: &Path,
) -> Result<(PathBuf, Option<JobKey>), CliError> {
    let current = out.join("trials.csv");
    let earlier = out.join("trials.csv.resumed");
    let fail = |e: String| CliError::Usage(format!("--resume {}: {e}", out.display()));
    let count = |path: &Path| -> Result<(u64, Option<JobKey>), CliError> {
        if !path.exists() {
            return Ok((0, None));
        }
        let mut trials = 0;
        let mut last = None;
        for trial in TrialReader::open(info, path).map_err(|e| fail(e.to_string()))? {
            let trial = trial.map_err(|e| fail(e.to_string()))?;
            let job = harness::Job {
                model: trial.model,
                scenario: trial.scenario,
                trial: trial.trial,
            };
            if !plan.includes(job) {
                return Err(fail(format!(
                    "{}: trial {} of {:?} / {:?} is not part of this run ({} trials{})",
                    path.display(),
                    trial.trial,
                    plan.models[trial.model].name(),
                    plan.scenarios[trial.scenario].name,
                    plan.trials,
                    plan.shard
                        .map(|s| format!(", shard {s}"))
                        .unwrap_or_default()
                )));
            }
            trials += 1;
            last = Some((trial.model, trial.scenario, trial.trial));
        }
        Ok((trials, last))
    };
    let ((in_current, last_current), (in_earlier, last_earlier)) =
        (count(&current)?, count(&earlier)?);
    let rename =
        |from: &Path, to: &Path| std::fs::rename(from, to).map_err(|e| fail(e.to_string()));
    if in_current >= in_earlier && current.exists() {
        rename(&current, &earlier)?;
        return Ok((earlier, last_current));
    }
    if current.exists() {
        // trials.csv is a shorter prefix than the rows it was replaying.
        std::fs::remove_file(&current).map_err(|e| fail(e.to_string()))?;
    }
    Ok((earlier, last_earlier))
}

/// A folder that already holds a run is not overwritten by accident.
fn refuse_to_overwrite(out: &Path) -> Result<(), CliError> {
    match report::held_run(out) {
        Some(file) => Err(CliError::Usage(format!(
            "--out {}: already holds a run ({file}); use --resume {0} to continue it, \
             --force to replace it, or another --out",
            out.display()
        ))),
        None => Ok(()),
    }
}

/// The models of the run being resumed: its own, or the same ones again.
fn recorded_models(args: &RunArgs, run: &RunRecord) -> Result<Vec<ModelFile>, CliError> {
    if !args.models.is_empty() {
        let given = load_models(&args.models, None)?;
        let same = given == run.models;
        if !same {
            let names = |files: Vec<&str>| files.join(", ");
            return Err(contradiction(
                "--models",
                names(given.iter().map(|m| m.name.as_str()).collect()),
                format!(
                    "{} (or the same names with other contents)",
                    names(run.models.iter().map(|m| m.name.as_str()).collect())
                ),
            ));
        }
        return Ok(given);
    }
    for file in &run.models {
        file.check()
            .map_err(|e| CliError::Usage(format!("run.json: model {:?}: {e}", file.name)))?;
    }
    Ok(run.models.clone())
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
