//! The `ToolBackend` trait every tool implements, and what a tool
//! gives back.

use std::future::Future;
use std::pin::Pin;

use super::super::ToolFailure;
use super::super::state::{ToolId, ToolState};
use crate::call::Arguments;

/// A tool's output to come.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolFailure>> + Send + 'a>>;

/// What a tool gives back: its text, and the images it returned (an MCP
/// server's tools may), which a model that takes images gets as parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub images: Vec<crate::call::Image>,
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput {
            text,
            images: Vec::new(),
        }
    }
}

/// A tool's output to come, images and all.
pub type OutputFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ToolOutput, ToolFailure>> + Send + 'a>>;

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

    /// [`ToolBackend::run`] with the images the tool returned; a tool that
    /// can return images (an MCP server's) gives them here.
    fn run_output<'a>(&'a self, call: ToolCallContext<'a>) -> OutputFuture<'a> {
        let text = self.run(call);
        Box::pin(async move { text.await.map(ToolOutput::from) })
    }

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

    /// Whether the tool's per-trial server is given the folder a chain of
    /// scenarios shares (`{chain_dir}` in its `trial_args`).
    fn uses_chain_dir(&self) -> bool {
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
