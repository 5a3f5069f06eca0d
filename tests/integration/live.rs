//! Live models against wiremock servers that answer with real provider
//! bodies (../shared/corpora/provider-responses, reshaped to this test's
//! tool): request bodies and headers per provider, a full self-correction
//! trial per provider, record and replay, retries and faults, and no key
//! anywhere in what toolgauge writes or prints.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use toolgauge::report::TrialRow;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::corpora;

pub(crate) const KEY: &str = "sk-test-SECRET-9f8e7d6c5b4a";
pub(crate) const KEY_ENV: &str = "TOOLGAUGE_TEST_LIVE_KEY";

pub(crate) fn corpus_body(file: &str) -> Value {
    let path = corpora().join("provider-responses").join(file);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A real reply of each provider, made to call get_weather with `args`.
pub(crate) fn reply(provider: &str, args: Value) -> Value {
    match provider {
        "openai" => {
            let mut body = corpus_body(
                "openai/chat/test_cache_prefix_stability__test_openai_tool_call_roundtrip_wire_stable_ag_ui__0.json",
            );
            body["choices"][0]["message"]["tool_calls"] = json!([{
                "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": args.to_string()}
            }]);
            body
        }
        "anthropic" => {
            let mut body =
                corpus_body("anthropic/test_anthropic__test_multiple_parallel_tool_calls__0.json");
            body["content"] = json!([
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": args}
            ]);
            body
        }
        _ => {
            let mut body = corpus_body(
                "gemini/test_google__test_google_instructions_only_with_tool_calls__0.json",
            );
            body["candidates"][0]["content"]["parts"] =
                json!([{"functionCall": {"name": "get_weather", "args": args}}]);
            body
        }
    }
}

pub(crate) fn make_suite(dir: &Path, prompt: &str) -> PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let scenario = json!({
        "name": "weather_paris",
        "tools": [{
            "name": "get_weather",
            "description": "Current weather for a city.",
            "effect": "read",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "units": {"enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            },
            "simulate": {"result": {"temp_c": 18}}
        }],
        "messages": [
            {"role": "system", "content": "Answer with tools."},
            {"role": "user", "content": prompt}
        ],
        "expect": {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    });
    std::fs::write(suite.join("weather_paris.json"), scenario.to_string()).unwrap();
    suite
}

/// `toolgauge run` of the weather suite ("Weather in Paris?", one trial)
/// against a `provider` model served at `base_url`, its `api` block
/// extended by `extra`: the command's output and its `--out` folder.
pub(crate) async fn run_weather(
    dir: &Path,
    provider: &str,
    base_url: &str,
    extra: Value,
) -> (Output, PathBuf) {
    let model = model_file(dir, provider, base_url, extra);
    let suite = make_suite(dir, "Weather in Paris?");
    let out = dir.join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    (output, out)
}

pub(crate) fn model_file(dir: &Path, provider: &str, base_url: &str, extra: Value) -> PathBuf {
    let mut api = json!({
        "model": format!("{provider}-test-model"),
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": 7,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "retry_base_ms": 1,
        "prices": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    });
    for (k, v) in extra.as_object().unwrap() {
        api[k] = v.clone();
    }
    let path = dir.join(format!("{provider}.json"));
    std::fs::write(
        &path,
        json!({"name": format!("{provider}-live"), "kind": provider, "api": api}).to_string(),
    )
    .unwrap();
    path
}

/// A fresh folder with the weather suite (asked `prompt`) and an OpenAI
/// model file on `server`, `api` added to its settings.
pub(crate) struct WeatherRun {
    pub dir: tempfile::TempDir,
    pub suite: PathBuf,
    pub model: PathBuf,
}

pub(crate) fn openai_weather_run(server: &MockServer, prompt: &str, api: Value) -> WeatherRun {
    let dir = tempfile::tempdir().unwrap();
    let suite = make_suite(dir.path(), prompt);
    let model = model_file(dir.path(), "openai", &base_url("openai", server), api);
    WeatherRun { dir, suite, model }
}

pub(crate) async fn toolgauge(args: Vec<String>, key: Option<&str>) -> Output {
    let key = key.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolgauge"));
        command.args(&args).current_dir(env!("CARGO_MANIFEST_DIR"));
        match key {
            Some(key) => command.env(KEY_ENV, key),
            None => command.env_remove(KEY_ENV),
        };
        command.output().unwrap()
    })
    .await
    .unwrap()
}

