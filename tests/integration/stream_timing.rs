//! When a streamed reply's parts came, and calls run before it ended:
//! each format's moment a call is complete; Vertex's argument pieces;
//! a stream read as it comes, timed event by event on a paused clock;
//! a streamed run's latency columns and its calls run early (a recording
//! replaying to the same timings is checked with the replay test in
//! `streams`).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use toolgauge::call::ParsedCall;
use toolgauge::provider::Provider;
use toolgauge::provider::stream::{self, Assembly, Frame};

use crate::streams::{chat_server, chunk, sse};

/// The calls each event completes, feeding `events` one per millisecond;
/// and the timings at the end.
fn completions(provider: Provider, events: &[Value]) -> (Vec<Vec<usize>>, Vec<u64>, Option<u64>) {
    let mut assembly = Assembly::new(provider);
    let mut each = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let frame = Frame {
            event: None,
            data: event.to_string(),
        };
        each.push(
            assembly
                .push(&frame, Duration::from_millis(i as u64))
                .collect(),
        );
    }
    let end = Duration::from_millis(events.len() as u64);
    let timing = assembly.finish(Duration::ZERO, end).unwrap().timing;
    let ms = |d: Duration| d.as_millis() as u64;
    (
        each,
        timing.calls.iter().map(|d| ms(*d)).collect(),
        timing.first_token.map(ms),
    )
}

fn call_delta(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut part = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        part["id"] = json!(id);
    }
    if let Some(name) = name {
        part["function"]["name"] = json!(name);
    }
    chunk(json!({"tool_calls": [part]}))
}

#[test]
fn each_format_says_when_a_call_is_complete() {
    // Chat: a call is complete when the next begins, or the choice finishes.
    let chat = [
        chunk(json!({"role": "assistant"})),
        chunk(json!({"content": "Checking."})),
        call_delta(0, Some("c1"), Some("f"), "{\"a\":"),
        call_delta(0, None, None, "1}"),
        call_delta(1, Some("c2"), Some("g"), "{}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let (each, calls, first_token) = completions(Provider::OpenAi, &chat);
    assert_eq!(each, [vec![], vec![], vec![], vec![], vec![0], vec![1]]);
    assert_eq!((calls, first_token), (vec![4, 5], Some(1)));

    // Responses: at the call item's output_item.done.
    let item = |id: &str| json!({"type": "function_call", "id": id, "call_id": id, "name": "f", "arguments": ""});
    let responses = [
        json!({"type": "response.created", "response": {"id": "r", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item("a")}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "a", "delta": "{}"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item("a")}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": item("b")}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": item("b")}),
    ];
    let (each, calls, first_token) = completions(Provider::OpenAiResponses, &responses);
    assert_eq!(each[3], [0]);
    assert_eq!(each[5], [1]);
    assert_eq!((calls, first_token), (vec![3, 5], Some(1)));

    // Anthropic: at the tool block's content_block_stop.
    let anthropic = [
        json!({"type": "message_start", "message": {"role": "assistant", "content": []}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hm."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
    ];
    let (each, calls, first_token) = completions(Provider::Anthropic, &anthropic);
    assert_eq!(each[6], [0]);
    assert_eq!((calls, first_token), (vec![6], Some(2)));

    // Gemini: each call part whole, when it comes.
    let gemini = [
        json!({"candidates": [{"content": {"parts": [{"text": "Sure."}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "g", "args": {}}}]}, "finishReason": "STOP"}]}),
    ];
    let (each, calls, _) = completions(Provider::Gemini, &gemini);
    assert_eq!(each, [vec![], vec![0], vec![1]]);
    assert_eq!(calls, [1, 2]);
}

fn gemini_call(call: Value) -> Value {
    json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"functionCall": call}]}}]})
}

