//! What a tool does when it is called, behind one trait, [`ToolBackend`].
//! Its implementations live in files of their own, none of them here:
//! built-in code (`builtin`), a simulation from the definition's
//! `simulate` block or a definition that answers with its arguments
//! (`simulated`), the store (`store_tools`), and tools served elsewhere
//! (`served`: an HTTP endpoint or a command; `mcp`: an MCP server).

pub mod builtin;
mod contract;
pub mod mcp;
pub mod served;
pub mod shell;
pub mod simulated;
pub mod store_tools;

pub use contract::{OutputFuture, ToolBackend, ToolCallContext, ToolFuture, ToolOutput};