pub(crate) fn run_args(suite: &Path, model: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        suite.to_str().unwrap(),
        "--models",
        model.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(["--trials", "1", "--quiet", "--out", out.to_str().unwrap()].map(str::to_owned));
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// trials.csv's rows, read through its row type (columns by name).
pub(crate) fn rows(out: &Path) -> Vec<TrialRow<'static>> {
    csv::Reader::from_path(out.join("trials.csv"))
        .unwrap()
        .deserialize()
        .map(Result::unwrap)
        .collect()
}

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&all_text(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

/// The API root of `provider` on the mock server.
pub(crate) fn base_url(provider: &str, server: &MockServer) -> String {
    match provider {
        "gemini" => format!("{}/v1beta", server.uri()),
        _ => format!("{}/v1", server.uri()),
    }
}

/// The endpoint path each provider is posted to.
pub(crate) fn endpoint(provider: &str) -> &'static str {
    match provider {
        "openai" => "/v1/chat/completions",
        "anthropic" => "/v1/messages",
        _ => "/v1beta/models/gemini-test-model:generateContent",
    }
}

async fn self_correction_trial(provider: &str) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(endpoint(provider)))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(reply(provider, json!({"city": "Paris", "units": "kelvin"}))),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(endpoint(provider)))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(reply(provider, json!({"city": "Paris"}))),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base = base_url(provider, &server);
    let model = model_file(dir.path(), provider, &base, json!({}));
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let (out, recording) = (dir.path().join("out"), dir.path().join("recording"));
    let record = ["--record", recording.to_str().unwrap()];
    let output = toolgauge(run_args(&suite, &model, &out, &record), Some(KEY)).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{provider}: {}",
        stderr(&output)
    );

    // First attempt rejected by validation, second right.
    let trials = rows(&out);
    assert_eq!(trials.len(), 2, "{provider}: {trials:?}");
    assert_eq!(
        (trials[0].attempt_success, &*trials[0].failures),
        (false, "validation"),
        "{provider}"
    );
    assert_eq!(
        (trials[1].attempt_success, trials[1].trial_success),
        (true, true),
        "{provider}"
    );
    let (input_tokens, cost) = (trials[0].input_tokens, trials[0].cost_usd);
    assert!(
        input_tokens > 0 && cost > 0.0,
        "{provider}: usage read: {:?}",
        trials[0]
    );

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "{provider}");
    sent_in_its_format(provider, &requests);

    // Replayed offline, without the key: the same trials.
    let replayed = dir.path().join("replayed");
    let replay = ["--replay", recording.to_str().unwrap()];
    let output = toolgauge(run_args(&suite, &model, &replayed, &replay), None).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{provider}: {}",
        stderr(&output)
    );
    let again = rows(&replayed);
    let verdicts = |rows: &[TrialRow]| -> Vec<(u32, bool, String)> {
        rows.iter()
            .map(|r| (r.attempt, r.attempt_success, r.failures.to_string()))
            .collect()
    };
    assert_eq!(verdicts(&again), verdicts(&trials), "{provider}");
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        2,
        "replay used the network"
    );

    // A request the recording does not hold: an error with the closest one and a diff.
    let changed = make_suite(&dir.path().join("changed"), "What's the weather in Lyon?");
    let output = toolgauge(
        run_args(&changed, &model, &dir.path().join("miss"), &replay),
        None,
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{provider}");
    let message = stderr(&output);
    assert!(message.contains("closest recorded request"), "{message}");
    assert!(
        message.contains("-")
            && message.contains("Paris")
            && message.contains("+")
            && message.contains("Lyon"),
        "{message}"
    );

    // The key is nowhere: not in the recording, the reports or any output.
    for text in [
        all_text(&recording),
        all_text(&out),
        all_text(&replayed),
        message,
    ] {
        assert!(!text.contains(KEY), "{provider}: the key leaked");
    }
    assert!(all_text(&recording).contains("[REDACTED]"));
}

