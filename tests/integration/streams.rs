//! Streamed replies (server-sent events) assembled and parsed: every
//! recorded stream in the corpus yields the calls its events hold, read
//! independently here; any cut of a stream into chunks gives the same
//! calls as the stream whole; and the pitfalls streams have shown, each
//! on a small stream.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgauge::call::ParsedCall;
use toolgauge::provider::{Provider, stream};

/// The corpus's folders of recorded streams, under `provider-responses`.
pub(crate) const RECORDED_STREAMS: [(Provider, &str); 7] = [
    (Provider::OpenAi, "openai/chat-sse"),
    (Provider::OpenAi, "openai/chat-compatible-sse"),
    (Provider::OpenAiResponses, "openai/responses-sse"),
    (Provider::Anthropic, "anthropic/sse"),
    (Provider::Anthropic, "anthropic/sse-sdk-snapshots"),
    (Provider::Anthropic, "anthropic/sse-sdk-fixtures"),
    (Provider::Gemini, "gemini/sse"),
];

/// The recorded streams (`.txt`) in `dir`, in name order.
pub(crate) fn streams(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "txt"));
    files.sort();
    files
}

/// Each event's data as JSON (`[DONE]` and the like left out).
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// The tool names the events announce, in order, read without the
/// assembler: a Chat call's first delta with an id, a Responses
/// `function_call` item done, an Anthropic `tool_use` block started, a
/// Gemini `functionCall` part.
fn announced(provider: Provider, text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for event in events(text) {
        match provider {
            Provider::OpenAi => {
                let deltas = event.pointer("/choices/0/delta/tool_calls");
                for call in deltas.and_then(Value::as_array).into_iter().flatten() {
                    if call["id"].as_str().is_some_and(|id| !id.is_empty()) {
                        names.push(call["function"]["name"].as_str().unwrap().to_owned());
                    }
                }
            }
            Provider::OpenAiResponses => {
                if event["type"] == "response.output_item.done"
                    && event["item"]["type"] == "function_call"
                {
                    names.push(event["item"]["name"].as_str().unwrap().to_owned());
                }
            }
            Provider::Anthropic => {
                if event["type"] == "content_block_start"
                    && event["content_block"]["type"] == "tool_use"
                {
                    names.push(event["content_block"]["name"].as_str().unwrap().to_owned());
                }
            }
            Provider::Gemini => {
                let parts = event.pointer("/candidates/0/content/parts");
                for part in parts.and_then(Value::as_array).into_iter().flatten() {
                    if let Some(call) = part.get("functionCall") {
                        names.push(call["name"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
    }
    names
}

fn names(provider: Provider, body: &[u8]) -> Vec<String> {
    let parsed = provider
        .parse_stream(body)
        .unwrap_or_else(|e| panic!("{e}"));
    parsed.calls.iter().map(|c| c.name().to_owned()).collect()
}

#[test]
fn every_recorded_stream_yields_the_calls_its_events_announce() {
    let root = crate::corpora().join("provider-responses");
    let (mut files, mut calls) = (0, 0);
    for (provider, folder) in RECORDED_STREAMS {
        for path in streams(&root.join(folder)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let expected = announced(provider, &text);
            assert_eq!(
                names(provider, text.as_bytes()),
                expected,
                "{}",
                path.display()
            );
            files += 1;
            calls += expected.len();
        }
    }
    // 16 + 4 Chat, 8 Responses, 13 + 2 + 7 Anthropic, 4 Gemini streams.
    assert_eq!(files, 54, "streams read");
    assert_eq!(calls, 40, "calls in the recorded streams");
}

#[test]
fn a_recorded_responses_stream_parses_to_its_completed_responses_calls() {
    // The final `response.completed` holds the whole response: the calls
    // assembled from deltas must be the same, arguments and all.
    let root = crate::corpora().join("provider-responses/openai/responses-sse");
    for path in streams(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(completed) = events(&text)
            .into_iter()
            .find(|e| e["type"] == "response.completed")
        else {
            continue;
        };
        let whole = Provider::OpenAiResponses
            .parse_response(completed["response"].to_string().as_bytes())
            .unwrap();
        let without_final: String = text
            .split("\n\n")
            .filter(|event| !event.contains("\"response.completed\""))
            .map(|event| format!("{event}\n\n"))
            .collect();
        let assembled = Provider::OpenAiResponses
            .parse_stream(without_final.as_bytes())
            .unwrap();
        assert_eq!(assembled.calls, whole.calls, "{}", path.display());
    }
}

/// The calls of `text` fed in the chunks that `cuts` make.
fn calls_in_chunks(provider: Provider, text: &[u8], cuts: &[usize]) -> Vec<ParsedCall> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([text.len()]) {
        chunks.push(Bytes::copy_from_slice(&text[start..cut]));
        start = cut;
    }
    let frames = stream::frames(chunks).unwrap();
    let whole = stream::assemble(provider, &frames).unwrap();
    whole.parsed.unwrap().calls
}

fn recorded(path: &str) -> Vec<u8> {
    std::fs::read(crate::corpora().join("provider-responses").join(path)).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_cut_of_a_stream_gives_the_calls_of_the_whole(cuts in prop::collection::vec(0usize..100_000, 0..12)) {
        for (provider, path) in [
            (Provider::OpenAi, "openai/chat-sse/test_dbos__test_complex_agent_run_in_workflow__0.txt"),
            (Provider::Anthropic, "anthropic/sse-sdk-fixtures/tool_use_response.txt"),
            (Provider::Gemini, "gemini/sse/test_google__test_google_streaming_tool_call_thought_signature__0.txt"),
        ] {
            let text = recorded(path);
            if text.is_empty() {
                continue; // no corpus here: the recorded-streams test says so
            }
            let whole = calls_in_chunks(provider, &text, &[]);
            prop_assert!(!whole.is_empty(), "{path}");
            prop_assert_eq!(calls_in_chunks(provider, &text, &cuts), whole);
        }
    }
}

pub(crate) fn sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

pub(crate) fn chunk(delta: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn parsed(provider: Provider, text: &str) -> Vec<ParsedCall> {
    provider.parse_stream(text.as_bytes()).unwrap().calls
}

fn args(call: &ParsedCall) -> Value {
    match call {
        ParsedCall::Ok(call) => call.arguments.as_value().clone(),
        ParsedCall::Malformed(call) => panic!("malformed: {}", call.problem),
    }
}

#[test]
fn chat_calls_that_share_index_zero_are_told_apart_by_their_ids() {
    // Seen on OpenAI-compatible servers: every call at index 0.
    let text = sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\":"}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]})),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        ),
    ]) + "data: [DONE]\n\n";
    let calls = parsed(Provider::OpenAi, &text);
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].id(), args(&calls[0])), ("a", json!({"x": 1})));
    assert_eq!((calls[1].id(), calls[1].name()), ("b", "g"));
}

