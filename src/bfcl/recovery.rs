//! What a published BFCL multi-turn run's model did after its errors, read
//! from each entry's `inference_log`: per step, the calls it made and the
//! results its executor sent back. An `Error during execution: ...` result
//! is an exception the call raised: a schema error when Python refused
//! the call itself (an argument the method does not take, one left out, a
//! name no class defines), else a runtime one; a result that is a JSON
//! object with an `"error"` member is the class refusing the state (`cd`
//! into a folder that is not there). Each entry becomes the steps of one
//! trial, for [`crate::metrics::recovery`].

use std::path::Path;

use serde_json::Value;

use super::results::ResultsError;
use crate::call::Failure;
use crate::metrics::AttemptOutcome;

/// The prefix of BFCL's executor's error results.
const RAISED: &str = "Error during execution: ";

/// One entry's steps, as attempts: the calls each made, its errors, and
/// whether it repeated a call that had just failed.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedTrial {
    pub id: String,
    pub attempts: Vec<AttemptOutcome>,
}

/// Every entry of a multi-turn result file whose lines carry an
/// `inference_log`; `Err` names the line at fault.
pub fn recorded_trials(path: &Path) -> Result<Vec<RecordedTrial>, ResultsError> {
    Ok(super::results::read_entries(path)?
        .into_iter()
        .filter_map(|(_, entry)| {
            let log = entry.get("inference_log")?.as_array()?;
            Some(RecordedTrial {
                id: entry["id"].as_str().unwrap_or_default().to_owned(),
                attempts: attempts_of(log),
            })
        })
        .collect())
}

/// The steps of every turn of an `inference_log`, in order.
fn attempts_of(log: &[Value]) -> Vec<AttemptOutcome> {
    let mut attempts = Vec::new();
    let mut failed_before: Vec<(String, String)> = Vec::new();
    for turn in log.iter().filter_map(Value::as_object) {
        let mut steps: Vec<(usize, &Value)> = turn
            .iter()
            .filter_map(|(key, step)| Some((key.strip_prefix("step_")?.parse().ok()?, step)))
            .collect();
        steps.sort_by_key(|(n, _)| *n);
        for (_, step) in steps {
            let Some(messages) = step.as_array() else {
                continue;
            };
            let Some(attempt) = step_attempt(messages, &mut failed_before) else {
                continue;
            };
            attempts.push(AttemptOutcome {
                attempt: attempts.len() as u32 + 1,
                ..attempt
            });
        }
    }
    attempts
}

/// One step: the assistant's calls and the tool results after them.
/// `None`: a reply BFCL could not decode, which it skips without telling
/// the model, so it is no move of the model's after an error.
fn step_attempt(
    messages: &[Value],
    failed_before: &mut Vec<(String, String)>,
) -> Option<AttemptOutcome> {
    let assistant = messages.iter().find(|m| m["role"] == "assistant")?;
    let decoded = messages
        .iter()
        .find(|m| m["role"] == "handler_log")
        .is_some_and(|m| m.get("model_response_decoded").is_some());
    let calls: Vec<(String, String)> = match &assistant["content"] {
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|call| call.iter().next())
            .map(|(name, arguments)| {
                let arguments = match arguments {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (name.clone(), arguments)
            })
            .collect(),
        _ => Vec::new(),
    };
    if !calls.is_empty() && !decoded {
        return None;
    }
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    let mut failures = Vec::new();
    let mut failed_now = Vec::new();
    for (call, result) in calls.iter().zip(&results) {
        if let Some(failure) = error_of(result) {
            failures.push(failure);
            failed_now.push(call.clone());
        }
    }
    let repeated = calls.iter().any(|call| failed_before.contains(call));
    *failed_before = failed_now;
    Some(AttemptOutcome {
        calls: calls.len() as u32,
        success: failures.is_empty(),
        failures,
        repeated_failed_call: repeated,
        ..AttemptOutcome::default()
    })
}

/// The failure a result says the call met, if any.
pub fn error_of(result: &str) -> Option<Failure> {
    if let Some(raised) = result.strip_prefix(RAISED) {
        // A name no class defines, or a method its class does not have.
        let unknown =
            raised.contains(" is not defined") || raised.contains("object has no attribute");
        return Some(if unknown {
            Failure::UnknownTool
        } else if crate::metrics::recovery::python_refused_the_call(raised) {
            Failure::Validation
        } else if raised.contains("invalid syntax") {
            Failure::Parse
        } else {
            Failure::Runtime
        });
    }
    let value: Value = serde_json::from_str(result).ok()?;
    value
        .as_object()
        .is_some_and(|o| o.contains_key("error"))
        .then_some(Failure::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{NextMove, recovery};
    use serde_json::json;

    fn step(calls: Value, results: &[&str]) -> Value {
        let mut messages = vec![
            json!({"role": "assistant", "content": calls}),
            json!({"role": "handler_log", "content": "Successfully decoded model response.", "model_response_decoded": []}),
        ];
        messages.extend(
            results
                .iter()
                .map(|r| json!({"role": "tool", "content": r})),
        );
        Value::Array(messages)
    }

    #[test]
    fn executor_results_are_read_as_schema_state_or_no_errors() {
        let cases = [
            (
                "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument 'path'",
                Some(Failure::Validation),
            ),
            (
                "Error during execution: TwitterAPI.post_tweet() missing 1 required positional argument: 'content'",
                Some(Failure::Validation),
            ),
            (
                "Error during execution: name 'touch_file' is not defined",
                Some(Failure::UnknownTool),
            ),
            (
                "Error during execution: division by zero",
                Some(Failure::Runtime),
            ),
            (
                r#"{"error": "cd: temp: No such directory."}"#,
                Some(Failure::Runtime),
            ),
            (r#"{"current_working_directory": "temp"}"#, None),
            ("plain text", None),
        ];
        for (result, expected) in cases {
            assert_eq!(error_of(result), expected, "{result}");
        }
    }

    #[test]
    fn an_inference_log_replays_as_steps_across_turns() {
        let failing_cd = json!([{"cd": "{\"folder\": \"temp\"}"}]);
        let log = [
            json!([{"role": "state_info"}]),
            json!({
                "begin_of_turn_query": [],
                "step_0": step(failing_cd.clone(), &[r#"{"error": "cd: temp: No such directory."}"#]),
                "step_1": step(failing_cd, &[r#"{"error": "cd: temp: No such directory."}"#]),
                "step_2": step(json!("I could not find it."), &[]),
            }),
            json!({
                "step_0": step(json!([{"mkdir": "{\"dir_name\": \"temp\"}"}]), &["None"]),
                "step_1": step(json!([]), &[]),
            }),
        ];
        let attempts = attempts_of(&log);
        assert_eq!(attempts.len(), 5);
        assert_eq!(
            attempts.iter().map(|a| a.calls).collect::<Vec<_>>(),
            [1, 1, 0, 1, 0]
        );
        let recovery = recovery::of_attempts(&attempts).unwrap();
        assert_eq!(recovery.first, Failure::Runtime);
        assert_eq!(recovery.next, NextMove::SameCall);
        assert!(recovery.later);
    }
}
