//! Live models against servers that behave as the real ones people run:
//! they add fields of their own to replies and refuse them (and `null`
//! content) when sent back, require reasoning back unchanged, answer 200
//! with something that is not the format, cut replies at the token limit,
//! and make requests wait. Each test says what a real server did.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{
    KEY, base_url, make_suite, model_file, openai_weather_run, reply, run_args, stderr, text_reply,
    toolgauge,
};

/// Answers with `replies` in order (the last one again when they run
/// out), after checking each request with `refuse`: a refusal is an HTTP
/// error with the server's own words, as the real server gives it.
struct Scripted<F> {
    replies: Mutex<VecDeque<Value>>,
    refuse: F,
}

impl<F: Fn(&Value) -> Option<(u16, String)> + Send + Sync> Respond for Scripted<F> {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if let Some((status, message)) = (self.refuse)(&body) {
            return ResponseTemplate::new(status)
                .set_body_json(json!({"error": {"message": message}}));
        }
        let mut replies = self.replies.lock().unwrap();
        let next = if replies.len() > 1 {
            replies.pop_front().unwrap()
        } else {
            replies[0].clone()
        };
        ResponseTemplate::new(200).set_body_json(next)
    }
}

async fn serve<F>(replies: Vec<Value>, refuse: F) -> MockServer
where
    F: Fn(&Value) -> Option<(u16, String)> + Send + Sync + 'static,
{
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted {
            replies: Mutex::new(replies.into()),
            refuse,
        })
        .mount(&server)
        .await;
    server
}

/// A reply as llama-cpp-python 0.3.36 writes one under
/// `chatml-function-calling`: `content: null` beside the calls, and a
/// legacy `function_call` whose name ends in a colon.
fn llama_cpp_reply(arguments: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "smollm2-135m",
        "choices": [{"index": 0, "message": {
            "content": null,
            "tool_calls": [{"id": "call__0_get_weather_cmpl-1", "type": "function",
                "function": {"name": "get_weather", "arguments": arguments.to_string()}}],
            "role": "assistant",
            "function_call": {"name": "get_weather:", "arguments": arguments.to_string()}
        }, "logprobs": null, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 222, "completion_tokens": 12, "total_tokens": 234}
    })
}

/// What llama-cpp-python refuses with HTTP 500 (a pydantic validation
/// error, or its template failing): an assistant message whose content is
/// null or absent, or that carries fields the format does not define.
fn refuses_what_llama_cpp_python_refuses(body: &Value) -> Option<(u16, String)> {
    for message in body["messages"].as_array()? {
        if message["role"] != "assistant" {
            continue;
        }
        if !message["content"].is_string() {
            return Some((
                500,
                "7 validation errors: ... Input should be 'system'".to_owned(),
            ));
        }
        for key in message.as_object()?.keys() {
            if !["role", "content", "tool_calls", "name"].contains(&key.as_str()) {
                return Some((500, format!("7 validation errors: ... {key}")));
            }
        }
    }
    None
}

/// One trial of the weather scenario against `server` speaking
/// `provider`'s format: the run's folder (its `out`) and what it printed.
async fn one_trial(
    provider: &str,
    server: &MockServer,
) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(dir.path(), provider, &base_url(provider, server), json!({}));
    let suite = make_suite(dir.path(), "Weather in Paris?");
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    (dir, output)
}

/// A column of trials.csv by name.
fn column(out: &Path, name: &str) -> Vec<String> {
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let at = reader.headers().unwrap().iter().position(|h| h == name);
    let at = at.unwrap_or_else(|| panic!("no column {name}"));
    reader
        .records()
        .map(|r| r.unwrap()[at].to_owned())
        .collect()
}

/// A column of summary.csv's first row by name.
fn summary(out: &Path, name: &str) -> String {
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let at = reader.headers().unwrap().iter().position(|h| h == name);
    let at = at.unwrap_or_else(|| panic!("no column {name}"));
    reader.records().next().unwrap().unwrap()[at].to_owned()
}

