//! Fuzzing: generated-and-checked instances per second, built-in validator,
//! over every tool of the starter suite.

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use toolgauge::fuzz::fuzz_schema;
use toolgauge::scenario::load_suite;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const CASES: usize = 100;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/starter");
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = load_suite(
        &root,
        sandbox.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap()
    .scenarios;
    // Every distinct tool of the suite, once.
    let mut tools = Vec::new();
    for scenario in &scenarios {
        for def in scenario.registry.definitions() {
            if !tools.iter().any(|(name, _, _)| name == &def.name) {
                let id = scenario.registry.lookup(&def.name).unwrap();
                tools.push((
                    def.name.clone(),
                    def.parameters.clone(),
                    scenario.registry.schema(id).clone(),
                ));
            }
        }
    }
    let per_run: u64 = tools
        .iter()
        .map(|(_, schema, validator)| {
            let report = fuzz_schema(schema, validator, CASES, 1, &mut |v| {
                Some(validator.full_is_valid(v))
            });
            report.valid
                + report
                    .by_mutation
                    .values()
                    .map(|c| c.generated)
                    .sum::<u64>()
        })
        .sum();
    eprintln!("fuzz: {} tools, {per_run} instances per run", tools.len());
    let mut group = c.benchmark_group("fuzz");
    group.throughput(Throughput::Elements(per_run));
    group.sample_size(20);
    group.bench_function("starter_tools_builtin", |b| {
        b.iter(|| {
            for (_, schema, validator) in &tools {
                black_box(fuzz_schema(schema, validator, CASES, 1, &mut |v| {
                    Some(validator.full_is_valid(v))
                }));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
