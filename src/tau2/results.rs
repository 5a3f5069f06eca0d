//! A tau2 Results JSON read back as conversations to replay: each
//! simulation's agent messages (text and calls) and its user's words and calls, by
//! task, in the file's order. Only the fields replay needs are read:
//! `info.environment_info.domain_name`, `simulations[].task_id` and
//! `simulations[].messages`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::scenario::user::{ScriptCall, ScriptLine};

#[derive(Debug, thiserror::Error)]
pub enum Tau2ResultsError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a tau2 Results JSON ({source}); give the file `tau2 run` saved", path.display())]
    Format {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// One message as the file holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordedMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<RecordedCall>>,
    /// A tool message: whether the call raised (its content `Error: ...`).
    #[serde(default)]
    pub error: bool,
    /// Who made a call or gets its result: `assistant` or `user` (a
    /// user's own tools, as telecom's).
    #[serde(default)]
    pub requestor: Option<String>,
}

/// One tool call of an agent message.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordedCall {
    #[serde(default)]
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct File {
    info: Info,
    simulations: Vec<Simulation>,
}

#[derive(Debug, Deserialize)]
struct Info {
    environment_info: EnvironmentInfo,
}

#[derive(Debug, Deserialize)]
struct EnvironmentInfo {
    domain_name: String,
}

/// One recorded conversation.
#[derive(Debug, Clone, Deserialize)]
pub struct Simulation {
    pub task_id: String,
    #[serde(default)]
    pub messages: Vec<RecordedMessage>,
}

impl Simulation {
    /// The agent's messages after its greeting (which the scenario
    /// holds), in order: one reply each.
    pub fn agent_replies(&self) -> Vec<&RecordedMessage> {
        let first_user = self.messages.iter().position(|m| m.role == "user");
        self.messages
            .iter()
            .skip(first_user.unwrap_or(self.messages.len()))
            .filter(|m| m.role == "assistant")
            .collect()
    }

    /// The agent's replies as attempts, for what it did after an error:
    /// each reply's calls, the errors its tool results carry (a call
    /// Python refused, `Error: ...() got an unexpected keyword argument`,
    /// is a schema error; any other raise, the environment's state), and
    /// whether it made again a call that had just failed. The user's own
    /// calls are the user's, not counted.
    pub fn attempts(&self) -> Vec<crate::metrics::AttemptOutcome> {
        let mut attempts = Vec::new();
        let mut failed_before: Vec<(&str, &Map<String, Value>)> = Vec::new();
        let agent = |m: &&RecordedMessage| m.requestor.as_deref() != Some("user");
        for (at, reply) in self.messages.iter().enumerate() {
            if reply.role != "assistant" {
                continue;
            }
            let calls = reply.tool_calls.as_deref().unwrap_or_default();
            let results: Vec<&RecordedMessage> = self.messages[at + 1..]
                .iter()
                .take_while(|m| m.role == "tool")
                .filter(agent)
                .collect();
            let mut failures = Vec::new();
            let mut failed_now = Vec::new();
            for (call, result) in calls.iter().zip(&results) {
                if result.error {
                    failures.push(raised(result.content.as_deref().unwrap_or_default()));
                    failed_now.push((call.name.as_str(), &call.arguments));
                }
            }
            let repeated = calls
                .iter()
                .any(|c| failed_before.contains(&(c.name.as_str(), &c.arguments)));
            failed_before = failed_now;
            attempts.push(crate::metrics::AttemptOutcome {
                attempt: attempts.len() as u32 + 1,
                calls: calls.len() as u32,
                success: failures.is_empty(),
                failures,
                repeated_failed_call: repeated,
                ..Default::default()
            });
        }
        attempts
    }

