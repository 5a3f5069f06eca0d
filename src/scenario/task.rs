//! Tasks: multi-step scenarios where every result feeds the next call,
//! judged when the model answers on the milestones it reached, the calls
//! it must never make, what the stateful tools hold at the end and what
//! its answer says; and conversations, tasks whose user speaks again
//! (`turns`), each user turn with its own checks. This file holds the
//! task block as written and checked; `judge` follows a trial.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ExpectedCallFile;
use super::matcher::{ArgumentMatchers, Matcher};
use super::probe::{Probe, ProbeFile, compile_probe};
use super::user::{SimulatedUser, SimulatedUserFile, compile_user};
use crate::pointer::{Located, Pointer};
use crate::tool::Registry;

/// Turns a task gets unless it says otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// A scenario's `task` block as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    #[serde(default)]
    pub milestones: Vec<MilestoneFile>,
    /// Calls that do the task as its author did: mock models play them
    /// (in place of the milestones), nothing judges them.
    #[serde(default)]
    pub reference: Vec<MilestoneFile>,
    /// What mock models say when the reference is done (the words a
    /// benchmark's verdict looks for); nothing judges it. Default: an
    /// example of `answer`.
    #[serde(default)]
    pub reference_answer: Option<String>,
    #[serde(default)]
    pub forbidden: Vec<ExpectedCallFile>,
    #[serde(default)]
    pub final_state: FinalStateFile,
    /// A matcher on the final text, or an array of them (all must hold).
    #[serde(default)]
    pub answer: Option<Value>,
    /// The user speaks again: each entry a user turn after the opening
    /// one, with its own checks, judged when the model answers it.
    #[serde(default)]
    pub turns: Vec<UserTurnFile>,
    /// Or a simulated user speaks again, from instructions the model never
    /// sees, until it says it is done; the task's checks are judged then.
    #[serde(default)]
    pub user: Option<SimulatedUserFile>,
}

fn default_max_turns() -> u32 {
    DEFAULT_MAX_TURNS
}

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

/// A loaded task.
#[derive(Debug, Clone)]
pub struct Task {
    pub max_turns: u32,
    pub milestones: Vec<Milestone>,
    /// How the author did it, for mock models (see [`Task::steps`]).
    pub reference: Vec<Milestone>,
    pub reference_answer: Option<String>,
    pub forbidden: Vec<Forbidden>,
    pub final_files: Vec<(String, Matcher)>,
    pub final_store: Vec<StoreEntry>,
    pub final_probe: Option<Probe>,
    pub answer: Vec<Matcher>,
    /// The scenario's tools that change the world (`effect: write`).
    pub writes: HashSet<String>,
    /// The user turns after the opening one, each with its own checks
    /// (forbidden calls, writes and the turn budget are the task's).
    pub then: Vec<UserTurn>,
    /// Or a simulated user who speaks until it is done.
    pub user: Option<SimulatedUser>,
}

/// A call that must happen.
#[derive(Debug, Clone)]
pub struct Milestone {
    pub id: String,
    pub name: String,
    pub arguments: ArgumentMatchers,
    /// Milestones (by index) that must be reached before this one.
    pub requires: Vec<usize>,
}

