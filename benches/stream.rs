//! A streamed reply against the same reply whole: three calls, their
//! arguments in eight deltas each, read as they would come and parsed,
//! beside the whole body parsed (the instruction counts of the same are
//! `stream/*` in benches/counts.rs). Beside them, where the streamed
//! time goes: the server-sent events framed (`sse-stream`) alone, each
//! event read as a JSON value, and each event read into the few typed
//! fields a Chat reader needs (the floor of any event-by-event read with
//! serde_json).

#[path = "common/inputs.rs"]
mod inputs;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::Value;
use toolgauge::provider::Provider;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn bench(c: &mut Criterion) {
    let calls = inputs::calendar_calls(3);
    let whole = serde_json::to_vec(&Provider::OpenAi.format_response("", &calls)).unwrap();
    let streamed = inputs::chat_stream(&calls);
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
    let frames =
        toolgauge::provider::stream::frames([bytes::Bytes::from(streamed.clone())]).unwrap();
    group.bench_function("frames_only", |b| {
        b.iter(|| {
            black_box(
                toolgauge::provider::stream::frames([bytes::Bytes::from(
                    black_box(&streamed).clone(),
                )])
                .unwrap(),
            )
        })
    });
    group.bench_function("events_as_values", |b| {
        b.iter(|| {
            for frame in &frames {
                black_box(serde_json::from_str::<Value>(&frame.data).ok());
            }
        })
    });
    group.bench_function("events_typed", |b| {
        b.iter(|| {
            for frame in &frames {
                black_box(serde_json::from_str::<typed::Chunk>(&frame.data).ok());
            }
        })
    });
    group.finish();
}

/// The fields of a Chat chunk an assembler reads, borrowed where they
/// need no unescaping. Read only to be timed.
#[allow(dead_code)]
mod typed {
    use std::borrow::Cow;

    #[derive(serde::Deserialize)]
    pub struct Chunk<'a> {
        #[serde(borrow, default)]
        pub choices: Vec<Choice<'a>>,
    }

    #[derive(serde::Deserialize)]
    pub struct Choice<'a> {
        #[serde(borrow, default)]
        pub delta: Option<Delta<'a>>,
        #[serde(borrow, default)]
        pub finish_reason: Option<Cow<'a, str>>,
    }

    #[derive(serde::Deserialize)]
    pub struct Delta<'a> {
        #[serde(borrow, default)]
        pub content: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub tool_calls: Vec<Part<'a>>,
    }

    #[derive(serde::Deserialize)]
    pub struct Part<'a> {
        pub index: Option<u64>,
        #[serde(borrow, default)]
        pub id: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub function: Option<Function<'a>>,
    }

    #[derive(serde::Deserialize)]
    pub struct Function<'a> {
        #[serde(borrow, default)]
        pub name: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub arguments: Option<Cow<'a, str>>,
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
