//! tau2's NL assertions judged by the judge the user names (`run
//! --judge-model`), a local OpenAI-compatible server here: only the
//! judging server gets its endpoint and key, the first verdict counts,
//! repeated verdicts that differ are counted as flips, and the judge's
//! tokens are reported apart from the agent's.

use std::path::Path;

use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::csv_rows;
use crate::live::{KEY_ENV, stderr};
use crate::tau2::{bridge_python, import};

/// A chat completion whose content is tau2's judge format, one verdict.
fn verdict(met: bool) -> ResponseTemplate {
    let content = json!({"results": [{
        "expectedOutcome": "Agent should tell the user that there are 10 t-shirt options available.",
        "reasoning": "read from the conversation",
        "metExpectation": met
    }]});
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-judge", "object": "chat.completion", "created": 0, "model": "judge-m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content.to_string()}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

fn column(out: &Path, file: &str, name: &str) -> Vec<String> {
    let mut reader = csv::Reader::from_path(out.join(file)).unwrap();
    let at = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == name)
        .unwrap();
    reader
        .records()
        .map(|r| r.unwrap()[at].to_owned())
        .collect()
}

/// A suite of retail task 16 alone, imported through the bridge into
/// `dir`: DB and one NL assertion weigh in its reward.
async fn retail_16_suite(python: String, dir: &Path) -> std::path::PathBuf {
    let imported = dir.join("retail");
    let imported_at = imported.clone();
    tokio::task::spawn_blocking(move || import(&python, "retail", &imported_at))
        .await
        .unwrap();
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let name = "tau2_retail_16.json";
    std::fs::copy(imported.join(name), suite.join(name)).unwrap();
    suite
}

