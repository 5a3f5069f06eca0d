//! Agent tasks: the loop until the model answers, judged on milestones,
//! forbidden calls, final state and the answer; mocks that play tasks from
//! the results they receive; task runs through resume, shards, merge,
//! compare and thresholds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use toolgauge::harness::{self, RunPlan, Settings};
use toolgauge::metrics::{Aggregate, CellStats, Ending, TaskStats};
use toolgauge::model::{LiveOptions, Model, ModelFile, ModelTrial, ReplyFuture, TrialStart};
use toolgauge::pipeline::FeedbackStyle;
use toolgauge::provider::Provider;
use toolgauge::report::{Reporters, TrialRow};
use toolgauge::scenario::{Scenario, load_suite};

use crate::run::{FILES, read};
use crate::toolgauge;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn mock(name: &str) -> Arc<dyn Model> {
    let file = ModelFile::load(&root().join(format!("models/{name}.json"))).unwrap();
    toolgauge::model::build(&file, &LiveOptions::default(), None).unwrap()
}

fn agent_plan(
    model: Arc<dyn Model>,
    trials: u32,
    feedback: FeedbackStyle,
    sandbox: &Path,
) -> RunPlan {
    RunPlan::new(
        load_suite(
            &root().join("agent"),
            sandbox,
            &toolgauge::tool::mcp::ToolServers::new(),
        )
        .unwrap()
        .scenarios,
        vec![model],
        Settings {
            seed: 3,
            feedback,
            ..Settings::of_trials(trials)
        },
    )
}

fn aggregate(plan: &RunPlan) -> Aggregate {
    let info = plan.info();
    let mut reporters = Reporters::new(&info, vec![]);
    harness::run(plan, &mut reporters, None).unwrap();
    reporters.stats().clone()
}

/// Does a task read an earlier result (`$result`) in any milestone?
fn reads_results(scenario: &Scenario) -> bool {
    scenario.task.as_ref().is_some_and(|task| {
        task.milestones
            .iter()
            .any(|m| m.arguments.result_tools().next().is_some())
    })
}

/// A model whose every turn gets nothing back: what a pipeline that loses
/// results gives it.
#[derive(Debug)]
struct LosesResults(Arc<dyn Model>);

struct LosesResultsTrial<'a>(Box<dyn ModelTrial + 'a>);

impl Model for LosesResults {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn provider(&self) -> Provider {
        self.0.provider()
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        Box::new(LosesResultsTrial(self.0.start_trial(start)))
    }
}

impl ModelTrial for LosesResultsTrial<'_> {
    fn reply<'s>(&'s mut self, attempt: u32, returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        self.0.reply(attempt, returned.map(|_| b"[]".as_slice()))
    }
}

#[test]
fn a_mock_that_ignores_results_fails_every_result_task() {
    let sandbox = tempfile::tempdir().unwrap();
    // The scripted mock is always right: it passes every task when it
    // reads results, and none that needs one when it cannot.
    let reads = agent_plan(
        mock("scripted"),
        3,
        FeedbackStyle::PointerList,
        sandbox.path(),
    );
    let blind_model: Arc<dyn Model> = Arc::new(LosesResults(mock("scripted")));
    let blind = agent_plan(blind_model, 3, FeedbackStyle::PointerList, sandbox.path());
    let (seeing, lost) = (aggregate(&reads), aggregate(&blind));
    let mut result_tasks = 0;
    for (s, scenario) in blind.scenarios.iter().enumerate() {
        assert_eq!(
            seeing.cells[0][s].final_success(),
            1.0,
            "{}: a model that reads results passes",
            scenario.name
        );
        if reads_results(scenario) {
            result_tasks += 1;
            assert_eq!(
                lost.cells[0][s].successes(),
                0,
                "{}: passed without reading a result",
                scenario.name
            );
        }
    }
    assert!(result_tasks >= 9, "{result_tasks} tasks read results");
    // Tasks that read nothing back still pass: the loss is what failed the others.
    let file_task = blind
        .scenarios
        .iter()
        .position(|s| s.name == "file_changelog_entry")
        .unwrap();
    assert_eq!(lost.cells[0][file_task].final_success(), 1.0);
}

