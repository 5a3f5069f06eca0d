//! tau2's tasks exported by the bridge and imported as scenarios.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The bridge's probe: tau2's verdict on the conversation.
pub const EVALUATE: &str = "tau2_evaluate";

/// The domains `import tau2` takes (telecom's user acts with tools of its
/// own: `task.user.tools`).
pub const DOMAINS: [&str; 3] = ["airline", "retail", "telecom"];

/// Model turns an agent may take before it answers the user: tau2 bounds
/// a conversation by its steps (200 of the agent's, the user's and the
/// tools'), which the bridge applies to the verdict; this only bounds
/// a model that never stops calling.
const MAX_AGENT_TURNS: u32 = 30;

/// The bridge's start-up and each call's deadline (the verdict builds
/// tau2's environment twice over).
const BRIDGE_TIMEOUT_MS: u64 = 120_000;

/// Times the simulated user may speak after its first message: each of
/// its turns and the agent's answer are two of tau2's 200 steps, so this
/// bound never ends a conversation before tau2's would (the bridge counts
/// the steps exactly; a conversation that reaches it is judged as tau2's
/// step bound judges one, `at_max_turns: judge`).
const MAX_USER_TURNS: u32 = 100;

/// One task as the bridge exports it.
#[derive(Debug, Clone, Deserialize)]
pub struct ExportedTask {
    pub id: String,
    pub domain: String,
    /// tau2's agent system prompt (its instruction and the domain policy).
    pub agent_system: String,
    /// tau2's first agent message.
    pub greeting: String,
    /// tau2's user simulator system prompt (guidelines and scenario).
    pub user_system: String,
    /// The scenario alone: what the agent must never be told.
    pub user_instructions: String,
    /// The reason for the call and what the user knows: a mock user's
    /// first words.
    pub user_opening: String,
    #[serde(default)]
    pub user_tools: Vec<String>,
    /// The agent's tools, by name.
    pub tools: Vec<String>,
    pub actions: Vec<GoldAction>,
    #[serde(default)]
    pub communicate_info: Vec<String>,
    #[serde(default)]
    pub nl_assertions: Vec<String>,
    pub reward_basis: Vec<String>,
    #[serde(default)]
    pub purpose: Option<String>,
}

/// One of a task's gold actions.
#[derive(Debug, Clone, Deserialize)]
pub struct GoldAction {
    pub name: String,
    pub arguments: Map<String, Value>,
    pub requestor: String,
}

/// The scenario a task imports as: `tau2_<domain>_<id>`, each character
/// a scenario's name cannot hold (telecom's ids are
/// `[mms_issue]bad_vpn[PERSONA:None]`) written `_`.
pub fn scenario_name(domain: &str, task: &str) -> String {
    let id: String = task
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '.' | '-' => c,
            _ => '_',
        })
        .collect();
    format!("tau2_{domain}_{}", id.trim_matches('_'))
}

/// Who plays the user in the imported tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserPlay {
    /// A script for mock models: the reason for the call, then
    /// `###STOP###` after the agent's answer.
    Script,
    /// The live model given at run time with `--user-model` under this name.
    Model(String),
}

