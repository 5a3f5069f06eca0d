//! The scenario file's serde types, and a scenario as loaded.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ExpectedCallFile, Order, Rules, task};
use crate::tool::ToolDef;

/// The default number of attempts a model gets.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(rename = "$schema", default)]
    pub schema: Option<String>,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub tools: Vec<ToolEntry>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// What the built-in store holds when each trial starts: collections
    /// of records with string ids.
    #[serde(default)]
    pub state: serde_json::Map<String, Value>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<Value>>,
    /// One expected turn; a scenario has this or a `task`.
    #[serde(default)]
    pub expect: Option<ExpectFile>,
    /// Multi-step work until the model answers.
    #[serde(default)]
    pub task: Option<task::TaskFile>,
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub min_success: Option<f64>,
    #[serde(default)]
    pub script: Option<Vec<ScriptTurn>>,
    /// Scenarios whose trial (of the same model, with the same number)
    /// ends before this one's starts: what they leave in a shared
    /// server's state (its `{chain_dir}`) this one starts from.
    #[serde(default)]
    pub after: Vec<String>,
}

/// A tool of a scenario: a built-in by name, the tools of an MCP server,
/// or an inline definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolEntry {
    Builtin(String),
    Mcp(Box<McpEntry>),
    Defined(Box<ToolDef>),
}

/// The tools of an MCP server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    pub mcp: crate::tool::mcp::McpServerSpec,
    /// Only these of the server's tools.
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// Tools to treat as reads, besides those annotated `readOnlyHint`.
    #[serde(default)]
    pub read: Vec<String>,
    /// A fresh server per trial, for stateful servers.
    #[serde(default)]
    pub per_trial: bool,
    /// Arguments added to the command of each trial's own server: what
    /// makes one scenario's server its own (needs `per_trial`). The
    /// shared server, started without them, lists the tools.
    #[serde(default)]
    pub trial_args: Vec<String>,
    /// `false`: toolgauge refuses no call for its schema and the server's
    /// own answer is what the model sees (a benchmark's API that runs
    /// whatever it is sent, as BFCL's classes do).
    #[serde(default = "validate_by_default")]
    pub validate: bool,
    /// Each call's timeout (default: the tools' default, 30 s); a server
    /// that lets it pass is started again for the next trial.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The server's resources served as one more tool of this name (its
    /// argument: `uri`): for the model to read, and for a probe to check.
    #[serde(default)]
    pub resources: Option<String>,
    /// A prompt of the server whose messages open the scenario (in place
    /// of `prompt` or `messages`).
    #[serde(default)]
    pub opening: Option<OpeningFile>,
}

/// `opening`: a prompt of an MCP server (`prompts/get`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpeningFile {
    pub prompt: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

fn validate_by_default() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectFile {
    #[serde(default)]
    pub calls: Vec<ExpectedCallFile>,
    #[serde(default)]
    pub order: Order,
    #[serde(default)]
    pub no_call: bool,
    #[serde(default)]
    pub any_call: bool,
    #[serde(default)]
    pub rules: Rules,
}

/// One scripted model turn: what the model says, attempt by attempt.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub calls: Vec<ScriptCall>,
    /// What the results before this turn must say for a model to make it:
    /// the fix only the feedback states. A feedback-aware mock repeats
    /// its last turn until they say it; the scripted mock plays on.
    #[serde(default)]
    pub needs: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Arguments exactly as sent, for broken JSON.
    #[serde(default)]
    pub raw_arguments: Option<String>,
}
