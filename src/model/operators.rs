//! Error operators: the ways a mock model gets a call wrong. Each one
//! turns the correct calls into wrong ones and says what clue a helpful
//! error message would contain (a JSON pointer, a property or tool name),
//! so the feedback-aware model can tell whether the feedback names it.
//! The schema-breaking operators draw their wrong arguments from the
//! fuzzer's mutation operators (`fuzz::mutate`), so the harness and the
//! fuzzer speak one vocabulary.

use rand::Rng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::call::{Arguments, MalformedCall, ParsedCall, ToolCall};
use crate::schema::mutate::{self, Mutation as SchemaMutation};
use crate::tool::Registry;

/// One way to be wrong.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    WrongType,
    MissingRequired,
    EnumViolation,
    OutOfRange,
    ExtraArgument,
    UnknownTool,
    MisspelledTool,
    BrokenJson,
    PathOutsideSandbox,
    UnwantedCall,
    MissingParallelCall,
    /// Tasks: believe a milestone done without doing it.
    SkipMilestone,
    /// Tasks: make an earlier successful call again.
    RepeatCall,
    /// Tasks: answer before the work is done.
    AnswerEarly,
    /// Tasks: make a call the task forbids.
    ForbiddenCall,
    /// Tasks: send an id that no result contained.
    InventedId,
    /// Tasks: do a later step before the one it depends on.
    WriteBeforeRead,
}

impl Operator {
    /// Is it a task operator? Those apply only to tasks, played in
    /// `model::task_play`; the others break calls of one turn.
    pub fn is_task(self) -> bool {
        matches!(
            self,
            Operator::SkipMilestone
                | Operator::RepeatCall
                | Operator::AnswerEarly
                | Operator::ForbiddenCall
                | Operator::InventedId
                | Operator::WriteBeforeRead
        )
    }

    /// Every way, in the order a mock's weights are listed.
    pub fn all() -> impl Iterator<Item = Operator> {
        <Operator as strum::IntoEnumIterator>::iter()
    }

    /// The fuzzer's mutations this operator draws from (empty: it breaks
    /// something other than the schema).
    pub fn schema_mutations(self) -> &'static [SchemaMutation] {
        match self {
            Operator::WrongType => &[SchemaMutation::Type],
            Operator::MissingRequired => &[SchemaMutation::Required],
            Operator::EnumViolation => &[SchemaMutation::Enum],
            Operator::OutOfRange => &[
                SchemaMutation::Minimum,
                SchemaMutation::Maximum,
                SchemaMutation::ExclusiveMinimum,
                SchemaMutation::ExclusiveMaximum,
            ],
            // Added even where the schema allows it: the verdict catches it then.
            Operator::ExtraArgument => &[SchemaMutation::AdditionalProperties],
            _ => &[],
        }
    }
}

/// Wrong calls and the clue that feedback must contain for a
/// feedback-aware model to fix them (`None`: no feedback can name it).
#[derive(Debug, Clone)]
pub struct Mutation {
    pub calls: Vec<ParsedCall>,
    pub clue: Option<String>,
}

/// The name an extra argument gets.
const EXTRA_ARGUMENT: &str = "unexpected_flag";

/// Apply `operator` to the correct calls, or `None` when it does not apply
/// (no enum to violate, no path to escape with, ...). Validation operators
/// are kept only when the tool's validator really rejects the result.
pub fn apply(
    operator: Operator,
    correct: &[ToolCall],
    registry: &Registry,
    rng: &mut StdRng,
) -> Option<Mutation> {
    if operator.is_task() {
        return None;
    }
    if operator == Operator::UnwantedCall {
        if !correct.is_empty() {
            return None;
        }
        let name = registry.names().next()?.to_owned();
        let call = ToolCall {
            id: "call_unwanted".into(),
            name,
            arguments: Arguments::default(),
        };
        return Some(Mutation {
            calls: vec![ParsedCall::Ok(call)],
            clue: None,
        });
    }
    if correct.is_empty() {
        return None;
    }
    if operator == Operator::MissingParallelCall {
        if correct.len() < 2 {
            return None;
        }
        let drop = rng.random_range(0..correct.len());
        let calls = correct
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != drop)
            .map(|(_, c)| ParsedCall::Ok(c.clone()))
            .collect();
        return Some(Mutation { calls, clue: None });
    }

    // The other operators break one call; try each in a random rotation.
    let start = rng.random_range(0..correct.len());
    for offset in 0..correct.len() {
        let target = (start + offset) % correct.len();
        if let Some((broken, clue)) = break_call(operator, &correct[target], registry, rng) {
            let mut calls: Vec<ParsedCall> = correct.iter().cloned().map(ParsedCall::Ok).collect();
            calls[target] = broken;
            return Some(Mutation {
                calls,
                clue: Some(clue),
            });
        }
    }
    None
}

