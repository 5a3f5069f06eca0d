//! tau2's telecom domain through the bridge: the user acts on their own
//! phone with tools of their own (`task.user.tools`), the agent guides
//! them, and tau2's evaluator checks the user's device. Telecom's tasks
//! are made by tau2's own generator (scripts/tau2_bridge/telecom_data.py).
//! Needs $TOOLGAUGE_TAU2_PYTHON, as tests/integration/tau2.rs.

use std::path::Path;

use serde_json::Value;

use crate::tau2::bridge_python;
use crate::{assert_success, toolgauge};

fn log(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn telecoms_tasks_are_tau2s_generators_and_hold_every_id_of_its_splits() {
    let python =
        bridge_python("telecoms_tasks_are_tau2s_generators_and_hold_every_id_of_its_splits");
    let output = std::process::Command::new(&python)
        .arg("scripts/tau2_bridge/telecom_data.py")
        .output()
        .unwrap();
    assert_success(&output);
    let made: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(made["generator"], "tau2.domains.telecom.tasks.create_tasks");
    assert_eq!(made["seed"], 42);
    // split_tasks.json's own counts, each id made by the generator (the
    // script fails otherwise), and base's 114 inside its own sample.
    assert_eq!(made["splits"]["small"], 20);
    assert_eq!(made["splits"]["base"], 114);
    assert_eq!(made["splits"]["full"], 2285);
    assert_eq!(made["base_in_generator_sample"], 114);
    assert_eq!(made["kept"], 2285);
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn the_scripted_mock_plays_agent_and_user_and_passes_every_small_telecom_task() {
    let python =
        bridge_python("the_scripted_mock_plays_agent_and_user_and_passes_every_small_telecom_task");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    crate::tau2::import_split(&python, "telecom", Some("small"), &suite);
    assert_eq!(std::fs::read_dir(&suite).unwrap().count(), 20);
    // And one task again with the user's acts left undone.
    let task = "tau2_telecom_service_issue_overdue_bill_suspension_PERSONA_Easy";
    let mut undone: Value =
        serde_json::from_slice(&std::fs::read(suite.join(format!("{task}.json"))).unwrap())
            .unwrap();
    undone["name"] = format!("{task}_undone").into();
    let script = undone["task"]["user"]["script"].as_array_mut().unwrap();
    script.retain(|line| line.is_string());
    std::fs::write(suite.join("undone.json"), undone.to_string()).unwrap();

    let out = dir.path().join("out");
    let suite = suite.to_str().unwrap();
    let scripted = "scenarios/models/scripted.json";
    let output = toolgauge(&[
        "run",
        suite,
        "--models",
        scripted,
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("lost"), "{stderr}");
    let log = log(&out);
    let verdicts: Vec<(&str, f64)> = log
        .iter()
        .filter(|e| e["type"] == "probe")
        .map(|e| {
            let reward = e["result"]["reward"].as_f64().unwrap();
            (e["scenario"].as_str().unwrap(), reward)
        })
        .collect();
    assert_eq!(verdicts.len(), 21, "{verdicts:?}");
    for (scenario, reward) in &verdicts {
        let expected = if scenario.ends_with("_undone") {
            0.0
        } else {
            1.0
        };
        assert_eq!(*reward, expected, "{scenario}: {verdicts:?}");
    }
    // The user's calls are the user's: in the log as theirs, never the
    // agent's; the agent is never given the user's tools.
    let users: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "tool_call" && e["scenario"] == task)
        .filter(|e| e["who"] == "simulated_user")
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["make_payment", "reboot_device"], "{log:?}");
    let scenario: Value = serde_json::from_slice(
        &std::fs::read(Path::new(suite).join(format!("{task}.json"))).unwrap(),
    )
    .unwrap();
    assert!(scenario["task"]["user"]["tools"].as_array().unwrap().len() > 20);
    let rows = crate::live::rows(&out);
    let calls: u32 = rows
        .iter()
        .filter(|r| r.scenario == task)
        .map(|r| r.calls)
        .sum();
    assert_eq!(calls, 2, "send_payment_request and resume_line: {rows:?}");
}

/// tau2's own runs of telecom tasks, made by tau2's orchestrator with the
/// gold played by both sides (tests/tau2_oracle/orchestrated.py), the
/// user's last act left undone in one of each pair: replayed through
/// toolgauge, the user's recorded calls on the user's tools, each gets
/// the reward and breakdown tau2 recorded.
#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn toolgauge_gives_tau2s_verdict_on_tau2s_orchestrated_telecom_runs() {
    let python = bridge_python("toolgauge_gives_tau2s_verdict_on_tau2s_orchestrated_telecom_runs");
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("orchestrated.json");
    let output = std::process::Command::new(&python)
        .args([
            "tests/tau2_oracle/orchestrated.py",
            results.to_str().unwrap(),
        ])
        .args(["--tasks", "6"])
        .output()
        .unwrap();
    assert_success(&output);
    let compared = crate::tau2::replayed_file(
        &python,
        ("telecom", Some("small")),
        &results,
        &[],
        dir.path(),
    );
    assert_eq!(compared.len(), 12, "{compared:?}");
    let failed = compared
        .iter()
        .filter(|(_, tau2, _)| tau2["reward"] == 0.0)
        .count();
    assert_eq!(
        failed, 6,
        "each task's run with an act left undone fails: {compared:?}"
    );
    let disagreements: Vec<String> = compared
        .iter()
        .filter(|(_, tau2, ours)| tau2 != ours)
        .map(|(id, tau2, ours)| format!("{id}: tau2 {tau2}, toolgauge {ours}"))
        .collect();
    assert_eq!(disagreements, Vec::<String>::new());
}
