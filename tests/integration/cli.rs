//! The `toolgauge` binary: exit codes, output formats, messages.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::toolgauge;

use serde_json::Value;

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn write_temp(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn check_tools_exits_0_on_clean_definitions() {
    let output = toolgauge(&["check-tools", "scenarios/examples/tools.json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn check_tools_prints_every_problem_and_exits_1() {
    let output = toolgauge(&["check-tools", "scenarios/examples/bad-tools.json"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.contains(&"get_weather: /efect: unknown field `efect`, expected one of `name`, `description`, `parameters`, `effect`, `timeout_ms`, `metadata`, `simulate`, `http`, `command`"), "{text}");
    assert!(lines.contains(&"search.web: /parameters/required/1: \"page\" is required but not defined in properties"), "{text}");
    assert!(lines.contains(&"search.web: /parameters/properties/limit/minimum: invalid JSON Schema: \"1\" is not of type \"number\""), "{text}");
    assert_eq!(lines.len(), 6, "{text}");
}

#[test]
fn check_tools_exits_2_with_file_line_and_column_on_broken_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_temp(
        dir.path(),
        "tools.json",
        "[\n  {\"name\": \"a\",\n   \"description\" \"x\"}\n]",
    );
    let output = toolgauge(&["check-tools", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert_eq!(
        message,
        format!(
            "error: {}:3:18: not valid JSON: expected `:`\n",
            path.display()
        )
    );
    let missing = toolgauge(&["check-tools", "no/such/file.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).starts_with("error: no/such/file.json: cannot read:"));
    let not_array = write_temp(dir.path(), "obj.json", "{}");
    let output = toolgauge(&["check-tools", not_array.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("expected a JSON array of tool definitions"));
}

/// `exec` on the example Anthropic response, logging to `session`.
fn exec_example(session: &Path) -> Output {
    toolgauge(&[
        "exec",
        "--provider",
        "anthropic",
        "--builtin",
        "echo,math",
        "--tools",
        "scenarios/examples/tools.json",
        "--session",
        session.to_str().unwrap(),
        "scenarios/examples/anthropic.json",
    ])
}

#[test]
fn exec_prints_provider_messages_and_writes_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.jsonl");
    let output = exec_example(&session);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let messages: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let blocks = messages[0]["content"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    let errors: Vec<bool> = blocks
        .iter()
        .map(|b| b["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(errors, [false, false, true, false]);
    assert_eq!(blocks[1]["content"], "50");
    assert!(stderr(&output).starts_with("4 call(s): 3 ok, 1 failed (validation: 1)"));

    let log = std::fs::read_to_string(&session).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // What the model said, then a call and its result per call.
    assert_eq!(entries.len(), 9);
    assert_eq!(entries[0]["type"], "model_reply");
    assert_eq!(entries[0]["calls"], 4);
    assert_eq!(entries[6]["errorKind"], "validation");
}

#[test]
fn exec_session_appends_to_an_existing_log_with_ids_that_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.jsonl");
    let exec = || exec_example(&session);
    assert_eq!(exec().status.code(), Some(0));
    let first = std::fs::read_to_string(&session).unwrap();
    assert_eq!(exec().status.code(), Some(0));
    let log = std::fs::read_to_string(&session).unwrap();
    assert!(log.starts_with(&first), "the first run's entries were lost");
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 18);
    let ids: std::collections::BTreeSet<&str> =
        entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 18, "ids repeat: {log}");
    // The second run's reply follows the first run's last result.
    assert_eq!(entries[9]["type"], "model_reply");
    assert_eq!(entries[9]["parentId"], entries[8]["id"]);
}

#[test]
fn exec_formats_results_for_each_provider() {
    let openai = toolgauge(&[
        "exec",
        "--provider",
        "openai",
        "--builtin",
        "echo,math",
        "--tools",
        "scenarios/examples/tools.json",
        "scenarios/examples/openai.json",
    ]);
    assert_eq!(openai.status.code(), Some(0), "{}", stderr(&openai));
    let messages: Value = serde_json::from_str(&stdout(&openai)).unwrap();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["tool", "tool", "tool"]);
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool \"get_wether\"")
    );

    let gemini = toolgauge(&[
        "exec",
        "--provider",
        "gemini",
        "--builtin",
        "echo,math",
        "--tools",
        "scenarios/examples/tools.json",
        "scenarios/examples/gemini.json",
    ]);
    assert_eq!(gemini.status.code(), Some(0), "{}", stderr(&gemini));
    let messages: Value = serde_json::from_str(&stdout(&gemini)).unwrap();
    let parts = messages[0]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["functionResponse"]["name"], "get_weather");
    assert!(
        parts[1]["functionResponse"]["response"]["error"]
            .as_str()
            .unwrap()
            .contains("division by zero")
    );
}

#[test]
fn exec_bad_input_exits_2_with_one_message() {
    let bad_provider = toolgauge(&[
        "exec",
        "--provider",
        "cohere",
        "scenarios/examples/openai.json",
    ]);
    assert_eq!(bad_provider.status.code(), Some(2));
    assert!(stderr(&bad_provider).contains("unknown provider \"cohere\""));

    let wrong_format = toolgauge(&[
        "exec",
        "--provider",
        "anthropic",
        "scenarios/examples/openai.json",
    ]);
    assert_eq!(wrong_format.status.code(), Some(2));
    assert_eq!(
        stderr(&wrong_format),
        "error: scenarios/examples/openai.json: not a response of the Anthropic Messages API: it has no `content` array\n"
    );

    let bad_tools = toolgauge(&[
        "exec",
        "--provider",
        "openai",
        "--tools",
        "scenarios/examples/bad-tools.json",
        "scenarios/examples/openai.json",
    ]);
    assert_eq!(bad_tools.status.code(), Some(2));
    assert!(stderr(&bad_tools).contains("6 problem(s) in the tool definitions"));

    let no_sandbox = toolgauge(&[
        "exec",
        "--provider",
        "openai",
        "--builtin",
        "read_file",
        "scenarios/examples/openai.json",
    ]);
    assert_eq!(no_sandbox.status.code(), Some(2));
    assert!(stderr(&no_sandbox).contains("needs a sandbox directory (--sandbox DIR)"));
}

#[test]
fn exec_keeps_file_tools_in_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("box");
    std::fs::create_dir(&inside).unwrap();
    let response = write_temp(
        dir.path(),
        "response.json",
        &serde_json::json!({"content": [
            {"type": "tool_use", "id": "t1", "name": "write_file", "input": {"path": "../escaped.txt", "content": "x"}},
            {"type": "tool_use", "id": "t2", "name": "write_file", "input": {"path": "kept.txt", "content": "x"}}
        ]})
        .to_string(),
    );
    let output = toolgauge(&[
        "exec",
        "--provider",
        "anthropic",
        "--sandbox",
        inside.to_str().unwrap(),
        response.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let messages: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(messages[0]["content"][0]["is_error"], true);
    assert_eq!(messages[0]["content"][1]["is_error"], false);
    assert!(!dir.path().join("escaped.txt").exists());
    assert!(inside.join("kept.txt").exists());
}

#[test]
fn fuzz_passes_the_builtin_validator_and_finds_the_holes_of_a_weak_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let builtin = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--cases",
        "60",
        "--out",
        out,
    ]);
    assert_eq!(builtin.status.code(), Some(0), "{}", stderr(&builtin));
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    assert!(csv.starts_with("tool,operator,generated,killed,survived,false_rejects,kill_rate,path,validator\nget_weather,valid,60,0,0,0,,,builtin\n"), "{csv}");

    let weak = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--cases",
        "60",
        "--out",
        out,
        "--validator",
        "cmd:sh tests/fixtures/weak_validator.sh",
    ]);
    assert_eq!(weak.status.code(), Some(1), "{}", stderr(&weak));
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    let survived = |operator: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("get_weather,{operator},")))
            .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
    };
    assert_eq!(survived("not_an_object"), Some(0));
    assert!(survived("enum").unwrap() > 0, "{csv}");
    assert!(survived("type").unwrap() > 0, "{csv}");
    assert!(
        stderr(&weak).contains("get_weather: a enum mutant at /units survived"),
        "{}",
        stderr(&weak)
    );
    // Each survivor says how to make it again, and --replay does.
    let line = stderr(&weak)
        .lines()
        .find(|l| l.contains("a enum mutant at /units survived"))
        .unwrap()
        .to_owned();
    let (survivor, replay) = line
        .split_once("survived: ")
        .unwrap()
        .1
        .rsplit_once(" (--replay ")
        .unwrap();
    let replayed = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--cases",
        "60",
        "--replay",
        replay.trim_end_matches(')'),
    ]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let printed: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(printed["tool"], "get_weather");
    assert_eq!(
        printed["instance"],
        serde_json::from_str::<Value>(survivor).unwrap()
    );

    let bad = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--validator",
        "ftp://example.com",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("use builtin, lines:PROGRAM, cmd:PROGRAM or an http:// URL"));
}