#[test]
fn vertex_partial_arguments_are_joined_into_one_call_complete_when_it_stops_continuing() {
    let events = [
        gemini_call(json!({"name": "book", "id": "b1", "willContinue": true})),
        gemini_call(json!({"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "San ", "willContinue": true},
            {"jsonPath": "$.nights", "numberValue": 2}
        ], "willContinue": true})),
        gemini_call(json!({"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "Francisco"},
            {"jsonPath": "$.guest.names[1]", "stringValue": "Lin"},
            {"jsonPath": "$['guest']['names'][0]", "stringValue": "Ada"},
            {"jsonPath": "$.breakfast", "boolValue": true},
            {"jsonPath": "$.note", "nullValue": "NULL_VALUE"}
        ], "willContinue": false})),
        gemini_call(json!({"name": "pay", "args": {"amount": 3}})),
    ];
    let text = sse(&events);
    let parsed = Provider::Gemini.parse_stream(text.as_bytes()).unwrap();
    let calls: Vec<(String, Value)> = parsed
        .calls
        .iter()
        .map(|c| match c {
            ParsedCall::Ok(c) => (c.name.clone(), c.arguments.as_value().clone()),
            ParsedCall::Malformed(c) => panic!("malformed: {c:?}"),
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "book".to_owned(),
                json!({"city": "San Francisco", "nights": 2,
                       "guest": {"names": ["Ada", "Lin"]}, "breakfast": true, "note": null})
            ),
            ("pay".to_owned(), json!({"amount": 3})),
        ]
    );
    // The pieces do not make a call each; the call is complete at the
    // piece that stops continuing.
    let (each, calls, _) = completions(Provider::Gemini, &events);
    assert_eq!(each, [vec![], vec![], vec![0], vec![1]]);
    assert_eq!(calls, [2, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_stream_read_as_it_comes_is_timed_event_by_event() {
    let sent = tokio::time::Instant::now();
    let events = [
        chunk(json!({"role": "assistant"})),
        chunk(json!({"content": "One moment."})),
        call_delta(0, Some("c1"), Some("f"), "{\"a\""),
        call_delta(0, None, None, ":1}"),
        call_delta(1, Some("c2"), Some("g"), "{}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let text = sse(&events) + "data: [DONE]\n\n";
    // Cut anywhere (here, inside the fourth event): an event counts when
    // its last byte came. One piece every 100 ms from 100 ms on.
    let cuts = [
        0,
        40,
        text.find("\":1}").unwrap(),
        text.len() - 30,
        text.len(),
    ];
    let pieces: Vec<Bytes> = cuts
        .windows(2)
        .map(|w| Bytes::copy_from_slice(&text.as_bytes()[w[0]..w[1]]))
        .collect();
    let chunks = futures_util::stream::unfold(pieces.into_iter(), |mut rest| async move {
        let piece = rest.next()?;
        // The clock is paused (start_paused): this advances it at once,
        // exactly 100 ms, with no real wait.
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some((Ok::<_, std::io::Error>(piece), rest))
    });
    let mut handed = Vec::new();
    let received = stream::read(
        Provider::OpenAi,
        chunks,
        sent,
        None,
        |assembly: &stream::Assembly, complete| {
            for k in complete {
                handed.push((k, assembly.call(k).map(|c| c.name().to_owned())));
            }
        },
    )
    .await;
    assert_eq!(received.failure, None);
    assert_eq!(received.raw, text.as_bytes());
    let timing = received.assembled.unwrap().timing;
    let ms = |d: Duration| d.as_millis() as u64;
    assert_eq!(ms(timing.first_byte), 100);
    // The text's event ends in the second piece; the first call is
    // complete when the second begins (third piece), the second at the
    // finish (fourth).
    assert_eq!(timing.first_token.map(ms), Some(200));
    assert_eq!(
        timing.calls.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
        [300, 400]
    );
    assert_eq!(ms(timing.end), 400);
    assert_eq!(
        handed,
        [(0, Some("f".to_owned())), (1, Some("g".to_owned()))]
    );
}

/// trials.csv's rows as maps of column to value.
pub(crate) fn rows(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(dir.join("trials.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            headers
                .iter()
                .zip(row.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

async fn run(api: Value, extra: &[&str], dir: &Path, name: &str) -> std::path::PathBuf {
    let server = chat_server(api["stream"] == true).await;
    let base = format!("{}/v1", server.uri());
    let model = crate::live::model_file(dir, "openai", &base, api);
    let suite = crate::live::make_suite(dir, "Weather in Paris?");
    let out = dir.join(name);
    let output = crate::live::toolgauge(
        crate::live::run_args(&suite, &model, &out, extra),
        Some(crate::live::KEY),
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    out
}

#[tokio::test]
async fn a_streamed_run_reports_first_token_and_first_call_and_runs_its_calls_early() {
    let dir = tempfile::tempdir().unwrap();
    let whole = run(json!({}), &[], dir.path(), "whole").await;
    let early = run(
        json!({"stream": true, "execute_early": true}),
        &[],
        dir.path(),
        "early",
    )
    .await;
    let (whole, early_rows) = (rows(&whole), rows(&early));
    let verdict = |r: &std::collections::BTreeMap<String, String>| {
        ["attempt", "attempt_success", "failures", "calls"].map(|k| r[k].clone())
    };
    assert_eq!(
        whole.iter().map(verdict).collect::<Vec<_>>(),
        early_rows.iter().map(verdict).collect::<Vec<_>>()
    );
    for row in &whole {
        assert_eq!(
            row["first_token_ms"], "",
            "a whole reply has no stream times"
        );
        assert_eq!(row["ran_early"], "0");
    }
    for row in &early_rows {
        let ms = |k: &str| {
            row[k]
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("{k}: {row:?}"))
        };
        assert!(ms("first_byte_ms") <= ms("first_call_ms"), "{row:?}");
        assert!(ms("first_call_ms") <= ms("stream_end_ms"), "{row:?}");
        assert!(ms("stream_end_ms") <= ms("turn_ms"), "{row:?}");
        assert_eq!(row["calls_ms"], row["first_call_ms"]);
        assert_eq!(row["ran_early"], "1", "the call ran before the reply ended");
    }
    let log = std::fs::read_to_string(early.join("session.jsonl")).unwrap();
    let replies: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "model_reply")
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(
        replies
            .iter()
            .all(|r| r["stream"]["callsMs"].as_array().unwrap().len() == 1)
    );
    let summary = std::fs::read_to_string(early.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(summary.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let row = reader.records().next().unwrap().unwrap();
    let column = |name: &str| row[headers.iter().position(|h| h == name).unwrap()].to_owned();
    assert_eq!(column("streamed_attempts"), "2");
    assert!(column("first_call_p95_ms").parse::<f64>().is_ok());
    assert!(column("early_speedup").parse::<f64>().is_ok());
    let md = std::fs::read_to_string(early.join("summary.md")).unwrap();
    assert!(md.contains("## Streamed replies"), "{md}");
}

#[test]
fn execute_early_without_a_stream_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let model = crate::live::model_file(
        dir.path(),
        "openai",
        "http://127.0.0.1:9/v1",
        json!({"execute_early": true}),
    );
    let suite = crate::live::make_suite(dir.path(), "Weather in Paris?");
    let out = dir.path().join("out");
    let args = crate::live::run_args(&suite, &model, &out, &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = crate::toolgauge(&args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = crate::live::stderr(&output);
    assert!(stderr.contains("/api/execute_early"), "{stderr}");
    assert!(stderr.contains("\"stream\": true"), "{stderr}");
}

/// `text` read as a stream that arrives whole, with no deadline.
async fn read_whole(provider: Provider, text: &str) -> stream::Received {
    let chunks = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::copy_from_slice(
        text.as_bytes(),
    ))]);
    stream::read(
        provider,
        chunks,
        tokio::time::Instant::now(),
        None,
        |_: &Assembly, _| {},
    )
    .await
}

/// One stream per format that ends as its format ends, with the event
/// that begins it and the one that ends it.
pub(crate) fn whole_streams() -> Vec<(Provider, Vec<Value>, Value)> {
    vec![
        (
            Provider::OpenAi,
            vec![chunk(json!({"role": "assistant", "content": "Hi"}))],
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ),
        (
            Provider::OpenAiResponses,
            vec![json!({"type": "response.created", "response": {"id": "r", "output": []}})],
            json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}]}}),
        ),
        (
            Provider::Anthropic,
            vec![
                json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 3}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}}),
            ],
            json!({"type": "message_stop"}),
        ),
        (
            Provider::Gemini,
            vec![
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]}),
            ],
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "!"}]}, "finishReason": "STOP"}]}),
        ),
    ]
}

