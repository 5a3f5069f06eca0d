//! trials.csv's row: the column contract, and for each group of an
//! attempt's measures its columns both ways, side by side, so a measure
//! added to a group is written and read back in one place.

use std::borrow::Cow;
use std::io;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::call::{StreamTiming, Usage};
use crate::metrics::{AttemptTime, JudgeUse, Score, StreamTimes, TurnMeasures, UserSpend};

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
    /// Tasks with a scoring probe, on the row it judged: its yes-or-no
    /// checks beside the reward (`db_match=true`; `null`: not checked).
    #[serde(default)]
    pub reward_checks: Cow<'a, str>,
}

/// A group of an attempt's measures and its columns in trials.csv.
pub(super) trait Columns: Sized {
    /// Writes the group's columns, borrowing its texts.
    fn put<'a>(&'a self, row: &mut TrialRow<'a>);
    /// Reads the group back; `path` names the file in an error.
    fn take(row: &TrialRow<'_>, path: &Path) -> io::Result<Self>;
}

impl Columns for AttemptTime {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        row.model_ms = millis(self.model);
        row.tool_ms = millis(self.tool);
        row.serial_ms = millis(self.serial);
        row.ideal_ms = millis(self.ideal);
        row.queue_ms = millis(self.queue);
        row.retries = self.retries;
        row.retry_ms = millis(self.retry);
    }

    fn take(row: &TrialRow<'_>, _: &Path) -> io::Result<Self> {
        Ok(AttemptTime {
            model: duration(row.model_ms),
            tool: duration(row.tool_ms),
            serial: duration(row.serial_ms),
            ideal: duration(row.ideal_ms),
            queue: duration(row.queue_ms),
            retries: row.retries,
            retry: duration(row.retry_ms),
        })
    }
}

/// The model's tokens; their price (`cost_usd`) is the run's to write.
impl Columns for Usage {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        row.input_tokens = self.input_tokens;
        row.output_tokens = self.output_tokens;
        row.reasoning_tokens = self.reasoning_tokens;
        row.cached_tokens = self.cached_tokens;
        row.cache_write_tokens = self.cache_write_tokens;
    }

    fn take(row: &TrialRow<'_>, _: &Path) -> io::Result<Self> {
        Ok(Usage {
            input_tokens: row.input_tokens,
            output_tokens: row.output_tokens,
            reasoning_tokens: row.reasoning_tokens,
            cached_tokens: row.cached_tokens,
            cache_write_tokens: row.cache_write_tokens,
        })
    }
}

impl Columns for TurnMeasures {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        row.user_turn = (self.user_turn > 0).then_some(self.user_turn);
        row.user_turn_passed = Cow::Borrowed(match self.user_turn_passed {
            Some(true) => "yes",
            Some(false) => "no",
            None => "",
        });
        row.milestones = self.milestones;
        row.redundant_calls = self.redundant;
        row.recovered = self.recovered;
    }

    fn take(row: &TrialRow<'_>, path: &Path) -> io::Result<Self> {
        let user_turn_passed = match row.user_turn_passed.as_ref() {
            "" => None,
            "yes" => Some(true),
            "no" => Some(false),
            other => return Err(bad(path, "user_turn_passed", other, "yes, no or empty")),
        };
        Ok(TurnMeasures {
            user_turn: row.user_turn.unwrap_or(0),
            user_turn_passed,
            milestones: row.milestones,
            redundant: row.redundant_calls,
            recovered: row.recovered,
        })
    }
}

/// A simulated user's input and output tokens and their price.
impl Columns for UserSpend {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        row.user_input_tokens = self.usage.input_tokens;
        row.user_output_tokens = self.usage.output_tokens;
        row.user_cost_usd = round_cost(self.cost);
    }

    fn take(row: &TrialRow<'_>, _: &Path) -> io::Result<Self> {
        Ok(UserSpend {
            usage: Usage {
                input_tokens: row.user_input_tokens,
                output_tokens: row.user_output_tokens,
                ..Usage::default()
            },
            cost: row.user_cost_usd,
        })
    }
}

