//! The provider-neutral values that flow between pipeline stages: a call the
//! model made, a call that could not be read, and the result of running one.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One well-formed tool call: arguments are always a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// A call the model made that could not be read: broken JSON arguments, no
/// name, or arguments that are not an object. It is answered with an error
/// result so the model can correct it; the other calls still run.
#[derive(Debug, Clone, PartialEq)]
pub struct MalformedCall {
    pub id: String,
    /// The name as sent; empty when the model sent none.
    pub name: String,
    /// The arguments as sent (the raw string for OpenAI), for the log.
    pub raw_arguments: String,
    /// What is wrong, worded for the model.
    pub problem: String,
}

/// One entry of a parsed response, in the order the model sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedCall {
    Ok(ToolCall),
    Malformed(MalformedCall),
}

impl ParsedCall {
    pub fn id(&self) -> &str {
        match self {
            ParsedCall::Ok(call) => &call.id,
            ParsedCall::Malformed(call) => &call.id,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ParsedCall::Ok(call) => &call.name,
            ParsedCall::Malformed(call) => &call.name,
        }
    }
}

/// Why a call failed. The names are the error taxonomy used in logs and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The call itself could not be read.
    Parse,
    /// No tool has that name.
    UnknownTool,
    /// The arguments break the tool's schema.
    Validation,
    /// The tool ran and failed.
    Runtime,
    /// The tool did not finish within its timeout.
    Timeout,
    /// A path pointed outside the sandbox; nothing was touched.
    Sandbox,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Parse,
        ErrorKind::UnknownTool,
        ErrorKind::Validation,
        ErrorKind::Runtime,
        ErrorKind::Timeout,
        ErrorKind::Sandbox,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Parse => "parse",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::Validation => "validation",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Sandbox => "sandbox",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one call, success or error, as it goes back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool name the call used (Gemini answers by name).
    pub name: String,
    /// Never empty: an error carries its text, an empty success a placeholder.
    pub content: String,
    /// `Some` exactly when the result is an error.
    pub error_kind: Option<ErrorKind>,
    /// When the call started, measured from the start of its batch.
    pub started: Duration,
    /// How long the call ran (zero for calls rejected before execution).
    pub elapsed: Duration,
}

impl ToolResult {
    pub fn is_error(&self) -> bool {
        self.error_kind.is_some()
    }
}
