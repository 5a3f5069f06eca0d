//! BFCL's web search entries on BFCL's own `WebSearchAPI` behind the
//! bridge, judged by BFCL's agentic checker; SerpAPI and the fetched pages
//! replaced at the bridge's boundary by a recording made here
//! (tests/fixtures/bfcl_web/recording.json). Needs $TOOLGAUGE_BFCL_PYTHON,
//! as tests/integration/bfcl_multi_turn.rs.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::bfcl_multi_turn::bridge_python;
use crate::conversation::{call_with_id, completion};
use crate::{assert_success, corpora, toolgauge};

const RECORDING: &str = "tests/fixtures/bfcl_web/recording.json";

/// `import bfcl BFCL_v4_web_search.json` into `out`, the bridge on the
/// recording.
fn import(python: &str, out: &Path) {
    let bridge = format!("{python} scripts/bfcl_bridge/bridge.py --web-recording {RECORDING}");
    let questions = corpora().join("bfcl/BFCL_v4_web_search.json");
    assert_success(&toolgauge(&[
        "import",
        "bfcl",
        questions.to_str().unwrap(),
        "--bridge",
        &bridge,
        "--out",
        out.to_str().unwrap(),
    ]));
}

#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn the_scripted_mock_answers_every_web_search_entry_in_bfcls_format_and_passes() {
    let python = bridge_python(
        "the_scripted_mock_answers_every_web_search_entry_in_bfcls_format_and_passes",
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    import(&python, &suite);
    assert_eq!(std::fs::read_dir(&suite).unwrap().count(), 200);
    let task: Value =
        serde_json::from_slice(&std::fs::read(suite.join("web_search_no_snippet_4.json")).unwrap())
            .unwrap();
    // BFCL's answer format, from BFCL's package, before the question.
    let system = task["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("{'answer': A short and precise answer"),
        "{system}"
    );
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "1",
        "--min-success",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&output);
    assert_success(&toolgauge(&["report", "bfcl", out.to_str().unwrap()]));
    let agentic = std::fs::read_to_string(out.join("data_agentic.csv")).unwrap();
    let row = agentic.lines().nth(1).unwrap();
    assert!(row.contains(",100.00%,100.00%,100.00%,N/A,"), "{agentic}");
}

/// A model that searches, reads a page and answers: Zhang Yiming, or, for
/// the question marked WRONG, someone else. What its searches gave back
/// is kept for the test to read.
struct Searcher {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Respond for Searcher {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let tools = messages.iter().filter(|m| m["role"] == "tool").count();
        if let Some(result) = messages.iter().rev().find(|m| m["role"] == "tool") {
            self.seen
                .lock()
                .unwrap()
                .push(result["content"].to_string());
        }
        let wrong = body.to_string().contains("WRONG");
        completion(match tools {
            0 => call_with_id(
                "s1",
                "search_engine_query",
                json!({"keywords": "most expensive tea in the world"}),
            ),
            1 => call_with_id(
                "f1",
                "fetch_url_content",
                json!({"url": "https://rich.example.org/china-2025", "mode": "truncate"}),
            ),
            _ if wrong => {
                json!({"role": "assistant", "content": "{'answer': 'Jack Ma', 'context': 'a guess'}"})
            }
            _ => {
                json!({"role": "assistant", "content": "{'answer': 'Zhang Yiming', 'context': 'Forbes, April 2025'}"})
            }
        })
    }
}

