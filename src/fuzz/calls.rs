//! Tools called with valid arguments (`toolgauge tools check`): for each
//! tool, instances of its input schema generated from a seed and sent as
//! calls; what came back counted per tool: results, the tool's own error
//! results, results that broke the tool's own `outputSchema`, calls whose
//! server failed (crashed, answered over the size limit or with what is
//! no tool result), and calls that gave nothing in time.

use std::time::Duration;

use crate::call::Arguments;
use crate::tool::{Registry, ToolDef, ToolFailureKind};

/// What one tool answered to valid calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallCheck {
    pub tool: String,
    /// Calls sent (fewer than asked when few valid instances were found).
    pub calls: u64,
    pub results: u64,
    pub error_results: u64,
    pub bad_outputs: u64,
    /// Calls the server failed: it crashed, sent a message over the
    /// limit, or answered with what is no tool result.
    pub server_failures: u64,
    pub timeouts: u64,
    /// The first bad output's words, else the first error's or
    /// timeout's, for the report.
    pub first_problem: Option<String>,
}

impl CallCheck {
    /// A tool breaking its own output contract, its server failing, or
    /// no answer.
    pub fn failed(&self) -> bool {
        self.bad_outputs > 0 || self.server_failures > 0 || self.timeouts > 0
    }
}

/// Call `tool` with up to `calls` valid instances of its input schema
/// (deterministic from `seed`), each on a fresh trial's state, within
/// `timeout` each.
pub async fn check_calls(
    registry: &Registry,
    tool: &ToolDef,
    calls: usize,
    seed: u64,
    timeout: Duration,
) -> CallCheck {
    let mut check = CallCheck {
        tool: tool.name.clone(),
        ..CallCheck::default()
    };
    let Some(id) = registry.lookup(&tool.name) else {
        return check;
    };
    let Ok(validator) = crate::schema::Compiled::new(&tool.parameters) else {
        check.first_problem = Some("its input schema does not compile".to_owned());
        return check;
    };
    for instance in
        crate::schema::generate::valid_instances(&tool.parameters, &validator, calls, seed)
    {
        let Ok(arguments) = Arguments::try_from(instance) else {
            continue;
        };
        check.calls += 1;
        let state = registry.new_state();
        let outcome = tokio::time::timeout(timeout, registry.execute(id, &arguments, &state)).await;
        match outcome {
            Ok(Ok(_)) => check.results += 1,
            Ok(Err(failure)) if failure.kind == ToolFailureKind::BadOutput => {
                if check.bad_outputs == 0 {
                    check.first_problem = Some(failure.message);
                }
                check.bad_outputs += 1;
            }
            Ok(Err(failure)) if failure.kind == ToolFailureKind::Unavailable => {
                if check.bad_outputs == 0 && check.server_failures == 0 {
                    check.first_problem = Some(failure.message);
                }
                check.server_failures += 1;
            }
            Ok(Err(failure)) => {
                check.error_results += 1;
                check.first_problem.get_or_insert(failure.message);
            }
            Err(_) => {
                check.timeouts += 1;
                check
                    .first_problem
                    .get_or_insert(format!("no answer within {} ms", timeout.as_millis()));
            }
        }
    }
    check
}
