//! Hostile suites and broken servers (issue 43): each test is named after
//! the fault it guards, and each runs the binary as a user would, so that
//! what a signal, a link or a stray key does to a real run is seen.

use std::path::Path;
use std::process::Command;

use serde_json::json;

/// Run the binary with `args` in `dir`.
fn toolgauge_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `toolgauge run suite` in `dir`, one trial of `model`, reports in
/// `out/`: the run most of these tests make; each adds what it watches.
fn run_suite_once(dir: &Path, model: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgauge"));
    command
        .args(["run", "suite", "--models", model.to_str().unwrap()])
        .args(["--trials", "1", "--quiet", "--out", "out"])
        .current_dir(dir);
    command
}

fn write_scenario(suite: &Path, scenario: &serde_json::Value) {
    std::fs::create_dir_all(suite).unwrap();
    let name = scenario["name"].as_str().unwrap();
    std::fs::write(
        suite.join(format!("{name}.json")),
        serde_json::to_string_pretty(scenario).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_command_tool_that_never_reads_its_input_does_not_kill_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // More than a pipe holds: the write meets a closed pipe (EPIPE), which
    // with SIGPIPE at its default killed the whole run with exit 141.
    let big = "x".repeat(256 * 1024);
    let scenario = json!({
        "name": "sink",
        "tools": [{
            "name": "sink",
            "description": "Takes a long text.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "command": ["true"]
        }],
        "prompt": "Send the text.",
        "expect": {"calls": [{"name": "sink", "arguments": {"text": big}}]}
    });
    write_scenario(&dir.path().join("suite"), &scenario);
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(
        models.join("scripted.json"),
        json!({"name": "scripted", "kind": "scripted"}).to_string(),
    )
    .unwrap();
    let out = toolgauge_in(
        dir.path(),
        &[
            "run", "suite", "--models", "models", "--trials", "2", "--quiet", "--out", "out",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run died (a signal has no code): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trials = std::fs::read_to_string(dir.path().join("out/trials.csv")).unwrap();
    assert_eq!(trials.lines().count(), 3, "{trials}");
}

#[test]
fn a_suites_servers_and_commands_inherit_no_key_of_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server.env");
    let command = dir.path().join("command.env");
    let mcp_server = crate::conversation::mcp_test_server();
    // Each writes the environment it was started with.
    let scenario = json!({
        "name": "env_reader",
        "tools": [
            {
                "name": "read_env",
                "description": "Reads its environment.",
                "parameters": {"type": "object", "properties": {}},
                "command": ["sh", "-c", format!("env > '{}'; echo done", command.display())]
            },
            {"mcp": {
                "command": ["sh", "-c", format!("env > '{}'; exec '{}'", server.display(), mcp_server.display())],
                "env": {"GIVEN_BY_THE_SUITE": "yes"}
            }, "only": ["add"]}
        ],
        "prompt": "Read the environment.",
        "expect": {"calls": [{"name": "read_env", "arguments": {}}]}
    });
    write_scenario(&dir.path().join("suite"), &scenario);
    let model = scripted_model(dir.path());
    let out = run_suite_once(dir.path(), &model)
        .env(SECRET_ENV, "sk-hostile-SECRET")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (what, file) in [("MCP server", &server), ("command tool", &command)] {
        let env = std::fs::read_to_string(file).unwrap();
        assert!(
            !env.contains("sk-hostile-SECRET"),
            "the {what} got the key:\n{env}"
        );
        assert!(env.lines().any(|l| l.starts_with("PATH=")), "{what}: {env}");
    }
    let env = std::fs::read_to_string(&server).unwrap();
    assert!(env.lines().any(|l| l == "GIVEN_BY_THE_SUITE=yes"), "{env}");
}

const SIMULATED: &str = "scenarios/agent/conversation_simulated_user.json";
const SECRET_ENV: &str = "TOOLGAUGE_TEST_HOSTILE_KEY";

/// The simulated-user scenario with its user played by `model`, written
/// into `suite`.
fn conversation_played_by(suite: &Path, model: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SIMULATED);
    let mut scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let user = &mut scenario["task"]["user"];
    user.as_object_mut().unwrap().remove("script");
    user["model"] = json!(model);
    write_scenario(suite, &scenario);
}

/// A mock model for the run itself, outside the suite.
fn scripted_model(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("scripted.json");
    std::fs::write(
        &path,
        json!({"name": "scripted", "kind": "scripted"}).to_string(),
    )
    .unwrap();
    path
}

#[test]
fn a_suite_cannot_send_a_key_of_the_environment_to_an_endpoint_it_chose() {
    // The suite's own "server": it must never be reached.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(suite.join("models")).unwrap();
    std::fs::write(
        suite.join("models/user.json"),
        json!({"name": "user", "kind": "openai", "api": {
            "model": "m",
            "base_url": format!("http://{}/v1", listener.local_addr().unwrap()),
            "api_key_env": SECRET_ENV
        }})
        .to_string(),
    )
    .unwrap();
    conversation_played_by(&suite, "models/user.json");
    let model = scripted_model(dir.path());
    let out = run_suite_once(dir.path(), &model)
        .env(SECRET_ENV, "sk-hostile-SECRET")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/task/user/model")
            && stderr.contains("api_key_env")
            && stderr.contains("--user-model"),
        "{stderr}"
    );
    assert!(
        listener.accept().is_err(),
        "the suite's endpoint was reached: the key may have gone with it"
    );
}

