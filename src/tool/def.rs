//! `ToolDef`: one tool as a user defines it (its name, description,
//! parameters, effect and timeout), and what a tool without an
//! implementation does when called (`Simulate`: its result, latency and
//! failure).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ToolFailureKind;

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
    /// from the call (see [`template`](super::template)).
    #[serde(default)]
    pub result: Value,
    /// Simulated latency before the result comes back.
    #[serde(default)]
    pub latency_ms: Latency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<InjectedFailure>,
    /// Calls the tool refuses, the first that applies winning: what a
    /// real server checks that its declared schema does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refuse: Vec<Refusal>,
}

/// A call a simulated tool refuses: those whose arguments fit `when` (all
/// when absent) and do not fit `unless` (none when absent), refused with
/// `message`, its placeholders filled from the call (see [`template`]).
/// Without a message, the error lists how the arguments break `unless`,
/// as a server's stricter schema would.
///
/// [`template`]: super::template
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unless: Option<Value>,
    #[serde(default)]
    pub kind: RefusalKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a refused call fails: a server's own error (`runtime`, `not_found`,
/// `permission_denied`: state the model must learn from the message) or
/// its own validation (`invalid`: the arguments break a rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    #[default]
    Runtime,
    NotFound,
    PermissionDenied,
    Invalid,
}

impl RefusalKind {
    pub fn failure_kind(self) -> ToolFailureKind {
        match self {
            RefusalKind::Runtime => ToolFailureKind::Runtime,
            RefusalKind::NotFound => ToolFailureKind::NotFound,
            RefusalKind::PermissionDenied => ToolFailureKind::PermissionDenied,
            RefusalKind::Invalid => ToolFailureKind::Invalid,
        }
    }
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
pub struct InjectedFailure {
    pub first: u32,
    /// How it fails: `runtime`, `not_found`, `permission_denied`, or
    /// `timeout` (the tool hangs until its timeout fires).
    #[serde(default)]
    pub kind: ToolFailureKind,
    /// The error text; a default naming the kind is used when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An endpoint that runs a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTool {
    /// `POST` (the default), `GET`, `PUT`, ...
    #[serde(default = "default_method")]
    pub method: String,
    pub url: String,
    /// How the arguments go: a JSON body (`json`, the default) or the
    /// query string (`query`: each argument as `name=value`, strings as
    /// they are, other values as JSON).
    #[serde(default)]
    pub send: Send,
    /// Extra request headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

fn default_method() -> String {
    "POST".to_owned()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Send {
    #[default]
    Json,
    Query,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_injected_failure_names_only_the_kinds_a_scenario_may_inject() {
        let injected: InjectedFailure =
            serde_json::from_value(json!({"first": 1, "kind": "timeout"})).unwrap();
        assert_eq!(injected.kind, ToolFailureKind::Timeout);
        // The tool's own failure kinds (a blocked path, a bad output) are
        // a tool's to report, not a scenario's to inject.
        for kind in ["blocked", "invalid", "unavailable", "bad_output"] {
            let error =
                serde_json::from_value::<InjectedFailure>(json!({"first": 1, "kind": kind}))
                    .unwrap_err()
                    .to_string();
            assert!(
                error.contains(
                    "expected one of `runtime`, `not_found`, `permission_denied`, `timeout`"
                ),
                "{error}"
            );
        }
    }
}
