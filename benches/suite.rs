//! Trials per second of the starter suite on the three stochastic mock
//! models, virtual clock, reports aggregated as in a real run.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use toolgauge::harness::{self, Clock, ProgressMode, RunPlan};
use toolgauge::model::Model;
use toolgauge::pipeline::ExecOptions;
use toolgauge::pipeline::feedback::FeedbackStyle;
use toolgauge::report::Aggregate;
use toolgauge::scenario::load_suite;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const TRIALS: u32 = 20;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = load_suite(&root.join("starter"), sandbox.path())
        .unwrap()
        .scenarios;
    let models = ["reference", "careless", "attentive"]
        .iter()
        .map(|m| Model::load(&root.join(format!("models/{m}.json"))).unwrap())
        .collect();
    let plan = RunPlan {
        scenarios,
        models,
        trials: TRIALS,
        seed: 1,
        concurrency: 64,
        clock: Clock::Virtual,
        feedback: FeedbackStyle::PointerList,
        exec: ExecOptions::default(),
        shard: None,
    };
    let trials = plan.jobs().count() as u64;
    let mut group = c.benchmark_group("suite");
    group.throughput(Throughput::Elements(trials));
    group.sample_size(20);
    group.bench_function("starter_x3_models", |b| {
        b.iter(|| {
            let mut aggregate = Aggregate::new(&plan);
            harness::run(&plan, &mut aggregate, None, ProgressMode::Quiet).unwrap();
            black_box(aggregate.cells[0][0].trials)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
