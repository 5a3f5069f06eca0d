//! scenarios/self-correction (errors only the feedback can fix), the
//! other harnesses' feedback wordings, and recovery measured: live from a
//! run, and from a recorded BFCL run's `inference_log`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::run::read;
use crate::{assert_success, toolgauge};

const SUITE: &str = "scenarios/self-correction";

fn scenarios() -> Vec<(String, Value)> {
    let mut all: Vec<(String, Value)> = std::fs::read_dir(SUITE)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (
                p.display().to_string(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// summary.csv's rows as maps, by model and scenario.
fn cells(out: &Path) -> HashMap<(String, String), HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    reader
        .deserialize::<HashMap<String, String>>()
        .map(|row| {
            let row = row.unwrap();
            ((row["model"].clone(), row["scenario"].clone()), row)
        })
        .collect()
}

/// self_correction.csv's class sums, by model and class.
fn recovery(out: &Path) -> HashMap<(String, String), HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(out.join("self_correction.csv")).unwrap();
    reader
        .deserialize::<HashMap<String, String>>()
        .map(|row| row.unwrap())
        .filter(|row| row["failure_kind"] == "all")
        .map(|row| ((row["model"].clone(), row["error_class"].clone()), row))
        .collect()
}

fn run_mocks(out: &Path, feedback: &str) {
    let output = toolgauge(&[
        "run",
        SUITE,
        "--models",
        "scenarios/models/scripted.json",
        "--models",
        "scenarios/models/attentive.json",
        "--trials",
        "2",
        "--feedback",
        feedback,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_suite_has_thirty_scenarios_whose_fix_only_the_error_states() {
    let all = scenarios();
    assert!(all.len() >= 30, "{} scenarios", all.len());
    let mut valid_but_wrong = 0;
    for (path, scenario) in &all {
        let description = scenario["description"].as_str().unwrap();
        assert!(
            description.starts_with("The feedback must"),
            "{path}: the description says what the feedback must convey"
        );
        let tags: Vec<&str> = scenario["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(tags.contains(&"self-correction"), "{path}");
        valid_but_wrong += usize::from(tags.contains(&"valid-but-wrong"));
        let script = scenario["script"].as_array().unwrap();
        assert_eq!(script.len(), 2, "{path}: a natural call, then the fix");
        let needs = script[1]["needs"].as_str().unwrap();
        // Neither the prompt nor any schema says the fix: only the error.
        let prompt = scenario["messages"].to_string();
        assert!(!prompt.contains(needs), "{path}: the prompt says {needs:?}");
        for tool in scenario["tools"].as_array().unwrap() {
            let parameters = tool["parameters"].to_string();
            assert!(
                !parameters.contains(needs),
                "{path}: {}'s schema says {needs:?}",
                tool["name"]
            );
        }
    }
    // The suite's README counts them, and says why each can end so.
    let readme = std::fs::read_to_string(format!("{SUITE}/README.md")).unwrap();
    assert!(
        readme.contains(&format!("{valid_but_wrong} of the {} scenarios", all.len())),
        "README.md says how many may end valid but wrong ({valid_but_wrong})"
    );
}

#[test]
fn the_scripted_mock_passes_every_one_and_the_attentive_one_only_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let told = dir.path().join("pointer-list");
    let bare = dir.path().join("bare");
    run_mocks(&told, "pointer-list");
    run_mocks(&bare, "bare");
    let (told_cells, bare_cells) = (cells(&told), cells(&bare));
    let scenarios = scenarios();
    let (mut fixed_told, mut fixed_bare) = (0, 0);
    for (_, scenario) in &scenarios {
        let name = scenario["name"].as_str().unwrap().to_owned();
        for cells in [&told_cells, &bare_cells] {
            let scripted = &cells[&("scripted".to_owned(), name.clone())];
            assert_eq!(scripted["final_success"], "1.0", "scripted on {name}");
            // The natural first call fails: the fix needs the feedback.
            assert_eq!(scripted["success_at_1"], "0.0", "{name} passed at once");
        }
        let final_success = |cells: &HashMap<_, HashMap<String, String>>| -> f64 {
            cells[&("attentive".to_owned(), name.clone())]["final_success"]
                .parse()
                .unwrap()
        };
        fixed_told += usize::from(final_success(&told_cells) == 1.0);
        fixed_bare += usize::from(final_success(&bare_cells) > 0.0);
    }
    assert_eq!(
        fixed_told,
        scenarios.len(),
        "told, the attentive mock fixes every one"
    );
    assert_eq!(fixed_bare, 0, "untold, it fixes none");

    // What each did next, in self_correction.csv: fixed at once when
    // told, the same failed call again when not.
    let told_recovery = recovery(&told);
    let bare_recovery = recovery(&bare);
    for class in ["schema", "state"] {
        let key = ("attentive".to_owned(), class.to_owned());
        let told = &told_recovery[&key];
        assert_eq!(told["fixed_next"], told["with_next"], "{class}: {told:?}");
        assert_ne!(told["with_next"], "0");
        let bare = &bare_recovery[&key];
        assert_eq!(bare["fixed_next"], "0", "{class}: {bare:?}");
        assert_eq!(bare["same_call"], bare["with_next"], "{class}: {bare:?}");
    }
    let summary = read(&bare, "summary.md");
    assert!(
        summary.contains("## Recovery after the first error"),
        "{summary}"
    );
    let html = read(&bare, "report.html");
    assert!(html.contains("Recovery after the first error"));
    // Per trial, on the row of its first error.
    let trials = read(&bare, "trials.csv");
    assert!(
        trials
            .lines()
            .next()
            .unwrap()
            .ends_with(",repeated_failed_call,next_move,reward_checks")
    );
    assert!(
        trials.contains(",same_call,"),
        "next_move, then reward_checks"
    );
}

#[test]
fn each_harness_style_words_a_refusal_as_that_harness_does_and_tells_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (style, prefix) in [
        ("bfcl", "Error during execution: "),
        ("tau2", "Error: "),
        ("inspect", "Error: "),
    ] {
        let out = dir.path().join(style);
        run_mocks(&out, style);
        let cells = cells(&out);
        let passed = cells
            .iter()
            .filter(|((model, _), row)| model == "attentive" && row["final_success"] == "1.0")
            .count();
        assert_eq!(passed, scenarios().len(), "{style}");
        let session = read(&out, "session.jsonl");
        let refusal = session
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["scenario"] == "sc_ambiguous_city" && e["isError"] == true)
            .unwrap();
        assert_eq!(
            refusal["content"],
            format!(
                "{prefix}city 'Springfield' is ambiguous: use 'Springfield, IL' or 'Springfield, MO' (the user's saved location is Springfield, IL)"
            ),
            "{style}"
        );
    }
}

/// A BFCL multi-turn result line in the shape BFCL writes: one turn, a
/// `cd` refused by the class, the same call again, then a fix.
fn bfcl_line(id: &str, steps: &[(&str, &str)]) -> String {
    let mut turn = serde_json::Map::new();
    turn.insert("begin_of_turn_query".into(), serde_json::json!([]));
    for (n, (call, result)) in steps.iter().enumerate() {
        let call: Value = serde_json::from_str(call).unwrap();
        let decoded = serde_json::json!({"role": "handler_log", "content": "Successfully decoded model response.", "model_response_decoded": []});
        let mut messages = vec![
            serde_json::json!({"role": "assistant", "content": call}),
            decoded,
        ];
        if !result.is_empty() {
            messages.push(serde_json::json!({"role": "tool", "content": result}));
        }
        turn.insert(format!("step_{n}"), Value::Array(messages));
    }
    serde_json::json!({
        "id": id,
        "result": [[]],
        "inference_log": [[{"role": "state_info"}], Value::Object(turn)],
    })
    .to_string()
}

#[test]
fn report_recovery_reads_what_a_recorded_bfcl_model_did_after_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cd = r#"[{"cd": "{\"folder\": \"temp\"}"}]"#;
    let refused =
        r#"{"error": "cd: temp: No such directory. You cannot use path to change directory."}"#;
    let lines = [
        bfcl_line(
            "multi_turn_base_0",
            &[
                (cd, refused),
                (cd, refused),
                (r#"[{"ls": "{}"}]"#, r#"{"current_directory_content": []}"#),
            ],
        ),
        bfcl_line(
            "multi_turn_base_1",
            &[
                (
                    r#"[{"cd": "{\"path\": \"temp\"}"}]"#,
                    "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument 'path'",
                ),
                (cd, r#"{"current_working_directory": "temp"}"#),
            ],
        ),
        bfcl_line("multi_turn_base_2", &[(r#""Done.""#, "")]),
    ];
    let file = dir.path().join("BFCL_v4_multi_turn_base_result.json");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "report",
        "recovery",
        "--bfcl",
        &format!("published={}", file.display()),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&output);
    let rows = recovery(&out);
    let state = &rows[&("published".to_owned(), "state".to_owned())];
    assert_eq!(
        (
            state["first_errors"].as_str(),
            state["same_call"].as_str(),
            state["recovered_later"].as_str()
        ),
        ("1", "1", "1")
    );
    let schema = &rows[&("published".to_owned(), "schema".to_owned())];
    assert_eq!(
        (
            schema["first_errors"].as_str(),
            schema["fixed_next"].as_str()
        ),
        ("1", "1")
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("1/1 100%"), "{stdout}");

    // A file with no inference_log measured nothing: refused, not passed.
    let single = dir.path().join("BFCL_v4_simple_result.json");
    std::fs::write(&single, r#"{"id": "simple_0", "result": []}"#).unwrap();
    let output = toolgauge(&[
        "report",
        "recovery",
        "--bfcl",
        single.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("inference_log"), "{stderr}");
}
