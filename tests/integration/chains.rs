//! Scenarios that run `after` others, on the test MCP server whose
//! counter a trial leaves in a file of its chain's folder
//! (`--counter-file {chain_dir}/counter`), and `task.system_from`, the
//! opening system message a call gives.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::conversation::completion;
use crate::live::{KEY, base_url, model_file, run_args, toolgauge as live_toolgauge};
use crate::{assert_success, toolgauge};

/// The test server's counter, each trial's own server started on the
/// counter its chain left.
fn counter_tools() -> Value {
    json!([{
        "mcp": {"command": [crate::mcp::test_server()]},
        "only": ["counter_increment", "counter_get", "lenient_echo"],
        "per_trial": true,
        "trial_args": ["--counter-file", "{chain_dir}/counter"],
    }])
}

/// A scenario that adds `by` to the counter (the scripted mock's
/// reference), then must find it at `expected`, after `after`.
fn counting(name: &str, after: &[&str], by: i64, expected: i64) -> Value {
    json!({
        "name": name,
        "after": after,
        "tools": counter_tools(),
        "prompt": "Count.",
        "task": {
            "reference": [{"name": "counter_increment", "arguments": {"by": by}}],
            "final_state": {"probe": {"tool": "counter_get", "result": expected}},
        },
    })
}

fn write(dir: &Path, file: &str, scenario: &Value) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

fn run(suite: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    toolgauge(&args)
}

#[test]
fn a_scenario_after_another_starts_from_what_that_trial_left_and_each_trial_number_has_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    // Files sort the later scenarios first: the run must reorder them.
    write(
        &suite,
        "a_third.json",
        &counting("third", &["second"], 5, 8),
    );
    write(
        &suite,
        "b_second.json",
        &counting("second", &["first"], 1, 3),
    );
    write(&suite, "c_first.json", &counting("first", &[], 2, 2));
    write(&suite, "d_alone.json", &counting("alone", &[], 4, 4));
    let out = dir.path().join("out");
    // Chains shared between trial numbers or with "alone" would count
    // more; a chain out of order, less.
    let output = run(
        &suite,
        &out,
        &["--trials", "3", "--concurrency", "8", "--min-success", "1"],
    );
    assert_success(&output);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    for name in ["first", "second", "third", "alone"] {
        assert!(summary.contains(name), "{summary}");
    }
}

#[test]
fn a_trial_after_a_lost_one_is_lost_too_and_charged_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let mut first = counting("first", &[], 2, 2);
    // The opening call fails (its arguments are refused): the tool's doing.
    first["task"]["system_from"] = json!({"tool": "counter_increment", "arguments": {"by": 0}});
    write(&suite, "first.json", &first);
    write(&suite, "second.json", &counting("second", &["first"], 1, 3));
    let out = dir.path().join("out");
    let output = run(&suite, &out, &["--trials", "1"]);
    assert_eq!(output.status.code(), Some(1), "a run that lost trials");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("second trial 0: lost")
            && stderr.contains("the trial it runs after (first) was lost"),
        "{stderr}"
    );
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let failures: Vec<String> = reader
        .deserialize::<toolgauge::report::TrialRow>()
        .map(Result::unwrap)
        .map(|r| r.failures.into_owned())
        .collect();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures.iter().all(|f| f.contains("tool_unavailable")),
        "both charged to the tool: {failures:?}"
    );
}

#[test]
fn after_must_name_a_scenario_of_the_run_and_make_no_loop() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    write(&suite, "second.json", &counting("second", &["first"], 1, 3));
    let output = run(&suite, &dir.path().join("out"), &["--trials", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("second.json")
            && stderr.contains("\"after\" names the scenario \"first\", which is not in this run"),
        "{stderr}"
    );
    write(&suite, "first.json", &counting("first", &["second"], 2, 2));
    let output = run(&suite, &dir.path().join("out2"), &["--trials", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"after\" makes a loop"), "{stderr}");
}

/// A Chat server that answers in words and keeps every request's body.
struct Answering(Arc<Mutex<Vec<Value>>>);

impl Respond for Answering {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        self.0.lock().unwrap().push(body);
        completion(json!({"role": "assistant", "content": "Done."}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_system_message_is_what_system_from_gives_in_place_of_the_scenarios() {
    let server = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(Answering(seen.clone()))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({
        "name": "opened",
        "tools": counter_tools(),
        "messages": [
            {"role": "system", "content": "the scenario's own"},
            {"role": "user", "content": "Hello."}
        ],
        "task": {
            "system_from": {"tool": "lenient_echo", "arguments": {"text": "remembered: 7"}},
            "answer": {"$regex": "Done", "$example": "Done."},
        },
    });
    let path = write(dir.path(), "opened.json", &scenario);
    let model = model_file(
        dir.path(),
        "openai",
        &base_url("openai", &server),
        json!({}),
    );
    let out = dir.path().join("out");
    let output = live_toolgauge(run_args(&path, &model, &out, &[]), Some(KEY)).await;
    assert_success(&output);
    let seen = seen.lock().unwrap();
    let messages = &seen[0]["messages"];
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "{\"text\":\"remembered: 7\"}"})
    );
    assert_eq!(messages[1]["content"], "Hello.");
    assert_eq!(messages.as_array().unwrap().len(), 2, "{messages}");
    // The tool that opened it is never the model's.
    let tools: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(!tools.contains(&"lenient_echo"), "{tools:?}");
}
