//! A probe's score (`final_state.probe.score`) in every report: trials.csv's
//! reward columns, scores.csv per scenario and per tag, summary.md's
//! Rewards, and the same again when the run's reports are made from its
//! trials.csv (`report merge`).

use serde_json::{Value, json};

use crate::conversation::{mcp_test_server, scripted_run};
use crate::live::stderr;
use crate::{csv_rows, toolgauge};

/// A task whose probe (lenient_echo answers its arguments) scores it
/// `reward` with the given parts, ended by `ended`.
fn scored_task(name: &str, reward: f64, db: f64) -> Value {
    json!({
        "name": name,
        // A tau2 scenario's tags: "tau2", then its domain.
        "tags": ["tau2", "shop"],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "simulate": {"result": {"temp_c": 18}}
            },
            {"mcp": {"command": [mcp_test_server().to_str().unwrap()]}, "only": ["lenient_echo"]}
        ],
        "messages": [{"role": "assistant", "content": "Hi! How can I help you today?"}],
        "task": {
            "max_turns": 3,
            "reference": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "reference_answer": "It is 18 C.",
            "user": {"instructions": "Ask for the weather.", "script": ["Weather in Paris?", "###STOP###"]},
            "final_state": {"probe": {
                "tool": "lenient_echo",
                "arguments": {
                    "reward": reward,
                    "parts": {"DB": db, "COMMUNICATE": 1.0},
                    "why": "user_stop",
                    "checks": {"db_match": db >= 1.0, "auth": null}
                },
                "transcript": "transcript",
                // An object matcher names every key of the result.
                "result": {
                    "reward": {"$gte": 0.999_999},
                    "parts": {"$present": true, "$example": {}},
                    "why": "user_stop",
                    "checks": {"$present": true, "$example": {}},
                    "transcript": {"$present": true, "$example": {}}
                },
                "score": {"reward": "/reward", "components": "/parts", "reason": "/why", "checks": "/checks"}
            }}
        }
    })
}

#[test]
fn a_probes_score_is_reported_per_trial_per_scenario_and_per_tag_and_read_back_alike() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    for task in [scored_task("full", 1.0, 1.0), scored_task("half", 0.5, 0.0)] {
        let path = suite.join(format!("{}.json", task["name"].as_str().unwrap()));
        std::fs::write(path, task.to_string()).unwrap();
    }
    let out = dir.path().join("out");
    let output = scripted_run(suite.to_str().unwrap(), 2, &out);
    // "half" fails its probe's matcher: below 1 is not passed.
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let trials = csv_rows(&out.join("trials.csv"));
    let scored: Vec<(&str, &str, &str, &str)> = trials
        .iter()
        .filter(|r| !r["reward"].is_empty())
        .map(|r| {
            (
                r["scenario"].as_str(),
                r["reward"].as_str(),
                r["reward_parts"].as_str(),
                r["reward_reason"].as_str(),
            )
        })
        .collect();
    assert_eq!(scored.len(), 4, "one scored row per trial: {trials:?}");
    assert!(
        scored.contains(&("half", "0.5", "DB=0.0;COMMUNICATE=1.0", "user_stop")),
        "{scored:?}"
    );
    assert!(scored.contains(&("full", "1.0", "DB=1.0;COMMUNICATE=1.0", "user_stop")));
    let checks: Vec<&str> = trials
        .iter()
        .filter(|r| r["scenario"] == "half" && !r["reward"].is_empty())
        .map(|r| r["reward_checks"].as_str())
        .collect();
    assert_eq!(checks, ["db_match=false;auth=null"; 2], "{trials:?}");

    let scores = csv_rows(&out.join("scores.csv"));
    let find = |group: &str, kind: &str, name: &str| {
        let row = scores
            .iter()
            .find(|r| r["group"] == group && r["kind"] == kind && r["name"] == name)
            .unwrap_or_else(|| panic!("no {group} {kind} {name}: {scores:?}"));
        (
            row["count"].clone(),
            row["of"].clone(),
            row["value"].clone(),
        )
    };
    assert_eq!(
        find("half", "reward", ""),
        ("0".into(), "2".into(), "0.5".into())
    );
    assert_eq!(
        find("shop", "reward", ""),
        ("2".into(), "4".into(), "0.75".into())
    );
    assert_eq!(
        find("shop", "component", "DB"),
        ("2".into(), "4".into(), "0.5".into())
    );
    assert_eq!(
        find("shop", "ended", "user_stop"),
        ("4".into(), "4".into(), "1.0".into())
    );
    assert_eq!(
        find("shop", "check", "db_match"),
        ("2".into(), "4".into(), "0.5".into())
    );
    assert_eq!(
        find("shop", "check", "auth"),
        ("0".into(), "0".into(), "0.0".into()),
        "never checked"
    );
    // pass^k over the tag's tasks: (1 + 0) / 2 at k = 1 and 2.
    assert_eq!(
        find("shop", "pass_k", "2"),
        ("2".into(), "2".into(), "0.5".into())
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Rewards"), "{md}");
    assert!(md.contains("DB 2/4"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Rewards</h2>") && html.contains("DB 2/4"));

    let merged = dir.path().join("merged");
    let output = toolgauge(&[
        "report",
        "merge",
        out.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(out.join("scores.csv")).unwrap(),
        std::fs::read_to_string(merged.join("scores.csv")).unwrap()
    );

    // tau2's own summary, from the trials read back.
    let output = toolgauge(&["report", "tau2", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("| scripted | shop | 0.7500 |"), "{text}");
    let written: Value =
        serde_json::from_slice(&std::fs::read(out.join("tau2_metrics.json")).unwrap()).unwrap();
    let shop = &written[0];
    assert_eq!(shop["domain"], "shop");
    assert_eq!(shop["avg_reward"], 0.75);
    assert_eq!(shop["pass_hat_ks"], json!({"1": 0.5, "2": 0.5}));
    assert_eq!(
        (
            shop["total_simulations"].as_u64(),
            shop["total_tasks"].as_u64()
        ),
        (Some(4), Some(2))
    );
    assert_eq!(shop["db_match_count"], 2);
    assert_eq!(shop["db_mismatch_count"], 2);
    assert_eq!(shop["db_not_checked"], 0);
    assert_eq!(shop["termination_user_stop"], 4);
    assert_eq!(
        shop["components"]["DB"],
        json!({"passed": 2, "of": 4, "rate": 0.5})
    );
}

#[test]
fn report_tau2_of_a_run_without_tau2_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = scripted_run("scenarios/starter", 1, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = toolgauge(&["report", "tau2", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let said = stderr(&output);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("no tau2 scenario"), "{said}");
}

#[test]
fn a_score_pointer_that_is_not_a_json_pointer_is_refused_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut task = scored_task("bad", 1.0, 1.0);
    task["task"]["final_state"]["probe"]["score"]["reward"] = json!("reward");
    let path = dir.path().join("bad.json");
    std::fs::write(&path, task.to_string()).unwrap();
    let output = scripted_run(path.to_str().unwrap(), 1, &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("/task/final_state/probe/score/reward"),
        "{err}"
    );
    assert!(err.contains("not a JSON pointer"), "{err}");
}