/// A streamed reply's columns; all empty when the reply was not streamed.
impl Columns for Option<StreamTimes> {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        let Some(stream) = self else {
            return;
        };
        let timing = &stream.timing;
        // `{:?}` writes a whole number as "3.0", as the CSV writer writes
        // first_call_ms; Display would write "3", the same time two ways.
        let calls: Vec<String> = timing
            .calls
            .iter()
            .map(|d| format!("{:?}", millis(*d)))
            .collect();
        row.first_byte_ms = Some(millis(timing.first_byte));
        row.first_token_ms = timing.first_token.map(millis);
        row.first_call_ms = timing.calls.first().copied().map(millis);
        row.calls_ms = Cow::Owned(calls.join(";"));
        row.stream_end_ms = Some(millis(timing.end));
        row.turn_ms = Some(millis(stream.turn));
        row.early_ideal_ms = Some(millis(stream.early_ideal));
        row.ran_early = stream.ran_early;
    }

    fn take(row: &TrialRow<'_>, path: &Path) -> io::Result<Self> {
        let Some(end) = row.stream_end_ms else {
            return Ok(None);
        };
        let mut calls = Vec::new();
        for ms in row.calls_ms.split(';').filter(|ms| !ms.is_empty()) {
            let ms = ms
                .parse()
                .map_err(|_| bad(path, "calls_ms", ms, "milliseconds"))?;
            calls.push(duration(ms));
        }
        Ok(Some(StreamTimes {
            timing: StreamTiming {
                first_byte: duration(row.first_byte_ms.unwrap_or_default()),
                first_token: row.first_token_ms.map(duration),
                calls,
                end: duration(end),
            },
            turn: duration(row.turn_ms.unwrap_or_default()),
            early_ideal: duration(row.early_ideal_ms.unwrap_or_default()),
            ran_early: row.ran_early,
        }))
    }
}

/// A probe's score and its judge's use; all empty when no probe scored.
impl Columns for Option<Score> {
    fn put<'a>(&'a self, row: &mut TrialRow<'a>) {
        let Some(score) = self else {
            return;
        };
        let parts: Vec<String> = score
            .components
            .iter()
            .map(|(name, value)| format!("{name}={value:?}"))
            .collect();
        row.reward = score.reward;
        row.reward_parts = Cow::Owned(parts.join(";"));
        row.reward_reason = Cow::Borrowed(score.reason.as_deref().unwrap_or_default());
        let checks: Vec<String> = score
            .checks
            .iter()
            .map(|(name, checked)| match checked {
                Some(yes) => format!("{name}={yes}"),
                None => format!("{name}=null"),
            })
            .collect();
        row.reward_checks = Cow::Owned(checks.join(";"));
        let Some(judge) = &score.judge else {
            return;
        };
        let verdicts: Vec<String> = judge.verdicts.iter().map(|v| format!("{v:?}")).collect();
        row.judge_verdicts = Cow::Owned(verdicts.join(";"));
        row.judge_input_tokens = judge.input_tokens;
        row.judge_output_tokens = judge.output_tokens;
        row.judge_cost_usd = round_cost(judge.cost_usd);
    }

    fn take(row: &TrialRow<'_>, path: &Path) -> io::Result<Self> {
        // A reward unknown (its judge failed) still has the parts judged.
        let reward = row.reward;
        if reward.is_none()
            && row.reward_parts.is_empty()
            && row.reward_reason.is_empty()
            && row.reward_checks.is_empty()
        {
            return Ok(None);
        }
        let mut components = Vec::new();
        for part in row.reward_parts.split(';').filter(|p| !p.is_empty()) {
            let parsed = part
                .split_once('=')
                .and_then(|(name, value)| Some((name.to_owned(), value.parse().ok()?)));
            components.push(parsed.ok_or_else(|| bad(path, "reward_parts", part, "NAME=NUMBER"))?);
        }
        let mut checks = Vec::new();
        for check in row.reward_checks.split(';').filter(|c| !c.is_empty()) {
            let parsed = check.split_once('=').and_then(|(name, value)| {
                let checked = match value {
                    "true" => Some(true),
                    "false" => Some(false),
                    "null" => None,
                    _ => return None,
                };
                Some((name.to_owned(), checked))
            });
            checks.push(
                parsed.ok_or_else(|| bad(path, "reward_checks", check, "NAME=true|false|null"))?,
            );
        }
        let judged = !row.judge_verdicts.is_empty();
        let mut verdicts = Vec::new();
        for verdict in row.judge_verdicts.split(';').filter(|v| !v.is_empty()) {
            verdicts.push(
                verdict
                    .parse()
                    .map_err(|_| bad(path, "judge_verdicts", verdict, "a number"))?,
            );
        }
        Ok(Some(Score {
            reward,
            components,
            reason: (!row.reward_reason.is_empty()).then(|| row.reward_reason.to_string()),
            checks,
            judge: judged.then_some(JudgeUse {
                verdicts,
                input_tokens: row.judge_input_tokens,
                output_tokens: row.judge_output_tokens,
                cost_usd: row.judge_cost_usd,
            }),
        }))
    }
}

