//! Tools that run no code of their own: a simulation from the
//! definition's `simulate` block (latency, the calls it refuses, injected
//! failures, a result filled from the call and the store), or a
//! definition that answers with its arguments.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{ToolBackend, ToolCallContext, ToolFuture};
use crate::call::Arguments;
use crate::pointer::{Located, Pointer};
use crate::schema::Compiled;
use crate::tool::{Refusal, Simulate, ToolFailure, ToolFailureKind, template};

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

/// A simulated tool: its latency drawn from the trial's seed, the calls
/// it refuses, failures injected on its first executions, then its result
/// (filled from the call when it holds placeholders).
#[derive(Debug)]
pub(in crate::tool) struct Simulated {
    simulate: Simulate,
    templated: bool,
    refusals: Vec<CompiledRefusal>,
}

/// A [`Refusal`] with its schemas compiled once.
#[derive(Debug)]
struct CompiledRefusal {
    when: Option<Compiled>,
    unless: Option<Compiled>,
    refusal: Refusal,
}

impl Simulated {
    /// `Err` locates a refusal's schema that does not compile, inside
    /// the definition.
    pub(in crate::tool) fn new(simulate: Simulate) -> Result<Simulated, Located> {
        let templated = template::has_placeholders(&simulate.result);
        let refusals = simulate
            .refuse
            .iter()
            .enumerate()
            .map(|(index, refusal)| {
                let at = |key: &str| {
                    Pointer::root()
                        .key("simulate")
                        .key("refuse")
                        .index(index)
                        .key(key)
                };
                let compile = |key: &str, schema: &Option<serde_json::Value>| {
                    schema
                        .as_ref()
                        .map(|schema| {
                            Compiled::new(schema)
                                .map_err(|error| Located::new(at(key), error.to_string()))
                        })
                        .transpose()
                };
                Ok(CompiledRefusal {
                    when: compile("when", &refusal.when)?,
                    unless: compile("unless", &refusal.unless)?,
                    refusal: refusal.clone(),
                })
            })
            .collect::<Result<_, Located>>()?;
        Ok(Simulated {
            simulate,
            templated,
            refusals,
        })
    }

    /// The failure of a call one of the refusals applies to.
    fn refused(&self, arguments: &Arguments, store: &crate::tool::Store) -> Option<ToolFailure> {
        let value = arguments.as_value();
        let applies = self.refusals.iter().find(|r| {
            r.when.as_ref().is_none_or(|s| s.is_valid(value))
                && r.unless.as_ref().is_none_or(|s| !s.is_valid(value))
        })?;
        let kind = applies.refusal.kind.failure_kind();
        let message = match (&applies.refusal.message, &applies.unless) {
            (Some(text), _) => template::fill_text(text, arguments.as_map(), store),
            (None, Some(unless)) => {
                let mut text = String::from("The server refused the arguments:");
                for error in unless.errors(value) {
                    text.push_str("\n- ");
                    text.push_str(error.line());
                }
                text
            }
            (None, None) => "the call was refused".to_owned(),
        };
        Some(ToolFailure::new(kind, message))
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
            if !self.refusals.is_empty() {
                let store = call
                    .state
                    .store
                    .lock()
                    .map_err(|_| ToolFailure::runtime("the store is unavailable"))?;
                if let Some(failure) = self.refused(call.arguments, &store) {
                    return Err(failure);
                }
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