fn break_call(
    operator: Operator,
    call: &ToolCall,
    registry: &Registry,
    rng: &mut StdRng,
) -> Option<(ParsedCall, String)> {
    registry.lookup(&call.name)?;
    let args = call.arguments.as_map();
    let with_args = |arguments: Map<String, Value>| {
        ParsedCall::Ok(ToolCall {
            arguments: Arguments::from_map(arguments),
            ..call.clone()
        })
    };
    let keys: Vec<&String> = args.keys().collect();
    let pick = |rng: &mut StdRng, candidates: Vec<&String>| -> Option<String> {
        (!candidates.is_empty()).then(|| candidates[rng.random_range(0..candidates.len())].clone())
    };

    match operator {
        Operator::WrongType
        | Operator::MissingRequired
        | Operator::EnumViolation
        | Operator::OutOfRange => break_by_schema(operator, call, registry, rng),
        Operator::ExtraArgument => {
            let mut mutated = args.clone();
            mutated.insert(EXTRA_ARGUMENT.to_owned(), Value::Bool(true));
            Some((with_args(mutated), format!("'{EXTRA_ARGUMENT}'")))
        }
        Operator::UnknownTool | Operator::MisspelledTool => {
            let name = if operator == Operator::UnknownTool {
                format!("{}_v2", call.name)
            } else {
                misspell(&call.name, rng)?
            };
            // A fix needs the right name, which the feedback lists.
            registry.lookup(&name).is_none().then(|| {
                let broken = ParsedCall::Ok(ToolCall {
                    name,
                    ..call.clone()
                });
                (broken, call.name.clone())
            })
        }
        Operator::BrokenJson => {
            let text = call.arguments.to_string();
            let broken = ParsedCall::Malformed(MalformedCall {
                id: call.id.clone(),
                name: call.name.clone(),
                raw_arguments: text[..text.len() - 1].to_owned(),
                problem: String::new(),
            });
            // Parse errors name the arguments whether the wire can carry
            // broken JSON (OpenAI) or only a non-object (Anthropic, Gemini).
            Some((broken, "arguments".to_owned()))
        }
        Operator::PathOutsideSandbox => {
            let key = pick(
                rng,
                keys.iter()
                    .copied()
                    .filter(|k| k.as_str() == "path" && args[*k].is_string())
                    .collect(),
            )?;
            let mut mutated = args.clone();
            mutated.insert(key, Value::String("../../etc/passwd".to_owned()));
            Some((with_args(mutated), "outside the sandbox".to_owned()))
        }
        _ => None,
    }
}

/// A schema operator's break: one argument mutated so that the schema
/// refuses it, with the clue feedback must name for a fix.
fn break_by_schema(
    operator: Operator,
    call: &ToolCall,
    registry: &Registry,
    rng: &mut StdRng,
) -> Option<(ParsedCall, String)> {
    let tool = registry.lookup(&call.name)?;
    let schema = &registry.definition(tool).parameters;
    let candidates: Vec<mutate::Mutant> = mutate::mutants(schema, call.arguments.as_value())
        .into_iter()
        .filter(|m| operator.schema_mutations().contains(&m.mutation))
        // A model breaks an argument; whole-object breakage is BrokenJson's.
        .filter(|m| !m.pointer.is_root())
        .filter(|m| !registry.schema(tool).full_is_valid(&m.instance))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let mutant = candidates[rng.random_range(0..candidates.len())].clone();
    // Feedback names a missing property by name, anything else by pointer.
    let clue = match mutant.mutation {
        SchemaMutation::Required => {
            format!("'{}'", mutant.pointer.last().unwrap_or_default())
        }
        _ => mutant.pointer.to_string(),
    };
    let broken = ParsedCall::Ok(ToolCall {
        // Broken inside (the pointer is not the root): an object still.
        arguments: Arguments::try_from(mutant.instance).ok()?,
        ..call.clone()
    });
    Some((broken, clue))
}