/// `args` (from `run_args`, one trial) with `trials` trials instead.
fn with_trials(mut args: Vec<String>, trials: u32) -> Vec<String> {
    let at = args.iter().position(|a| a == "--trials").unwrap();
    args[at + 1] = trials.to_string();
    args
}

fn session(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn return_sends_the_assistant_turn_as_the_format_defines_it_not_an_echo() {
    let server = serve(
        vec![
            llama_cpp_reply(json!({"city": "Paris", "units": "kelvin"})),
            llama_cpp_reply(json!({"city": "Paris"})),
        ],
        refuses_what_llama_cpp_python_refuses,
    )
    .await;
    let (dir, output) = one_trial("openai", &server).await;
    let out = dir.path().join("out");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The second attempt was reached and answered, not refused.
    assert_eq!(column(&out, "attempt"), ["1", "2"]);
    assert_eq!(column(&out, "failures"), ["validation", ""]);
    assert_eq!(column(&out, "trial_success"), ["true", "true"]);

    let requests = server.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let assistant = &second["messages"][2];
    assert_eq!(
        assistant,
        &json!({"role": "assistant", "content": "", "tool_calls": [{
            "id": "call__0_get_weather_cmpl-1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"units\":\"kelvin\"}"}
        }]})
    );
    // What the model said is in the log for every attempt.
    let replies: Vec<Value> = session(&out)
        .into_iter()
        .filter(|e| e["type"] == "model_reply")
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(replies.iter().all(|r| r["finishReason"] == "tool_calls"));
    assert_eq!(replies[0]["inputTokens"], 222);
}

#[tokio::test]
async fn reasoning_goes_back_as_each_api_requires_and_server_extras_do_not() {
    // Anthropic: thinking blocks must come back unchanged, signature and all.
    let mut thinking = reply("anthropic", json!({"city": "Paris", "units": "kelvin"}));
    thinking["content"] = json!([
        {"type": "thinking", "thinking": "The user wants Paris.", "signature": "sig-abc"},
        {"type": "text", "text": "Let me check.", "citations": null},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
         "input": {"city": "Paris", "units": "kelvin"}, "caller": {"type": "direct"}}
    ]);
    let fixed = reply("anthropic", json!({"city": "Paris"}));
    let server = serve(vec![thinking, fixed], |body| {
        let assistant = body["messages"].as_array()?.get(1)?;
        let blocks = assistant["content"].as_array()?;
        (blocks[0]
            != json!({"type": "thinking", "thinking": "The user wants Paris.", "signature": "sig-abc"}))
        .then(|| (400, "messages.1.content.0: thinking blocks must be passed back unmodified".to_owned()))
    })
    .await;
    // Gemini: the part's thoughtSignature comes back; a field the server
    // added is refused ("Unknown name"), as Gemini refuses it.
    let mut signed = reply("gemini", json!({"city": "Paris", "units": "kelvin"}));
    signed["candidates"][0]["content"]["parts"] = json!([{
        "functionCall": {"name": "get_weather", "args": {"city": "Paris", "units": "kelvin"}},
        "thoughtSignature": "c2lnbmF0dXJl",
        "serverTrace": "x-1"
    }]);
    let gemini = serve(
        vec![signed, reply("gemini", json!({"city": "Paris"}))],
        |body| {
            let parts = body["contents"].as_array()?.get(1)?["parts"].as_array()?;
            if parts[0].get("serverTrace").is_some() {
                return Some((
                    400,
                    "Invalid JSON payload received. Unknown name \"serverTrace\"".into(),
                ));
            }
            (parts[0]["thoughtSignature"] != "c2lnbmF0dXJl").then(|| {
                (
                    400,
                    "Function call is missing a thought_signature".to_owned(),
                )
            })
        },
    )
    .await;
    for (provider, server) in [("anthropic", &server), ("gemini", &gemini)] {
        let (dir, output) = one_trial(provider, server).await;
        let out = dir.path().join("out");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {}",
            stderr(&output)
        );
        assert_eq!(column(&out, "failures"), ["validation", ""], "{provider}");
    }
    let replies: Vec<Value> = session_of_anthropic(&server).await;
    assert_eq!(replies.len(), 2);
}

