//! The behaviours under evaluation: `scripted` (plays a scenario's script),
//! `stochastic` (right with configured probabilities, wrong through error
//! operators) and `feedback-aware` (like stochastic, but it can only fix
//! what the feedback names). Mock models answer in a provider's wire
//! format so that Parse runs on every turn, and are deterministic from
//! their seed. `bfcl-results` replays a published BFCL run.

mod bfcl_results;
pub mod operators;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{MalformedCall, ParsedCall, ToolCall, ToolResult};
use crate::provider::Provider;
use crate::scenario::{Expectation, Scenario};
use crate::source::{self, FileError};

pub use bfcl_results::BfclResults;

use crate::live::recording::Replayer;
use crate::live::{ApiSettings, LiveModel, LiveOptions, Prices};
pub use operators::Operator;

/// A model file (`scenarios/models/*.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub name: String,
    pub kind: ModelKind,
    /// The wire format its replies use.
    #[serde(default = "default_provider")]
    pub provider: Provider,
    #[serde(default)]
    pub parameters: Parameters,
    /// `bfcl-results`: the BFCL result file (JSON Lines), relative to the
    /// model file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
    /// Live kinds (`openai`, `anthropic`, `gemini`): endpoint, key, options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiSettings>,
}

fn default_provider() -> Provider {
    Provider::OpenAi
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    Scripted,
    Stochastic,
    FeedbackAware,
    /// Answers each BFCL entry with a published run's output, once.
    BfclResults,
    /// A live model over HTTP, by wire format.
    #[serde(rename = "openai")]
    OpenAi,
    Anthropic,
    Gemini,
}

impl ModelKind {
    /// The wire format of a live kind.
    pub fn live_provider(self) -> Option<Provider> {
        match self {
            ModelKind::OpenAi => Some(Provider::OpenAi),
            ModelKind::Anthropic => Some(Provider::Anthropic),
            ModelKind::Gemini => Some(Provider::Gemini),
            _ => None,
        }
    }
}

/// How a mock behaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameters {
    /// Probability of a correct turn on the first attempt.
    #[serde(default = "one")]
    pub p_first: f64,
    /// After a failed attempt k, the probability that attempt k+1 is
    /// correct: `p_fix[0]` for the second attempt, `p_fix[1]` for the
    /// third, the last value for any later one.
    #[serde(default)]
    pub p_fix: Vec<f64>,
    /// Relative weights of the error operators; missing ones weigh 1.
    #[serde(default)]
    pub operators: BTreeMap<Operator, f64>,
    /// Response latency.
    #[serde(default)]
    pub latency_ms: u64,
    /// Extra latency drawn uniformly from 0..=jitter_ms.
    #[serde(default)]
    pub jitter_ms: u64,
}

fn one() -> f64 {
    1.0
}

impl Default for Parameters {
    fn default() -> Self {
        Parameters {
            p_first: 1.0,
            p_fix: Vec::new(),
            operators: BTreeMap::new(),
            latency_ms: 0,
            jitter_ms: 0,
        }
    }
}

/// A model that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{}: {message}", path.display())]
    Invalid {
        path: std::path::PathBuf,
        message: String,
    },
}

/// A model ready to answer.
#[derive(Debug, Clone)]
pub struct Model {
    pub file: ModelFile,
    weights: Vec<(Operator, f64)>,
    bfcl_results: Option<Arc<BfclResults>>,
    /// Set by `connect` for live kinds.
    live: Option<Arc<LiveModel>>,
}

/// What a model keeps between the attempts of one trial.
#[derive(Debug)]
pub struct ModelTrial {
    rng: StdRng,
    /// The clue of the last wrong turn (see `operators::Mutation`).
    last_clue: Option<Option<String>>,
}

/// One model turn: the body as the provider would send it, and how long
/// the model took.
#[derive(Debug, Clone)]
pub struct Reply {
    pub body: Vec<u8>,
    pub latency: Duration,
}

