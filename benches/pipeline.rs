//! The full path per call: parse an Anthropic response with 3 calls,
//! validate, run echo/math, format the results, record two JSONL entries
//! per call to a file, on the anchors' workload.

#[path = "common/inputs.rs"]
mod inputs;
#[path = "common/workload.rs"]
mod workload;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::Value;
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::pipeline::{ExecOptions, Pipeline, SessionLog, validate};
use toolgauge::provider::Provider;
use toolgauge::tool::{Registry, ToolEnv, ToolSource};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn registry(schemas: &Value) -> Registry {
    let def = |name: &str| inputs::def(name, schemas[name].clone());
    Registry::new(
        vec![
            ToolSource::BuiltinWithDefinition(def("echo")),
            ToolSource::BuiltinWithDefinition(def("math")),
        ],
        ToolEnv::default(),
    )
    .expect("anchor schemas register")
}

/// The workload's calls, three to an Anthropic response body.
fn bodies(workload: &workload::Workload) -> Vec<Vec<u8>> {
    workload
        .calls
        .chunks_exact(3)
        .map(|chunk| {
            let calls: Vec<ParsedCall> = chunk
                .iter()
                .map(|c| {
                    ParsedCall::Ok(ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.input.clone(),
                    })
                })
                .collect();
            serde_json::to_vec(&Provider::Anthropic.format_response("", &calls)).unwrap()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let Some(workload) = workload::load() else {
        return;
    };
    let registry = Arc::new(registry(&workload.schemas));
    // Sanity: the validator agrees with the generator's labels.
    let mismatches = workload
        .calls
        .iter()
        .filter(|c| {
            let call = ParsedCall::Ok(ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.input.clone(),
            });
            validate(&registry, &call).is_ok() != c.expect_valid
        })
        .count();
    assert_eq!(
        mismatches, 0,
        "validation disagrees with the workload labels"
    );
    let pipeline = Pipeline::new(registry, ExecOptions::default());
    let bodies = bodies(&workload);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(3));
    group.measurement_time(Duration::from_secs(8));

    // One turn each: Parse, Validate, Execute, Return and (optionally) Record.
    let run = |iters: u64, mut log: Option<&mut SessionLog>| {
        runtime.block_on(async {
            let state = pipeline.registry().new_state();
            let start = Instant::now();
            for i in 0..iters as usize {
                let body = &bodies[i % bodies.len()];
                let turn = pipeline
                    .turn(Provider::Anthropic, body, &state, log.as_deref_mut())
                    .await
                    .unwrap();
                black_box(&turn.returned);
            }
            start.elapsed()
        })
    };

    // As `exec --session` records: each turn written and flushed to the file.
    group.bench_function("full_3_calls_recorded", |b| {
        b.iter_custom(|iters| {
            let mut log = SessionLog::create(&dir.path().join("session.jsonl")).unwrap();
            run(iters, Some(&mut log))
        })
    });
    // As a run records: a trial's entries into memory, each full 64 KB
    // handed to `full` (which leaves the buffer empty), the rest at the end.
    let record_as_a_run = |iters: u64, full: &mut dyn FnMut(&mut Vec<u8>)| {
        runtime.block_on(async {
            let state = pipeline.registry().new_state();
            let mut log = SessionLog::new(Vec::with_capacity(128 * 1024));
            let start = Instant::now();
            for i in 0..iters as usize {
                let body = &bodies[i % bodies.len()];
                let turn = pipeline
                    .turn(Provider::Anthropic, body, &state, Some(&mut log))
                    .await
                    .unwrap();
                black_box(&turn.returned);
                if log.get_mut().len() >= 64 * 1024 {
                    full(log.get_mut());
                }
            }
            full(log.get_mut());
            start.elapsed()
        })
    };
    // The file written here, inline, so that the time is all counted.
    group.bench_function("full_3_calls_recorded_as_a_run", |b| {
        b.iter_custom(|iters| {
            let mut file = std::fs::File::create(dir.path().join("run.jsonl")).unwrap();
            record_as_a_run(iters, &mut |written| {
                std::io::Write::write_all(&mut file, written).unwrap();
                written.clear();
            })
        })
    });
    // The file written by a thread of its own, as `run` does (and as
    // Node's WriteStream does, on libuv's threads): the kernel's copy is
    // not on this thread.
    group.bench_function("full_3_calls_recorded_as_a_run_writer_thread", |b| {
        b.iter_custom(|iters| {
            let mut file = std::fs::File::create(dir.path().join("threaded.jsonl")).unwrap();
            let (to_writer, chunks) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
            // Written chunks come back to be filled again: no fresh pages.
            let (to_fill, emptied) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
            let writer = std::thread::spawn(move || {
                for mut chunk in chunks {
                    std::io::Write::write_all(&mut file, &chunk).unwrap();
                    chunk.clear();
                    let _ = to_fill.try_send(chunk);
                }
            });
            let elapsed = record_as_a_run(iters, &mut |written| {
                let next = emptied
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(128 * 1024));
                to_writer.send(std::mem::replace(written, next)).unwrap();
            });
            drop(to_writer);
            writer.join().unwrap();
            elapsed
        })
    });
    group.bench_function("full_3_calls_unrecorded", |b| {
        b.iter_custom(|iters| run(iters, None))
    });
    group.finish();

    // The anchors' own response body: parse only, for scale.
    let mut parse = c.benchmark_group("pipeline_parse");
    parse.throughput(Throughput::Elements(1));
    parse.bench_function("anthropic_anchor_response", |b| {
        b.iter(|| {
            Provider::Anthropic
                .parse_response(black_box(&workload.response))
                .unwrap()
        })
    });
    parse.finish();

    // What serde_json can do at best with the same reply: only the fields
    // Parse reads, typed and borrowed, with the arguments as JSON values
    // (what the pipeline passes on) or skipped (the floor of reading the
    // bytes). Not toolgauge's work: the bounds its parse is measured in.
    let mut floor = c.benchmark_group("parse_floor");
    floor.throughput(Throughput::Elements(1));
    floor.bench_function("typed_arguments_as_values", |b| {
        b.iter(|| {
            let reply: floor::Reply<'_, Value> =
                serde_json::from_slice(black_box(&workload.response)).unwrap();
            reply.calls()
        })
    });
    floor.bench_function("typed_arguments_skipped", |b| {
        b.iter(|| {
            let reply: floor::Reply<'_, serde::de::IgnoredAny> =
                serde_json::from_slice(black_box(&workload.response)).unwrap();
            reply.calls()
        })
    });
    floor.finish();
}

