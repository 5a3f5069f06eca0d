//! A probe: a call toolgauge makes when a user turn ends, to read state
//! the model's tools hold elsewhere (an MCP server's), its tool never the
//! model's, its result matched. Written as a task's `final_state.probe`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::matcher::Matcher;
use crate::call::Arguments;
use crate::pointer::{Located, Pointer};
use crate::tool::Registry;

/// `final_state.probe` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeFile {
    pub tool: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The argument toolgauge fills with the conversation so far
    /// (`{"messages": [...], "ended_by": ...}`, see `harness::transcript`).
    #[serde(default)]
    pub transcript: Option<String>,
    /// A matcher on the result: read as JSON when it is JSON, else text.
    pub result: Value,
}

/// A call toolgauge makes when a turn ends, to read state the model's
/// tools hold elsewhere (an MCP server's, say): its tool is never shown
/// to the model, and its result must match.
#[derive(Debug, Clone)]
pub struct Probe {
    pub tool: String,
    pub arguments: Arguments,
    /// The argument filled with the conversation, if any.
    pub transcript: Option<String>,
    pub result: Matcher,
}

/// A `final_state`'s probe, written at `at`, checked against the
/// scenario's tools.
pub(super) fn compile_probe(
    probe: Option<&ProbeFile>,
    registry: &Registry,
    at: Pointer,
) -> Result<Option<Probe>, Located> {
    let Some(probe) = probe else {
        return Ok(None);
    };
    if registry.lookup(&probe.tool).is_none() {
        return Err(Located::new(
            at.key("tool"),
            format!("no tool named {:?} in this scenario's tools", probe.tool),
        ));
    }
    let result =
        Matcher::from_value(&probe.result).map_err(|e| e.under(&at.clone().key("result")))?;
    if matches!(result, Matcher::Result { .. }) {
        return Err(Located::new(
            at.key("result"),
            "$result reads an earlier result and cannot judge the probe's",
        ));
    }
    if let Some(name) = &probe.transcript
        && (name.is_empty() || probe.arguments.contains_key(name))
    {
        return Err(Located::new(
            at.key("transcript"),
            format!(
                "{name:?} cannot hold the transcript: name an argument the probe does not give"
            ),
        ));
    }
    Ok(Some(Probe {
        tool: probe.tool.clone(),
        arguments: Arguments::from_map(probe.arguments.clone()),
        transcript: probe.transcript.clone(),
        result,
    }))
}
