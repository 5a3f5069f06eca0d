//! BFCL's memory entries on BFCL's own memory classes behind the bridge:
//! prerequisite conversations chained, each question after the last,
//! opened by the system message BFCL writes from the memory and judged
//! by BFCL's agentic checker. Needs $TOOLGAUGE_BFCL_PYTHON, as
//! tests/integration/bfcl_multi_turn.rs.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::bfcl_multi_turn::bridge_python;
use crate::{assert_success, corpora, toolgauge};

/// `import bfcl BFCL_v4_memory.json` into `dir/all`: its stderr.
fn import(python: &str, dir: &Path) -> (PathBuf, String) {
    let bridge = format!("{python} scripts/bfcl_bridge/bridge.py");
    let questions = corpora().join("bfcl/BFCL_v4_memory.json");
    let all = dir.join("all");
    let output = toolgauge(&[
        "import",
        "bfcl",
        questions.to_str().unwrap(),
        "--bridge",
        &bridge,
        "--out",
        all.to_str().unwrap(),
    ]);
    assert_success(&output);
    (all, String::from_utf8_lossy(&output.stderr).into_owned())
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn run(suite: &Path, out: &Path, trials: &str) {
    assert_success(&toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        trials,
        "--concurrency",
        "8",
        "--min-success",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn the_scripted_mock_passes_a_scenarios_memory_entries_on_kv_and_rec_sum() {
    let python =
        bridge_python("the_scripted_mock_passes_a_scenarios_memory_entries_on_kv_and_rec_sum");
    let dir = tempfile::tempdir().unwrap();
    let (all, said) = import(&python, dir.path());
    let names: Vec<String> = std::fs::read_dir(&all)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for (prefix, count) in [("memory_kv_prereq_", 37), ("memory_rec_sum_prereq_", 37)] {
        assert_eq!(
            names.iter().filter(|n| n.starts_with(prefix)).count(),
            count,
            "{prefix}"
        );
    }
    let questions = |category: &str| {
        names
            .iter()
            .filter(|n| n.starts_with(category) && !n.contains("prereq"))
            .count()
    };
    assert_eq!(questions("memory_kv_"), 155);
    assert_eq!(questions("memory_rec_sum_"), 155);
    // The vector backend: imported where its encoder is, said otherwise.
    if questions("memory_vector_") == 0 {
        assert!(said.contains("memory_vector: skipped"), "{said}");
    }
    // The notetaker's chains: 5 conversations and 25 questions a backend.
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    for name in names
        .iter()
        .filter(|n| n.contains("-notetaker-") && !n.starts_with("memory_vector"))
    {
        std::fs::copy(all.join(name), suite.join(name)).unwrap();
    }
    assert_eq!(std::fs::read_dir(&suite).unwrap().count(), 60);
    run(&suite, &dir.path().join("out"), "1");
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn what_a_prerequisite_stores_opens_the_question_on_each_trial_numbers_own_chain() {
    let python = bridge_python(
        "what_a_prerequisite_stores_opens_the_question_on_each_trial_numbers_own_chain",
    );
    let dir = tempfile::tempdir().unwrap();
    let (all, _) = import(&python, dir.path());
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let first = "memory_kv_prereq_0-customer-0";
    let second = "memory_kv_prereq_1-customer-1";
    let question = "memory_kv_0-customer-0";
    // The second conversation, cut to its first turn, where the mock
    // stores what the question asks (a call of the backend's).
    let mut storing = read(&all.join(format!("{second}.json")));
    storing["task"]["turns"] = json!([]);
    storing["task"]["reference"] = json!([{
        "name": "core_memory_add",
        "arguments": {"key": "first_name", "value": "Michael"},
    }]);
    let mut opening = read(&all.join(format!("{first}.json")));
    opening["task"]["turns"] = json!([]);
    std::fs::write(suite.join(format!("{first}.json")), opening.to_string()).unwrap();
    std::fs::write(suite.join(format!("{second}.json")), storing.to_string()).unwrap();
    let mut asked = read(&all.join(format!("{question}.json")));
    assert_eq!(asked["after"], json!(["memory_kv_prereq_9-customer-9"]));
    // The chain cut after the second conversation.
    asked["after"] = json!([second]);
    std::fs::write(suite.join(format!("{question}.json")), asked.to_string()).unwrap();
    let out = dir.path().join("out");
    // Two trial numbers: a chain shared between them would find the key
    // stored already ("Key name must be unique.").
    run(&suite, &out, "2");
    let session = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let entries: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stored: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "tool_result" && e["tool"] == "core_memory_add")
        .collect();
    assert_eq!(stored.len(), 2, "{session}");
    for result in stored {
        assert_eq!(
            result["content"], "{\"status\": \"Key-value pair added.\"}",
            "{result}"
        );
    }
    for trial in 0..2 {
        let opened = entries
            .iter()
            .find(|e| {
                e["scenario"] == question
                    && e["trial"] == trial
                    && e["type"] == "probe"
                    && e["tool"] == "bfcl_memory_prompt"
            })
            .unwrap_or_else(|| panic!("no opening for trial {trial}: {session}"));
        let text = opened["result"].as_str().unwrap();
        // BFCL's words: the scenario's setting, the core memory, the format.
        assert!(
            text.starts_with("You are a general customer support assistant"),
            "{text}"
        );
        assert!(text.contains("\"first_name\": \"Michael\""), "{text}");
        assert!(
            text.contains("{'answer': A short and precise answer"),
            "{text}"
        );
        // The conversation before it began with nothing stored.
        let before = entries
            .iter()
            .find(|e| {
                e["scenario"] == first && e["trial"] == trial && e["tool"] == "bfcl_memory_prompt"
            })
            .unwrap();
        assert!(
            before["result"]
                .as_str()
                .unwrap()
                .contains("There is no content in the core memory at this point."),
            "{before}"
        );
    }
}

/// Outputs generated for memory questions on kv and rec_sum
/// (tests/bfcl_oracle/agentic.py --memory: the answer, a lookup then the
/// answer, a wrong one, the answer then a lookup, a wrong text then the
/// right one, calls alone, the answer's punctuation and case changed),
/// each file answering the questions' prerequisite conversations too,
/// replayed through toolgauge by the `bfcl-results` model: every
/// question's verdict is BFCL's own `_evaluate_single_agentic_entry`'s.
#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn replayed_memory_outputs_get_bfcls_own_agentic_verdict() {
    let python = bridge_python("replayed_memory_outputs_get_bfcls_own_agentic_verdict");
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    let verdicts = crate::bfcl_web::agentic_outputs(&python, &outputs, &["--memory"]);
    let (all, _) = import(&python, dir.path());
    let suite = dir.path().join("suite");
    let models = dir.path().join("models");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::create_dir_all(&models).unwrap();
    let variants: std::collections::BTreeSet<&str> = verdicts
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect();
    for variant in &variants {
        let results = outputs.join(format!("{variant}.jsonl"));
        // Every entry the file answers, the prerequisites with the questions.
        for line in std::fs::read_to_string(&results).unwrap().lines() {
            let id = serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let file = format!("{id}.json");
            std::fs::copy(all.join(&file), suite.join(&file)).unwrap();
        }
        let model = json!({"name": variant, "kind": "bfcl-results", "results": results});
        std::fs::write(models.join(format!("{variant}.json")), model.to_string()).unwrap();
    }
    crate::bfcl_web::replays_agree_with_bfcl(&suite, &models, &dir.path().join("out"), &verdicts);
}