#[tokio::test]
async fn a_stream_cut_before_its_last_event_or_carrying_an_error_has_failed() {
    let errors = [
        json!({"error": {"type": "server_error", "message": "The server had an error"}}),
        json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "The server had an error"}}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        json!({"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}),
    ];
    for ((provider, begin, end), error) in whole_streams().into_iter().zip(errors) {
        let whole = sse(&[begin.clone(), vec![end.clone()]].concat());
        assert_eq!(
            read_whole(provider, &whole).await.failure,
            None,
            "{provider:?}"
        );
        let cut = sse(&begin);
        let failure = read_whole(provider, &cut).await.failure;
        assert!(
            failure
                .as_ref()
                .is_some_and(|f| f.message.contains("ended before its last event")),
            "{provider:?}: {failure:?}"
        );
        let broken = sse(&[begin, vec![error]].concat());
        let failure = read_whole(provider, &broken).await.failure.unwrap();
        assert!(
            failure.message.contains("sent an error in the stream")
                && (failure.message.contains("overloaded")
                    || failure.message.contains("server had an error")
                    || failure.message.contains("Overloaded")),
            "{provider:?}: {failure:?}"
        );
        assert!(
            read_whole(provider, "").await.failure.is_some(),
            "{provider:?}: nothing came"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_stalls_fails_at_its_deadline_with_what_came() {
    let sent = tokio::time::Instant::now();
    let first = Bytes::from(sse(&[chunk(json!({"role": "assistant", "content": "Hi"}))]));
    // One event, then nothing for ever.
    let chunks = futures_util::StreamExt::chain(
        futures_util::stream::iter([Ok::<_, std::io::Error>(first)]),
        futures_util::stream::pending(),
    );
    let received = stream::read(
        Provider::OpenAi,
        chunks,
        sent,
        Some(sent + Duration::from_secs(5)),
        |_: &Assembly, _| {},
    )
    .await;
    let failure = received.failure.unwrap();
    assert!(failure.timed_out, "{failure:?}");
    assert!(
        failure.message.contains("stalled") && failure.message.contains("5000 ms"),
        "{failure:?}"
    );
    assert_eq!(sent.elapsed(), Duration::from_secs(5));
    assert!(received.assembled.is_some());
}

#[tokio::test]
async fn every_recorded_stream_ends_as_its_format_ends() {
    let root = crate::corpora().join("provider-responses");
    let mut failed = Vec::new();
    let mut read = 0;
    for (provider, folder) in crate::streams::RECORDED_STREAMS {
        let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let text = std::fs::read_to_string(&path).unwrap();
            read += 1;
            if let Some(failure) = read_whole(provider, &text).await.failure {
                failed.push(format!("{}: {}", path.display(), failure.message));
            }
        }
    }
    assert!(read >= 54, "streams read: {read}");
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The calls handed over early, in order, and the reply's own calls, of
/// `text` replayed event by event.
fn early_and_final(provider: Provider, text: &str) -> (Vec<ParsedCall>, Vec<ParsedCall>) {
    let mut early = Vec::new();
    let received = stream::replay(
        provider,
        text.as_bytes(),
        Duration::ZERO,
        &[],
        |assembly: &Assembly, complete| {
            for k in complete {
                early.extend(assembly.call(k));
            }
        },
    );
    let parsed = received.assembled.expect("events").parsed.expect("a reply");
    (early, parsed.calls)
}

#[test]
fn a_call_run_early_is_the_same_call_in_the_reply_for_every_recorded_stream() {
    let root = crate::corpora().join("provider-responses");
    let mut differ = Vec::new();
    let mut early_calls = 0;
    for (provider, folder) in crate::streams::RECORDED_STREAMS {
        for path in crate::streams::streams(&root.join(folder)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let (early, reply) = early_and_final(provider, &text);
            early_calls += early.len();
            // Every call of the reply was complete by the end; each handed
            // over early is the reply's, id included, or it would run twice.
            if early != reply {
                differ.push(format!("{}: {early:?} != {reply:?}", path.display()));
            }
        }
    }
    assert!(early_calls >= 40, "calls handed over early: {early_calls}");
    assert!(differ.is_empty(), "{differ:#?}");
}

#[test]
fn a_gemini_call_with_no_id_is_the_same_call_early_and_in_the_reply() {
    let chunks = [
        gemini_call(json!({"name": "book", "args": {"room": 1}})),
        gemini_call(json!({"name": "pay", "args": {"amount": 3}})),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "done"}]}, "finishReason": "STOP"}]}),
    ];
    let text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    let (early, reply) = early_and_final(Provider::Gemini, &text);
    assert_eq!(early.len(), 2);
    assert_eq!(early, reply);
    assert!(
        reply[0]
            .id()
            .starts_with(toolgauge::provider::GENERATED_ID_PREFIX)
    );
}