/// Like tests/fixtures/weak_validator.sh, over HTTP: accepts any object
/// with a "city" key.
struct WeakHttpValidator;

impl wiremock::Respond for WeakHttpValidator {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let ok = body.as_object().is_some_and(|o| o.contains_key("city"));
        wiremock::ResponseTemplate::new(if ok { 204 } else { 422 })
    }
}

async fn toolgauge_async(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        toolgauge(&args)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn fuzz_posts_each_instance_to_an_http_validator_and_finds_its_holes() {
    use wiremock::matchers::{header, method, path};
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/validate"))
        .and(header("x-toolgauge-tool", "get_weather"))
        .and(header("content-type", "application/json"))
        .respond_with(WeakHttpValidator)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let args = |validator: String| {
        [
            "fuzz",
            "--tools",
            "scenarios/examples/tools.json",
            "--cases",
            "20",
        ]
        .map(str::to_owned)
        .into_iter()
        .chain(["--out".to_owned(), dir.path().display().to_string()])
        .chain(["--validator".to_owned(), validator])
        .collect::<Vec<String>>()
    };
    let weak = toolgauge_async(args(format!("{}/validate", server.uri()))).await;
    assert_eq!(weak.status.code(), Some(1), "{}", stderr(&weak));
    assert!(stderr(&weak).contains("get_weather: a enum mutant at /units survived"));
    // Every case arrived as its own POST with the instance as the body.
    let requests = server.received_requests().await.unwrap();
    assert!(requests.len() >= 40, "{} requests", requests.len());
    assert!(
        requests
            .iter()
            .any(|r| serde_json::from_slice::<Value>(&r.body).unwrap().is_array())
    );
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    assert!(csv.contains("get_weather,valid,20,0,0,0,"), "{csv}");

    // A validator that does not answer in time is an error, named.
    let hung = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .respond_with(
            wiremock::ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(30)),
        )
        .mount(&hung)
        .await;
    let mut hung_args = args(hung.uri());
    hung_args.extend(["--case-timeout-ms".to_owned(), "100".to_owned()]);
    let output = toolgauge_async(hung_args).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("did not answer within 100 ms"),
        "{}",
        stderr(&output)
    );

    // Nothing listening: a clear error, not a verdict.
    let refused = toolgauge_async(args("http://127.0.0.1:9/validate".to_owned())).await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("127.0.0.1:9"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn fuzz_with_a_missing_or_non_executable_validator_program_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let not_executable = write_temp(dir.path(), "validate.sh", "exit 0\n");
    let missing = dir.path().join("no-such-validator");
    for program in [missing.to_str().unwrap(), not_executable.to_str().unwrap()] {
        let output = toolgauge(&[
            "fuzz",
            "--tools",
            "scenarios/examples/tools.json",
            "--cases",
            "5",
            "--out",
            dir.path().to_str().unwrap(),
            "--validator",
            &format!("cmd:{program}"),
            // What the shell says of the program is under test, not how
            // fast a loaded machine starts it.
            "--case-timeout-ms",
            "600000",
        ]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{program}: {message}");
        assert!(
            message.contains(program) && message.contains("cannot run"),
            "{message}"
        );
        assert!(
            !dir.path().join("fuzz.csv").exists(),
            "a kill rate was written"
        );
    }
}

#[test]
fn fuzz_with_zero_cases_exits_2() {
    let output = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--cases",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--cases must be at least 1"));
}

