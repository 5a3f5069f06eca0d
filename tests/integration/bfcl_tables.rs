//! `toolgauge report bfcl`: BFCL's own score tables of a run. A run of
//! BFCL's single-turn entries replayed from generated outputs
//! (tests/fixtures/bfcl_oracle), some categories left out, gives tables
//! with BFCL's columns, weights and "N/A" rules; BFCL's own
//! `generate_leaderboard_csv`, given the same accuracies, writes the same
//! tables cell for cell (tests/bfcl_oracle/tables.py, with BFCL's package).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::bfcl_oracle::{fixtures, import, read_lines, replay_results};
use crate::{assert_success, toolgauge};

/// The categories the run holds: the others are missing, as BFCL's
/// tables show them.
const KEPT: [&str; 9] = [
    "simple_python",
    "simple_java",
    "multiple",
    "parallel",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_irrelevance",
    "live_relevance",
];

/// Models replaying four output variants.
const VARIANTS: [&str; 4] = ["truth", "wrong_name", "two_wrong_values", "drop_optional"];

/// A run of the fixture's entries of `KEPT`, one model per variant, and
/// `report bfcl` of it, in `dir/out`.
fn reported_run(dir: &Path) -> std::path::PathBuf {
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for v in read_lines(&fixtures().join("verdicts.jsonl")) {
        let category = v["category"].as_str().unwrap();
        if KEPT.contains(&category) {
            ids.entry(category.to_owned())
                .or_default()
                .insert(v["id"].as_str().unwrap().to_owned());
        }
    }
    for (category, ids) in &ids {
        import(category, ids, dir);
    }
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    for variant in VARIANTS {
        let model = serde_json::json!({
            "name": variant,
            "kind": "bfcl-results",
            "results": fixtures().join(format!("{variant}.jsonl")),
        });
        std::fs::write(models.join(format!("{variant}.json")), model.to_string()).unwrap();
    }
    let out = dir.join("out");
    replay_results(&dir.join("suite"), &models, &out);
    let report = toolgauge(&["report", "bfcl", out.to_str().unwrap()]);
    assert_success(&report);
    // The headline columns printed, a row per model.
    let printed = String::from_utf8_lossy(&report.stdout);
    assert!(
        printed.starts_with("| Rank | Model | Overall Acc |"),
        "{printed}"
    );
    assert_eq!(
        printed.trim_end().lines().count(),
        2 + VARIANTS.len(),
        "{printed}"
    );
    out
}

/// A table's rows, each a map from column to cell.
fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn report_bfcl_writes_bfcls_tables_its_missing_categories_na_and_weighted_in() {
    let dir = tempfile::tempdir().unwrap();
    let out = reported_run(dir.path());
    let overall = rows(&out.join("data_overall.csv"));
    assert_eq!(overall.len(), VARIANTS.len());
    // Ranked by overall accuracy, from 1.
    let ranks: Vec<&str> = overall.iter().map(|r| r["Rank"].as_str()).collect();
    assert_eq!(ranks, ["1", "2", "3", "4"]);
    let truth = overall.iter().find(|r| r["Model"] == "truth").unwrap();
    assert_eq!(truth["Rank"], "1", "{overall:?}");
    // Every present category passed; a missing one is N/A, and so is a
    // summary over it, but the overall counts it as 0.
    assert_eq!(truth["Non-Live Multiple AST"], "100.00%");
    assert_eq!(truth["Non-Live Parallel Multiple AST"], "N/A");
    assert_eq!(truth["Non-Live AST Acc"], "N/A");
    assert_eq!(truth["Multi Turn Acc"], "0.00%");
    assert_eq!(truth["Web Search Acc"], "N/A");
    let scores: Value =
        serde_json::from_slice(&std::fs::read(out.join("bfcl_scores.json")).unwrap()).unwrap();
    let truth_scores = &scores
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "truth")
        .unwrap()["categories"];
    let acc = |c: &str| truth_scores[c]["accuracy"].as_f64().unwrap();
    let count = |c: &str| truth_scores[c]["total_count"].as_f64().unwrap();
    // BFCL's weights: non-live 10 (simple over 3 languages, javascript
    // missing; multiple; parallel; parallel-multiple missing), live 10
    // (by entries, the missing ones at BFCL's counts: 16 and 24),
    // irrelevance 10, multi-turn 30 and agentic 40 (missing: 0).
    let simple = (acc("simple_python") + acc("simple_java") + 0.0) / 3.0;
    let non_live = (simple + acc("multiple") + acc("parallel") + 0.0) / 4.0;
    let (ls, lm) = (count("live_simple"), count("live_multiple"));
    let live = (acc("live_simple") * ls + acc("live_multiple") * lm) / (ls + lm + 16.0 + 24.0);
    let irrelevance = (acc("irrelevance") + acc("live_irrelevance")) / 2.0;
    let expected = 0.1 * non_live + 0.1 * live + 0.1 * irrelevance;
    assert_eq!(truth["Overall Acc"], format!("{:.2}%", expected * 100.0));
    let non_live_row = rows(&out.join("data_non_live.csv"));
    let truth_non_live = non_live_row.iter().find(|r| r["Model"] == "truth").unwrap();
    assert_eq!(
        truth_non_live["Non-Live Overall Acc"],
        format!("{:.2}%", non_live * 100.0)
    );
    assert_eq!(truth_non_live["JavaScript Simple AST"], "N/A");
    // The other tables, with BFCL's headers.
    let format = std::fs::read_to_string(out.join("data_format_sensitivity.csv")).unwrap();
    assert_eq!(format.lines().next().unwrap().split(',').count(), 30);
    assert!(
        !format.ends_with('\n'),
        "no newline after the last row, as BFCL writes"
    );
}

#[test]
fn report_bfcl_of_a_run_without_bfcl_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = toolgauge(&[
        "run",
        "scenarios/starter/weather_units_any.json",
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&run);
    let report = toolgauge(&["report", "bfcl", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&report.stderr);
    assert_eq!(report.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no BFCL scenario"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn report_bfcl_tables_are_those_bfcls_own_leaderboard_code_writes() {
    let python = crate::bfcl_multi_turn::bridge_python(
        "report_bfcl_tables_are_those_bfcls_own_leaderboard_code_writes",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = reported_run(dir.path());
    let output = std::process::Command::new(python)
        .args(["tests/bfcl_oracle/tables.py", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_success(&output);
}
