//! `toolgauge import bfcl` and re-scoring a published BFCL run: a result
//! file built by hand (correct calls, and each kind of wrong call) gets one
//! attempt per entry, and trials.csv gives each verdict with BFCL's reason.

use std::path::Path;

use serde_json::{Value, json};

use crate::{corpora, toolgauge};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn import(category: &str, out: &Path) {
    let questions = corpora().join(format!("bfcl/BFCL_v4_{category}.json"));
    let output = toolgauge(&[
        "import",
        "bfcl",
        questions.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// Copy an imported scenario under another name (results are keyed by name).
fn copy_as(from: &Path, name: &str, suite: &Path) {
    let mut scenario: Value = serde_json::from_slice(&std::fs::read(from).unwrap()).unwrap();
    scenario["name"] = json!(name);
    std::fs::write(suite.join(format!("{name}.json")), scenario.to_string()).unwrap();
}

#[test]
fn a_published_run_is_rescored_with_bfcl_verdicts_and_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("imported");
    import("simple_python", &imported);
    import("irrelevance", &imported);
    assert_eq!(std::fs::read_dir(&imported).unwrap().count(), 640);

    // simple_python_0: calculate_triangle_area(base=10, height=5, unit="units" or omitted).
    let area = |args: Value| json!([{"calculate_triangle_area": args.to_string()}]);
    let cases: Vec<(&str, &str, Value, bool, &str, &str)> = vec![
        (
            "correct",
            "simple_python_0",
            area(json!({"base": 10, "height": 5})),
            true,
            "",
            "",
        ),
        (
            "lenient_string",
            "simple_python_0",
            area(json!({"base": 10, "height": 5, "unit": "Units"})),
            true,
            "",
            "",
        ),
        (
            "wrong_name",
            "simple_python_0",
            json!([{"calculate_circle_area": "{\"base\": 10, \"height\": 5}"}]),
            false,
            "unknown_tool",
            "wrong_func_name",
        ),
        (
            "missing",
            "simple_python_0",
            area(json!({"base": 10})),
            false,
            "validation",
            "missing_required",
        ),
        (
            "extra",
            "simple_python_0",
            area(json!({"base": 10, "height": 5, "color": "red"})),
            false,
            "wrong_call",
            "unexpected_param",
        ),
        (
            "type",
            "simple_python_0",
            area(json!({"base": "10", "height": 5})),
            false,
            "validation",
            "type_error",
        ),
        (
            "number",
            "simple_python_0",
            area(json!({"base": 12, "height": 5})),
            false,
            "wrong_call",
            "value_error:others",
        ),
        (
            "string",
            "simple_python_0",
            area(json!({"base": 10, "height": 5, "unit": "feet"})),
            false,
            "wrong_call",
            "value_error:string",
        ),
        (
            "count",
            "simple_python_0",
            json!([{"calculate_triangle_area": "{\"base\": 10, \"height\": 5}"}, {"calculate_triangle_area": "{\"base\": 10, \"height\": 5}"}]),
            false,
            "unexpected_call",
            "wrong_count",
        ),
        (
            "broken_json",
            "simple_python_0",
            json!([{"calculate_triangle_area": "{\"base\": 10"}]),
            false,
            "parse",
            "decoder_failed",
        ),
        (
            "prose",
            "simple_python_0",
            json!("The area is 25 square units."),
            false,
            "parse",
            "decoder_failed",
        ),
        ("irrelevant_ok", "irrelevance_0", json!([]), true, "", ""),
        (
            "irrelevant_call",
            "irrelevance_0",
            json!([{"determine_body_mass_index": "{\"weight\": 70, \"height\": 1.8}"}]),
            false,
            "unexpected_call",
            "",
        ),
    ];
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let mut results = String::new();
    for (name, source, result, ..) in &cases {
        copy_as(&imported.join(format!("{source}.json")), name, &suite);
        // Published runs record each entry's latency and tokens (here one
        // without them, as some do).
        let entry = if *name == "prose" {
            json!({"id": name, "result": result})
        } else {
            json!({"id": name, "result": result, "latency": 1.25,
                   "input_token_count": 300, "output_token_count": 20})
        };
        results.push_str(&entry.to_string());
        results.push('\n');
    }
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("results.jsonl"), results).unwrap();
    std::fs::write(
        models.join("published.json"),
        json!({"name": "published", "kind": "bfcl-results", "results": "results.jsonl"})
            .to_string(),
    )
    .unwrap();

    let out = dir.path().join("out");
    let run = |suite: &Path| {
        toolgauge(&[
            "run",
            suite.to_str().unwrap(),
            "--models",
            models.join("published.json").to_str().unwrap(),
            "--trials",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--force",
            "--quiet",
        ])
    };
    let output = run(&suite);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), cases.len(), "one attempt per entry");
    for (name, _, _, success, failures, reason) in &cases {
        let row = rows.iter().find(|r| r.scenario == *name).unwrap();
        assert_eq!(row.attempt, 1);
        // model_ms, input_tokens, output_tokens: replayed as recorded.
        let recorded = if *name == "prose" {
            ["0.0", "0", "0"]
        } else {
            ["1250.0", "300", "20"]
        };
        let replayed = [
            format!("{:?}", row.model_ms),
            row.input_tokens.to_string(),
            row.output_tokens.to_string(),
        ];
        assert_eq!(replayed, recorded, "{name}: {row:?}");
        // The log says the same tokens as trials.csv.
        let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
        let reply: serde_json::Value = log
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["scenario"] == *name && e["type"] == "model_reply")
            .unwrap();
        assert_eq!(reply["inputTokens"].to_string(), recorded[1], "{name}");
        assert_eq!(reply["outputTokens"].to_string(), recorded[2], "{name}");
        assert_eq!(row.attempt_success, *success, "{name}: {row:?}");
        assert_eq!(row.failures, *failures, "{name}: {row:?}");
        assert_eq!(row.reason, *reason, "{name}: {row:?}");
    }

    // A suite the result file does not cover is refused before any trial.
    copy_as(&imported.join("simple_python_1.json"), "unrecorded", &suite);
    let output = run(&suite);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no recorded result for 1 scenario(s), e.g. \"unrecorded\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn import_needs_answers_for_answered_categories_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("BFCL_v4_simple_python.json");
    std::fs::copy(
        corpora().join("bfcl/BFCL_v4_simple_python.json"),
        &questions,
    )
    .unwrap();
    let out = dir.path().join("out");
    let import_into_out = || {
        toolgauge(&[
            "import",
            "bfcl",
            questions.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let output = import_into_out();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output)
            .contains("simple_python_0: no possible answer for this entry (give --answers FILE)"),
        "{}",
        stderr(&output)
    );

    std::fs::write(&questions, "[{\"id\": \"x\"}]\n").unwrap();
    let output = import_into_out();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("BFCL_v4_simple_python.json:1:"),
        "{}",
        stderr(&output)
    );
}