/// The two requests of a self-correction trial, as `provider`'s format
/// has them: the key in its header, the tools and settings, and the
/// reply and its error fed back in its shape.
fn sent_in_its_format(provider: &str, requests: &[wiremock::Request]) {
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let header = |name: &str| {
        requests[0]
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    match provider {
        "openai" => openai_sent(&first, &second, &header),
        "anthropic" => anthropic_sent(&first, &second, &header),
        _ => gemini_sent(&first, &second, &header),
    }
}

fn openai_sent(first: &Value, second: &Value, header: &dyn Fn(&str) -> Option<String>) {
    assert_eq!(
        header("authorization").as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first["model"], "openai-test-model");
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "Answer with tools."})
    );
    assert_eq!(first["messages"][1]["role"], "user");
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["required"],
        json!(["city"])
    );
    assert_eq!(
        (&first["tool_choice"], &first["parallel_tool_calls"]),
        (&json!("auto"), &json!(true))
    );
    assert_eq!(
        (&first["temperature"], &first["max_tokens"], &first["seed"]),
        (&json!(0.0), &json!(256), &json!(7))
    );
    // The reply and its error, fed back in OpenAI's shape.
    assert_eq!(second["messages"][2]["role"], "assistant");
    assert_eq!(second["messages"][2]["tool_calls"][0]["id"], "call_1");
    let tool = &second["messages"][3];
    assert_eq!(
        (&tool["role"], &tool["tool_call_id"]),
        (&json!("tool"), &json!("call_1"))
    );
    assert!(
        tool["content"].as_str().unwrap().contains("/units"),
        "{tool}"
    );
}

fn anthropic_sent(first: &Value, second: &Value, header: &dyn Fn(&str) -> Option<String>) {
    assert_eq!(header("x-api-key").as_deref(), Some(KEY));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(first["model"], "anthropic-test-model");
    assert_eq!(first["system"], "Answer with tools.");
    assert_eq!(first["max_tokens"], 256);
    assert_eq!(first["messages"][0]["role"], "user");
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert!(first["tools"][0]["input_schema"].is_object());
    assert_eq!(first["tool_choice"], json!({"type": "auto"}));
    assert_eq!(second["messages"][1]["role"], "assistant");
    assert_eq!(second["messages"][1]["content"][1]["type"], "tool_use");
    let result = &second["messages"][2];
    assert_eq!(result["role"], "user");
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(result["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(result["content"][0]["is_error"], true);
    assert!(
        result["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("/units")
    );
}

fn gemini_sent(first: &Value, second: &Value, header: &dyn Fn(&str) -> Option<String>) {
    assert_eq!(header("x-goog-api-key").as_deref(), Some(KEY));
    assert_eq!(
        first["systemInstruction"]["parts"][0]["text"],
        "Answer with tools."
    );
    assert_eq!(first["contents"][0]["role"], "user");
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    assert_eq!(first["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
    assert_eq!(
        first["generationConfig"],
        json!({"temperature": 0.0, "maxOutputTokens": 256, "seed": 7})
    );
    assert_eq!(second["contents"][1]["role"], "model");
    assert!(second["contents"][1]["parts"][0]["functionCall"].is_object());
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "get_weather");
    assert!(
        response["response"]["error"]
            .as_str()
            .unwrap()
            .contains("/units"),
        "{response}"
    );
}

#[tokio::test]
async fn openai_self_corrects_against_its_wire_format() {
    self_correction_trial("openai").await;
}

#[tokio::test]
async fn anthropic_self_corrects_against_its_wire_format() {
    self_correction_trial("anthropic").await;
}

#[tokio::test]
async fn gemini_self_corrects_against_its_wire_format() {
    self_correction_trial("gemini").await;
}

#[tokio::test]
async fn rate_limits_are_retried_and_client_errors_and_failures_end_only_their_trial() {
    let dir = tempfile::tempdir().unwrap();
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let good = reply("openai", json!({"city": "Paris"}));

    // 429 with Retry-After, then an answer.
    let limited = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .mount(&limited)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(good.clone()))
        .mount(&limited)
        .await;
    let model = model_file(dir.path(), "openai", &limited.uri(), json!({}));
    let out = dir.path().join("limited");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(limited.received_requests().await.unwrap().len(), 2);
    assert!(rows(&out)[0].trial_success);

    // 400 and 401: no retry; the trial is a transport error, the run goes on.
    for status in [400, 401] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(status).set_body_json(json!({"error": {"message": "nope"}})),
            )
            .mount(&server)
            .await;
        let model = model_file(dir.path(), "openai", &server.uri(), json!({}));
        let out = dir.path().join(format!("status{status}"));
        let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
        assert_unmeasured_run_fails(&out, &output);
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            1,
            "HTTP {status} was retried"
        );
        assert_eq!(rows(&out)[0].failures, "transport_error");
        assert!(
            stderr(&output).contains(&format!("HTTP {status} after 1 try")),
            "{}",
            stderr(&output)
        );
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            summary.contains("1 trial(s) lost to infrastructure"),
            "{summary}"
        );
        assert!(!stderr(&output).contains(KEY));
    }

    // A stalled server is timed out.
    let stalled = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(good)
                .set_delay(std::time::Duration::from_secs(30)),
        )
        .mount(&stalled)
        .await;
    let model = model_file(
        dir.path(),
        "openai",
        &stalled.uri(),
        json!({"timeout_ms": 150, "max_attempts": 2}),
    );
    let out = dir.path().join("stalled");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_unmeasured_run_fails(&out, &output);
    assert_eq!(rows(&out)[0].failures, "transport_error");
    assert_eq!(
        stalled.received_requests().await.unwrap().len(),
        2,
        "a timeout is retried"
    );
    assert!(
        stderr(&output).contains("(after 2 tries)"),
        "{}",
        stderr(&output)
    );

    // Nothing listening: retried, then a transport error; the run finishes.
    let model = model_file(
        dir.path(),
        "openai",
        "http://127.0.0.1:9/v1",
        json!({"max_attempts": 3}),
    );
    let out = dir.path().join("refused");
    let output = toolgauge(
        run_args(&suite, &model, &out, &["--min-success", "0.5"]),
        Some(KEY),
    )
    .await;
    assert_unmeasured_run_fails(&out, &output);
    assert_eq!(rows(&out)[0].failures, "transport_error");
    assert!(
        stderr(&output).contains("(after 3 tries)"),
        "{}",
        stderr(&output)
    );
}

