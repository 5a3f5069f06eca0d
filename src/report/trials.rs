//! trials.csv: one row per trial and attempt (a task: per turn), written
//! and flushed as each trial finishes, and read back for `--resume` and
//! `report merge`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::trial_row::{Columns, TrialRow, round_cost};
use super::{FinishedTrial, Reporter, RunInfo};
use crate::call::{Failure, Reason};
use crate::metrics::{AttemptOutcome, Ending, TaskEnd, TrialOutcome};

pub fn rows<'r>(
    info: &'r RunInfo,
    outcome: &'r TrialOutcome,
) -> impl Iterator<Item = TrialRow<'r>> + 'r {
    let model = info.models[outcome.model].name.as_str();
    let prices = info.models[outcome.model].prices;
    let scenario = info.scenarios[outcome.scenario].name.as_str();
    let trial_success = outcome.success();
    let trial = outcome.trial;
    let last = outcome.attempts.len();
    let ending = outcome.task.map(|t| t.ending.as_str()).unwrap_or_default();
    let recovery = crate::metrics::recovery::of_attempts(&outcome.attempts);
    let first_told = outcome
        .attempts
        .iter()
        .position(|a| a.failures.iter().any(|f| f.is_told()));
    outcome.attempts.iter().enumerate().map(move |(i, a)| {
        let mut row = TrialRow {
            model: Cow::Borrowed(model),
            scenario: Cow::Borrowed(scenario),
            trial,
            attempt: a.attempt,
            attempt_success: a.success,
            trial_success,
            failures: failure_list(&a.failures),
            reason: Cow::Borrowed(a.reason.map_or("", Reason::as_str)),
            reason_parameter: Cow::Borrowed(a.reason_parameter.as_deref().unwrap_or_default()),
            calls: a.calls,
            schema_errors: a.schema_errors,
            repeated_failed_call: a.repeated_failed_call,
            cost_usd: prices.map_or(0.0, |p| round_cost(p.cost(a.usage))),
            ended: Cow::Borrowed(if i + 1 == last { ending } else { "" }),
            next_move: match recovery {
                Some(r) if first_told == Some(i) => Cow::Owned(next_move_text(&r)),
                _ => Cow::Borrowed(""),
            },
            ..TrialRow::default()
        };
        a.time.put(&mut row);
        a.usage.put(&mut row);
        a.stream.put(&mut row);
        a.turn.put(&mut row);
        a.user.put(&mut row);
        a.score.put(&mut row);
        row
    })
}

/// The `next_move` column: `same_call;recovered_later`.
fn next_move_text(recovery: &crate::metrics::Recovery) -> String {
    let mut text = recovery.next.as_str().to_owned();
    if recovery.later {
        text.push_str(";recovered_later");
    }
    text
}

/// `validation;validation;wrong_call`; none or one borrowed.
fn failure_list(failures: &[Failure]) -> Cow<'static, str> {
    match failures {
        [] => return Cow::Borrowed(""),
        [one] => return Cow::Borrowed(one.as_str()),
        _ => {}
    }
    let mut text = String::new();
    for (i, failure) in failures.iter().enumerate() {
        if i > 0 {
            text.push(';');
        }
        text.push_str(failure.as_str());
    }
    Cow::Owned(text)
}

/// Writes trials.csv as trials finish. Rows wait in memory until the next
/// checkpoint and reach the file only then, whole trials together, so a
/// killed run leaves whole trials (a torn last line at worst, which the
/// reader drops) and never a trial whose log is not written yet.
pub struct TrialsCsv {
    file: File,
    /// The rows since the last checkpoint.
    pending: csv::Writer<Vec<u8>>,
}

impl TrialsCsv {
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(TrialsCsv {
            file: File::create(path)?,
            // The first batch carries the header.
            pending: csv::Writer::from_writer(Vec::new()),
        })
    }
}

impl Reporter for TrialsCsv {
    fn trial_finished(&mut self, info: &RunInfo, trial: FinishedTrial<'_>) -> io::Result<()> {
        for row in rows(info, trial.outcome) {
            self.pending.serialize(row).map_err(io::Error::other)?;
        }
        Ok(())
    }

    fn checkpoint(&mut self) -> io::Result<()> {
        let next = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::with_capacity(64 * 1024));
        let batch = std::mem::replace(&mut self.pending, next);
        let bytes = batch
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        // A run with no trial still has the header.
        if bytes.is_empty() && self.file.metadata()?.len() == 0 {
            let names = super::header_of::<TrialRow<'_>>()?;
            let mut header = names.iter().collect::<Vec<_>>().join(",");
            header.push('\n');
            return self.file.write_all(header.as_bytes());
        }
        self.file.write_all(&crate::secret::redact_bytes(&bytes))
    }
}

/// Reads the complete trials of a trials.csv back one at a time, in file
/// order, with model and scenario indices looked up in the run's info: constant
/// memory, whatever the run's size. A line cut by a kill is not read, and
/// a trial whose rows end early is skipped.
pub struct TrialReader<'p> {
    info: &'p RunInfo,
    path: PathBuf,
    rows: csv::DeserializeRecordsIntoIter<io::Take<File>, TrialRow<'static>>,
    pending: Option<TrialOutcome>,
}

