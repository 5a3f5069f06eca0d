//! Why a tool could not answer (`ToolFailure`), and where a command's
//! program is found.

use serde::{Deserialize, Serialize};

/// Why a tool execution failed, as the tool reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub kind: ToolFailureKind,
    pub message: String,
}

/// How a tool's execution failed, as the tool reports it; the first four
/// are also what a simulated tool's `failure` may inject (the rest cannot
/// be written in a scenario).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFailureKind {
    #[default]
    Runtime,
    NotFound,
    PermissionDenied,
    /// The tool did not answer in time (injected: it hangs until then).
    Timeout,
    /// A sandbox check refused the path before anything was touched.
    #[serde(skip_deserializing)]
    Blocked,
    /// The tool itself refused its arguments (a server's own validation).
    #[serde(skip_deserializing)]
    Invalid,
    /// The tool could not be run at all: its command does not start, its
    /// endpoint refuses connections, its MCP server is gone.
    #[serde(skip_deserializing)]
    Unavailable,
    /// Its output breaks its own `outputSchema`.
    #[serde(skip_deserializing)]
    BadOutput,
}

impl ToolFailure {
    pub fn new(kind: ToolFailureKind, message: impl Into<String>) -> Self {
        ToolFailure {
            kind,
            message: message.into(),
        }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ToolFailureKind::Runtime, message)
    }

    /// The tool could not be run at all (not the model's doing).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ToolFailureKind::Unavailable, message)
    }

    pub fn blocked(message: impl Into<String>) -> Self {
        Self::new(ToolFailureKind::Blocked, message)
    }

    /// Map an I/O error to a failure with a hint the model can act on.
    pub fn from_io(error: &std::io::Error, path: &str) -> Self {
        use std::io::ErrorKind as Io;
        match error.kind() {
            Io::NotFound => Self::new(
                ToolFailureKind::NotFound,
                format!("not found: {path} (hint: list_dir shows what exists)"),
            ),
            Io::PermissionDenied => Self::new(
                ToolFailureKind::PermissionDenied,
                format!("permission denied: {path}"),
            ),
            _ => Self::runtime(format!("{path}: {error}")),
        }
    }
}