/// A run whose every trial was a transport error measured nothing: it
/// fails (exit 1, a JUnit failure) and shows no rates, threshold or not.
fn assert_unmeasured_run_fails(out: &Path, output: &std::process::Output) {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    assert!(
        stderr(output).contains("not measured: all 1 trial(s) lost (transport error 1)"),
        "{}",
        stderr(output)
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("failures=\"1\"") && junit.contains("<failure"),
        "{junit}"
    );
    let mut summary = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let headers = summary.headers().unwrap().clone();
    let row = summary.records().next().unwrap().unwrap();
    let column = |name: &str| &row[headers.iter().position(|h| h == name).unwrap()];
    assert_eq!(column("final_success"), "");
    assert_eq!(column("success_at_1"), "");
    assert_eq!(column("passed"), "no");
    assert_eq!(column("lost_trials"), "1");
}

#[tokio::test]
async fn a_missing_key_variable_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let model = model_file(dir.path(), "anthropic", "http://127.0.0.1:9/v1", json!({}));
    let output = toolgauge(run_args(&suite, &model, &dir.path().join("out"), &[]), None).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "the environment variable TOOLGAUGE_TEST_LIVE_KEY (api.api_key_env) is not set"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("out/trials.csv").exists());
}

#[test]
fn the_example_live_model_files_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/examples/live-models");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        let model = toolgauge::model::ModelFile::load(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // load checks the api block too.
        assert!(model.is_live(), "{}", path.display());
        loaded += 1;
    }
    assert_eq!(loaded, 6);
}

/// A real final reply of each provider: text, no call, the turn ended.
pub(crate) fn text_reply(provider: &str, text: &str) -> Value {
    let mut body = reply(provider, json!({}));
    match provider {
        "openai" => {
            let message = &mut body["choices"][0]["message"];
            message.as_object_mut().unwrap().remove("tool_calls");
            message["content"] = json!(text);
            body["choices"][0]["finish_reason"] = json!("stop");
        }
        "anthropic" => {
            body["content"] = json!([{"type": "text", "text": text}]);
            body["stop_reason"] = json!("end_turn");
        }
        _ => {
            body["candidates"][0]["content"]["parts"] = json!([{"text": text}]);
            body["candidates"][0]["finishReason"] = json!("STOP");
        }
    }
    body
}

