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
/// the reward, breakdown and database check tau2 recorded (tau2's own
/// check finds a mismatch on one gold run: so does toolgauge's).
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

/// A live agent and a live user on one server, for a telecom task: told
/// apart by the tools they are given (the user's phone's, or the
/// agent's). The user opens, is asked to turn roaming on, and turns
/// airplane mode on instead with its own tool; tau2's verdict fails the
/// trial, and report.html shows it.
struct LiveTelecom {
    agent: std::sync::Mutex<usize>,
    user: std::sync::Mutex<usize>,
    problems: std::sync::Mutex<Vec<String>>,
}

impl wiremock::Respond for LiveTelecom {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let names: Vec<&str> = body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        use crate::conversation::{call_with_id as call, completion, says};
        let message = if names.contains(&"toggle_roaming") {
            if names.contains(&"get_customer_by_phone") || names.contains(&"tau2_evaluate") {
                self.problems
                    .lock()
                    .unwrap()
                    .push(format!("the user was given {names:?}"));
            }
            let mut user = self.user.lock().unwrap();
            *user += 1;
            match *user {
                1 => says("My mobile data does not work. I am John Smith, 555-123-2002, abroad."),
                2 => call("u1", "toggle_airplane_mode", serde_json::json!({})),
                3 => says("Done, I toggled it."),
                _ => says("###STOP###"),
            }
        } else {
            if names
                .iter()
                .any(|n| n.starts_with("toggle_") || *n == "tau2_evaluate")
            {
                self.problems
                    .lock()
                    .unwrap()
                    .push(format!("the agent was given {names:?}"));
            }
            let mut agent = self.agent.lock().unwrap();
            *agent += 1;
            match *agent {
                1 => call(
                    "a1",
                    "get_customer_by_phone",
                    serde_json::json!({"phone_number": "555-123-2002"}),
                ),
                2 => says("Please turn data roaming on, on your phone."),
                _ => says("Thanks, you are all set."),
            }
        };
        completion(message)
    }
}

#[tokio::test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
async fn a_live_user_acts_on_its_phone_apart_from_the_agent_in_the_log_and_the_report() {
    let python = bridge_python(
        "a_live_user_acts_on_its_phone_apart_from_the_agent_in_the_log_and_the_report",
    );
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("imported");
    crate::tau2::import_split(&python, "telecom", Some("small"), &imported);
    let name = "tau2_telecom_mobile_data_issue_user_abroad_roaming_enabled_off_PERSONA_None";
    let mut scenario: Value =
        serde_json::from_slice(&std::fs::read(imported.join(format!("{name}.json"))).unwrap())
            .unwrap();
    let played = scenario["task"]["user"].as_object_mut().unwrap();
    played.remove("script");
    played.insert("model".into(), "john".into());
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("live.json"), scenario.to_string()).unwrap();

    let server = wiremock::MockServer::start().await;
    let responder = std::sync::Arc::new(LiveTelecom {
        agent: Default::default(),
        user: Default::default(),
        problems: Default::default(),
    });
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ArcResponder(responder.clone()))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let agent = crate::live::model_file(dir.path(), "openai", &base, serde_json::json!({}));
    let users = dir.path().join("users");
    std::fs::create_dir_all(&users).unwrap();
    let user = crate::live::model_file(&users, "openai", &base, serde_json::json!({}));
    let mut file: Value = serde_json::from_slice(&std::fs::read(&user).unwrap()).unwrap();
    file["name"] = "john".into();
    std::fs::write(&user, file.to_string()).unwrap();
    let out = dir.path().join("out");
    let args = [
        "run",
        suite.to_str().unwrap(),
        "--models",
        agent.to_str().unwrap(),
        "--user-model",
        user.to_str().unwrap(),
        "--trials",
        "1",
        "--min-success",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    let args = args.iter().map(|a| (*a).to_owned()).collect();
    let output = crate::live::toolgauge(args, Some(crate::live::KEY)).await;
    let stderr = crate::live::stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("lost"), "{stderr}");
    assert_eq!(*responder.problems.lock().unwrap(), Vec::<String>::new());
    let log = log(&out);
    let calls: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            (
                e["who"].as_str().unwrap_or("model"),
                e["tool"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("model", "get_customer_by_phone"),
            ("simulated_user", "toggle_airplane_mode")
        ]
    );
    // tau2's verdict saw the user's act: airplane mode on, no data.
    let probe = log.iter().find(|e| e["type"] == "probe").unwrap();
    assert_eq!(probe["result"]["reward"], 0.0, "{probe}");
    let airplane = log
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "toggle_airplane_mode")
        .unwrap();
    assert!(
        airplane["content"]
            .as_str()
            .unwrap()
            .contains("Airplane Mode"),
        "{airplane}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("the user called toggle_airplane_mode"),
        "{page}"
    );
    assert!(page.contains("trial 0: 1 call(s)"), "{page}");
}

/// A responder shared with the test, which reads what it saw.
struct ArcResponder(std::sync::Arc<LiveTelecom>);

impl wiremock::Respond for ArcResponder {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        self.0.respond(request)
    }
}
