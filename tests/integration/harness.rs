//! The harness through the library: the reference profile, feedback
//! wording, determinism.

use std::path::Path;

use toolgauge::harness::{self, Clock, RunPlan, Settings};
use toolgauge::metrics::{Aggregate, TrialOutcome};
use toolgauge::model::{LiveOptions, ModelFile};
use toolgauge::pipeline::FeedbackStyle;
use toolgauge::report::{FinishedTrial, Reporter, Reporters, RunInfo};
use toolgauge::scenario::load_scenario;

fn plan(
    scenarios: &[&str],
    model: &str,
    trials: u32,
    feedback: FeedbackStyle,
    sandbox: &Path,
) -> RunPlan {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    RunPlan::new(
        scenarios
            .iter()
            .map(|s| {
                load_scenario(
                    &root.join(format!("starter/{s}.json")),
                    sandbox,
                    &toolgauge::tool::mcp::ToolServers::new(),
                )
                .unwrap()
            })
            .collect(),
        vec![
            toolgauge::model::build(
                &ModelFile::load(&root.join(format!("models/{model}.json"))).unwrap(),
                &LiveOptions::default(),
                None,
            )
            .unwrap(),
        ],
        Settings {
            seed: 7,
            concurrency: 256,
            feedback,
            ..Settings::of_trials(trials)
        },
    )
}

/// Run the plan into `reporter`; the run's measures.
fn run(plan: &RunPlan, reporter: &mut dyn Reporter) -> Aggregate {
    let info = plan.info();
    let mut reporters = Reporters::new(&info, vec![reporter]);
    harness::run(plan, &mut reporters, None).unwrap();
    reporters.stats().clone()
}

fn aggregate(plan: &RunPlan) -> Aggregate {
    run(plan, &mut Collect(Vec::new()))
}

#[test]
fn the_reference_profile_reproduces_60_92_96() {
    let sandbox = tempfile::tempdir().unwrap();
    let plan = plan(
        &["weather_single"],
        "reference",
        20_000,
        FeedbackStyle::PointerList,
        sandbox.path(),
    );
    let aggregate = aggregate(&plan);
    let cell = &aggregate.cells[0][0];
    assert_eq!(cell.trials, 20_000);
    for (k, target) in [(1, 0.60), (2, 0.92), (3, 0.96)] {
        let measured = cell.success_by(k);
        assert!(
            (measured - target).abs() < 0.01,
            "success by attempt {k}: {measured} vs {target}"
        );
    }
    let (low, high) = cell.wilson();
    assert!(low < cell.final_success() && cell.final_success() < high);
}

#[test]
fn bare_feedback_stops_the_feedback_aware_model_from_correcting_itself() {
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = [
        "weather_single",
        "stock_price",
        "math_add",
        "thermostat_set",
    ];
    let rate = |style| {
        let plan = plan(&scenarios, "attentive", 500, style, sandbox.path());
        let aggregate = aggregate(&plan);
        let mut total = toolgauge::metrics::CellStats::new(3);
        for cell in &aggregate.cells[0] {
            total.merge(cell);
        }
        total.self_correction_rate().unwrap()
    };
    let pointer_list = rate(FeedbackStyle::PointerList);
    let json = rate(FeedbackStyle::Json);
    let bare = rate(FeedbackStyle::Bare);
    assert!(pointer_list > 0.85, "pointer-list: {pointer_list}");
    assert!(json > 0.85, "json: {json}");
    assert!(bare < 0.02, "bare: {bare}");
}

#[test]
fn the_same_seed_gives_the_same_trials_whatever_the_concurrency() {
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = ["parallel_mixed_5", "runtime_recovery", "no_call_greeting"];
    let records = |concurrency| {
        let mut plan = plan(
            &scenarios,
            "careless",
            50,
            FeedbackStyle::PointerList,
            sandbox.path(),
        );
        plan.settings.concurrency = concurrency;
        let mut sink = Collect(Vec::new());
        run(&plan, &mut sink);
        sink.0
    };
    let one = records(1);
    assert_eq!(one.len(), 150);
    assert_eq!(one, records(64));
}

struct Collect(Vec<TrialOutcome>);

