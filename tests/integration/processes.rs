//! No hang, no orphan: every process toolgauge starts ends with it, an MCP
//! server that never answers stops the run within its start-up deadline,
//! and SIGINT and SIGTERM stop a run the same way at any moment. After
//! each case, no process toolgauge started is left, by PID and by a
//! marker in its command line.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::json;

/// Processes whose command line holds `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // toolgauge itself names the marker in its arguments.
            let program = text.split(' ').next().unwrap_or("");
            if text.contains(marker) && !program.ends_with("toolgauge") {
                found.push(pid);
            }
        }
    }
    found
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The child of `parent` whose command line holds `marker`. It may be
/// between `sh` and the program it execs, when /proc shows no command
/// line for an instant: looked for again until it shows.
fn child_with(parent: u32, marker: &str) -> u32 {
    for _ in 0..100_000 {
        if let Some(pid) = processes_with(marker)
            .into_iter()
            .find(|pid| parent_of(*pid) == Some(parent))
        {
            return pid;
        }
        std::thread::yield_now();
    }
    panic!("no child of {parent} runs {marker:?}");
}

/// Every process whose command line holds `marker` ends within `limit`.
pub(crate) fn all_exit_within(marker: &str, limit: Duration) -> bool {
    processes_with(marker)
        .into_iter()
        .all(|pid| toolgauge::child::exits_within(pid, limit))
}

/// The lines `reader` gives, sent one by one as they come.
fn lines_of(reader: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Wait, at most `limit`, for a line holding `needle`; the lines read.
fn wait_for_line(lines: &Receiver<String>, needle: &str, limit: Duration) -> Vec<String> {
    let until = Instant::now() + limit;
    let mut seen = Vec::new();
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with {needle:?} within {limit:?}: {seen:?}");
}

fn suite_with(
    dir: &Path,
    name: &str,
    command: serde_json::Value,
    extra: serde_json::Value,
) -> std::path::PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let mut mcp = json!({"command": command});
    for (k, v) in extra.as_object().unwrap() {
        mcp[k] = v.clone();
    }
    let scenario = json!({
        "name": name,
        "tools": [{"mcp": mcp}],
        "prompt": "add 1 2",
        "expect": {"no_call": true}
    });
    std::fs::write(suite.join(format!("{name}.json")), scenario.to_string()).unwrap();
    suite
}

fn spawn_run(suite: &Path, out: &Path, trials: &str) -> Child {
    spawn_run_with(suite, out, trials, &["--quiet"])
}

fn spawn_run_with(suite: &Path, out: &Path, trials: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args([
            "run",
            suite.to_str().unwrap(),
            "--models",
            "scenarios/models/scripted.json",
        ])
        .args(["--trials", trials, "--out", out.to_str().unwrap()])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, number: i32) {
    // SAFETY: kill only sends a signal to a child we own.
    unsafe {
        libc::kill(child.id() as libc::pid_t, number);
    }
}