#[test]
fn a_user_model_path_never_leaves_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    // A model file beside the suite, keyless: still outside it.
    std::fs::write(
        dir.path().join("outside.json"),
        json!({"name": "outside", "kind": "openai", "api": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}).to_string(),
    )
    .unwrap();
    let model = scripted_model(dir.path());
    let run = || {
        let args = ["run", "suite", "--models", model.to_str().unwrap()];
        toolgauge_in(
            dir.path(),
            &[
                &args[..],
                &["--trials", "1", "--quiet", "--out", "out", "--force"],
            ]
            .concat(),
        )
    };
    for named in [
        "../outside.json",
        "/etc/passwd",
        "../../../../../../etc/passwd",
    ] {
        let suite = dir.path().join("suite");
        let _ = std::fs::remove_dir_all(&suite);
        conversation_played_by(&suite, named);
        let out = run();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{named}: {stderr}");
        assert!(stderr.contains("/task/user/model"), "{named}: {stderr}");
        assert!(
            !stderr.contains("root:"),
            "{named}: a host file was read: {stderr}"
        );
    }
    // Through a link inside the suite, too.
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(suite.join("models")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("outside.json"),
        suite.join("models/link.json"),
    )
    .unwrap();
    conversation_played_by(&suite, "models/link.json");
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("leads outside the suite"), "{stderr}");
}

/// Run the binary in `dir`, killed (and the test failed) past `limit`:
/// a hang is a failure here, not a stuck test run.
fn toolgauge_bounded(
    dir: &Path,
    args: &[&str],
    limit: std::time::Duration,
) -> std::process::Output {
    let child = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(limit).is_err() {
            // SAFETY: only sends a signal to our own child.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            return true;
        }
        false
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    assert!(
        !watchdog.join().unwrap(),
        "toolgauge {args:?} hung: killed after {limit:?}"
    );
    out
}

#[test]
fn a_fifo_or_a_device_given_as_an_input_file_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.json");
    let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only reads the path.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    let suite = dir.path().join("suite");
    write_scenario(
        &suite,
        &json!({"name": "s", "tools": [{"builtin": "echo"}], "prompt": "p", "expect": {"no_call": true}}),
    );
    let results_model = dir.path().join("results.json");
    std::fs::write(
        &results_model,
        json!({"name": "r", "kind": "bfcl-results", "results": fifo}).to_string(),
    )
    .unwrap();
    let fifo = fifo.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "suite", "--models", "/dev/zero", "--out", "o1"],
            "a device",
        ),
        (
            vec!["run", "suite", "--models", fifo, "--out", "o2"],
            "a FIFO",
        ),
        (
            vec!["run", "suite", "--models", "results.json", "--out", "o3"],
            "a FIFO",
        ),
        (
            vec!["exec", "--provider", "anthropic", "--builtin", "echo", fifo],
            "a FIFO",
        ),
        (
            vec![
                "exec",
                "--provider",
                "anthropic",
                "--builtin",
                "echo",
                "/dev/zero",
            ],
            "a device",
        ),
        (vec!["import", "bfcl", fifo, "--out", "imported"], "a FIFO"),
        (
            vec!["fuzz", "--tools", fifo, "--validator", "builtin"],
            "a FIFO",
        ),
    ];
    for (args, what) in cases {
        let out = toolgauge_bounded(dir.path(), &args, std::time::Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(what), "{args:?}: {stderr}");
    }
}

