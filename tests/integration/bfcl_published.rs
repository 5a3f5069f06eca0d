//! Published BFCL runs replayed: each run of bbrowning/bfcl-vllm-results
//! (its `result/<model>` folders: every single-turn category, and
//! multi-turn base, miss_func and miss_param through the bridge) replayed
//! through toolgauge, and `report bfcl` of the replays held to the run's
//! published `score/data_*.csv`, cell for cell. Its long-context result
//! files are not in the copy read here: that column and what sums it (the
//! multi-turn overall, the overall) are checked instead to be what the
//! published long-context cell adds to toolgauge's.
//!
//! The published files are read where they are, nothing committed:
//! TOOLGAUGE_BFCL_PUBLISHED names the repository's `results` folder, and
//! TOOLGAUGE_BFCL_PYTHON the bridge's Python.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{assert_success, corpora, toolgauge};

const SINGLE_TURN: [&str; 13] = toolgauge::bfcl::SINGLE_TURN_CATEGORIES;

const MULTI_TURN: [&str; 3] = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
];

/// Columns BFCL fills from its model table and its cost and latency
/// records, and the rank (which follows the overall).
const NOT_COMPARED: [&str; 9] = [
    "Rank",
    "Model",
    "Model Link",
    "Total Cost ($)",
    "Latency Mean (s)",
    "Latency Standard Deviation (s)",
    "Latency 95th Percentile (s)",
    "Organization",
    "License",
];

/// What the missing long-context files sum into.
const LONG_CONTEXT: [&str; 5] = [
    "Multi Turn Long Context",
    "Long Context",
    "Multi Turn Acc",
    "Multi Turn Overall Acc",
    "Overall Acc",
];

fn import(category: &str, bridge: Option<&str>, out: &Path) {
    let questions = corpora().join(format!("bfcl/BFCL_v4_{category}.json"));
    let mut args = vec!["import", "bfcl", questions.to_str().unwrap()];
    if let Some(bridge) = bridge {
        args.extend(["--bridge", bridge]);
    }
    args.extend(["--out", out.to_str().unwrap()]);
    assert_success(&toolgauge(&args));
}

/// A table's rows by model (BFCL's display name's first word, as the
/// result folder names it: `openai/gpt-oss-120b (FC)` -> `openai_gpt-oss-120b`).
fn by_model(path: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let mut rows = BTreeMap::new();
    for record in reader.records() {
        let row: BTreeMap<String, String> = header
            .iter()
            .cloned()
            .zip(record.unwrap().iter().map(str::to_owned))
            .collect();
        let model = row["Model"].split(' ').next().unwrap().replace('/', "_");
        rows.insert(model, row);
    }
    rows
}

fn percent(cell: &str) -> f64 {
    cell.trim_end_matches('%').parse().unwrap()
}

/// Replay one published run's models and compare its tables: the cells
/// that differ, one line each.
fn replay_run(run: &Path, suites: &Path, dir: &Path) -> Vec<String> {
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    for model in std::fs::read_dir(run.join("result")).unwrap() {
        let model = model.unwrap().path();
        let name = model.file_name().unwrap().to_str().unwrap().to_owned();
        let file = serde_json::json!({"name": name, "kind": "bfcl-results", "results": model});
        std::fs::write(models.join(format!("{name}.json")), file.to_string()).unwrap();
    }
    let mut outs = Vec::new();
    for suite in ["single", "multi"] {
        let out = dir.join(format!("out-{suite}"));
        let output = toolgauge(&[
            "run",
            suites.join(suite).to_str().unwrap(),
            "--models",
            models.to_str().unwrap(),
            "--trials",
            "1",
            "--no-session",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("lost"), "{}: {stderr}", run.display());
        outs.push(out);
    }
    let tables = dir.join("tables");
    let mut args = vec!["report", "bfcl"];
    args.extend(outs.iter().map(|o| o.to_str().unwrap()));
    args.extend(["--out", tables.to_str().unwrap()]);
    assert_success(&toolgauge(&args));
    compare(run, &tables)
}

fn compare(run: &Path, tables: &Path) -> Vec<String> {
    let mut differences = Vec::new();
    for name in [
        "data_overall.csv",
        "data_non_live.csv",
        "data_live.csv",
        "data_multi_turn.csv",
        "data_agentic.csv",
        "data_format_sensitivity.csv",
    ] {
        let published = by_model(&run.join("score").join(name));
        let ours = by_model(&tables.join(name));
        assert_eq!(
            published.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{name}"
        );
        for (model, theirs) in &published {
            for (column, cell) in theirs {
                let mine = &ours[model][column];
                let compared = !NOT_COMPARED.contains(&column.as_str())
                    && !LONG_CONTEXT.contains(&column.as_str());
                if compared && mine != cell {
                    differences.push(format!(
                        "{} {name} {model} {column}: published {cell}, toolgauge {mine}",
                        run.display()
                    ));
                }
            }
        }
    }
    // The long-context cell, missing here, is what the multi-turn overall
    // (a quarter) and the overall (30% of it) lack.
    let published = by_model(&run.join("score/data_overall.csv"));
    let ours = by_model(&tables.join("data_overall.csv"));
    for (model, theirs) in &published {
        let long_context = percent(&theirs["Multi Turn Long Context"]);
        let multi = percent(&ours[model]["Multi Turn Acc"]) + long_context / 4.0;
        let overall = percent(&ours[model]["Overall Acc"]) + 0.3 * long_context / 4.0;
        for (column, value) in [("Multi Turn Acc", multi), ("Overall Acc", overall)] {
            if (value - percent(&theirs[column])).abs() > 0.011 {
                differences.push(format!(
                    "{} {model} {column} with the published long context: published {}, toolgauge {value:.2}",
                    run.display(),
                    theirs[column]
                ));
            }
        }
    }
    differences
}

#[test]
#[ignore = "needs bbrowning/bfcl-vllm-results: TOOLGAUGE_BFCL_PUBLISHED=<its results folder>, and TOOLGAUGE_BFCL_PYTHON"]
fn report_bfcl_of_replayed_published_runs_gives_their_published_tables() {
    let python = crate::bfcl_multi_turn::bridge_python(
        "report_bfcl_of_replayed_published_runs_gives_their_published_tables",
    );
    let published = std::env::var("TOOLGAUGE_BFCL_PUBLISHED").map(PathBuf::from).unwrap_or_else(|_| {
        panic!("missing: TOOLGAUGE_BFCL_PUBLISHED names bbrowning/bfcl-vllm-results' results folder")
    });
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    for category in SINGLE_TURN {
        import(category, None, &suites.join("single").join(category));
    }
    let bridge = format!("{python} scripts/bfcl_bridge/bridge.py");
    for category in MULTI_TURN {
        import(
            category,
            Some(&bridge),
            &suites.join("multi").join(category),
        );
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&published)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("score/data_overall.csv").is_file())
        .collect();
    runs.sort();
    assert!(!runs.is_empty(), "no run under {}", published.display());
    let mut differences = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let here = dir.path().join(format!("run-{i}"));
        differences.extend(replay_run(run, &suites, &here));
    }
    eprintln!("{} published run(s) replayed", runs.len());
    assert_eq!(differences, Vec::<String>::new());
}