#[test]
fn bare_feedback_lowers_recovery_against_pointer_list() {
    let sandbox = tempfile::tempdir().unwrap();
    let measure = |style| {
        let plan = agent_plan(mock("attentive"), 30, style, sandbox.path());
        let aggregate = aggregate(&plan);
        let mut total = CellStats::new(1);
        for cell in &aggregate.cells[0] {
            total.merge(cell);
        }
        let task: TaskStats = total.task.clone().unwrap();
        (task.recovery_rate().unwrap(), total.final_success())
    };
    let (pointer_recovery, pointer_success) = measure(FeedbackStyle::PointerList);
    let (bare_recovery, bare_success) = measure(FeedbackStyle::Bare);
    assert!(
        pointer_recovery > bare_recovery + 0.2,
        "recovered: pointer-list {pointer_recovery}, bare {bare_recovery}"
    );
    assert!(
        pointer_success > bare_success,
        "task success: pointer-list {pointer_success}, bare {bare_success}"
    );
}

/// A one-scenario suite: `scenario` from the agent suite, with `changes`
/// (a script, say) merged over it.
fn variant(dir: &Path, scenario: &str, changes: Value) -> PathBuf {
    let path = root().join(format!("agent/{scenario}.json"));
    let mut value: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for (key, change) in changes.as_object().unwrap() {
        value[key] = change.clone();
    }
    value.as_object_mut().unwrap().remove("$schema");
    let suite = dir.join(scenario);
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("task.json"), value.to_string()).unwrap();
    suite
}

/// Run `suite` on the scripted mock; the rows of trials.csv.
fn scripted_rows(suite: &Path, out: &Path) -> Vec<TrialRow<'static>> {
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.code().is_some(), "{output:?}");
    csv::Reader::from_path(out.join("trials.csv"))
        .unwrap()
        .deserialize()
        .map(Result::unwrap)
        .collect()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

#[test]
fn a_wrong_final_write_fails_final_state() {
    let dir = tempfile::tempdir().unwrap();
    // The file task: every milestone reached, but the edit writes a wrong line.
    let wrong_edit = json!([
        {"calls": [call("read_file", json!({"path": "CHANGELOG.md"}))]},
        {"calls": [call("edit_file", json!({"path": "CHANGELOG.md", "old_text": "## 1.4.0",
            "new_text": "## 1.5.0\n\n- Sparkline support.\n\n## 1.4.0"}))]},
        {"calls": [call("write_file", json!({"path": "CHANGELOG.md", "content": "# Changelog\n"}))]},
        {"text": "Added 1.5.0."}
    ]);
    let suite = variant(
        dir.path(),
        "file_changelog_entry",
        json!({"script": wrong_edit}),
    );
    let rows = scripted_rows(&suite, &dir.path().join("files"));
    assert_eq!(rows.len(), 2 * 4);
    let last = &rows[3];
    assert_eq!(
        (last.trial_success, &*last.failures, &*last.ended),
        (false, "wrong_final_state", "answer")
    );
    // Milestones: read in turn 1, edit in turn 2; the bad write is not one.
    let milestones: Vec<u32> = rows[..4].iter().map(|r| r.milestones).collect();
    assert_eq!(milestones, [1, 1, 0, 0]);

    // The store task: the record written back with the wrong address.
    let wrong_put = json!([
        {"calls": [call("store_find", json!({"collection": "customers", "where": {"email": "grace@example.com"}}))]},
        {"calls": [call("store_put", json!({"collection": "customers", "record": {
            "id": "c-e519", "email": "grace@example.com", "name": "Grace Hopper",
            "address": "1 Compiler Ave, Arlington", "orders": ["o-77c0"], "team": "t-engines"}}))]},
        {"text": "Updated to 9 Nanosecond Lane."}
    ]);
    let suite = variant(
        dir.path(),
        "store_update_address",
        json!({"script": wrong_put}),
    );
    let rows = scripted_rows(&suite, &dir.path().join("store"));
    let last = &rows[2];
    // The put is not the milestone (wrong address), and the store says so.
    assert_eq!(
        (last.trial_success, &*last.failures),
        (false, "milestone_missed;wrong_final_state")
    );

    // The same task done right passes: the judge is not simply strict.
    let right_put = json!([
        wrong_put[0].clone(),
        {"calls": [call("store_put", json!({"collection": "customers", "record": {
            "id": "c-e519", "email": "grace@example.com", "name": "Grace Hopper",
            "address": "9 Nanosecond Lane, Arlington", "orders": ["o-77c0"], "team": "t-engines"}}))]},
        {"text": "Updated to 9 Nanosecond Lane."}
    ]);
    let suite = variant(
        dir.path(),
        "store_update_address",
        json!({"script": right_put}),
    );
    let rows = scripted_rows(&suite, &dir.path().join("store_right"));
    assert_eq!((rows[2].trial_success, &*rows[2].failures), (true, ""));
}