#[test]
fn a_vertex_piece_at_a_far_index_is_the_arrays_next_item() {
    // Before, the array was laid out up to the index (an overflow panic at
    // 2^64-1, gigabytes below it).
    let chunks = [
        gemini_call(json!({"name": "book", "id": "b1", "willContinue": true})),
        gemini_call(json!({"partialArgs": [
            {"jsonPath": "$.rooms[18446744073709551615]", "numberValue": 7},
            {"jsonPath": "$.rooms[4000000000]", "numberValue": 8}
        ]})),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}),
    ];
    let text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    let (_, reply) = early_and_final(Provider::Gemini, &text);
    let ParsedCall::Ok(call) = &reply[0] else {
        panic!("{reply:?}")
    };
    assert_eq!(call.arguments.as_value(), &json!({"rooms": [7, 8]}));
}

/// An Anthropic server that streams its call with no id, the wrong city
/// first, and refuses a conversation whose `tool_result` answers no
/// `tool_use` of the assistant turn before it, as the Messages API does.
struct UnnamedCalls {
    requests: std::sync::Mutex<u32>,
}

impl wiremock::Respond for UnnamedCalls {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut requests = self.requests.lock().unwrap();
        *requests += 1;
        if *requests > 1 {
            let messages = body["messages"].as_array().unwrap();
            let used: Vec<&Value> = messages[messages.len() - 2]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| &b["id"])
                .collect();
            let answered = &messages[messages.len() - 1]["content"][0]["tool_use_id"];
            if used != [answered] {
                let message = format!("tool_result {answered} answers no tool_use of {used:?}");
                return wiremock::ResponseTemplate::new(400).set_body_json(json!(
                    {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
                ));
            }
        }
        let city = if *requests == 1 { "Pariss" } else { "Paris" };
        let events = [
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                   "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "name": "get_weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": format!("{{\"city\": \"{city}\"}}")}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ];
        let text: String = events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect();
        wiremock::ResponseTemplate::new(200).set_body_raw(text, "text/event-stream")
    }
}

#[tokio::test]
async fn a_streamed_call_with_no_id_is_answered_by_the_id_its_result_carries() {
    // Before, the conversation parsed the written body again and named the
    // call from its hash, while its result carried the stream's name.
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(UnnamedCalls {
            requests: std::sync::Mutex::new(0),
        })
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let (output, out) =
        crate::live::run_weather(dir.path(), "anthropic", &base, json!({"stream": true})).await;
    let stderr = crate::live::stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let rows = rows(&out);
    let last = rows.last().unwrap();
    assert_eq!(last["attempt"], "2", "{rows:?}");
    assert_eq!(last["attempt_success"], "true", "{rows:?}");
}
