//! trials.csv: one row per trial and attempt (a task: per turn), written
//! and flushed as each trial finishes, and read back for `--resume` and
//! `report merge`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{FinishedTrial, Reporter, RunInfo};
use crate::call::{Failure, Reason, StreamTiming, Usage};
use crate::metrics::{AttemptOutcome, Ending, JudgeUse, Score, StreamTimes, TaskEnd, TrialOutcome};

/// The column contract of trials.csv. Written, a row borrows its texts
/// from the trial and the run (no copy per row); read, it owns them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialRow<'a> {
    pub model: Cow<'a, str>,
    pub scenario: Cow<'a, str>,
    pub trial: u32,
    pub attempt: u32,
    pub attempt_success: bool,
    pub trial_success: bool,
    /// Failure kinds of the attempt, `;`-separated, one per failed call.
    pub failures: Cow<'a, str>,
    /// BFCL-rules scenarios: why the calls did not match, in BFCL's words.
    #[serde(default)]
    pub reason: Cow<'a, str>,
    pub calls: u32,
    pub model_ms: f64,
    pub tool_ms: f64,
    pub serial_ms: f64,
    pub ideal_ms: f64,
    /// Live models: tokens of the reply and their price (0 for mocks).
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// Tasks: milestones first reached in this turn.
    #[serde(default)]
    pub milestones: u32,
    /// Tasks: calls repeating an earlier successful call.
    #[serde(default)]
    pub redundant_calls: u32,
    /// Tasks: this turn's call errors that a later turn recovered from.
    #[serde(default)]
    pub recovered: u32,
    /// Tasks, on the last turn only: why the loop stopped (`answer`,
    /// `turn_limit`, `forbidden_call`, `lost`).
    #[serde(default)]
    pub ended: Cow<'a, str>,
    /// Calls that broke their tool's schema, whatever the verdict.
    #[serde(default)]
    pub schema_errors: u32,
    /// BFCL-rules scenarios: the parameter `reason` is about (the first
    /// wrong one in the model's order), when it is about one. New columns
    /// go last, so readers that index columns keep working.
    #[serde(default)]
    pub reason_parameter: Cow<'a, str>,
    /// Live models: time in toolgauge's own queue (a permit, the pace),
    /// apart from `model_ms`.
    #[serde(default)]
    pub queue_ms: f64,
    /// Live models: tries before the answered one, and their time.
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub retry_ms: f64,
    /// Live models: of the output tokens, the reasoning the format counts
    /// apart.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Live models: of the input tokens, those read from the prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Live models: of the input tokens, those written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Streamed replies (empty otherwise), from the request's send: the
    /// first byte, the first token, the first call complete, each call
    /// complete (`;`-separated), the last event.
    #[serde(default)]
    pub first_byte_ms: Option<f64>,
    #[serde(default)]
    pub first_token_ms: Option<f64>,
    #[serde(default)]
    pub first_call_ms: Option<f64>,
    #[serde(default)]
    pub calls_ms: Cow<'a, str>,
    #[serde(default)]
    pub stream_end_ms: Option<f64>,
    /// Streamed replies: to the last call's result, as run; had each
    /// call started when complete; calls run before the reply ended.
    #[serde(default)]
    pub turn_ms: Option<f64>,
    #[serde(default)]
    pub early_ideal_ms: Option<f64>,
    #[serde(default)]
    pub ran_early: u32,
    /// Tasks: the user turn this row's model turn answers (1: the
    /// opening one; a conversation's user speaks again at 2, 3, ...).
    #[serde(default)]
    pub user_turn: Option<u32>,
    /// Tasks, on a user turn's last row: `yes` when that user turn passed
    /// its checks, else `no`; empty on other rows.
    #[serde(default)]
    pub user_turn_passed: Cow<'a, str>,
    /// A simulated user's tokens and their price, for what it said after
    /// this row's model turn (apart from the agent's).
    #[serde(default)]
    pub user_input_tokens: u64,
    #[serde(default)]
    pub user_output_tokens: u64,
    #[serde(default)]
    pub user_cost_usd: f64,
    /// Tasks with a scoring probe, on the row it judged: the reward, its
    /// parts (`DB=1.0;COMMUNICATE=0.0`) and why the conversation ended,
    /// as the probe gave them.
    #[serde(default)]
    pub reward: Option<f64>,
    #[serde(default)]
    pub reward_parts: Cow<'a, str>,
    #[serde(default)]
    pub reward_reason: Cow<'a, str>,
    /// A judging model's rewards, one per time it judged (`1.0;0.0`), its
    /// tokens and their price as its probe gave them.
    #[serde(default)]
    pub judge_verdicts: Cow<'a, str>,
    #[serde(default)]
    pub judge_input_tokens: u64,
    #[serde(default)]
    pub judge_output_tokens: u64,
    #[serde(default)]
    pub judge_cost_usd: f64,
    /// This attempt repeats exactly a call that failed in the one before.
    #[serde(default)]
    pub repeated_failed_call: bool,
    /// On the row of the trial's first told error: what the next attempt
    /// did (`fixed`, `same_call`, `text`, `other_error`, `no_next`), then
    /// `;recovered_later` when a later attempt fixed it. Written for
    /// readers; read back, it is made again from the rows.
    #[serde(default)]
    pub next_move: Cow<'a, str>,
}

fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn duration(ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64((ms / 1e3).max(0.0))
}

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
    outcome
        .attempts
        .iter()
        .enumerate()
        .map(move |(i, a)| TrialRow {
            model: Cow::Borrowed(model),
            scenario: Cow::Borrowed(scenario),
            trial,
            attempt: a.attempt,
            attempt_success: a.success,
            trial_success,
            failures: failure_list(&a.failures),
            reason: Cow::Borrowed(a.reason.map_or("", Reason::as_str)),
            calls: a.calls,
            model_ms: millis(a.model_time),
            tool_ms: millis(a.tool_time),
            serial_ms: millis(a.serial_time),
            ideal_ms: millis(a.ideal_time),
            input_tokens: a.usage.input_tokens,
            output_tokens: a.usage.output_tokens,
            cost_usd: prices.map_or(0.0, |p| round_cost(p.cost(a.usage))),
            milestones: a.milestones,
            redundant_calls: a.redundant,
            recovered: a.recovered,
            ended: Cow::Borrowed(if i + 1 == last { ending } else { "" }),
            schema_errors: a.schema_errors,
            reason_parameter: Cow::Borrowed(a.reason_parameter.as_deref().unwrap_or_default()),
            queue_ms: millis(a.queue_time),
            retries: a.retries,
            retry_ms: millis(a.retry_time),
            reasoning_tokens: a.usage.reasoning_tokens,
            cached_tokens: a.usage.cached_tokens,
            cache_write_tokens: a.usage.cache_write_tokens,
            user_turn: (a.user_turn > 0).then_some(a.user_turn),
            user_turn_passed: Cow::Borrowed(match a.user_turn_passed {
                Some(true) => "yes",
                Some(false) => "no",
                None => "",
            }),
            user_input_tokens: a.user_usage.input_tokens,
            user_output_tokens: a.user_usage.output_tokens,
            user_cost_usd: round_cost(a.user_cost),
            reward: a.score.as_ref().map(|s| s.reward),
            reward_parts: a.score.as_ref().map_or(Cow::Borrowed(""), reward_parts),
            reward_reason: Cow::Borrowed(
                a.score
                    .as_ref()
                    .and_then(|s| s.reason.as_deref())
                    .unwrap_or_default(),
            ),
            repeated_failed_call: a.repeated_failed_call,
            next_move: match recovery {
                Some(r) if first_told == Some(i) => Cow::Owned(next_move_text(&r)),
                _ => Cow::Borrowed(""),
            },
            ..judge_columns(
                a.score.as_ref().and_then(|s| s.judge.as_ref()),
                stream_columns(a.stream.as_ref()),
            )
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

/// The judge's columns of a row, over its streamed-reply ones.
fn judge_columns(judge: Option<&JudgeUse>, streamed: TrialRow<'static>) -> TrialRow<'static> {
    TrialRow {
        judge_verdicts: judge.map_or(Cow::Borrowed(""), |j| {
            let verdicts: Vec<String> = j.verdicts.iter().map(|v| format!("{v:?}")).collect();
            Cow::Owned(verdicts.join(";"))
        }),
        judge_input_tokens: judge.map_or(0, |j| j.input_tokens),
        judge_output_tokens: judge.map_or(0, |j| j.output_tokens),
        judge_cost_usd: judge.map_or(0.0, |j| round_cost(j.cost_usd)),
        ..streamed
    }
}

/// The streamed-reply columns of a row (empty when not streamed).
fn stream_columns(stream: Option<&StreamTimes>) -> TrialRow<'static> {
    let Some(stream) = stream else {
        return TrialRow::default();
    };
    let timing = &stream.timing;
    // `{:?}` writes a whole number as "3.0", as the CSV writer writes
    // first_call_ms; Display would write "3", the same time two ways.
    let calls: Vec<String> = timing
        .calls
        .iter()
        .map(|d| format!("{:?}", millis(*d)))
        .collect();
    TrialRow {
        first_byte_ms: Some(millis(timing.first_byte)),
        first_token_ms: timing.first_token.map(millis),
        first_call_ms: timing.calls.first().copied().map(millis),
        calls_ms: Cow::Owned(calls.join(";")),
        stream_end_ms: Some(millis(timing.end)),
        turn_ms: Some(millis(stream.turn)),
        early_ideal_ms: Some(millis(stream.early_ideal)),
        ran_early: stream.ran_early,
        ..TrialRow::default()
    }
}

/// A score's parts as one column: `DB=1.0;COMMUNICATE=0.0`.
fn reward_parts(score: &Score) -> Cow<'static, str> {
    let parts: Vec<String> = score
        .components
        .iter()
        .map(|(name, value)| format!("{name}={value:?}"))
        .collect();
    Cow::Owned(parts.join(";"))
}

/// A row's score read back from `path`; `None`: no probe scored it.
fn score_of(row: &TrialRow<'_>, path: &Path) -> io::Result<Option<Score>> {
    let Some(reward) = row.reward else {
        return Ok(None);
    };
    let mut components = Vec::new();
    for part in row.reward_parts.split(';').filter(|p| !p.is_empty()) {
        let parsed = part
            .split_once('=')
            .and_then(|(name, value)| Some((name.to_owned(), value.parse().ok()?)));
        components.push(parsed.ok_or_else(|| {
            io::Error::other(format!(
                "{}: reward_parts {part:?} is not NAME=NUMBER",
                path.display()
            ))
        })?);
    }
    let judged = !row.judge_verdicts.is_empty();
    let mut verdicts = Vec::new();
    for verdict in row.judge_verdicts.split(';').filter(|v| !v.is_empty()) {
        verdicts.push(verdict.parse().map_err(|_| {
            io::Error::other(format!(
                "{}: judge_verdicts {verdict:?} is not a number",
                path.display()
            ))
        })?);
    }
    Ok(Some(Score {
        reward,
        components,
        reason: (!row.reward_reason.is_empty()).then(|| row.reward_reason.to_string()),
        judge: judged.then_some(JudgeUse {
            verdicts,
            input_tokens: row.judge_input_tokens,
            output_tokens: row.judge_output_tokens,
            cost_usd: row.judge_cost_usd,
        }),
    }))
}

/// A row's streamed-reply columns read back; `None`: not streamed.
fn stream_times(row: &TrialRow<'_>) -> Option<StreamTimes> {
    let end = row.stream_end_ms?;
    Some(StreamTimes {
        timing: StreamTiming {
            first_byte: duration(row.first_byte_ms.unwrap_or_default()),
            first_token: row.first_token_ms.map(duration),
            calls: row
                .calls_ms
                .split(';')
                .filter_map(|ms| ms.parse().ok())
                .map(duration)
                .collect(),
            end: duration(end),
        },
        turn: duration(row.turn_ms.unwrap_or_default()),
        early_ideal: duration(row.early_ideal_ms.unwrap_or_default()),
        ran_early: row.ran_early,
    })
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

/// Dollars to a millionth of a cent: enough, and stable in text.
fn round_cost(usd: f64) -> f64 {
    (usd * 1e8).round() / 1e8
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
        let stream = stream_times(&row);
        let user_turn_passed = match row.user_turn_passed.as_ref() {
            "" => None,
            "yes" => Some(true),
            "no" => Some(false),
            other => return Err(unknown("user_turn_passed", other)),
        };
        let score = score_of(&row, &self.path)?;
        let task = self.task_end(&row, scenario)?;
        let reason = match row.reason.as_ref() {
            "" => None,
            text => Some(Reason::parse(text).ok_or_else(|| unknown("reason", text))?),
        };
        let reason_parameter =
            (!row.reason_parameter.is_empty()).then(|| row.reason_parameter.into_owned());
        let attempt = AttemptOutcome {
            attempt: row.attempt,
            success: row.attempt_success,
            failures,
            reason,
            reason_parameter,
            calls: row.calls,
            model_time: duration(row.model_ms),
            queue_time: duration(row.queue_ms),
            retries: row.retries,
            retry_time: duration(row.retry_ms),
            tool_time: duration(row.tool_ms),
            serial_time: duration(row.serial_ms),
            ideal_time: duration(row.ideal_ms),
            usage: Usage {
                input_tokens: row.input_tokens,
                output_tokens: row.output_tokens,
                reasoning_tokens: row.reasoning_tokens,
                cached_tokens: row.cached_tokens,
                cache_write_tokens: row.cache_write_tokens,
            },
            stream,
            user_turn: row.user_turn.unwrap_or(0),
            user_turn_passed,
            user_usage: Usage {
                input_tokens: row.user_input_tokens,
                output_tokens: row.user_output_tokens,
                ..Usage::default()
            },
            user_cost: row.user_cost_usd,
            milestones: row.milestones,
            redundant: row.redundant_calls,
            schema_errors: row.schema_errors,
            recovered: row.recovered,
            repeated_failed_call: row.repeated_failed_call,
            score,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_whole_millisecond_call_time_is_written_as_first_call_ms_is() {
        let stream = StreamTimes {
            timing: StreamTiming {
                first_byte: Duration::from_millis(1),
                first_token: None,
                calls: vec![Duration::from_millis(3), Duration::from_micros(4_250)],
                end: Duration::from_millis(5),
            },
            turn: Duration::from_millis(6),
            early_ideal: Duration::from_millis(6),
            ran_early: 1,
        };
        let mut writer = csv::Writer::from_writer(vec![]);
        writer.serialize(stream_columns(Some(&stream))).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let row = reader.records().next().unwrap().unwrap();
        let column = |name: &str| &row[headers.iter().position(|h| h == name).unwrap()];
        assert_eq!(column("calls_ms"), "3.0;4.25");
        assert_eq!(
            column("calls_ms").split(';').next(),
            Some(column("first_call_ms"))
        );
    }
}