/// The calls a scenario expects, with their example (first acceptable) values.
fn ground_truth_calls(
    scenario: &toolgauge::scenario::Scenario,
) -> Vec<toolgauge::call::ParsedCall> {
    use toolgauge::call::{ParsedCall, ToolCall};
    scenario
        .expectation
        .expected_calls()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            ParsedCall::Ok(ToolCall {
                id: format!("c{i}"),
                name: e.name.clone(),
                arguments: toolgauge::call::Arguments::from_map(e.arguments.example()),
            })
        })
        .collect()
}

const SHIPPED: [&str; 4] = ["simple_python", "multiple", "parallel", "parallel_multiple"];

#[test]
fn the_shipped_bfcl_suites_are_a_fresh_import() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bfcl");
    let dir = tempfile::tempdir().unwrap();
    for category in SHIPPED {
        let fresh = dir.path().join(category);
        import(category, &fresh);
        let mut names: Vec<_> = std::fs::read_dir(&fresh)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        let shipped = std::fs::read_dir(root.join(category)).unwrap().count();
        assert_eq!(shipped, names.len(), "{category}: files differ in number");
        for name in names {
            let a = std::fs::read(fresh.join(&name)).unwrap();
            let b = std::fs::read(root.join(category).join(&name)).unwrap();
            assert!(
                a == b,
                "scenarios/bfcl/{category}/{name:?} differs from a fresh import (see scenarios/bfcl/README.md)"
            );
        }
    }
}

