//! A conversation's simulated user: who plays it (a live model's file or
//! a script of replies), from which instructions, for how many turns, and
//! the words that end it. Written as a task's `user`.

use serde::Deserialize;

use crate::pointer::{Located, Pointer};

/// A task's simulated user as written: its instructions, how many times
/// it may speak after the opening, and who plays it (a live model's
/// file, or a script of replies).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatedUserFile {
    pub instructions: String,
    /// The simulator's whole system prompt, as another benchmark words it
    /// (tau2's guidelines with the task's scenario); default: toolgauge's
    /// framing of `instructions`. The instructions stay what the agent
    /// must never be told.
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default = "default_user_turns")]
    pub max_turns: u32,
    /// What its last turn used up (or its script run out: a recording
    /// cut there) means: `lose` (default: the user never said it was
    /// done, the trial is lost to it) or `judge` (the conversation is
    /// judged as it stands, ended by `max_steps`, as tau2 judges one its
    /// step bound cut).
    #[serde(default)]
    pub at_max_turns: AtMaxTurns,
    /// The live model that plays the user: the name of a model given on
    /// the command line (`--user-model`), or a model file inside the
    /// suite (relative to the scenario's folder) that names no key.
    #[serde(default)]
    pub model: Option<String>,
    /// The user's replies in order (a mock user, for tests and CI):
    /// each what it says, or `{"calls": [...]}`, the calls it makes with
    /// its own tools before it speaks again.
    #[serde(default)]
    pub script: Option<Vec<ScriptLine>>,
    /// Tools of the scenario the user holds (tau2's telecom user acts on
    /// their own phone): never shown to the agent, whose call to one is
    /// a call to an unknown tool; the user's calls run through the same
    /// pipeline and are recorded as the user's.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// One line of a scripted user: what it says, or calls it makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScriptLine {
    Says(String),
    Calls { calls: Vec<ScriptCall> },
}

/// A call a scripted user makes with one of its tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

fn default_user_turns() -> u32 {
    5
}

/// What a simulated user's turns used up means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtMaxTurns {
    /// The user failed: the trial is lost to it.
    #[default]
    Lose,
    /// The conversation is judged as it stands (`ended_by: max_steps`).
    Judge,
}

/// What a simulated user says when the conversation is over (as tau2).
pub const STOP: &str = "###STOP###";

/// Every word that ends a conversation when the user says it: done, and
/// tau2's two others (transferred to a human; asked what the scenario does
/// not cover).
pub const USER_ENDINGS: [&str; 3] = [STOP, "###TRANSFER###", "###OUT-OF-SCOPE###"];

/// A task's simulated user, checked.
#[derive(Debug, Clone)]
pub struct SimulatedUser {
    pub instructions: String,
    pub system: Option<String>,
    /// Times it may speak after the opening message.
    pub max_turns: u32,
    pub at_max_turns: AtMaxTurns,
    pub player: UserPlayer,
    /// The scenario's tools the user holds (the agent never sees them).
    pub tools: Vec<String>,
}

/// Who plays a simulated user.
#[derive(Debug, Clone, PartialEq)]
pub enum UserPlayer {
    /// A live model: a model given on the command line, by its name, or a
    /// keyless model file inside the suite.
    Model(String),
    /// These lines, in order.
    Script(Vec<ScriptLine>),
}

/// A simulated user: instructions to play from, and one player; the
/// tools it holds are the scenario's (`known`).
pub(super) fn compile_user(
    file: &SimulatedUserFile,
    known: impl Fn(&str) -> bool,
) -> Result<SimulatedUser, Located> {
    let at = Pointer::root().key("task").key("user");
    if file.instructions.trim().is_empty() {
        return Err(Located::new(
            at.key("instructions"),
            "is empty: say what the user wants and knows",
        ));
    }
    if file.max_turns == 0 {
        return Err(Located::new(at.key("max_turns"), "must be at least 1"));
    }
    for (i, name) in file.tools.iter().enumerate() {
        if !known(name) {
            return Err(Located::new(
                at.clone().key("tools").index(i),
                format!("no tool named {name:?} in this scenario's tools"),
            ));
        }
    }
    let player = match (&file.model, &file.script) {
        (Some(model), None) => UserPlayer::Model(model.clone()),
        (None, Some(script)) if script.is_empty() => {
            return Err(Located::new(
                at.key("script"),
                "is empty: give the user's replies in order, the last one \"###STOP###\"",
            ));
        }
        (None, Some(script)) => {
            check_script(script, &file.tools, &at.clone().key("script"))?;
            UserPlayer::Script(script.clone())
        }
        _ => {
            return Err(Located::new(
                at,
                "give who plays the user: \"model\" (a live model's file) or \"script\" (its replies), one of them",
            ));
        }
    };
    if file.system.as_ref().is_some_and(|s| s.trim().is_empty()) {
        return Err(Located::new(
            at.key("system"),
            "is empty: leave it out for toolgauge's framing of the instructions",
        ));
    }
    Ok(SimulatedUser {
        instructions: file.instructions.clone(),
        system: file.system.clone(),
        max_turns: file.max_turns,
        at_max_turns: file.at_max_turns,
        player,
        tools: file.tools.clone(),
    })
}

/// A script's calls are to tools the user holds, and a line of calls
/// makes at least one.
fn check_script(script: &[ScriptLine], tools: &[String], at: &Pointer) -> Result<(), Located> {
    for (i, line) in script.iter().enumerate() {
        let ScriptLine::Calls { calls } = line else {
            continue;
        };
        let here = at.clone().index(i).key("calls");
        if calls.is_empty() {
            return Err(Located::new(
                here,
                "is empty: give the calls the user makes, or a line of what it says",
            ));
        }
        for (j, call) in calls.iter().enumerate() {
            if !tools.contains(&call.name) {
                return Err(Located::new(
                    here.clone().index(j).key("name"),
                    format!(
                        "{:?} is not one of the user's tools (task.user.tools: {})",
                        call.name,
                        tools.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}