#[test]
fn report_merge_never_writes_into_one_of_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let repo = env!("CARGO_MANIFEST_DIR");
    let starter = format!("{repo}/scenarios/starter");
    let models = format!("{repo}/scenarios/models");
    let shards: Vec<String> = (1..=2).map(|k| format!("shard{k}")).collect();
    for (k, shard) in shards.iter().enumerate() {
        let spec = format!("{}/2", k + 1);
        let out = toolgauge_in(
            dir.path(),
            &[
                "run", &starter, "--models", &models, "--trials", "2", "--quiet", "--shard", &spec,
                "--out", shard,
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let before: Vec<(u64, u64)> = shards
        .iter()
        .map(|s| {
            let size = |f: &str| std::fs::metadata(dir.path().join(s).join(f)).unwrap().len();
            (size("trials.csv"), size("session.jsonl"))
        })
        .collect();
    for (out, how) in [
        ("shard2", "is"),
        ("shard2/merged", "lies inside"),
        (".", "holds"),
    ] {
        let merged = toolgauge_bounded(
            dir.path(),
            &[
                "report", "merge", "shard1", "shard2", "--out", out, "--force",
            ],
            std::time::Duration::from_secs(120),
        );
        let stderr = String::from_utf8_lossy(&merged.stderr);
        assert_eq!(merged.status.code(), Some(2), "--out {out}: {stderr}");
        assert!(
            stderr.contains(how) && stderr.contains("never writes into one of its inputs"),
            "{stderr}"
        );
    }
    let after: Vec<(u64, u64)> = shards
        .iter()
        .map(|s| {
            let size = |f: &str| std::fs::metadata(dir.path().join(s).join(f)).unwrap().len();
            (size("trials.csv"), size("session.jsonl"))
        })
        .collect();
    assert_eq!(before, after, "a shard's files changed");
}

#[test]
fn a_file_check_never_follows_a_link_the_model_made_out_of_its_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host.txt");
    std::fs::write(&host, "HOST-SECRET-42").unwrap();
    let scenario = json!({
        "name": "link_out",
        "tools": ["bash"],
        "files": {"notes.txt": "n"},
        "prompt": "Make report.txt.",
        "task": {
            "max_turns": 3,
            "milestones": [{"id": "link", "name": "bash", "arguments": {"command": {
                "$contains": "report.txt",
                "$example": format!("ln -s {} report.txt", host.display())
            }}}],
            "final_state": {"files": {"report.txt": "HOST-SECRET-42"}}
        }
    });
    write_scenario(&dir.path().join("suite"), &scenario);
    let model = scripted_model(dir.path());
    let out = run_suite_once(dir.path(), &model).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut reader = csv::Reader::from_path(dir.path().join("out/trials.csv")).unwrap();
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert!(!rows.is_empty(), "{stderr}");
    assert!(
        rows.iter().all(|r| !r.trial_success),
        "a link to a host file passed the check on that file: {rows:?}"
    );
}

/// A streamed server that always answers with `text` as its event stream.
async fn stream_server(text: String) -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(
            wiremock::ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(text),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_broken_stream_loses_the_trial_and_is_never_the_models_parse_failure() {
    // In each format: cut before its last event; an error event after the
    // first; a whole stream (the control: the trial is measured).
    let errors = [
        json!({"error": {"type": "server_error", "message": "overloaded"}}),
        json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "overloaded"}}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        json!({"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}),
    ];
    let kinds = ["openai", "openai-responses", "anthropic", "gemini"];
    let streams = crate::stream_timing::whole_streams();
    for ((kind, (_, begin, end)), error) in kinds.into_iter().zip(streams).zip(errors) {
        let cases = [
            (
                "cut",
                crate::streams::sse(&begin),
                Some("ended before its last event"),
            ),
            (
                "error event",
                crate::streams::sse(&[begin.clone(), vec![error]].concat()),
                Some("sent an error in the stream"),
            ),
            (
                "whole",
                crate::streams::sse(&[begin.clone(), vec![end]].concat()),
                None,
            ),
        ];
        for (case, text, said) in cases {
            let server = stream_server(text).await;
            let dir = tempfile::tempdir().unwrap();
            let base = crate::live::base_url(kind, &server);
            let (output, out) = crate::live::run_weather(
                dir.path(),
                kind,
                &base,
                json!({"stream": true, "max_attempts": 1}),
            )
            .await;
            let stderr = crate::live::stderr(&output);
            let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
            let rows: Vec<toolgauge::report::TrialRow> =
                reader.deserialize().map(Result::unwrap).collect();
            assert!(!rows.is_empty(), "{kind} {case}: {stderr}");
            match said {
                Some(said) => {
                    assert_eq!(
                        output.status.code(),
                        Some(1),
                        "{kind} {case}: a run that lost its trials passed: {stderr}"
                    );
                    assert!(stderr.contains(said), "{kind} {case}: {stderr}");
                    for row in &rows {
                        assert_eq!(row.failures, "transport_error", "{kind} {case}: {row:?}");
                    }
                }
                // A text answer where a call was expected: the model's
                // own failure, measured.
                None => assert!(
                    rows.iter()
                        .all(|r| r.failures != "transport_error" && r.failures != "parse"),
                    "{kind} {case}: {rows:?} {stderr}"
                ),
            }
        }
    }
}

#[test]
#[ignore = "needs python3 (.ci/run runs this with --ignored)"]
fn an_mcp_servers_malformed_or_oversized_result_is_the_servers_failure() {
    if Command::new("python3").arg("--version").output().is_err() {
        panic!("missing: no python3 to run tests/fixtures/mcp/fault_server.py")
    }
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fault_server.py");
    for (mode, said) in [
        (
            "malformed",
            "answered tools/call with what is not a tool result",
        ),
        ("huge", "sent a message of more than 16 MiB"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_scenario(
            &dir.path().join("suite"),
            &json!({"name": "s", "tools": [{"mcp": {"command": ["python3", server, mode]}, "timeout_ms": 60000}],
                    "prompt": "echo hi", "expect": {"calls": [{"name": "echo", "arguments": {"message": "hi"}}]}}),
        );
        let model = scripted_model(dir.path());
        let out = toolgauge_bounded(
            dir.path(),
            &[
                "run",
                "suite",
                "--models",
                model.to_str().unwrap(),
                "--trials",
                "1",
                "--out",
                "out",
            ],
            std::time::Duration::from_secs(50),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode}: {stderr}");
        assert!(
            stderr.contains("lost (tool_unavailable)") && stderr.contains(said),
            "{mode}: {stderr}"
        );
    }
}

#[test]
fn a_scenario_whose_mcp_program_is_not_installed_is_skipped_in_a_folder_and_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    write_scenario(
        &suite,
        &json!({"name": "fine", "tools": ["echo"], "prompt": "p", "expect": {"no_call": true}}),
    );
    write_scenario(
        &suite,
        &json!({"name": "needs_server", "tools": [{"mcp": {"command": ["mcp_test_server"]}}],
                "prompt": "p", "expect": {"no_call": true}}),
    );
    let model = scripted_model(dir.path());
    // The test server cargo test built must not be found: a bare PATH, and
    // the binary copied where no examples/ folder is beside it.
    let alone = dir.path().join("bin");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_toolgauge"), alone.join("toolgauge")).unwrap();
    let run = |target: &str| {
        Command::new(alone.join("toolgauge"))
            .args([
                "run",
                target,
                "--models",
                model.to_str().unwrap(),
                "--trials",
                "1",
                "--quiet",
                "--out",
                "out",
                "--force",
            ])
            .current_dir(dir.path())
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    let out = run("suite");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("needs_server.json: skipped")
            && stderr.contains("cargo build --release --example mcp_test_server"),
        "{stderr}"
    );
    let trials = std::fs::read_to_string(dir.path().join("out/trials.csv")).unwrap();
    assert!(
        trials.contains(",fine,") && !trials.contains("needs_server"),
        "{trials}"
    );
    let out = run("suite/needs_server.json");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/tools/0/mcp/command/0"), "{stderr}");
}

#[test]
fn doctor_against_a_dead_or_silent_endpoint_says_it_learnt_nothing_and_stops() {
    // Silent: accepts connections, never answers. Dead: refuses them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    for (case, address) in [
        ("silent", silent.local_addr().unwrap().to_string()),
        ("dead", format!("127.0.0.1:{dead_port}")),
    ] {
        let model = dir.path().join(format!("{case}.json"));
        std::fs::write(
            &model,
            json!({"name": case, "kind": "openai", "api": {
                "model": "m", "base_url": format!("http://{address}/v1"),
                "timeout_ms": 300, "retry_base_ms": 1
            }})
            .to_string(),
        )
        .unwrap();
        let out = toolgauge_bounded(
            dir.path(),
            &["doctor", model.to_str().unwrap()],
            std::time::Duration::from_secs(60),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{case}: {stdout}");
        assert!(
            stdout.contains("Nothing was learnt: the endpoint did not answer"),
            "{case}: {stdout}"
        );
        assert_eq!(
            stdout.matches("did not answer an earlier probe").count(),
            8,
            "{case}: every probe after the first is unknown: {stdout}"
        );
        assert!(
            !stdout.contains("can be trusted") && !stdout.contains("was refused"),
            "{case}: {stdout}"
        );
    }
}

#[test]
fn an_interrupted_fuzz_shows_progress_and_keeps_the_blocks_it_judged() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/examples/tools.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args([
            "fuzz",
            "--tools",
            tools.to_str().unwrap(),
            "--validator",
            "builtin",
        ])
        .args(["--cases", "1000000000", "--out", "fuzzed"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The first block judged says so at once.
    while !line.starts_with("progress: fuzz:") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no progress line");
    }
    // SAFETY: only signals our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{rest}");
    assert!(
        rest.contains("SIGTERM: stopped while fuzzing") && rest.contains("case(s) judged before"),
        "{rest}"
    );
    let csv = std::fs::read_to_string(dir.path().join("fuzzed/fuzz.csv")).unwrap();
    assert!(csv.lines().count() > 1, "no row kept: {csv}");
}

#[test]
fn a_signal_says_what_the_command_was_doing() {
    use std::io::BufRead as _;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("silent.json");
    std::fs::write(
        &model,
        json!({"name": "silent", "kind": "openai", "api": {"model": "m",
            "base_url": format!("http://{}/v1", silent.local_addr().unwrap()), "timeout_ms": 600000}})
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(["doctor", model.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The heading comes before the first probe is sent.
    let mut heading = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut heading)
        .unwrap();
    assert!(heading.starts_with("doctor: silent at"), "{heading}");
    // SAFETY: only signals our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(
        stderr.contains("SIGTERM: stopped while probing the endpoint"),
        "{stderr}"
    );
}

/// A bad input and what its one line must say: each was refused with an
/// OS error's words, an anyOf that named no field, or not at all.
#[test]
fn bad_inputs_are_refused_naming_the_field_and_what_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let base = |tools: serde_json::Value| json!({"name": "s", "tools": tools, "prompt": "p", "expect": {"no_call": true}});
    let tool = |extra: serde_json::Value| {
        let mut def = json!({"name": "x", "description": "d", "parameters": {"type": "object"}});
        def.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        def
    };
    let mut files_empty = base(json!(["read_file"]));
    files_empty["files"] = json!({"": "x"});
    let mut files_nested = base(json!(["read_file"]));
    files_nested["files"] = json!({"a": "x", "a/b": "y"});
    let empty_script = json!({"name": "s", "tools": ["echo"], "prompt": "p",
        "task": {"answer": "x", "user": {"instructions": "i", "script": []}}});
    let scenarios = [
        (
            "parameters",
            base(json!([
                "echo",
                tool(json!({"parameters": 5, "simulate": {"result": 1}}))
            ])),
            "/tools/1/parameters: 5 is not of type",
        ),
        (
            "two_ways",
            base(json!([tool(
                json!({"http": {"url": "http://127.0.0.1:9"}, "command": ["true"]})
            )])),
            "/tools/0/command: a tool runs one way",
        ),
        ("files_empty", files_empty, "names the sandbox itself"),
        ("files_nested", files_nested, "needs \"a\" to be a folder"),
        (
            "url_ref",
            base(json!([tool(
                json!({"parameters": {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}, "simulate": {"result": 1}})
            )])),
            "/tools/0/parameters/properties/a/$ref: \"https://example.com/s.json\" points outside the schema",
        ),
        ("empty_script", empty_script, "/task/user/script: is empty"),
    ];
    let scripted = scripted_model(dir.path());
    let scripted = scripted.to_str().unwrap();
    let mut cases: Vec<(Vec<String>, &str)> = Vec::new();
    for (name, scenario, said) in scenarios {
        write_scenario(&dir.path().join(name), &scenario);
        cases.push((
            [
                "run", name, "--models", scripted, "--trials", "1", "--quiet", "--out", "o",
                "--force",
            ]
            .map(str::to_owned)
            .to_vec(),
            said,
        ));
    }
    write_scenario(&dir.path().join("good"), &base(json!(["echo"])));
    std::fs::write(dir.path().join("a_file"), "").unwrap();
    let models = [
        (
            "empty_name",
            json!({"name": "", "kind": "scripted"}),
            "/name: \"\" is not a model name",
        ),
        (
            "climbing_name",
            json!({"name": "../../x", "kind": "scripted"}),
            "/name: \"../../x\" is not a model name",
        ),
        (
            "zero_timeout",
            json!({"name": "l", "kind": "openai", "api": {"model": "m", "timeout_ms": 0}}),
            "/api/timeout_ms: must be at least 1",
        ),
        (
            "negative_price",
            json!({"name": "l", "kind": "openai", "api": {"model": "m", "prices": {"input_per_mtok": -1.0, "output_per_mtok": 1.0}}}),
            "/api/prices/input_per_mtok: -1 is no price",
        ),
    ];
    for (name, model, said) in models {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, model.to_string()).unwrap();
        cases.push((
            [
                "run",
                "good",
                "--models",
                path.to_str().unwrap(),
                "--trials",
                "1",
                "--quiet",
                "--out",
                "o",
                "--force",
            ]
            .map(str::to_owned)
            .to_vec(),
            said,
        ));
    }
    let run = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "run", "good", "--models", scripted, "--trials", "1", "--quiet",
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    };
    cases.push((run(&["--out", "a_file"]), "it is a file, not a folder"));
    cases.push((
        run(&["--out", "a_file", "--force"]),
        "it is a file, not a folder",
    ));
    cases.push((
        run(&["--out", "o", "--force", "--doctor"]),
        "--doctor probes live models",
    ));
    cases.push((
        run(&["--out", "o", "--force", "--record", "rec"]),
        "--record keeps live models",
    ));
    cases.push((
        run(&["--out", "o", "--force", "--max-lost", "-0.1"]),
        "--max-lost: rate -0.1 must be between 0 and 1",
    ));
    cases.push((
        [
            "run", "good", "good", "--models", scripted, "--out", "o", "--force",
        ]
        .map(str::to_owned)
        .to_vec(),
        "is given twice",
    ));
    cases.push((
        [
            "run",
            "/dev/zero",
            "--models",
            scripted,
            "--out",
            "o",
            "--force",
        ]
        .map(str::to_owned)
        .to_vec(),
        "not a suite folder nor a scenario file",
    ));
    let chat_stream = crate::streams::sse(&[crate::streams::chunk(
        json!({"role": "assistant", "content": "hi"}),
    )]);
    std::fs::write(dir.path().join("chat.sse"), chat_stream).unwrap();
    cases.push((
        [
            "exec",
            "--provider",
            "gemini",
            "--stream",
            "--builtin",
            "echo",
            "chat.sse",
        ]
        .map(str::to_owned)
        .to_vec(),
        "is of the gemini format",
    ));
    for (args, said) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = toolgauge_in(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(said),
            "{args:?}: wanted {said:?} in: {stderr}"
        );
        assert!(
            stderr.trim().lines().count() <= 2,
            "{args:?}: more than one short line: {stderr}"
        );
    }
}