impl Reporter for Collect {
    fn trial_finished(&mut self, _: &RunInfo, trial: FinishedTrial<'_>) -> std::io::Result<()> {
        self.0.push(trial.outcome.clone());
        Ok(())
    }
}

#[test]
fn parallel_turns_measure_speedup_against_the_ideal() {
    let sandbox = tempfile::tempdir().unwrap();
    let plan = plan(
        &["parallel_weather_3", "parallel_read_write_read"],
        "scripted",
        3,
        FeedbackStyle::PointerList,
        sandbox.path(),
    );
    let aggregate = aggregate(&plan);
    let (speedup, ideal, efficiency) = aggregate.cells[0][0].mean_speedup().unwrap();
    assert!(
        (speedup - 3.0).abs() < 1e-9
            && (ideal - 3.0).abs() < 1e-9
            && (efficiency - 1.0).abs() < 1e-9
    );
    // Read (120 ms), write (200 ms), read (120 ms): no overlap is possible.
    let (speedup, ideal, efficiency) = aggregate.cells[0][1].mean_speedup().unwrap();
    assert!(
        (speedup - 1.0).abs() < 1e-9
            && (ideal - 1.0).abs() < 1e-9
            && (efficiency - 1.0).abs() < 1e-9
    );
    let p50 = aggregate.cells[0][0].tool_ms.percentile_ms(0.5).unwrap();
    assert!((p50 - 120.0).abs() < 0.2, "{p50}"); // histogram precision
}

/// Hands trials to `Collect` and raises a stop request after `stop_after`.
struct StopAfter {
    collect: Collect,
    stop_after: usize,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Reporter for StopAfter {
    fn trial_finished(&mut self, info: &RunInfo, trial: FinishedTrial<'_>) -> std::io::Result<()> {
        self.collect.trial_finished(info, trial)?;
        if self.collect.0.len() == self.stop_after
            && let Some(stop) = self.stop.take()
        {
            let _ = stop.send(());
        }
        Ok(())
    }
}

#[test]
fn a_stopped_run_has_handed_every_finished_trial_over_in_job_order() {
    let sandbox = tempfile::tempdir().unwrap();
    let plan = plan(
        &["parallel_mixed_5", "runtime_recovery"],
        "careless",
        50,
        FeedbackStyle::PointerList,
        sandbox.path(),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let mut sink = StopAfter {
        collect: Collect(Vec::new()),
        stop_after: 37,
        stop: Some(stop),
    };
    let info = plan.info();
    let mut reporters = Reporters::new(&info, vec![&mut sink]);
    let outcome = harness::run_until(&plan, &mut reporters, None, async {
        let _ = stopped.await;
    });
    drop(reporters);
    match outcome {
        Err(harness::RunError::Interrupted { finished, total }) => {
            assert_eq!((finished, total), (37, 100));
        }
        other => panic!("not interrupted: {other:?}"),
    }
    // The first 37 jobs, whole and in order: what --resume builds on.
    let mut full = Collect(Vec::new());
    run(&plan, &mut full);
    assert_eq!(sink.collect.0, full.0[..37]);
}

/// A model that sends a wrong call, then the right one, and keeps what it
/// was given back between the two.
#[derive(Debug, Default)]
struct Listener {
    heard: std::sync::Mutex<Vec<Vec<u8>>>,
}

struct ListenerTrial<'a>(&'a Listener);

impl toolgauge::model::Model for Listener {
    fn name(&self) -> &str {
        "listener"
    }

    fn provider(&self) -> toolgauge::provider::Provider {
        toolgauge::provider::Provider::OpenAi
    }

    fn start_trial<'a>(
        &'a self,
        _: toolgauge::model::TrialStart<'a>,
    ) -> Box<dyn toolgauge::model::ModelTrial + 'a> {
        Box::new(ListenerTrial(self))
    }
}

