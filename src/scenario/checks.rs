//! What a task or a user turn is judged on, as written and checked:
//! milestones (and the reference calls mocks play, a step the agent's or
//! the user's), the final state (files, store, a probe) and the answer;
//! each problem located from the scenario's root.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::matcher::{ArgumentMatchers, Matcher};
use super::probe::{Probe, ProbeFile, compile_probe};
use crate::pointer::{Located, Pointer};
use crate::tool::Registry;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MilestoneFile {
    /// What `after` calls it; `m1`, `m2`, ... by position when absent.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Reached whenever it happens, not in list order.
    #[serde(default)]
    pub unordered: bool,
    /// The id (or ids) of earlier milestones it must follow.
    #[serde(default)]
    pub after: After,
    /// Who makes a reference call: the agent (default) or the simulated
    /// user with its own tools (tau2's telecom: the user toggles its
    /// phone's roaming). A mock agent hands over to the user there.
    #[serde(default)]
    pub by: StepBy,
}

/// Who makes a reference step's call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepBy {
    #[default]
    Agent,
    User,
}

/// `"after": "read"` or `"after": ["read_a", "read_b"]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(untagged)]
pub enum After {
    #[default]
    Nothing,
    One(String),
    Many(Vec<String>),
}

impl After {
    fn ids(&self) -> &[String] {
        match self {
            After::Nothing => &[],
            After::One(id) => std::slice::from_ref(id),
            After::Many(ids) => ids,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalStateFile {
    /// Sandbox path to its content (a string) or a matcher
    /// (`{"$absent": true}`: the file must not exist).
    #[serde(default)]
    pub files: BTreeMap<String, Value>,
    /// Collection to record id to the fields the record must have, or
    /// `null` when the record must be gone.
    #[serde(default)]
    pub store: BTreeMap<String, BTreeMap<String, Value>>,
    /// A call that reports the state (a tool the model never sees), and
    /// what its result must be.
    #[serde(default)]
    pub probe: Option<ProbeFile>,
}

/// A call that must happen.
#[derive(Debug, Clone)]
pub struct Milestone {
    pub id: String,
    pub name: String,
    pub arguments: ArgumentMatchers,
    /// Milestones (by index) that must be reached before this one.
    pub requires: Vec<usize>,
    /// Who makes it (a reference step may be the user's).
    pub by: StepBy,
}

/// A record the store must (or must no longer) hold when the task ends.
#[derive(Debug, Clone)]
pub struct StoreEntry {
    pub collection: String,
    pub id: String,
    /// `None`: the record must be gone.
    pub fields: Option<ArgumentMatchers>,
}

/// Where the task block is in a scenario file.
pub(super) fn task_at() -> Pointer {
    Pointer::root().key("task")
}

/// A tool the task names must be one of the scenario's.
pub(super) fn known_tool(registry: &Registry, name: &str, at: Pointer) -> Result<(), Located> {
    match registry.lookup(name) {
        Some(_) => Ok(()),
        None => Err(Located::new(
            at,
            format!("no tool named {name:?} in this scenario's tools"),
        )),
    }
}

/// A call's argument matchers; `$result` must read a known tool.
pub(super) fn call_matchers(
    registry: &Registry,
    arguments: &Map<String, Value>,
    here: &Pointer,
) -> Result<ArgumentMatchers, Located> {
    let at = here.clone().key("arguments");
    let matchers = ArgumentMatchers::from_map(arguments).map_err(|e| e.under(&at))?;
    for tool in matchers.result_tools() {
        known_tool(registry, tool, at.clone())?;
    }
    Ok(matchers)
}

/// What one user turn is judged on (the opening turn's are the task's).
#[derive(Debug, Clone, Default)]
pub struct Checks {
    pub milestones: Vec<Milestone>,
    pub final_files: Vec<(String, Matcher)>,
    pub final_store: Vec<StoreEntry>,
    pub final_probe: Option<Probe>,
    pub answer: Vec<Matcher>,
}

impl Checks {
    /// The checks of `what` (`a task`, `a user turn`), written under
    /// `at`; at least one must be able to fail.
    pub fn compile(
        what: &str,
        milestones: &[MilestoneFile],
        final_state: &FinalStateFile,
        answer: &Option<Value>,
        registry: &Registry,
        at: &Pointer,
    ) -> Result<Checks, Located> {
        let checks = Checks {
            milestones: compile_milestones(milestones, "milestones", registry, at)?,
            final_files: compile_final_files(final_state, at)?,
            final_store: compile_final_store(final_state, registry, at)?,
            final_probe: compile_probe(
                final_state.probe.as_ref(),
                registry,
                at.clone().key("final_state").key("probe"),
            )?,
            answer: compile_answer(answer, at)?,
        };
        if checks.milestones.is_empty()
            && checks.final_files.is_empty()
            && checks.final_store.is_empty()
            && checks.final_probe.is_none()
            && checks.answer.is_empty()
        {
            return Err(Located::new(
                at.clone(),
                format!(
                    "{what} needs at least one check that can fail: \"milestones\", \"final_state\" or \"answer\""
                ),
            ));
        }
        Ok(checks)
    }
}

/// Milestones (or reference steps), written under `at`'s `key`.
pub(super) fn compile_milestones(
    files: &[MilestoneFile],
    key: &str,
    registry: &Registry,
    at: &Pointer,
) -> Result<Vec<Milestone>, Located> {
    let mut milestones: Vec<Milestone> = Vec::with_capacity(files.len());
    let mut previous_ordered = None;
    for (i, m) in files.iter().enumerate() {
        let here = at.clone().key(key).index(i);
        known_tool(registry, &m.name, here.clone().key("name"))?;
        let arguments = call_matchers(registry, &m.arguments, &here)?;
        check_example(registry, &m.name, &arguments, &here)?;
        if m.by == StepBy::User && key != "reference" {
            return Err(Located::new(
                here.key("by"),
                "only a reference step may be the user's: milestones judge the agent's calls",
            ));
        }
        let id = m.id.clone().unwrap_or_else(|| format!("m{}", i + 1));
        if milestones.iter().any(|earlier| earlier.id == id) {
            return Err(Located::new(
                here.key("id"),
                format!("the id {id:?} is used twice"),
            ));
        }
        let mut requires = Vec::new();
        if !m.unordered {
            requires.extend(previous_ordered);
            previous_ordered = Some(i);
        }
        for after in m.after.ids() {
            let earlier = milestones
                .iter()
                .position(|e| &e.id == after)
                .ok_or_else(|| {
                    Located::new(
                        here.clone().key("after"),
                        format!("no earlier milestone has the id {after:?}"),
                    )
                })?;
            if !requires.contains(&earlier) {
                requires.push(earlier);
            }
        }
        milestones.push(Milestone {
            id,
            name: m.name.clone(),
            arguments,
            requires,
            by: m.by,
        });
    }
    Ok(milestones)
}

fn compile_final_files(
    final_state: &FinalStateFile,
    at: &Pointer,
) -> Result<Vec<(String, Matcher)>, Located> {
    let mut final_files = Vec::with_capacity(final_state.files.len());
    for (path, expected) in &final_state.files {
        let here = at.clone().key("final_state").key("files").key(path);
        // Checked against the trial's sandbox only: never a host file.
        let relative = crate::tool::sandbox_path(path)
            .map_err(|e| Located::new(here.clone(), e.to_string()))?;
        let matcher = Matcher::from_value(expected).map_err(|e| e.under(&here))?;
        final_files.push((relative.to_string_lossy().into_owned(), matcher));
    }
    Ok(final_files)
}

fn compile_final_store(
    final_state: &FinalStateFile,
    registry: &Registry,
    at: &Pointer,
) -> Result<Vec<StoreEntry>, Located> {
    let seeded = registry.seeded_store();
    let can_add = registry.lookup("store_put").is_some();
    let mut final_store = Vec::new();
    for (collection, records) in &final_state.store {
        let at = at.clone().key("final_state").key("store").key(collection);
        if !seeded.collection_names().any(|c| c == collection) {
            let known: Vec<&str> = seeded.collection_names().collect();
            return Err(Located::new(
                at,
                format!(
                    "the scenario's state has no collection {collection:?} (it has {}), and no tool can make one",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        for (id, expected) in records {
            let here = at.clone().key(id);
            if expected.is_null() && !can_add && seeded.record(collection, id).is_none() {
                return Err(Located::new(
                    here,
                    format!(
                        "{collection:?} holds no record {id:?} and no tool can add one, so \"must be gone\" cannot fail"
                    ),
                ));
            }
            let fields = match expected {
                Value::Null => None,
                Value::Object(fields) => {
                    Some(ArgumentMatchers::from_map(fields).map_err(|e| e.under(&here))?)
                }
                _ => {
                    return Err(Located::new(
                        here,
                        "give the fields the record must have (an object), or null \
                         when it must be gone",
                    ));
                }
            };
            final_store.push(StoreEntry {
                collection: collection.clone(),
                id: id.clone(),
                fields,
            });
        }
    }
    Ok(final_store)
}

fn compile_answer(answer: &Option<Value>, at: &Pointer) -> Result<Vec<Matcher>, Located> {
    let at = at.clone().key("answer");
    let answer: Vec<Matcher> = match answer {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Matcher::from_value(v).map_err(|e| e.under(&at.clone().index(i))))
            .collect::<Result<_, _>>()?,
        Some(one) => vec![Matcher::from_value(one).map_err(|e| e.under(&at))?],
    };
    if answer.iter().any(|m| matches!(m, Matcher::Result { .. })) {
        return Err(Located::new(
            at,
            "$result reads a tool's result and cannot judge the answer's text",
        ));
    }
    Ok(answer)
}

/// A correct milestone call must pass its tool's schema. Arguments read
/// from results are unknown until a trial runs: such calls are checked
/// when made.
fn check_example(
    registry: &Registry,
    name: &str,
    arguments: &ArgumentMatchers,
    here: &Pointer,
) -> Result<(), Located> {
    if arguments.result_tools().next().is_some() {
        return Ok(());
    }
    let Some(tool) = registry.lookup(name) else {
        return Ok(());
    };
    let example = Value::Object(arguments.example());
    match registry.schema(tool).first_error(&example) {
        Some(error) => Err(Located::new(
            here.clone().key("arguments"),
            format!("the correct call must pass its tool's schema, but {error}"),
        )),
        None => Ok(()),
    }
}