/// An Anthropic reply as little as Parse needs of it.
mod floor {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct Reply<'a, A> {
        #[serde(borrow)]
        content: Vec<Block<'a, A>>,
        #[serde(borrow)]
        stop_reason: Option<&'a str>,
        usage: Usage,
    }

    #[derive(Deserialize)]
    struct Block<'a, A> {
        #[serde(rename = "type", borrow)]
        kind: &'a str,
        #[serde(borrow, default)]
        id: Option<&'a str>,
        #[serde(borrow, default)]
        name: Option<&'a str>,
        #[serde(default = "none")]
        input: Option<A>,
        #[serde(borrow, default)]
        text: Option<std::borrow::Cow<'a, str>>,
    }

    fn none<A>() -> Option<A> {
        None
    }

    #[derive(Deserialize)]
    struct Usage {
        input_tokens: u64,
        output_tokens: u64,
    }

    impl<A> Reply<'_, A> {
        /// The calls, each with its id and name; the rest read so that
        /// nothing is optimized away.
        pub fn calls(&self) -> usize {
            let calls = self
                .content
                .iter()
                .filter(|b| b.kind == "tool_use" && b.input.is_some())
                .filter(|b| b.id.zip(b.name).is_some())
                .count();
            let text = self.content.iter().filter_map(|b| b.text.as_ref()).count();
            calls
                + text
                + self.stop_reason.map_or(0, str::len)
                + (self.usage.input_tokens + self.usage.output_tokens) as usize
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