impl toolgauge::model::ModelTrial for ListenerTrial<'_> {
    fn reply<'s>(
        &'s mut self,
        attempt: u32,
        returned: Option<&'s [u8]>,
    ) -> toolgauge::model::ReplyFuture<'s> {
        if let Some(returned) = returned {
            self.0.heard.lock().unwrap().push(returned.to_vec());
        }
        let arguments = if attempt == 1 {
            r#"{\"operation\": \"add\", \"a\": \"1024.75\"}"#
        } else {
            r#"{\"operation\": \"add\", \"a\": 1024.75, \"b\": -3}"#
        };
        let body = format!(
            r#"{{"choices": [{{"message": {{"role": "assistant", "tool_calls": [{{"id": "c{attempt}", "type": "function", "function": {{"name": "math", "arguments": "{arguments}"}}}}]}}, "finish_reason": "tool_calls"}}]}}"#
        );
        Box::pin(std::future::ready(Ok(toolgauge::model::Reply {
            body: body.into_bytes(),
            usage: Default::default(),
            ..Default::default()
        })))
    }
}

#[test]
fn every_model_receives_what_return_produced_in_the_feedback_style() {
    let sandbox = tempfile::tempdir().unwrap();
    let heard = |feedback| {
        let listener = std::sync::Arc::new(Listener::default());
        let mut plan = plan(&["math_add"], "reference", 1, feedback, sandbox.path());
        plan.models = vec![listener.clone()];
        let records = {
            let mut collect = Collect(Vec::new());
            run(&plan, &mut collect);
            collect.0
        };
        assert_eq!(records[0].attempts.len(), 2, "fixed on the second attempt");
        assert!(records[0].success());
        let heard = listener.heard.lock().unwrap().clone();
        assert_eq!(heard.len(), 1);
        serde_json::from_slice::<serde_json::Value>(&heard[0]).unwrap()
    };
    let pointer_list = heard(FeedbackStyle::PointerList);
    assert_eq!(
        pointer_list,
        serde_json::json!([{
            "role": "tool",
            "tool_call_id": "c1",
            "content": "Validation failed:\n- /a: must be number\n- /: must have required property 'b'"
        }])
    );
    let json = heard(FeedbackStyle::Json);
    let content: serde_json::Value =
        serde_json::from_str(json[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["error"], "validation");
    assert_eq!(
        content["details"][0],
        serde_json::json!({"pointer": "/a", "message": "must be number"})
    );
    let bare = heard(FeedbackStyle::Bare);
    assert_eq!(bare[0]["content"], "(no output)");
}

#[test]
fn a_stopped_run_leaves_its_finished_trials_in_the_files_with_their_logs() {
    let sandbox = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut plan = plan(
        &["parallel_mixed_5", "runtime_recovery"],
        "careless",
        50,
        FeedbackStyle::PointerList,
        sandbox.path(),
    );
    plan.settings.no_session = false;
    let info = plan.info();
    let session =
        toolgauge::report::SessionFile::create(&out.path().join("session.jsonl")).unwrap();
    let mut files = toolgauge::report::RunFiles::create(out.path(), Some(session)).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let mut stopper = StopAfter {
        collect: Collect(Vec::new()),
        stop_after: 37,
        stop: Some(stop),
    };
    let mut all = files.reporters();
    all.push(&mut stopper);
    let mut reporters = Reporters::new(&info, all);
    let outcome = harness::run_until(&plan, &mut reporters, None, async {
        let _ = stopped.await;
    });
    assert!(matches!(
        outcome,
        Err(harness::RunError::Interrupted { finished: 37, .. })
    ));
    drop(reporters);
    // Fewer trials than a checkpoint holds: they are on disk all the same.
    let read = toolgauge::report::TrialReader::open(&info, &out.path().join("trials.csv")).unwrap();
    let trials: Vec<TrialOutcome> = read.map(Result::unwrap).collect();
    assert_eq!(trials, stopper.collect.0);
    let logged: std::collections::BTreeSet<(String, u32)> =
        std::fs::read_to_string(out.path().join("session.jsonl"))
            .unwrap()
            .lines()
            .map(|line| {
                let entry: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    entry["scenario"].as_str().unwrap().to_owned(),
                    entry["trial"].as_u64().unwrap() as u32,
                )
            })
            .collect();
    let with_calls: std::collections::BTreeSet<(String, u32)> = trials
        .iter()
        .filter(|t| t.attempts.iter().any(|a| a.calls > 0))
        .map(|t| (info.scenarios[t.scenario].name.clone(), t.trial))
        .collect();
    assert_eq!(logged, with_calls);
}

