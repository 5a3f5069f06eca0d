//! A run as a library value. [`PreparedRun::prepare`] turns a
//! [`RunRequest`] into everything a run needs: its settings, models,
//! suite (with the MCP servers it started, owned by the run), report
//! folder, run.json and reporters, with a resumed run's finished trials
//! set aside to be replayed. [`PreparedRun::execute`] runs it, the
//! caller's own reporter hearing every event (progress, notices), and
//! says how it ended; the caller prints.
//!
//! ```no_run
//! use toolgauge::harness::{RunEnding, PreparedRun, RunRequest};
//!
//! let request = RunRequest {
//!     suites: vec!["scenarios/starter".into()],
//!     trials: Some(5),
//!     out: Some("reports/mine".into()),
//!     ..RunRequest::default()
//! };
//! let run = PreparedRun::prepare(&request)?;
//! // `()` hears nothing; the command line passes its progress bars.
//! match run.execute(&mut (), false, std::future::pending())? {
//!     RunEnding::Finished { verdict, violations, .. } => {
//!         println!("{verdict}");
//!         assert!(violations.is_empty());
//!     }
//!     RunEnding::Interrupted { .. } | RunEnding::BudgetSpent { .. } => {}
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::models::Models;
use super::run_file::RunFile;
use super::settings::{RunRequest, Settings};
use super::setup_error::{ForeignTrial, SetupError};
use super::{Budget, BudgetLimits, Clock, Job, RunError, RunPlan, Spent};
use crate::metrics::Aggregate;
use crate::model::{self, Model, ModelFile};
use crate::report::{
    self, JobKey, Reporter, Reporters, RunFiles, RunInfo, SessionFile, TrialReader, Violation,
};
use crate::scenario::{Scenario, load_suites};
use crate::tool::mcp::judges::JudgeTrust;
use crate::tool::mcp::{SourceStats, ToolServers};

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> SetupError + use<> {
    let path = path.to_owned();
    move |source| SetupError::Io { path, source }
}

/// A run ready to execute.
pub struct PreparedRun {
    pub plan: RunPlan,
    pub info: RunInfo,
    /// The report folder.
    pub out: PathBuf,
    /// What a person should hear before the run starts.
    pub notes: Notes,
    models: Vec<ModelFile>,
    files: RunFiles,
    tool_sources: ToolSourcesCsv,
    /// `--otlp`, `--otlp-file`: the trials as spans.
    otel: Option<crate::report::otel::OtelReporter>,
    /// A resumed run's finished trials, set aside to be replayed.
    earlier: Option<PathBuf>,
    /// Dropped after the plan: stops every server the suite started.
    servers: Arc<ToolServers>,
    _sandboxes: tempfile::TempDir,
}

/// Lines to print before a run: warnings always, the rest unless quiet.
#[derive(Debug, Default)]
pub struct Notes {
    pub warnings: Vec<String>,
    pub info: Vec<String>,
}

/// How an executed run ended.
#[derive(Debug)]
pub enum RunEnding {
    /// Every trial ran; `verdict` is the terminal's verdict and table,
    /// `violations` the thresholds it broke.
    Finished {
        verdict: String,
        violations: Vec<Violation>,
        sources: Vec<SourceStats>,
    },
    /// Stopped on request; `--resume` continues it.
    Interrupted { finished: u64, total: u64 },
    /// Stopped before a request would have passed the budget; `--resume`
    /// continues it.
    BudgetSpent {
        finished: u64,
        total: u64,
        spent: Spent,
        limits: BudgetLimits,
        /// Spent on the trials it cut (paid, in no row), and how many.
        cut: (Spent, usize),
    },
}

impl Notes {
    /// Put a run on the real clock for `what`, which takes real time (on
    /// the paused clock every timeout would fire at once), and say so.
    /// Real tools (MCP servers, endpoints, commands) and simulated users
    /// played over the network take real time: on the paused clock every
    /// call's timeout would fire at once.
    fn real_time_where_needed(
        &mut self,
        settings: &mut Settings,
        scenarios: &[Scenario],
        live_users: bool,
    ) {
        if scenarios.iter().any(|s| s.registry.has_real_tools()) {
            self.real_clock(
                settings,
                "real tools (MCP servers, HTTP endpoints, commands)",
            );
        }
        if live_users {
            self.real_clock(settings, "simulated users played by live models");
        }
    }

