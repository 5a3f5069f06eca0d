//! A real trace viewer: Arize Phoenix (`arize-phoenix` from PyPI, pinned
//! and installed by .ci/run in a cached venv) started on loopback; a run
//! exports to it with `--otlp`, and Phoenix's own REST API
//! (`/v1/projects/default/spans`) says that every trial, request and call
//! arrived with the conventions' names and attributes, under the right
//! parent. Needs $TOOLGAUGE_PHOENIX, the `phoenix` command.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{assert_success, toolgauge};

/// Phoenix serving from a folder of its own; killed with the value.
struct Phoenix {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(phoenix: &str) -> Phoenix {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(phoenix)
        .arg("serve")
        .env("PHOENIX_WORKING_DIR", dir.path())
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", free_port().to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready when it says its application has started (it migrates its
    // database first): the lines of both streams read as they come, and
    // drained after, so that it never blocks on a full pipe.
    let (said, heard) = std::sync::mpsc::channel::<String>();
    let streams: [Box<dyn std::io::Read + Send>; 2] = [
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    ];
    for stream in streams {
        let said = said.clone();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stream)) {
                let Ok(line) = line else { break };
                let _ = said.send(line);
            }
        });
    }
    let server = Phoenix {
        child,
        url: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    };
    loop {
        let line = heard
            .recv_timeout(Duration::from_secs(120))
            .expect("phoenix did not say it started within 120 s");
        if line.contains("Application startup complete") {
            break;
        }
    }
    toolgauge::transport::tls_ready();
    server
}

/// Every span Phoenix holds in its default project, once it holds
/// `expected` (it stores what it was sent in the background: asked again
/// at once, each answer a round trip, until it does or a minute passes).
fn spans(phoenix: &Phoenix, expected: usize) -> Vec<Value> {
    let client = reqwest::blocking::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body: Value = client
            .get(format!(
                "{}/v1/projects/default/spans?limit=1000",
                phoenix.url
            ))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let data = body["data"].as_array().cloned().unwrap_or_default();
        if data.len() >= expected || Instant::now() > deadline {
            return data;
        }
    }
}

#[test]
#[ignore = "needs Arize Phoenix: TOOLGAUGE_PHOENIX (.ci/run installs it and runs this with --ignored)"]
fn phoenix_shows_every_trial_request_and_call_under_its_parent() {
    let Ok(command) = std::env::var("TOOLGAUGE_PHOENIX") else {
        panic!(
            "missing: TOOLGAUGE_PHOENIX names no phoenix command (.ci/run installs arize-phoenix)"
        );
    };
    let phoenix = start(&command);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        "scenarios/starter/weather_single.json",
        "scenarios/agent/conversation_order_support.json",
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--otlp",
        &phoenix.url,
    ]);
    assert_success(&output);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let sent: usize = summary
        .split("All ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    let spans = spans(&phoenix, sent);
    assert_eq!(spans.len(), sent, "Phoenix holds every span toolgauge sent");
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["context"]["span_id"].as_str().unwrap(), s))
        .collect();
    let parent = |span: &Value| {
        span["parent_id"]
            .as_str()
            .and_then(|p| by_id.get(p).copied())
    };
    let named = |prefix: &str| -> Vec<&Value> {
        spans
            .iter()
            .filter(|s| s["name"].as_str().unwrap().starts_with(prefix))
            .collect()
    };
    let session = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let trials = named("invoke_agent ");
    assert_eq!(trials.len(), 4);
    for trial in &trials {
        assert_eq!(trial["attributes"]["gen_ai.operation.name"], "invoke_agent");
        assert_eq!(parent(trial).unwrap()["name"], "toolgauge run");
    }
    let chats = named("chat ");
    assert_eq!(
        chats.len(),
        session.matches("\"type\":\"model_reply\"").count()
    );
    let tools = named("execute_tool ");
    assert_eq!(
        tools.len(),
        session.matches("\"type\":\"tool_result\"").count()
    );
    for span in chats.iter().chain(&tools) {
        let attempt = parent(span).unwrap();
        assert!(attempt["name"].as_str().unwrap().starts_with("attempt "));
        assert!(
            parent(attempt).unwrap()["name"]
                .as_str()
                .unwrap()
                .starts_with("invoke_agent ")
        );
    }
    for tool in &tools {
        assert_eq!(tool["attributes"]["gen_ai.operation.name"], "execute_tool");
        assert!(tool["attributes"]["gen_ai.tool.name"].is_string());
        assert!(tool["attributes"]["gen_ai.tool.call.id"].is_string());
    }
    assert!(chats[0]["attributes"]["gen_ai.usage.input_tokens"].is_number());
}
