//! A conversation as a probe reads it (`final_state.probe.transcript`):
//! every message after the system prompt in order (the agent's texts
//! and calls, each call's result as the model read it, the user's words)
//! and how it ended. Another benchmark's judge (tau2's evaluator, behind
//! its bridge) rebuilds its own messages from it.

use serde_json::{Map, Value, json};

use crate::call::ParsedCall;
use crate::pipeline::Turn;

/// How a conversation ended, in the transcript's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum EndedBy {
    /// The simulated user said one of its ending words.
    UserStop,
    /// The agent said `###STOP###`.
    AgentStop,
    /// The agent answered a written user turn.
    Answer,
    /// The agent used every turn of its budget without answering.
    MaxSteps,
}

impl EndedBy {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The messages so far.
#[derive(Debug, Default)]
pub struct Transcript {
    messages: Vec<Value>,
}

impl Transcript {
    /// A transcript opening with the prompt's messages after its system
    /// ones (a greeting, a written opening).
    pub fn new(prompt: &[Value]) -> Transcript {
        let mut transcript = Transcript::default();
        for message in prompt {
            let role = message["role"].as_str().unwrap_or_default();
            if role == "user" || role == "assistant" {
                let text = match &message["content"] {
                    Value::String(text) => text.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                transcript
                    .messages
                    .push(json!({"role": role, "text": text}));
            }
        }
        transcript
    }

    /// The user's words.
    pub fn user(&mut self, text: &str) {
        self.messages.push(json!({"role": "user", "text": text}));
    }

    /// A model turn: its text and calls, then each call's result as Return
    /// gave it. A reply that could not be read adds nothing.
    pub fn turn(&mut self, turn: &Turn) {
        let Ok(parsed) = &turn.parsed else { return };
        let calls: Vec<Value> = parsed.calls.iter().map(call).collect();
        self.messages
            .push(json!({"role": "assistant", "text": parsed.text, "calls": calls}));
        for result in &turn.batch.results {
            self.messages.push(json!({
                "role": "tool",
                "call_id": result.call_id,
                "name": result.name,
                "text": result.content,
                "is_error": result.error_kind.is_some(),
            }));
        }
    }

    /// The simulated user's own calls and their results (`requestor`:
    /// the user's, as tau2 tells them from the agent's).
    pub fn user_calls(&mut self, calls: &[ParsedCall], results: &[crate::call::ToolResult]) {
        let calls: Vec<Value> = calls.iter().map(call).collect();
        self.messages
            .push(json!({"role": "user", "text": "", "calls": calls}));
        for result in results {
            self.messages.push(json!({
                "role": "tool",
                "call_id": result.call_id,
                "name": result.name,
                "text": result.content,
                "is_error": result.error_kind.is_some(),
                "requestor": "user",
            }));
        }
    }

    /// The probe's argument: `{"messages": [...], "ended_by": ...}`.
    pub fn value(&self, ended_by: EndedBy) -> Value {
        json!({"messages": self.messages, "ended_by": ended_by.as_str()})
    }
}

/// A call as sent: its id, its name, its arguments (`{}` when they were
/// not JSON, with the text as written beside them).
fn call(call: &ParsedCall) -> Value {
    match call {
        ParsedCall::Ok(ok) => json!({
            "id": ok.id,
            "name": ok.name,
            "arguments": ok.arguments.as_value(),
        }),
        ParsedCall::Malformed(bad) => json!({
            "id": bad.id,
            "name": bad.name,
            "arguments": Value::Object(Map::new()),
            "malformed": bad.raw_arguments,
        }),
    }
}