#[test]
fn a_forbidden_call_fails_the_task_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"calls": [call("list_dir", json!({"path": "app"}))]},
        {"calls": [call("delete_file", json!({"path": "app/config.toml"}))]},
        {"calls": [call("delete_file", json!({"path": "app/server.lock"}))]},
        {"text": "Removed app/server.lock."}
    ]);
    let suite = variant(
        dir.path(),
        "file_cleanup_forbidden",
        json!({"script": script}),
    );
    let rows = scripted_rows(&suite, &dir.path().join("out"));
    // Two turns per trial: the forbidden call ends the task there.
    assert_eq!(rows.len(), 2 * 2);
    let second = &rows[1];
    assert_eq!(
        (
            second.attempt,
            second.trial_success,
            &*second.failures,
            &*second.ended
        ),
        (2, false, "forbidden_call", "forbidden_call")
    );
    let summary = std::fs::read_to_string(dir.path().join("out/summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(summary.as_bytes());
    let header = reader.headers().unwrap().clone();
    let row = reader.records().next().unwrap().unwrap();
    let column = |name: &str| &row[header.iter().position(|h| h == name).unwrap()];
    assert_eq!(
        (column("final_success"), column("forbidden_calls")),
        ("0.0", "2")
    );
}

/// `run scenarios/agent` with the mocks into `out`.
fn agent_run(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "scenarios/agent",
        "--trials",
        "4",
        "--seed",
        "5",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--resume") {
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    }
    toolgauge(&args)
}

/// The same files; session.jsonl may differ in its wall-clock timestamps,
/// and merged shards' logs come shard after shard (`in_any_order`).
fn assert_same(a: &Path, b: &Path, in_any_order: bool) {
    // run.json says the concurrency; the reports must not differ.
    let reports = FILES.iter().filter(|f| **f != "run.json");
    for &file in reports.chain(&["session.jsonl"]) {
        let (x, y) = (read(a, file), read(b, file));
        if file == "session.jsonl" {
            let entries = |text: &str| -> Vec<String> {
                let mut entries: Vec<String> = text
                    .lines()
                    .map(|line| {
                        let mut entry: Value = serde_json::from_str(line).unwrap();
                        entry["timestamp"] = Value::Null;
                        entry.to_string()
                    })
                    .collect();
                if in_any_order {
                    entries.sort();
                }
                entries
            };
            assert_eq!(entries(&x), entries(&y), "{file} differs");
        } else {
            assert_eq!(x, y, "{file} differs");
        }
    }
}