    fn real_clock(&mut self, settings: &mut Settings, what: &str) {
        if settings.clock == Clock::Virtual {
            self.info.push(format!("{what}: running on the real clock"));
            settings.clock = Clock::Real;
        }
    }
}

/// Doctor's checks of each live model before the run, as `--doctor`
/// asks: what they found becomes the run's warnings.
fn diagnose_live_models(
    files: &[ModelFile],
    out: &Path,
    request: &RunRequest,
    notes: &mut Notes,
) -> Result<(), SetupError> {
    for file in files.iter().filter(|f| f.is_live()) {
        if let Some(diagnosis) = crate::doctor::before_run(file, out, request.doctor)? {
            let streams = file.api().is_some_and(|api| api.stream);
            notes.warnings.extend(diagnosis.warnings(streams));
        }
    }
    Ok(())
}

/// The run's budget, when it has limits and a model that spends: a
/// dollar limit needs every live model's prices (those that play users
/// too), or it could not count what that model spends. Mocks and
/// replays spend nothing.
fn budget_of(
    limits: BudgetLimits,
    models: &Models,
    users: &[Option<Arc<crate::model::live::LiveModel>>],
    notes: &mut Notes,
) -> Result<Option<Arc<Budget>>, SetupError> {
    if !limits.is_set() {
        return Ok(None);
    }
    let live: Vec<&ModelFile> = models.files.iter().filter(|f| f.is_live()).collect();
    if live.is_empty() || models.replayed {
        notes.info.push(
            "--max-cost/--max-tokens: no model of this run sends a request that costs (mocks and replays); no budget applies"
                .to_owned(),
        );
        return Ok(None);
    }
    if limits.max_cost.is_some()
        && let Some(file) = live
            .iter()
            .find(|f| f.api().is_some_and(|api| api.prices.is_none()))
    {
        return Err(SetupError::BudgetWithoutPrices {
            model: file.name.clone(),
        });
    }
    if limits.max_cost.is_some()
        && let Some(user) = users.iter().flatten().find(|u| u.terms().prices.is_none())
    {
        return Err(SetupError::BudgetWithoutPrices {
            model: user.name().to_owned(),
        });
    }
    Ok(Some(Arc::new(Budget::new(limits))))
}

/// A resumed run's finished trials set aside (their file), and
/// session.jsonl, new or resumed after the last trial kept.
fn resumed_files(
    request: &RunRequest,
    plan: &RunPlan,
    info: &RunInfo,
    out: &Path,
) -> Result<(Option<PathBuf>, Option<SessionFile>), SetupError> {
    let (earlier, last_kept) = match request.resume {
        Some(_) => {
            let (path, last) = set_aside_finished_trials(plan, info, out)?;
            (Some(path), last)
        }
        None => (None, None),
    };
    let session = session_file(&plan.settings, request, out, info, last_kept)?;
    Ok((earlier, session))
}

/// session.jsonl, new, or resumed after the last trial kept (`None`:
/// the session log is off).
fn session_file(
    settings: &Settings,
    request: &RunRequest,
    out: &Path,
    info: &RunInfo,
    last_kept: Option<(usize, usize, u32)>,
) -> Result<Option<SessionFile>, SetupError> {
    let path = out.join("session.jsonl");
    Ok(match (settings.no_session, &request.resume) {
        (true, _) => None,
        (false, None) => Some(SessionFile::create(&path).map_err(at(out))?),
        (false, Some(_)) => Some(SessionFile::resume(&path, info, last_kept).map_err(at(out))?),
    })
}

