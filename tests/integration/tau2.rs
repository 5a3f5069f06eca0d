//! tau2-bench's airline tasks imported and run on tau2's own environment
//! through the bridge (scripts/tau2_bridge), judged by tau2's evaluator:
//! the scripted mock plays the gold actions and passes; the same task
//! with the required information left unsaid fails on tau2's COMMUNICATE
//! check alone.
//!
//! The bridge needs Python 3.12 with tau2-bench and the MCP SDK:
//! $TOOLGAUGE_TAU2_PYTHON (set by .ci/run, which installs them); they are
//! #[ignore]d, and fail saying what is missing when run without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{assert_success, toolgauge};

/// The Python that runs the bridge; a test run without it fails saying so.
pub(crate) fn bridge_python(test: &str) -> String {
    let python = std::env::var("TOOLGAUGE_TAU2_PYTHON").ok().filter(|p| {
        std::process::Command::new(p)
            .args(["-c", "import tau2, mcp"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    python.unwrap_or_else(|| {
        panic!(
            "missing: {test}: TOOLGAUGE_TAU2_PYTHON does not name a Python with tau2 and mcp \
             (.ci/run installs ../shared/oracles/tau2 and scripts/tau2_bridge/requirements.txt)"
        )
    })
}

/// `toolgauge import tau2` of `domain` into `out`, through the bridge.
pub(crate) fn import(python: &str, domain: &str, out: &Path) {
    import_split(python, domain, None, out)
}

/// [`import`] of one of the domain's splits (tau2's default: `base`).
pub(crate) fn import_split(python: &str, domain: &str, split: Option<&str>, out: &Path) {
    let bridge = format!("{python} scripts/tau2_bridge/bridge.py");
    let mut args = vec!["import", "tau2", "--domain", domain, "--bridge", &bridge];
    if let Some(split) = split {
        args.extend(["--split", split]);
    }
    args.extend(["--out", out.to_str().unwrap()]);
    assert_success(&toolgauge(&args));
}

/// A suite at `suite` of the imported scenarios of `domain`'s tasks `ids`.
fn suite_of<'a>(
    imported: &Path,
    suite: &Path,
    domain: &str,
    ids: impl IntoIterator<Item = &'a str>,
) {
    std::fs::create_dir_all(suite).unwrap();
    for id in ids {
        let name = format!("{}.json", toolgauge::tau2::scenario_name(domain, id));
        std::fs::copy(imported.join(&name), suite.join(&name)).unwrap();
    }
}

/// `toolgauge run SUITE --models MODEL --trials N --quiet --out OUT`,
/// `extra` flags after.
fn run_suite([suite, model, trials, out]: [&str; 4], extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", suite, "--models", model, "--trials", trials];
    args.extend(["--quiet", "--out", out]);
    args.extend(extra);
    toolgauge(&args)
}

/// The probe's result of each trial in a run's session log, by scenario.
fn verdicts(out: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "probe")
        .map(|event| {
            (
                event["scenario"].as_str().unwrap().to_owned(),
                event["result"].clone(),
            )
        })
        .collect()
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn the_scripted_mock_passes_airline_tasks_on_tau2s_verdict_and_fails_one_left_unsaid() {
    let python = bridge_python(
        "the_scripted_mock_passes_airline_tasks_on_tau2s_verdict_and_fails_one_left_unsaid",
    );
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("airline");
    import(&python, "airline", &imported);
    assert_eq!(std::fs::read_dir(&imported).unwrap().count(), 50);

    // Writes and information to say (7), a transfer (13); and 7 again
    // with the information left unsaid.
    let suite = dir.path().join("suite");
    suite_of(&imported, &suite, "airline", ["7", "13"]);
    let mut unsaid: Value =
        serde_json::from_slice(&std::fs::read(imported.join("tau2_airline_7.json")).unwrap())
            .unwrap();
    unsaid["name"] = "tau2_airline_7_unsaid".into();
    unsaid["task"]["reference_answer"] = "Done.".into();
    std::fs::write(suite.join("unsaid.json"), unsaid.to_string()).unwrap();

    let out = dir.path().join("out");
    let output = run_suite(
        [
            suite.to_str().unwrap(),
            "scenarios/models/scripted.json",
            "1",
            out.to_str().unwrap(),
        ],
        &[],
    );
    // One of three fails: the run's own verdict, not a loss.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("lost"), "{stderr}");
    let mut verdicts = verdicts(&out);
    verdicts.sort_by(|a, b| a.0.cmp(&b.0));
    let summary: Vec<(&str, f64)> = verdicts
        .iter()
        .map(|(name, result)| (name.as_str(), result["reward"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            ("tau2_airline_13", 1.0),
            ("tau2_airline_7", 1.0),
            ("tau2_airline_7_unsaid", 0.0)
        ],
        "{verdicts:?}"
    );
    let unsaid = &verdicts[2].1["tau2"];
    assert_eq!(unsaid["breakdown"]["DB"], 1.0, "{unsaid}");
    assert_eq!(unsaid["breakdown"]["COMMUNICATE"], 0.0, "{unsaid}");
    assert_eq!(unsaid["ended_by"], "user_stop", "{unsaid}");
    // The reports carry tau2's breakdown per domain (a tag).
    let scores = std::fs::read_to_string(out.join("scores.csv")).unwrap();
    for line in [
        "scripted,tag,airline,reward,,2,3,0.666667",
        "scripted,tag,airline,component,COMMUNICATE,2,3,0.666667",
        "scripted,tag,airline,component,DB,3,3,1.0",
        "scripted,tag,airline,ended,user_stop,3,3,1.0",
        "scripted,tag,airline,pass_k,1,3,3,0.666667",
    ] {
        assert!(scores.lines().any(|l| l == line), "{line}\n{scores}");
    }
}

/// Replay the conversations of `tasks` (`domain`, or every task of the
/// fixture when `tasks` is empty) in tests/fixtures/tau2/`fixture`
/// through toolgauge and the bridge: (conversation id, tau2's recorded
/// reward, toolgauge's) for each.
fn replayed(
    python: &str,
    (domain, fixture): (&str, &str),
    tasks: &[&str],
    dir: &Path,
) -> Vec<(String, Value, Value)> {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tau2")
        .join(fixture);
    replayed_file(python, (domain, None), &fixture, tasks, dir)
}

/// [`replayed`] of any Results JSON, its tasks in `split` of `domain`.
pub(crate) fn replayed_file(
    python: &str,
    (domain, split): (&str, Option<&str>),
    fixture: &Path,
    tasks: &[&str],
    dir: &Path,
) -> Vec<(String, Value, Value)> {
    let recorded: Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    let simulations = recorded["simulations"].as_array().unwrap();
    let mut by_task: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for simulation in simulations {
        let task = simulation["task_id"].as_str().unwrap();
        if tasks.is_empty() || tasks.contains(&task) {
            by_task.entry(task).or_default().push(simulation);
        }
    }
    let imported = dir.join(format!("{domain}-imported"));
    import_split(python, domain, split, &imported);
    let suite = dir.join(format!("{domain}-suite"));
    suite_of(&imported, &suite, domain, by_task.keys().copied());
    let model = dir.join(format!("{domain}-replay.json"));
    let file = json!({"name": "tau2-replay", "kind": "tau2-results", "results": fixture});
    std::fs::write(&model, file.to_string()).unwrap();
    let trials = by_task.values().map(Vec::len).max().unwrap_or(1);
    let out = dir.join(format!("{domain}-out"));
    let output = run_suite(
        [
            suite.to_str().unwrap(),
            model.to_str().unwrap(),
            &trials.to_string(),
            out.to_str().unwrap(),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("lost"), "no trial is lost: {stderr}");
    let mut compared = Vec::new();
    for event in std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "probe")
    {
        let scenario = event["scenario"].as_str().unwrap();
        let task = by_task
            .keys()
            .find(|id| toolgauge::tau2::scenario_name(domain, id) == scenario)
            .unwrap();
        let trial = event["trial"].as_u64().unwrap() as usize;
        let of_task = &by_task[task];
        let simulation = of_task[trial % of_task.len()];
        // tau2's own runs record more (its checks, a note): the reward and
        // its breakdown are the verdict; none (a run cut short) is empty.
        let recorded = &simulation["reward_info"];
        let breakdown = match &recorded["reward_breakdown"] {
            Value::Null => json!({}),
            breakdown => breakdown.clone(),
        };
        let mut theirs = json!({"reward": recorded["reward"], "reward_breakdown": breakdown});
        let mut ours = json!({
            "reward": event["result"]["reward"],
            "reward_breakdown": event["result"]["tau2"]["breakdown"],
        });
        // Where tau2 recorded its database check (a whole Results JSON), it too.
        if let Some(db_match) = recorded["db_check"].get("db_match") {
            theirs["db_match"] = db_match.clone();
            ours["db_match"] = event["result"]["tau2"]["db_match"].clone();
        }
        compared.push((simulation["id"].as_str().unwrap().to_owned(), theirs, ours));
    }
    compared
}

/// Where toolgauge's verdict and tau2's differ, one line each.
fn disagreements(compared: &[(String, Value, Value)]) -> Vec<String> {
    compared
        .iter()
        .filter(|(_, tau2, ours)| tau2 != ours)
        .map(|(id, tau2, ours)| format!("{id}: tau2 {tau2}, toolgauge {ours}"))
        .collect()
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn toolgauge_gives_tau2s_verdict_on_the_generated_conversations_of_two_tasks() {
    let python =
        bridge_python("toolgauge_gives_tau2s_verdict_on_the_generated_conversations_of_two_tasks");
    let dir = tempfile::tempdir().unwrap();
    // Writes, information to say and every kind of mistake (airline 7);
    // a retail task judged without an NL judge (0).
    let mut compared = replayed(&python, ("airline", "airline.json"), &["7"], dir.path());
    compared.extend(replayed(
        &python,
        ("retail", "retail.json"),
        &["0"],
        dir.path(),
    ));
    let failed = compared
        .iter()
        .filter(|(_, tau2, _)| tau2["reward"] == 0.0)
        .count();
    assert!(compared.len() >= 10 && failed >= 4, "{compared:?}");
    assert_eq!(disagreements(&compared), Vec::<String>::new());
}

/// Every conversation of tests/fixtures/tau2 (both domains), with
/// TOOLGAUGE_TAU2_ALL=1: minutes of tau2's environments.
#[test]
#[ignore = "minutes: all 507 conversations; run with TOOLGAUGE_TAU2_ALL=1 and --ignored"]
fn toolgauge_gives_tau2s_verdict_on_every_generated_conversation() {
    if std::env::var("TOOLGAUGE_TAU2_ALL").is_err() {
        panic!(
            "missing: toolgauge_gives_tau2s_verdict_on_every_generated_conversation: set TOOLGAUGE_TAU2_ALL=1 (minutes)"
        )
    }
    let python = bridge_python("toolgauge_gives_tau2s_verdict_on_every_generated_conversation");
    let dir = tempfile::tempdir().unwrap();
    let mut compared = replayed(&python, ("airline", "airline.json"), &[], dir.path());
    compared.extend(replayed(
        &python,
        ("retail", "retail.json"),
        &[],
        dir.path(),
    ));
    let failed = compared
        .iter()
        .filter(|(_, tau2, _)| tau2["reward"] == 0.0)
        .count();
    eprintln!(
        "tau2 agreement: {} conversations ({failed} failed by tau2), {} disagreements",
        compared.len(),
        disagreements(&compared).len()
    );
    assert_eq!(disagreements(&compared), Vec::<String>::new());
}

/// tau2's own runs (`tau2 run`, through litellm) of the local real model
/// as agent and as user (scripts/tau2-real-model.sh), replayed: each
/// simulation gets the reward and breakdown tau2 recorded.
#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn toolgauge_gives_tau2s_verdict_on_tau2s_own_runs_of_the_real_model() {
    let python = bridge_python("toolgauge_gives_tau2s_verdict_on_tau2s_own_runs_of_the_real_model");
    let dir = tempfile::tempdir().unwrap();
    let compared = replayed(
        &python,
        ("airline", "real-model-airline.json"),
        &[],
        dir.path(),
    );
    assert!(!compared.is_empty(), "{compared:?}");
    assert_eq!(disagreements(&compared), Vec::<String>::new());
}

/// The hash of task `id`'s database after its gold actions, on an
/// environment tau2 makes afresh in a Python of its own.
fn tau2s_fresh_hash(python: &str, domain: &str, id: &str) -> String {
    let script = format!(
        r#"
import sys
sys.path.insert(0, "scripts/tau2_bridge")
import tau2_ready
tau2_ready.quiet("ERROR")
from tau2.registry import registry
task = next(t for t in registry.get_tasks_loader("{domain}")() if t.id == "{id}")
environment = registry.get_env_constructor("{domain}")()
initial = task.initial_state
environment.set_state(
    initialization_data=initial.initialization_data if initial else None,
    initialization_actions=initial.initialization_actions if initial else None,
    message_history=[],
)
for action in task.evaluation_criteria.actions:
    environment.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
print(environment.get_db_hash())
"#
    );
    let output = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn a_forking_bridge_gives_each_trial_of_a_task_a_fresh_environment() {
    let python = bridge_python("a_forking_bridge_gives_each_trial_of_a_task_a_fresh_environment");
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("airline");
    import(&python, "airline", &imported);
    // Task 8 books a reservation and pays for it: a trial that saw the
    // one before it would book a second and pay twice.
    let suite = dir.path().join("suite");
    suite_of(&imported, &suite, "airline", ["8"]);
    let name = "tau2_airline_8.json";
    let written: Value = serde_json::from_slice(&std::fs::read(suite.join(name)).unwrap()).unwrap();
    assert_eq!(written["tools"][0]["mcp"]["forks"], true, "{written}");
    let out = dir.path().join("out");
    let output = run_suite(
        [
            suite.to_str().unwrap(),
            "scenarios/models/scripted.json",
            "3",
            out.to_str().unwrap(),
        ],
        &["--concurrency", "1"],
    );
    assert_success(&output);
    let hashes: Vec<String> = verdicts(&out)
        .iter()
        .map(|(_, result)| result["tau2"]["db_hash"].as_str().unwrap().to_owned())
        .collect();
    let fresh = tau2s_fresh_hash(&python, "airline", "8");
    assert_eq!(
        hashes,
        vec![fresh; 3],
        "each trial's database against tau2's fresh run"
    );
    // One server (a forker) served them all: the listing's start and
    // each trial's.
    let run: Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let sources = run["tool_sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!(sources[0]["startups"], 4, "{sources:?}");
}

/// tests/tau2_oracle/metrics.py with `args`, its stdout.
fn oracle_metrics(python: &str, args: &[&str]) -> String {
    let output = std::process::Command::new(python)
        .arg("tests/tau2_oracle/metrics.py")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "metrics.py {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
#[ignore = "needs tau2-bench: TOOLGAUGE_TAU2_PYTHON (.ci/run installs it and runs this with --ignored)"]
fn report_tau2_gives_tau2s_own_metrics_of_a_replayed_run_of_each_domain() {
    let python =
        bridge_python("report_tau2_gives_tau2s_own_metrics_of_a_replayed_run_of_each_domain");
    let dir = tempfile::tempdir().unwrap();
    for domain in ["airline", "retail", "telecom"] {
        // One Results JSON, fed to tau2's metrics and replayed through
        // toolgauge: 8 tasks, 3 trials each, passes and failures mixed
        // (telecom's with the user's own calls, replayed on its tools).
        let results = dir.path().join(format!("{domain}-results.json"));
        let results_path = results.to_str().unwrap();
        oracle_metrics(&python, &["results", domain, results_path, "--tasks", "8"]);
        let expected: Value =
            serde_json::from_str(&oracle_metrics(&python, &["compute", results_path])).unwrap();
        let recorded: Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
        let imported = dir.path().join(format!("{domain}-imported"));
        import(&python, domain, &imported);
        let suite = dir.path().join(format!("{domain}-suite"));
        let tasks = recorded["tasks"].as_array().unwrap();
        suite_of(
            &imported,
            &suite,
            domain,
            tasks.iter().map(|t| t["id"].as_str().unwrap()),
        );
        let model = dir.path().join(format!("{domain}-replay.json"));
        let file = json!({"name": "tau2-replay", "kind": "tau2-results", "results": results});
        std::fs::write(&model, file.to_string()).unwrap();
        let out = dir.path().join(format!("{domain}-out"));
        let run = run_suite(
            [
                suite.to_str().unwrap(),
                model.to_str().unwrap(),
                "3",
                out.to_str().unwrap(),
            ],
            &[],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            !stderr.contains("lost"),
            "{domain}: no trial is lost: {stderr}"
        );
        let report = toolgauge(&["report", "tau2", out.to_str().unwrap()]);
        assert_success(&report);
        let written: Value =
            serde_json::from_slice(&std::fs::read(out.join("tau2_metrics.json")).unwrap()).unwrap();
        let ours = &written.as_array().unwrap()[0];
        assert_eq!(ours["domain"], domain);
        let close =
            |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-12;
        assert!(
            close(&ours["avg_reward"], &expected["avg_reward"]),
            "{domain}: {ours} {expected}"
        );
        let (ks, theirs) = (&ours["pass_hat_ks"], &expected["pass_hat_ks"]);
        assert_eq!(ks.as_object().unwrap().len(), 3, "{ks}");
        for (k, value) in theirs.as_object().unwrap() {
            assert!(close(&ks[k], value), "{domain}: pass^{k}: {ks} {theirs}");
        }
        for count in [
            "total_simulations",
            "total_tasks",
            "infra_error_count",
            "db_match_count",
            "db_mismatch_count",
            "db_not_checked",
            "termination_user_stop",
            "termination_agent_stop",
            "termination_max_steps",
            "termination_error",
            "termination_infrastructure_error",
        ] {
            assert_eq!(ours[count], expected[count], "{domain}: {count}");
        }
        assert_eq!(ours["components"], expected["components"], "{domain}");
    }
}