/// The requests the Anthropic server received.
async fn session_of_anthropic(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn a_reply_that_is_not_the_providers_format_is_a_lost_trial_and_fails_the_run() {
    for (label, body) in [
        (
            "empty object",
            ResponseTemplate::new(200).set_body_json(json!({})),
        ),
        (
            "html page",
            ResponseTemplate::new(200)
                .set_body_string("<!doctype html><html><body>Welcome to nginx!</body></html>"),
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(body)
            .mount(&server)
            .await;
        let (dir, output) = one_trial("openai", &server).await;
        let out = dir.path().join("out");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{label}: {}",
            stderr(&output)
        );
        assert!(
            printed.contains("LOST 1 of 1 trials: bad response 1"),
            "{label}: {printed}"
        );
        assert_eq!(column(&out, "failures"), ["bad_response"], "{label}");
        assert_eq!(summary(&out, "lost_trials"), "1", "{label}");
        assert_eq!(
            summary(&out, "trials"),
            "0",
            "{label}: nothing charged to the model"
        );
        assert_eq!(summary(&out, "passed"), "no", "{label}");
        // The log says what came back instead of a response.
        let entries = session(&out);
        assert!(entries[0]["error"].is_string(), "{label}: {entries:?}");
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(html.contains("FAILED: 1 check(s)"), "{label}");
    }
}

#[tokio::test]
async fn lost_trials_fail_the_run_unless_max_lost_allows_them() {
    // The first reply is `{}`, every later one a good call.
    let flaky = || {
        serve(
            vec![json!({}), reply("openai", json!({"city": "Paris"}))],
            |_| None,
        )
    };
    let server = flaky().await;
    let run = openai_weather_run(&server, "Weather in Paris?", json!({}));
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let run = |out: &str, extra: &[&str]| {
        let mut args = with_trials(run_args(suite, model, &dir.path().join(out), extra), 2);
        args.extend(["--concurrency", "1"].map(str::to_owned));
        toolgauge(args, Some(KEY))
    };
    let strict = run("strict", &[]).await;
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
    assert!(
        stderr(&strict)
            .contains("1 of 2 trial(s) lost (bad response 1), more than --max-lost 0 allows"),
        "{}",
        stderr(&strict)
    );
    // The rate is over the trial measured, and says so.
    assert!(
        String::from_utf8_lossy(&strict.stdout).contains("100.0% of 1 measured"),
        "{}",
        String::from_utf8_lossy(&strict.stdout)
    );
    // A fresh server at another port: the model file is written again.
    let server = flaky().await;
    model_file(
        dir.path(),
        "openai",
        &base_url("openai", &server),
        json!({}),
    );
    let allowed = run("allowed", &["--max-lost", "0.5"]).await;
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
}

#[test]
fn a_tool_that_cannot_run_is_a_lost_trial_not_the_models_failure() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let tool = |name: &str, backend: Value| {
        let mut tool = json!({
            "name": name, "description": "Looks a city up.", "effect": "read",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        });
        for (k, v) in backend.as_object().unwrap() {
            tool[k] = v.clone();
        }
        tool
    };
    for (name, backend) in [
        (
            "missing_command",
            json!({"command": ["./no-such-tool-anywhere"]}),
        ),
        (
            "endpoint_down",
            json!({"http": {"url": "http://127.0.0.1:9/lookup"}}),
        ),
    ] {
        let scenario = json!({
            "name": name,
            "tools": [tool("lookup", backend)],
            "prompt": "Look Paris up.",
            "expect": {"calls": [{"name": "lookup", "arguments": {"city": "Paris"}}]}
        });
        std::fs::write(suite.join(format!("{name}.json")), scenario.to_string()).unwrap();
    }
    let out = dir.path().join("out");
    let output = crate::toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        printed.contains("LOST 4 of 4 trials: tool unavailable 4"),
        "{printed}"
    );
    assert!(
        column(&out, "failures")
            .iter()
            .all(|f| f == "tool_unavailable"),
        "{:?}",
        column(&out, "failures")
    );
    assert!(
        !printed.contains("0.0%"),
        "nothing charged to the model: {printed}"
    );
}

