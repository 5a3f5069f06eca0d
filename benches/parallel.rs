//! The scheduler: batches of simulated-latency reads (with and without
//! write barriers) on the virtual clock, where wall time is the
//! scheduler's own overhead; and 8 x 10 ms on the real clock, parallel
//! against serial. Efficiency (ideal / makespan) is exact on the virtual
//! clock and printed once per case.

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::json;
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::pipeline::{ExecMode, ExecOptions, Pipeline};
use toolgauge::tool::{Registry, ToolDef, ToolEnv, ToolSource};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn tool(name: &str, effect: &str, latency_ms: u64) -> ToolSource {
    let def: ToolDef = serde_json::from_value(json!({
        "name": name, "description": "simulated", "effect": effect,
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "simulate": {"result": "ok", "latency_ms": latency_ms}
    }))
    .unwrap();
    ToolSource::Defined(def)
}

fn pipeline(mode: ExecMode, latency_ms: u64) -> Pipeline {
    let registry = Registry::new(
        vec![
            tool("fetch", "read", latency_ms),
            tool("save", "write", latency_ms),
        ],
        ToolEnv::default(),
    )
    .unwrap();
    Pipeline::new(
        Arc::new(registry),
        ExecOptions {
            mode,
            max_concurrency: 1024,
            ..ExecOptions::default()
        },
    )
}

/// `n` reads; with `barriers`, every 8th call is a write.
fn batch(n: usize, barriers: bool) -> Vec<ParsedCall> {
    (0..n)
        .map(|i| {
            let name = if barriers && i % 8 == 7 {
                "save"
            } else {
                "fetch"
            };
            ParsedCall::Ok(ToolCall {
                id: format!("c{i}"),
                name: name.to_owned(),
                arguments: json!({"n": i}).try_into().expect("an object"),
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let virtual_clock = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let parallel = pipeline(ExecMode::Parallel, 10);
    let mut group = c.benchmark_group("parallel_virtual");
    for barriers in [false, true] {
        for n in [1usize, 3, 16, 100, 1000] {
            let calls = batch(n, barriers);
            let probe = virtual_clock.block_on(parallel.run(&calls));
            let efficiency = probe.ideal_makespan.as_secs_f64() / probe.makespan.as_secs_f64();
            let speedup = probe.serial_makespan().as_secs_f64() / probe.makespan.as_secs_f64();
            let label = if barriers {
                "reads_and_writes"
            } else {
                "reads"
            };
            eprintln!(
                "parallel_virtual/{label}/{n}: speedup {speedup:.2}x, efficiency {efficiency:.4}"
            );
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(label, n), &calls, |b, calls| {
                b.iter(|| black_box(virtual_clock.block_on(parallel.run(calls)).makespan))
            });
        }
    }
    group.finish();

    let real_clock = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .unwrap();
    let calls = batch(8, false);
    let mut group = c.benchmark_group("parallel_real_8x10ms");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(6));
    for (label, mode) in [
        ("parallel", ExecMode::Parallel),
        ("serial", ExecMode::Serial),
    ] {
        let pipeline = pipeline(mode, 10);
        group.bench_function(label, |b| {
            b.iter(|| black_box(real_clock.block_on(pipeline.run(&calls)).makespan))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
