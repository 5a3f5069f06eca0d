//! Tools served by MCP servers, through rmcp's client: a child process
//! over stdio or a streamable HTTP endpoint. `tools/list` gives the
//! definitions and `tools/call` runs a call.
//!
//! Servers have an owner, [`ToolServers`], and live on its runtime (one
//! thread), so that a server started while a suite loads serves every
//! trial of the run, whatever runtime the trials run on. A server is
//! shared by every scenario that names the same spec, started once (or
//! once per trial with `per_trial`), and stopped when its owner is
//! dropped: its process group is killed, nothing is left behind. A server
//! that crashes gives error results naming it, with the tail of its
//! stderr, and is started again for the next trial.

mod client;
mod connection;
mod content;
mod fork;
mod hub;
pub mod judges;
mod output;
mod process;
mod resources;
mod server;
mod servers;
mod spec;
mod stats;

pub use client::{Action, Answers, ElicitationAnswer, SamplingAnswer};
pub use hub::JudgeEnv;
pub use output::OUTPUT_SCHEMA_KEY;
pub use server::McpServer;
pub use servers::ToolServers;
pub(crate) use spec::served_definition;
pub use spec::{DEFAULT_STARTUP_TIMEOUT_MS, McpError, McpServerSpec, ServedTool};
pub(crate) use spec::{stderr_note, worded};
pub use stats::SourceStats;
