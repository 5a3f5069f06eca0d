//! Reports, fed plain trial outcomes and events: a [`RunEvent`] goes to every
//! [`Reporter`] through one fan-out ([`Reporters`]), which also keeps the
//! run's measures ([`Aggregate`]). Each file has its reporter: trials.csv
//! (`trials`), session.jsonl (`session`), the summary CSVs (`summary`;
//! scores.csv from `scores`),
//! summary.md (`markdown`), junit.xml (`junit`), and the threshold gate
//! for CI ([`Gate`]). `compare` reads two runs' summaries. CSV rows are
//! serde structs: the struct is the column contract, documented in
//! reports/README.md. Nothing here knows how trials are run.

mod batches;
pub mod bench;
pub mod charts;
mod compare;
mod html;
mod junit;
mod markdown;
mod recovery;
mod scores;
mod session;
mod streamed;
mod summary;
pub mod svg;
pub mod trials;

pub use batches::BatchRecord;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::call::{Failure, Prices};
use crate::metrics::{Aggregate, CellStats, TrialOutcome, pass_hat_k};

pub use compare::{Change, CompareError, Comparison, ModelChange, compare};
pub use html::HtmlReport;
pub use junit::JUnitXml;
pub use markdown::{Markdown, terminal_summary};
pub use recovery::{RecoveryRow, recovery_rows, recovery_table, write_recovery_csv};
pub use session::{JobKey, SessionFile};
pub use summary::SummaryCsvs;
pub use trials::{TrialReader, TrialRow, TrialsCsv};

/// The file that shows `dir` already holds a run's reports, if any: a
/// command writing reports there must not replace them by accident.
pub fn held_run(dir: &Path) -> Option<&'static str> {
    ["run.json", "trials.csv"]
        .into_iter()
        .find(|file| dir.join(file).exists())
}

/// What reporters know of a run: names, limits and thresholds, as plain
/// values.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub models: Vec<ModelInfo>,
    pub scenarios: Vec<ScenarioInfo>,
    pub trials: u32,
    pub seed: u64,
    /// The feedback style and clock, as named in files (`pointer-list`, `virtual`).
    pub feedback: String,
    pub clock: String,
    pub thresholds: Thresholds,
    /// Live models answered through batch APIs: costs at the batch rate.
    pub batch: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    pub prices: Option<Prices>,
    /// At most this many attempts per trial, whatever the scenario allows.
    pub max_attempts: Option<u32>,
}

/// What reports need of a scenario; run.json keeps it, so that reports of
/// a run folder never load (or start) its suite.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioInfo {
    pub name: String,
    /// 1 for a task (its turns are inside the one attempt).
    pub max_attempts: u32,
    /// Set for a task: how many milestones it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_milestones: Option<u32>,
    /// Set for a conversation (a task whose user speaks more than once):
    /// how many user turns it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_user_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The scenario's own success threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success: Option<f64>,
}

impl RunInfo {
    /// How many attempts a trial of `model` on `scenario` gets.
    pub fn max_attempts(&self, model: usize, scenario: usize) -> u32 {
        let allowed = self.scenarios[scenario].max_attempts;
        self.models[model]
            .max_attempts
            .map_or(allowed, |m| m.min(allowed))
    }

    /// Empty measures for every cell of the run.
    pub fn aggregate(&self) -> Aggregate {
        let limits: Vec<Vec<u32>> = (0..self.models.len())
            .map(|m| {
                (0..self.scenarios.len())
                    .map(|s| self.max_attempts(m, s))
                    .collect()
            })
            .collect();
        Aggregate::new(&limits, self.trials)
    }

    /// The stricter of the run's and the scenario's success threshold.
    pub fn threshold(&self, scenario: usize) -> Option<f64> {
        match (
            self.thresholds.min_success,
            self.scenarios[scenario].min_success,
        ) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// CI thresholds: on final success, on pass^k, and on the share of
/// trials a cell may lose to infrastructure (0 unless allowed: a lost
/// trial fails the run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thresholds {
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
    pub max_lost: f64,
}

/// A model x scenario under its threshold, or not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub model: String,
    pub scenario: String,
    pub message: String,
}

