//! The `bfcl-results` model: answers each BFCL entry with the output a
//! published BFCL run recorded for it, so that run can be scored again by
//! toolgauge. A result file is JSON Lines of `{"id", "result": [{"fn_name":
//! "<json arguments>"}, ...]}`; a result of any other shape is a parse
//! error of the attempt, as BFCL's decoder failing would be.

use std::path::Path;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::{Model, ModelError, ModelKind, ModelTrial, Reply, ReplyFuture, TrialStart};
use crate::call::{MalformedCall, ParsedCall, ToolCall};
use crate::provider::Provider;
use crate::scenario::Scenario;

/// Recorded results by entry id.
#[derive(Debug, Default)]
pub struct BfclResults(FxHashMap<String, Value>);

impl BfclResults {
    /// Read a result file; `Err` names the line at fault.
    pub fn load(path: &Path) -> Result<BfclResults, ModelError> {
        let fail = |line: usize, problem: String| ModelError::Results {
            path: path.to_owned(),
            line,
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|source| {
            ModelError::File(crate::source::FileError::Read {
                path: path.to_owned(),
                source,
            })
        })?;
        let mut results = FxHashMap::default();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let entry: Value = serde_json::from_str(line).map_err(|e| {
                fail(
                    i + 1,
                    format!("{}: {e} (result files are JSON Lines)", e.column()),
                )
            })?;
            let id = entry["id"]
                .as_str()
                .ok_or_else(|| fail(i + 1, "an entry needs a string \"id\"".to_owned()))?;
            let result = entry
                .get("result")
                .ok_or_else(|| fail(i + 1, format!("entry {id:?} has no \"result\"")))?;
            results.insert(id.to_owned(), result.clone());
        }
        Ok(BfclResults(results))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// The calls recorded for entry `id` (none when it is not recorded).
    pub fn calls(&self, id: &str) -> Vec<ParsedCall> {
        self.0.get(id).map(result_calls).unwrap_or_default()
    }
}

/// A model that answers each entry with its recorded result, once.
#[derive(Debug)]
pub struct BfclReplay {
    name: String,
    provider: Provider,
    results: BfclResults,
}

impl BfclReplay {
    pub fn new(name: &str, provider: Provider, results: BfclResults) -> BfclReplay {
        BfclReplay {
            name: name.to_owned(),
            provider,
            results,
        }
    }
}

impl Model for BfclReplay {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    fn max_attempts(&self) -> Option<u32> {
        ModelKind::BfclResults.max_attempts()
    }

    fn unanswerable<'s>(&self, scenarios: &'s [Scenario]) -> Vec<&'s str> {
        scenarios
            .iter()
            .map(|s| s.name.as_str())
            .filter(|name| !self.results.contains(name))
            .collect()
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        Box::new(ReplayTrial {
            model: self,
            entry: &start.scenario.name,
        })
    }
}

struct ReplayTrial<'a> {
    model: &'a BfclReplay,
    entry: &'a str,
}

impl ModelTrial for ReplayTrial<'_> {
    fn reply<'s>(&'s mut self, _attempt: u32, _returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let calls = self.model.results.calls(self.entry);
        let mut body = Vec::with_capacity(256);
        self.model.provider.write_response("", &calls, &mut body);
        Box::pin(std::future::ready(Ok(Reply {
            body,
            usage: Default::default(),
        })))
    }
}

/// `[{"fn_name": "<json arguments>"}, ...]` as calls.
fn result_calls(result: &Value) -> Vec<ParsedCall> {
    let not_calls = |raw: &Value| {
        vec![ParsedCall::Malformed(MalformedCall {
            id: "bfcl_0".to_owned(),
            name: String::new(),
            raw_arguments: raw.to_string(),
            problem: "the recorded result is not a list of {function: arguments} calls".to_owned(),
        })]
    };
    let Some(items) = result.as_array() else {
        return not_calls(result);
    };
    let mut calls = Vec::new();
    for item in items {
        let Some(object) = item.as_object() else {
            return not_calls(result);
        };
        for (name, arguments) in object {
            let id = format!("bfcl_{}", calls.len());
            let parsed = match arguments {
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(value @ Value::Object(_)) => Ok(value),
                    Ok(_) => Err((text.clone(), "the arguments are not a JSON object")),
                    Err(_) => Err((text.clone(), "the arguments are not valid JSON")),
                },
                Value::Object(_) => Ok(arguments.clone()),
                other => Err((other.to_string(), "the arguments are not a JSON object")),
            };
            calls.push(match parsed {
                Ok(arguments) => ParsedCall::Ok(ToolCall {
                    id,
                    name: name.clone(),
                    arguments,
                }),
                Err((raw, problem)) => ParsedCall::Malformed(MalformedCall {
                    id,
                    name: name.clone(),
                    raw_arguments: raw,
                    problem: problem.to_owned(),
                }),
            });
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recorded_calls_and_shapes_that_are_not_calls() {
        let calls = result_calls(&json!([{"math_factorial": "{\"number\": 5}"}, {"f": {"x": 1}}]));
        assert_eq!(calls.len(), 2);
        assert!(
            matches!(&calls[0], ParsedCall::Ok(c) if c.name == "math_factorial" && c.arguments == json!({"number": 5}))
        );
        assert!(matches!(&calls[1], ParsedCall::Ok(c) if c.arguments == json!({"x": 1})));
        assert!(
            matches!(&result_calls(&json!([{"f": "{broken"}]))[0], ParsedCall::Malformed(m) if m.name == "f")
        );
        assert!(
            matches!(&result_calls(&json!("I cannot help with that"))[0], ParsedCall::Malformed(m) if m.name.is_empty())
        );
        assert!(result_calls(&json!([])).is_empty());
    }
}
