//! `toolgauge run` and `toolgauge report`: files, determinism, resume,
//! shards, thresholds and exit codes.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::{assert_success, toolgauge};

/// The report files a run writes (run.json last).
pub(crate) const FILES: [&str; 9] = [
    "trials.csv",
    "summary.csv",
    "models.csv",
    "comparisons.csv",
    "self_correction.csv",
    "pass_k.csv",
    "summary.md",
    "junit.xml",
    "run.json",
];

fn run_into(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "scenarios/starter", "--trials", "6", "--quiet"];
    if !extra.contains(&"--seed") {
        args.extend_from_slice(&["--seed", "11"]);
    }
    args.extend_from_slice(extra);
    if !extra.contains(&"--resume") {
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    }
    toolgauge(&args)
}

pub(crate) fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

fn assert_same_files(a: &Path, b: &Path) {
    assert_same(a, b, &FILES);
}

fn assert_same(a: &Path, b: &Path, files: &[&str]) {
    for &file in files {
        assert_eq!(read(a, file), read(b, file), "{file} differs");
    }
}

#[test]
fn seeded_runs_write_identical_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let first = run_into(&a, &[]);
    assert_success(&first);
    run_into(&b, &["--concurrency", "3"]);
    // run.json records the concurrency; everything else is the same.
    assert_same(&a, &b, &FILES[..8]);
    let trials = read(&a, "trials.csv");
    assert!(trials.starts_with("model,scenario,trial,attempt,attempt_success,trial_success,failures,reason,calls,model_ms,tool_ms,serial_ms,ideal_ms,input_tokens,output_tokens,cost_usd,milestones,redundant_calls,recovered,ended,schema_errors,reason_parameter,queue_ms,retries,retry_ms,reasoning_tokens,cached_tokens,cache_write_tokens,first_byte_ms,first_token_ms,first_call_ms,calls_ms,stream_end_ms,turn_ms,early_ideal_ms,ran_early,user_turn,user_turn_passed,user_input_tokens,user_output_tokens,user_cost_usd,reward,reward_parts,reward_reason,judge_verdicts,judge_input_tokens,judge_output_tokens,judge_cost_usd,repeated_failed_call,next_move,reward_checks\n"));
    // 4 models x 35 scenarios x 6 trials, in order, each trial once.
    let summary = read(&a, "summary.csv");
    assert_eq!(summary.lines().count(), 1 + 4 * 35);
    let c = run_into(&dir.path().join("c"), &["--seed", "12"]);
    assert_success(&c);
    assert_ne!(
        read(&a, "trials.csv"),
        read(&dir.path().join("c"), "trials.csv")
    );
}

#[test]
fn a_killed_run_resumed_gives_the_rows_of_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    run_into(&full, &[]);
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    let trials = read(&full, "trials.csv");
    // Half the bytes: the last line is torn, as a kill would leave it.
    std::fs::write(killed.join("trials.csv"), &trials[..trials.len() / 2]).unwrap();
    // The log is written first: it holds more trials, and a torn line.
    let session = read(&full, "session.jsonl");
    std::fs::write(
        killed.join("session.jsonl"),
        &session[..session.len() * 7 / 10],
    )
    .unwrap();
    std::fs::copy(full.join("run.json"), killed.join("run.json")).unwrap();
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_success(&resumed);
    assert_same_files(&full, &killed);
    // Every entry once, in order: only the wall-clock timestamps differ.
    let entries = |dir: &Path| -> Vec<serde_json::Value> {
        read(dir, "session.jsonl")
            .lines()
            .map(|line| {
                let mut entry: serde_json::Value = serde_json::from_str(line).unwrap();
                entry["timestamp"] = serde_json::Value::Null;
                entry
            })
            .collect()
    };
    assert_eq!(entries(&killed), entries(&full));
}

/// The columns of trials.csv that every release wrote (every later one
/// has a default, so that older files still read).
const FIRST_COLUMNS: [&str; 12] = [
    "model",
    "scenario",
    "trial",
    "attempt",
    "attempt_success",
    "trial_success",
    "failures",
    "calls",
    "model_ms",
    "tool_ms",
    "serial_ms",
    "ideal_ms",
];

/// `text`'s columns named in `keep`, in their order.
fn only_columns(text: &str, keep: &[&str]) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let at: Vec<usize> = keep
        .iter()
        .map(|name| header.iter().position(|h| h == *name).unwrap())
        .collect();
    let mut rows = vec![keep.iter().map(|k| k.to_string()).collect()];
    for record in reader.records() {
        let record = record.unwrap();
        rows.push(at.iter().map(|&i| record[i].to_owned()).collect());
    }
    rows
}