/// Why a cell fails the run, if it does.
pub fn cell_violations(info: &RunInfo, scenario: usize, cell: &CellStats) -> Vec<String> {
    let mut found = Vec::new();
    let lost = cell.lost_trials();
    if cell.trials == 0 {
        // Trials were run but none measured the model: never a pass. (A
        // cell with no trial at all belongs to another shard.)
        if lost > 0 {
            found.push(format!(
                "not measured: all {lost} trial(s) lost ({})",
                lost_causes(cell)
            ));
        }
        return found;
    }
    if lost > 0 && cell.lost_share() > info.thresholds.max_lost {
        found.push(format!(
            "{lost} of {} trial(s) lost ({}), more than --max-lost {} allows",
            cell.trials + lost,
            lost_causes(cell),
            info.thresholds.max_lost
        ));
    }
    if let Some(min) = info.threshold(scenario)
        && cell.final_success() < min
    {
        found.push(format!("success {:.3} < {min}", cell.final_success()));
    }
    if let Some((k, min)) = info.thresholds.min_pass_k {
        let value = pass_hat_k(cell.successes(), cell.trials, k);
        if value < min {
            found.push(format!("pass^{k} {value:.3} < {min}"));
        }
    }
    found
}

/// What lost a cell's trials: `transport error 3, bad response 1`.
pub fn lost_causes(cell: &CellStats) -> String {
    cell.lost
        .iter()
        .map(|(cause, n)| format!("{} {n}", cause.as_str().replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every violation of the run, in model x scenario order; a run that
/// measured nothing at all is one.
pub fn violations(info: &RunInfo, stats: &Aggregate) -> Vec<Violation> {
    let mut found = Vec::new();
    for (m, cells) in stats.cells.iter().enumerate() {
        for (s, cell) in cells.iter().enumerate() {
            for message in cell_violations(info, s, cell) {
                found.push(Violation {
                    model: info.models[m].name.clone(),
                    scenario: info.scenarios[s].name.clone(),
                    message,
                });
            }
        }
    }
    if stats.measured_trials() == 0 && found.is_empty() {
        found.push(Violation {
            model: "(every model)".to_owned(),
            scenario: "(every scenario)".to_owned(),
            message: "not measured: no trial was run (is this shard empty?)".to_owned(),
        });
    }
    found
}

/// A finished trial: its outcome, and what Record logged for it (empty when
/// replayed from an earlier run, or when the log is off).
#[derive(Debug, Clone, Copy)]
pub struct FinishedTrial<'a> {
    pub outcome: &'a TrialOutcome,
    pub session: &'a [u8],
}

/// What happens in a run, in order: it starts (with the trials it will
/// hand over), trials finish in job order (replayed ones too), with
/// notices as they happen between them, and it finishes.
#[derive(Debug, Clone, Copy)]
pub enum RunEvent<'a> {
    Started { trials: u64 },
    TrialFinished(FinishedTrial<'a>),
    Notice(&'a Notice),
    Finished,
}

/// What the person running it should hear as it happens, besides the
/// trials: nothing the library prints itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A model's request failed after its retries (its trial is lost).
    RequestFailed {
        model: String,
        scenario: String,
        error: String,
    },
    /// A trial lost to what was not the model's doing: `failure` says to
    /// whom, `why` what happened.
    TrialLost {
        model: String,
        scenario: String,
        trial: u32,
        failure: Failure,
        why: String,
    },
    /// An exchange `--record` could not write: a replay will lack it.
    NotRecorded { error: String },
    /// A batch of a `--batch` run, as it ended (told when the run ends).
    Batch(BatchRecord),
    /// A batch the run waits on, as a poll found it: told when its state
    /// changes, so that a terminal shows a run that waits.
    BatchWaiting {
        model: String,
        id: String,
        state: String,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::RequestFailed {
                model,
                scenario,
                error,
            } => write!(f, "{model} / {scenario}: {error}"),
            Notice::TrialLost {
                model,
                scenario,
                trial,
                failure,
                why,
            } => write!(
                f,
                "{model} / {scenario} trial {trial}: lost ({}): {}",
                failure.as_str(),
                crate::excerpt::cut(why, 300)
            ),
            Notice::NotRecorded { error } => write!(f, "--record: {error}"),
            Notice::Batch(batch) => batch.fmt(f),
            Notice::BatchWaiting { model, id, state } => {
                write!(f, "batch {id} ({model}): {state}; waiting for it to end")
            }
        }
    }
}

/// Hears a run's events. Every hook does nothing unless a reporter needs it.
pub trait Reporter {
    /// `trials`: how many trials the run will hand over.
    fn run_started(&mut self, _info: &RunInfo, _trials: u64) -> io::Result<()> {
        Ok(())
    }

    fn notice(&mut self, _info: &RunInfo, _notice: &Notice) -> io::Result<()> {
        Ok(())
    }

    fn trial_finished(&mut self, _info: &RunInfo, _trial: FinishedTrial<'_>) -> io::Result<()> {
        Ok(())
    }

    /// `stats`: the measures of every trial the run holds.
    fn run_finished(&mut self, _info: &RunInfo, _stats: &Aggregate) -> io::Result<()> {
        Ok(())
    }

    /// Put everything heard so far in the files: after this, a killed run
    /// loses none of it. Called for every reporter in order, so an earlier
    /// reporter's file is never behind a later one's.
    fn checkpoint(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reporter that hears nothing: a run nobody watches.
impl Reporter for () {}

/// Time between checkpoints, at most: what a killed run may have to run
/// again (a write per trial would cost more than a fast trial; live trials
/// are slow and cost money, so the bound is in time).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Trials between checkpoints, at most: bounds what waits in memory.
const CHECKPOINT_TRIALS: u32 = 16_384;

/// The fan-out: each event to every reporter, in order, with the run's
/// measures kept on the way, and checkpoints every few trials.
pub struct Reporters<'a> {
    info: &'a RunInfo,
    stats: Aggregate,
    reporters: Vec<&'a mut dyn Reporter>,
    since_checkpoint: u32,
    last_checkpoint: Instant,
}

impl<'a> Reporters<'a> {
    pub fn new(info: &'a RunInfo, reporters: Vec<&'a mut dyn Reporter>) -> Self {
        Reporters {
            info,
            stats: info.aggregate(),
            reporters,
            since_checkpoint: 0,
            last_checkpoint: Instant::now(),
        }
    }

    pub fn send(&mut self, event: RunEvent<'_>) -> io::Result<()> {
        match event {
            RunEvent::Started { trials } => {
                for reporter in &mut self.reporters {
                    reporter.run_started(self.info, trials)?;
                }
                self.checkpoint()
            }
            RunEvent::Notice(notice) => {
                for reporter in &mut self.reporters {
                    reporter.notice(self.info, notice)?;
                }
                Ok(())
            }
            RunEvent::TrialFinished(trial) => {
                self.stats.add(trial.outcome);
                for reporter in &mut self.reporters {
                    reporter.trial_finished(self.info, trial)?;
                }
                self.since_checkpoint += 1;
                if self.since_checkpoint >= CHECKPOINT_TRIALS
                    || self.last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL
                {
                    self.checkpoint()?;
                }
                Ok(())
            }
            RunEvent::Finished => {
                self.checkpoint()?;
                for reporter in &mut self.reporters {
                    reporter.run_finished(self.info, &self.stats)?;
                }
                Ok(())
            }
        }
    }

    /// Every reporter's checkpoint, in order (also when a run stops early).
    pub fn checkpoint(&mut self) -> io::Result<()> {
        for reporter in &mut self.reporters {
            reporter.checkpoint()?;
        }
        self.since_checkpoint = 0;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// The measures so far.
    pub fn stats(&self) -> &Aggregate {
        &self.stats
    }
}

/// The threshold check for CI: the violations of a finished run.
#[derive(Debug, Default)]
pub struct Gate {
    pub violations: Vec<Violation>,
}

impl Reporter for Gate {
    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        self.violations = violations(info, stats);
        Ok(())
    }
}

/// A p-value as a person reads it: `p < 0.0001` rather than `p = 0.0000`.
pub fn p_text(p: f64) -> String {
    if p < 0.0001 {
        "p < 0.0001".to_owned()
    } else {
        format!("p = {p:.4}")
    }
}

/// The column names of a row struct, as serde writes them.
pub(crate) fn header_of<R: Serialize + Default>() -> io::Result<csv::StringRecord> {
    let mut probe = csv::Writer::from_writer(Vec::new());
    probe.serialize(R::default()).map_err(io::Error::other)?;
    let bytes = probe
        .into_inner()
        .map_err(|e| io::Error::other(e.to_string()))?;
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    Ok(reader.headers().map_err(io::Error::other)?.clone())
}

/// Round a rate for files: six decimals are plenty, and stable in text.
fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The files of a run's report folder, each with its reporter: what `run`
/// and `report merge` both write.
pub struct RunFiles {
    pub session: Option<SessionFile>,
    pub trials: TrialsCsv,
    pub summaries: SummaryCsvs,
    pub markdown: Markdown,
    pub html: HtmlReport,
    pub junit: JUnitXml,
    pub gate: Gate,
}

impl RunFiles {
    /// Create the files in `out`, session.jsonl only when `session` holds
    /// its writer (a new log, or one resumed).
    pub fn create(out: &Path, session: Option<SessionFile>) -> io::Result<RunFiles> {
        Ok(RunFiles {
            session,
            trials: TrialsCsv::create(&out.join("trials.csv"))?,
            summaries: SummaryCsvs::new(out),
            markdown: Markdown::new(&out.join("summary.md")),
            html: HtmlReport::new(out),
            junit: JUnitXml::new(&out.join("junit.xml")),
            gate: Gate::default(),
        })
    }

    /// Every reporter, in the order they hear events: a trial's log is
    /// written before its rows.
    pub fn reporters(&mut self) -> Vec<&mut dyn Reporter> {
        let mut reporters: Vec<&mut dyn Reporter> = Vec::new();
        if let Some(session) = &mut self.session {
            reporters.push(session);
        }
        reporters.extend([
            &mut self.trials as &mut dyn Reporter,
            &mut self.summaries,
            &mut self.markdown,
            &mut self.html,
            &mut self.junit,
            &mut self.gate,
        ]);
        reporters
    }
}

/// Runs built in memory for the reporters' tests.
#[cfg(test)]
pub(crate) mod test_runs {
    use super::{ModelInfo, RunInfo, ScenarioInfo};
    use crate::metrics::{Aggregate, AttemptOutcome, TrialOutcome};

    /// `models` models on one scenario: model m gets trials `0..10 * m`
    /// right, so every pair differs significantly and the best is last.
    pub fn ranked_run(models: usize) -> (RunInfo, Aggregate) {
        let trials = 10 * models as u32;
        let info = RunInfo {
            models: (0..models)
                .map(|m| ModelInfo {
                    name: format!("m{m}"),
                    prices: None,
                    max_attempts: None,
                })
                .collect(),
            batch: false,
            scenarios: vec![ScenarioInfo {
                name: "s".to_owned(),
                max_attempts: 1,
                task_milestones: None,
                task_user_turns: None,
                tags: Vec::new(),
                min_success: None,
            }],
            trials,
            ..RunInfo::default()
        };
        let mut stats = info.aggregate();
        for model in 0..models {
            for trial in 0..trials {
                stats.add(&TrialOutcome {
                    model,
                    scenario: 0,
                    trial,
                    attempts: vec![AttemptOutcome {
                        attempt: 1,
                        success: trial < 10 * model as u32,
                        calls: 1,
                        ..Default::default()
                    }],
                    task: None,
                });
            }
        }
        (info, stats)
    }
}