#[test]
fn every_shipped_entry_loads_and_its_ground_truth_matches_and_validates() {
    use toolgauge::scenario::{Verdict, load_suite};

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bfcl");
    let sandbox = tempfile::tempdir().unwrap();
    let scenarios = load_suite(
        &root,
        sandbox.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap_or_else(|errors| {
        panic!(
            "{}",
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
    .scenarios;
    assert_eq!(scenarios.len(), 1000);
    // Known issues (`id#call`) of the shipped categories.
    let known: Vec<String> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bfcl-known-issues.txt"),
    )
    .unwrap()
    .lines()
    // The scripted example sends a required parameter even where BFCL's
    // answer lists "" (may be left out) first: those answers validate.
    .filter(|l| !l.contains("absent from the answer"))
    .filter_map(|l| l.split_once(" -- ").map(|(id, _)| id.to_owned()))
    .filter(|id| {
        let entry = id.split('#').next().unwrap();
        toolgauge::bfcl::category_of(entry).is_some_and(|c| SHIPPED.contains(&c))
    })
    .collect();
    assert!(!known.is_empty());
    let mut rejected = Vec::new();
    for scenario in &scenarios {
        let calls = ground_truth_calls(scenario);
        assert!(!calls.is_empty(), "{}", scenario.name);
        for (i, call) in calls.iter().enumerate() {
            if toolgauge::pipeline::validate(&scenario.registry, call).is_err() {
                rejected.push(format!("{}#{i}", scenario.name));
            }
        }
        // The ground truth matches by BFCL's rules, unless BFCL's own data
        // gives a value its schema's type does not allow.
        if !known
            .iter()
            .any(|k| k.starts_with(&format!("{}#", scenario.name)))
        {
            assert_eq!(
                scenario.expectation.verdict(&calls),
                Verdict::Match,
                "{}",
                scenario.name
            );
            assert_eq!(
                scenario.expectation.reason(&calls),
                None,
                "{}",
                scenario.name
            );
        }
    }
    rejected.sort();
    let mut known = known;
    known.sort();
    assert_eq!(
        rejected, known,
        "ground truth rejected by the validator vs the known issues"
    );
}

#[test]
fn java_and_javascript_values_are_source_text_strings_that_match_and_validate() {
    use toolgauge::scenario::{Verdict, load_suite};

    let dir = tempfile::tempdir().unwrap();
    import("simple_java", &dir.path().join("java"));
    import("simple_javascript", &dir.path().join("js"));
    let scenarios = load_suite(
        dir.path(),
        dir.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap()
    .scenarios;
    assert_eq!(scenarios.len(), 150);
    for scenario in &scenarios {
        for def in scenario.registry.definitions() {
            let bfcl = &def.metadata.as_ref().unwrap().other["bfcl"];
            for (name, property) in def.parameters["properties"].as_object().unwrap() {
                assert_eq!(property["type"], "string", "{}: {name}", scenario.name);
                assert!(
                    bfcl["declared_types"].get(name).is_some(),
                    "{}: {name}",
                    scenario.name
                );
            }
        }
        let calls = ground_truth_calls(scenario);
        // BFCL's checker reads an ArrayList of `any` as strings, so no
        // writing of these answers (with ints and booleans among strings)
        // passes it: BFCL's own verdict, checked with its checker.
        const UNPASSABLE: [&str; 2] = ["simple_java_36", "simple_java_65"];
        assert_eq!(
            scenario.expectation.verdict(&calls) == Verdict::Match,
            !UNPASSABLE.contains(&scenario.name.as_str()),
            "{}",
            scenario.name
        );
        for call in &calls {
            assert!(
                toolgauge::pipeline::validate(&scenario.registry, call).is_ok(),
                "{}",
                scenario.name
            );
        }
    }
}

#[test]
fn mock_models_fail_and_correct_themselves_on_imported_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let output = toolgauge(&[
        "run",
        "scenarios/bfcl/parallel",
        "--models",
        "scenarios/models/reference.json",
        "--trials",
        "5",
        "--out",
        dir.path().to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut models = csv::Reader::from_path(dir.path().join("models.csv")).unwrap();
    let headers = models.headers().unwrap().clone();
    let row = models.records().next().unwrap().unwrap();
    let get = |name: &str| -> f64 {
        row[headers.iter().position(|h| h == name).unwrap()]
            .parse()
            .unwrap()
    };
    assert!((0.45..0.75).contains(&get("success_at_1")), "{row:?}");
    assert!(get("final_success") > 0.85, "{row:?}");
    assert!(
        get("mean_speedup") > 1.5,
        "parallel entries run their calls at once: {row:?}"
    );
}

#[test]
fn every_entry_of_every_single_turn_category_imports_and_loads() {
    use toolgauge::bfcl::SINGLE_TURN_CATEGORIES;
    use toolgauge::bfcl::import::{default_answers, import};

    let dir = tempfile::tempdir().unwrap();
    let mut total = 0;
    for category in SINGLE_TURN_CATEGORIES {
        let questions = corpora().join(format!("bfcl/BFCL_v4_{category}.json"));
        let answers = default_answers(&questions);
        let answers = answers.exists().then_some(answers);
        let imported = import(
            &questions,
            answers.as_deref(),
            &dir.path().join(category),
            None,
        )
        .unwrap_or_else(|e| panic!("{category}: {e}"));
        total += imported.written;
    }
    // FORMAT.md's entry counts for the 13 categories.
    assert_eq!(
        total,
        400 + 100 + 50 + 200 + 200 + 200 + 240 + 258 + 1053 + 16 + 24 + 884 + 16
    );
    let scenarios = toolgauge::scenario::load_suite(
        dir.path(),
        dir.path(),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap_or_else(|errors| {
        panic!(
            "{}",
            errors
                .iter()
                .take(20)
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
    .scenarios;
    assert_eq!(scenarios.len(), total);
}

#[test]
fn import_of_a_category_it_does_not_take_says_so_by_name() {
    let dir = tempfile::tempdir().unwrap();
    // BFCL v3's executable category, which v4 dropped.
    for category in ["exec_simple"] {
        let questions = dir.path().join(format!("BFCL_v4_{category}.json"));
        let entry = json!({"id": format!("{category}_0"), "question": [[{"role": "user", "content": "q"}]], "function": []});
        std::fs::write(&questions, format!("{entry}\n")).unwrap();
        // Renamed, the entries' ids still tell.
        let renamed = dir.path().join(format!("{category}-questions.json"));
        std::fs::copy(&questions, &renamed).unwrap();
        for file in [questions, renamed] {
            let message = refused_import(&file, &dir.path().join("out"));
            assert!(
                message.contains(&format!("BFCL category {category:?} is not supported")),
                "{}: {message}",
                file.display()
            );
        }
    }
}

/// `import bfcl QUESTIONS --out OUT`, which must be refused (exit 2)
/// writing nothing: what it said.
fn refused_import(questions: &Path, out: &Path) -> String {
    let output = toolgauge(&[
        "import",
        "bfcl",
        questions.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!out.exists());
    stderr(&output)
}

#[test]
fn format_sensitivity_is_refused_as_prompt_mode_only() {
    let dir = tempfile::tempdir().unwrap();
    let questions = corpora().join("bfcl/BFCL_v4_format_sensitivity.json");
    let message = refused_import(&questions, &dir.path().join("out"));
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains("format_sensitivity on prompting (non-FC) models only"),
        "{message}"
    );
}

#[test]
fn import_of_multi_turn_entries_asks_for_the_bridge_that_runs_bfcls_classes() {
    let dir = tempfile::tempdir().unwrap();
    let questions = corpora().join("bfcl/BFCL_v4_multi_turn_base.json");
    let out = dir.path().join("out");
    let message = refused_import(&questions, &out);
    assert!(
        message.contains("BFCL_v4_multi_turn_base.json: multi-turn, web search and memory entries run on BFCL's own classes: give --bridge"),
        "{message}"
    );
    // Memory too, by name or, renamed, by its entries' ids.
    let memory = corpora().join("bfcl/BFCL_v4_memory.json");
    let renamed = dir.path().join("memory-questions.json");
    std::fs::copy(&memory, &renamed).unwrap();
    for file in [memory, renamed] {
        let message = refused_import(&file, &out);
        assert!(
            message.contains("give --bridge"),
            "{}: {message}",
            file.display()
        );
    }
    let web = corpora().join("bfcl/BFCL_v4_web_search.json");
    let message = refused_import(&web, &dir.path().join("web"));
    assert!(message.contains("give --bridge"), "{message}");
    // With one, every entry is a conversation task on its classes (no
    // Python is needed to import them, only to run them).
    let output = toolgauge(&[
        "import",
        "bfcl",
        questions.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--bridge",
        "python3 scripts/bfcl_bridge/bridge.py",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 200);
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("multi_turn_base_0.json")).unwrap())
            .unwrap();
    let bridge = &scenario["tools"][0]["mcp"]["command"];
    assert_eq!(bridge[0], "python3");
    // The script's path is written absolute: the scenario starts it from
    // its own folder.
    assert!(
        bridge[1]
            .as_str()
            .unwrap()
            .ends_with("/scripts/bfcl_bridge/bridge.py")
            && bridge[1].as_str().unwrap().starts_with('/'),
        "{bridge}"
    );
    assert_eq!(scenario["task"]["turns"].as_array().unwrap().len(), 3);
}
