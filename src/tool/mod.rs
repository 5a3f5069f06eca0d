//! Tools: the definition format (`ToolDef`), the checks a definition must
//! pass, the `Registry` of compiled validators, the built-in tools and the
//! sandbox that file tools run in. Nothing here knows about LLMs.

mod backend;
mod check;
mod def;
mod registry;
mod sandbox;
mod state;
mod store;
pub mod template;

pub use backend::builtin::{BUILTIN_NAMES, SHELL_TOOL, builtin_definition, builtin_needs_sandbox};
pub use backend::served::{HttpTool, Send as HttpSend};
use serde::{Deserialize, Serialize};

pub use backend::{OutputFuture, ToolBackend, ToolCallContext, ToolFuture, ToolOutput};
pub use backend::{mcp, shell};
pub use check::{DefinitionProblem, check_definitions, check_definitions_file};
pub use def::{
    DEFAULT_TIMEOUT_MS, Effect, InjectedFailure, Latency, LatencyDistribution, Metadata, Refusal,
    RefusalKind, Simulate, ToolDef,
};
pub use registry::{Registry, RegistryError, ToolEnv, ToolId, ToolSource, ToolState};
pub use sandbox::{PathBlocked, Sandbox, read_beneath, relative_path as sandbox_path};
pub use store::{STORE_TOOLS, StateError, Store};

/// A command's program: a relative path (it has a `/`) from `folder`, as
/// commands run in their file's folder; a bare name from PATH, or else
/// from beside the toolgauge executable (and its `examples/` folders), so
/// that programs built with it (the repository's MCP test server) are
/// found wherever cargo puts them; anything else as given.
pub fn resolve_program(program: &str, folder: &std::path::Path) -> String {
    let path = std::path::Path::new(program);
    if program.contains('/') {
        if path.is_relative() {
            let joined = folder.join(program);
            return std::fs::canonicalize(&joined)
                .unwrap_or(joined)
                .display()
                .to_string();
        }
        return program.to_owned();
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()));
    if on_path {
        return program.to_owned();
    }
    beside_executable(program).map_or_else(|| program.to_owned(), |p| p.display().to_string())
}

/// Whether `program` (as [`resolve_program`] gives it) can be started: a
/// path to a file, or a name found on PATH.
pub fn program_exists(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// `program` next to the running executable: in its folder, its
/// `examples/`, or the `examples/` of cargo's other profile.
fn beside_executable(program: &str) -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    // Test binaries live in <profile>/deps.
    let profile = if dir.ends_with("deps") {
        dir.parent()?
    } else {
        dir
    };
    let target = profile.parent()?;
    [
        profile.join(program),
        profile.join("examples").join(program),
        target.join("debug/examples").join(program),
        target.join("release/examples").join(program),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
}

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
