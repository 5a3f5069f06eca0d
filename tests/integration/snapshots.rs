//! Snapshots of every report format, from a small seeded run.

use crate::assert_success;
use std::path::Path;
use std::process::Command;

#[test]
fn every_report_format_matches_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    for name in [
        "scripted_validation",
        "parallel_read_write_read",
        "scripted_never_fixed",
    ] {
        let file = format!("{name}.json");
        std::fs::copy(root.join("starter").join(&file), suite.join(&file)).unwrap();
    }
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args([
            "run", "suite", "--trials", "3", "--seed", "5", "--quiet", "--out", "out",
        ])
        .args([
            "--models",
            root.join("models/scripted.json").to_str().unwrap(),
        ])
        .args([
            "--models",
            root.join("models/reference.json").to_str().unwrap(),
        ])
        .args(["--min-success", "1.0"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for file in [
        "summary.csv",
        "models.csv",
        "comparisons.csv",
        "self_correction.csv",
        "pass_k.csv",
        "trials.csv",
        "summary.md",
        "junit.xml",
        "run.json",
    ] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        // run.json names the suite whole: the temporary folder varies.
        let text = text.replace(&format!("{}/", dir.path().display()), "");
        insta::assert_snapshot!(file, text);
    }
    // Every chart, as summary.md links it and report.html embeds it.
    let mut charts: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    charts.sort();
    let names: Vec<String> = charts
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "failures",
            "latency",
            "pass_k",
            "retry_curve",
            "self_correction",
            "speedup",
            "verdict"
        ]
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (path, name) in charts.iter().zip(&names) {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(html.contains(&svg), "report.html lacks the {name} chart");
        insta::assert_snapshot!(format!("chart_{name}.svg"), svg);
    }
    // The session log: every entry, with the wall-clock timestamps out.
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let entries: Vec<String> = log
        .lines()
        .map(|line| {
            let mut entry: serde_json::Value = serde_json::from_str(line).unwrap();
            entry["timestamp"] = serde_json::json!("[timestamp]");
            entry.to_string()
        })
        .collect();
    insta::assert_snapshot!("session.jsonl", entries.join("\n"));
}

#[test]
fn the_task_charts_match_their_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let output = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(["run"])
        .arg(root.join("agent/store_refund_order.json"))
        .arg(root.join("agent/parallel_quotes_then_book.json"))
        .args(["--trials", "4", "--seed", "5", "--quiet", "--out", "out"])
        .args([
            "--models",
            root.join("models/scripted.json").to_str().unwrap(),
        ])
        .args([
            "--models",
            root.join("models/careless.json").to_str().unwrap(),
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_success(&output);
    for name in ["tasks", "task_turns"] {
        let svg = std::fs::read_to_string(dir.path().join(format!("out/{name}.svg"))).unwrap();
        insta::assert_snapshot!(format!("chart_{name}.svg"), svg);
    }
}

/// Bad input gets one line naming the file and field and what is
/// accepted: no Rust type name, no serde plumbing, no rmcp internals.
#[test]
fn bad_input_messages_name_the_field_and_what_it_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |extra: serde_json::Value| {
        let mut tool = serde_json::json!({"name": "t", "description": "d",
            "parameters": {"type": "object", "properties": {}}});
        for (k, v) in extra.as_object().unwrap() {
            tool[k] = v.clone();
        }
        serde_json::json!({"name": "s", "tools": [tool], "prompt": "p", "expect": {"no_call": true}})
    };
    let scenarios = [
        (
            "latency_negative",
            tool(serde_json::json!({"simulate": {"result": "ok", "latency_ms": -5}})),
        ),
        (
            "latency_reversed",
            tool(
                serde_json::json!({"simulate": {"result": "ok", "latency_ms": {"uniform": [100, 1]}}}),
            ),
        ),
        (
            "timeout_text",
            tool(serde_json::json!({"timeout_ms": "slow"})),
        ),
        ("effect_typo", tool(serde_json::json!({"effect": "reed"}))),
        (
            "expect_two_ways",
            serde_json::json!({"name": "s", "tools": ["echo"], "prompt": "p",
            "expect": {"calls": [{"name": "echo", "arguments": {}}], "no_call": true}}),
        ),
        (
            "mcp_url_down",
            serde_json::json!({"name": "s", "tools": [{"mcp": {"url": "http://127.0.0.1:9/mcp"}}], "prompt": "p", "expect": {"no_call": true}}),
        ),
    ];
    let scripted = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/models/scripted.json");
    let mut lines = Vec::new();
    let mut run = |label: &str, args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{label}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = stderr.lines().last().unwrap_or_default();
        let line = line.replace(&format!("{}/", dir.path().display()), "");
        lines.push(format!("{label}: {line}"));
    };
    for (name, scenario) in &scenarios {
        let file = format!("{name}.json");
        std::fs::write(dir.path().join(&file), scenario.to_string()).unwrap();
        run(
            name,
            &[
                "run",
                &file,
                "--models",
                scripted.to_str().unwrap(),
                "--out",
                "o",
            ],
        );
    }
    std::fs::write(
        dir.path().join("p_fix.json"),
        r#"{"name": "m", "kind": "stochastic", "parameters": {"p_fix": []}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("ok.json"),
        tool(serde_json::json!({})).to_string(),
    )
    .unwrap();
    run(
        "p_fix_empty",
        &["run", "ok.json", "--models", "p_fix.json", "--out", "o"],
    );
    std::fs::write(
        dir.path().join("api_on_a_mock.json"),
        "{\"name\": \"m\", \"kind\": \"scripted\",\n \"api\": {\"model\": \"gpt\"}}",
    )
    .unwrap();
    run(
        "a_field_of_another_kind",
        &[
            "run",
            "ok.json",
            "--models",
            "api_on_a_mock.json",
            "--out",
            "o",
        ],
    );
    run(
        "replay_without_live_models",
        &[
            "run",
            "ok.json",
            "--models",
            scripted.to_str().unwrap(),
            "--replay",
            "rec",
            "--out",
            "o",
        ],
    );
    insta::assert_snapshot!(lines.join("\n"));
}