/// A task on a live model: a rejected call, two good ones, then the answer.
/// Every request carries every earlier call and result (the error too) in
/// the provider's shape, and the last one all three turns.
async fn task_conversation(provider: &str) {
    let server = MockServer::start().await;
    let replies = [
        reply(provider, json!({"city": "Paris", "units": "kelvin"})),
        reply(provider, json!({"city": "Paris"})),
        reply(provider, json!({"city": "Lyon"})),
        text_reply(provider, "Paris is 18 C, and so is Lyon."),
    ];
    for body in replies {
        Mock::given(method("POST"))
            .and(path(endpoint(provider)))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = base_url(provider, &server);
    let model = model_file(dir.path(), provider, &base, json!({}));
    let suite = make_suite(dir.path(), "Compare the weather in Paris and Lyon.");
    let path = suite.join("weather_paris.json");
    let mut scenario: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    scenario.as_object_mut().unwrap().remove("expect");
    scenario["task"] = json!({
        "max_turns": 6,
        "milestones": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_weather", "arguments": {"city": "Lyon"}}
        ],
        "answer": {"$contains": "Lyon"}
    });
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{provider}: {}",
        stderr(&output)
    );

    let turns = rows(&out);
    let column = |f: fn(&TrialRow) -> String| -> Vec<String> { turns.iter().map(f).collect() };
    assert_eq!(
        column(|r| r.attempt.to_string()),
        ["1", "2", "3", "4"],
        "{provider}: turns"
    );
    assert_eq!(
        column(|r| r.failures.to_string()),
        ["validation", "", "", ""],
        "{provider}: failures"
    );
    assert_eq!(
        column(|r| r.milestones.to_string()),
        ["0", "1", "1", "0"],
        "{provider}: milestones"
    );
    assert_eq!(
        column(|r| r.recovered.to_string()),
        ["1", "0", "0", "0"],
        "{provider}: recovered"
    );
    assert_eq!(
        column(|r| r.ended.to_string()),
        ["", "", "", "answer"],
        "{provider}: ending"
    );
    assert!(turns[3].trial_success, "{provider}: the task succeeded");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 4, "{provider}");
    let last: Value = serde_json::from_slice(&requests[3].body).unwrap();
    // What each turn sent back, in order: the error, then both results.
    let results: Vec<String> = match provider {
        "openai" => {
            let messages = last["messages"].as_array().unwrap();
            // system, user, then (assistant with its call, tool result) x 3
            assert_eq!(messages.len(), 2 + 2 * 3, "{provider}: {last}");
            for turn in 0..3 {
                assert_eq!(messages[2 + 2 * turn]["role"], "assistant");
                assert_eq!(messages[2 + 2 * turn]["tool_calls"][0]["id"], "call_1");
                assert_eq!(messages[3 + 2 * turn]["role"], "tool");
            }
            (0..3)
                .map(|t| messages[3 + 2 * t]["content"].as_str().unwrap().to_owned())
                .collect()
        }
        "anthropic" => {
            let messages = last["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 1 + 2 * 3, "{provider}: {last}");
            for turn in 0..3 {
                assert_eq!(messages[1 + 2 * turn]["role"], "assistant");
                assert_eq!(messages[1 + 2 * turn]["content"][1]["type"], "tool_use");
                assert_eq!(messages[2 + 2 * turn]["content"][0]["type"], "tool_result");
            }
            assert_eq!(messages[2]["content"][0]["is_error"], true);
            (0..3)
                .map(|t| {
                    messages[2 + 2 * t]["content"][0]["content"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect()
        }
        _ => {
            let contents = last["contents"].as_array().unwrap();
            assert_eq!(contents.len(), 1 + 2 * 3, "{provider}: {last}");
            for turn in 0..3 {
                assert_eq!(contents[1 + 2 * turn]["role"], "model");
                assert!(contents[1 + 2 * turn]["parts"][0]["functionCall"].is_object());
            }
            (0..3)
                .map(|t| {
                    contents[2 + 2 * t]["parts"][0]["functionResponse"]["response"].to_string()
                })
                .collect()
        }
    };
    assert!(results[0].contains("/units"), "{provider}: {results:?}");
    assert!(
        results[1].contains("temp_c") && results[2].contains("temp_c"),
        "{provider}: {results:?}"
    );
}

#[tokio::test]
async fn openai_task_conversations_carry_every_call_and_result() {
    task_conversation("openai").await;
}

#[tokio::test]
async fn anthropic_task_conversations_carry_every_call_and_result() {
    task_conversation("anthropic").await;
}

#[tokio::test]
async fn gemini_task_conversations_carry_every_call_and_result() {
    task_conversation("gemini").await;
}

/// The seeds the requests a run sent carried, in the order received.
async fn seeds_sent(server: &MockServer) -> Vec<u64> {
    let requests = server.received_requests().await.unwrap();
    server.reset().await;
    requests
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_seed_of_trial_sends_each_trial_its_own_seed_alike_in_every_arm() {
    let server = MockServer::start().await;
    let answer = || {
        Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(200).set_body_json(reply("openai", json!({"city": "Paris"}))),
        )
    };
    answer().mount(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for name in ["arm-a", "arm-b"] {
        let api = json!({"model": "m", "base_url": base_url("openai", &server),
            "temperature": 0.7, "seed": "trial", "retry_base_ms": 1});
        let file = json!({"name": name, "kind": "openai", "api": api});
        std::fs::write(models.join(format!("{name}.json")), file.to_string()).unwrap();
    }
    let run = |seed: &'static str, out: &str| {
        let mut args = run_args(&suite, &models, &dir.path().join(out), &["--seed", seed]);
        args.iter_mut()
            .filter(|a| *a == "1")
            .for_each(|a| *a = "3".into());
        args
    };
    let sorted = |mut seeds: Vec<u64>| {
        seeds.sort_unstable();
        seeds
    };

    let output = toolgauge(run("5", "first"), None).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let first = sorted(seeds_sent(&server).await);
    answer().mount(&server).await;
    assert_eq!(first.len(), 6, "3 trials in 2 arms: {first:?}");
    let mut distinct = first.clone();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "one seed per trial, alike in both arms: {first:?}"
    );
    assert!(
        first.iter().all(|&s| s < 1 << 31),
        "32-bit servers read it: {first:?}"
    );

    let output = toolgauge(run("5", "again"), None).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        sorted(seeds_sent(&server).await),
        first,
        "the same run seed, the same seeds"
    );
    answer().mount(&server).await;

    let output = toolgauge(run("6", "other"), None).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_ne!(
        sorted(seeds_sent(&server).await),
        first,
        "another run seed, other seeds"
    );

    let bad = models.join("arm-a.json");
    let text = std::fs::read_to_string(&bad)
        .unwrap()
        .replace("\"trial\"", "\"each\"");
    std::fs::write(&bad, text).unwrap();
    let output = toolgauge(run("5", "bad"), None).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("\"trial\""), "{}", stderr(&output));
}

#[tokio::test]
async fn an_exchange_that_cannot_be_recorded_is_said_not_swallowed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(endpoint("openai")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(reply("openai", json!({"city": "Paris"}))),
        )
        .mount(&server)
        .await;
    let run = openai_weather_run(&server, "What's the weather in Paris?", json!({}));
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let recording = dir.path().join("recording");
    let record = ["--record", recording.to_str().unwrap()];
    let first = dir.path().join("first");
    let output = toolgauge(run_args(suite, model, &first, &record), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Every recorded file spoiled: the next run cannot add to any.
    for entry in std::fs::read_dir(&recording).unwrap() {
        std::fs::write(entry.unwrap().path(), "not json").unwrap();
    }
    let second = dir.path().join("second");
    let output = toolgauge(run_args(suite, model, &second, &record), Some(KEY)).await;
    // The trial itself is measured; the loss is said on stderr.
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--record: "),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains(recording.to_str().unwrap()),
        "{}",
        stderr(&output)
    );
}