impl PreparedRun {
    pub fn prepare(request: &RunRequest) -> Result<PreparedRun, SetupError> {
        let mut notes = Notes::default();
        let recorded = request.resume.as_deref().map(read_run_file).transpose()?;
        let out = out_folder(request)?;
        let models = Models::make(request, recorded.as_ref(), &out)?;
        if models.live_network && request.clock.is_none_or(|c| c == Clock::Virtual) {
            notes
                .info
                .push("live models: running on the real clock".to_owned());
        }
        let mut settings = Settings::resolve(
            request,
            recorded.as_ref().map(|run| &run.settings),
            models.live_network,
        )?;
        crate::whole_file::make_folder(&out).map_err(at(&out))?;
        if !models.replayed {
            diagnose_live_models(&models.files, &out, request, &mut notes)?;
        }
        let sandboxes = tempfile::tempdir().map_err(at(&std::env::temp_dir()))?;
        let servers = Arc::new(tool_servers(request)?);
        let scenarios = load_checked(&settings, &sandboxes, &servers, &mut notes)?;
        say_who_is_judged(request, &servers, &mut notes);
        if let Some(run) = &recorded {
            run.check_suite(&scenarios)
                .map_err(SetupError::SuiteChanged)?;
        }
        models.check_answerable(&scenarios)?;
        let users = models.users(&scenarios, &settings.suite.0)?;
        let live_users = models.replayer.is_none() && users.iter().any(Option::is_some);
        notes.real_time_where_needed(&mut settings, &scenarios, live_users);
        let budget = budget_of(request.budget, &models, &users, &mut notes)?;
        let batches = models.batch_ledger();
        let plan = RunPlan {
            budget,
            batches,
            users,
            model_feedback: models.files.iter().map(|file| file.feedback).collect(),
            model_images: models.files.iter().map(ModelFile::takes_images).collect(),
            ..RunPlan::new(scenarios, models.models, settings)
        };
        let info = plan.info();
        let (earlier, session) = resumed_files(request, &plan, &info, &out)?;
        let otel = otel_of(request, &plan)?;
        let mut files = RunFiles::create(&out, session).map_err(at(&out))?;
        if let Some(otel) = &otel {
            files.markdown.tell_otlp(otel.tally());
        }
        let prepared = PreparedRun {
            otel,
            files,
            tool_sources: ToolSourcesCsv {
                path: out.join("tool_sources.csv"),
                servers: servers.clone(),
            },
            plan,
            info,
            out,
            notes,
            models: models.files,
            earlier,
            servers,
            _sandboxes: sandboxes,
        };
        prepared.write_run_json()?;
        Ok(prepared)
    }

    /// Run every trial (after replaying a resumed run's), until done or
    /// until `stop` resolves. Every MCP server is stopped before this
    /// returns.
    /// `table`: the per-scenario table in the verdict, however long.
    pub fn execute(
        mut self,
        watcher: &mut dyn Reporter,
        table: bool,
        stop: impl Future<Output = ()>,
    ) -> Result<RunEnding, RunError> {
        let mut all = self.files.reporters();
        // First: its export ends before summary.md says what it lost.
        if let Some(otel) = &mut self.otel {
            all.insert(0, otel);
        }
        all.push(&mut self.tool_sources);
        all.push(watcher);
        let mut reporters = Reporters::new(&self.info, all);
        let replay: Option<super::Replay<'_>> = match &self.earlier {
            Some(earlier) => {
                let reader = TrialReader::open(&self.info, earlier)?;
                Some(Box::new(reader.map_while(Result::ok)))
            }
            None => None,
        };
        let outcome = super::run_until(&self.plan, &mut reporters, replay, stop);
        let verdict = report::terminal_summary(
            &self.info,
            reporters.stats(),
            table,
            Some(&self.out.join("report.html")),
        );
        drop(reporters);
        if let Some(otel) = &mut self.otel {
            otel.finish();
        }
        if let Some(lost) = self.otel.as_ref().and_then(|o| o.tally().notice()) {
            watcher.notice(&self.info, &lost)?;
        }
        // Every server stopped (no process left), then their measures kept.
        self.servers.stop();
        match outcome {
            Ok(()) => {}
            Err(RunError::Interrupted { finished, total }) => {
                return Ok(RunEnding::Interrupted { finished, total });
            }
            Err(RunError::BudgetSpent {
                finished,
                total,
                spent,
                cut,
            }) => {
                let limits = self
                    .plan
                    .budget
                    .as_ref()
                    .map(|b| b.limits())
                    .unwrap_or_default();
                return Ok(RunEnding::BudgetSpent {
                    finished,
                    total,
                    spent,
                    limits,
                    cut,
                });
            }
            Err(error) => return Err(error),
        }
        let sources = self.servers.stats();
        if !sources.is_empty() {
            self.write_run_json().map_err(std::io::Error::other)?;
        }
        if let Some(earlier) = &self.earlier {
            std::fs::remove_file(earlier)?;
        }
        Ok(RunEnding::Finished {
            verdict,
            violations: std::mem::take(&mut self.files.gate.violations),
            sources,
        })
    }

    fn write_run_json(&self) -> Result<(), SetupError> {
        let plan = &self.plan;
        let run_file = RunFile {
            toolgauge: env!("CARGO_PKG_VERSION").to_owned(),
            settings: plan.settings.clone(),
            models: self.models.clone(),
            scenarios: plan.scenarios.iter().map(|s| s.name.clone()).collect(),
            scenario_infos: super::scenario_infos(&plan.scenarios),
            suite_digest: Some(crate::scenario::suite_digest(&plan.scenarios)),
            shell_isolation: plan
                .scenarios
                .iter()
                .any(|s| s.registry.lookup(crate::tool::SHELL_TOOL).is_some())
                .then(|| crate::tool::shell::isolation().as_str().to_owned()),
            tool_sources: self.servers.stats(),
        };
        run_file.write(&self.out).map_err(at(&self.out))
    }
}