#[test]
fn chat_calls_interleaved_whole_or_with_the_id_last_are_assembled() {
    let text = sse(&[
        // Two calls interleaved by index; the second's id after its arguments.
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]}),
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"name": "g", "arguments": "{\"y\":"}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"arguments": "2}"}}]})),
        // A third, whole in one delta; then `stop` though calls were made.
        chunk(
            json!({"tool_calls": [{"index": 2, "id": "c", "function": {"name": "h", "arguments": "{\"z\":3}"}}]}),
        ),
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]);
    let calls = parsed(Provider::OpenAi, &text);
    let got: Vec<(&str, &str, Value)> = calls.iter().map(|c| (c.id(), c.name(), args(c))).collect();
    assert_eq!(
        got,
        [
            ("a", "f", json!({})),
            ("b", "g", json!({"y": 2})),
            ("c", "h", json!({"z": 3}))
        ]
    );
}

#[test]
fn a_stream_cut_in_the_middle_of_a_call_is_that_calls_problem() {
    let chat = sse(&[chunk(
        json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\": [1,"}}]}),
    )]);
    let calls = parsed(Provider::OpenAi, &chat);
    assert!(matches!(&calls[0], ParsedCall::Malformed(m) if m.problem.contains("not valid JSON")));
    let anthropic = sse(&[
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"x\": "}}),
    ]);
    let calls = parsed(Provider::Anthropic, &anthropic);
    assert!(matches!(&calls[0], ParsedCall::Malformed(_)), "{calls:?}");
}

#[test]
fn anthropic_input_whole_at_the_start_or_empty_first_parts_are_read() {
    let text = sse(&[
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 3}}}),
        // The whole input in content_block_start, no delta.
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}}),
        json!({"type": "content_block_stop", "index": 0}),
        // An empty first partial_json, then the parts.
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t2", "name": "g", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"y\": 2}"}}),
        // A tool with no argument at all.
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t3", "name": "h", "input": {}}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]);
    let calls = parsed(Provider::Anthropic, &text);
    let got: Vec<Value> = calls.iter().map(args).collect();
    assert_eq!(got, [json!({"x": 1}), json!({"y": 2}), json!({})]);
}

