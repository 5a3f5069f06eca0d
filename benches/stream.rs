//! A streamed reply against the same reply whole: three calls, their
//! arguments in eight deltas each, assembled and parsed, beside the
//! whole body parsed. The target: assembling costs within 1.5x of
//! parsing whole (reports/bench.md).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::{Value, json};
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::provider::Provider;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn calls() -> Vec<ParsedCall> {
    (0..3)
        .map(|i| {
            ParsedCall::Ok(ToolCall {
                id: format!("call_{i}"),
                name: "create_calendar_event".to_owned(),
                arguments: json!({"title": format!("Sync {i}"), "start": "2026-11-23T10:00:00",
                                  "duration_minutes": 30, "attendees": ["Ada", "Lin"]}),
            })
        })
        .collect()
}

/// The Chat stream of `calls`: each call's arguments in eight pieces.
fn chat_stream(calls: &[ParsedCall]) -> String {
    let mut text = String::new();
    for (i, call) in calls.iter().enumerate() {
        let ParsedCall::Ok(call) = call else { continue };
        let arguments = call.arguments.to_string();
        let pieces: Vec<String> = arguments
            .as_bytes()
            .chunks(arguments.len().div_ceil(8))
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        for (k, piece) in pieces.iter().enumerate() {
            let mut delta = json!({"index": i, "function": {"arguments": piece}});
            if k == 0 {
                delta["id"] = json!(call.id);
                delta["type"] = json!("function");
                delta["function"]["name"] = json!(call.name);
            }
            let chunk = json!({"object": "chat.completion.chunk",
                               "choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": Value::Null}]});
            text.push_str(&format!("data: {chunk}\n\n"));
        }
    }
    text + "data: [DONE]\n\n"
}

fn bench(c: &mut Criterion) {
    let calls = calls();
    let whole = serde_json::to_vec(&Provider::OpenAi.format_response("", &calls)).unwrap();
    let streamed = chat_stream(&calls);
    assert_eq!(
        Provider::OpenAi
            .parse_stream(streamed.as_bytes())
            .unwrap()
            .calls,
        Provider::OpenAi.parse_response(&whole).unwrap().calls
    );
    let mut group = c.benchmark_group("stream");
    group.throughput(Throughput::Elements(3));
    group.bench_function("parse_whole_3_calls", |b| {
        b.iter(|| black_box(Provider::OpenAi.parse_response(black_box(&whole)).unwrap()))
    });
    group.bench_function("assemble_and_parse_3_calls", |b| {
        b.iter(|| {
            black_box(
                Provider::OpenAi
                    .parse_stream(black_box(streamed.as_bytes()))
                    .unwrap(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