#[test]
fn an_interrupted_run_ends_a_long_bash_call_and_its_processes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "1000.321";
    let scenario = json!({
        "name": "long_bash",
        "tools": ["bash"],
        "files": {"notes.txt": "n"},
        "prompt": "Wait.",
        "task": {
            "max_turns": 2,
            "milestones": [{"id": "wait", "name": "bash", "arguments": {
                "command": {"$contains": "sleep", "$example": format!("sleep {marker} & echo started; wait")},
                "timeout_ms": 120000
            }}],
            "answer": "done"
        }
    });
    write_scenario(&dir.path().join("suite"), &scenario);
    let model = scripted_model(dir.path());
    let child = run_suite_once(dir.path(), &model)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The call runs: its sleep (and the shell that started it) are there.
    let mut child = child;
    while crate::processes::processes_with(marker).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended before its call ran: {status}");
        }
        std::thread::yield_now();
    }
    // SAFETY: only signals our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(stderr.contains("interrupted (SIGTERM)"), "{stderr}");
    // Waited for on the kernel's word (a pidfd), not on a clock.
    let gone = crate::processes::all_exit_within(marker, std::time::Duration::from_secs(5));
    assert!(gone, "the call's sleep outlived the interrupted run");
}

/// `import tau2` with a bridge that exported nothing wrote 0 scenarios and
/// exited 0: a false green. Now it is refused, naming the bridge.
#[test]
fn import_tau2_refuses_a_bridge_that_exports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported");
    let output = toolgauge_in(
        dir.path(),
        &[
            "import",
            "tau2",
            "--domain",
            "airline",
            "--bridge",
            "true",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("exported no task of airline"), "{said}");
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}