#[tokio::test]
async fn a_reply_cut_by_the_token_limit_is_truncated_and_the_model_is_told_so() {
    let mut cut = llama_cpp_reply(json!({}));
    cut["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] =
        json!("{\"city\": \"Pa");
    cut["choices"][0]["finish_reason"] = json!("length");
    let mut prose = text_reply("anthropic", "I will look up the weather in");
    prose["stop_reason"] = json!("max_tokens");
    let openai = serve(
        vec![cut, llama_cpp_reply(json!({"city": "Paris"}))],
        refuses_what_llama_cpp_python_refuses,
    )
    .await;
    let anthropic = serve(
        vec![prose, reply("anthropic", json!({"city": "Paris"}))],
        |_| None,
    )
    .await;
    for (provider, server) in [("openai", &openai), ("anthropic", &anthropic)] {
        let (dir, output) = one_trial(provider, server).await;
        let out = dir.path().join("out");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {}",
            stderr(&output)
        );
        // Not a parse error, not a missing call: the limit cut it.
        assert_eq!(column(&out, "failures"), ["truncated", ""], "{provider}");
        assert!(
            printed.contains("cut by the output token limit"),
            "{provider}: {printed}"
        );
        assert_eq!(summary(&out, "failures_parse"), "0", "{provider}");
        assert_eq!(summary(&out, "failures_truncated"), "1", "{provider}");
        let requests = server.received_requests().await.unwrap();
        let second = String::from_utf8_lossy(&requests[1].body);
        assert!(
            second.contains("cut off at the output token limit"),
            "{provider}: {second}"
        );
        assert!(!second.contains("not valid JSON"), "{provider}: {second}");
        assert_eq!(session(&out)[0]["truncated"], true, "{provider}");
    }
}

#[tokio::test]
async fn model_time_is_the_servers_and_the_queue_is_reported_apart() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(reply("openai", json!({"city": "Paris"}))),
        )
        .mount(&server)
        .await;
    // 60 requests a minute: each request starts 1 s after the last.
    let run = openai_weather_run(
        &server,
        "Weather in Paris?",
        json!({"requests_per_minute": 60}),
    );
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let args = with_trials(run_args(suite, model, &out, &[]), 3);
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ms = |name| -> Vec<f64> {
        column(&out, name)
            .iter()
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (model_ms, queue_ms) = (ms("model_ms"), ms("queue_ms"));
    // The pace made the later requests wait about 1 s and 2 s: that
    // wait is queue time, and the model's time stays a loopback answer.
    let mut waited = queue_ms.clone();
    waited.sort_by(f64::total_cmp);
    assert!(waited[1] >= 900.0 && waited[2] >= 1900.0, "{queue_ms:?}");
    // Had the queue been counted, the last request's time would be 2 s.
    assert!(model_ms.iter().all(|ms| *ms < 900.0), "{model_ms:?}");
}

/// An OpenAI-compatible server for doctor's probes: it calls the tool
/// when asked (twice when asked for two), answers in text after a tool
/// result or under `tool_choice: none`, stops at `max_tokens`, and counts
/// prompt tokens as words. `shows_results`: whether tool messages reach
/// "the model" (the prompt and the answer), as on a server whose chat
/// template renders them; without, as llama-cpp-python's
/// chatml-function-calling, which renders them empty.
struct ProbedServer {
    shows_results: bool,
}