/// Swap two neighbouring letters (or drop one) so the name is close but wrong.
fn misspell(name: &str, rng: &mut StdRng) -> Option<String> {
    let mut chars: Vec<char> = name.chars().collect();
    if chars.len() < 3 {
        return None;
    }
    for _ in 0..8 {
        let i = rng.random_range(1..chars.len() - 1);
        if chars[i] != chars[i + 1] {
            chars.swap(i, i + 1);
            return Some(chars.into_iter().collect());
        }
    }
    chars.remove(chars.len() / 2);
    Some(chars.into_iter().collect())
}

/// Draw an operator by weight and take it out of `candidates`; `None`
/// when none is left with a weight.
pub(super) fn draw(candidates: &mut Vec<(Operator, f64)>, rng: &mut StdRng) -> Option<Operator> {
    let total: f64 = candidates.iter().map(|(_, w)| w).sum();
    if candidates.is_empty() || total <= 0.0 {
        return None;
    }
    let mut pick = rng.random_range(0.0..total);
    let index = candidates
        .iter()
        .position(|(_, w)| {
            pick -= w;
            pick < 0.0
        })
        .unwrap_or(candidates.len() - 1);
    Some(candidates.swap_remove(index).0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolEnv;

    /// What Validate would reject: unreadable, unknown tool, or arguments
    /// that break the schema.
    fn rejected(registry: &Registry, call: &ParsedCall) -> bool {
        match call {
            ParsedCall::Malformed(_) => true,
            ParsedCall::Ok(call) => registry
                .lookup(&call.name)
                .is_none_or(|tool| !registry.is_valid(tool, call.arguments.as_value())),
        }
    }
    use rand::SeedableRng;
    use serde_json::json;

    fn correct() -> Vec<ToolCall> {
        vec![
            ToolCall {
                id: "c1".into(),
                name: "math".into(),
                arguments: json!({"operation": "add", "a": 1, "b": 2})
                    .try_into()
                    .unwrap(),
            },
            ToolCall {
                id: "c2".into(),
                name: "sleep".into(),
                arguments: json!({"ms": 10}).try_into().unwrap(),
            },
        ]
    }

    #[test]
    fn every_operator_either_does_not_apply_or_makes_the_turn_wrong() {
        let registry = Registry::builtins(&["math", "sleep"], ToolEnv::default()).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let correct = correct();
        let mut applied = Vec::new();
        for operator in Operator::all() {
            let Some(mutation) = apply(operator, &correct, &registry, &mut rng) else {
                continue;
            };
            applied.push(operator);
            // Schema operators send one of the fuzzer's mutants for that keyword.
            if !operator.schema_mutations().is_empty() && operator != Operator::ExtraArgument {
                let (broken, original) = mutation
                    .calls
                    .iter()
                    .zip(&correct)
                    .find_map(|(c, o)| match c {
                        ParsedCall::Ok(c) if c.arguments != o.arguments => Some((c, o)),
                        _ => None,
                    })
                    .unwrap();
                assert!(
                    mutate::mutants(
                        &registry
                            .definition(registry.lookup(&original.name).unwrap())
                            .parameters,
                        original.arguments.as_value()
                    )
                    .iter()
                    .any(|m| operator.schema_mutations().contains(&m.mutation)
                        && broken.arguments == m.instance),
                    "{operator:?} sent {} which no fuzz mutant of its kind is",
                    broken.arguments
                );
            }
            let correct_calls: Vec<ParsedCall> =
                correct.iter().cloned().map(ParsedCall::Ok).collect();
            assert_ne!(mutation.calls, correct_calls, "{operator:?}");
            // Validation-level operators are caught by the pipeline itself.
            if matches!(
                operator,
                Operator::WrongType
                    | Operator::MissingRequired
                    | Operator::EnumViolation
                    | Operator::OutOfRange
                    | Operator::ExtraArgument
                    | Operator::UnknownTool
                    | Operator::MisspelledTool
                    | Operator::BrokenJson
            ) {
                assert!(
                    mutation.calls.iter().any(|c| rejected(&registry, c)),
                    "{operator:?} slipped through validation"
                );
            }
        }
        assert_eq!(
            applied,
            [
                Operator::WrongType,
                Operator::MissingRequired,
                Operator::EnumViolation,
                Operator::OutOfRange,
                Operator::ExtraArgument,
                Operator::UnknownTool,
                Operator::MisspelledTool,
                Operator::BrokenJson,
                Operator::MissingParallelCall,
            ]
        );
    }
}