#[derive(Debug, thiserror::Error)]
pub enum Tau2Error {
    #[error("domain {domain:?} is not importable: give one of {}", DOMAINS.join(", "))]
    Domain { domain: String },
    #[error("the bridge {command:?} could not start: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("the bridge {command:?} failed ({status}): {stderr}")]
    Bridge {
        command: String,
        status: String,
        stderr: String,
    },
    #[error(
        "the bridge {command:?} was still exporting after {seconds} s: stopped, with every process it started"
    )]
    Deadline { command: String, seconds: u64 },
    #[error(
        "the bridge {command:?} exported no task of {domain}{}: nothing to import (is it tau2's bridge, and the split one of the domain's?)",
        split.as_ref().map(|s| format!(" in split {s:?}")).unwrap_or_default()
    )]
    NothingExported {
        command: String,
        domain: String,
        split: Option<String>,
    },
    #[error("the bridge's export, line {line}: {source}")]
    Export {
        line: usize,
        source: serde_json::Error,
    },
    #[error("task {id}: {message}")]
    Task { id: String, message: String },
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How long the bridge may take to export a domain's tasks: tau2 and
/// litellm load in seconds, a domain's tasks in a few more.
const EXPORT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// Every task of `domain` (in `split`, if given), as the bridge exports it.
pub fn export(
    bridge: &[String],
    domain: &str,
    split: Option<&str>,
) -> Result<Vec<ExportedTask>, Tau2Error> {
    if !DOMAINS.contains(&domain) {
        return Err(Tau2Error::Domain {
            domain: domain.to_owned(),
        });
    }
    let command_line = bridge.join(" ");
    let mut command = Command::new(&bridge[0]);
    command
        .args(&bridge[1..])
        .args(["--domain", domain, "--export"]);
    if let Some(split) = split {
        command.args(["--split", split]);
    }
    let output = crate::child::output_within(&mut command, EXPORT_DEADLINE)
        .map_err(|source| Tau2Error::Start {
            command: command_line.clone(),
            source,
        })?
        .ok_or_else(|| Tau2Error::Deadline {
            command: command_line.clone(),
            seconds: EXPORT_DEADLINE.as_secs(),
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(Tau2Error::Bridge {
            command: command_line,
            status: output.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    let tasks: Vec<ExportedTask> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|source| Tau2Error::Export {
                line: i + 1,
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    if tasks.is_empty() {
        return Err(Tau2Error::NothingExported {
            command: command_line,
            domain: domain.to_owned(),
            split: split.map(str::to_owned),
        });
    }
    Ok(tasks)
}

/// One task as a scenario (JSON), its tools served by `bridge`.
pub fn scenario(
    task: &ExportedTask,
    bridge: &[String],
    user: &UserPlay,
) -> Result<Value, Tau2Error> {
    check_importable(task)?;
    let reference = reference_steps(&task.actions);
    let played = user_block(task, user);
    let mut command = bridge.to_vec();
    command.extend(["--domain".to_owned(), task.domain.clone()]);
    let mut only = task.tools.clone();
    only.extend(task.user_tools.iter().cloned());
    only.push(EVALUATE.to_owned());
    let mut tags = vec![json!("tau2"), json!(task.domain)];
    if needs_judge(task) {
        tags.push(json!("nl_assertions"));
    }
    let description = description(task);
    Ok(json!({
        "name": scenario_name(&task.domain, &task.id),
        "description": description,
        "tags": tags,
        "tools": [{
            // tau2 and litellm take seconds to import and the airline
            // database to parse, longer on loaded cores: the bridge does
            // it once and forks each trial's server from there.
            // Only a task whose verdict weighs NL assertions calls a judge.
            "mcp": {
                "command": command,
                "forks": true,
                "startup_timeout_ms": BRIDGE_TIMEOUT_MS,
                "judge": needs_judge(task),
            },
            "timeout_ms": BRIDGE_TIMEOUT_MS,
            "only": only,
            "per_trial": true,
            "trial_args": ["--task", task.id],
            // tau2 runs whatever the agent sends: its errors, not a
            // schema check's, go back.
            "validate": false,
        }],
        "messages": [
            {"role": "system", "content": task.agent_system},
            {"role": "assistant", "content": task.greeting},
        ],
        "task": {
            "max_turns": MAX_AGENT_TURNS,
            "reference": reference,
            "reference_answer": reference_answer(task),
            "user": played,
            "final_state": {"probe": {
                "tool": EVALUATE,
                "transcript": "transcript",
                // Full reward; tau2's breakdown beside it, into the log.
                "result": {
                    "reward": {"$gte": 0.999_999},
                    "tau2": {"$present": true, "$example": {}},
                },
                "score": {
                    "reward": "/reward",
                    "components": "/tau2/breakdown",
                    "reason": "/tau2/ended_by",
                    "checks": "/tau2/checks",
                    "judge": "/tau2/judge",
                },
            }},
        },
    }))
}

/// A task toolgauge can play as tau2 does: each gold action is the
/// agent's or the user's, and the user's are its own tools'.
fn check_importable(task: &ExportedTask) -> Result<(), Tau2Error> {
    let refuse = |message: String| Tau2Error::Task {
        id: task.id.clone(),
        message,
    };
    for action in &task.actions {
        match action.requestor.as_str() {
            "assistant" => {}
            "user" if task.user_tools.contains(&action.name) => {}
            "user" => {
                return Err(refuse(format!(
                    "its gold action {:?} is the user's, but not one of the user's tools ({})",
                    action.name,
                    task.user_tools.join(", ")
                )));
            }
            other => {
                return Err(refuse(format!(
                    "its gold action {:?} is made by {other:?}, neither the agent nor the user",
                    action.name
                )));
            }
        }
    }
    Ok(())
}

/// The scenario's description: where the task comes from, how it is
/// judged, and its purpose.
fn description(task: &ExportedTask) -> String {
    let mut text = format!(
        "tau2-bench {} task {} (sierra-research/tau2-bench 1.0.1, MIT), run on tau2's own environment and judged by its evaluator (reward basis: {})",
        task.domain,
        task.id,
        task.reward_basis.join(", ")
    );
    if let Some(purpose) = &task.purpose {
        text.push_str(". Purpose: ");
        text.push_str(purpose);
    }
    text
}

/// The gold actions as reference steps, each after the one before (in
/// order, as tau2 replays them).
fn reference_steps(actions: &[GoldAction]) -> Vec<Value> {
    actions
        .iter()
        .enumerate()
        .map(|(i, action)| {
            let mut step =
                json!({"id": format!("a{i}"), "name": action.name, "arguments": action.arguments});
            if action.requestor == "user" {
                step["by"] = json!("user");
            }
            if i > 0 {
                step["after"] = json!(format!("a{}", i - 1));
            }
            step
        })
        .collect()
}

/// The task's simulated user: tau2's own prompt, played by `user`.
fn user_block(task: &ExportedTask, user: &UserPlay) -> Value {
    let mut played = json!({
        "instructions": task.user_instructions,
        "system": task.user_system,
        "max_turns": MAX_USER_TURNS,
        // tau2 judges a conversation its step bound cut: reward 0.
        "at_max_turns": "judge",
    });
    if !task.user_tools.is_empty() {
        played["tools"] = json!(task.user_tools);
    }
    match user {
        UserPlay::Script => played["script"] = Value::Array(user_script(task)),
        UserPlay::Model(name) => played["model"] = json!(name),
    }
    played
}

/// A mock user's lines: the reason for the call; then, for each run of
/// the user's gold actions in a row (which the mock agent asks for), the
/// calls and a word that they are made; then `###STOP###` after the
/// agent's answer.
fn user_script(task: &ExportedTask) -> Vec<Value> {
    let mut lines = vec![json!(task.user_opening)];
    let mut run: Vec<&GoldAction> = Vec::new();
    let close = |run: &mut Vec<&GoldAction>, lines: &mut Vec<Value>| {
        if run.is_empty() {
            return;
        }
        let calls: Vec<Value> = run
            .iter()
            .map(|a| json!({"name": a.name, "arguments": a.arguments}))
            .collect();
        let names: Vec<&str> = run.iter().map(|a| a.name.as_str()).collect();
        lines.push(json!({ "calls": calls }));
        lines.push(json!(format!("I did that: {}.", names.join(", "))));
        run.clear();
    };
    for action in &task.actions {
        if action.requestor == "user" {
            run.push(action);
        } else {
            close(&mut run, &mut lines);
        }
    }
    close(&mut run, &mut lines);
    lines.push(json!(crate::scenario::user::STOP));
    lines
}

/// Does the verdict weigh NL assertions (which need a judge model)?
fn needs_judge(task: &ExportedTask) -> bool {
    !task.nl_assertions.is_empty() && task.reward_basis.iter().any(|b| b == "NL_ASSERTION")
}

/// What a mock says when the gold actions are done: the information the
/// task requires said, else a plain close.
fn reference_answer(task: &ExportedTask) -> String {
    if task.communicate_info.is_empty() {
        "Done. Is there anything else I can help you with?".to_owned()
    } else {
        task.communicate_info.join(", ")
    }
}

/// What an import wrote.
#[derive(Debug, Default)]
pub struct Imported {
    pub written: usize,
    /// The `mcp` entries written that judge (`"judge": true`), once each:
    /// the servers that may take a judge the user names at run time.
    pub judging: Vec<Value>,
    /// Tasks whose verdict needs an NL judge (not judged yet).
    pub nl_judged: usize,
}

/// Write one scenario file per task of `domain` into `out`, named by the
/// task's id.
pub fn import(
    bridge: &[String],
    domain: &str,
    split: Option<&str>,
    user: &UserPlay,
    out: &Path,
) -> Result<Imported, Tau2Error> {
    let tasks = export(bridge, domain, split)?;
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| Tau2Error::Write { path, source }
    };
    crate::whole_file::make_folder(out).map_err(write_error(out))?;
    let mut imported = Imported::default();
    let mut names = std::collections::HashMap::new();
    for task in &tasks {
        let name = scenario_name(&task.domain, &task.id);
        if let Some(other) = names.insert(name.clone(), task.id.clone()) {
            return Err(Tau2Error::Task {
                id: task.id.clone(),
                message: format!("its scenario name {name:?} is task {other:?}'s too"),
            });
        }
        let scenario = scenario(task, bridge, user)?;
        let path = out.join(format!("{}.json", scenario_name(&task.domain, &task.id)));
        let text = serde_json::to_string_pretty(&scenario).expect("JSON values serialize");
        std::fs::write(&path, text).map_err(write_error(&path))?;
        imported.written += 1;
        imported.nl_judged += usize::from(needs_judge(task));
        let server = &scenario["tools"][0]["mcp"];
        if server["judge"] == true && !imported.judging.contains(server) {
            imported.judging.push(server.clone());
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(actions: Value, communicate: Value) -> ExportedTask {
        serde_json::from_value(json!({
            "id": "7",
            "domain": "airline",
            "agent_system": "<instructions>...</instructions><policy>...</policy>",
            "greeting": "Hi! How can I help you today?",
            "user_system": "guidelines\n<scenario>\nInstructions: cancel\n</scenario>",
            "user_instructions": "Instructions: cancel",
            "user_opening": "You want to cancel reservation ABC123.",
            "tools": ["get_reservation_details", "cancel_reservation"],
            "actions": actions,
            "communicate_info": communicate,
            "reward_basis": ["DB", "COMMUNICATE"],
        }))
        .unwrap()
    }

    #[test]
    fn a_task_becomes_a_conversation_the_user_opens_after_tau2s_greeting() {
        let actions = json!([
            {"name": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}, "requestor": "assistant"},
            {"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}, "requestor": "assistant"}
        ]);
        let bridge = ["python".to_owned(), "bridge.py".to_owned()];
        let scenario =
            scenario(&task(actions, json!(["1628"])), &bridge, &UserPlay::Script).unwrap();
        assert_eq!(scenario["name"], "tau2_airline_7");
        assert_eq!(scenario["messages"][1]["role"], "assistant");
        let tools = &scenario["tools"][0];
        assert_eq!(
            tools["mcp"]["command"],
            json!(["python", "bridge.py", "--domain", "airline"])
        );
        assert_eq!(tools["trial_args"], json!(["--task", "7"]));
        assert_eq!(tools["validate"], false);
        assert_eq!(tools["only"][2], EVALUATE);
        let task = &scenario["task"];
        // The gold actions in order, the second after the first.
        assert_eq!(task["reference"][1]["after"], "a0");
        assert_eq!(task["reference_answer"], "1628");
        assert_eq!(
            task["user"]["system"].as_str().unwrap().lines().next(),
            Some("guidelines")
        );
        assert_eq!(task["user"]["script"][1], crate::scenario::user::STOP);
        assert_eq!(task["final_state"]["probe"]["transcript"], "transcript");

        let live = super::scenario(
            &super::tests::task(json!([]), json!([])),
            &bridge,
            &UserPlay::Model("user".into()),
        )
        .unwrap();
        assert_eq!(live["task"]["user"]["model"], "user");
        assert!(live["task"]["user"].get("script").is_none());
    }

    #[test]
    fn a_users_gold_action_on_a_tool_it_does_not_hold_is_refused_saying_why() {
        let actions =
            json!([{"name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}]);
        let error = scenario(&task(actions, json!([])), &["b".into()], &UserPlay::Script)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not one of the user's tools"), "{error}");
        let error = export(&["b".into()], "banking", None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("airline, retail, telecom"), "{error}");
    }

    #[test]
    fn a_telecom_task_gives_the_user_its_tools_and_the_mock_user_its_gold_calls_in_turn() {
        let mut task = task(
            json!([
                {"name": "get_customer_by_phone", "arguments": {"phone_number": "555"}, "requestor": "assistant"},
                {"name": "toggle_roaming", "arguments": {}, "requestor": "user"},
                {"name": "reboot_device", "arguments": {}, "requestor": "user"},
                {"name": "enable_roaming", "arguments": {"line_id": "L1"}, "requestor": "assistant"}
            ]),
            json!([]),
        );
        task.user_tools = vec!["toggle_roaming".into(), "reboot_device".into()];
        let scenario = scenario(&task, &["b".into()], &UserPlay::Script).unwrap();
        let user = &scenario["task"]["user"];
        assert_eq!(user["tools"], json!(["toggle_roaming", "reboot_device"]));
        // The user's two actions in a row are one line of calls, asked
        // for once; then its word, and its stop after the agent's answer.
        assert_eq!(
            user["script"],
            json!([
                "You want to cancel reservation ABC123.",
                {"calls": [
                    {"name": "toggle_roaming", "arguments": {}},
                    {"name": "reboot_device", "arguments": {}}
                ]},
                "I did that: toggle_roaming, reboot_device.",
                crate::scenario::user::STOP
            ])
        );
        let reference = &scenario["task"]["reference"];
        assert_eq!(reference[1]["by"], "user");
        assert!(reference[0].get("by").is_none());
        assert_eq!(scenario["tools"][0]["only"][3], "reboot_device");
    }
}