/// trials.csv as the first release wrote it.
fn first_release(text: &str) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in only_columns(text, &FIRST_COLUMNS) {
        writer.write_record(&row).unwrap();
    }
    String::from_utf8(writer.into_inner().unwrap()).unwrap()
}

/// Each row's trial and verdict, as every release wrote them.
fn verdict_columns(dir: &Path) -> Vec<Vec<String>> {
    only_columns(&read(dir, "trials.csv"), &FIRST_COLUMNS[..8])
}

#[test]
fn a_trials_csv_written_before_later_columns_resumes_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    assert_success(&run_into(&full, &[]));
    let old = first_release(&read(&full, "trials.csv"));

    // Resumed after its first half of whole lines.
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    let lines: Vec<&str> = old.lines().collect();
    let kept: String = lines[..lines.len() / 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(killed.join("trials.csv"), kept).unwrap();
    std::fs::copy(full.join("run.json"), killed.join("run.json")).unwrap();
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_success(&resumed);
    assert_eq!(verdict_columns(&killed), verdict_columns(&full));
    // The kept rows were read, not run again: the columns they lacked
    // came back at their defaults.
    let schema_errors = |dir: &Path| only_columns(&read(dir, "trials.csv"), &["schema_errors"]);
    let (was, is) = (schema_errors(&full), schema_errors(&killed));
    let kept = lines.len() / 2;
    assert!(was[1..kept].iter().any(|row| row[0] != "0"), "{was:?}");
    assert!(is[1..kept].iter().all(|row| row[0] == "0"), "{is:?}");
    assert_eq!(was[kept..], is[kept..]);

    // Merged with a shard of today's columns.
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| dir.path().join(format!("shard{k}")))
        .collect();
    for (k, shard) in shards.iter().enumerate() {
        assert_success(&run_into(shard, &["--shard", &format!("{}/2", k + 1)]));
    }
    let first = first_release(&read(&shards[0], "trials.csv"));
    std::fs::write(shards[0].join("trials.csv"), first).unwrap();
    let merged = dir.path().join("merged");
    let mut args = vec!["report", "merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    assert_success(&toolgauge(&args));
    assert_eq!(verdict_columns(&merged), verdict_columns(&full));
    let zeros = schema_errors(&merged)
        .iter()
        .filter(|row| row[0] == "0")
        .count();
    assert!(
        zeros
            > schema_errors(&full)
                .iter()
                .filter(|row| row[0] == "0")
                .count()
    );
}

