//! A probe: a call toolgauge makes when a user turn ends, to read state
//! the model's tools hold elsewhere (an MCP server's), its tool never the
//! model's, its result matched, and its score (a reward and its parts)
//! read for the reports. Written as a task's `final_state.probe`.

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
    /// Where in the result its judge's reward and parts are, to report.
    #[serde(default)]
    pub score: Option<ScoreFile>,
}

/// `final_state.probe.score`: JSON pointers into the probe's result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreFile {
    /// A number: the trial's reward.
    pub reward: String,
    /// An object of numbers: the reward's parts, by name.
    #[serde(default)]
    pub components: Option<String>,
    /// A string: why the conversation ended, in the judge's words.
    #[serde(default)]
    pub reason: Option<String>,
    /// An object of booleans (or null: not checked): yes-or-no checks
    /// beside the reward, by name (tau2: `db_match`).
    #[serde(default)]
    pub checks: Option<String>,
    /// An object: what a judging model gave and took (`rewards`, a list
    /// of numbers, one per time it judged; `input_tokens`,
    /// `output_tokens`, `cost_usd`).
    #[serde(default)]
    pub judge: Option<String>,
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
    pub score: Option<ScoreFile>,
}

impl ScoreFile {
    /// Each pointer is `""` or starts with `/` (RFC 6901).
    fn check(&self, at: &Pointer) -> Result<(), Located> {
        let pointers = [
            ("reward", Some(&self.reward)),
            ("components", self.components.as_ref()),
            ("reason", self.reason.as_ref()),
            ("checks", self.checks.as_ref()),
            ("judge", self.judge.as_ref()),
        ];
        for (field, pointer) in pointers {
            if let Some(pointer) = pointer
                && !(pointer.is_empty() || pointer.starts_with('/'))
            {
                return Err(Located::new(
                    at.clone().key(field),
                    format!(
                        "{pointer:?} is not a JSON pointer: write \"/reward\", \"/a/b\" or \"\""
                    ),
                ));
            }
        }
        Ok(())
    }
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
    if let Some(score) = &probe.score {
        score.check(&at.clone().key("score"))?;
    }
    Ok(Some(Probe {
        tool: probe.tool.clone(),
        arguments: Arguments::from_map(probe.arguments.clone()),
        transcript: probe.transcript.clone(),
        result,
        score: probe.score.clone(),
    }))
}