impl Respond for ProbedServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let seen: Vec<&str> = messages
            .iter()
            .filter(|m| self.shows_results || m["role"] != "tool")
            .filter_map(|m| m["content"].as_str())
            .collect();
        let prompt_tokens = seen
            .iter()
            .map(|t| t.split_whitespace().count())
            .sum::<usize>();
        let last = messages.last().unwrap();
        let call = |key: &str, i: usize| {
            json!({"id": format!("call_{i}"), "type": "function",
                   "function": {"name": "lookup_word", "arguments": json!({"key": key}).to_string()}})
        };
        let (message, finish) = if body["max_tokens"] == 8 {
            (
                json!({"role": "assistant", "content": "The sea was"}),
                "length",
            )
        } else if last["role"] == "tool" {
            let heard = if self.shows_results {
                last["content"].as_str().unwrap()
            } else {
                ""
            };
            (
                json!({"role": "assistant", "content": format!("You said: {heard}")}),
                "stop",
            )
        } else if body["tool_choice"] == "none" {
            (
                json!({"role": "assistant", "content": "I cannot look it up."}),
                "stop",
            )
        } else if last["content"].as_str().unwrap().contains("twice") {
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call("alpha", 0), call("beta", 1)]}),
                "tool_calls",
            )
        } else {
            (
                json!({"role": "assistant", "content": null, "tool_calls": [call("alpha", 0)]}),
                "tool_calls",
            )
        };
        // The server that shows results also streams when asked; the
        // other ignores `stream` and answers whole, as some servers do.
        if body["stream"] == true && self.shows_results {
            let chunk = |delta: Value, finish: Value| {
                json!({"object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let events = [
                chunk(
                    json!({"role": "assistant", "tool_calls": [
                    {"index": 0, "id": "call_0", "type": "function",
                     "function": {"name": "lookup_word", "arguments": "{\"key\":"}}]}),
                    Value::Null,
                ),
                chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"alpha\"}"}}]}),
                    Value::Null,
                ),
                chunk(json!({}), json!("tool_calls")),
            ];
            let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            return ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(text + "data: [DONE]\n\n");
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}
        }))
    }
}

#[tokio::test]
async fn doctor_says_whether_tool_results_reach_the_model_and_run_warns() {
    for shows_results in [true, false] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ProbedServer { shows_results })
            .mount(&server)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let model = model_file(
            dir.path(),
            "openai",
            &base_url("openai", &server),
            json!({}),
        );
        let json_path = dir.path().join("doctor.json");
        let output = toolgauge(
            vec![
                "doctor".into(),
                model.to_str().unwrap().into(),
                "--json".into(),
                json_path.to_str().unwrap().into(),
            ],
            Some(KEY),
        )
        .await;
        let printed = String::from_utf8_lossy(&output.stdout).into_owned();
        let line = |probe: &str| -> String {
            printed
                .lines()
                .find(|l| l.trim_start().starts_with(probe))
                .unwrap_or_else(|| panic!("no {probe} line: {printed}"))
                .to_owned()
        };
        let shown = if shows_results { "yes" } else { "no" };
        for probe in ["tool results shown", "error results shown"] {
            assert!(
                line(probe).split_whitespace().any(|w| w == shown),
                "{shows_results}: {printed}"
            );
        }
        assert!(line("tool call").contains("yes"), "{printed}");
        assert!(line("parallel calls").contains("yes  "), "{printed}");
        assert!(line("tool_choice none").contains("yes"), "{printed}");
        assert!(
            line("finish reason on truncation").contains("finish reason length"),
            "{printed}"
        );
        assert!(line("usage reported").contains("yes"), "{printed}");
        assert!(
            line("streaming").split_whitespace().any(|w| w == shown),
            "{shows_results}: {printed}"
        );
        assert_eq!(
            output.status.code(),
            Some(if shows_results { 0 } else { 1 }),
            "{printed}"
        );
        let saved: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
        assert_eq!(saved["findings"][1]["verdict"], shown);

        // run --doctor probes first, keeps the findings, and warns.
        let suite = make_suite(dir.path(), "Weather in Paris?");
        let out = dir.path().join("out");
        let mut args = run_args(&suite, &model, &out, &["--doctor"]);
        args.push("--max-lost".into());
        args.push("1".into());
        let output = toolgauge(args, Some(KEY)).await;
        assert!(out.join("doctor-openai-live.json").is_file());
        assert_eq!(
            stderr(&output).contains("doctor says tool results shown: no"),
            !shows_results,
            "{}",
            stderr(&output)
        );
    }
}

