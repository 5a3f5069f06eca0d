//! Recorded model requests as scenarios: each `chat` span that made calls
//! becomes one, its tools those `gen_ai.tool.definitions` gives (each
//! answering with the result its call got, where the trace recorded
//! one), its messages `gen_ai.input.messages`, and its calls
//! (`gen_ai.output.messages`) what is expected, in any order. A span that
//! lacks what a scenario needs is reported with what it lacks, never
//! guessed: no content attributes (the agent exported none), input that
//! holds earlier calls and results (a scenario's opening messages are
//! text), a call to a tool not defined.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::spans::{ChatSpan, ReadError, read_chats};

/// What an import wrote, and what it passed over and why.
#[derive(Debug, Default)]
pub struct Imported {
    pub written: Vec<PathBuf>,
    /// Requests that answered without a call: nothing to expect.
    pub without_calls: usize,
    /// `trace/span: what it lacks`.
    pub passed_over: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a request lacks to be a scenario, in words for the person importing.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Lack(String);

impl From<&str> for Lack {
    fn from(words: &str) -> Self {
        Lack(words.to_owned())
    }
}

impl From<String> for Lack {
    fn from(words: String) -> Self {
        Lack(words)
    }
}

/// Every request of `traces` that made calls, as a scenario file in `out`.
pub fn import(traces: &Path, out: &Path) -> Result<Imported, TracesError> {
    let chats = read_chats(traces)?;
    let mut imported = Imported::default();
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for chat in &chats {
        let calls = match output_calls(chat) {
            Ok(calls) if calls.is_empty() => {
                imported.without_calls += 1;
                continue;
            }
            Ok(calls) => calls,
            Err(lack) => {
                imported
                    .passed_over
                    .push(format!("{}/{}: {lack}", chat.trace, chat.span));
                continue;
            }
        };
        let scenario = match scenario(chat, &calls) {
            Ok(scenario) => scenario,
            Err(lack) => {
                imported
                    .passed_over
                    .push(format!("{}/{}: {lack}", chat.trace, chat.span));
                continue;
            }
        };
        let base = name_of(chat);
        let n = taken.entry(base.clone()).or_default();
        *n += 1;
        let name = format!("{base}_{n}");
        let mut scenario = scenario;
        scenario["name"] = Value::String(name.clone());
        if imported.written.is_empty() {
            crate::whole_file::make_folder(out).map_err(|source| TracesError::Write {
                path: out.to_owned(),
                source,
            })?;
        }
        let path = out.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&scenario).expect("a scenario serializes") + "\n";
        std::fs::write(&path, text).map_err(|source| TracesError::Write {
            path: path.clone(),
            source,
        })?;
        imported.written.push(path);
    }
    Ok(imported)
}

/// A scenario's name from the agent's (or the model's), its trace's
/// first 8 hex digits: `[A-Za-z0-9_.-]` only.
fn name_of(chat: &ChatSpan) -> String {
    let who = chat
        .agent
        .as_deref()
        .or(chat.model.as_deref())
        .unwrap_or("agent");
    let clean: String = who
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("otel_{clean}_{}", &chat.trace[..chat.trace.len().min(8)])
}

/// The calls the request's reply made (`gen_ai.output.messages`'
/// `tool_call` parts): name and arguments.
fn output_calls(chat: &ChatSpan) -> Result<Vec<(String, String, Value)>, Lack> {
    let output = chat.attributes.get("gen_ai.output.messages").ok_or(
        "no gen_ai.output.messages (the agent exported no content: the GenAI conventions' v1.41.0 content attributes are needed)",
    )?;
    let mut calls = Vec::new();
    for message in output.as_array().into_iter().flatten() {
        for part in message["parts"].as_array().into_iter().flatten() {
            if part["type"] == "tool_call" {
                let name = part["name"]
                    .as_str()
                    .ok_or("a tool_call part with no name")?;
                let arguments = match &part["arguments"] {
                    // Some agents record the arguments as JSON text.
                    Value::String(text) => {
                        serde_json::from_str(text).unwrap_or(Value::String(text.clone()))
                    }
                    other => other.clone(),
                };
                let id = part["id"].as_str().unwrap_or_default().to_owned();
                calls.push((id, name.to_owned(), arguments));
            }
        }
    }
    Ok(calls)
}