#[test]
fn task_runs_give_the_same_files_whatever_the_concurrency_resume_or_shards() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let output = agent_run(&full, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let serial = dir.path().join("serial");
    agent_run(&serial, &["--concurrency", "1"]);
    assert_same(&full, &serial, false);

    // Killed mid-run (a torn line), resumed: the same files.
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    let trials = read(&full, "trials.csv");
    std::fs::write(killed.join("trials.csv"), &trials[..trials.len() * 2 / 5]).unwrap();
    let session = read(&full, "session.jsonl");
    std::fs::write(killed.join("session.jsonl"), &session[..session.len() / 2]).unwrap();
    std::fs::copy(full.join("run.json"), killed.join("run.json")).unwrap();
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    assert_same(&full, &killed, false);

    // Three shards merged: the same files.
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| dir.path().join(format!("shard{k}")))
        .collect();
    for (k, shard) in shards.iter().enumerate() {
        let spec = format!("{}/3", k + 1);
        assert_eq!(agent_run(shard, &["--shard", &spec]).status.code(), Some(0));
    }
    let merged = dir.path().join("merged");
    let mut args = vec!["report", "merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    let output = toolgauge(&args);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_same(&full, &merged, true);

    // Compare reads task runs; a threshold no mock meets fails the run.
    let output = toolgauge(&[
        "report",
        "compare",
        full.to_str().unwrap(),
        serial.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let strict = dir.path().join("strict");
    let output = agent_run(&strict, &["--min-success", "0.99"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let junit = read(&strict, "junit.xml");
    assert!(
        junit.contains("store_refund_order") && junit.contains("<failure"),
        "{junit}"
    );
    let output = agent_run(&dir.path().join("pass_k"), &["--min-pass-k", "3:0.99"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");

    // Every task trial ends with a known ending on its last row only.
    let mut reader = csv::Reader::from_path(full.join("trials.csv")).unwrap();
    let mut endings = 0;
    for row in reader.deserialize::<TrialRow>() {
        let row = row.unwrap();
        if !row.ended.is_empty() {
            assert!(Ending::parse(&row.ended).is_some(), "{row:?}");
            endings += 1;
        }
    }
    let tasks = std::fs::read_dir(root().join("agent")).unwrap().count();
    assert!(tasks >= 15, "{tasks} tasks");
    assert_eq!(endings, 4 * tasks * 4);
}

#[test]
fn scripted_arguments_that_are_not_an_object_reach_parse_as_a_malformed_call() {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        {"calls": [call("list_dir", json!(["app"]))]},
        {"text": "Nothing to do."}
    ]);
    let suite = variant(
        dir.path(),
        "file_cleanup_forbidden",
        json!({"script": script}),
    );
    let rows = scripted_rows(&suite, &dir.path().join("out"));
    // The model was told its arguments are not an object, as a provider's
    // reply with an array for arguments is read.
    assert_eq!(
        (rows[0].attempt, &*rows[0].failures),
        (1, "parse"),
        "{rows:?}"
    );
}

#[test]
fn a_reference_step_that_errs_as_its_author_saw_is_tried_thrice_then_taken_as_done() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |name: &str, result: Value| {
        json!({
            "name": name,
            "description": "Look a product up.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            "simulate": {"result": result}
        })
    };
    // tau2's gold actions hold calls like the first: an id that is not
    // found, then the right one.
    let scenario = json!({
        "name": "erring_reference",
        "tools": [tool("get_product", json!("Error: Product not found")), tool("get_item", json!({"price": 5}))],
        "prompt": "What does item 7 cost?",
        "task": {
            "max_turns": 6,
            "reference": [
                {"id": "product", "name": "get_product", "arguments": {"id": "7"}},
                {"name": "get_item", "arguments": {"id": "7"}, "after": "product"}
            ],
            "answer": {"$contains": "5"}
        }
    });
    let path = dir.path().join("erring_reference.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = crate::conversation::scripted_run(path.to_str().unwrap(), 1, &out);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    let calls: Vec<String> = std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_call")
        .map(|e| e["tool"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        calls,
        ["get_product", "get_product", "get_product", "get_item"]
    );
}
