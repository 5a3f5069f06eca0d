//! `run --otlp`: every trial as OpenTelemetry GenAI spans, sent to a
//! collector (a wiremock server that reads OTLP HTTP/protobuf as a
//! collector does) or written as OTLP JSON lines; a collector that
//! refuses, hangs or is down costs no trial and no exit code.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::assert_success;

/// The scripted mock on the weather scenario and a task with a probe,
/// two trials each, exporting as `extra` says.
async fn run_with(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args: Vec<String> = [
        "run",
        "scenarios/starter/weather_single.json",
        "scenarios/agent/conversation_order_support.json",
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolgauge"));
        command
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_SEMCONV_STABILITY_OPT_IN");
        command.envs(env);
        command.output().unwrap()
    })
    .await
    .unwrap()
}

fn text(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            AnyValue::IntValue(i) => Some(i.to_string()),
            AnyValue::BoolValue(b) => Some(b.to_string()),
            _ => None,
        })
}

/// Every span the collector received.
async fn received(server: &MockServer) -> Vec<Span> {
    let mut spans = Vec::new();
    for request in server.received_requests().await.unwrap() {
        assert_eq!(
            request.headers.get("content-type").unwrap(),
            "application/x-protobuf"
        );
        let export = ExportTraceServiceRequest::decode(request.body.as_slice()).unwrap();
        for resource in export.resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    spans
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_trial_request_and_call_reaches_the_collector_under_its_parent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = run_with(&out, &["--otlp", &server.uri()], &[]).await;
    assert_success(&output);
    let spans = received(&server).await;
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let parent = |span: &Span| by_id.get(&span.parent_span_id).copied();
    let named = |prefix: &str| -> Vec<&Span> {
        spans
            .iter()
            .filter(|s| s.name.starts_with(prefix))
            .collect()
    };
    let run = named("toolgauge run");
    assert_eq!(run.len(), 1);
    let trials = named("invoke_agent ");
    assert_eq!(trials.len(), 4, "two scenarios, two trials each");
    for trial in &trials {
        assert_eq!(parent(trial).unwrap().name, "toolgauge run");
        assert_eq!(
            text(trial, "gen_ai.operation.name").unwrap(),
            "invoke_agent"
        );
        assert_eq!(text(trial, "toolgauge.verdict").unwrap(), "pass");
        assert_eq!(text(trial, "gen_ai.system").unwrap(), "openai");
    }
    let sessions = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let replies = sessions.matches("\"type\":\"model_reply\"").count();
    let calls = sessions.matches("\"type\":\"tool_result\"").count();
    let chats = named("chat ");
    let tools = named("execute_tool ");
    assert_eq!(chats.len(), replies, "a chat span per model request");
    assert_eq!(tools.len(), calls, "an execute_tool span per call");
    assert!(calls > 0);
    for span in chats.iter().chain(&tools) {
        let attempt = parent(span).unwrap();
        assert!(attempt.name.starts_with("attempt "), "{}", attempt.name);
        assert!(parent(attempt).unwrap().name.starts_with("invoke_agent "));
        assert!(span.start_time_unix_nano <= span.end_time_unix_nano);
    }
    for tool in &tools {
        assert!(text(tool, "gen_ai.tool.name").is_some());
        assert!(text(tool, "gen_ai.tool.call.id").is_some());
        // No content without --otlp-content.
        assert!(text(tool, "gen_ai.tool.call.arguments").is_none());
    }
    let chat = chats[0];
    assert!(text(chat, "gen_ai.usage.input_tokens").is_some());
    assert!(
        chat.attributes
            .iter()
            .any(|kv| kv.key == "gen_ai.response.finish_reasons")
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!("All {} spans exported.", spans.len())),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latest_conventions_and_contents_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let file = dir.path().join("spans.jsonl");
    let output = run_with(
        &out,
        &["--otlp-file", file.to_str().unwrap(), "--otlp-content"],
        &[(
            "OTEL_SEMCONV_STABILITY_OPT_IN",
            "gen_ai_latest_experimental",
        )],
    )
    .await;
    assert_success(&output);
    let lines = std::fs::read_to_string(&file).unwrap();
    assert!(lines.ends_with('\n'));
    let mut spans = Vec::new();
    for line in lines.lines() {
        let export: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
        for resource in export.resource_spans {
            let service = resource.resource.unwrap().attributes;
            assert!(service.iter().any(|kv| kv.key == "service.name"
                && matches!(kv.value.as_ref().and_then(|v| v.value.as_ref()), Some(AnyValue::StringValue(s)) if s == "toolgauge")));
            for scope in resource.scope_spans {
                assert_eq!(scope.schema_url, "https://opentelemetry.io/schemas/1.41.0");
                spans.extend(scope.spans);
            }
        }
    }
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool get_weather")
        .unwrap();
    assert!(
        text(tool, "gen_ai.tool.call.arguments")
            .unwrap()
            .contains("city")
    );
    assert!(text(tool, "gen_ai.tool.call.result").is_some());
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    assert_eq!(text(chat, "gen_ai.provider.name").unwrap(), "openai");
    assert!(text(chat, "gen_ai.output.messages").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_refuses_hangs_or_is_down_costs_no_trial_and_no_exit_code() {
    let refusing = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&refusing)
        .await;
    let hanging = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(30)))
        .mount(&hanging)
        .await;
    // A port nothing listens on.
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    for endpoint in [refusing.uri(), hanging.uri(), down] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let output = run_with(
            &out,
            &["--otlp", &endpoint, "--min-success", "1"],
            // The hanging collector is given up on after 300 ms an export.
            &[("OTEL_EXPORTER_OTLP_TIMEOUT", "300")],
        )
        .await;
        assert_success(&output);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            stderr.matches("warning: OTLP export to").count(),
            1,
            "one warning: {stderr}"
        );
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            summary.contains("spans lost on the way to"),
            "{endpoint}: {summary}"
        );
        let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
        assert!(!trials.contains("lost"), "{trials}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_trial_says_so_and_whom_it_is_charged_to() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = serde_json::json!({
        "name": "opening_fails",
        "tools": [{
            "mcp": {"command": [crate::mcp::test_server()]},
            "only": ["counter_increment", "counter_get"],
            "per_trial": true,
        }],
        "prompt": "Count.",
        "task": {
            // Refused arguments: the opening call cannot run (the tool's doing).
            "system_from": {"tool": "counter_increment", "arguments": {"by": 0}},
            "final_state": {"probe": {"tool": "counter_get", "result": 0}},
        },
    });
    let path = dir.path().join("opening_fails.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let file = dir.path().join("spans.jsonl");
    let out = dir.path().join("out");
    let output = crate::toolgauge(&[
        "run",
        path.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--otlp-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "a run that lost its trial");
    let lines = std::fs::read_to_string(&file).unwrap();
    let spans: Vec<Span> = lines
        .lines()
        .flat_map(|l| {
            serde_json::from_str::<ExportTraceServiceRequest>(l)
                .unwrap()
                .resource_spans
        })
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    let trial = spans
        .iter()
        .find(|s| s.name == "invoke_agent opening_fails")
        .unwrap();
    assert_eq!(text(trial, "toolgauge.verdict").unwrap(), "lost");
    assert_eq!(
        text(trial, "toolgauge.failure_kind").unwrap(),
        "tool_unavailable"
    );
    assert_eq!(text(trial, "toolgauge.charged_to").unwrap(), "tool");
    assert_eq!(trial.status.as_ref().unwrap().code, 2, "an error status");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_own_traces_import_as_scenarios_the_scripted_mock_passes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("spans.jsonl");
    let output = run_with(
        &dir.path().join("out"),
        &["--otlp-file", file.to_str().unwrap(), "--otlp-content"],
        &[(
            "OTEL_SEMCONV_STABILITY_OPT_IN",
            "gen_ai_latest_experimental",
        )],
    )
    .await;
    assert_success(&output);
    let suite = dir.path().join("suite");
    let imported = crate::toolgauge(&[
        "import",
        "otel",
        file.to_str().unwrap(),
        "--out",
        suite.to_str().unwrap(),
    ]);
    assert_success(&imported);
    let said = String::from_utf8_lossy(&imported.stderr);
    // The first request of each trial that made calls: its input is text.
    let written: Vec<String> = std::fs::read_dir(&suite)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written.len(), 4, "{said}");
    assert!(
        written
            .iter()
            .any(|n| n.starts_with("otel_weather_single_")),
        "{written:?}"
    );
    // Later requests hold earlier calls: said, not guessed.
    assert!(said.contains("earlier calls and results"), "{said}");
    scripted_passes(&suite, &dir.path().join("rerun"));
}

