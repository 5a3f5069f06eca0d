//! Trials per second of the starter suite on the three stochastic mock
//! models, virtual clock, reports aggregated as in a real run.

use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use toolgauge::harness::{self, RunPlan, Settings};
use toolgauge::model::{LiveOptions, ModelFile};
use toolgauge::report::{Reporter, Reporters, SessionFile};
use toolgauge::scenario::load_suite;

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const TRIALS: u32 = 20;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = load_suite(
        &root.join("starter"),
        sandbox.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap()
    .scenarios;
    let models = ["reference", "careless", "attentive"]
        .iter()
        .map(|m| {
            let file = ModelFile::load(&root.join(format!("models/{m}.json"))).unwrap();
            toolgauge::model::build(&file, &LiveOptions::default(), None).unwrap()
        })
        .collect();
    let plan = RunPlan::new(
        scenarios,
        models,
        Settings {
            no_session: false,
            ..Settings::of_trials(TRIALS)
        },
    );
    let info = plan.info();
    let dir = tempfile::tempdir().unwrap();
    let trials = plan.jobs().count() as u64;
    let mut group = c.benchmark_group("suite");
    group.throughput(Throughput::Elements(trials));
    group.sample_size(20);
    // As `run` does by default: every turn recorded, session.jsonl written
    // (a new file per run, as a run makes it: the setup, untimed, removes
    // the last one).
    let mut runs = 0;
    group.bench_function("starter_x3_models", |b| {
        b.iter_batched(
            || {
                let _ = std::fs::remove_file(dir.path().join(format!("session{runs}.jsonl")));
                runs += 1;
                SessionFile::create(&dir.path().join(format!("session{runs}.jsonl"))).unwrap()
            },
            |mut session| {
                let mut reporters = Reporters::new(&info, vec![&mut session as &mut dyn Reporter]);
                harness::run(&plan, &mut reporters, None).unwrap();
                black_box(reporters.stats().cells[0][0].trials)
            },
            BatchSize::PerIteration,
        )
    });
    // `run --no-session`: nothing recorded.
    let unrecorded = RunPlan {
        settings: Settings {
            no_session: true,
            ..plan.settings.clone()
        },
        users: Vec::new(),
        ..plan
    };
    group.bench_function("starter_x3_models_no_session", |b| {
        b.iter(|| {
            let mut reporters = Reporters::new(&info, Vec::new());
            harness::run(&unrecorded, &mut reporters, None).unwrap();
            black_box(reporters.stats().cells[0][0].trials)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
