//! trials.csv: one row per trial and attempt, written and flushed as each
//! trial finishes, and read back for `--resume` and `report merge`.

use std::fs::File;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::call::ErrorKind;
use crate::harness::{RunPlan, TrialSink};
use crate::metrics::{AttemptRecord, TrialRecord};

/// The column contract of trials.csv.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    pub model: String,
    pub scenario: String,
    pub trial: u32,
    pub attempt: u32,
    pub attempt_success: bool,
    pub trial_success: bool,
    /// Failure kinds of the attempt, `;`-separated, one per failed call.
    pub failures: String,
    pub calls: u32,
    pub model_ms: f64,
    pub tool_ms: f64,
    pub serial_ms: f64,
    pub ideal_ms: f64,
}

/// Every failure kind that can appear in reports.
pub const FAILURE_KINDS: [&str; 10] = [
    "parse",
    "unknown_tool",
    "validation",
    "runtime",
    "timeout",
    "sandbox",
    "bad_response",
    "unexpected_call",
    "missing_call",
    "wrong_call",
];

fn static_kind(text: &str) -> Option<&'static str> {
    debug_assert!(
        ErrorKind::ALL
            .iter()
            .all(|k| FAILURE_KINDS.contains(&k.as_str()))
    );
    FAILURE_KINDS.iter().copied().find(|k| *k == text)
}

fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn duration(ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64((ms / 1e3).max(0.0))
}

pub fn rows(plan: &RunPlan, record: &TrialRecord) -> impl Iterator<Item = TrialRow> {
    let model = plan.models[record.model].name().to_owned();
    let scenario = plan.scenarios[record.scenario].name.clone();
    let trial_success = record.success();
    let trial = record.trial;
    record.attempts.clone().into_iter().map(move |a| TrialRow {
        model: model.clone(),
        scenario: scenario.clone(),
        trial,
        attempt: a.attempt,
        attempt_success: a.success,
        trial_success,
        failures: a.failures.join(";"),
        calls: a.calls,
        model_ms: millis(a.model_time),
        tool_ms: millis(a.tool_time),
        serial_ms: millis(a.serial_time),
        ideal_ms: millis(a.ideal_time),
    })
}

/// Writes trials.csv as trials finish; each trial's rows are flushed
/// together, so a killed run leaves whole trials (a torn last line at
/// worst, which `read_records` drops).
pub struct TrialsCsv {
    writer: csv::Writer<File>,
}

impl TrialsCsv {
    pub fn create(path: &Path) -> io::Result<Self> {
        let writer = csv::Writer::from_writer(File::create(path)?);
        Ok(TrialsCsv { writer })
    }
}

impl TrialSink for TrialsCsv {
    fn trial(&mut self, plan: &RunPlan, record: &TrialRecord) -> io::Result<()> {
        for row in rows(plan, record) {
            self.writer.serialize(row).map_err(io::Error::other)?;
        }
        self.writer.flush()
    }
}

/// Read the complete trials of a trials.csv back as records, in file
/// order, with model and scenario indices looked up in `plan`. A trial
/// whose rows end early (a killed run) is dropped. Rows of models or
/// scenarios the plan does not have are an error.
pub fn read_records(plan: &RunPlan, path: &Path) -> io::Result<Vec<TrialRecord>> {
    let bytes = std::fs::read(path)?;
    // A line cut by a kill may still parse (a number cut short): keep only
    // lines that were finished.
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |end| end + 1);
    let mut reader = csv::Reader::from_reader(&bytes[..whole]);
    let mut records: Vec<TrialRecord> = Vec::new();
    for row in reader.deserialize::<TrialRow>() {
        let Ok(row) = row else {
            break; // a torn last line
        };
        let model = plan
            .models
            .iter()
            .position(|m| m.name() == row.model)
            .ok_or_else(|| {
                io::Error::other(format!("{}: unknown model {:?}", path.display(), row.model))
            })?;
        let scenario = plan
            .scenarios
            .iter()
            .position(|s| s.name == row.scenario)
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{}: unknown scenario {:?}",
                    path.display(),
                    row.scenario
                ))
            })?;
        let failures = row
            .failures
            .split(';')
            .filter(|f| !f.is_empty())
            .map(|f| {
                static_kind(f)
                    .ok_or_else(|| io::Error::other(format!("unknown failure kind {f:?}")))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let attempt = AttemptRecord {
            attempt: row.attempt,
            success: row.attempt_success,
            failures,
            calls: row.calls,
            model_time: duration(row.model_ms),
            tool_time: duration(row.tool_ms),
            serial_time: duration(row.serial_ms),
            ideal_time: duration(row.ideal_ms),
        };
        match records.last_mut() {
            Some(last)
                if (last.model, last.scenario, last.trial) == (model, scenario, row.trial)
                    && row.attempt == last.attempts.len() as u32 + 1 =>
            {
                last.attempts.push(attempt);
            }
            _ => records.push(TrialRecord {
                model,
                scenario,
                trial: row.trial,
                attempts: vec![attempt],
            }),
        }
    }
    // A trial is complete when it succeeded or used every attempt.
    records.retain(|r| {
        r.success() || r.attempts.len() as u32 >= plan.scenarios[r.scenario].max_retries
    });
    Ok(records)
}