#[test]
fn an_mcp_server_that_never_answers_stops_the_run_within_its_startup_deadline() {
    for (marker, command) in [
        ("1000.123", json!(["sleep", "1000.123"])),
        (
            "not-json-rpc-4471",
            json!([
                "sh",
                "-c",
                "while :; do echo not-json-rpc-4471; sleep 0.05; done"
            ]),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite_with(
            dir.path(),
            "hang",
            command,
            json!({"startup_timeout_ms": 400}),
        );
        let started = Instant::now();
        let output = spawn_run(&suite, &dir.path().join("out"), "1")
            .wait_with_output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{marker}: {stderr}");
        assert!(
            stderr.contains("no answer to initialize within 400 ms"),
            "{marker}: {stderr}"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{marker}");
        assert!(
            all_exit_within(marker, Duration::from_secs(5)),
            "{marker}: left running: {:?}",
            processes_with(marker)
        );
    }
}

#[test]
fn sigint_during_start_up_stops_at_once_and_leaves_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "1000.789";
    // The server says it started through a FIFO the test reads: no clock.
    let fifo = dir.path().join("started");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let command = format!("echo up > {}; exec sleep {marker}", fifo.display());
    let suite = suite_with(
        dir.path(),
        "slow_start",
        json!(["sh", "-c", command]),
        json!({}),
    );
    let child = spawn_run(&suite, &dir.path().join("out"), "1");
    let started = lines_of(std::fs::File::open(&fifo).unwrap());
    wait_for_line(&started, "up", Duration::from_secs(20));
    // This run's server: a leftover of another run is not it.
    let server = child_with(child.id(), marker);
    signal(&child, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("SIGINT: stopped during start-up"),
        "{stderr}"
    );
    assert!(
        toolgauge::child::exits_within(server, Duration::from_secs(5)),
        "the MCP server {server} outlived toolgauge"
    );
}

/// A run of the MCP suite's slow scenario, long enough to be stopped in
/// the middle, once it reports progress (running trials, not loading the
/// suite): the run, the test server's PID and the run's stderr lines.
fn busy_run(dir: &Path) -> (Child, u32, Receiver<String>) {
    let out = dir.join("out");
    let mut child = spawn_run_with(
        Path::new("scenarios/mcp/parallel_slow.json"),
        &out,
        "20000",
        &[],
    );
    let stderr = lines_of(child.stderr.take().unwrap());
    wait_for_line(&stderr, "progress:", Duration::from_secs(60));
    let parent = child.id();
    let server = processes_with("mcp_test_server")
        .into_iter()
        .find(|pid| parent_of(*pid) == Some(parent))
        .expect("the test server is not running");
    (child, server, stderr)
}

#[test]
fn sigterm_stops_a_run_as_ctrl_c_does_and_the_server_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, server, lines) = busy_run(dir.path());
    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    let stderr = lines.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted (SIGTERM)"), "{stderr}");
    // The hint names the folder whole, so it works from anywhere.
    let out = std::path::absolute(dir.path().join("out")).unwrap();
    assert!(
        stderr.contains(&format!("toolgauge run --resume {}", out.display())),
        "{stderr}"
    );
    assert!(
        toolgauge::child::exits_within(server, Duration::from_secs(5)),
        "the MCP server {server} outlived the run"
    );
}

#[test]
fn a_killed_toolgauge_takes_its_mcp_server_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, server, _) = busy_run(dir.path());
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert!(
        toolgauge::child::exits_within(server, Duration::from_secs(5)),
        "the MCP server {server} outlived a killed toolgauge"
    );
}

#[test]
fn a_command_validator_that_times_out_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"name": "t", "description": "d", "parameters": {
            "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]
        }}])
        .to_string(),
    )
    .unwrap();
    let marker = "100.321";
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(["fuzz", "--tools", tools.to_str().unwrap(), "--cases", "2"])
        .args([
            "--validator",
            &format!("cmd:sleep {marker}"),
            "--case-timeout-ms",
            "300",
        ])
        .args(["--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        all_exit_within(marker, Duration::from_secs(5)),
        "left running: {:?}",
        processes_with(marker)
    );
}

/// The test server example, built by `cargo test`.
fn test_server() -> String {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    profile
        .join("examples/mcp_test_server")
        .display()
        .to_string()
}