/// A column's value that is not what the column holds.
fn bad(path: &Path, column: &str, value: &str, accepted: &str) -> io::Error {
    io::Error::other(format!(
        "{}: {column} {value:?} is not {accepted}",
        path.display()
    ))
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn duration(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1e3).max(0.0))
}

/// Dollars to a millionth of a cent: enough, and stable in text.
pub(super) fn round_cost(usd: f64) -> f64 {
    (usd * 1e8).round() / 1e8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// `value`'s group written to a row, through the CSV text, read back.
    fn through_csv<T: Columns>(value: &T) -> T {
        let mut row = TrialRow::default();
        value.put(&mut row);
        let mut writer = csv::Writer::from_writer(vec![]);
        writer.serialize(row).unwrap();
        let text = writer.into_inner().unwrap();
        let row: TrialRow = csv::Reader::from_reader(text.as_slice())
            .deserialize()
            .next()
            .unwrap()
            .unwrap();
        T::take(&row, Path::new("trials.csv")).unwrap()
    }

    #[test]
    fn every_measure_of_an_attempt_survives_trials_csv() {
        let time = AttemptTime {
            model: ms(250),
            queue: ms(125),
            retries: 2,
            retry: ms(500),
            tool: ms(375),
            serial: ms(750),
            ideal: ms(1500),
        };
        assert_eq!(through_csv(&time), time);
        let usage = Usage {
            input_tokens: 11,
            output_tokens: 12,
            reasoning_tokens: 13,
            cached_tokens: 14,
            cache_write_tokens: 15,
        };
        assert_eq!(through_csv(&usage), usage);
        let turn = TurnMeasures {
            user_turn: 3,
            user_turn_passed: Some(false),
            milestones: 4,
            redundant: 5,
            recovered: 6,
        };
        assert_eq!(through_csv(&turn), turn);
        // A simulated user's reasoning and cache tokens have no columns.
        let user = UserSpend {
            usage: Usage {
                input_tokens: 21,
                output_tokens: 22,
                ..Usage::default()
            },
            cost: 0.25,
        };
        assert_eq!(through_csv(&user), user);
        let stream = Some(StreamTimes {
            timing: StreamTiming {
                first_byte: ms(125),
                first_token: Some(ms(250)),
                calls: vec![ms(375), ms(500)],
                end: ms(750),
            },
            turn: ms(1000),
            early_ideal: ms(1250),
            ran_early: 2,
        });
        assert_eq!(through_csv(&stream), stream);
        let score = Some(Score {
            reward: Some(0.5),
            components: vec![("DB".into(), 1.0), ("COMMUNICATE".into(), 0.0)],
            reason: Some("user_stop".into()),
            checks: vec![("db_match".into(), Some(false)), ("auth".into(), None)],
            judge: Some(JudgeUse {
                verdicts: vec![1.0, 0.0],
                input_tokens: 31,
                output_tokens: 32,
                cost_usd: 0.125,
            }),
        });
        assert_eq!(through_csv(&score), score);
        let unknown = score.map(|known| Score {
            reward: None,
            judge: None,
            ..known
        });
        assert_eq!(
            through_csv(&unknown),
            unknown,
            "a reward unknown, its parts kept"
        );
        assert_eq!(through_csv(&None::<Score>), None);
        assert_eq!(through_csv(&None::<StreamTimes>), None);
    }

    #[test]
    fn a_whole_millisecond_call_time_is_written_as_first_call_ms_is() {
        let stream = Some(StreamTimes {
            timing: StreamTiming {
                first_byte: ms(1),
                first_token: None,
                calls: vec![ms(3), Duration::from_micros(4_250)],
                end: ms(5),
            },
            turn: ms(6),
            early_ideal: ms(6),
            ran_early: 1,
        });
        let mut row = TrialRow::default();
        stream.put(&mut row);
        let mut writer = csv::Writer::from_writer(vec![]);
        writer.serialize(row).unwrap();
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