    /// What the user said and did, in order: its words, and the calls it
    /// made with its own tools (telecom's), as a scripted user's lines.
    pub fn user_lines(&self) -> Vec<ScriptLine> {
        let mut lines = Vec::new();
        for message in self.messages.iter().filter(|m| m.role == "user") {
            let calls = message.tool_calls.as_deref().unwrap_or_default();
            if !calls.is_empty() {
                lines.push(ScriptLine::Calls {
                    calls: calls
                        .iter()
                        .map(|c| ScriptCall {
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect(),
                });
            }
            match &message.content {
                Some(text) if !text.is_empty() => lines.push(ScriptLine::Says(text.clone())),
                _ if calls.is_empty() => lines.push(ScriptLine::Says(String::new())),
                _ => {}
            }
        }
        lines
    }
}

/// The failure a raised call's `Error: {exception}` says it met.
fn raised(content: &str) -> crate::call::Failure {
    use crate::call::Failure;
    let exception = content.strip_prefix("Error: ").unwrap_or(content);
    if exception.starts_with("Tool '") && exception.ends_with("' not found.") {
        Failure::UnknownTool
    } else if crate::metrics::recovery::python_refused_the_call(exception)
        || exception.contains("validation error for")
    {
        Failure::Validation
    } else {
        Failure::Runtime
    }
}

/// A Results JSON's simulations by scenario name (`tau2_<domain>_<task>`).
#[derive(Debug)]
pub struct Tau2Results {
    by_scenario: HashMap<String, Vec<Simulation>>,
}

impl Tau2Results {
    pub fn load(path: &Path) -> Result<Tau2Results, Tau2ResultsError> {
        let bytes = crate::source::read_input(path).map_err(|source| Tau2ResultsError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file: File =
            serde_json::from_slice(&bytes).map_err(|source| Tau2ResultsError::Format {
                path: path.to_owned(),
                source,
            })?;
        let domain = file.info.environment_info.domain_name;
        let mut by_scenario: HashMap<String, Vec<Simulation>> = HashMap::new();
        for simulation in file.simulations {
            let name = super::scenario_name(&domain, &simulation.task_id);
            by_scenario.entry(name).or_default().push(simulation);
        }
        Ok(Tau2Results { by_scenario })
    }

    /// Every simulation, by scenario name in order.
    pub fn simulations(&self) -> impl Iterator<Item = (&str, &Simulation)> {
        let mut names: Vec<&String> = self.by_scenario.keys().collect();
        names.sort();
        names.into_iter().flat_map(|name| {
            self.by_scenario[name]
                .iter()
                .map(move |simulation| (name.as_str(), simulation))
        })
    }

    pub fn contains(&self, scenario: &str) -> bool {
        self.by_scenario.contains_key(scenario)
    }

    /// The conversation trial `trial` of `scenario` replays: the task's
    /// simulations in the file's order, starting over when there are
    /// more trials.
    pub fn simulation(&self, scenario: &str, trial: u32) -> Option<&Simulation> {
        let simulations = self.by_scenario.get(scenario)?;
        simulations.get(trial as usize % simulations.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulation_replays_the_agent_after_its_greeting_and_the_users_words_in_order() {
        let simulation: Simulation = serde_json::from_value(serde_json::json!({
            "task_id": "7",
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": "Cancel ABC123."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "name": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}, "requestor": "assistant"}
                ]},
                {"role": "tool", "id": "c1", "content": "{}", "requestor": "assistant"},
                {"role": "assistant", "content": "Cancelled."},
                {"role": "user", "content": "###STOP###"}
            ]
        }))
        .unwrap();
        let replies = simulation.agent_replies();
        assert_eq!(replies.len(), 2, "the greeting is the scenario's");
        let calls = replies[0].tool_calls.as_ref().unwrap();
        assert_eq!(calls[0].name, "cancel_reservation");
        assert_eq!(replies[1].content.as_deref(), Some("Cancelled."));
        assert_eq!(
            simulation.user_lines(),
            [
                ScriptLine::Says("Cancel ABC123.".into()),
                ScriptLine::Says("###STOP###".into())
            ]
        );
    }

    #[test]
    fn a_simulation_says_what_the_agent_did_after_an_error() {
        let simulation: Simulation = serde_json::from_value(serde_json::json!({
            "task_id": "3",
            "messages": [
                {"role": "user", "content": "Cancel ABC123."},
                {"role": "assistant", "tool_calls": [
                    {"id": "c1", "name": "cancel_reservation", "arguments": {"id": "ABC123"}}
                ]},
                {"role": "tool", "id": "c1", "error": true, "requestor": "assistant",
                 "content": "Error: AirlineTools.cancel_reservation() got an unexpected keyword argument 'id'"},
                {"role": "assistant", "tool_calls": [
                    {"id": "c2", "name": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
                ]},
                {"role": "tool", "id": "c2", "error": true, "requestor": "assistant",
                 "content": "Error: Reservation ABC123 not found"},
                {"role": "assistant", "content": "I could not find it."}
            ]
        }))
        .unwrap();
        let attempts = simulation.attempts();
        assert_eq!(attempts.len(), 3);
        assert_eq!(attempts[0].failures, [crate::call::Failure::Validation]);
        assert_eq!(attempts[1].failures, [crate::call::Failure::Runtime]);
        assert!(!attempts[1].repeated_failed_call);
        let recovery = crate::metrics::recovery::of_attempts(&attempts).unwrap();
        assert_eq!(recovery.next, crate::metrics::NextMove::OtherError);
        assert!(!recovery.later);
    }

    #[test]
    fn a_file_that_is_not_a_results_json_says_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, r#"{"simulations": []}"#).unwrap();
        let error = Tau2Results::load(&path).unwrap_err().to_string();
        assert!(error.contains("not a tau2 Results JSON"), "{error}");
        assert!(error.contains("the file `tau2 run` saved"), "{error}");
    }
}