/// Our own children whose command line holds `marker`.
fn our_children_with(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    processes_with(marker)
        .into_iter()
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

#[test]
fn dropping_the_tool_servers_stops_every_server_they_started() {
    use toolgauge::tool::mcp::{McpServerSpec, ToolServers};
    let marker = "--owner-test";
    let spec = McpServerSpec {
        command: vec![test_server(), marker.to_owned()],
        ..McpServerSpec::default()
    };
    let servers = ToolServers::new();
    let server = servers.open(&spec).unwrap();
    // The same spec is one server, however often it is opened.
    assert!(std::sync::Arc::ptr_eq(
        &server,
        &servers.open(&spec).unwrap()
    ));
    // A per-trial tool starts a second server for its trial.
    let tools = server
        .tools(Some(&["add".to_owned()]), &[], Some(&[]), true)
        .unwrap();
    let registry = toolgauge::tool::Registry::new(
        tools
            .into_iter()
            .map(|(def, backend)| toolgauge::tool::ToolSource::Backend(def, backend))
            .collect(),
        toolgauge::tool::ToolEnv::default(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let state = registry.new_state();
    // Its start began with the trial; ready, it is running.
    runtime.block_on(registry.ready(&state));
    let running = our_children_with(marker);
    assert_eq!(running.len(), 2, "{running:?}");
    drop(state);
    drop(servers);
    for pid in running {
        assert!(
            toolgauge::child::exits_within(pid, Duration::from_secs(5)),
            "the MCP server {pid} outlived its owner"
        );
    }
    // A tool of a stopped server says so; it starts nothing.
    let state = registry.new_state();
    let id = registry.lookup("add").unwrap();
    let failure = runtime
        .block_on(registry.execute(id, &json!({"a": 1, "b": 2}).try_into().unwrap(), &state))
        .unwrap_err();
    assert!(failure.message.contains("stopped"), "{}", failure.message);
    assert!(our_children_with(marker).is_empty());
}

#[test]
fn sigint_stops_a_run_on_the_paused_clock_with_its_finished_trials_kept() {
    // Mock models run on the paused clock, whose runtime has no I/O
    // driver: the stop must still reach it from the signals' thread.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = spawn_run_with(Path::new("scenarios/starter"), &out, "200000", &[]);
    let stderr = lines_of(child.stderr.take().unwrap());
    wait_for_line(&stderr, "progress:", Duration::from_secs(60));
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    let said = stderr.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted (SIGINT)"), "{said}");
    let rows = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    assert!(rows.lines().count() > 1, "no finished trial was kept");
}

/// The MCP test server cargo test builds beside this binary.
fn mcp_test_server() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    profile.join("examples/mcp_test_server")
}

#[test]
fn an_mcp_servers_helpers_end_with_it_even_when_it_exits_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "1000.654";
    // A helper in the server's group; the server itself ends on stdin's
    // EOF, before anyone kills its group.
    let command = format!("sleep {marker} & exec {}", mcp_test_server().display());
    let suite = suite_with(
        dir.path(),
        "helpers",
        json!(["sh", "-c", command]),
        json!({}),
    );
    for stop in [None, Some(libc::SIGTERM)] {
        let out = dir.path().join(format!("out-{stop:?}"));
        let child = spawn_run(&suite, &out, if stop.is_some() { "100000" } else { "2" });
        if let Some(number) = stop {
            // Started: this run's helper runs (a child of its server,
            // the shell that exec'd it, which is a child of the run).
            let of_this_run = |pid: &u32| parent_of(*pid).and_then(parent_of) == Some(child.id());
            while !processes_with(marker).iter().any(of_this_run) {
                std::thread::yield_now();
            }
            signal(&child, number);
        }
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.code().is_some(),
            "{stop:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            all_exit_within(marker, Duration::from_secs(5)),
            "{stop:?}: the server's helper outlived the run: {:?}",
            processes_with(marker)
        );
    }
}

#[test]
fn a_killed_toolgauge_takes_a_forking_server_and_its_children_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("--forks-killed-{}", std::process::id());
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let scenario = json!({
        "name": "forked",
        "tools": [{
            "mcp": {"command": [mcp_test_server(), marker], "forks": true},
            "only": ["counter_increment"],
            "per_trial": true
        }],
        "prompt": "add 1 2",
        "expect": {"no_call": true}
    });
    std::fs::write(suite.join("forked.json"), scenario.to_string()).unwrap();
    let mut child = spawn_run_with(&suite, &dir.path().join("out"), "100000", &[]);
    let stderr = lines_of(child.stderr.take().unwrap());
    wait_for_line(&stderr, "progress:", Duration::from_secs(60));
    // The forker and the children it forked for the listing and trials.
    assert!(
        !processes_with(&marker).is_empty(),
        "no forking server runs"
    );
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert!(
        all_exit_within(&marker, Duration::from_secs(5)),
        "a forking server or a child of it outlived a killed toolgauge: {:?}",
        processes_with(&marker)
    );
}