impl Model {
    pub fn new(mut file: ModelFile) -> Result<Model, String> {
        // Range errors name the field, as a JSON pointer into the file.
        let p = &file.parameters;
        let probabilities = std::iter::once(("/parameters/p_first".to_owned(), p.p_first)).chain(
            p.p_fix
                .iter()
                .enumerate()
                .map(|(i, x)| (format!("/parameters/p_fix/{i}"), *x)),
        );
        for (pointer, probability) in probabilities {
            if !(0.0..=1.0).contains(&probability) {
                return Err(format!("{pointer}: {probability} is outside 0..=1"));
            }
        }
        let weights: Vec<(Operator, f64)> = Operator::ALL
            .iter()
            .map(|op| (*op, p.operators.get(op).copied().unwrap_or(1.0)))
            .collect();
        if let Some((op, weight)) = weights.iter().find(|(_, w)| *w < 0.0 || !w.is_finite()) {
            return Err(format!(
                "/parameters/operators/{}: weight {weight} must be finite and >= 0",
                serde_json::to_value(op).map_or_else(
                    |_| format!("{op:?}"),
                    |v| v.as_str().unwrap_or_default().to_owned()
                )
            ));
        }
        if weights.iter().all(|(_, w)| *w == 0.0) {
            return Err(
                "/parameters/operators: at least one operator needs a weight above 0".to_owned(),
            );
        }
        let bfcl_results = match (file.kind, &file.results) {
            (ModelKind::BfclResults, Some(path)) => Some(Arc::new(BfclResults::load(path)?)),
            (ModelKind::BfclResults, None) => {
                return Err(
                    "a bfcl-results model needs \"results\": the BFCL result file".to_owned(),
                );
            }
            (_, Some(_)) => return Err("\"results\" is only for bfcl-results models".to_owned()),
            (_, None) => None,
        };
        match (file.kind.live_provider(), &file.api) {
            (Some(provider), Some(api)) => {
                api.check()?;
                // The wire format is the kind's.
                file.provider = provider;
            }
            (Some(_), None) => {
                return Err("a live model needs an \"api\" block (at least \"model\")".to_owned());
            }
            (None, Some(_)) => {
                return Err(
                    "\"api\" is only for live models (kind openai, anthropic or gemini)".to_owned(),
                );
            }
            (None, None) => {}
        }
        Ok(Model {
            file,
            weights,
            bfcl_results,
            live: None,
        })
    }

    /// Make a live model ready to answer (key from the environment, HTTP
    /// client, recording); nothing to do for the others.
    pub fn connect(
        &mut self,
        options: &LiveOptions,
        replayer: Option<Arc<Replayer>>,
    ) -> Result<(), String> {
        let (Some(provider), Some(api)) = (self.file.kind.live_provider(), &self.file.api) else {
            return Ok(());
        };
        let live = LiveModel::connect(&self.file.name, provider, api, options, replayer)?;
        self.live = Some(Arc::new(live));
        Ok(())
    }

    /// The live model behind this one, once connected.
    pub fn live(&self) -> Option<&LiveModel> {
        self.live.as_deref()
    }

    pub fn is_live(&self) -> bool {
        self.file.kind.live_provider().is_some()
    }

    /// US dollars per million input and output tokens, if known.
    pub fn prices(&self) -> Option<Prices> {
        self.file.api.as_ref().and_then(|a| a.prices)
    }

    /// Read a model file; a `results` path is relative to it.
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        let mut file: ModelFile = source::read_json(path)?;
        if let (Some(results), Some(dir)) = (&file.results, path.parent()) {
            file.results = Some(dir.join(results));
        }
        Model::new(file).map_err(|message| ModelError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    /// At most this many attempts per trial (`None`: the scenario decides).
    /// A replayed run has one answer per entry.
    pub fn max_attempts(&self) -> Option<u32> {
        (self.file.kind == ModelKind::BfclResults).then_some(1)
    }

    /// The scenarios this model cannot answer (a result file without
    /// their entry); empty for mocks.
    pub fn unanswerable<'s>(&self, scenarios: &'s [Scenario]) -> Vec<&'s str> {
        match &self.bfcl_results {
            Some(results) => scenarios
                .iter()
                .map(|s| s.name.as_str())
                .filter(|name| !results.contains(name))
                .collect(),
            None => Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.file.name
    }

    pub fn provider(&self) -> Provider {
        self.file.provider
    }

    pub fn start_trial(&self, seed: u64) -> ModelTrial {
        ModelTrial {
            rng: StdRng::seed_from_u64(seed),
            last_clue: None,
        }
    }

    /// The model's turn `attempt` (1-based). `feedback` is what the
    /// previous turn's calls got back, as the model sees it.
    pub fn respond(
        &self,
        trial: &mut ModelTrial,
        scenario: &Scenario,
        attempt: u32,
        feedback: &[ToolResult],
    ) -> Reply {
        let p = &self.file.parameters;
        let jitter = if p.jitter_ms > 0 {
            trial.rng.random_range(0..=p.jitter_ms)
        } else {
            0
        };
        let latency = Duration::from_millis(p.latency_ms + jitter);
        let (text, calls) = match self.file.kind {
            ModelKind::Scripted => scripted_turn(scenario, attempt),
            ModelKind::Stochastic | ModelKind::FeedbackAware => {
                self.stochastic_turn(trial, scenario, attempt, feedback)
            }
            // Live models answer through `live()`; asked here, they say nothing.
            ModelKind::OpenAi | ModelKind::Anthropic | ModelKind::Gemini => {
                (String::new(), Vec::new())
            }
            ModelKind::BfclResults => (
                String::new(),
                self.bfcl_results
                    .as_ref()
                    .map(|r| r.calls(&scenario.name))
                    .unwrap_or_default(),
            ),
        };
        let mut body = Vec::with_capacity(256);
        self.provider().write_response(&text, &calls, &mut body);
        Reply { body, latency }
    }

