//! toolgauge's BFCL verdicts against BFCL's own checker, entry by entry:
//! tests/fixtures/bfcl_oracle holds model outputs generated from the
//! ground truth of the 13 single-turn categories (tests/bfcl_oracle/
//! oracle.py) and BFCL's verdict on each. Here the same outputs are
//! scored by toolgauge, the way a published run is: imported entries, a
//! `bfcl-results` model per output variant.
//!
//! Every verdict must be BFCL's, and every failure's reason BFCL's error
//! type (in toolgauge's coarser words) about the same parameter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{assert_success, corpora, toolgauge};

pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bfcl_oracle")
}

/// A JSON Lines file's values.
pub fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The lines of the JSON Lines file `from` whose `id` is one of `ids`,
/// written to `to`.
pub fn keep_entries(from: &Path, to: &Path, ids: &BTreeSet<String>) {
    let kept: Vec<String> = std::fs::read_to_string(from)
        .unwrap()
        .lines()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["id"].as_str().is_some_and(|id| ids.contains(id)))
        })
        .map(str::to_owned)
        .collect();
    std::fs::write(to, kept.join("\n") + "\n").unwrap();
}

/// The entries of `category` the fixture uses, and their answers, written
/// where `toolgauge import bfcl` looks for them; the scenarios imported.
pub(crate) fn import(category: &str, ids: &BTreeSet<String>, dir: &Path) -> PathBuf {
    let questions_dir = dir.join("questions");
    std::fs::create_dir_all(questions_dir.join("possible_answer")).unwrap();
    let name = format!("BFCL_v4_{category}.json");
    let keep = |path: PathBuf, to: PathBuf| keep_entries(&path, &to, ids);
    let bfcl = corpora().join("bfcl");
    keep(bfcl.join(&name), questions_dir.join(&name));
    let answers = bfcl.join("possible_answer").join(&name);
    if answers.exists() {
        keep(answers, questions_dir.join("possible_answer").join(&name));
    }
    let out = dir.join("suite").join(category);
    let output = toolgauge(&[
        "import",
        "bfcl",
        questions_dir.join(&name).to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&output);
    out
}

/// Score `suite` once with every `bfcl-results` model in `models`: the
/// verdicts land in `out`/trials.csv.
pub fn replay_results(suite: &Path, models: &Path, out: &Path) {
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        models.to_str().unwrap(),
        "--trials",
        "1",
        "--no-session",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn bfcl_verdicts_agree_with_bfcls_own_checker_on_every_output() {
    let verdicts = read_lines(&fixtures().join("verdicts.jsonl"));
    assert!(verdicts.len() >= 2000, "{} outputs", verdicts.len());
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut variants = BTreeSet::new();
    for v in &verdicts {
        ids.entry(v["category"].as_str().unwrap().to_owned())
            .or_default()
            .insert(v["id"].as_str().unwrap().to_owned());
        variants.insert(v["variant"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 13, "every single-turn category");

    let dir = tempfile::tempdir().unwrap();
    for (category, ids) in &ids {
        import(category, ids, dir.path());
    }
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for variant in &variants {
        let mut model = serde_json::json!({
            "name": variant,
            "kind": "bfcl-results",
            "results": fixtures().join(format!("{variant}.jsonl")),
        });
        // Prompting models' outputs are call syntax.
        if variant.starts_with("prompt_") {
            model["results_format"] = "prompt".into();
        }
        std::fs::write(models.join(format!("{variant}.json")), model.to_string()).unwrap();
    }
    let out = dir.path().join("out");
    replay_results(&dir.path().join("suite"), &models, &out);

    // toolgauge's verdict per (variant, entry): its one attempt's success.
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (model, scenario, success) = (column("model"), column("scenario"), column("trial_success"));
    let (reason, parameter) = (column("reason"), column("reason_parameter"));
    let mut ours: BTreeMap<(String, String), (bool, String, String)> = BTreeMap::new();
    for row in reader.records().map(Result::unwrap) {
        ours.insert(
            (row[model].to_owned(), row[scenario].to_owned()),
            (
                &row[success] == "true",
                row[reason].to_owned(),
                row[parameter].to_owned(),
            ),
        );
    }

    let mut agree: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut reasons_agree: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut disagreements = BTreeSet::new();
    for v in &verdicts {
        let (variant, id, category) = (
            v["variant"].as_str().unwrap(),
            v["id"].as_str().unwrap(),
            v["category"].as_str().unwrap(),
        );
        let theirs = v["valid"].as_bool().unwrap();
        let (mine, my_reason, my_parameter) = ours
            .get(&(variant.to_owned(), id.to_owned()))
            .unwrap_or_else(|| panic!("no verdict for {variant} {id}"));
        let tally = agree.entry(category).or_default();
        tally.1 += 1;
        if *mine == theirs {
            tally.0 += 1;
        } else {
            disagreements.insert(format!("{variant} {id} bfcl={theirs} toolgauge={mine}"));
        }
        // Relevance failures have no error type in BFCL.
        let Some(error_type) = v["error_type"].as_str() else {
            continue;
        };
        let tally = reasons_agree.entry(category).or_default();
        tally.1 += 1;
        let their_reason = reason_in_toolgauges_words(error_type);
        // BFCL's dict errors name a key inside the dict, not the
        // parameter; a wrong count of dicts in a list names none.
        let their_parameter = v["parameter"].as_str();
        let same_parameter = error_type.starts_with("value_error:dict")
            || error_type == "value_error:list_dict_count"
            || their_parameter.unwrap_or_default() == my_parameter;
        if their_reason == my_reason && same_parameter {
            tally.0 += 1;
        } else {
            disagreements.insert(format!(
                "{variant} {id} bfcl={error_type} {their_parameter:?} toolgauge={my_reason} {my_parameter:?}"
            ));
        }
    }
    eprintln!("agreement with BFCL's checker, per category (verdicts; reasons of failures):");
    for (category, (same, all)) in &agree {
        let (same_reason, failures) = reasons_agree.get(category).copied().unwrap_or_default();
        eprintln!(
            "  {category}: {same}/{all} ({:.1}%); {same_reason}/{failures}",
            100.0 * *same as f64 / *all as f64
        );
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} verdicts or reasons differ from BFCL's: {disagreements:#?}",
        disagreements.len(),
        verdicts.len()
    );
}

/// BFCL's error type in toolgauge's reasons, which are coarser: one
/// `type_error`, one `value_error:list` and one `value_error:dict`, and
/// `decoder_failed` for both ways BFCL's runner fails to decode.
fn reason_in_toolgauges_words(error_type: &str) -> &str {
    match error_type {
        "ast_decoder:decoder_failed" | "ast_decoder:decoder_wrong_output_format" => {
            "decoder_failed"
        }
        "value_error:list/tuple" | "value_error:list_dict_count" => "value_error:list",
        "value_error:dict_key" | "value_error:dict_value" => "value_error:dict",
        other if other.starts_with("type_error:") => "type_error",
        other if other.starts_with("value_error:") => other,
        other => other.rsplit(':').next().unwrap_or(other),
    }
}
