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
        arguments,
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