#[test]
fn merged_shards_equal_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    run_into(&full, &[]);
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| dir.path().join(format!("shard{k}")))
        .collect();
    for (k, shard) in shards.iter().enumerate() {
        let spec = format!("{}/3", k + 1);
        let output = run_into(shard, &["--shard", &spec]);
        assert_eq!(output.status.code(), Some(0));
    }
    let merged = dir.path().join("merged");
    let mut args = vec!["report", "merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    let output = toolgauge(&args);
    assert_success(&output);
    assert_same_files(&full, &merged);
    // report.html too, the failed trials' conversations read from the
    // merged log; and made again from the folder, the same.
    assert_eq!(read(&full, "report.html"), read(&merged, "report.html"));
    std::fs::remove_file(full.join("report.html")).unwrap();
    let output = toolgauge(&["report", "html", full.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(read(&full, "report.html"), read(&merged, "report.html"));

    // A folder that holds a run is not replaced without --force.
    let again = toolgauge(&args);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a run"));

    // A missing shard is refused.
    let output = toolgauge(&[
        "report",
        "merge",
        shards[0].to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is a shard missing"));

    // A shard given twice is named, not counted.
    let merge = |given: &[&PathBuf]| {
        let mut args = vec!["report", "merge"];
        args.extend(given.iter().map(|s| s.to_str().unwrap()));
        args.extend(["--out", merged.to_str().unwrap(), "--force"]);
        toolgauge(&args)
    };
    let twice = merge(&[&shards[0], &shards[0], &shards[1], &shards[2]]);
    assert_eq!(twice.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&twice.stderr);
    assert!(stderr.contains("shard1 is given twice"), "{stderr}");
    // So is a copy of a shard: the same shard twice.
    let copy = dir.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for file in ["run.json", "trials.csv"] {
        std::fs::copy(shards[1].join(file), copy.join(file)).unwrap();
    }
    let same = merge(&[&shards[0], &shards[1], &copy]);
    let stderr = String::from_utf8_lossy(&same.stderr);
    assert!(stderr.contains("are both shard 2/3"), "{stderr}");
}

#[test]
fn thresholds_fail_the_run_with_exit_1_and_compare_flags_drops() {
    let dir = tempfile::tempdir().unwrap();
    let strict = dir.path().join("strict");
    let output = run_into(&strict, &["--min-success", "0.99", "--min-pass-k", "3:0.9"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("below threshold"), "{stderr}");
    assert!(
        stderr.contains("scripted / scripted_never_fixed: success 0.000 < 0.99"),
        "{stderr}"
    );
    assert!(
        read(&strict, "junit.xml")
            .contains("<failure message=\"success 0.000 &lt; 0.99; pass^3 0.000 &lt; 0.9\">")
    );

    let good = dir.path().join("good");
    let attentive = [
        "--models",
        "scenarios/models/attentive.json",
        "--trials",
        "40",
    ];
    let output = toolgauge(
        &[
            &[
                "run",
                "scenarios/starter",
                "--quiet",
                "--out",
                good.to_str().unwrap(),
            ],
            &attentive[..],
        ]
        .concat(),
    );
    assert_eq!(output.status.code(), Some(0));
    let bad = dir.path().join("bad");
    let output = toolgauge(
        &[
            &[
                "run",
                "scenarios/starter",
                "--quiet",
                "--feedback",
                "bare",
                "--out",
                bad.to_str().unwrap(),
            ],
            &attentive[..],
        ]
        .concat(),
    );
    assert_eq!(output.status.code(), Some(0));
    let same = toolgauge(&[
        "report",
        "compare",
        good.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_eq!(same.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&same.stdout).contains("DROP"));
    let worse = toolgauge(&[
        "report",
        "compare",
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(
        worse.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&worse.stdout)
    );
    let stdout = String::from_utf8_lossy(&worse.stdout);
    assert!(stdout.contains("| DROP |"), "{stdout}");
}

#[test]
fn a_model_files_own_feedback_style_makes_it_an_arm_paired_with_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let attentive: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("scenarios/models/attentive.json").unwrap())
            .unwrap();
    std::fs::write(models.join("attentive.json"), attentive.to_string()).unwrap();
    let mut bare = attentive.clone();
    bare["name"] = "attentive-bare".into();
    bare["feedback"] = "bare".into();
    std::fs::write(models.join("attentive-bare.json"), bare.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        "scenarios/starter",
        "--models",
        models.to_str().unwrap(),
        "--trials",
        "40",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_success(&output);

    // The same mock, its errors worded two ways: only the arm shown what
    // was wrong fixes anything, and the pair says so.
    let mut fixed = std::collections::BTreeMap::new();
    let mut reader = csv::Reader::from_path(out.join("self_correction.csv")).unwrap();
    for row in reader.deserialize::<std::collections::HashMap<String, String>>() {
        let row = row.unwrap();
        *fixed.entry(row["model"].clone()).or_insert(0) += row["fixed"].parse::<u32>().unwrap();
    }
    // (A fix that needs no clue happens under both.)
    assert!(
        fixed["attentive"] > 4 * fixed["attentive-bare"],
        "{fixed:?}"
    );
    let comparisons = read(&out, "comparisons.csv");
    let pair = comparisons
        .lines()
        .find(|l| l.contains("attentive-bare"))
        .unwrap_or_else(|| panic!("{comparisons}"));
    assert!(pair.ends_with(",true"), "{pair}");
    let summary = read(&out, "summary.md");
    assert!(
        summary.contains("feedback pointer-list (attentive-bare: bare)"),
        "{summary}"
    );
}

#[test]
fn a_malformed_scenario_stops_the_run_before_any_trial_with_a_located_message() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(suite.join("models")).unwrap();
    std::fs::copy(
        "scenarios/models/reference.json",
        suite.join("models/reference.json"),
    )
    .unwrap();
    std::fs::write(
        suite.join("good.json"),
        r#"{"name": "good", "tools": ["math"], "prompt": "p", "expect": {"no_call": true}}"#,
    )
    .unwrap();
    std::fs::write(
        suite.join("bad.json"),
        "{\"name\": \"bad\", \"tools\": [\"math\"], \"prompt\": \"p\",\n \"expect\": {\"calls\": [{\"name\": \"math\", \"arguments\": {\"a\": {\"$aprox\": 1}}}]}}",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: 1 bad scenario file(s); no trial was run:\n"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.json:2:59: /expect/calls/0/arguments/a: unknown matcher: use $any_of, $approx, $regex, $contains, $present, $absent, $gt, $gte, $lt, $lte or $result"), "{stderr}");
    assert!(!out.join("trials.csv").exists());
}

/// A killed run of `trials` trials of one scenario on every model: its
/// run.json and the first `keep` of every 10 rows' bytes of trials.csv.
fn killed_run(dir: &Path, trials: &str, seed: &str) -> (PathBuf, PathBuf) {
    let full = dir.join("full");
    run_ok(
        &[
            "scenarios/starter/math_add.json",
            "--models",
            "scenarios/models",
            "--trials",
            trials,
            "--seed",
            seed,
        ],
        &full,
    );
    let killed = dir.join("killed");
    std::fs::create_dir(&killed).unwrap();
    let rows = read(&full, "trials.csv");
    std::fs::write(killed.join("trials.csv"), &rows[..rows.len() * 9 / 10]).unwrap();
    std::fs::copy(full.join("run.json"), killed.join("run.json")).unwrap();
    (full, killed)
}

/// `run ARGS --quiet --out OUT`, which must succeed.
fn run_ok(args: &[&str], out: &Path) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--quiet", "--out", out.to_str().unwrap()]);
    assert_success(&toolgauge(&all));
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn resume_without_trials_keeps_the_trials_beyond_the_default_count() {
    let dir = tempfile::tempdir().unwrap();
    // More trials than the default 20: the resume must not fall back to 20.
    let (full, killed) = killed_run(dir.path(), "30", "5");
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_same_files(&full, &killed);
}

#[test]
fn resume_refuses_flags_that_contradict_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (_, killed) = killed_run(dir.path(), "30", "5");
    let before = read(&killed, "trials.csv");
    for (flags, names) in [
        (&["--seed", "6"][..], ["--seed 6", "5"]),
        (&["--trials", "20"][..], ["--trials 20", "30"]),
        (
            &["--feedback", "json"][..],
            ["--feedback json", "pointer-list"],
        ),
        (&["--serial"][..], ["--serial true", "false"]),
        (&["--min-success", "0.5"][..], ["--min-success 0.5", "none"]),
        (
            &["scenarios/starter"][..],
            ["SUITE scenarios/starter", "math_add.json"],
        ),
    ] {
        let mut args = vec!["run", "--resume", killed.to_str().unwrap(), "--quiet"];
        args.extend_from_slice(flags);
        let output = toolgauge(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {message}");
        for name in names {
            assert!(
                message.contains(name),
                "{flags:?}: {name:?} not in {message}"
            );
        }
        assert_eq!(message.lines().count(), 1, "{message}");
        // Nothing was touched.
        assert_eq!(read(&killed, "trials.csv"), before);
    }
    // Settings that agree with the run, and the concurrency, are fine.
    let output = toolgauge(&[
        "run",
        "--resume",
        killed.to_str().unwrap(),
        "--quiet",
        "--seed",
        "5",
        "--trials",
        "30",
        "--concurrency",
        "3",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_resume_killed_before_it_replayed_everything_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (full, killed) = killed_run(dir.path(), "30", "5");
    // The first resume was killed early: its new trials.csv holds fewer
    // trials than the set-aside rows it was replaying.
    std::fs::rename(killed.join("trials.csv"), killed.join("trials.csv.resumed")).unwrap();
    let rows = read(&full, "trials.csv");
    std::fs::write(killed.join("trials.csv"), &rows[..rows.len() / 5]).unwrap();
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_same_files(&full, &killed);
    assert!(!killed.join("trials.csv.resumed").exists());
}

#[test]
fn out_refuses_a_folder_that_holds_a_run_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    assert_eq!(run_into(&out, &[]).status.code(), Some(0));
    let before = read(&out, "trials.csv");
    let again = run_into(&out, &["--seed", "12"]);
    assert_eq!(again.status.code(), Some(2));
    let message = stderr(&again);
    assert!(
        message.contains("already holds a run") && message.contains("--resume"),
        "{message}"
    );
    assert!(message.contains("--force"), "{message}");
    assert_eq!(read(&out, "trials.csv"), before);
    let forced = run_into(&out, &["--seed", "12", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_ne!(read(&out, "trials.csv"), before);
}

#[test]
fn summary_files_without_rows_still_have_their_header() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("one");
    // One model (no pair to compare) that follows its script: the
    // scenario's correct call, first time.
    run_ok(
        &[
            "scenarios/starter/math_add.json",
            "--models",
            "scenarios/models/scripted.json",
            "--trials",
            "3",
        ],
        &out,
    );
    assert_eq!(
        read(&out, "comparisons.csv"),
        "model_a,model_b,paired_trials,success_a,success_b,difference,only_a,only_b,p_value,significant\n"
    );
    assert_eq!(
        read(&out, "self_correction.csv"),
        "model,error_class,failure_kind,first_errors,with_next,fixed_next,fixed_next_rate,fixed_next_low,fixed_next_high,recovered_later,recovered_later_rate,recovered_later_low,recovered_later_high,same_call,same_call_rate,same_call_low,same_call_high,text_instead,text_instead_rate,text_instead_low,text_instead_high,other_error,no_next,first_attempt_failures,fixed,fix_rate\n"
    );
}

#[test]
fn compare_says_what_it_compared_and_exits_2_when_nothing_was() {
    let dir = tempfile::tempdir().unwrap();
    let one = |name: &str, scenario: &str| {
        let out = dir.path().join(name);
        let suite = format!("scenarios/starter/{scenario}.json");
        run_ok(&[&suite, "--trials", "3"], &out);
        out
    };
    let (math, echo) = (one("math", "math_add"), one("echo", "echo_simple"));
    let compare = |a: &Path, b: &Path| {
        toolgauge(&[
            "report",
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
    };

    let same = compare(&math, &math);
    assert_eq!(same.status.code(), Some(0));
    assert!(
        stderr(&same).contains(
            "compared 4 model x scenario cell(s); 0 only in the baseline, 0 only in the current run"
        ),
        "{}",
        stderr(&same)
    );

    let disjoint = compare(&math, &echo);
    assert_eq!(disjoint.status.code(), Some(2));
    assert!(
        stderr(&disjoint).contains("nothing to compare"),
        "{}",
        stderr(&disjoint)
    );

    let garbage = dir.path().join("garbage");
    std::fs::create_dir(&garbage).unwrap();
    std::fs::write(garbage.join("summary.csv"), "this is not a summary\n").unwrap();
    let output = compare(&garbage, &math);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no model x scenario rows"),
        "{}",
        stderr(&output)
    );
    std::fs::write(garbage.join("summary.csv"), "a,b\n1,2\n").unwrap();
    let output = compare(&garbage, &math);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a toolgauge summary"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn run_flags_out_of_range_are_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (flags, says) in [
        (&["--trials", "0"][..], "--trials must be at least 1"),
        (
            &["--concurrency", "0"][..],
            "--concurrency must be at least 1",
        ),
        // The default 20 trials cannot give pass^30.
        (
            &["--min-pass-k", "30:0.5"][..],
            "K = 30 is more than the 20 trial(s)",
        ),
        (&["--min-success", "1.5"][..], "must be between 0 and 1"),
    ] {
        let mut args = vec![
            "run",
            "scenarios/starter",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let output = toolgauge(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {message}");
        assert!(message.contains(says), "{flags:?}: {message}");
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(!out.join("trials.csv").exists(), "{flags:?} ran trials");
    }
}

#[test]
fn resume_refuses_a_suite_edited_since_the_run_started() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let scenario = suite.join("math_add.json");
    std::fs::copy("scenarios/starter/math_add.json", &scenario).unwrap();
    let out = dir.path().join("run");
    let suite_arg = suite.to_str().unwrap();
    run_ok(
        &[suite_arg, "--models", "scenarios/models", "--trials", "5"],
        &out,
    );
    let rows = read(&out, "trials.csv");
    std::fs::write(out.join("trials.csv"), &rows[..rows.len() / 2]).unwrap();
    // Same names, other content: the run would mix two suites.
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        &scenario,
        text.replacen("\"prompt\": \"", "\"prompt\": \"Please: ", 1),
    )
    .unwrap();
    let output = toolgauge(&["run", "--resume", out.to_str().unwrap(), "--quiet"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("have been edited since the run started"),
        "{}",
        stderr(&output)
    );
    // Put back, the run resumes.
    std::fs::write(&scenario, text).unwrap();
    let output = toolgauge(&["run", "--resume", out.to_str().unwrap(), "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn every_call_of_every_trial_is_recorded_with_its_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let output = run_into(&out, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut calls_by_attempt = std::collections::HashMap::new();
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    for row in reader.deserialize::<toolgauge::report::TrialRow>() {
        let row = row.unwrap();
        let key = (
            row.model.into_owned(),
            row.scenario.into_owned(),
            row.trial,
            row.attempt,
        );
        calls_by_attempt.insert(key, u64::from(row.calls));
    }
    let mut logged = std::collections::HashMap::new();
    for line in read(&out, "session.jsonl").lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = (
            entry["model"].as_str().unwrap().to_owned(),
            entry["scenario"].as_str().unwrap().to_owned(),
            entry["trial"].as_u64().unwrap() as u32,
            entry["attempt"].as_u64().unwrap() as u32,
        );
        *logged.entry(key).or_insert(0u64) += 1;
    }
    // What the model said, then a tool_call and a tool_result entry per
    // call, for every attempt.
    let expected: std::collections::HashMap<_, _> = calls_by_attempt
        .into_iter()
        .map(|(key, calls)| (key, 1 + 2 * calls))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(logged, expected);

    let quiet = dir.path().join("no-session");
    let output = run_into(&quiet, &["--no-session"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!quiet.join("session.jsonl").exists());
    // Only run.json says the log was off.
    assert_same(&out, &quiet, &FILES[..FILES.len() - 1]);
    assert!(read(&quiet, "run.json").contains("\"no_session\": true"));
    assert!(!read(&out, "run.json").contains("no_session"));
}

#[test]
fn a_run_without_a_session_log_is_resumed_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    let output = run_into(&full, &["--no-session"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    let trials = read(&full, "trials.csv");
    std::fs::write(killed.join("trials.csv"), &trials[..trials.len() / 3]).unwrap();
    std::fs::copy(full.join("run.json"), killed.join("run.json")).unwrap();
    assert!(read(&killed, "run.json").contains("\"no_session\": true"));
    let resumed = toolgauge(&["run", "--resume", killed.to_str().unwrap(), "--quiet"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert!(!killed.join("session.jsonl").exists());
    assert_same_files(&full, &killed);
}

#[test]
fn the_terminal_gives_the_verdict_first_and_the_table_when_short_or_asked() {
    let dir = tempfile::tempdir().unwrap();
    // 4 models x 35 scenarios: too many rows to print unasked.
    let long = run_into(&dir.path().join("long"), &[]);
    let text = String::from_utf8_lossy(&long.stdout);
    assert!(text.starts_with("Verdict (final success"), "{text}");
    for model in ["reference", "careless", "attentive", "scripted"] {
        assert!(
            text.lines()
                .skip(1)
                .take(4)
                .any(|l| l.trim_start().starts_with(model)),
            "{model}: {text}"
        );
    }
    assert!(
        text.contains("Worst cells: ") && text.contains("report.html"),
        "{text}"
    );
    assert!(!text.contains("| model | scenario |"), "{text}");
    assert!(text.contains("--table prints them"), "{text}");
    let asked = run_into(&dir.path().join("asked"), &["--table"]);
    let text = String::from_utf8_lossy(&asked.stdout);
    assert_eq!(text.matches("| model | scenario |").count(), 1, "{text}");
    // The header and a row per model x scenario.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| ")).count(),
        1 + 4 * 35
    );
}

#[test]
fn resume_works_from_any_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let first = crate::toolgauge(&[
        "run",
        "scenarios/starter/math_add.json",
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // The suite was named relative to the repository; resume from elsewhere.
    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(["run", "--resume", out.to_str().unwrap(), "--quiet"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
}

/// The always-right model is right on every shipped scenario (bar those
/// whose own script says otherwise): a scenario it fails is a broken
/// scenario, or a broken judge. MCP scenarios run in their own CI smoke.
#[test]
fn the_scripted_model_passes_every_shipped_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut args = vec!["run"];
    let suites: Vec<String> = std::fs::read_dir("scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !["models", "examples", "mcp"].iter().any(|s| p.ends_with(s)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(suites.len() >= 4, "{suites:?}");
    args.extend(suites.iter().map(String::as_str));
    let out_text = out.display().to_string();
    args.extend([
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "1",
        "--quiet",
        "--no-session",
        "--out",
        &out_text,
    ]);
    let output = crate::toolgauge(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let failed: Vec<String> = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| &r[at("final_success")] != "1.0")
        .map(|r| r[at("scenario")].to_owned())
        .filter(|s| !s.ends_with("scripted_never_fixed"))
        .collect();
    assert!(failed.is_empty(), "the scripted model fails: {failed:?}");
}