/// A call that must never happen: the listed arguments match (others may
/// be there too).
#[derive(Debug, Clone)]
pub struct Forbidden {
    pub name: String,
    pub arguments: ArgumentMatchers,
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
fn task_at() -> Pointer {
    Pointer::root().key("task")
}

/// A tool the task names must be one of the scenario's.
fn known_tool(registry: &Registry, name: &str, at: Pointer) -> Result<(), Located> {
    match registry.lookup(name) {
        Some(_) => Ok(()),
        None => Err(Located::new(
            at,
            format!("no tool named {name:?} in this scenario's tools"),
        )),
    }
}

/// A call's argument matchers; `$result` must read a known tool.
fn call_matchers(
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

impl Task {
    /// Check a task block against the scenario's tools. Problems are
    /// located from the scenario's root.
    pub fn compile(file: &TaskFile, registry: &Registry) -> Result<Task, Located> {
        if file.max_turns == 0 {
            return Err(Located::new(
                task_at().key("max_turns"),
                "a task needs at least 1 turn",
            ));
        }
        let mut forbidden = Vec::with_capacity(file.forbidden.len());
        for (i, f) in file.forbidden.iter().enumerate() {
            let here = task_at().key("forbidden").index(i);
            known_tool(registry, &f.name, here.clone().key("name"))?;
            forbidden.push(Forbidden {
                name: f.name.clone(),
                arguments: call_matchers(registry, &f.arguments, &here)?,
            });
        }
        let checks = Checks::compile(
            "a task",
            &file.milestones,
            &file.final_state,
            &file.answer,
            registry,
            &task_at(),
        )?;
        let writes = registry
            .definitions()
            .filter(|d| d.effect == crate::tool::Effect::Write)
            .map(|d| d.name.clone())
            .collect();
        let mut task = Task {
            writes,
            max_turns: file.max_turns,
            milestones: checks.milestones,
            reference: compile_milestones(&file.reference, "reference", registry, &task_at())?,
            reference_answer: file.reference_answer.clone(),
            forbidden,
            final_files: checks.final_files,
            final_store: checks.final_store,
            final_probe: checks.final_probe,
            answer: checks.answer,
            then: Vec::new(),
            user: None,
        };
        task.then = compile_turns(&file.turns, &task, registry)?;
        check_added_tools(&task, registry)?;
        task.user = file.user.as_ref().map(compile_user).transpose()?;
        if task.user.is_some() && !task.then.is_empty() {
            return Err(Located::new(
                task_at().key("user"),
                "a task has \"turns\" (the user's words written out) or a simulated \"user\", not both",
            ));
        }
        Ok(task)
    }

    /// The task as its user turn `k` is judged (0: the opening turn, the
    /// task itself): that turn's checks, the task's forbidden calls,
    /// writes and budget.
    pub fn user_turn(&self, k: usize) -> Option<&Task> {
        match k {
            0 => Some(self),
            k => self.then.get(k - 1).map(|turn| &turn.task),
        }
    }

    /// The tools a conversation gives the model only at a later user
    /// turn, and the probes' tools (never given): hidden when it starts.
    pub fn hidden_at_start(&self) -> Vec<String> {
        let mut hidden: Vec<String> = self
            .then
            .iter()
            .flat_map(|turn| turn.add_tools.iter().cloned())
            .collect();
        for tool in self.probe_tools() {
            if !hidden.iter().any(|h| h == tool) {
                hidden.push(tool.to_owned());
            }
        }
        hidden
    }

    /// The tools the probes of every user turn call.
    pub fn probe_tools(&self) -> impl Iterator<Item = &str> {
        (0..self.user_turns())
            .filter_map(|k| self.user_turn(k)?.final_probe.as_ref())
            .map(|p| p.tool.as_str())
    }

    /// The calls mock models play: the reference when there is one (the
    /// author's way, unjudged), else the milestones.
    pub fn steps(&self) -> &[Milestone] {
        if self.reference.is_empty() {
            &self.milestones
        } else {
            &self.reference
        }
    }

    /// Milestones over every user turn.
    pub fn all_milestones(&self) -> u32 {
        (0..self.user_turns())
            .filter_map(|k| self.user_turn(k))
            .map(|t| t.milestones.len() as u32)
            .sum()
    }

    /// User turns in all: the opening one and those after it.
    pub fn user_turns(&self) -> usize {
        1 + self.then.len()
    }

    /// A text that satisfies the answer matchers, for mock models.
    pub fn answer_example(&self) -> String {
        if let Some(said) = &self.reference_answer {
            return said.clone();
        }
        let parts: Vec<String> = self
            .answer
            .iter()
            .filter_map(|m| match m.example()? {
                Value::String(text) => Some(text),
                other => Some(other.to_string()),
            })
            .collect();
        if parts.is_empty() {
            "Done.".to_owned()
        } else {
            parts.join(" ")
        }
    }
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
fn compile_milestones(
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

/// One entry of a task's `turns` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserTurnFile {
    /// What the user says.
    pub user: String,
    #[serde(default)]
    pub milestones: Vec<MilestoneFile>,
    /// As the task's `reference`, for this turn.
    #[serde(default)]
    pub reference: Vec<MilestoneFile>,
    #[serde(default)]
    pub final_state: FinalStateFile,
    #[serde(default)]
    pub answer: Option<Value>,
    /// Tools of the scenario the model is given only from this turn on
    /// (before it, a call to one is a call to an unknown tool).
    #[serde(default)]
    pub add_tools: Vec<String>,
}

/// Tools added at a user turn are the scenario's, added once, and no
/// milestone before that turn needs one (it could never be reached).
fn check_added_tools(task: &Task, registry: &Registry) -> Result<(), Located> {
    let mut added: Vec<(&str, usize)> = Vec::new();
    for (i, turn) in task.then.iter().enumerate() {
        for (j, name) in turn.add_tools.iter().enumerate() {
            let at = Pointer::root()
                .key("task")
                .key("turns")
                .index(i)
                .key("add_tools")
                .index(j);
            known_tool(registry, name, at.clone())?;
            if task.probe_tools().any(|tool| tool == name) {
                return Err(Located::new(
                    at,
                    format!("{name:?} is a probe's tool, which the model is never given"),
                ));
            }
            if added.iter().any(|(n, _)| n == name) {
                return Err(Located::new(at, format!("{name:?} is added twice")));
            }
            added.push((name, i + 1));
        }
    }
    for k in 0..task.user_turns() {
        let checked = task.user_turn(k).expect("k < user_turns");
        for (m, milestone) in checked.milestones.iter().enumerate() {
            let base = match k {
                0 => task_at(),
                k => task_at().key("turns").index(k - 1),
            };
            // A probe's tool is hidden from the model: a milestone on it
            // makes the task impossible, which no model could be charged for.
            if task.probe_tools().any(|tool| tool == milestone.name) {
                return Err(Located::new(
                    base.key("milestones").index(m).key("name"),
                    format!(
                        "{:?} is a probe's tool, which the model is never given, so this milestone could never be reached; probe with another tool, or leave this milestone out",
                        milestone.name
                    ),
                ));
            }
            if let Some((name, from)) = added.iter().find(|(n, _)| *n == milestone.name)
                && *from > k
            {
                return Err(Located::new(
                    base.key("milestones").index(m).key("name"),
                    format!(
                        "{name:?} is given to the model only from user turn {} on (add_tools), so this milestone could never be reached",
                        from + 1
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A user turn after the opening one: what the user says, and the task
/// as this turn is judged (its checks; the task's forbidden calls,
/// writes and budget).
#[derive(Debug, Clone)]
pub struct UserTurn {
    pub user: String,
    pub task: Task,
    /// Tools the model is given from this turn on.
    pub add_tools: Vec<String>,
}

/// Check each user turn of `task` against the scenario's tools; problems
/// are located at `/task/turns/<i>`.
fn compile_turns(
    files: &[UserTurnFile],
    task: &Task,
    registry: &Registry,
) -> Result<Vec<UserTurn>, Located> {
    files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let at = Pointer::root().key("task").key("turns").index(i);
            if file.user.trim().is_empty() {
                return Err(Located::new(
                    at.key("user"),
                    "is empty: say what the user says",
                ));
            }
            let checks = Checks::compile(
                "a user turn",
                &file.milestones,
                &file.final_state,
                &file.answer,
                registry,
                &at,
            )?;
            Ok(UserTurn {
                add_tools: file.add_tools.clone(),
                user: file.user.clone(),
                task: Task {
                    max_turns: task.max_turns,
                    milestones: checks.milestones,
                    reference: compile_milestones(&file.reference, "reference", registry, &at)?,
                    reference_answer: None,
                    forbidden: task.forbidden.clone(),
                    final_files: checks.final_files,
                    final_store: checks.final_store,
                    final_probe: checks.final_probe,
                    answer: checks.answer,
                    writes: task.writes.clone(),
                    then: Vec::new(),
                    user: None,
                },
            })
        })
        .collect()
}
