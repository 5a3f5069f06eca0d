//! The mock behaviours: `scripted` (plays a scenario's script),
//! `stochastic` (right with configured probabilities, wrong through error
//! operators) and `feedback-aware` (like stochastic, but it can only fix
//! what the returned messages name). Replies are written in the model's
//! wire format, and every choice comes from the trial's seed.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::operators;
use super::task_play::{Player, TaskPlay};
use super::{
    MockKind, MockSpec, Model, ModelError, ModelTrial, Operator, Parameters, Reply, ReplyFuture,
    TrialStart,
};
use crate::call::{Arguments, MalformedCall, ParsedCall, ToolCall};
use crate::provider::Provider;
use crate::scenario::{Expectation, Scenario};

/// A mock model.
#[derive(Debug)]
pub struct MockModel {
    name: String,
    pub(super) provider: Provider,
    pub(super) kind: MockKind,
    pub(super) parameters: Parameters,
    pub(super) weights: Vec<(Operator, f64)>,
}

impl MockModel {
    /// The chance of a right turn after `wrong` wrong ones: `p_first`,
    /// then `p_fix[0]`, `p_fix[1]`, ... A feedback-aware mock has no
    /// chance at all unless the results it read (`texts`) name the clue
    /// of its last mistake (`None` when it made none).
    pub(super) fn chance<'t>(
        &self,
        wrong: u32,
        last_clue: &Option<Option<String>>,
        mut texts: impl Iterator<Item = &'t str>,
    ) -> f64 {
        let p = &self.parameters;
        if self.kind == MockKind::FeedbackAware
            && let Some(clue) = last_clue
        {
            let named = clue
                .as_deref()
                .is_some_and(|clue| texts.any(|text| text.contains(clue)));
            if !named {
                return 0.0;
            }
        }
        if wrong == 0 {
            return p.p_first;
        }
        let i = (wrong as usize - 1).min(p.p_fix.len().saturating_sub(1));
        p.p_fix.get(i).copied().unwrap_or(p.p_first)
    }

    pub fn new(name: &str, kind: MockKind, spec: &MockSpec) -> Result<MockModel, ModelError> {
        Ok(MockModel {
            name: name.to_owned(),
            provider: spec.provider,
            kind,
            parameters: spec.parameters.clone(),
            weights: spec.parameters.weights()?,
        })
    }
}

impl Model for MockModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        let scenario = start.scenario;
        Box::new(MockTrial {
            model: self,
            scenario,
            rng: StdRng::seed_from_u64(start.seed),
            last_clue: None,
            script_turn: 0,
            task: scenario
                .task
                .as_ref()
                .map(|task| TaskPlay::new(task, &scenario.registry)),
        })
    }
}

/// What a mock keeps between the attempts of one trial.
struct MockTrial<'a> {
    model: &'a MockModel,
    scenario: &'a Scenario,
    rng: StdRng,
    /// The clue of the last wrong turn (see `operators::Mutation`).
    last_clue: Option<Option<String>>,
    /// A feedback-aware mock on a script that `needs` feedback: the turn
    /// it plays (it moves on only when the results say what is needed).
    script_turn: usize,
    /// Set for a task: how far the mock got.
    task: Option<TaskPlay<'a>>,
}

impl ModelTrial for MockTrial<'_> {
    fn user_says(&mut self, _text: &str, _add_tools: &[String]) {
        if let Some(play) = &mut self.task {
            play.next_user_turn();
        }
    }

    fn reply<'s>(&'s mut self, attempt: u32, returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let p = &self.model.parameters;
        let jitter = if p.jitter_ms > 0 {
            self.rng.random_range(0..=p.jitter_ms)
        } else {
            0
        };
        let latency = Duration::from_millis(p.latency_ms + jitter);
        let scripted = self.model.kind == MockKind::Scripted
            && (self.scenario.script.is_some() || self.task.is_none());
        let attentive = self.model.kind == MockKind::FeedbackAware
            && self.task.is_none()
            && needs_feedback(self.scenario);
        let (text, calls) = match &mut self.task {
            _ if scripted => scripted_turn(self.scenario, attempt, attempt),
            _ if attentive => {
                self.script_turn = self.attentive_turn(returned);
                scripted_turn(self.scenario, self.script_turn as u32 + 1, attempt)
            }
            Some(play) => play.turn(attempt, returned, self.model, &mut self.rng),
            None => self.stochastic_turn(attempt, returned.unwrap_or_default()),
        };
        let mut body = Vec::with_capacity(256);
        self.model.provider.write_response(&text, &calls, &mut body);
        Box::pin(async move {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            Ok(Reply {
                body,
                usage: Default::default(),
                timing: None,
                stream: None,
                parsed: None,
                unrecorded: None,
            })
        })
    }
}