/// `toolgauge doctor MODEL`: its exit and what it printed.
async fn doctor(model: &Path) -> (std::process::Output, String) {
    let output = toolgauge(
        vec!["doctor".into(), model.to_str().unwrap().into()],
        Some(KEY),
    )
    .await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    (output, printed)
}

/// Doctor's line for `probe`.
fn probe_line<'p>(printed: &'p str, probe: &str) -> &'p str {
    printed
        .lines()
        .find(|l| l.trim_start().starts_with(probe))
        .unwrap_or_else(|| panic!("no {probe} line: {printed}"))
}

#[tokio::test]
async fn doctor_on_a_model_that_streams_reads_its_whole_probes_whole() {
    // Regression: a model file with "stream": true made every probe ask
    // for a stream and read it as a whole body ("not JSON").
    let (_server, _dir, model) = streaming_model(ProbedServer {
        shows_results: true,
    })
    .await;
    let (output, printed) = doctor(&model).await;
    for probe in ["tool call ", "tool results shown", "streaming"] {
        assert!(probe_line(&printed, probe).contains(" yes "), "{printed}");
    }
    assert_eq!(output.status.code(), Some(0), "{printed}");
}

/// As llama-cpp-python's server under chatml-function-calling answers a
/// streamed request with tools and `tool_choice: auto`: the head of an
/// event stream, then nothing (it raised "Automatic streaming tool choice
/// is not supported" after the head went out); or, with `proxied`, as
/// the LiteLLM proxy (1.100.5) in front of it passes that on: a stream
/// that says `stop` with nothing in it, and a usage block of its own
/// counting the prompt only (recorded from the proxy). Whole requests are
/// answered as usual.
struct EmptyStreamServer {
    proxied: bool,
}

impl wiremock::Respond for EmptyStreamServer {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["stream"] == true {
            let events = if self.proxied {
                concat!(
                    "data: {\"id\":\"chatcmpl-a8d12467-6ab1-4147-a416-2eae19792ba7\",\"object\":\"chat.completion.chunk\",\"created\":1795485159,\"model\":\"smollm2-135m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
                    "data: {\"id\":\"chatcmpl-a8d12467-6ab1-4147-a416-2eae19792ba7\",\"object\":\"chat.completion.chunk\",\"created\":1795485159,\"model\":\"smollm2-135m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                    "data: {\"id\":\"chatcmpl-a8d12467-6ab1-4147-a416-2eae19792ba7\",\"created\":1795485159,\"model\":\"smollm2-135m\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{}}],\"usage\":{\"completion_tokens\":0,\"prompt_tokens\":41,\"total_tokens\":41,\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n",
                    "data: [DONE]\n\n"
                )
            } else {
                ""
            };
            return ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream; charset=utf-8")
                .set_body_string(events);
        }
        ProbedServer {
            shows_results: true,
        }
        .respond(request)
    }
}

/// A model file that asks for streams from a server answering as
/// `responder` does.
async fn streaming_model(
    responder: impl wiremock::Respond + 'static,
) -> (MockServer, tempfile::TempDir, std::path::PathBuf) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(
        dir.path(),
        "openai",
        &base_url("openai", &server),
        json!({"stream": true}),
    );
    (server, dir, model)
}

