//! Tools that run no code of their own: a simulation from the
//! definition's `simulate` block (latency, injected failures, a result
//! filled from the call and the store), or a definition that answers
//! with its arguments.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{ToolBackend, ToolCallContext, ToolFuture};
use crate::call::Arguments;
use crate::tool::{Simulate, ToolFailure, ToolFailureKind, template};

/// A definition with no implementation, answering with its arguments.
#[derive(Debug)]
pub(in crate::tool) struct EchoArguments;

impl ToolBackend for EchoArguments {
    fn run_now(&self, arguments: &Arguments) -> Option<Result<String, ToolFailure>> {
        Some(Ok(arguments.to_string()))
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(std::future::ready(Ok(call.arguments.to_string())))
    }
}

/// A simulated tool: its latency drawn from the trial's seed, failures
/// injected on its first executions, then its result (filled from the
/// call when it holds placeholders).
#[derive(Debug)]
pub(in crate::tool) struct Simulated {
    simulate: Simulate,
    templated: bool,
}

impl Simulated {
    pub(in crate::tool) fn new(simulate: Simulate) -> Simulated {
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
                rendered = template::render(&simulate.result, call.arguments.as_map(), &store);
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

async fn injected_failure(kind: ToolFailureKind, message: Option<&str>) -> ToolFailure {
    let default = match kind {
        ToolFailureKind::Timeout => std::future::pending().await,
        ToolFailureKind::NotFound => "not found",
        ToolFailureKind::PermissionDenied => "permission denied",
        // A scenario can inject no other kind.
        _ => "simulated failure",
    };
    ToolFailure::new(kind, message.unwrap_or(default))
}
