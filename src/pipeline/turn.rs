//! One model reply through every stage, in order: Parse (the provider's
//! wire format), Validate and Execute (the scheduler), Return (the
//! provider's message array for the model's next turn) and Record (the
//! session log). The harness and `toolgauge exec` both run turns here, so
//! every stage runs on every turn of every run.

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use super::{Batch, EarlyRun, Pipeline, SessionLog};
use crate::call::{ErrorKind, Failure, ParsedCall, StreamTiming, ToolResult};
use crate::provider::{ParsedResponse, Provider, ResponseError};
use crate::tool::ToolState;

/// What one reply became.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The text and calls of the reply; `Err` when the body is not a
    /// response of the provider's format (nothing ran then).
    pub parsed: Result<ParsedResponse, ResponseError>,
    /// The calls' results in call order, with timings.
    pub batch: Batch,
    /// What Return produced: the provider's JSON array of messages, exactly
    /// as the model receives it next turn (`[]` when there were no calls).
    pub returned: Vec<u8>,
}

impl Turn {
    /// The calls the reply made (none when it could not be read).
    pub fn calls(&self) -> &[ParsedCall] {
        self.parsed.as_ref().map_or(&[], |p| &p.calls)
    }

    /// What went wrong, one failure per failed call; a reply that could
    /// not be read is one `bad_response`, a reply cut by the token limit
    /// one `truncated` (its calls were not run).
    pub fn failures(&self) -> Vec<Failure> {
        match &self.parsed {
            Err(_) => return vec![Failure::BadResponse],
            Ok(parsed) if parsed.truncated => return vec![Failure::Truncated],
            Ok(_) => {}
        }
        self.batch
            .results
            .iter()
            .filter_map(|r| r.error_kind.map(Failure::from))
            .collect()
    }

    /// A reply with no call whose text holds one the server did not read
    /// as a call: a `<tool_call>` tag, or a JSON object with a `name` and
    /// `arguments` (or `parameters`). Still no call, but said apart.
    pub fn call_written_as_text(&self) -> bool {
        let Ok(parsed) = &self.parsed else {
            return false;
        };
        // A reply cut by the token limit is said so already.
        parsed.calls.is_empty() && !parsed.truncated && looks_like_a_call(&parsed.text)
    }
}

/// Whether `text` holds a call written out: a `<tool_call>` tag, or one
/// of its first few JSON objects names a function and its arguments.
fn looks_like_a_call(text: &str) -> bool {
    if text.contains("<tool_call>") {
        return true;
    }
    text.match_indices('{').take(8).any(|(at, _)| {
        let mut objects = serde_json::Deserializer::from_str(&text[at..])
            .into_iter::<serde_json::Map<String, serde_json::Value>>();
        matches!(
            objects.next(),
            Some(Ok(object)) if object.get("name").is_some_and(serde_json::Value::is_string)
                && (object.contains_key("arguments") || object.contains_key("parameters"))
        )
    })
}

/// What the model is told of a reply cut by the output token limit: the
/// truth, not that its calls were malformed.
pub const TRUNCATED_NOTE: &str = "Your reply was cut off at the output token limit before it was \
complete, so none of its calls were run. Send it again, shorter.";

/// The results of calls that were not run, because their reply was cut
/// by the token limit: each answered, as every format requires.
pub(super) fn not_run(calls: &[ParsedCall]) -> Batch {
    Batch {
        results: calls
            .iter()
            .map(|call| ToolResult {
                call_id: call.id().to_owned(),
                name: call.name().to_owned(),
                content: TRUNCATED_NOTE.to_owned(),
                error_kind: Some(ErrorKind::Truncated),
                started: Duration::ZERO,
                elapsed: Duration::ZERO,
                images: Vec::new(),
            })
            .collect(),
        makespan: Duration::ZERO,
        ideal_makespan: Duration::ZERO,
        started_at: SystemTime::now(),
    }
}

/// What a streamed reply brings to its turn: when its parts came, and
/// the calls already run while it streamed.
#[derive(Default)]
pub struct Streamed<'t, 'p> {
    pub timing: Option<&'t StreamTiming>,
    pub early: Option<EarlyRun<'p>>,
}

impl Pipeline {
    /// Run one reply of `provider`'s wire format through every stage.
    /// `state` is what tools remember across the turns of one trial; `log`
    /// records the calls and results (an error is the log's only failure).
    pub async fn turn<W: Write>(
        &self,
        provider: Provider,
        body: &[u8],
        state: &ToolState,
        log: Option<&mut SessionLog<W>>,
    ) -> io::Result<Turn> {
        self.turn_streamed(provider, body, state, log, Streamed::default())
            .await
    }

    /// [`Pipeline::turn`] of a streamed reply: its calls that ran early
    /// keep their results (a reply cut by the token limit runs no more).
    pub async fn turn_streamed<'p, W: Write>(
        &'p self,
        provider: Provider,
        body: &[u8],
        state: &'p ToolState,
        log: Option<&mut SessionLog<W>>,
        streamed: Streamed<'_, 'p>,
    ) -> io::Result<Turn> {
        let parsed = provider.parse_response(body);
        self.turn_parsed(provider, parsed, body, state, log, streamed)
            .await
    }

    /// The stages after Parse (Validate, Execute, Return, Record) for a
    /// reply parsed already: what [`Pipeline::turn_streamed`] does once it
    /// has read `body`.
    pub async fn turn_parsed<'p, W: Write>(
        &'p self,
        provider: Provider,
        parsed: Result<ParsedResponse, ResponseError>,
        body: &[u8],
        state: &'p ToolState,
        log: Option<&mut SessionLog<W>>,
        streamed: Streamed<'_, 'p>,
    ) -> io::Result<Turn> {
        let batch = match (&parsed, streamed.early) {
            (Ok(response), Some(early)) if response.truncated => {
                early
                    .finish_cut(&response.calls, not_run(&response.calls))
                    .await
            }
            (Ok(response), _) if response.truncated => not_run(&response.calls),
            (Ok(response), Some(early)) => early.finish(&response.calls).await,
            (Ok(response), None) => self.run_with(&response.calls, state).await,
            (Err(_), Some(early)) => early.finish_cut(&[], not_run(&[])).await,
            (Err(_), None) => not_run(&[]),
        };
        let mut returned = Vec::with_capacity(64 + 128 * batch.results.len());
        match &parsed {
            Ok(response) if response.truncated && batch.results.is_empty() => {
                let note = provider.text_message("user", TRUNCATED_NOTE);
                returned.push(b'[');
                crate::json_writer::write_value(&mut returned, &note);
                returned.push(b']');
            }
            _ if batch.results.is_empty() => returned.extend_from_slice(b"[]"),
            _ => provider.write_results(&batch.results, &mut returned),
        }
        if let Some(log) = log {
            log.record_turn(&parsed, body, streamed.timing, &batch)?;
        }
        Ok(Turn {
            parsed,
            batch,
            returned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like_a_call;

    #[test]
    fn a_call_written_as_text_is_told_from_text_and_from_json_answers() {
        for call in [
            r#"{"name": "divide", "arguments": "{\"a\":10}\""}"#,
            "Sure.\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
            "<tool_call>\n{\"name\": \"get_weather\"",
        ] {
            assert!(looks_like_a_call(call), "{call}");
        }
        for text in [
            "The weather in Oslo is {sunny}.",
            r#"{"temperature": 18, "sky": "clear"}"#,
            r#"{"name": "Ada", "email": "ada@example.com"}"#,
            r#"{"name": 3, "arguments": {}}"#,
            "",
        ] {
            assert!(!looks_like_a_call(text), "{text}");
        }
    }
}
