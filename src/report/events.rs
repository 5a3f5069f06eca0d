//! The vocabulary every reporter speaks: what a run is (`RunInfo`), the
//! events it hears (`RunEvent`, `Notice`), the `Reporter` trait, and the
//! small helpers the report files share.

use std::io;

use serde::Serialize;

use super::BatchRecord;
use crate::call::{Failure, Prices};
use crate::metrics::{Aggregate, TrialOutcome};

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
    /// `--otlp`: spans that did not reach `to` (told once, as the run
    /// ends; no trial is lost with them).
    SpansLost {
        to: String,
        lost: u64,
        ended: u64,
        first_failure: Option<String>,
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
            Notice::SpansLost {
                to,
                lost,
                ended,
                first_failure,
            } => {
                write!(
                    f,
                    "warning: OTLP export to {to}: {lost} of {ended} spans lost (no trial was)"
                )?;
                if let Some(first) = first_failure {
                    write!(
                        f,
                        "; the first failure: {}",
                        crate::excerpt::cut(first, 300)
                    )?;
                }
                Ok(())
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
pub(crate) fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// CI thresholds: on final success, on pass^k, and on the share of
/// trials a cell may lose to infrastructure (0 unless allowed: a lost
/// trial fails the run).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thresholds {
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
    /// The share of a cell's trials it may lose to infrastructure
    /// (`--max-lost`; 0: any lost trial fails the run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_lost: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}
