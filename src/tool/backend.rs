//! What a tool does when it is called, behind one trait: built-in code
//! (`echo`, `math`, the file tools), a simulation from the definition's
//! `simulate` block, or a definition that answers with its arguments.
//! Tools served elsewhere (an MCP server, an HTTP endpoint, a command) are
//! further implementations of the same trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::builtin::Implementation;
use super::registry::{ToolId, ToolState};
use super::{FailureKind, Sandbox, Simulate, ToolFailure, ToolFailureKind, template};

/// A tool's output to come.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolFailure>> + Send + 'a>>;

/// One call of a tool, its arguments already valid for its schema.
#[derive(Debug, Clone, Copy)]
pub struct ToolCallContext<'a> {
    pub tool: ToolId,
    pub arguments: &'a Map<String, Value>,
    /// What tools remember across the calls of one trial.
    pub state: &'a ToolState,
}

/// A tool's implementation.
pub trait ToolBackend: Send + Sync + std::fmt::Debug {
    /// The output now, for a tool that neither waits nor can hang: it runs
    /// with no future and no timer. `None`: the tool must be awaited.
    fn run_now(&self, _arguments: &Map<String, Value>) -> Option<Result<String, ToolFailure>> {
        None
    }

    /// Run the tool; the caller applies its timeout.
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a>;

    /// Whether the tool runs outside toolgauge (a server, an endpoint, a
    /// command): it takes real time, so a run with it needs the real clock.
    fn is_real(&self) -> bool {
        false
    }

    /// Get ready for a trial whose state was just made (before any call).
    fn prepare(&self, _state: &super::ToolState) {}
}

/// A built-in tool, with the sandbox the file tools are confined to.
#[derive(Debug)]
pub(super) struct Builtin {
    pub implementation: Implementation,
    pub sandbox: Option<Sandbox>,
}

impl ToolBackend for Builtin {
    fn run_now(&self, arguments: &Map<String, Value>) -> Option<Result<String, ToolFailure>> {
        self.implementation.run_now(arguments)
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(self.implementation.run(
            call.arguments,
            call.state.sandbox.as_ref().or(self.sandbox.as_ref()),
        ))
    }
}

/// A definition with no implementation, answering with its arguments.
#[derive(Debug)]
pub(super) struct EchoArguments;

impl ToolBackend for EchoArguments {
    fn run_now(&self, arguments: &Map<String, Value>) -> Option<Result<String, ToolFailure>> {
        Some(Ok(object_text(arguments)))
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(std::future::ready(Ok(object_text(call.arguments))))
    }
}

/// An object as compact JSON.
fn object_text(object: &Map<String, Value>) -> String {
    serde_json::to_string(object).expect("a JSON object serializes")
}

/// A simulated tool: its latency drawn from the trial's seed, failures
/// injected on its first executions, then its result (filled from the
/// call when it holds placeholders).
#[derive(Debug)]
pub(super) struct Simulated {
    simulate: Simulate,
    templated: bool,
}

impl Simulated {
    pub(super) fn new(simulate: Simulate) -> Simulated {
        let templated = template::has_placeholders(&simulate.result);
        Simulated {
            simulate,
            templated,
        }
    }
}

impl ToolBackend for Simulated {
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        let simulate = &self.simulate;
        Box::pin(async move {
            let latency = simulate.latency_ms.sample(|| call.state.uniform());
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            let execution =
                call.state.executions[call.tool.index()].fetch_add(1, Ordering::Relaxed);
            if let Some(failure) = &simulate.failure
                && execution < failure.first
            {
                return Err(injected_failure(failure.kind, failure.message.as_deref()).await);
            }
            let rendered;
            let result = if self.templated {
                let store = call
                    .state
                    .store
                    .lock()
                    .map_err(|_| ToolFailure::runtime("the store is unavailable"))?;
                rendered = template::render(&simulate.result, call.arguments, &store);
                &rendered
            } else {
                &simulate.result
            };
            Ok(match result {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
        })
    }
}

async fn injected_failure(kind: FailureKind, message: Option<&str>) -> ToolFailure {
    let (kind, default) = match kind {
        FailureKind::Runtime => (ToolFailureKind::Runtime, "simulated failure"),
        FailureKind::NotFound => (ToolFailureKind::NotFound, "not found"),
        FailureKind::PermissionDenied => (ToolFailureKind::PermissionDenied, "permission denied"),
        FailureKind::Timeout => std::future::pending().await,
    };
    ToolFailure::new(kind, message.unwrap_or(default))
}