/// The scenario of one request that made `calls` (its name set later).
fn scenario(chat: &ChatSpan, calls: &[(String, String, Value)]) -> Result<Value, Lack> {
    let messages = opening_messages(chat)?;
    let tools = tools_of(chat, calls)?;
    let expected: Vec<Value> = calls
        .iter()
        .map(|(_, name, arguments)| json!({"name": name, "arguments": arguments}))
        .collect();
    Ok(json!({
        "name": "",
        "description": format!(
            "A request recorded in trace {} (span {}){}: the calls it made are expected",
            chat.trace,
            chat.span,
            chat.model.as_deref().map(|m| format!(" to {m}")).unwrap_or_default()
        ),
        "tags": ["otel"],
        "tools": tools,
        "messages": messages,
        "expect": {"order": "any", "calls": expected},
    }))
}

/// The request's input as a scenario's opening messages: text only.
fn opening_messages(chat: &ChatSpan) -> Result<Vec<Value>, Lack> {
    let input = chat
        .attributes
        .get("gen_ai.input.messages")
        .ok_or("no gen_ai.input.messages (the agent exported no content)")?;
    let mut messages = Vec::new();
    for message in input
        .as_array()
        .ok_or("gen_ai.input.messages is not a list")?
    {
        let role = message["role"].as_str().unwrap_or("user");
        let mut texts = Vec::new();
        for part in message["parts"].as_array().into_iter().flatten() {
            match part["type"].as_str() {
                Some("text") => texts.push(part["content"].as_str().unwrap_or_default().to_owned()),
                Some(other) => {
                    return Err(format!(
                        "its input holds a {other:?} part (earlier calls and results), which a scenario's opening messages cannot hold: only requests whose input is text import"
                    )
                    .into());
                }
                None => {}
            }
        }
        if !["system", "user", "assistant"].contains(&role) {
            return Err(format!(
                "its input holds a {role:?} message, not text a scenario opens with"
            )
            .into());
        }
        messages.push(json!({"role": role, "content": texts.join("\n")}));
    }
    if !messages.iter().any(|m| m["role"] == "user") {
        return Err("its input holds no user message".into());
    }
    Ok(messages)
}

/// The tools the request was given, each answering with the result its
/// call got where one was recorded; every call's tool must be among them.
fn tools_of(chat: &ChatSpan, calls: &[(String, String, Value)]) -> Result<Vec<Value>, Lack> {
    let definitions = chat
        .attributes
        .get("gen_ai.tool.definitions")
        .ok_or("no gen_ai.tool.definitions (the tools the model was given are not in the span)")?;
    let mut tools = Vec::new();
    for definition in definitions
        .as_array()
        .ok_or("gen_ai.tool.definitions is not a list")?
    {
        // Either the conventions' flat shape or OpenAI's {"function": ...}.
        let function = definition.get("function").unwrap_or(definition);
        let name = function["name"]
            .as_str()
            .ok_or("a tool definition with no name")?;
        let result = calls
            .iter()
            .find(|(id, called, _)| called == name && chat.results.contains_key(id))
            .and_then(|(id, _, _)| chat.results.get(id).cloned())
            .unwrap_or_else(|| json!({"status": "ok"}));
        tools.push(json!({
            "name": name,
            "description": function["description"].as_str().unwrap_or_default(),
            "parameters": function.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
            "simulate": {"result": result},
        }));
    }
    for (_, name, _) in calls {
        if !tools.iter().any(|t| t["name"] == name.as_str()) {
            return Err(format!(
                "it calls {name:?}, which gen_ai.tool.definitions does not define"
            )
            .into());
        }
    }
    Ok(tools)
}