#[test]
fn responses_arguments_said_twice_are_counted_once_and_no_done_line_is_needed() {
    // `function_call_arguments.done` and `output_item.done` both carry the
    // arguments; the stream has no `[DONE]`, and `data:` may come first.
    let text = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "f", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"x\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "1}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": "{\"x\":1}"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "f", "arguments": "{\"x\":1}"}}),
    ]
    .iter()
    .map(|e| format!("data: {e}\nevent: {}\n\n", e["type"].as_str().unwrap()))
    .collect::<String>();
    let calls = parsed(Provider::OpenAiResponses, &text);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id(), args(&calls[0])),
        ("call_0", json!({"x": 1}))
    );
}

#[test]
fn gemini_calls_come_whole_per_chunk_and_text_is_joined_again() {
    let text = sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "check."}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "sig"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7}}),
    ]);
    let parsed = Provider::Gemini.parse_stream(text.as_bytes()).unwrap();
    assert_eq!(parsed.text, "Let me check.");
    assert_eq!(parsed.calls.len(), 1);
    assert_eq!(args(&parsed.calls[0]), json!({"x": 1}));
    assert_eq!(parsed.usage.output_tokens, 7);
}

/// A Chat server answering two attempts (a wrong call, then the right
/// one) whole or streamed, and refusing a request that does not ask for
/// what it sends.
struct ChatServer {
    streamed: bool,
    attempt: std::sync::Mutex<u32>,
}

impl wiremock::Respond for ChatServer {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if (body["stream"] == true) != self.streamed {
            return wiremock::ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": "unexpected stream flag"}}));
        }
        let mut attempt = self.attempt.lock().unwrap();
        *attempt += 1;
        let arguments = if *attempt == 1 {
            r#"{"city": "Paris", "units": "kelvin"}"#
        } else {
            r#"{"city": "Paris"}"#
        };
        let id = format!("call_{attempt}");
        if !self.streamed {
            return wiremock::ResponseTemplate::new(200).set_body_json(json!({
                "id": "c", "object": "chat.completion", "choices": [{"index": 0,
                    "message": {"role": "assistant", "content": null, "tool_calls": [
                        {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
                    "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
            }));
        }
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        let events = [
            chunk(json!({"role": "assistant", "content": null})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "get_weather", "arguments": head}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]})),
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}),
        ];
        wiremock::ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse(&events) + "data: [DONE]\n\n")
    }
}

pub(crate) async fn chat_server(streamed: bool) -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ChatServer {
            streamed,
            attempt: std::sync::Mutex::new(0),
        })
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_streamed_run_gives_the_verdicts_and_tokens_of_a_whole_one() {
    let mut tables = Vec::new();
    for streamed in [false, true] {
        let server = chat_server(streamed).await;
        let dir = tempfile::tempdir().unwrap();
        let base = format!("{}/v1", server.uri());
        let (output, out) =
            crate::live::run_weather(dir.path(), "openai", &base, json!({"stream": streamed}))
                .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            crate::live::stderr(&output)
        );
        let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
        let headers = reader.headers().unwrap().clone();
        let keep = [
            "attempt",
            "attempt_success",
            "failures",
            "calls",
            "input_tokens",
            "output_tokens",
        ];
        let rows: Vec<Vec<String>> = reader
            .records()
            .map(|row| {
                let row = row.unwrap();
                keep.iter()
                    .map(|k| row[headers.iter().position(|h| h == *k).unwrap()].to_owned())
                    .collect()
            })
            .collect();
        tables.push(rows);
    }
    assert_eq!(tables[0].len(), 2, "{:?}", tables[0]);
    assert_eq!(tables[0][0][2], "validation");
    assert_eq!(tables[0], tables[1]);
}

