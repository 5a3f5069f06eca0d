//! A server's prompts and resources in a scenario, against the reference
//! server (server-everything): a prompt's messages as the opening, and
//! its resources as a tool the model reads and a probe checks.

use serde_json::{Value, json};

use crate::live::stderr;

const FEATURES: &str = "demo://resource/static/document/features.md";

fn everything(test: &str) -> Value {
    match crate::mcp::server_everything() {
        Ok(script) => json!(["node", script.to_str().unwrap(), "stdio"]),
        Err(why) => panic!("missing: {test}: {why}"),
    }
}

#[test]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
fn a_servers_prompt_opens_the_scenario() {
    let command = everything("a_servers_prompt_opens_the_scenario");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opening.json");
    let scenario = json!({
        "name": "opening",
        "tools": [{"mcp": {"command": command}, "only": ["echo"], "read": ["echo"],
                   "opening": {"prompt": "args-prompt", "arguments": {"city": "Paris", "state": "Texas"}}}],
        "expect": {"no_call": true}
    });
    std::fs::write(&path, scenario.to_string()).unwrap();
    let servers = toolgauge::tool::mcp::ToolServers::new();
    let loaded = toolgauge::scenario::load_scenario(&path, dir.path(), &servers).unwrap();
    assert_eq!(
        loaded.prompt,
        [json!({"role": "user", "content": "What's weather in Paris, Texas?"})]
    );

    // A prompt the server does not have: named, at the entry.
    let mut unknown = scenario.clone();
    unknown["tools"][0]["opening"]["prompt"] = json!("no-such-prompt");
    std::fs::write(&path, unknown.to_string()).unwrap();
    let error = toolgauge::scenario::load_scenario(&path, dir.path(), &servers)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("/tools/0/opening") && error.contains("prompts/get failed"),
        "{error}"
    );
}

#[test]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
fn a_servers_resources_are_a_tool_the_model_reads_and_a_probe_checks() {
    let command = everything("a_servers_resources_are_a_tool_the_model_reads_and_a_probe_checks");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resources.json");
    let scenario = json!({
        "name": "resources",
        "tools": [
            {"mcp": {"command": command}, "only": [], "resources": "read_resource"},
            // The same server: a probe's tool is never the model's.
            {"mcp": {"command": command}, "only": [], "resources": "check_resource"}
        ],
        "prompt": "What does the server's features document say?",
        "task": {
            "max_turns": 3,
            "milestones": [{"name": "read_resource", "arguments": {"uri": FEATURES}}],
            "final_state": {"probe": {
                "tool": "check_resource",
                "arguments": {"uri": FEATURES},
                "result": {"$contains": "# Everything Server"}
            }}
        }
    });
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = crate::conversation::scripted_run(path.to_str().unwrap(), 1, &out);
    assert!(output.status.success(), "{}", stderr(&output));
    let session: Vec<Value> = std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let read = session
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "read_resource")
        .expect("the model's read");
    assert!(
        read["content"]
            .as_str()
            .unwrap()
            .starts_with("# Everything Server"),
        "{read}"
    );
    let probe = session
        .iter()
        .find(|e| e["type"] == "probe")
        .expect("the probe");
    assert_eq!(probe["passed"], true, "{probe}");
}