    fn stochastic_turn(
        &self,
        trial: &mut ModelTrial,
        scenario: &Scenario,
        attempt: u32,
        feedback: &[ToolResult],
    ) -> (String, Vec<ParsedCall>) {
        let p = &self.file.parameters;
        let mut chance = if attempt <= 1 {
            p.p_first
        } else {
            let i = (attempt as usize - 2).min(p.p_fix.len().saturating_sub(1));
            p.p_fix.get(i).copied().unwrap_or(p.p_first)
        };
        if self.file.kind == ModelKind::FeedbackAware
            && let Some(clue) = &trial.last_clue
        {
            let named = clue
                .as_deref()
                .is_some_and(|clue| feedback.iter().any(|r| r.content.contains(clue)));
            if !named {
                chance = 0.0;
            }
        }
        let correct = correct_calls(scenario, attempt);
        // Always draw, so that a run's random sequence does not depend on p.
        let roll: f64 = trial.rng.random();
        if roll < chance {
            trial.last_clue = None;
            return (
                String::new(),
                correct.into_iter().map(ParsedCall::Ok).collect(),
            );
        }
        let registry = &scenario.registry;
        let mut candidates = self.weights.clone();
        while !candidates.is_empty() {
            let total: f64 = candidates.iter().map(|(_, w)| w).sum();
            if total <= 0.0 {
                break;
            }
            let mut pick = trial.rng.random_range(0.0..total);
            let index = candidates
                .iter()
                .position(|(_, w)| {
                    pick -= w;
                    pick < 0.0
                })
                .unwrap_or(candidates.len() - 1);
            let (operator, _) = candidates.swap_remove(index);
            if let Some(mutation) = operators::apply(operator, &correct, registry, &mut trial.rng) {
                trial.last_clue = Some(mutation.clue);
                return (String::new(), mutation.calls);
            }
        }
        // No operator applies: the model is right after all.
        trial.last_clue = None;
        (
            String::new(),
            correct.into_iter().map(ParsedCall::Ok).collect(),
        )
    }
}

/// The calls a correct model makes on `attempt`.
fn correct_calls(scenario: &Scenario, attempt: u32) -> Vec<ToolCall> {
    if let Expectation::AnyCall = scenario.expectation {
        return any_call(scenario, attempt).into_iter().collect();
    }
    scenario
        .expectation
        .expected_calls()
        .iter()
        .enumerate()
        .map(|(i, expected)| ToolCall {
            id: format!("call_{attempt}_{i}"),
            name: expected.name.clone(),
            arguments: Value::Object(expected.arguments.example()),
        })
        .collect()
}

/// Where any call is right: the first tool, with generated valid arguments.
fn any_call(scenario: &Scenario, attempt: u32) -> Option<ToolCall> {
    let registry = &scenario.registry;
    let def = registry.definitions().next()?;
    let validator = registry.validator(registry.lookup(&def.name)?);
    let arguments =
        crate::fuzz::generate::valid_instances(&def.parameters, validator, 1, 0).pop()?;
    Some(ToolCall {
        id: format!("call_{attempt}_0"),
        name: def.name.clone(),
        arguments,
    })
}

/// The scenario's script for `attempt` (the last turn repeats); without a
/// script, the correct calls.
fn scripted_turn(scenario: &Scenario, attempt: u32) -> (String, Vec<ParsedCall>) {
    let Some(script) = scenario.script.as_ref().filter(|s| !s.is_empty()) else {
        return (
            String::new(),
            correct_calls(scenario, attempt)
                .into_iter()
                .map(ParsedCall::Ok)
                .collect(),
        );
    };
    let turn = &script[(attempt as usize - 1).min(script.len() - 1)];
    let calls = turn
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{attempt}_{i}"));
            match (&call.raw_arguments, &call.arguments) {
                (Some(raw), _) => ParsedCall::Malformed(MalformedCall {
                    id,
                    name: call.name.clone(),
                    raw_arguments: raw.clone(),
                    problem: String::new(),
                }),
                (None, arguments) => ParsedCall::Ok(ToolCall {
                    id,
                    name: call.name.clone(),
                    arguments: arguments
                        .clone()
                        .unwrap_or_else(|| Value::Object(Default::default())),
                }),
            }
        })
        .collect();
    (turn.text.clone(), calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(parameters: serde_json::Value) -> Result<Model, String> {
        let file: ModelFile = serde_json::from_value(serde_json::json!({
            "name": "m", "kind": "stochastic", "parameters": parameters
        }))
        .unwrap();
        Model::new(file)
    }

    #[test]
    fn range_errors_in_model_files_name_the_field() {
        let error = |p| model(p).err().unwrap();
        assert_eq!(
            error(serde_json::json!({"p_fix": [0.5, 1.5]})),
            "/parameters/p_fix/1: 1.5 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"p_first": -0.1})),
            "/parameters/p_first: -0.1 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"operators": {"wrong_type": -1.0}})),
            "/parameters/operators/wrong_type: weight -1 must be finite and >= 0"
        );
        assert!(model(serde_json::json!({"p_fix": [0.0, 1.0]})).is_ok());
    }
}