#[tokio::test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
async fn a_live_model_searches_the_recording_and_bfcls_checker_judges_its_answer() {
    let python =
        bridge_python("a_live_model_searches_the_recording_and_bfcls_checker_judges_its_answer");
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("imported");
    import(&python, &imported);
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    for name in ["web_search_base_0", "web_search_no_snippet_0"] {
        let file = format!("{name}.json");
        std::fs::copy(imported.join(&file), suite.join(&file)).unwrap();
    }
    let mut wrong: Value =
        serde_json::from_slice(&std::fs::read(imported.join("web_search_base_0.json")).unwrap())
            .unwrap();
    wrong["name"] = "web_search_base_0_wrong".into();
    wrong["messages"][1]["content"] = "WRONG: who is the richest person in China?".into();
    std::fs::write(suite.join("wrong.json"), wrong.to_string()).unwrap();

    let server = MockServer::start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(Searcher { seen: seen.clone() })
        .mount(&server)
        .await;
    let model = crate::live::model_file(
        dir.path(),
        "openai",
        &format!("{}/v1", server.uri()),
        json!({}),
    );
    let out = dir.path().join("out");
    let args = [
        "run",
        suite.to_str().unwrap(),
        "--models",
        model.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = crate::live::toolgauge(
        args.iter().map(|a| (*a).to_owned()).collect(),
        Some(crate::live::KEY),
    )
    .await;
    let stderr = crate::live::stderr(&output);
    assert!(!stderr.contains("lost"), "{stderr}");
    let verdicts: Vec<(String, Value)> = std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "probe")
        .map(|e| {
            (
                e["scenario"].as_str().unwrap().to_owned(),
                e["result"].clone(),
            )
        })
        .collect();
    let valid = |name: &str| &verdicts.iter().find(|(s, _)| s == name).unwrap().1;
    assert_eq!(valid("web_search_base_0")["valid"], true, "{verdicts:?}");
    assert_eq!(
        valid("web_search_no_snippet_0")["valid"],
        true,
        "{verdicts:?}"
    );
    let wrong = valid("web_search_base_0_wrong");
    assert_eq!(wrong["valid"], false);
    assert_eq!(wrong["error_type"], "agentic:answer_not_found");
    // The recording answered the search, with snippets in the base
    // category and without them in no_snippet; the page came cleaned.
    let seen = seen.lock().unwrap();
    let searches: Vec<&String> = seen
        .iter()
        .filter(|s| s.contains("tea.example.org"))
        .collect();
    assert!(searches.iter().any(|s| s.contains("body")), "{seen:?}");
    assert!(searches.iter().any(|s| !s.contains("body")), "{seen:?}");
    assert!(
        seen.iter().any(|s| s.contains("Zhang Yiming (ByteDance)")),
        "{seen:?}"
    );
}

/// Outputs generated for web search entries (tests/bfcl_oracle/agentic.py:
/// the answer, a search then the answer, a wrong one, the answer then a
/// search, a wrong text then the right one, calls alone, the answer's
/// punctuation and case changed), replayed through toolgauge by the
/// `bfcl-results` model: every verdict is BFCL's own
/// `_evaluate_single_agentic_entry`'s.
#[test]
#[ignore = "needs BFCL's package: TOOLGAUGE_BFCL_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn replayed_web_search_outputs_get_bfcls_own_agentic_verdict() {
    let python = bridge_python("replayed_web_search_outputs_get_bfcls_own_agentic_verdict");
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("outputs");
    let verdicts = agentic_outputs(&python, &outputs, &[]);
    let imported = dir.path().join("imported");
    import(&python, &imported);
    let suite = dir.path().join("suite");
    let models = dir.path().join("models");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::create_dir_all(&models).unwrap();
    for v in &verdicts {
        let file = format!("{}.json", v["id"].as_str().unwrap());
        std::fs::copy(imported.join(&file), suite.join(&file)).unwrap();
        let variant = v["variant"].as_str().unwrap();
        let model = json!({"name": variant, "kind": "bfcl-results",
            "results": outputs.join(format!("{variant}.jsonl"))});
        std::fs::write(models.join(format!("{variant}.json")), model.to_string()).unwrap();
    }
    replays_agree_with_bfcl(&suite, &models, &dir.path().join("out"), &verdicts);
}

/// tests/bfcl_oracle/agentic.py's outputs of 10 questions in `outputs`
/// (`extra`: its further arguments): BFCL's verdicts on them.
pub(crate) fn agentic_outputs(python: &str, outputs: &Path, extra: &[&str]) -> Vec<Value> {
    let made = std::process::Command::new(python)
        .args([
            "tests/bfcl_oracle/agentic.py",
            outputs.to_str().unwrap(),
            "--entries",
            "10",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert_success(&made);
    crate::bfcl_oracle::read_lines(&outputs.join("verdicts.jsonl"))
}

/// Replay `suite` with the `bfcl-results` models in `models` (one per
/// variant of output) and hold each verdict to BFCL's own in `verdicts`
/// (`tests/bfcl_oracle/agentic.py`'s), of which some pass and some fail.
pub(crate) fn replays_agree_with_bfcl(suite: &Path, models: &Path, out: &Path, verdicts: &[Value]) {
    crate::bfcl_oracle::replay_results(suite, models, out);
    let mut ours = std::collections::BTreeMap::new();
    for row in crate::live::rows(out) {
        ours.insert(
            (row.model.to_string(), row.scenario.to_string()),
            row.trial_success,
        );
    }
    let differ: Vec<String> = verdicts
        .iter()
        .filter(|v| {
            let key = (
                v["variant"].as_str().unwrap().to_owned(),
                v["id"].as_str().unwrap().to_owned(),
            );
            ours[&key] != v["valid"].as_bool().unwrap()
        })
        .map(|v| v.to_string())
        .collect();
    let valid = verdicts.iter().filter(|v| v["valid"] == true).count();
    assert!(
        verdicts.len() >= 140 && valid > 0 && valid < verdicts.len(),
        "{valid} of {}",
        verdicts.len()
    );
    assert_eq!(differ, Vec::<String>::new());
}
