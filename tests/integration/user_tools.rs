//! A simulated user with tools of its own (`task.user.tools`, as tau2's
//! telecom user acts on their own phone): its calls run through the
//! pipeline, are recorded as the user's and never counted as the model's;
//! the agent is never shown the user's tools, and its call to one is a
//! call to an unknown tool.

use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::conversation::{call_with_id, completion, says, scripted_run};
use crate::live::{KEY, model_file, rows, stderr, toolgauge};

const USER_TOOLS: &str = "scenarios/agent/conversation_user_tools.json";

fn log(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tool calls of trial 0 in the log: (who, tool).
fn calls_of_trial_0(log: &[Value]) -> Vec<(String, String)> {
    log.iter()
        .filter(|e| e["trial"] == 0 && e["type"] == "tool_call")
        .map(|e| {
            let who = e["who"].as_str().unwrap_or("model").to_owned();
            (who, e["tool"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn a_scripted_user_makes_its_own_calls_through_the_pipeline_recorded_as_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(USER_TOOLS, 2, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = log(&out);
    assert_eq!(
        calls_of_trial_0(&log),
        [
            ("model".to_owned(), "get_line".to_owned()),
            ("simulated_user".to_owned(), "toggle_roaming".to_owned()),
            ("simulated_user".to_owned(), "run_speed_test".to_owned()),
        ]
    );
    // The user's results are the tools' own, recorded as the user's.
    let speed = log
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "run_speed_test")
        .unwrap();
    assert_eq!(speed["who"], "simulated_user");
    assert!(speed["content"].as_str().unwrap().contains("excellent"));
    // The model's calls alone are the model's: one per trial.
    let rows = rows(&out);
    assert_eq!(rows.iter().map(|r| r.calls).sum::<u32>(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r.trial_success));
}

#[test]
fn every_entry_of_a_conversation_the_user_opens_carries_its_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(USER_TOOLS, 1, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = log(&out);
    let opening = &log[0];
    assert_eq!(opening["type"], "user_message", "{opening}");
    for entry in &log {
        assert_eq!(entry["scenario"], "conversation_user_tools", "{entry}");
        assert!(entry["attempt"].as_u64() >= Some(1), "{entry}");
    }
}

#[test]
fn a_users_call_its_tools_schema_refuses_goes_back_to_it_never_the_agents_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(USER_TOOLS).unwrap()).unwrap();
    scenario["task"]["user"]["script"][1]["calls"][0]["arguments"] = json!({"on": "yes"});
    let path = dir.path().join("refused.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(path.to_str().unwrap(), 1, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let refused = log(&out)
        .into_iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "toggle_roaming")
        .unwrap();
    assert_eq!(refused["who"], "simulated_user");
    assert_eq!(refused["isError"], true, "{refused}");
    // Not the model's: no schema error, no failure of its.
    let rows = rows(&out);
    assert!(
        rows.iter()
            .all(|r| r.schema_errors == 0 && r.failures.is_empty()),
        "{rows:?}"
    );
}

#[test]
fn a_users_script_may_call_only_the_tools_it_holds_and_the_agents_steps_are_not_its() {
    let base: Value = serde_json::from_str(&std::fs::read_to_string(USER_TOOLS).unwrap()).unwrap();
    let mut calls_agents_tool = base.clone();
    calls_agents_tool["task"]["user"]["script"][1]["calls"][0]["name"] = json!("get_line");
    let mut unknown = base.clone();
    unknown["task"]["user"]["tools"][1] = json!("reboot");
    let mut step_not_marked = base.clone();
    step_not_marked["task"]["reference"][1]
        .as_object_mut()
        .unwrap()
        .remove("by");
    let mut milestone_on_users_tool = base;
    milestone_on_users_tool["task"]["milestones"][0]["name"] = json!("toggle_roaming");
    milestone_on_users_tool["task"]["milestones"][0]["arguments"] = json!({"on": true});
    let cases = [
        (
            calls_agents_tool,
            "/task/user/script/1/calls/0/name",
            "not one of the user's tools",
        ),
        (unknown, "/task/user/tools/1", "no tool named \"reboot\""),
        (
            step_not_marked,
            "/task/reference/1/name",
            "say \"by\": \"user\"",
        ),
        (
            milestone_on_users_tool,
            "/task/milestones/0/name",
            "never the agent's",
        ),
    ];
    for (scenario, at, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, scenario.to_string()).unwrap();
        let out = dir.path().join("out");
        let output = crate::toolgauge(&[
            "run",
            path.to_str().unwrap(),
            "--trials",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{error}");
        assert!(
            error.contains(at) && error.contains(says),
            "{at} {says}: {error}"
        );
    }
}

/// The agent and the user, each a live model on one server, told apart by
/// their system prompts. The agent looks up the line, tries the user's
/// tool (unknown to it), asks the user, and closes without the words the
/// answer check wants (so the trial fails and report.html shows it). The
/// user answers the greeting, calls its tool, reads the result, says so,
/// and stops.
struct AgentAndUserWithTools {
    agent: Mutex<usize>,
    user: Mutex<usize>,
}

fn names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

impl Respond for AgentAndUserWithTools {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("You are playing a user") {
            assert_eq!(names(&body), ["toggle_roaming", "run_speed_test"], "{body}");
            let mut user = self.user.lock().unwrap();
            *user += 1;
            return completion(match *user {
                1 => says("My data does not work abroad. My number is 555-123-2002."),
                2 => call_with_id("u1", "toggle_roaming", json!({"on": true})),
                _ if *user == 3 => {
                    // Its own call's result came back to it, in its format.
                    let last = body["messages"].as_array().unwrap().last().unwrap();
                    assert_eq!(last["role"], "tool", "{body}");
                    assert_eq!(last["tool_call_id"], "u1", "{body}");
                    assert!(
                        last["content"]
                            .as_str()
                            .unwrap()
                            .contains("\"roaming\":true")
                    );
                    says("Done, roaming is turned on.")
                }
                _ => says("###STOP###"),
            });
        }
        // The agent never sees the user's tools, nor the user's calls.
        assert_eq!(names(&body), ["get_line"], "{body}");
        assert!(!body.to_string().contains("\"u1\""), "{body}");
        let mut agent = self.agent.lock().unwrap();
        *agent += 1;
        completion(match *agent {
            1 => call_with_id("a1", "get_line", json!({"phone_number": "555-123-2002"})),
            2 => call_with_id("a2", "toggle_roaming", json!({"on": true})),
            3 => says("Please turn data roaming on, on your phone."),
            _ => says("Glad it works."),
        })
    }
}

#[tokio::test]
async fn a_live_user_calls_its_own_tools_and_the_agent_never_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(AgentAndUserWithTools {
            agent: Mutex::new(0),
            user: Mutex::new(0),
        })
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let agent = model_file(dir.path(), "openai", &base, json!({}));
    let user_dir = dir.path().join("users");
    std::fs::create_dir_all(&user_dir).unwrap();
    let user = model_file(&user_dir, "openai", &base, json!({}));
    let mut user_file: Value =
        serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    user_file["name"] = json!("john");
    std::fs::write(&user, user_file.to_string()).unwrap();
    let mut scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(USER_TOOLS).unwrap()).unwrap();
    let played = scenario["task"]["user"].as_object_mut().unwrap();
    played.remove("script");
    played.insert("model".into(), json!("john"));
    let path = dir.path().join("live.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let args = [
        "run",
        path.to_str().unwrap(),
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
    let output = toolgauge(args.iter().map(|a| (*a).to_owned()).collect(), Some(KEY)).await;
    // The agent closed without the words the check wants: a failed check.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let log = log(&out);
    assert_eq!(
        calls_of_trial_0(&log),
        [
            ("model".to_owned(), "get_line".to_owned()),
            ("model".to_owned(), "toggle_roaming".to_owned()),
            ("simulated_user".to_owned(), "toggle_roaming".to_owned()),
        ]
    );
    // The agent's call to the user's tool is a call to an unknown tool.
    let agents = log
        .iter()
        .find(|e| e["type"] == "tool_result" && e["callId"] == "a2")
        .unwrap();
    assert_eq!(agents["errorKind"], "unknown_tool", "{agents}");
    let rows = rows(&out);
    assert_eq!(rows.iter().map(|r| r.calls).sum::<u32>(), 2, "{rows:?}");
    // The user's request that called its tool is the user's spend.
    assert_eq!(
        rows.iter().map(|r| r.user_input_tokens).sum::<u64>(),
        4 * 30
    );
    // report.html shows the failed trial with the user's call apart.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("the user called toggle_roaming"), "{page}");
    assert!(page.contains("class=\"turn call user\""), "{page}");
    assert!(page.contains("trial 0: 2 call(s)"), "{page}");
}
