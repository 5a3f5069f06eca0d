//! Real tools: MCP servers (the repository's own test server over stdio
//! and streamable HTTP, and the reference server-everything when it is
//! installed), HTTP endpoints and commands.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolgauge::scenario::load_scenario;
use toolgauge::tool::mcp::{McpServerSpec, ToolServers};
use toolgauge::tool::{Effect, Registry, ToolFailureKind};

use crate::{assert_success, toolgauge};

/// The test server example, built by `cargo test`.
pub(crate) fn test_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let server = profile.join("examples/mcp_test_server");
    assert!(
        server.exists(),
        "{} is missing: cargo test builds it (cargo build --example mcp_test_server)",
        server.display()
    );
    server
}

/// A scenario with one MCP entry, loaded; its registry.
fn registry_for(dir: &Path, entry: Value, servers: &ToolServers) -> std::sync::Arc<Registry> {
    let scenario = json!({
        "name": "mcp",
        "tools": [entry],
        "prompt": "p",
        "expect": {"no_call": true}
    });
    let path = dir.join("mcp.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    load_scenario(&path, dir, servers).unwrap().registry.clone()
}

fn stdio_entry(extra: Value) -> Value {
    let mut entry = json!({"mcp": {"command": [test_server().display().to_string()]}});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    entry
}

async fn call(
    registry: &Registry,
    state: &toolgauge::tool::ToolState,
    tool: &str,
    arguments: Value,
) -> Result<String, toolgauge::tool::ToolFailure> {
    let id = registry.lookup(tool).unwrap();
    registry
        .execute(id, &arguments.try_into().unwrap(), state)
        .await
        .map(|output| output.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_are_listed_and_called_over_stdio() {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_for(
        dir.path(),
        stdio_entry(json!({"read": ["counter_increment"]})),
        &servers,
    );
    let names: Vec<&str> = registry.names().collect();
    assert!(
        names.contains(&"add") && names.contains(&"lenient_echo"),
        "{names:?}"
    );
    // Effects from the server's annotations, or from "read".
    let effect = |name: &str| registry.definition(registry.lookup(name).unwrap()).effect;
    assert_eq!(effect("add"), Effect::Read);
    assert_eq!(effect("delete_everything"), Effect::Write);
    assert_eq!(effect("counter_increment"), Effect::Read);
    let state = registry.new_state();
    assert_eq!(
        call(&registry, &state, "add", json!({"a": 2, "b": 3}))
            .await
            .unwrap(),
        "5"
    );
    // The server's own refusal of arguments (JSON-RPC -32602) is a
    // validation failure; an isError result is a runtime one.
    let refused = call(&registry, &state, "add", json!({"a": "x", "b": 1}))
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ToolFailureKind::Invalid);
    assert!(
        refused.message.starts_with("MCP error -32602"),
        "{}",
        refused.message
    );
    let flaky = call(&registry, &state, "flaky", json!({"key": "stdio-test"}))
        .await
        .unwrap_err();
    assert_eq!(flaky.kind, ToolFailureKind::Runtime);
    assert!(flaky.message.contains("temporarily unavailable"));
    assert!(
        call(&registry, &state, "flaky", json!({"key": "stdio-test"}))
            .await
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_are_called_over_streamable_http() {
    let servers = ToolServers::new();
    let mut server = Command::new(test_server())
        .arg("--http")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let spec = McpServerSpec::parse(&url).unwrap();
    let opened = servers.open(&spec).unwrap();
    let tools = opened
        .tools(
            Some(&["add".to_owned(), "counter_increment".to_owned()]),
            &[],
            None,
            true,
        )
        .unwrap();
    assert_eq!(tools.len(), 2);
    let registry = Registry::new(
        tools
            .into_iter()
            .map(|(d, b)| toolgauge::tool::ToolSource::Backend(d, b))
            .collect(),
        toolgauge::tool::ToolEnv::default(),
    )
    .unwrap();
    let state = registry.new_state();
    assert_eq!(
        call(&registry, &state, "add", json!({"a": 40, "b": 2}))
            .await
            .unwrap(),
        "42"
    );
    let first: i64 = call(&registry, &state, "counter_increment", json!({"by": 5}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    let second: i64 = call(&registry, &state, "counter_increment", json!({"by": 5}))
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(second - first, 5, "state is kept across calls");
    let stats = opened.stats();
    assert_eq!(stats.startups, 1);
    assert!(stats.calls >= 3 && stats.call_ms_p50 > 0.0, "{stats:?}");
    server.kill().unwrap();
    server.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_mcp_server_gives_error_results_with_its_stderr_and_restarts_for_the_next_trial()
{
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    // A spec of its own (a marker argument), so no other test shares it.
    let entry = json!({"mcp": {"command": [test_server().display().to_string(), "--crash-test"]}, "only": ["crash", "add"]});
    let registry = registry_for(dir.path(), entry, &servers);
    let first = registry.new_state();
    let crashed = call(&registry, &first, "crash", json!({}))
        .await
        .unwrap_err();
    assert!(crashed.message.contains("stopped"), "{}", crashed.message);
    assert!(
        crashed.message.contains("crash requested"),
        "its stderr: {}",
        crashed.message
    );
    // The same trial keeps getting the error...
    let again = call(&registry, &first, "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert!(
        again.message.contains("crash requested"),
        "{}",
        again.message
    );
    // ...and the next trial has the server again.
    let second = registry.new_state();
    assert_eq!(
        call(&registry, &second, "add", json!({"a": 1, "b": 1}))
            .await
            .unwrap(),
        "2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_trial_mcp_servers_start_fresh_for_each_trial() {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let marker = "--per-trial-test";
    let entry = json!({
        "mcp": {"command": [test_server().display().to_string(), marker]},
        "only": ["counter_increment"],
        "per_trial": true
    });
    let registry = registry_for(dir.path(), entry, &servers);
    let startups = || {
        servers
            .stats()
            .into_iter()
            .find(|s| s.source.ends_with(marker))
            .unwrap()
            .startups
    };
    // One start-up to list the tools.
    assert_eq!(startups(), 1);
    for trial in 0..2 {
        let state = registry.new_state();
        // The trial's own server starts with its state, and is ready
        // before any call: its start-up is not tool time.
        registry.ready(&state).await;
        assert_eq!(startups(), 2 + trial);
        assert_eq!(
            call(&registry, &state, "counter_increment", json!({}))
                .await
                .unwrap(),
            "1"
        );
        assert_eq!(
            call(&registry, &state, "counter_increment", json!({}))
                .await
                .unwrap(),
            "2"
        );
    }
}

/// Why `scenario`, written as mcp.json, does not load.
fn load_error(scenario: &Value) -> String {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, serde_json::to_string_pretty(scenario).unwrap()).unwrap();
    load_scenario(&path, dir.path(), &servers)
        .unwrap_err()
        .to_string()
}

#[test]
fn an_mcp_entry_naming_a_tool_the_server_lacks_is_located_in_the_file() {
    let error = load_error(&json!({
        "name": "mcp",
        "tools": [stdio_entry(json!({"only": ["add", "multiply"]}))],
        "prompt": "p",
        "expect": {"no_call": true}
    }));
    assert!(
        error.contains("mcp.json:") && error.contains(": /tools/0: MCP server"),
        "{error}"
    );
    assert!(
        error.contains("\"multiply\"") && error.contains("add, counter_increment"),
        "{error}"
    );
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .count()
}

#[test]
fn a_run_on_mcp_tools_measures_them_and_leaves_no_server_behind() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("--marker-{}", std::process::id());
    let server = test_server().display().to_string();
    let scenario = json!({
        "name": "add",
        "tools": [{"mcp": {"command": [server, marker]}, "only": ["add"]}],
        "prompt": "2+2?",
        "expect": {"calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}]}
    });
    std::fs::create_dir_all(dir.path().join("suite")).unwrap();
    std::fs::write(dir.path().join("suite/add.json"), scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = toolgauge(&[
        "run",
        dir.path().join("suite").to_str().unwrap(),
        "--trials",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("running on the real clock"), "{err}");
    assert!(err.contains("tools/call, p50"), "{err}");
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["clock"], "real");
    let source = &run["tool_sources"][0];
    assert_eq!(source["startups"], 1, "{source}");
    assert!(source["calls"].as_u64().unwrap() >= 6, "{source}");
    let csv = std::fs::read_to_string(out.join("tool_sources.csv")).unwrap();
    assert!(
        csv.starts_with(
            "source,startups,startup_ms_mean,calls,call_errors,call_ms_p50,call_ms_p95,bad_outputs,protocol,elicitations,samplings,startup_ms_first\n"
        ),
        "{csv}"
    );
    assert_eq!(processes_with(&marker), 0, "an MCP server outlived the run");
}

#[test]
fn fuzzing_an_mcp_server_measures_its_own_validation_and_never_calls_what_is_not_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let server = test_server().display().to_string();
    let fuzz = |cases: &str, extra: &[&str]| {
        let mut args = vec![
            "fuzz".to_owned(),
            "--tools".to_owned(),
            format!("mcp:{server}"),
            "--cases".to_owned(),
            cases.to_owned(),
            "--out".to_owned(),
            dir.path().display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        Command::new(env!("CARGO_BIN_EXE_toolgauge"))
            .args(&args)
            .env("MCP_TEST_LOG", &log)
            .output()
            .unwrap()
    };
    let output = fuzz("30", &["--allow", "add", "lenient_echo", "counter_get"]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    let total = |tool: &str, operator: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{tool},{operator},")) && l.ends_with(",,server"))
            .map(|l| l.split(',').map(str::to_owned).collect::<Vec<_>>())
    };
    // The server checks add's arguments: every mutant refused.
    let add_type = total("add", "type").expect("add type row");
    assert_eq!(add_type[4], "0", "{csv}");
    // lenient_echo checks nothing: the fuzzer finds it, keyword by keyword.
    for operator in ["type", "required", "maximum", "max_length"] {
        let row = total("lenient_echo", operator).unwrap_or_else(|| panic!("{operator}: {csv}"));
        assert_eq!(row[3], "0", "{operator} killed: {csv}");
    }
    assert!(err.contains("lenient_echo: a required mutant"), "{err}");
    let called = std::fs::read_to_string(&log).unwrap();
    for never in ["crash", "delete_everything", "counter_increment", "slow"] {
        assert!(!called.lines().any(|l| l == never), "{never} was called");
    }
    // Read-only tools by annotation by default; destructive ones never.
    std::fs::remove_file(&log).unwrap();
    let output = fuzz("5", &[]);
    assert_eq!(output.status.code(), Some(1));
    let called = std::fs::read_to_string(&log).unwrap();
    assert!(called.lines().any(|l| l == "slow"));
    for never in ["crash", "delete_everything", "counter_increment"] {
        assert!(!called.lines().any(|l| l == never), "{never} was called");
    }
    assert!(String::from_utf8_lossy(&output.stderr).contains("not fuzzed (not read-only; --allow NAME to fuzz one): counter_increment, crash, delete_everything"));
}

#[test]
fn a_served_tool_that_does_not_answer_stops_only_its_own_fuzzing() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("mcp:{}", test_server().display());
    // `slow` sleeps as long as its `ms` says: most cases outlast 50 ms.
    let output = toolgauge(&[
        "fuzz",
        "--tools",
        &server,
        "--cases",
        "20",
        "--case-timeout-ms",
        "50",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&output.stderr);
    // The tool's fault, not bad input: exit 1, and the run went on.
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tool \"slow\" did not answer within 50 ms: its fuzzing stopped there"),
        "{err}"
    );
    let csv = std::fs::read_to_string(dir.path().join("fuzz.csv")).unwrap();
    let tools: Vec<&str> = csv.lines().filter_map(|l| l.split(',').next()).collect();
    let slow = tools.iter().position(|t| *t == "slow").expect("slow's row");
    assert!(
        tools[slow..].contains(&"lenient_echo"),
        "a tool after slow was fuzzed: {csv}"
    );
}

#[test]
fn tools_list_prints_an_mcp_servers_definitions_in_each_format() {
    let server = format!("mcp:{}", test_server().display());
    let output = toolgauge(&["tools", "list", &server, "--format", "openai"]);
    assert_success(&output);
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "add")
        .unwrap();
    assert_eq!(add["type"], "function");
    assert_eq!(add["function"]["parameters"]["required"], json!(["a", "b"]));
    let output = toolgauge(&["tools", "list", &server]);
    let defs: Value = serde_json::from_slice(&output.stdout).unwrap();
    let add = defs
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap();
    assert_eq!(add["effect"], "read");
    // A file's problems: exit 1, each printed.
    let bad = toolgauge(&["tools", "list", "scenarios/examples/bad-tools.json"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("\"page\" is required but not defined"));
    // A server that cannot start: exit 2, named.
    let missing = toolgauge(&["tools", "list", "mcp:/no/such/server"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("MCP server /no/such/server: cannot start")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_command_tools_run_as_tools() {
    let servers = ToolServers::new();
    use wiremock::matchers::{body_json, method, path, query_param};
    let endpoint = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/weather"))
        .and(body_json(json!({"city": "Paris"})))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("{\"sky\":\"clear\"}"))
        .mount(&endpoint)
        .await;
    wiremock::Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", "rust"))
        .and(query_param("limit", "3"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("3 results"))
        .mount(&endpoint)
        .await;
    wiremock::Mock::given(method("POST"))
        .and(path("/broken"))
        .respond_with(wiremock::ResponseTemplate::new(503).set_body_string("down for maintenance"))
        .mount(&endpoint)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let open = json!({"type": "object"});
    let tool = |name: &str, extra: Value| {
        let mut def = json!({"name": name, "description": "d", "parameters": open});
        def.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        def
    };
    let tools = json!([
        tool(
            "weather",
            json!({"http": {"url": format!("{}/weather", endpoint.uri())}})
        ),
        tool(
            "search",
            json!({"http": {"method": "GET", "url": format!("{}/search", endpoint.uri()), "send": "query"}})
        ),
        tool(
            "broken",
            json!({"http": {"url": format!("{}/broken", endpoint.uri())}})
        ),
        tool("upper", json!({"command": ["sh", "-c", "tr a-z A-Z"]})),
        tool(
            "failing",
            json!({"command": ["sh", "-c", "echo no such thing >&2; exit 3"]})
        ),
    ]);
    let scenario =
        json!({"name": "served", "tools": tools, "prompt": "p", "expect": {"no_call": true}});
    let path_ = dir.path().join("served.json");
    std::fs::write(&path_, scenario.to_string()).unwrap();
    let scenario = load_scenario(&path_, dir.path(), &servers).unwrap();
    let registry = &scenario.registry;
    assert!(registry.has_real_tools());
    let state = registry.new_state();
    assert_eq!(
        call(registry, &state, "weather", json!({"city": "Paris"}))
            .await
            .unwrap(),
        "{\"sky\":\"clear\"}"
    );
    assert_eq!(
        call(registry, &state, "search", json!({"q": "rust", "limit": 3}))
            .await
            .unwrap(),
        "3 results"
    );
    let broken = call(registry, &state, "broken", json!({}))
        .await
        .unwrap_err();
    assert!(
        broken.message.contains("HTTP 503") && broken.message.contains("down for maintenance"),
        "{}",
        broken.message
    );
    assert_eq!(
        call(registry, &state, "upper", json!({"a": "b"}))
            .await
            .unwrap(),
        "{\"A\":\"B\"}"
    );
    let failing = call(registry, &state, "failing", json!({}))
        .await
        .unwrap_err();
    assert!(
        failing.message.contains("code 3") && failing.message.contains("no such thing"),
        "{}",
        failing.message
    );
}

/// The reference server-everything, installed by `npm ci --prefix
/// tests/mcp` (.ci/run does), or why not.
/// Whether `node` is on the PATH and runs.
pub(crate) fn node_runs() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub(crate) fn server_everything() -> Result<PathBuf, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything");
    if !node_runs() {
        return Err("no node".into());
    }
    let package: Value = std::fs::read_to_string(root.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or("tests/mcp/node_modules has no server-everything (npm ci --prefix tests/mcp)")?;
    let bin = match &package["bin"] {
        Value::String(bin) => bin.clone(),
        Value::Object(bins) => bins
            .values()
            .next()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    };
    Ok(root.join(bin))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
async fn the_reference_server_everything_interoperates() {
    let servers = ToolServers::new();
    let script = match server_everything() {
        Ok(script) => script,
        Err(why) => {
            panic!("missing: the_reference_server_everything_interoperates: {why}")
        }
    };
    let spec = McpServerSpec {
        command: vec!["node".into(), script.display().to_string(), "stdio".into()],
        ..McpServerSpec::default()
    };
    let server = servers.open(&spec).unwrap();
    let tools = server.tools(None, &[], None, true).unwrap();
    let echo = tools
        .iter()
        .find(|(d, _)| d.name == "echo")
        .expect("an echo tool");
    assert!(echo.0.parameters["properties"]["message"].is_object());
    let registry = Registry::new(
        tools
            .into_iter()
            .map(|(d, b)| toolgauge::tool::ToolSource::Backend(d, b))
            .collect(),
        toolgauge::tool::ToolEnv::default(),
    )
    .unwrap();
    let state = registry.new_state();
    let said = call(&registry, &state, "echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert!(said.contains("hello"), "{said}");
    // Known answer: invalid arguments come back as an isError result whose
    // text starts with "MCP error -32602".
    let refused = call(&registry, &state, "echo", json!({"message": 5}))
        .await
        .unwrap_err();
    assert!(
        refused.message.starts_with("MCP error -32602"),
        "{}",
        refused.message
    );
    assert_eq!(refused.kind, ToolFailureKind::Invalid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_mcp_server_is_started_again_for_the_next_trial() {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let entry = json!({
        "mcp": {"command": [test_server().display().to_string(), "--hang-test"]},
        "only": ["slow", "add"],
        "timeout_ms": 100
    });
    let registry = registry_for(dir.path(), entry, &servers);
    let slow = registry.lookup("slow").unwrap();
    assert_eq!(registry.definition(slow).timeout_ms, 100);
    let first = registry.new_state();
    // The pipeline applies the tool's timeout so: the call is dropped.
    let timed_out = tokio::time::timeout(
        registry.definition(slow).timeout(),
        call(&registry, &first, "slow", json!({"ms": 1000})),
    )
    .await;
    assert!(timed_out.is_err());
    let after = call(&registry, &first, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(
        after.message.contains("did not answer a call in time"),
        "{}",
        after.message
    );
    let second = registry.new_state();
    assert_eq!(
        call(&registry, &second, "add", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        "3"
    );
}

#[test]
fn exec_runs_a_response_against_an_mcp_servers_tools() {
    let dir = tempfile::tempdir().unwrap();
    let response = dir.path().join("response.json");
    std::fs::write(
        &response,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 40, "b": 2}},
                {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": "x", "b": 2}}
            ],
            "stop_reason": "tool_use"
        })
        .to_string(),
    )
    .unwrap();
    let output = toolgauge(&[
        "exec",
        "--provider",
        "anthropic",
        "--tools",
        &format!("mcp:{}", test_server().display()),
        response.to_str().unwrap(),
    ]);
    assert_success(&output);
    let messages: Value = serde_json::from_slice(&output.stdout).unwrap();
    let results = &messages[0]["content"];
    assert_eq!(results[0]["content"], "42");
    assert_eq!(results[0]["is_error"], false);
    // toolgauge's own validation refuses the second before the server.
    assert_eq!(results[1]["is_error"], true);
}

/// Reports of a run folder read run.json, never the suite: `report merge`
/// and `report html` start no MCP server (each start leaves a line).
#[test]
fn report_merge_and_html_start_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let starts = dir.path().join("starts.log");
    let command = format!(
        "echo start >> {}; exec {}",
        starts.display(),
        test_server().display()
    );
    let scenario = json!({
        "name": "mcp_add",
        "tools": [{"mcp": {"command": ["sh", "-c", command]}, "only": ["add"]}],
        "prompt": "add 1 2",
        "expect": {"calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}
    });
    std::fs::write(suite.join("add.json"), scenario.to_string()).unwrap();
    let out = dir.path().join("run");
    let run = toolgauge(&[
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
    assert_success(&run);
    let count = || std::fs::read_to_string(&starts).unwrap().lines().count();
    let after_run = count();
    assert!(after_run >= 1);
    let merged = dir.path().join("merged");
    let merge = toolgauge(&[
        "report",
        "merge",
        out.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_success(&merge);
    let html = toolgauge(&["report", "html", out.to_str().unwrap()]);
    assert_success(&html);
    assert_eq!(count(), after_run, "a report started the MCP server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_args_start_each_trials_server_with_them_and_it_stops_with_the_trial() {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("--trial-args-{}", std::process::id());
    let entry = stdio_entry(json!({
        "only": ["counter_increment"],
        "per_trial": true,
        "trial_args": ["--entry", marker],
    }));
    let registry = registry_for(dir.path(), entry, &servers);
    // The shared server, which lists the tools, has no trial arguments.
    assert_eq!(processes_with(&marker), 0);
    let state = registry.new_state();
    registry.ready(&state).await;
    assert_eq!(processes_with(&marker), 1, "the trial's own server");
    assert_eq!(
        call(&registry, &state, "counter_increment", json!({}))
            .await
            .unwrap(),
        "1"
    );
    drop(state);
    // The owner waits until every server it started, trials' own too, is gone.
    servers.stop();
    assert_eq!(processes_with(&marker), 0, "a trial's server outlived it");
}

#[test]
fn trial_args_need_a_per_trial_server() {
    let error = load_error(&json!({
        "name": "mcp",
        "tools": [stdio_entry(json!({"trial_args": ["--entry", "x"]}))],
        "prompt": "p",
        "expect": {"no_call": true}
    }));
    assert!(
        error.contains("/tools/0/trial_args") && error.contains("\"per_trial\": true"),
        "{error}"
    );
}

#[test]
fn a_server_that_takes_any_arguments_gets_calls_its_schema_would_refuse() {
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let bad = json!({"by": "three"});
    let checked = registry_for(
        dir.path(),
        stdio_entry(json!({"only": ["counter_increment"]})),
        &servers,
    );
    let id = checked.lookup("counter_increment").unwrap();
    assert!(!checked.is_valid(id, &bad));
    let unchecked = registry_for(
        dir.path(),
        stdio_entry(json!({"only": ["counter_increment"], "validate": false})),
        &servers,
    );
    let id = unchecked.lookup("counter_increment").unwrap();
    assert!(
        unchecked.is_valid(id, &bad),
        "validate: false refuses nothing"
    );
    // The model still sees the server's schema.
    assert_eq!(
        unchecked.definition(id).parameters,
        checked
            .definition(checked.lookup("counter_increment").unwrap())
            .parameters
    );
}

/// A counter task judged by a probe: `counter_get`, which the model is
/// never given, must read `expected` when the task ends.
fn probed_counter_task(dir: &Path, expected: i64) -> PathBuf {
    let suite = dir.join(format!("suite-{expected}"));
    std::fs::create_dir_all(&suite).unwrap();
    let scenario = json!({
        "name": "probed_counter",
        "tools": [stdio_entry(json!({"only": ["counter_increment", "counter_get"], "per_trial": true}))],
        "prompt": "Add 3 to the counter, then add 4.",
        "task": {
            "reference": [
                {"name": "counter_increment", "arguments": {"by": 3}},
                {"name": "counter_increment", "arguments": {"by": 4}}
            ],
            "final_state": {"probe": {"tool": "counter_get", "result": expected}}
        }
    });
    std::fs::write(suite.join("probed.json"), scenario.to_string()).unwrap();
    suite
}

#[test]
fn a_probe_judges_the_state_a_server_holds_and_its_tool_is_never_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(
        "scenarios/models/scripted.json",
        models.join("scripted.json"),
    )
    .unwrap();
    for (expected, passes) in [(7, true), (8, false)] {
        let out = dir.path().join(format!("out-{expected}"));
        let suite = probed_counter_task(dir.path(), expected);
        let output = toolgauge(&[
            "run",
            suite.to_str().unwrap(),
            "--models",
            models.to_str().unwrap(),
            "--trials",
            "2",
            "--min-success",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(if passes { 0 } else { 1 }),
            "{err}"
        );
        let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
        assert_eq!(trials.contains("wrong_final_state"), !passes, "{trials}");
        // The model never called the probe's tool; toolgauge did, once per
        // trial, and the log says what it answered.
        let session = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
        let calls = session
            .lines()
            .filter(|l| l.contains("\"type\":\"tool_call\""));
        assert!(calls.clone().count() >= 4, "{session}");
        assert!(
            calls.clone().all(|l| !l.contains("counter_get")),
            "{session}"
        );
        let probes: Vec<&str> = session
            .lines()
            .filter(|l| l.contains("\"type\":\"probe\""))
            .collect();
        assert_eq!(probes.len(), 2, "{session}");
        let said = format!("\"result\":7,\"passed\":{passes}");
        assert!(probes.iter().all(|p| p.contains(&said)), "{probes:?}");
    }
}

#[test]
fn a_probes_tool_cannot_be_given_to_the_model_later() {
    let error = load_error(&json!({
        "name": "mcp",
        "tools": [stdio_entry(json!({"only": ["counter_increment", "counter_get"]}))],
        "prompt": "p",
        "task": {
            "final_state": {"probe": {"tool": "counter_get", "result": 1}},
            "turns": [{"user": "more", "add_tools": ["counter_get"], "answer": {"$contains": "1"}}]
        }
    }));
    assert!(
        error.contains("/task/turns/0/add_tools/0") && error.contains("a probe's tool"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forking_server_starts_once_and_gives_each_trial_a_fresh_child() {
    use crate::processes::{all_exit_within, processes_with};
    let servers = ToolServers::new();
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("--forks-{}", std::process::id());
    let entry = json!({
        "mcp": {"command": [test_server().display().to_string(), marker], "forks": true},
        "only": ["counter_increment", "crash"],
        "per_trial": true,
        // Seen in the protocol the trial's child answers with.
        "trial_args": ["--protocol", "2025-03-26"],
    });
    let registry = registry_for(dir.path(), entry, &servers);
    let stats = || {
        servers
            .stats()
            .into_iter()
            .find(|s| s.source.ends_with(&marker))
            .unwrap()
    };
    assert_ne!(
        stats().protocol,
        "2025-03-26",
        "the listing has no trial arguments"
    );
    // A forked child's parent runs the same command: only one was started.
    let started = || {
        let found = processes_with(&marker);
        found
            .iter()
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let parent = stat
                    .rsplit(')')
                    .next()
                    .and_then(|s| s.split_whitespace().nth(1));
                !found.iter().any(|p| Some(p.to_string().as_str()) == parent)
            })
            .count()
    };
    for trial in 0..3 {
        let state = registry.new_state();
        registry.ready(&state).await;
        // Each trial's counter starts from nothing: its own child.
        for expected in ["1", "2"] {
            let counted = call(&registry, &state, "counter_increment", json!({}));
            assert_eq!(counted.await.unwrap(), expected, "trial {trial}");
        }
        assert_eq!(
            stats().protocol,
            "2025-03-26",
            "the trial's arguments reached its child"
        );
        assert_eq!(started(), 1, "trial {trial}: the command was started again");
        if trial == 0 {
            // A child that crashes is the server's failure, and only its
            // trial's: the next trial gets a child of its own.
            let crashed = call(&registry, &state, "crash", json!({}))
                .await
                .unwrap_err();
            assert_eq!(crashed.kind, ToolFailureKind::Unavailable, "{crashed:?}");
        }
    }
    assert_eq!(stats().startups, 4, "the listing's child and three trials'");
    servers.stop();
    assert!(
        all_exit_within(&marker, std::time::Duration::from_secs(5)),
        "the forker or a child outlived its owner: {:?}",
        processes_with(&marker)
    );
}