impl MockTrial<'_> {
    /// The script's turn a feedback-aware mock plays next: the next one
    /// when the results it read say what that turn needs, else the same.
    fn attentive_turn(&self, returned: Option<&[u8]>) -> usize {
        let Some(returned) = returned else {
            return 0;
        };
        let script = self.scenario.script.as_deref().unwrap_or_default();
        let next = self.script_turn + 1;
        let Some(turn) = script.get(next) else {
            return self.script_turn;
        };
        let told = match &turn.needs {
            None => true,
            Some(needed) => self
                .model
                .provider
                .result_texts(returned)
                .iter()
                .any(|text| says(text, needed)),
        };
        if told { next } else { self.script_turn }
    }

    fn stochastic_turn(&mut self, attempt: u32, returned: &[u8]) -> (String, Vec<ParsedCall>) {
        let texts = match (self.model.kind, &self.last_clue) {
            (MockKind::FeedbackAware, Some(_)) => self.model.provider.result_texts(returned),
            _ => Vec::new(),
        };
        let chance = self.model.chance(
            attempt - 1,
            &self.last_clue,
            texts.iter().map(|t| t.as_ref()),
        );
        let correct = correct_calls(self.scenario, attempt);
        // Always draw, so that a run's random sequence does not depend on p.
        let roll: f64 = self.rng.random();
        if roll < chance {
            self.last_clue = None;
            return (
                String::new(),
                correct.into_iter().map(ParsedCall::Ok).collect(),
            );
        }
        let registry = &self.scenario.registry;
        // One turn: the task operators do not apply.
        let mut candidates: Vec<(Operator, f64)> = self
            .model
            .weights
            .iter()
            .filter(|(op, _)| !op.is_task())
            .copied()
            .collect();
        while let Some(operator) = operators::draw(&mut candidates, &mut self.rng) {
            if let Some(mutation) = operators::apply(operator, &correct, registry, &mut self.rng) {
                self.last_clue = Some(mutation.clue);
                return (String::new(), mutation.calls);
            }
        }
        // No operator applies: the model is right after all.
        self.last_clue = None;
        (
            String::new(),
            correct.into_iter().map(ParsedCall::Ok).collect(),
        )
    }
}

impl Player for MockModel {
    fn result_texts(&self, returned: &[u8]) -> Vec<String> {
        self.provider
            .result_texts(returned)
            .into_iter()
            .map(|t| t.into_owned())
            .collect()
    }

    fn chance(&self, streak: u32, last_clue: &Option<Option<String>>, texts: &[String]) -> f64 {
        MockModel::chance(self, streak, last_clue, texts.iter().map(String::as_str))
    }

    fn weights(&self) -> &[(Operator, f64)] {
        &self.weights
    }
}

/// Does a result's text say `needed`, as is or, in a JSON result, in one
/// of its strings (as a model reads `\"confirm\": true` in one)?
fn says(text: &str, needed: &str) -> bool {
    fn strings_say(value: &serde_json::Value, needed: &str) -> bool {
        match value {
            serde_json::Value::String(s) => s.contains(needed),
            serde_json::Value::Array(items) => items.iter().any(|v| strings_say(v, needed)),
            serde_json::Value::Object(members) => members.values().any(|v| strings_say(v, needed)),
            _ => false,
        }
    }
    text.contains(needed)
        || serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| strings_say(&v, needed))
}

/// Whether a scenario's script says what its turns need to be told.
fn needs_feedback(scenario: &Scenario) -> bool {
    scenario
        .script
        .as_deref()
        .is_some_and(|script| script.iter().any(|turn| turn.needs.is_some()))
}

/// The calls a correct model makes on `attempt`.
fn correct_calls(scenario: &Scenario, attempt: u32) -> Vec<ToolCall> {
    if let Expectation::AnyCall = scenario.expectation.plain() {
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
            arguments: Arguments::from_map(expected.arguments.example()),
        })
        .collect()
}

/// Where any call is right: the first tool, with generated valid arguments.
fn any_call(scenario: &Scenario, attempt: u32) -> Option<ToolCall> {
    let registry = &scenario.registry;
    let def = registry.definitions().next()?;
    let validator = registry.schema(registry.lookup(&def.name)?);
    let instance =
        crate::schema::generate::valid_instances(&def.parameters, validator, 1, 0).pop()?;
    // Parameters are always an object schema (checked when loaded).
    let arguments = Arguments::try_from(instance).ok()?;
    Some(ToolCall {
        id: format!("call_{attempt}_0"),
        name: def.name.clone(),
        arguments,
    })
}

/// The scenario's script's turn `turn` (1-based; the last repeats), its
/// calls named for `attempt`; without a script, the correct calls.
fn scripted_turn(scenario: &Scenario, turn: u32, attempt: u32) -> (String, Vec<ParsedCall>) {
    let Some(script) = scenario.script.as_ref().filter(|s| !s.is_empty()) else {
        return (
            String::new(),
            correct_calls(scenario, attempt)
                .into_iter()
                .map(ParsedCall::Ok)
                .collect(),
        );
    };
    // A task's script ends in an answer: its last turn.
    if scenario.task.is_some() && turn as usize > script.len() {
        return (String::new(), Vec::new());
    }
    let turn = &script[(turn as usize - 1).min(script.len() - 1)];
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
                (None, arguments) => match arguments
                    .clone()
                    .map_or(Ok(Arguments::default()), Arguments::try_from)
                {
                    Ok(arguments) => ParsedCall::Ok(ToolCall {
                        id,
                        name: call.name.clone(),
                        arguments,
                    }),
                    // Written into the reply as they are, where Parse
                    // finds them not an object, as it would a model's.
                    Err(other) => ParsedCall::Malformed(MalformedCall {
                        id,
                        name: call.name.clone(),
                        raw_arguments: other.to_string(),
                        problem: String::new(),
                    }),
                },
            }
        })
        .collect();
    (turn.text.clone(), calls)
}
