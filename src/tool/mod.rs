//! Tools: the definition format (`ToolDef`), the checks a definition must
//! pass, the `Registry` of compiled validators, the built-in tools and the
//! sandbox that file tools run in. Nothing here knows about LLMs.

mod backend;
mod check;
mod def;
mod failure;
mod program;
mod registry;
mod sandbox;
mod state;
mod store;
pub mod template;

pub use backend::builtin::{BUILTIN_NAMES, SHELL_TOOL, builtin_definition, builtin_needs_sandbox};
pub use backend::{OutputFuture, ToolBackend, ToolCallContext, ToolFuture, ToolOutput};
pub use backend::{mcp, shell};
pub use check::{DefinitionProblem, check_definitions, check_definitions_file};
pub use def::{
    DEFAULT_TIMEOUT_MS, Effect, InjectedFailure, Latency, LatencyDistribution, Metadata, Refusal,
    RefusalKind, Simulate, ToolDef,
};
pub use def::{HttpTool, Send as HttpSend};
pub use failure::{ToolFailure, ToolFailureKind};
pub use program::{program_exists, resolve_program};
pub use registry::{Registry, RegistryError, ToolEnv, ToolId, ToolSource, ToolState};
pub use sandbox::{PathBlocked, Sandbox, read_beneath, relative_path as sandbox_path};
pub use state::ChainFolderError;
pub use store::{STORE_TOOLS, StateError, Store};
