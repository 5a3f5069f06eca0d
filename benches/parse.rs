//! Parse: one response body per provider with 1, 3 and 20 calls.

#[path = "common/inputs.rs"]
mod inputs;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use toolgauge::provider::Provider;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for provider in Provider::all() {
        for n in [1, 3, 20] {
            let body = serde_json::to_vec(
                &provider.format_response("Let me call the tools.", &inputs::calls(n)),
            )
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
