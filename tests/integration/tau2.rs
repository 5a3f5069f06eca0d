//! tau2-bench's airline tasks imported and run on tau2's own environment
//! through the bridge (scripts/tau2_bridge), judged by tau2's evaluator:
//! the scripted mock plays the gold actions and passes; the same task
//! with the required information left unsaid fails on tau2's COMMUNICATE
//! check alone.
//!
//! The bridge needs Python 3.12 with tau2-bench and the MCP SDK:
//! $TOOLGAUGE_TAU2_PYTHON (set by .ci/run, which installs them); without
//! it these tests say they are skipped, and why.

use std::path::Path;

use serde_json::Value;

use crate::toolgauge;

/// The Python that runs the bridge, or why the test is skipped.
fn bridge_python(test: &str) -> Option<String> {
    let python = std::env::var("TOOLGAUGE_TAU2_PYTHON").ok().filter(|p| {
        std::process::Command::new(p)
            .args(["-c", "import tau2, mcp"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if python.is_none() {
        eprintln!(
            "skipped: {test}: TOOLGAUGE_TAU2_PYTHON does not name a Python with tau2 and mcp \
             (.ci/run installs ../shared/oracles/tau2 and scripts/tau2_bridge/requirements.txt)"
        );
    }
    python
}

/// The probe's result of each trial in a run's session log, by scenario.
fn verdicts(out: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "probe")
        .map(|event| {
            (
                event["scenario"].as_str().unwrap().to_owned(),
                event["result"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_scripted_mock_passes_airline_tasks_on_tau2s_verdict_and_fails_one_left_unsaid() {
    let Some(python) = bridge_python(
        "the_scripted_mock_passes_airline_tasks_on_tau2s_verdict_and_fails_one_left_unsaid",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("airline");
    let bridge = format!("{python} scripts/tau2_bridge/bridge.py");
    let output = toolgauge(&[
        "import",
        "tau2",
        "--domain",
        "airline",
        "--bridge",
        &bridge,
        "--out",
        imported.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read_dir(&imported).unwrap().count(), 50);

    // Writes and information to say (7), a transfer (13); and 7 again
    // with the information left unsaid.
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    for id in ["7", "13"] {
        let name = format!("tau2_airline_{id}.json");
        std::fs::copy(imported.join(&name), suite.join(&name)).unwrap();
    }
    let mut unsaid: Value =
        serde_json::from_slice(&std::fs::read(imported.join("tau2_airline_7.json")).unwrap())
            .unwrap();
    unsaid["name"] = "tau2_airline_7_unsaid".into();
    unsaid["task"]["reference_answer"] = "Done.".into();
    std::fs::write(suite.join("unsaid.json"), unsaid.to_string()).unwrap();

    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    // One of three fails: the run's own verdict, not a loss.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("lost"), "{stderr}");
    let mut verdicts = verdicts(&out);
    verdicts.sort_by(|a, b| a.0.cmp(&b.0));
    let summary: Vec<(&str, f64)> = verdicts
        .iter()
        .map(|(name, result)| (name.as_str(), result["reward"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            ("tau2_airline_13", 1.0),
            ("tau2_airline_7", 1.0),
            ("tau2_airline_7_unsaid", 0.0)
        ],
        "{verdicts:?}"
    );
    let unsaid = &verdicts[2].1["tau2"];
    assert_eq!(unsaid["breakdown"]["DB"], 1.0, "{unsaid}");
    assert_eq!(unsaid["breakdown"]["COMMUNICATE"], 0.0, "{unsaid}");
    assert_eq!(unsaid["ended_by"], "user_stop", "{unsaid}");
}