impl<'p> TrialReader<'p> {
    pub fn open(info: &'p RunInfo, path: &Path) -> io::Result<Self> {
        let mut file = crate::source::open_run_file(path)?;
        let whole = whole_lines_length(&mut file)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(TrialReader {
            info,
            path: path.to_owned(),
            rows: csv::Reader::from_reader(file.take(whole)).into_deserialize(),
            pending: None,
        })
    }

    /// A trial is complete when it succeeded or used every attempt; a task
    /// when its last turn says how it ended.
    fn complete(&self, outcome: &TrialOutcome) -> bool {
        if self.info.scenarios[outcome.scenario]
            .task_milestones
            .is_some()
        {
            return outcome.task.is_some();
        }
        outcome.success()
            || outcome.attempts.len() as u32
                >= self.info.max_attempts(outcome.model, outcome.scenario)
    }

    /// A value the run does not know, named with the file.
    fn unknown(&self, what: &str, name: &str) -> io::Error {
        io::Error::other(format!("{}: unknown {what} {name:?}", self.path.display()))
    }

    fn convert(&self, row: TrialRow<'static>) -> io::Result<Converted> {
        let info = self.info;
        let unknown = |what: &str, name: &str| self.unknown(what, name);
        let model = info
            .models
            .iter()
            .position(|m| m.name == row.model)
            .ok_or_else(|| unknown("model", &row.model))?;
        let scenario = info
            .scenarios
            .iter()
            .position(|s| s.name == row.scenario)
            .ok_or_else(|| unknown("scenario", &row.scenario))?;
        let failures = row
            .failures
            .split(';')
            .filter(|f| !f.is_empty())
            .map(|f| Failure::parse(f).ok_or_else(|| unknown("failure kind", f)))
            .collect::<io::Result<Vec<_>>>()?;
        let task = self.task_end(&row, scenario)?;
        let reason = match row.reason.as_ref() {
            "" => None,
            text => Some(Reason::parse(text).ok_or_else(|| unknown("reason", text))?),
        };
        let path = self.path.as_path();
        let attempt = AttemptOutcome {
            attempt: row.attempt,
            success: row.attempt_success,
            failures,
            reason,
            reason_parameter: (!row.reason_parameter.is_empty())
                .then(|| row.reason_parameter.to_string()),
            calls: row.calls,
            schema_errors: row.schema_errors,
            repeated_failed_call: row.repeated_failed_call,
            time: Columns::take(&row, path)?,
            usage: Columns::take(&row, path)?,
            stream: Columns::take(&row, path)?,
            turn: Columns::take(&row, path)?,
            user: Columns::take(&row, path)?,
            score: Columns::take(&row, path)?,
        };
        Ok(Converted {
            model,
            scenario,
            trial: row.trial,
            attempt,
            task,
        })
    }

    /// How a task's trial ended, from its last row; `None` for a row
    /// that is not a task's last.
    fn task_end(&self, row: &TrialRow<'_>, scenario: usize) -> io::Result<Option<TaskEnd>> {
        let scenario = &self.info.scenarios[scenario];
        Ok(match (scenario.task_milestones, row.ended.as_ref()) {
            (_, "") => None,
            (Some(milestones), ended) => Some(TaskEnd {
                success: row.trial_success,
                ending: Ending::parse(ended).ok_or_else(|| self.unknown("ending", ended))?,
                milestones,
                user_turns: scenario.task_user_turns.unwrap_or(1),
            }),
            (None, ended) => return Err(self.unknown("ending of a non-task scenario", ended)),
        })
    }
}

/// One row read back.
struct Converted {
    model: usize,
    scenario: usize,
    trial: u32,
    attempt: AttemptOutcome,
    task: Option<TaskEnd>,
}

impl Iterator for TrialReader<'_> {
    type Item = io::Result<TrialOutcome>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(row) = self.rows.next() else {
                let last = self.pending.take()?;
                return self.complete(&last).then_some(Ok(last));
            };
            let Converted {
                model,
                scenario,
                trial,
                attempt,
                task,
            } = match row.map_err(io::Error::other).and_then(|r| self.convert(r)) {
                Ok(parts) => parts,
                Err(error) => return Some(Err(error)),
            };
            if let Some(pending) = &mut self.pending
                && (pending.model, pending.scenario, pending.trial) == (model, scenario, trial)
                && attempt.attempt == pending.attempts.len() as u32 + 1
                && pending.task.is_none()
            {
                pending.attempts.push(attempt);
                pending.task = task;
                continue;
            }
            let started = TrialOutcome {
                model,
                scenario,
                trial,
                attempts: vec![attempt],
                task,
            };
            if let Some(done) = self.pending.replace(started)
                && self.complete(&done)
            {
                return Some(Ok(done));
            }
        }
    }
}

/// The length of the file up to and including its last newline.
fn whole_lines_length(file: &mut File) -> io::Result<u64> {
    let mut end = file.metadata()?.len();
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let size = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..size])?;
        if let Some(newline) = chunk[..size].iter().rposition(|b| *b == b'\n') {
            return Ok(start + newline as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}