/// tool_sources.csv: one row per MCP server the run used, with its
/// start-ups and round trips; no file when the run used none.
struct ToolSourcesCsv {
    path: PathBuf,
    servers: Arc<ToolServers>,
}

impl Reporter for ToolSourcesCsv {
    fn run_finished(&mut self, _info: &RunInfo, _stats: &Aggregate) -> std::io::Result<()> {
        let sources = self.servers.stats();
        if sources.is_empty() {
            return Ok(());
        }
        crate::whole_file::write_with(&self.path, |file| {
            let mut writer = csv::Writer::from_writer(file);
            for source in &sources {
                writer.serialize(source)?;
            }
            writer.flush()
        })
    }
}

/// The run's tool servers: judging ones get `--judge-model`, if given.
fn tool_servers(request: &RunRequest) -> Result<ToolServers, SetupError> {
    let Some(path) = &request.judge_model else {
        return Ok(ToolServers::new());
    };
    let judge = ModelFile::load(path)?;
    let env = model::judge::judge_env(&judge, request.judge_repeats)?;
    let trust = JudgeTrust::load(request.judge_servers.clone())?;
    Ok(ToolServers::judging(env, trust))
}

/// The run's folder: a resumed run's, `--out`, or a new one; a run held
/// there is refused unless `--force` replaces it, which starts a new
/// batch ledger (never the old run's answers).
fn out_folder(request: &RunRequest) -> Result<PathBuf, SetupError> {
    let out = match (&request.resume, &request.out) {
        (Some(dir), _) | (None, Some(dir)) => dir.clone(),
        (None, None) => PathBuf::from("reports").join(run_id()),
    };
    if request.resume.is_none() {
        if request.force {
            crate::batch::ledger::set_aside(&out).map_err(at(&out))?;
        } else {
            refuse_to_overwrite(&out)?;
        }
    }
    Ok(out)
}

/// Who gets the judge's key is said before anything runs.
fn say_who_is_judged(request: &RunRequest, servers: &ToolServers, notes: &mut Notes) {
    if let Some(judge) = &request.judge_model {
        for command in servers.judged() {
            notes.warnings.push(format!(
                "the judge ({}: its endpoint and key) goes to: {command}",
                judge.display()
            ));
        }
    }
}

/// The suite's scenarios, loaded; paths passed over become warnings.
fn load_checked(
    settings: &Settings,
    sandboxes: &tempfile::TempDir,
    servers: &ToolServers,
    notes: &mut Notes,
) -> Result<Vec<Scenario>, SetupError> {
    let suite =
        load_suites(&settings.suite.0, sandboxes.path(), servers).map_err(SetupError::Suite)?;
    notes
        .warnings
        .extend(suite.skipped.iter().map(ToString::to_string));
    Ok(suite.scenarios)
}

