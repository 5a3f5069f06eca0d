//! No hang, no orphan: every process toolgauge starts ends with it, an MCP
//! server that never answers stops the run within its start-up deadline,
//! and SIGINT and SIGTERM stop a run the same way at any moment. After
//! each case, no process toolgauge started is left, by PID and by a
//! marker in its command line.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
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

/// Whether `pid` is a live process (a zombie awaiting its reaper is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Poll `condition` until it holds or `limit` passes; whether it held.
fn eventually(limit: Duration, condition: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
    Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args([
            "run",
            suite.to_str().unwrap(),
            "--models",
            "scenarios/models/scripted.json",
        ])
        .args([
            "--trials",
            trials,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
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
            eventually(Duration::from_secs(5), || processes_with(marker).is_empty()),
            "{marker}: left running: {:?}",
            processes_with(marker)
        );
    }
}

#[test]
fn sigint_during_start_up_stops_at_once_and_leaves_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "1000.789";
    let suite = suite_with(
        dir.path(),
        "slow_start",
        json!(["sleep", marker]),
        json!({}),
    );
    let child = spawn_run(&suite, &dir.path().join("out"), "1");
    assert!(
        eventually(Duration::from_secs(20), || !processes_with(marker)
            .is_empty()),
        "the server never started"
    );
    let server = processes_with(marker)[0];
    signal(&child, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("SIGINT: stopped during start-up"),
        "{stderr}"
    );
    assert!(
        eventually(Duration::from_secs(5), || !alive(server)),
        "the MCP server {server} outlived toolgauge"
    );
}

/// A run of the MCP suite's slow scenario, long enough to be stopped in
/// the middle; the test server's PID once it serves.
fn busy_run(dir: &Path) -> (Child, u32) {
    let out = dir.join("out");
    let child = spawn_run(Path::new("scenarios/mcp/parallel_slow.json"), &out, "20000");
    let parent = child.id();
    let ours = || {
        processes_with("mcp_test_server")
            .into_iter()
            .find(|pid| parent_of(*pid) == Some(parent))
    };
    assert!(
        eventually(Duration::from_secs(30), || ours().is_some()),
        "the test server never started"
    );
    // Started, and running trials (not still loading the suite).
    let trials = out.join("trials.csv");
    assert!(
        eventually(Duration::from_secs(30), || {
            std::fs::read_to_string(&trials).is_ok_and(|t| t.lines().count() > 1)
        }),
        "no trial finished"
    );
    let server = ours().unwrap_or(0);
    assert!(
        server != 0 && alive(server),
        "the test server is not running"
    );
    (child, server)
}

#[test]
fn sigterm_stops_a_run_as_ctrl_c_does_and_the_server_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (child, server) = busy_run(dir.path());
    signal(&child, libc::SIGTERM);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted (SIGTERM)"), "{stderr}");
    // The hint names the folder whole, so it works from anywhere.
    let out = std::path::absolute(dir.path().join("out")).unwrap();
    assert!(
        stderr.contains(&format!("toolgauge run --resume {}", out.display())),
        "{stderr}"
    );
    assert!(
        eventually(Duration::from_secs(5), || !alive(server)),
        "the MCP server {server} outlived the run"
    );
}

#[test]
fn a_killed_toolgauge_takes_its_mcp_server_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, server) = busy_run(dir.path());
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert!(
        eventually(Duration::from_secs(5), || !alive(server)),
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
        eventually(Duration::from_secs(5), || processes_with(marker).is_empty()),
        "left running: {:?}",
        processes_with(marker)
    );
}
