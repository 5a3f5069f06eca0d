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
                        arguments: c.input.clone().try_into().expect("an object"),
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
                arguments: c.input.clone().try_into().expect("an object"),
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
    // The work of Node's b2, whose calls are parsed before its clock
    // starts: the replies parsed beforehand, then Validate, Execute,
    // Return and Record as a run records (Parse has a row of its own).
    let parsed: Vec<_> = bodies
        .iter()
        .map(|body| Provider::Anthropic.parse_response(body))
        .collect();
    group.bench_function("parsed_3_calls_recorded_as_a_run", |b| {
        b.iter_custom(|iters| {
            let mut file = std::fs::File::create(dir.path().join("parsed.jsonl")).unwrap();
            runtime.block_on(async {
                let state = pipeline.registry().new_state();
                let mut log = SessionLog::new(Vec::with_capacity(128 * 1024));
                let mut elapsed = Duration::ZERO;
                for i in 0..iters as usize {
                    let at = i % bodies.len();
                    // The clone stands for the parsed reply a turn owns:
                    // making it is not counted, freeing it is (with the
                    // turn), which Node's b2 does not pay.
                    let reply = parsed[at].clone();
                    let start = Instant::now();
                    let turn = pipeline
                        .turn_parsed(
                            Provider::Anthropic,
                            reply,
                            &bodies[at],
                            &state,
                            Some(&mut log),
                            Default::default(),
                        )
                        .await
                        .unwrap();
                    black_box(&turn.returned);
                    let written = log.get_mut();
                    if written.len() >= 64 * 1024 {
                        std::io::Write::write_all(&mut file, written).unwrap();
                        written.clear();
                    }
                    drop(turn);
                    elapsed += start.elapsed();
                }
                let start = Instant::now();
                std::io::Write::write_all(&mut file, log.get_mut()).unwrap();
                elapsed + start.elapsed()
            })
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
    // The same reply read by sonic-rs (SIMD) as a tree, then the calls
    // taken out of it: ids and names copied, the arguments as sonic-rs's
    // own values (objects as lists of members, no hashing) or converted
    // to the `serde_json::Value`s the pipeline passes on. What a parse
    // that keeps its arguments in a cheaper value could reach.
    let ours: Vec<_> = Provider::Anthropic
        .parse_response(&workload.response)
        .unwrap()
        .calls
        .into_iter()
        .map(|call| match call {
            ParsedCall::Ok(call) => (call.id, call.name, call.arguments.as_value().clone()),
            ParsedCall::Malformed(call) => {
                panic!("the anchor reply's calls are well formed: {call:?}")
            }
        })
        .collect();
    assert_eq!(
        sonic::calls(&workload.response, sonic::to_serde),
        ours,
        "sonic-rs reads the anchor reply's calls as Parse does"
    );
    floor.bench_function("sonic_tree_arguments_as_its_values", |b| {
        b.iter(|| sonic::calls(black_box(&workload.response), Clone::clone))
    });
    floor.bench_function("sonic_tree_arguments_as_serde_values", |b| {
        b.iter(|| sonic::calls(black_box(&workload.response), sonic::to_serde))
    });
    // sonic-rs's own serde reader (typed, borrowed, the fields Parse
    // reads) with the arguments skipped, or kept in the cheapest value
    // that still owns them in the order sent: objects as lists of
    // members, keys and short strings inline (no allocation). The floor
    // of any parse that hands the pipeline owned, ordered arguments.
    let typed: floor::Reply<'_, ordered::Value> = sonic_rs::from_slice(&workload.response).unwrap();
    // As text, so that the order of the members counts too.
    assert_eq!(
        typed
            .arguments()
            .map(|arguments| arguments.to_serde().to_string())
            .collect::<Vec<_>>(),
        ours.iter()
            .map(|(.., arguments)| arguments.to_string())
            .collect::<Vec<_>>(),
        "sonic-rs's typed reader reads the anchor reply's arguments as Parse does"
    );
    floor.bench_function("sonic_typed_arguments_skipped", |b| {
        b.iter(|| {
            let reply: floor::Reply<'_, serde::de::IgnoredAny> =
                sonic_rs::from_slice(black_box(&workload.response)).unwrap();
            reply.calls()
        })
    });
    floor.bench_function("sonic_typed_arguments_as_ordered_members", |b| {
        b.iter(|| {
            let reply: floor::Reply<'_, ordered::Value> =
                sonic_rs::from_slice(black_box(&workload.response)).unwrap();
            reply.calls()
        })
    });
    // What Parse keeps of the arguments now: `call::Arguments`, members in
    // a list, keys inline, values as serde_json's.
    floor.bench_function("sonic_typed_arguments_as_call_arguments", |b| {
        b.iter(|| {
            let reply: floor::Reply<'_, toolgauge::call::SentArguments> =
                sonic_rs::from_slice(black_box(&workload.response)).unwrap();
            reply.calls()
        })
    });
    floor.finish();
}

/// JSON values that own their text in the order sent, built with as few
/// allocations as a general value allows: objects as lists of members (no
/// map, no hashing), keys and strings of up to 24 bytes inline. A key
/// written twice is kept twice, not looked for: a floor may be low, and
/// the anchor reply has no such key.
mod ordered {
    use std::fmt;

    use compact_str::CompactString;
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::Number;

    pub enum Value {
        Null,
        Bool(bool),
        Number(Number),
        Text(CompactString),
        List(Vec<Value>),
        Members(Vec<(CompactString, Value)>),
    }

    impl Value {
        pub fn to_serde(&self) -> serde_json::Value {
            match self {
                Value::Null => serde_json::Value::Null,
                Value::Bool(b) => (*b).into(),
                Value::Number(n) => serde_json::Value::Number(n.clone()),
                Value::Text(text) => text.as_str().into(),
                Value::List(items) => items.iter().map(Value::to_serde).collect(),
                Value::Members(members) => members
                    .iter()
                    .map(|(key, member)| (key.to_string(), member.to_serde()))
                    .collect(),
            }
        }
    }

    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(ValueVisitor)
        }
    }

    struct ValueVisitor;

    impl<'de> Visitor<'de> for ValueVisitor {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
            Ok(Value::Number(v.into()))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
            Ok(Value::Number(v.into()))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
            Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
            Ok(Value::Text(v.into()))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Value::List(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut members = Vec::with_capacity(4);
            while let Some(key) = map.next_key::<CompactString>()? {
                members.push((key, map.next_value()?));
            }
            Ok(Value::Members(members))
        }
    }
}

/// Calls taken out of a reply read whole by sonic-rs.
mod sonic {
    use serde_json::Value;
    use sonic_rs::{JsonContainerTrait, JsonType, JsonValueTrait};

    pub fn calls<A>(
        body: &[u8],
        arguments: impl Fn(&sonic_rs::Value) -> A,
    ) -> Vec<(String, String, A)> {
        let reply: sonic_rs::Value = sonic_rs::from_slice(body).unwrap();
        let blocks = reply.get("content").and_then(|c| c.as_array()).unwrap();
        blocks
            .iter()
            .filter(|block| block.get("type").and_then(|t| t.as_str()) == Some("tool_use"))
            .map(|block| {
                let text = |key: &str| block.get(key).and_then(|v| v.as_str()).unwrap().to_owned();
                (
                    text("id"),
                    text("name"),
                    arguments(block.get("input").unwrap()),
                )
            })
            .collect()
    }

    pub fn to_serde(value: &sonic_rs::Value) -> Value {
        match value.get_type() {
            JsonType::Null => Value::Null,
            JsonType::Boolean => Value::Bool(value.as_bool().unwrap()),
            JsonType::Number => match (value.as_u64(), value.as_i64()) {
                (Some(n), _) => n.into(),
                (None, Some(n)) => n.into(),
                _ => serde_json::Number::from_f64(value.as_f64().unwrap())
                    .map_or(Value::Null, Value::Number),
            },
            JsonType::String => Value::String(value.as_str().unwrap().to_owned()),
            JsonType::Array => {
                Value::Array(value.as_array().unwrap().iter().map(to_serde).collect())
            }
            JsonType::Object => Value::Object(
                value
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(key, member)| (key.to_owned(), to_serde(member)))
                    .collect(),
            ),
        }
    }
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
        /// The calls' arguments, in order.
        pub fn arguments(&self) -> impl Iterator<Item = &A> {
            self.content.iter().filter_map(|b| b.input.as_ref())
        }

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
