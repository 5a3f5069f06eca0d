//! What a server asks of toolgauge, and in which protocol revision they
//! talk: elicitations and samplings answered as the scenario scripted,
//! and a server that speaks an older revision spoken to in it.

use serde_json::{Value, json};

use crate::conversation::{mcp_test_server, scripted_run};
use crate::csv_rows;
use crate::live::stderr;

/// A suite of one scenario that calls `tool` of the test server started
/// with `args`, its `answers` given.
fn run_one(
    tool: &str,
    arguments: Value,
    args: &[&str],
    answers: Value,
) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = vec![mcp_test_server().to_str().unwrap().to_owned()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let scenario = json!({
        "name": "asks",
        "tools": [{"mcp": {"command": command, "answers": answers}, "only": [tool], "per_trial": true}],
        "prompt": "Go on.",
        "expect": {"calls": [{"name": tool, "arguments": arguments}]}
    });
    let path = dir.path().join("asks.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let output = scripted_run(path.to_str().unwrap(), 2, &dir.path().join("out"));
    (dir, output)
}

/// What the tool answered in each call, from session.jsonl.
fn tool_outputs(dir: &tempfile::TempDir) -> Vec<String> {
    let outputs: Vec<String> = std::fs::read_to_string(dir.path().join("out/session.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "tool_result")
        .filter_map(|r| r["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(outputs.len(), 2, "a result per trial: {outputs:?}");
    outputs
}

fn source(dir: &tempfile::TempDir) -> std::collections::BTreeMap<String, String> {
    csv_rows(&dir.path().join("out/tool_sources.csv")).remove(0)
}

#[test]
fn an_elicitation_is_answered_as_scripted_with_the_schemas_defaults_filled_in() {
    let answers = json!({"elicitation": [
        {"action": "accept", "content": {"name": "Ada"}},
        {"action": "decline"}
    ]});
    let (dir, output) = run_one("greet", json!({}), &["--asks"], answers);
    assert!(output.status.success(), "{}", stderr(&output));
    // Each trial's own server asks once: accepted, "greeting" from the
    // schema's default.
    let outputs = tool_outputs(&dir);
    assert_eq!(outputs, ["Hello, Ada!", "Hello, Ada!"]);
    assert_eq!(source(&dir)["elicitations"], "2");
}

#[test]
fn a_server_that_asks_unscripted_is_declined_and_counted() {
    let (dir, output) = run_one("greet", json!({}), &["--asks"], json!({}));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(tool_outputs(&dir).iter().all(|o| o.contains("declined")));
    assert_eq!(source(&dir)["elicitations"], "2");
}

#[test]
fn a_sampling_is_answered_with_the_scripted_text() {
    let answers = json!({"sampling": [{"text": "A short story.", "model": "m1"}]});
    let (dir, output) = run_one(
        "summarize",
        json!({"text": "Once upon a time"}),
        &["--asks"],
        answers,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let outputs = tool_outputs(&dir);
    assert!(
        outputs.iter().all(|o| o.contains("A short story. (by m1)")),
        "{outputs:?}"
    );
    assert_eq!(source(&dir)["samplings"], "2");
}

#[test]
fn a_server_that_speaks_an_older_revision_is_spoken_to_in_it() {
    let (dir, output) = run_one(
        "add",
        json!({"a": 1, "b": 2}),
        &["--protocol", "2024-11-05"],
        json!({}),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(source(&dir)["protocol"], "2024-11-05");
    let (dir, output) = run_one("add", json!({"a": 1, "b": 2}), &[], json!({}));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        source(&dir)["protocol"],
        "2025-11-25",
        "the revision offered"
    );
}

#[test]
fn a_server_that_answers_a_revision_toolgauge_does_not_speak_is_refused_naming_it() {
    let (_dir, output) = run_one(
        "add",
        json!({"a": 1, "b": 2}),
        &["--protocol", "2025-12-31"],
        json!({}),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("protocol revision 2025-12-31, which toolgauge does not speak (it speaks 2024-11-05 to 2025-11-25"),
        "{err}"
    );
}

#[test]
fn a_scenarios_answers_are_checked_when_the_suite_loads() {
    let answers = json!({"elicitation": [{"action": "maybe"}]});
    let (_dir, output) = run_one("greet", json!({}), &["--asks"], answers);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("maybe"), "{}", stderr(&output));
}