#[tokio::test]
async fn a_stream_that_ends_before_its_first_event_is_named_so_by_doctor_and_run() {
    let (_server, dir, model) = streaming_model(EmptyStreamServer { proxied: false }).await;
    let (_, printed) = doctor(&model).await;
    let streaming = probe_line(&printed, "streaming");
    assert!(streaming.contains(" no "), "{printed}");
    assert!(streaming.contains("then nothing"), "{printed}");

    let suite = make_suite(dir.path(), "Weather in Paris?");
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    // Lost to the server, not charged to the model, and the run fails.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("lost (bad_response): the reply is empty"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_stream_with_no_output_and_no_token_count_is_lost_not_the_models_silence() {
    let (_server, dir, model) = streaming_model(EmptyStreamServer { proxied: true }).await;
    let suite = make_suite(dir.path(), "Weather in Paris?");
    // A scenario where no call is right: an empty reply must not pass it.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/real/no_call_greeting.json"),
        suite.join("no_call_greeting.json"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("lost (bad_response): the reply is empty"),
        "{}",
        stderr(&output)
    );
    let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(trials.as_bytes());
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2, "{trials}");
    // Neither charged (a missing call) nor credited (a right silence).
    assert!(
        rows.iter().all(|r| r.failures == "bad_response"),
        "{trials}"
    );
    assert!(rows.iter().all(|r| !r.trial_success), "{trials}");
}

/// A server with one slot that counts the trials under way as it sees
/// them: a trial starts with its first request (two messages) and ends
/// with its third (six: two nudged turns), every reply text with no call.
struct OneSlotServer {
    /// (started, ended, most under way at once).
    trials: std::sync::Arc<Mutex<(usize, usize, usize)>>,
}

impl Respond for OneSlotServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap().len();
        let mut trials = self.trials.lock().unwrap();
        match messages {
            2 => {
                trials.0 += 1;
                trials.2 = trials.2.max(trials.0 - trials.1);
            }
            6 => trials.1 += 1,
            _ => {}
        }
        ResponseTemplate::new(200).set_body_json(text_reply("openai", "I would rather not."))
    }
}

#[tokio::test]
async fn a_model_that_serves_one_request_at_a_time_has_two_trials_under_way_not_all() {
    // Before: every trial of the run started at once and queued its first
    // request, so none ended (and no row was written) until the run's end.
    let trials = std::sync::Arc::new(Mutex::new((0, 0, 0)));
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(OneSlotServer {
            trials: trials.clone(),
        })
        .mount(&server)
        .await;
    let run = openai_weather_run(&server, "Weather in Paris?", json!({"concurrency": 1}));
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let mut args = run_args(suite, model, &out, &[]);
    let at = args.iter().position(|a| a == "--trials").unwrap();
    args[at + 1] = "6".to_owned();
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (started, ended, most) = *trials.lock().unwrap();
    assert_eq!((started, ended), (6, 6));
    assert!(most <= 2, "{most} trials were under way at once");
}

#[tokio::test]
async fn a_call_written_as_text_that_the_server_did_not_read_is_said_apart() {
    // llama.cpp's server (xllamacpp 0.2.12, Qwen2.5-Coder-0.5B) leaves a
    // call in the content when its arguments string is not JSON: no
    // tool_calls, finish reason stop.
    let written = r#"{"name": "get_weather", "arguments": "{\"city\":\"Paris\"}\""}"#;
    let server = serve(vec![text_reply("openai", written)], |_| None).await;
    let run = openai_weather_run(&server, "Weather in Paris?", json!({}));
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let output = toolgauge(run_args(suite, model, &out, &[]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows = crate::live::rows(&out);
    assert_eq!(rows.len(), 3);
    for row in &rows {
        // Still no call, as the format says; the reason says what it was.
        assert_eq!(row.failures, "missing_call", "{row:?}");
        assert_eq!(row.reason, "call_as_text", "{row:?}");
    }
    let verdict = String::from_utf8_lossy(&output.stdout);
    assert!(
        verdict.contains("3 repl(ies) with no call wrote one as text"),
        "{verdict}"
    );
}
