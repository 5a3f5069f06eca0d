//! Tools: the definition format (`ToolDef`), the checks a definition must
//! pass, the `Registry` of compiled validators, the built-in tools and the
//! sandbox that file tools run in. Nothing here knows about LLMs.

mod backend;
mod builtin;
mod check;
pub mod mcp;
pub mod quick;
mod registry;
mod sandbox;
mod served;
pub mod shell;
mod simulated;
mod state;
mod store;
mod store_tools;
pub mod template;
pub mod wording;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use backend::{OutputFuture, ToolBackend, ToolCallContext, ToolFuture, ToolOutput};
pub use builtin::{BUILTIN_NAMES, SHELL_TOOL, builtin_definition, builtin_needs_sandbox};
pub use check::{DefinitionProblem, check_definitions, check_definitions_file};
pub use registry::{
    Registry, RegistryError, ToolEnv, ToolId, ToolSource, ToolState, compiled_schema,
    schema_options,
};
pub use sandbox::{PathBlocked, Sandbox, read_beneath, relative_path as sandbox_path};
pub use served::{HttpTool, Send as HttpSend};
pub use store::{STORE_TOOLS, StateError, Store};
pub use wording::{ArgumentError, argument_error, schema_errors};

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

/// Default per-call timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// One tool as a user defines it. Missing `name`, `description` or
/// `parameters` deserialize to empty values so that `check_definitions` can
/// report every problem at once instead of stopping at the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments; must be `type: object`.
    #[serde(default)]
    pub parameters: Value,
    #[serde(default)]
    pub effect: Effect,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// For tools with no implementation: what to pretend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulate: Option<Simulate>,
    /// Served by an HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTool>,
    /// Served by a command: the program and its arguments; the call's
    /// arguments as JSON on its stdin, its stdout the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

impl ToolDef {
    /// What a model is told of this tool.
    pub fn spec(&self) -> crate::call::FunctionSpec {
        crate::call::FunctionSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// The names an object schema's `required` lists (strings only; anything
/// else there is the definition checker's business).
pub fn required_names(schema: &serde_json::Map<String, Value>) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

impl ToolDef {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Whether a tool changes the world. Reads may run concurrently; a write
/// runs alone, after everything before it. Unknown tools are writes, the
/// safe default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Read,
    #[default]
    Write,
}

/// Free-form description of a tool, kept for reports and importers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    /// Anything else (an importer's original schema, say).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What a tool without an implementation does when called.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulate {
    /// Returned on success: a string as is, any other JSON serialized.
    /// Placeholders (`{{args.order}}`, `{{store.orders.o-1}}`) are filled
    /// from the call (see [`template`]).
    #[serde(default)]
    pub result: Value,
    /// Simulated latency before the result comes back.
    #[serde(default)]
    pub latency_ms: Latency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// A simulated latency in milliseconds: fixed, or drawn per execution from
/// a distribution (deterministic from the trial's seed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Latency {
    Fixed(u64),
    Drawn(LatencyDistribution),
}

/// What a latency may be, for messages.
const LATENCY_FORMS: &str = "give whole milliseconds >= 0 (120), {\"uniform\": [LOW, HIGH]} with LOW <= HIGH, or {\"exponential\": MEAN} with MEAN > 0";

impl<'de> Deserialize<'de> for Latency {
    /// Read with messages that say what is accepted (serde's own for an
    /// untagged enum names the Rust type), and bounds checked.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        let bad = |what: String| D::Error::custom(format!("{what}: {LATENCY_FORMS}"));
        match &value {
            Value::Number(n) => n
                .as_u64()
                .map(Latency::Fixed)
                .ok_or_else(|| bad(format!("{n} is not a whole number of milliseconds >= 0"))),
            Value::Object(map) if map.len() == 1 => {
                let (kind, given) = map.iter().next().expect("one entry");
                match kind.as_str() {
                    "uniform" => match given
                        .as_array()
                        .map(|b| b.iter().map(Value::as_u64).collect::<Vec<_>>())
                        .as_deref()
                    {
                        Some([Some(low), Some(high)]) if low <= high => {
                            Ok(Latency::Drawn(LatencyDistribution::Uniform([*low, *high])))
                        }
                        _ => Err(bad(format!("uniform {given} is not [LOW, HIGH]"))),
                    },
                    "exponential" => match given.as_f64() {
                        Some(mean) if mean > 0.0 && mean.is_finite() => {
                            Ok(Latency::Drawn(LatencyDistribution::Exponential(mean)))
                        }
                        _ => Err(bad(format!("exponential {given} is not a mean > 0"))),
                    },
                    other => Err(bad(format!("{other:?} is not a distribution"))),
                }
            }
            other => Err(bad(format!(
                "{} is not a latency",
                crate::excerpt::json_excerpt(other)
            ))),
        }
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyDistribution {
    /// Uniform between the two bounds, inclusive: `{"uniform": [50, 150]}`.
    Uniform([u64; 2]),
    /// Exponential with this mean: `{"exponential": 100}`.
    Exponential(f64),
}

impl Latency {
    /// Draw one latency; `uniform` is a number in [0, 1).
    pub fn sample(self, uniform: impl FnOnce() -> f64) -> Duration {
        let ms = match self {
            Latency::Fixed(ms) => return Duration::from_millis(ms),
            Latency::Drawn(LatencyDistribution::Uniform([low, high])) => {
                let (low, high) = (low.min(high), low.max(high));
                low as f64 + (uniform() * (high - low + 1) as f64).floor()
            }
            Latency::Drawn(LatencyDistribution::Exponential(mean)) => {
                -mean.max(0.0) * (1.0 - uniform()).ln()
            }
        };
        Duration::from_micros((ms * 1000.0).round().clamp(0.0, 3.6e9) as u64)
    }
}

/// Failure injection: the first `first` executions fail with `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub first: u32,
    #[serde(default)]
    pub kind: FailureKind,
    /// The error text; a default naming the kind is used when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a tool execution fails. `Timeout` in a `Failure` makes the tool hang
/// until its timeout fires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    #[default]
    Runtime,
    NotFound,
    PermissionDenied,
    Timeout,
}

/// Why a tool execution failed, as the tool reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub kind: ToolFailureKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFailureKind {
    Runtime,
    NotFound,
    PermissionDenied,
    Timeout,
    /// A sandbox check refused the path before anything was touched.
    Blocked,
    /// The tool itself refused its arguments (a server's own validation).
    Invalid,
    /// The tool could not be run at all: its command does not start, its
    /// endpoint refuses connections, its MCP server is gone.
    Unavailable,
    /// Its output breaks its own `outputSchema`.
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
