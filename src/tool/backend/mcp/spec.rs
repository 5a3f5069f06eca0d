//! An MCP server as a scenario names it, its tools as served tools, and
//! its errors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::ToolBackend;
use super::Answers;
use crate::tool::ToolDef;

/// A tool of a server: its definition and what runs it.
pub type ServedTool = (ToolDef, Arc<dyn ToolBackend>);

/// Where an MCP server is: a command to start (stdio) or a URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program and its arguments, started with the server's stdio as
    /// the transport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Environment variables for the command. A suite's server inherits
    /// only what programs need of toolgauge's own
    /// (`child::SUITE_INHERITS`): a key it needs is given here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The command's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The command is started once for the run with a listening Unix
    /// socket as its stdin, and forks a child for each connection: the
    /// shared one, and each trial's own (`per_trial`), whose
    /// `trial_args` come as the connection's first line (a JSON list)
    /// before MCP. A trial starts in milliseconds where a fresh process
    /// would import its package again. Needs a `command`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forks: bool,
    /// A streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long start-up may take: spawned (or connected) to `initialize`
    /// answered and `tools/list` read [default: 30000].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// A server that judges (tau2's bridge): started with the judge the
    /// user named for the run (`run --judge-model`), if any, in its
    /// environment as `TOOLGAUGE_JUDGE_BASE_URL`, `_MODEL`, `_API_KEY`
    /// and `_REPEATS`, when `import tau2` wrote it on this machine or
    /// the user names it (`judges`). Other servers never get them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge: bool,
    /// What toolgauge answers when the server asks the user
    /// (`elicitation/create`) or a model (`sampling/createMessage`).
    #[serde(default, skip_serializing_if = "Answers::is_empty")]
    pub answers: Answers,
    /// Named by the user on the command line (`--tools mcp:...`): it
    /// inherits toolgauge's whole environment. A suite's never does.
    #[serde(skip)]
    pub users_own: bool,
}

/// The definition of a tool a server serves, as toolgauge registers it.
pub(crate) fn served_definition(
    name: String,
    description: String,
    parameters: serde_json::Value,
    effect: crate::tool::Effect,
    other: BTreeMap<String, serde_json::Value>,
) -> ToolDef {
    ToolDef {
        name,
        description,
        parameters,
        effect,
        timeout_ms: crate::tool::DEFAULT_TIMEOUT_MS,
        metadata: Some(crate::tool::Metadata {
            category: Some("mcp".into()),
            other,
            ..crate::tool::Metadata::default()
        }),
        simulate: None,
        http: None,
        command: None,
    }
}

/// The start-up deadline when a server names none.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

impl McpServerSpec {
    /// A command line (`node server.js stdio`) or a URL, as given on the
    /// command line after `mcp:`.
    pub fn parse(text: &str) -> Result<McpServerSpec, McpError> {
        let text = text.trim();
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(McpServerSpec {
                url: Some(text.to_owned()),
                ..McpServerSpec::default()
            });
        }
        let command: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        let spec = McpServerSpec {
            command,
            users_own: true,
            ..McpServerSpec::default()
        };
        spec.check()?;
        Ok(spec)
    }

    /// Exactly one of a command and a URL.
    pub fn check(&self) -> Result<(), McpError> {
        if self.forks && self.url.is_some() {
            return Err(McpError::Spec(
                "\"forks\": true is for a server toolgauge starts: it needs a \"command\", not a \"url\"".into(),
            ));
        }
        match (self.command.is_empty(), &self.url) {
            (false, None) | (true, Some(_)) => Ok(()),
            _ => Err(McpError::Spec(
                "an MCP server needs a \"command\" (a list: program and arguments) or a \"url\", not both"
                    .into(),
            )),
        }
    }

    /// Spawn (or connect) to `initialize` answered and `tools/list` read.
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_millis(
            self.startup_timeout_ms
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS),
        )
    }

    /// How messages name the server.
    pub fn label(&self) -> String {
        self.url.clone().unwrap_or_else(|| self.command.join(" "))
    }
}

/// Why an MCP server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{0}")]
    Spec(String),
    #[error("MCP server {label}: cannot start: {message}{}", stderr_note(.stderr))]
    Start {
        label: String,
        message: String,
        stderr: String,
    },
    #[error("MCP server {label}: {method} failed: {message}")]
    Asked {
        label: String,
        /// `tools/list`, `resources/list`, `prompts/get`.
        method: &'static str,
        message: String,
    },
    #[error(
        "MCP server {label}: the entry names {name:?}, which the server does not list (it lists {listed})"
    )]
    NotListed {
        label: String,
        name: String,
        listed: String,
    },
    #[error(
        "MCP server {label} marks itself \"judge\": true, but it is not a server `toolgauge import tau2` wrote on this machine: the judge's key goes only to those, and to a server named with --judge-server '{label}'"
    )]
    JudgeRefused { label: String },
    #[error("cannot start the MCP runtime: {0}")]
    Runtime(std::io::Error),
    #[error("an MCP request panicked")]
    Panicked,
    #[error("the MCP servers' lock is poisoned")]
    Poisoned,
}

/// rmcp's error text worded for a person: no Rust type names, no
/// internal plumbing ("Send message error Transport [rmcp::...]").
pub(crate) fn worded(message: &str) -> String {
    static TYPE_NAMES: OnceLock<regex::Regex> = OnceLock::new();
    let type_names = TYPE_NAMES
        .get_or_init(|| regex::Regex::new(r"\s*\[[^\]]*::[^\]]*\]").expect("a valid pattern"));
    static CONTENT_TYPE: OnceLock<regex::Regex> = OnceLock::new();
    let content_type = CONTENT_TYPE.get_or_init(|| {
        regex::Regex::new(r#"Unexpected content type: Some\("([^"]*)"\)"#).expect("a valid pattern")
    });
    let text = type_names.replace_all(message, "");
    // A web page where an MCP endpoint was expected: say what came, and
    // what to check.
    let text = content_type.replace_all(
        &text,
        "it answered $1, not JSON nor an event stream: is the URL the server's MCP endpoint (often ending in /mcp)?",
    );
    text.replace("Send message error Transport error: ", "")
        .replace("Send message error Transport", "")
        .replace(", when send initialize request", " (sending initialize)")
        .replace("Client error: ", "")
        .trim()
        .to_owned()
}

pub(crate) fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {stderr}")
    }
}
