//! Tasks: multi-step scenarios where every result feeds the next call,
//! judged when the model answers on the milestones it reached, the calls
//! it must never make, what the stateful tools hold at the end and what
//! its answer says; and conversations, tasks whose user speaks again
//! (`turns`), each user turn with its own checks. This file holds the
//! task block as written and checked; `judge` follows a trial.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use super::ExpectedCallFile;
use super::checks::{
    Checks, FinalStateFile, Milestone, MilestoneFile, StepBy, StoreEntry, call_matchers,
    compile_milestones, known_tool, task_at,
};
use super::matcher::{ArgumentMatchers, Matcher};
use super::probe::Probe;
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
    /// A call made when the trial starts: its result is the opening
    /// system message (state held elsewhere that the model must be told).
    #[serde(default)]
    pub system_from: Option<SystemFromFile>,
}

/// `task.system_from` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemFromFile {
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
}

/// A call made when the trial starts, whose result text is the opening
/// system message; its tool is never the model's.
#[derive(Debug, Clone)]
pub struct SystemFrom {
    pub tool: String,
    pub arguments: crate::call::Arguments,
}

impl SystemFrom {
    /// `prompt` opened by the system message `text`: it replaces the
    /// system message `prompt` opens with, if one does.
    pub fn opening(prompt: &[Value], text: &str) -> Vec<Value> {
        let system = serde_json::json!({"role": "system", "content": text});
        let rest = match prompt.first() {
            Some(first) if first["role"] == "system" => &prompt[1..],
            _ => prompt,
        };
        std::iter::once(system)
            .chain(rest.iter().cloned())
            .collect()
    }
}

fn default_max_turns() -> u32 {
    DEFAULT_MAX_TURNS
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
    /// The opening system message comes from this call.
    pub system_from: Option<SystemFrom>,
}

/// A call that must never happen: the listed arguments match (others may
/// be there too).
#[derive(Debug, Clone)]
pub struct Forbidden {
    pub name: String,
    pub arguments: ArgumentMatchers,
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
            system_from: file
                .system_from
                .as_ref()
                .map(|f| {
                    known_tool(registry, &f.tool, task_at().key("system_from").key("tool"))?;
                    Ok::<_, Located>(SystemFrom {
                        tool: f.tool.clone(),
                        arguments: crate::call::Arguments::from_map(f.arguments.clone()),
                    })
                })
                .transpose()?,
        };
        task.then = compile_turns(&file.turns, &task, registry)?;
        check_added_tools(&task, registry)?;
        task.user = file
            .user
            .as_ref()
            .map(|user| compile_user(user, |name| registry.lookup(name).is_some()))
            .transpose()?;
        check_user_tools(&task)?;
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
        for tool in self.probe_tools().chain(self.user_tools()) {
            if !hidden.iter().any(|h| h == tool) {
                hidden.push(tool.to_owned());
            }
        }
        hidden
    }

    /// The tools the simulated user holds (never the agent's).
    pub fn user_tools(&self) -> impl Iterator<Item = &str> {
        self.user
            .iter()
            .flat_map(|u| u.tools.iter().map(String::as_str))
    }

    /// The tools the probes of every user turn call, and the one whose
    /// result opens the conversation.
    pub fn probe_tools(&self) -> impl Iterator<Item = &str> {
        (0..self.user_turns())
            .filter_map(|k| self.user_turn(k)?.final_probe.as_ref())
            .map(|p| p.tool.as_str())
            .chain(self.system_from.iter().map(|s| s.tool.as_str()))
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

/// The user's tools are not the agent's: no milestone, forbidden call
/// or probe names one, and a reference step by the user calls one.
fn check_user_tools(task: &Task) -> Result<(), Located> {
    let held = |name: &str| task.user_tools().any(|t| t == name);
    for (i, step) in task.reference.iter().enumerate() {
        let here = task_at().key("reference").index(i).key("name");
        match step.by {
            StepBy::User if !held(&step.name) => {
                return Err(Located::new(
                    here,
                    format!(
                        "{:?} is the user's step but not one of task.user.tools",
                        step.name
                    ),
                ));
            }
            StepBy::Agent if held(&step.name) => {
                return Err(Located::new(
                    here,
                    format!("{:?} is the user's tool: say \"by\": \"user\"", step.name),
                ));
            }
            _ => {}
        }
    }
    for (i, m) in task.milestones.iter().enumerate() {
        if held(&m.name) {
            return Err(Located::new(
                task_at().key("milestones").index(i).key("name"),
                format!(
                    "{:?} is the user's tool, never the agent's: judge it with a probe",
                    m.name
                ),
            ));
        }
    }
    if let Some(tool) = task.probe_tools().find(|t| held(t)) {
        return Err(Located::new(
            task_at().key("user").key("tools"),
            format!("{tool:?} is a probe's tool, which no one is given"),
        ));
    }
    Ok(())
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
                    system_from: None,
                },
            })
        })
        .collect()
}
