//! A real small model on a real local server (scripts/real-model.sh, which
//! .ci/run installs and starts): the harness reaches later attempts after
//! tool calls with no transport error, logs what the model said on every
//! attempt, and doctor sees that this server drops tool results. Skipped,
//! saying why, where TOOLGAUGE_REAL_MODEL_URL does not name a server.

use std::path::Path;

use serde_json::{Value, json};

/// The server's API root, or why the test cannot run here.
fn real_server() -> Option<String> {
    match std::env::var("TOOLGAUGE_REAL_MODEL_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "skipped: TOOLGAUGE_REAL_MODEL_URL is not set (scripts/real-model.sh install && \
                 scripts/real-model.sh start, then set it to http://127.0.0.1:8765/v1)"
            );
            None
        }
    }
}

fn model_file(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("smollm2.json");
    let file = json!({
        "name": "smollm2-135m",
        "kind": "openai",
        "api": {
            "model": "smollm2-135m", "base_url": url, "temperature": 0, "seed": 1,
            "max_tokens": 128, "tool_choice": "auto", "timeout_ms": 120000,
            "max_attempts": 2, "concurrency": 1
        }
    });
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

#[test]
fn a_real_model_reaches_later_attempts_and_doctor_sees_that_results_are_dropped() {
    let Some(url) = real_server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(dir.path(), &url);

    let doctor = crate::toolgauge(&["doctor", model.to_str().unwrap()]);
    let printed = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(1), "{printed}");
    let shown = printed
        .lines()
        .find(|l| l.trim_start().starts_with("tool results shown"))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(shown.split_whitespace().any(|w| w == "no"), "{printed}");
    // Under chatml-function-calling, a streamed request with tools and
    // tool_choice auto gets the head of a stream and then nothing.
    let streaming = printed
        .lines()
        .find(|l| l.trim_start().starts_with("streaming"))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(streaming.contains(" no "), "{printed}");
    assert!(streaming.contains("then nothing"), "{printed}");

    let out = dir.path().join("run");
    let run = crate::toolgauge(&[
        "run",
        "scenarios/real/weather_single.json",
        "scenarios/real/math_divide.json",
        "scenarios/real/echo_simple.json",
        "--models",
        model.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{stderr}");
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert!(
        rows.iter().all(|r| r.failures != "transport_error"),
        "{stderr}"
    );
    // Some trial needed a second attempt after a tool call, and got it.
    assert!(
        rows.iter().any(|r| r.attempt >= 2),
        "no trial reached attempt 2: {:?}",
        rows.iter().map(|r| &r.failures).collect::<Vec<_>>()
    );
    let replies: Vec<Value> = std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "model_reply")
        .collect();
    assert_eq!(replies.len(), rows.len(), "one model_reply per attempt");
    assert!(replies.iter().all(|r| r["finishReason"].is_string()));
    assert!(replies.iter().all(|r| r["inputTokens"].as_u64() > Some(0)));
}