/// `run SUITE` with the scripted mock and a judge at `base_url` whose key
/// is "sk-judge-secret" (`extra` flags after), into `dir`/out.
async fn run_judged(
    dir: &Path,
    suite: &Path,
    base_url: &str,
    extra: &[&str],
) -> (std::path::PathBuf, std::process::Output) {
    let judge_file = dir.join("judge.json");
    std::fs::write(
        &judge_file,
        json!({"name": "judge", "kind": "openai", "api": {
            "model": "judge-m", "base_url": base_url, "api_key_env": KEY_ENV
        }})
        .to_string(),
    )
    .unwrap();
    let out = dir.join("out");
    let mut flags = vec!["--judge-model", judge_file.to_str().unwrap()];
    flags.extend(extra);
    let scripted = Path::new("scenarios/models/scripted.json");
    let args = crate::live::run_args(suite, scripted, &out, &flags);
    let output = crate::live::toolgauge(args, Some("sk-judge-secret")).await;
    (out, output)
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
async fn nl_assertions_are_judged_by_the_named_judge_and_its_flips_are_counted() {
    let python =
        bridge_python("nl_assertions_are_judged_by_the_named_judge_and_its_flips_are_counted");
    let judge = MockServer::start().await;
    // First "met", then "not met": the same conversation judged twice flips.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-judge-secret"))
        .respond_with(verdict(true))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&judge)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-judge-secret"))
        .respond_with(verdict(false))
        .with_priority(2)
        .mount(&judge)
        .await;

    let dir = tempfile::tempdir().unwrap();
    let suite = retail_16_suite(python, dir.path()).await;
    let base_url = format!("{}/v1", judge.uri());
    let (out, output) = run_judged(dir.path(), &suite, &base_url, &["--judge-repeats", "2"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // The first verdict (met) counts: DB and NL_ASSERTION pass.
    let last = |name: &str| column(&out, "trials.csv", name).pop().unwrap();
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let probe = log
        .lines()
        .find(|l| l.contains("\"type\":\"probe\""))
        .unwrap_or_default();
    assert_eq!(last("reward"), "1.0", "{probe}");
    assert_eq!(last("reward_parts"), "DB=1.0;NL_ASSERTION=1.0");
    assert_eq!(last("judge_verdicts"), "1.0;0.0");
    assert_eq!(last("judge_input_tokens"), "200");
    assert_eq!(last("judge_output_tokens"), "40");
    // The agent's own tokens are not the judge's.
    assert!(
        column(&out, "trials.csv", "input_tokens")
            .iter()
            .all(|t| t == "0")
    );
    let scores = std::fs::read_to_string(out.join("scores.csv")).unwrap();
    for line in [
        "scripted,tag,retail,judge,flipped,1,1,1.0",
        "scripted,tag,retail,component,NL_ASSERTION,1,1,1.0",
    ] {
        assert!(scores.lines().any(|l| l == line), "{line}\n{scores}");
    }
    let asked = judge.received_requests().await.unwrap();
    assert_eq!(asked.len(), 2, "judged twice, once per repeat");
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_judging_server_is_given_the_judge_and_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = crate::conversation::mcp_test_server();
    // Each server writes the environment it was started with, then serves.
    let server_writing_env = |file: &str| {
        let env = dir.path().join(file);
        vec![
            "sh".to_owned(),
            "-c".to_owned(),
            format!("env > '{}'; exec '{}'", env.display(), server.display()),
        ]
    };
    let scenario = json!({
        "name": "judged",
        "tools": [
            {"mcp": {"command": server_writing_env("judging.env"), "judge": true}, "only": ["counter_get"]},
            {"mcp": {"command": server_writing_env("other.env")}, "only": ["add"]}
        ],
        "prompt": "What is 2 + 2?",
        "expect": {"calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}]}
    });
    let suite = dir.path().join("judged.json");
    std::fs::write(&suite, scenario.to_string()).unwrap();
    // The suite marks its own server a judge: only the user's word
    // (`--judge-server`) gives it the judge, and the run names it.
    let judging_command = server_writing_env("judging.env").join(" ");
    let flags = ["--judge-server", judging_command.as_str()];
    let (out, output) = run_judged(dir.path(), &suite, "http://127.0.0.1:9/v1", &flags).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("goes to: {judging_command}")),
        "{}",
        stderr(&output)
    );
    let judging = std::fs::read_to_string(dir.path().join("judging.env")).unwrap();
    for line in [
        "TOOLGAUGE_JUDGE_API_KEY=sk-judge-secret",
        "TOOLGAUGE_JUDGE_BASE_URL=http://127.0.0.1:9/v1",
        "TOOLGAUGE_JUDGE_MODEL=judge-m",
        "TOOLGAUGE_JUDGE_REPEATS=1",
    ] {
        assert!(judging.lines().any(|l| l == line), "{line}");
    }
    let other = std::fs::read_to_string(dir.path().join("other.env")).unwrap();
    assert!(!other.contains("TOOLGAUGE_JUDGE_"), "{other}");
    // Nor under the user's own variable: servers inherit no key.
    assert!(!other.contains("sk-judge-secret"), "{other}");
    assert_eq!(judging.matches("sk-judge-secret").count(), 1, "{judging}");
    // No report holds the key.
    for entry in std::fs::read_dir(&out).unwrap() {
        let text = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&text).contains("sk-judge-secret"));
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
async fn a_judge_that_does_not_answer_in_tau2s_json_loses_the_trial_to_the_judge_and_keeps_db() {
    let python = bridge_python(
        "a_judge_that_does_not_answer_in_tau2s_json_loses_the_trial_to_the_judge_and_keeps_db",
    );
    // A small local judge that chats instead of answering in tau2's JSON.
    let judge = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-judge", "object": "chat.completion", "created": 0, "model": "judge-m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Sure! The agent did well."}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
        })))
        .mount(&judge)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let suite = retail_16_suite(python, dir.path()).await;
    let base_url = format!("{}/v1", judge.uri());
    let (out, output) = run_judged(dir.path(), &suite, &base_url, &[]).await;
    // Lost, and not to the model: the run fails as any run that lost a trial.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(said.contains("the judge failed"), "{said}");

    let last = |name: &str| column(&out, "trials.csv", name).pop().unwrap();
    assert_eq!(last("failures"), "judge");
    assert_eq!(last("reward"), "", "unknown, never 0 or 1");
    assert_eq!(
        last("reward_parts"),
        "DB=1.0",
        "what tau2 knows without the judge"
    );
    assert_eq!(last("reward_checks"), "db_match=true");
    let summary = csv_rows(&out.join("summary.csv"));
    assert_eq!(summary[0]["lost_trials"], "1", "{summary:?}");
    assert_eq!(
        summary[0]["trials"], "0",
        "the model is not charged: {summary:?}"
    );
    assert_eq!(
        summary[0]["judge_failures"], "1",
        "the judge is: {summary:?}"
    );
    let scores = std::fs::read_to_string(out.join("scores.csv")).unwrap();
    for line in [
        "scripted,tag,retail,reward,unknown,1,1,1.0",
        "scripted,tag,retail,component,DB,1,1,1.0",
        "scripted,tag,retail,check,db_match,1,1,1.0",
    ] {
        assert!(scores.lines().any(|l| l == line), "{line}\n{scores}");
    }
}
