//! What a tool does when it is called, behind one trait, [`ToolBackend`].
//! Its implementations live in files of their own, none of them here:
//! built-in code (`builtin`), a simulation from the definition's
//! `simulate` block or a definition that answers with its arguments
//! (`simulated`), the store (`store_tools`), and tools served elsewhere
//! (`served`: an HTTP endpoint or a command; `mcp`: an MCP server).

use std::future::Future;
use std::pin::Pin;

use super::ToolFailure;
use super::state::{ToolId, ToolState};
use crate::call::Arguments;

/// A tool's output to come.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolFailure>> + Send + 'a>>;

/// One call of a tool, its arguments already valid for its schema.
#[derive(Debug, Clone, Copy)]
pub struct ToolCallContext<'a> {
    pub tool: ToolId,
    pub arguments: &'a Arguments,
    /// What tools remember across the calls of one trial.
    pub state: &'a ToolState,
}

/// A tool's implementation.
pub trait ToolBackend: Send + Sync + std::fmt::Debug {
    /// The output now, for a tool that neither waits nor can hang: it runs
    /// with no future and no timer. `None`: the tool must be awaited.
    fn run_now(&self, _arguments: &Arguments) -> Option<Result<String, ToolFailure>> {
        None
    }

    /// Run the tool; the caller applies its timeout.
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a>;

    /// Whether the tool runs outside toolgauge (a server, an endpoint, a
    /// command): it takes real time, so a run with it needs the real clock.
    fn is_real(&self) -> bool {
        false
    }

    /// Whether the tool takes any arguments, as the system it stands for
    /// does (BFCL's classes run whatever they are sent): toolgauge then
    /// refuses no call for its schema, and the tool's own error is what
    /// the model sees.
    fn takes_any_arguments(&self) -> bool {
        false
    }

    /// Get ready for a trial whose state was just made (before any call):
    /// begin, without waiting.
    fn prepare(&self, _state: &ToolState) {}

    /// Wait until what `prepare` began is done (a trial's own server
    /// started), so that no call of the trial pays for it.
    fn ready<'a>(&'a self, _state: &'a ToolState) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(std::future::ready(()))
    }
}