/// The scripted mock passes every scenario of `suite`.
fn scripted_passes(suite: &Path, out: &Path) {
    assert_success(&crate::toolgauge(&[
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
    ]));
}

#[test]
fn a_foreign_agents_trace_gives_its_tools_and_calls_and_says_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    let imported = crate::toolgauge(&[
        "import",
        "otel",
        "tests/fixtures/otel/foreign_agent.jsonl",
        "--out",
        suite.to_str().unwrap(),
    ]);
    assert_success(&imported);
    let said = String::from_utf8_lossy(&imported.stderr);
    assert!(
        said.contains("c1c2c3c4c5c6c7c8: no gen_ai.output.messages"),
        "the request without content is named: {said}"
    );
    let scenario: serde_json::Value = serde_json::from_slice(
        &std::fs::read(suite.join("otel_travel-agent_5b8efff7_1.json")).unwrap(),
    )
    .unwrap();
    let tools: Vec<&str> = scenario["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["search_flights", "book_flight"]);
    // The recorded result answers the call; the arguments were JSON text.
    assert_eq!(
        scenario["tools"][0]["simulate"]["result"][0]["flight_id"],
        "UA-512"
    );
    assert_eq!(
        scenario["expect"]["calls"][0],
        serde_json::json!({"name": "search_flights", "arguments": {"from": "SFO", "to": "JFK", "date": "2026-12-24"}})
    );
    assert_eq!(scenario["messages"][0]["role"], "system");
    // It loads and the scripted mock passes it.
    scripted_passes(&suite, &dir.path().join("out"));
}