/// Hears the notices only.
struct Notices(Vec<toolgauge::report::Notice>);

impl Reporter for Notices {
    fn notice(
        &mut self,
        _info: &RunInfo,
        notice: &toolgauge::report::Notice,
    ) -> std::io::Result<()> {
        self.0.push(notice.clone());
        Ok(())
    }
}

#[test]
fn a_lost_trial_is_a_notice_to_the_reporters_not_a_line_the_library_prints() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gone.json");
    let scenario = serde_json::json!({
        "name": "gone",
        "prompt": "Look it up.",
        "tools": [{
            "name": "lookup",
            "description": "Looks a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
            "http": {"url": "http://127.0.0.1:9/lookup"}
        }],
        "expect": {"calls": [{"name": "lookup", "arguments": {"word": "tool"}}]}
    });
    std::fs::write(&file, scenario.to_string()).unwrap();
    let mut plan = plan(&[], "scripted", 2, FeedbackStyle::PointerList, dir.path());
    plan.scenarios =
        vec![load_scenario(&file, dir.path(), &toolgauge::tool::mcp::ToolServers::new()).unwrap()];
    plan.settings.clock = Clock::Real;
    let mut heard = Notices(Vec::new());
    let stats = run(&plan, &mut heard);
    assert_eq!(stats.measured_trials(), 0);
    assert_eq!(heard.0.len(), 2, "{:?}", heard.0);
    for notice in &heard.0 {
        let toolgauge::report::Notice::TrialLost { failure, why, .. } = notice else {
            panic!("{notice:?}");
        };
        assert_eq!(failure.as_str(), "tool_unavailable");
        assert!(why.contains("lookup"), "{why}");
        assert!(notice.to_string().contains("gone trial"), "{notice}");
    }
}

/// Hears every event, in order, as the command line's reporter would.
#[derive(Default)]
struct Heard {
    started: Option<u64>,
    trials: u64,
    finished: bool,
}

impl Reporter for Heard {
    fn run_started(&mut self, _info: &RunInfo, trials: u64) -> std::io::Result<()> {
        self.started = Some(trials);
        Ok(())
    }

    fn trial_finished(
        &mut self,
        _info: &RunInfo,
        _trial: FinishedTrial<'_>,
    ) -> std::io::Result<()> {
        self.trials += 1;
        Ok(())
    }

    fn run_finished(&mut self, _info: &RunInfo, _stats: &Aggregate) -> std::io::Result<()> {
        self.finished = true;
        Ok(())
    }
}

#[test]
fn a_run_is_a_library_value_prepared_executed_and_heard_in_process() {
    use toolgauge::harness::{PreparedRun, RunEnding, RunRequest};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let request = RunRequest {
        suites: vec![root.join("starter")],
        models: vec![root.join("models/scripted.json")],
        trials: Some(2),
        out: Some(out.clone()),
        min_success: Some(1.0),
        ..RunRequest::default()
    };
    let run = PreparedRun::prepare(&request).unwrap();
    let mut heard = Heard::default();
    let ending = run
        .execute(&mut heard, false, std::future::pending())
        .unwrap();
    let RunEnding::Finished { violations, .. } = ending else {
        panic!("not finished");
    };
    // The scripted mock plays every reference but the one scripted never
    // to fix its call: the threshold names that one alone.
    let broken: Vec<&str> = violations.iter().map(|v| v.scenario.as_str()).collect();
    assert_eq!(broken, ["scripted_never_fixed"], "{violations:?}");
    let scenarios = std::fs::read_dir(root.join("starter")).unwrap().count() as u64;
    assert_eq!(heard.started, Some(2 * scenarios));
    assert_eq!(heard.trials, 2 * scenarios);
    assert!(heard.finished);
    let rows = csv::Reader::from_path(out.join("trials.csv"))
        .unwrap()
        .deserialize::<toolgauge::report::TrialRow>()
        .count() as u64;
    assert!(rows >= 2 * scenarios, "{rows} rows");
    assert!(out.join("run.json").is_file() && out.join("summary.csv").is_file());
}