/// `import ... --out FILE` said only "File exists (os error 17)".
#[test]
fn import_into_a_file_names_what_out_takes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let questions = crate::corpora().join("bfcl/BFCL_v4_simple_python.json");
    let output = toolgauge_in(
        dir.path(),
        &[
            "import",
            "bfcl",
            questions.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
        ],
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("--out takes a folder"), "{said}");
    assert!(!said.contains("os error"), "{said}");
}

/// A remote `$ref` was named twice, the second time in the schema
/// crate's words ("`resolve-http` feature or a custom resolver").
#[test]
fn a_remote_ref_is_named_once_in_toolgauges_words() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    let remote = json!([{"name": "t", "description": "d", "parameters": {
        "type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}
    }}]);
    std::fs::write(&tools, remote.to_string()).unwrap();
    let output = toolgauge_in(dir.path(), &["check-tools", tools.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("toolgauge fetches no schema"), "{said}");
    assert!(!said.contains("resolve-http"), "{said}");
}

/// Two shards of the starter suite on the mocks, in `dir`/shard1 and 2.
fn two_shards(dir: &Path) {
    let repo = env!("CARGO_MANIFEST_DIR");
    for k in 1..=2 {
        let (spec, out) = (format!("{k}/2"), format!("shard{k}"));
        let output = toolgauge_in(
            dir,
            &[
                "run",
                &format!("{repo}/scenarios/starter"),
                "--models",
                &format!("{repo}/scenarios/models/scripted.json"),
                "--trials",
                "2",
                "--quiet",
                "--shard",
                &spec,
                "--out",
                &out,
            ],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn merge_shards(dir: &Path) -> std::process::Output {
    toolgauge_in(
        dir,
        &[
            "report", "merge", "shard1", "shard2", "--out", "merged", "--force",
        ],
    )
}

/// `report merge` dropped a shard's missing or torn session.jsonl without
/// a word (3,049 of 4,600 entries kept, exit 0). Now it refuses, naming
/// the file, and writes nothing; a FIFO in its place is refused, not
/// waited on.
#[test]
fn report_merge_refuses_a_shards_missing_torn_or_fifo_session_log() {
    let dir = tempfile::tempdir().unwrap();
    two_shards(dir.path());
    let log = dir.path().join("shard2/session.jsonl");
    let whole = std::fs::read(&log).unwrap();
    let output = merge_shards(dir.path());
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged = std::fs::read(dir.path().join("merged/session.jsonl")).unwrap();
    let shard1 = std::fs::read(dir.path().join("shard1/session.jsonl")).unwrap();
    assert_eq!(merged.len(), shard1.len() + whole.len());

    std::fs::remove_file(&log).unwrap();
    let mut torn = whole.clone();
    torn.truncate(whole.len() / 2);
    let fifo = || {
        let status = Command::new("mkfifo").arg(&log).status().unwrap();
        assert!(status.success());
    };
    type Make<'a> = Box<dyn Fn() + 'a>;
    let cases: [(&str, Make); 3] = [
        ("missing", Box::new(|| {})),
        (
            "is not a whole JSON entry",
            Box::new(|| std::fs::write(&log, &torn).unwrap()),
        ),
        ("FIFO", Box::new(fifo)),
    ];
    for (said, make) in cases {
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_dir_all(dir.path().join("merged"));
        make();
        let output = merge_shards(dir.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{said}: {stderr}");
        assert!(
            stderr.contains(said) && stderr.contains("shard2"),
            "{stderr}"
        );
        assert!(
            !dir.path().join("merged/trials.csv").exists(),
            "{said}: written anyway"
        );
    }
}

/// Every shard's batches.jsonl was dropped by the merge: now they are
/// merged, and a line a kill tore is named, not taken.
#[test]
fn report_merge_keeps_every_shards_batch_ledger() {
    let dir = tempfile::tempdir().unwrap();
    two_shards(dir.path());
    let line = |id: &str| {
        format!(
            r#"{{"event":"submitted","model":"m","id":"{id}","requests":[{{"custom_id":"t0-a1","digest":"d"}}]}}"#
        )
    };
    std::fs::write(
        dir.path().join("shard1/batches.jsonl"),
        line("batch_a") + "\n",
    )
    .unwrap();
    let torn = format!("{}\n{{\"event\":\"subm\n", line("batch_b"));
    std::fs::write(dir.path().join("shard2/batches.jsonl"), torn).unwrap();
    let output = merge_shards(dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let merged = std::fs::read_to_string(dir.path().join("merged/batches.jsonl")).unwrap();
    assert_eq!(
        merged,
        format!("{}\n{}\n", line("batch_a"), line("batch_b"))
    );
    assert!(stderr.contains("line 2: torn"), "{stderr}");
}

/// A FIFO at session.jsonl or trials.csv of a run folder hung `--resume`
/// for ever: the run folder's files are opened as inputs are now.
#[test]
fn resume_refuses_a_fifo_in_the_run_folder_instead_of_waiting_on_it() {
    for name in ["session.jsonl", "trials.csv"] {
        let dir = tempfile::tempdir().unwrap();
        two_shards(dir.path());
        let file = dir.path().join("shard1").join(name);
        std::fs::remove_file(&file).unwrap();
        assert!(
            Command::new("mkfifo")
                .arg(&file)
                .status()
                .unwrap()
                .success()
        );
        let output = toolgauge_bounded(
            dir.path(),
            &["run", "--resume", "shard1", "--quiet"],
            std::time::Duration::from_secs(60),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains("FIFO"), "{name}: {stderr}");
    }
}

/// An MCP server's stderr reached the terminal raw: its escape sequences
/// retitled the window and cleared the screen. They are shown now, not
/// obeyed.
#[test]
fn a_servers_escape_sequences_reach_the_terminal_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"printf '\033]0;pwned\007\033[2J\033[31mred' >&2; exit 3"#;
    let scenario = json!({
        "name": "hostile_stderr",
        "tools": [{"mcp": {"command": ["sh", "-c", script]}}],
        "prompt": "Say hi.",
        "expect": {"no_call": true}
    });
    write_scenario(&dir.path().join("suite"), &scenario);
    let scripted = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/models/scripted.json");
    let output = run_suite_once(dir.path(), &scripted).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = &output.stderr;
    assert!(
        !stderr.contains(&0x1b) && !stderr.contains(&0x07),
        "{stderr:?}"
    );
    let said = String::from_utf8_lossy(stderr);
    assert!(said.contains(r"\u{1b}]0;pwned"), "{said}");
}

/// `report merge --out` and `report compare`'s folders had no help text.
#[test]
fn every_report_folder_argument_says_what_it_is_in_help() {
    let dir = tempfile::tempdir().unwrap();
    for (command, said) in [
        ("merge", "The folder the merged run is written to"),
        ("compare", "The run folder to compare against"),
        ("compare", "The run folder under test"),
        ("html", "The run folder"),
    ] {
        let output = toolgauge_in(dir.path(), &["report", command, "--help"]);
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains(said), "report {command} --help: {help}");
    }
}