/// `python`, if it runs `args` (else a test that needs it is skipped).
fn python_that_runs(python: String, args: &[&str]) -> Option<String> {
    let works = std::process::Command::new(&python)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    works.then_some(python)
}

/// `python3`, or why a test that needs it is skipped.
fn python() -> Option<String> {
    python_that_runs("python3".to_owned(), &["--version"])
}

#[test]
#[ignore = "needs python3 (.ci/run runs this with --ignored)"]
fn fuzz_over_json_lines_keeps_one_validator_process_and_finds_its_holes() {
    let Some(python) = python() else {
        panic!(
            "missing: fuzz_over_json_lines_keeps_one_validator_process_and_finds_its_holes: no python3"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let spec = format!("lines:{python} tests/fixtures/weak_validator_lines.py");
    let fuzz = |validator: &str| {
        toolgauge(&[
            "fuzz",
            "--tools",
            "scenarios/examples/tools.json",
            "--cases",
            "60",
            "--out",
            out,
            "--validator",
            validator,
        ])
    };
    let weak = fuzz(&spec);
    assert_eq!(weak.status.code(), Some(1), "{}", stderr(&weak));
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    let column = |operator: &str, i: usize| {
        csv.lines()
            .find(|l| l.starts_with(&format!("get_weather,{operator},")))
            .map(|l| l.split(',').nth(i).unwrap().parse::<u64>().unwrap())
    };
    assert_eq!(column("valid", 2), Some(60));
    assert_eq!(column("valid", 5), Some(0), "no valid instance rejected");
    assert_eq!(column("not_an_object", 4), Some(0));
    assert!(
        column("enum", 4).unwrap() > 0 && column("type", 4).unwrap() > 0,
        "{csv}"
    );
    assert!(stderr(&weak).contains("get_weather: a enum mutant at /units survived"));

    // A validator that dies mid-run: exit 2 naming it, and what it answered is kept.
    let died = fuzz(&format!("{spec} --die-after 25"));
    assert_eq!(died.status.code(), Some(2), "{}", stderr(&died));
    let message = stderr(&died);
    assert!(
        message.contains("exited after answering 25 instance(s)"),
        "{message}"
    );
    assert!(message.contains("weak_validator_lines.py"), "{message}");
    assert!(
        message.contains("fuzz.csv holds what was measured before"),
        "{message}"
    );
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    assert!(csv.contains("get_weather,valid,25,0,0,0,"), "{csv}");
}

#[test]
fn differential_fuzzing_reports_each_disagreement_minimised_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let fuzz = |validators: &[&str]| {
        let mut args = vec![
            "fuzz",
            "--tools",
            "scenarios/examples/tools.json",
            "--cases",
            "60",
            "--out",
            out,
        ];
        for v in validators {
            args.extend(["--validator", v]);
        }
        toolgauge(&args)
    };
    // The same validator twice agrees with itself.
    let same = fuzz(&["builtin", "builtin"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(stdout(&same).contains("0 site(s) where the 2 validators disagree"));
    let rows = std::fs::read_to_string(dir.path().join("disagreements.csv")).unwrap();
    assert_eq!(rows.lines().count(), 1, "{rows}");

    let weak = "cmd:sh tests/fixtures/weak_validator.sh";
    let output = fuzz(&["builtin", weak]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(dir.path().join("disagreements.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let headers = reader.headers().unwrap().clone();
    assert_eq!(
        headers.iter().collect::<Vec<_>>(),
        [
            "tool",
            "operator",
            "path",
            "cases",
            "verdicts",
            "instance",
            "minimised",
            "replay"
        ]
    );
    let enum_row = rows
        .iter()
        .find(|r| &r[1] == "enum")
        .expect("an enum disagreement");
    assert_eq!(&enum_row[2], "/units");
    assert_eq!(
        &enum_row[4],
        format!("builtin=invalid; {weak}=valid").as_str()
    );
    // Minimised: the weak validator needs only "city", "units" breaks the
    // enum, and nothing else is wrong (city keeps its one character).
    let minimised: Value = serde_json::from_str(&enum_row[6]).unwrap();
    assert_eq!(minimised["city"].as_str().unwrap().chars().count(), 1);
    assert_eq!(minimised.as_object().unwrap().len(), 2, "{minimised}");
    // The original case replays.
    let replayed = toolgauge(&[
        "fuzz",
        "--tools",
        "scenarios/examples/tools.json",
        "--cases",
        "60",
        "--replay",
        &enum_row[7],
    ]);
    let printed: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(
        printed["instance"],
        serde_json::from_str::<Value>(&enum_row[5]).unwrap()
    );
    // fuzz.csv holds a report per validator.
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    assert!(csv.lines().any(|l| l.ends_with(",builtin")));
    assert!(csv.lines().any(|l| l.ends_with(&format!(",{weak}"))));
}

/// A Python with jsonschema: $TOOLGAUGE_TEST_PYTHON (set by .ci/run) or
/// python3; `None` when neither imports it.
fn python_with_jsonschema() -> Option<String> {
    let python = std::env::var("TOOLGAUGE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    python_that_runs(python, &["-c", "import jsonschema"])
}

#[test]
#[ignore = "needs python3 with jsonschema: TOOLGAUGE_TEST_PYTHON (.ci/run installs tests/python-requirements.txt and runs this with --ignored)"]
fn differential_fuzzing_finds_where_python_jsonschema_departs_from_ecma_patterns() {
    let Some(python) = python_with_jsonschema() else {
        panic!(
            "missing: differential_fuzzing_finds_where_python_jsonschema_departs_from_ecma_patterns: no python3 with jsonschema (.ci/run installs tests/python-requirements.txt)"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = "tests/fixtures/order_tools.json";
    let python_validator = format!("lines:{python} tests/fixtures/jsonschema_lines.py {tools}");
    let output = toolgauge(&[
        "fuzz",
        "--tools",
        tools,
        "--cases",
        "200",
        "--out",
        dir.path().to_str().unwrap(),
        "--validator",
        "builtin",
        "--validator",
        &python_validator,
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(dir.path().join("disagreements.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    // Only the pattern differs: Unicode digits and a final newline.
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((&rows[0][1], &rows[0][2]), ("pattern", "/order"));
    assert!(rows[0][3].parse::<u64>().unwrap() >= 2, "{:?}", rows[0]);
    let minimised: Value = serde_json::from_str(&rows[0][6]).unwrap();
    let order = minimised["order"].as_str().unwrap();
    assert!(!order.is_ascii() || order.ends_with('\n'), "{minimised}");
    // Integers spelled 5.0 and 1e2 reach Python as floats, and it takes
    // them as integers, as JSON Schema says: no disagreement on valid cases.
    assert!(rows.iter().all(|r| &r[1] != "valid"));
}

#[test]
fn tools_list_takes_every_wire_format_by_its_provider_name() {
    use toolgauge::provider::Provider;
    let specs: Vec<_> = toolgauge::tool::BUILTIN_NAMES
        .iter()
        .map(|name| toolgauge::tool::builtin_definition(name).unwrap().spec())
        .collect();
    for provider in Provider::all() {
        let output = toolgauge(&["tools", "list", "builtin", "--format", provider.as_str()]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let printed: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(
            printed,
            provider.format_tools(&specs),
            "{}",
            provider.as_str()
        );
    }
    let help = stdout(&toolgauge(&["tools", "list", "--help"]));
    for provider in Provider::all() {
        assert!(help.contains(provider.api_name()), "{help}");
    }
}

#[test]
fn tools_list_builtin_prints_every_built_in_tool_with_its_schema() {
    let output = toolgauge(&["tools", "list", "builtin"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, toolgauge::tool::BUILTIN_NAMES);
    let put = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "store_put")
        .unwrap();
    assert_eq!(put["parameters"]["type"], "object");
    assert!(
        put["parameters"]["properties"]["collection"].is_object(),
        "{put}"
    );
}
