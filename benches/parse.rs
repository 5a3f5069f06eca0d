//! Parse: one response body per provider with 1, 3 and 20 calls.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::json;
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::provider::Provider;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn calls(n: usize) -> Vec<ParsedCall> {
    (0..n)
        .map(|i| {
            let (name, arguments) = if i % 2 == 0 {
                (
                    "echo",
                    json!({"message": format!("hello world from call {i}")}),
                )
            } else {
                (
                    "math",
                    json!({"operation": "multiply", "a": 12.5 + i as f64, "b": -4}),
                )
            };
            ParsedCall::Ok(ToolCall {
                id: format!("call_{i:08}_abcdefgh"),
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for provider in Provider::ALL {
        for n in [1, 3, 20] {
            let body =
                serde_json::to_vec(&provider.format_response("Let me call the tools.", &calls(n)))
                    .unwrap();
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(provider.as_str(), n), &body, |b, body| {
                b.iter(|| provider.parse_response(black_box(body)).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
