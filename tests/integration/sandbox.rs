//! Path traversal through the whole pipeline: blocked calls become
//! `sandbox` errors and nothing outside the sandbox is read or written.

use std::sync::Arc;

use serde_json::json;
use toolgauge::call::{ErrorKind, ParsedCall, ToolCall};
use toolgauge::pipeline::{ExecOptions, Pipeline};
use toolgauge::tool::{Registry, Sandbox, ToolEnv};

fn call(id: usize, name: &str, arguments: serde_json::Value) -> ParsedCall {
    ParsedCall::Ok(ToolCall {
        id: format!("c{id}"),
        name: name.into(),
        arguments: arguments.try_into().expect("an object"),
    })
}

#[tokio::test]
async fn traversal_attempts_are_blocked_and_touch_nothing_outside() {
    let outer = tempfile::tempdir().unwrap();
    let inside = outer.path().join("sandbox");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(outer.path().join("secret.txt"), "top secret").unwrap();
    std::fs::write(inside.join("notes.txt"), "fine").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outer.path(), inside.join("door")).unwrap();

    let env = ToolEnv {
        sandbox: Some(Sandbox::new(&inside).unwrap()),
        ..ToolEnv::default()
    };
    let registry = Registry::builtins(&["read_file", "write_file", "list_dir"], env).unwrap();
    let pipeline = Pipeline::new(Arc::new(registry), ExecOptions::default());

    let secret = outer.path().join("secret.txt").display().to_string();
    let attempts = [
        "../secret.txt",
        "a/../../secret.txt",
        secret.as_str(),
        "..\\secret.txt",
        "notes.txt\u{0}../../secret.txt",
        "door/secret.txt",
    ];
    let mut calls = Vec::new();
    for path in attempts {
        calls.push(call(calls.len(), "read_file", json!({"path": path})));
        calls.push(call(
            calls.len(),
            "write_file",
            json!({"path": path, "content": "pwned"}),
        ));
    }
    calls.push(call(
        calls.len(),
        "write_file",
        json!({"path": "door/new.txt", "content": "pwned"}),
    ));
    calls.push(call(calls.len(), "list_dir", json!({"path": ".."})));
    calls.push(call(calls.len(), "read_file", json!({"path": "notes.txt"})));

    let batch = pipeline.run(&calls).await;
    let (last, blocked) = batch.results.split_last().unwrap();
    for (result, call) in blocked.iter().zip(&calls) {
        assert_eq!(
            result.error_kind,
            Some(ErrorKind::Sandbox),
            "{call:?} -> {}",
            result.content
        );
        assert!(
            result.content.contains("path blocked"),
            "{}",
            result.content
        );
    }
    assert_eq!(last.content, "fine");
    assert_eq!(
        std::fs::read_to_string(outer.path().join("secret.txt")).unwrap(),
        "top secret"
    );
    assert!(!outer.path().join("new.txt").exists());
    let mut outside: Vec<String> = std::fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside.sort();
    assert_eq!(outside, ["sandbox", "secret.txt"]);
}

/// Every field of a scenario file that names a path, with the scenario
/// that names it there: each escape is a load error at that field.
#[test]
fn every_path_a_scenario_names_is_refused_when_it_leaves_the_sandbox() {
    let escapes = [
        "/etc/hostname",
        "../../../../etc/hostname",
        "a/../../etc/hostname",
    ];
    for escape in escapes {
        let fields: [(&str, serde_json::Value); 3] = [
            (
                "/files",
                json!({"name": "s", "tools": ["read_file"], "prompt": "p",
                       "files": {escape: "x"}, "expect": {"no_call": true}}),
            ),
            (
                "/task/final_state/files",
                json!({"name": "s", "tools": ["read_file"], "prompt": "p",
                       "files": {"notes.txt": "x"},
                       "task": {"final_state": {"files": {escape: {"$contains": "localhost"}}}}}),
            ),
            (
                "/tools/0/mcp/cwd",
                json!({"name": "s", "tools": [{"mcp": {"command": ["true"], "cwd": escape}}],
                       "prompt": "p", "expect": {"no_call": true}}),
            ),
        ];
        for (field, scenario) in fields {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.json");
            std::fs::write(&path, scenario.to_string()).unwrap();
            let error = toolgauge::scenario::load_scenario(
                &path,
                dir.path(),
                &toolgauge::tool::mcp::ToolServers::new(),
            )
            .err()
            .unwrap_or_else(|| panic!("{field} {escape:?} loaded"))
            .to_string();
            assert!(error.contains(field), "{field} {escape:?}: {error}");
            assert!(
                error.contains("path blocked"),
                "{field} {escape:?}: {error}"
            );
        }
    }
}

#[test]
fn an_mcp_cwd_that_is_a_link_out_of_the_scenario_folder_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("suite");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(outer.path(), dir.join("door")).unwrap();
    let scenario = json!({"name": "s", "tools": [{"mcp": {"command": ["true"], "cwd": "door"}}],
                          "prompt": "p", "expect": {"no_call": true}});
    let path = dir.join("s.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let error = toolgauge::scenario::load_scenario(
        &path,
        outer.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .map(|_| ())
    .expect_err("a cwd through a link out loaded")
    .to_string();
    assert!(
        error.contains("/tools/0/mcp/cwd") && error.contains("outside the scenario's folder"),
        "{error}"
    );
}

#[test]
fn a_task_or_final_state_that_cannot_fail_is_refused() {
    let cases = [
        (
            json!({"name": "s", "tools": ["echo"], "prompt": "p", "task": {}}),
            "a task needs at least one check that can fail",
        ),
        (
            json!({"name": "s", "tools": ["store_get"], "prompt": "p",
                   "state": {"orders": [{"id": "1"}]},
                   "task": {"final_state": {"store": {"refunds": {"1": {"amount": 5}}}}}}),
            "no collection \"refunds\"",
        ),
        (
            json!({"name": "s", "tools": ["store_get"], "prompt": "p",
                   "state": {"orders": [{"id": "1"}]},
                   "task": {"final_state": {"store": {"orders": {"9": null}}}}}),
            "cannot fail",
        ),
    ];
    for (scenario, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, scenario.to_string()).unwrap();
        let error = toolgauge::scenario::load_scenario(
            &path,
            dir.path(),
            &toolgauge::tool::mcp::ToolServers::new(),
        )
        .err()
        .unwrap_or_else(|| panic!("{scenario} loaded"))
        .to_string();
        assert!(error.contains(expected), "{scenario}: {error}");
    }
}