#[test]
fn exec_reads_a_captured_stream_and_refuses_a_body_that_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let captured = dir.path().join("stream.txt");
    let text = sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "echo", "arguments": "{\"message\":"}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"hi\"}"}}]})),
    ]) + "data: [DONE]\n\n";
    std::fs::write(&captured, text).unwrap();
    let path = captured.to_str().unwrap();
    let output = crate::toolgauge(&["exec", "--provider", "openai", "--stream", path]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    let returned: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(returned[0]["tool_call_id"], "call_1");
    assert_eq!(returned[0]["content"], "hi");
    let whole = dir.path().join("whole.json");
    std::fs::write(&whole, "{\"choices\": []}").unwrap();
    let output = crate::toolgauge(&[
        "exec",
        "--provider",
        "openai",
        "--stream",
        whole.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        crate::live::stderr(&output).contains("not a stream"),
        "{}",
        crate::live::stderr(&output)
    );
}

#[tokio::test]
async fn a_recorded_stream_keeps_its_events_and_replays_to_the_same_trials() {
    let server = chat_server(true).await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let model = crate::live::model_file(dir.path(), "openai", &base, json!({"stream": true}));
    let suite = crate::live::make_suite(dir.path(), "Weather in Paris?");
    let recording = dir.path().join("recording");
    let (out, replayed) = (dir.path().join("out"), dir.path().join("replayed"));
    let record = ["--record", recording.to_str().unwrap()];
    let output = crate::live::toolgauge(
        crate::live::run_args(&suite, &model, &out, &record),
        Some(crate::live::KEY),
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    // The exchanges hold the events as they came, not an assembled body.
    let mut held = 0;
    for entry in std::fs::read_dir(&recording).unwrap().flatten() {
        let recorded: Value =
            serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
        for exchange in recorded["exchanges"].as_array().unwrap() {
            if exchange["response"]
                .as_str()
                .is_some_and(|t| t.starts_with("data: "))
            {
                held += 1;
            }
        }
    }
    assert_eq!(held, 2, "recorded exchanges holding a stream");
    let replay = ["--replay", recording.to_str().unwrap()];
    let output = crate::live::toolgauge(
        crate::live::run_args(&suite, &model, &replayed, &replay),
        None,
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    let verdicts = |dir: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(dir.join("trials.csv")).unwrap();
        text.lines()
            .map(|l| l.split(',').take(9).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(verdicts(&replayed), verdicts(&out));
    // The events' times were kept: the replay has the same stream columns.
    let keep = [
        "attempt",
        "failures",
        "calls",
        "first_byte_ms",
        "first_token_ms",
        "calls_ms",
        "stream_end_ms",
    ];
    let pick = |dir: &Path| -> Vec<Vec<String>> {
        crate::stream_timing::rows(dir)
            .iter()
            .map(|r| keep.iter().map(|k| r[*k].clone()).collect())
            .collect()
    };
    let (before, after) = (pick(&out), pick(&replayed));
    assert_eq!(before.len(), 2);
    assert!(before.iter().all(|r| !r[5].is_empty()), "{before:?}");
    assert_eq!(before, after);
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        2,
        "replay used the network"
    );
}

#[test]
fn hostile_stream_events_are_read_without_a_panic() {
    // Each stream once panicked the assembler or laid out memory up to a
    // position the stream named.
    let hostile = [
        (
            Provider::OpenAiResponses,
            vec![
                json!({"type": "response.output_item.added", "output_index": u64::MAX, "item": {"type": "function_call", "name": "a", "call_id": "c"}}),
                json!({"type": "response.output_item.added", "output_index": 0, "item": "text"}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"}),
                json!({"type": "response.output_text.delta", "output_index": 0, "delta": "x"}),
                json!({"type": "response.created", "response": "not an object"}),
            ],
        ),
        (
            Provider::Anthropic,
            vec![
                json!({"type": "message_start", "message": {"usage": 5}}),
                json!({"type": "content_block_start", "index": u64::MAX, "content_block": {"type": "tool_use", "id": "t", "name": "a", "input": {}}}),
                json!({"type": "content_block_start", "index": 1, "content_block": 7}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "x"}}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
            ],
        ),
        (
            Provider::Gemini,
            vec![
                json!({"candidates": [{"content": {"parts": [{"functionCall": 5}]}}]}),
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "a", "args": 5, "willContinue": true}}]}}]}),
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {"b": 1}}}]}, "finishReason": "STOP"}]}),
            ],
        ),
    ];
    for (provider, events) in hostile {
        let frames = stream::frames([Bytes::from(sse(&events))]).unwrap();
        let whole = stream::assemble(provider, &frames).expect("JSON events");
        // Parse names what is wrong with the body they stand for; the
        // call at the far position is still read.
        match (provider, whole.parsed) {
            (Provider::Anthropic, Ok(parsed)) => {
                assert_eq!(parsed.calls.len(), 1);
                assert_eq!(parsed.calls[0].id(), "t");
                assert_eq!(parsed.usage.output_tokens, 3);
            }
            (Provider::Anthropic, Err(error)) => panic!("{error}"),
            (_, parsed) => assert!(parsed.is_err(), "{provider:?}: {parsed:?}"),
        }
    }
}
