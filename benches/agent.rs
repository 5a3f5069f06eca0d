//! Agent tasks: what a turn of a task costs against a single-turn attempt
//! making the same call (side by side, as a ratio), tasks per second of the
//! agent suite on the three stochastic mocks, and, once, the peak memory of
//! 10,000 and 100,000 tasks (flat: nothing is kept per trial).

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use serde_json::json;
use toolgauge::harness::{self, RunPlan, Settings};
use toolgauge::model::{LiveOptions, Model, ModelFile};
use toolgauge::report::Reporters;
use toolgauge::scenario::{Scenario, load_scenario, load_suite};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn model(name: &str) -> Arc<dyn Model> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let file = ModelFile::load(&root.join(format!("models/{name}.json"))).unwrap();
    toolgauge::model::build(&file, &LiveOptions::default(), None).unwrap()
}

fn plan(scenarios: Vec<Scenario>, models: Vec<Arc<dyn Model>>, trials: u32) -> RunPlan {
    RunPlan::new(scenarios, models, Settings::of_trials(trials))
}

/// Run the plan; the turns (attempts) it took.
fn run(plan: &RunPlan) -> u64 {
    let info = plan.info();
    let mut reporters = Reporters::new(&info, Vec::new());
    harness::run(plan, &mut reporters, None).unwrap();
    let stats = reporters.stats();
    stats
        .cells
        .iter()
        .flatten()
        .map(|c| {
            c.task.as_ref().map_or(c.trials, |t| {
                t.turns.iter().map(|(n, k)| u64::from(*n) * k).sum()
            })
        })
        .sum()
}

/// A store lookup chain of three calls, then the answer; and a one-turn
/// scenario expecting the same kind of call.
fn scenarios(dir: &Path) -> (Scenario, Scenario) {
    let state = json!({
        "customers": [{"id": "c-1", "email": "a@example.com", "team": "t-1"}],
        "teams": [{"id": "t-1", "manager": "u-1"}],
        "users": [{"id": "u-1", "name": "Ada"}]
    });
    let task = json!({
        "name": "chain", "tools": ["store_find", "store_get"], "state": state,
        "prompt": "Who manages a@example.com?",
        "task": {"milestones": [
            {"name": "store_find", "arguments": {"collection": "customers", "where": {"email": "a@example.com"}}},
            {"name": "store_get", "arguments": {"collection": "teams", "id": {"$result": "store_find", "pointer": "/0/team"}}},
            {"name": "store_get", "arguments": {"collection": "users", "id": {"$result": "store_get", "pointer": "/manager"}}}
        ], "answer": {"$contains": "Ada"}}
    });
    let single = json!({
        "name": "single", "tools": ["store_find", "store_get"], "state": state,
        "prompt": "Read team t-1.",
        "expect": {"calls": [{"name": "store_get", "arguments": {"collection": "teams", "id": "t-1"}}]}
    });
    let load = |value: serde_json::Value, name: &str| {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, value.to_string()).unwrap();
        load_scenario(
            &path,
            &dir.join("sandboxes"),
            &toolgauge::tool::mcp::ToolServers::new(),
        )
        .unwrap()
    };
    (load(task, "chain"), load(single, "single"))
}

/// Peak resident memory since the last reset, in MiB (Linux).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (task, single) = scenarios(dir.path());
    let task_plan = plan(vec![task], vec![model("scripted")], 200);
    let single_plan = plan(vec![single], vec![model("scripted")], 200);
    let task_turns = run(&task_plan);
    let single_turns = run(&single_plan);
    assert_eq!(task_turns, 200 * 4, "3 calls and the answer per task");

    let mut group = c.benchmark_group("agent");
    group.sample_size(30);
    // Per turn: the ratio of these two is the cost of the loop and the judge.
    group.throughput(Throughput::Elements(task_turns));
    group.bench_function("task_turn", |b| b.iter(|| black_box(run(&task_plan))));
    group.throughput(Throughput::Elements(single_turns));
    group.bench_function("single_turn_attempt", |b| {
        b.iter(|| black_box(run(&single_plan)))
    });

    // The agent suite on the three stochastic mocks: tasks per second.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let suite = load_suite(
        &root.join("agent"),
        &dir.path().join("suite"),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap()
    .scenarios
    .into_iter()
    // The shell task waits on real processes: not a measure of toolgauge.
    .filter(|s| s.registry.lookup(toolgauge::tool::SHELL_TOOL).is_none())
    .collect();
    let models = ["reference", "careless", "attentive"].map(model).to_vec();
    let suite_plan = plan(suite, models, 20);
    group.throughput(Throughput::Elements(suite_plan.jobs().count() as u64));
    group.sample_size(10);
    group.bench_function("suite_x3_models", |b| {
        b.iter(|| black_box(run(&suite_plan)))
    });
    group.finish();

    // Flat memory: the peak of 100,000 tasks against that of 10,000.
    if std::env::var_os("TOOLGAUGE_BENCH_SKIP_MEMORY").is_none() {
        for tasks in [10_000u32, 100_000] {
            let (task, _) = scenarios(dir.path());
            let many = plan(vec![task], vec![model("careless")], tasks);
            reset_peak_rss();
            let started = std::time::Instant::now();
            let turns = run(&many);
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "agent/memory: {tasks} tasks ({turns} turns) in {seconds:.2} s = {:.0} tasks/s, peak RSS {} MiB",
                f64::from(tasks) / seconds,
                peak_rss_mib().map_or("?".to_owned(), |m| format!("{m:.1}"))
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