/// The run being resumed, as its run.json describes it.
fn read_run_file(dir: &Path) -> Result<RunFile, SetupError> {
    let trials = dir.join("trials.csv");
    // There but no regular file (a FIFO would hang the resume): said so.
    if trials.symlink_metadata().is_ok()
        && let Err(source) = crate::source::open_run_file(&trials)
    {
        return Err(SetupError::Io {
            path: trials,
            source,
        });
    }
    if !trials.is_file() && !dir.join("trials.csv.resumed").is_file() {
        return Err(SetupError::NotARun {
            dir: dir.to_owned(),
        });
    }
    RunFile::read(dir).map_err(|source| SetupError::Record {
        dir: dir.to_owned(),
        source,
    })
}

/// A folder that already holds a run is not overwritten by accident.
fn refuse_to_overwrite(out: &Path) -> Result<(), SetupError> {
    match report::held_run(out) {
        Some(file) => Err(SetupError::OutHeld {
            out: out.to_owned(),
            file: file.to_string(),
        }),
        None => Ok(()),
    }
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
) -> Result<(PathBuf, Option<JobKey>), SetupError> {
    let current = out.join("trials.csv");
    let earlier = out.join("trials.csv.resumed");
    let count = |path: &Path| -> Result<(u64, Option<JobKey>), SetupError> {
        if !path.exists() {
            return Ok((0, None));
        }
        let mut trials = 0;
        let mut last = None;
        for trial in TrialReader::open(info, path).map_err(at(path))? {
            let trial = trial.map_err(at(path))?;
            let job = Job {
                model: trial.model,
                scenario: trial.scenario,
                trial: trial.trial,
            };
            if !plan.includes(job) {
                return Err(SetupError::ForeignTrial(Box::new(ForeignTrial {
                    dir: out.to_owned(),
                    file: path.to_owned(),
                    trial: trial.trial,
                    model: plan.models[trial.model].name().to_owned(),
                    scenario: plan.scenarios[trial.scenario].name.clone(),
                    trials: plan.settings.trials,
                    shard: plan
                        .settings
                        .shard
                        .map(|s| format!(", shard {s}"))
                        .unwrap_or_default(),
                })));
            }
            trials += 1;
            last = Some((trial.model, trial.scenario, trial.trial));
        }
        Ok((trials, last))
    };
    let ((in_current, last_current), (in_earlier, last_earlier)) =
        (count(&current)?, count(&earlier)?);
    if in_current >= in_earlier && current.exists() {
        std::fs::rename(&current, &earlier).map_err(at(&current))?;
        return Ok((earlier, last_current));
    }
    if current.exists() {
        // trials.csv is a shorter prefix than the rows it was replaying.
        std::fs::remove_file(&current).map_err(at(&current))?;
    }
    Ok((earlier, last_earlier))
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

/// The span exporter `--otlp`, `--otlp-file` or the environment ask for.
fn otel_of(
    request: &RunRequest,
    plan: &RunPlan,
) -> Result<Option<crate::report::otel::OtelReporter>, SetupError> {
    use crate::report::otel::{OtelReporter, OtlpOptions, ScenarioContent, Semconv};
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let options = OtlpOptions {
        endpoint: request
            .otlp
            .clone()
            .or_else(|| env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT")),
        file: request.otlp_file.clone(),
        content: request.otlp_content,
        semconv: Some(Semconv::from_opt_in(
            env("OTEL_SEMCONV_STABILITY_OPT_IN").as_deref(),
        )),
        timeout: env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|ms| ms.trim().parse().ok())
            .map(std::time::Duration::from_millis),
    };
    if !options.wanted() {
        return Ok(None);
    }
    if plan.settings.no_session {
        return Err(SetupError::OtlpWithoutSession);
    }
    let providers = plan
        .models
        .iter()
        .map(|m| m.provider().semconv_name().to_owned())
        .collect();
    let scenarios = if options.content {
        plan.scenarios
            .iter()
            .map(|s| {
                let hidden = s
                    .task
                    .as_ref()
                    .map(|t| t.hidden_at_start())
                    .unwrap_or_default();
                ScenarioContent {
                    prompt: s.prompt.clone(),
                    tools: s
                        .registry
                        .definitions()
                        .filter(|d| !hidden.contains(&d.name))
                        .map(|d| d.spec())
                        .collect(),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Some(OtelReporter::new(&options, providers, scenarios)?))
}
