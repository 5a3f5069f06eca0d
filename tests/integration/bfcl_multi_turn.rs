//! BFCL's multi-turn entries run on BFCL's own classes (the bridge,
//! scripts/bfcl_bridge), judged turn by turn, against BFCL's own checker:
//! tests/fixtures/bfcl_multi_turn holds outputs generated from the ground
//! truth and mistakes made on it (tests/bfcl_oracle/multi_turn.py) with
//! BFCL's verdict on each; toolgauge replays them through the bridge as
//! `bfcl-results` models and must give the same verdict on every one.
//!
//! The bridge needs Python with `bfcl-eval` and the MCP SDK:
//! $TOOLGAUGE_BFCL_PYTHON (set by .ci/run, which installs them); they are
//! #[ignore]d, and fail saying what is missing when run without it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bfcl_oracle::{keep_entries, read_lines, replay_results};
use crate::{assert_success, corpora, toolgauge};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bfcl_multi_turn")
}

/// The Python that runs the bridge; a test run without it fails saying so.
pub(crate) fn bridge_python(test: &str) -> String {
    let python = std::env::var("TOOLGAUGE_BFCL_PYTHON").ok().filter(|p| {
        std::process::Command::new(p)
            .args(["-c", "import bfcl_eval, mcp"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    python.unwrap_or_else(|| {
        panic!(
            "missing: {test}: TOOLGAUGE_BFCL_PYTHON does not name a Python with bfcl-eval and mcp \
             (.ci/run installs ../shared/oracles/bfcl and scripts/bfcl_bridge/requirements.txt)"
        )
    })
}

/// Import the entries `ids` of every multi-turn category into `dir/suite`
/// (their questions, answers and function docs copied where import looks).
fn import(python: &str, ids: &BTreeSet<String>, dir: &Path) -> PathBuf {
    let bfcl = corpora().join("bfcl");
    let questions = dir.join("questions");
    std::fs::create_dir_all(questions.join("possible_answer")).unwrap();
    let docs = questions.join("multi_turn_func_doc");
    std::fs::create_dir_all(&docs).unwrap();
    for doc in std::fs::read_dir(bfcl.join("multi_turn_func_doc")).unwrap() {
        let doc = doc.unwrap().path();
        std::fs::copy(&doc, docs.join(doc.file_name().unwrap())).unwrap();
    }
    let suite = dir.join("suite");
    let bridge = format!("{python} scripts/bfcl_bridge/bridge.py");
    for category in ["base", "miss_func", "miss_param", "long_context"] {
        let name = format!("BFCL_v4_multi_turn_{category}.json");
        for (from, to) in [
            (bfcl.join(&name), questions.join(&name)),
            (
                bfcl.join("possible_answer").join(&name),
                questions.join("possible_answer").join(&name),
            ),
        ] {
            keep_entries(&from, &to, ids);
        }
        let output = toolgauge(&[
            "import",
            "bfcl",
            questions.join(&name).to_str().unwrap(),
            "--out",
            suite.to_str().unwrap(),
            "--bridge",
            &bridge,
        ]);
        assert_success(&output);
    }
    suite
}

/// Each trial's verdict by (model, scenario), from trials.csv.
fn verdicts(out: &Path) -> BTreeMap<(String, String), bool> {
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (model, scenario, success) = (column("model"), column("scenario"), column("trial_success"));
    reader
        .records()
        .map(Result::unwrap)
        .map(|row| {
            (
                (row[model].to_owned(), row[scenario].to_owned()),
                &row[success] == "true",
            )
        })
        .collect()
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn bfcl_multi_turn_verdicts_agree_with_bfcls_own_checker_on_every_output() {
    let test = "bfcl_multi_turn_verdicts_agree_with_bfcls_own_checker_on_every_output";
    let python = bridge_python(test);
    let theirs = read_lines(&fixtures().join("verdicts.jsonl"));
    let ids: BTreeSet<String> = theirs
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    let variants: BTreeSet<&str> = theirs
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 40, "ten entries of each multi-turn category");

    let dir = tempfile::tempdir().unwrap();
    let suite = import(&python, &ids, dir.path());
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for variant in &variants {
        let model = serde_json::json!({
            "name": variant,
            "kind": "bfcl-results",
            "results": fixtures().join(format!("{variant}.jsonl")),
        });
        std::fs::write(models.join(format!("{variant}.json")), model.to_string()).unwrap();
    }
    let out = dir.path().join("out");
    replay_results(&suite, &models, &out);
    let ours = verdicts(&out);
    let mut disagreements = Vec::new();
    let mut valid = 0;
    for v in &theirs {
        let (variant, id) = (v["variant"].as_str().unwrap(), v["id"].as_str().unwrap());
        let bfcl = v["valid"].as_bool().unwrap();
        valid += usize::from(bfcl);
        let mine = ours
            .get(&(variant.to_owned(), id.to_owned()))
            .unwrap_or_else(|| panic!("no verdict for {variant} {id}"));
        if *mine != bfcl {
            disagreements.push(format!(
                "{variant} {id}: bfcl={bfcl} ({}) toolgauge={mine}",
                v["error_type"].as_str().unwrap_or("-")
            ));
        }
    }
    // Both verdicts occur, or agreement would prove little.
    assert!(valid > 40 && valid < theirs.len() - 40, "{valid} valid");
    assert!(
        disagreements.is_empty(),
        "{} of {} verdicts differ from BFCL's: {disagreements:#?}",
        disagreements.len(),
        theirs.len()
    );
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn the_mocks_play_bfcl_multi_turn_entries_through_the_bridge() {
    let test = "the_mocks_play_bfcl_multi_turn_entries_through_the_bridge";
    let python = bridge_python(test);
    let ids: BTreeSet<String> = ["base_0", "miss_func_0", "miss_param_0", "long_context_0"]
        .iter()
        .map(|id| format!("multi_turn_{id}"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let suite = import(&python, &ids, dir.path());
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for model in ["scripted", "careless"] {
        let file = format!("{model}.json");
        std::fs::copy(
            Path::new("scenarios/models").join(&file),
            models.join(&file),
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        models.to_str().unwrap(),
        "--trials",
        "3",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&output);
    // The scripted mock plays the ground truth: BFCL passes every turn.
    let ours = verdicts(&out);
    for id in &ids {
        assert_eq!(
            ours.get(&("scripted".to_owned(), id.clone())),
            Some(&true),
            "{id}"
        );
    }
    // The careless one breaks calls and misspells tools: BFCL's checker,
    // through the probe, says what that did to the turn.
    let session = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let careless_probes: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "probe" && e["model"] == "careless")
        .collect();
    let failed: Vec<&Value> = careless_probes
        .iter()
        .filter(|p| p["passed"] == false)
        .collect();
    assert!(!failed.is_empty(), "{careless_probes:#?}");
    assert!(
        failed.iter().all(|p| p["result"]["valid"] == false
            && p["result"]["error_type"]
                .as_str()
                .is_some_and(|t| t.starts_with("multi_turn:"))),
        "{failed:#?}"
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary.lines().any(|l| l.starts_with("careless,")),
        "{summary}"
    );
}
