//! An MCP server for toolgauge's own tests, built with rmcp's server side:
//! deterministic tools, a stateful counter, a tool that fails once then
//! succeeds, a slow tool, a tool that does not validate its input, a tool
//! that crashes the server, and a destructive one.
//!
//! Over stdio by default; `--http` serves streamable HTTP on a free
//! loopback port and prints `listening on http://127.0.0.1:PORT/mcp`.
//! `--asks` adds two tools that ask the client: `greet` (an elicitation)
//! and `summarize` (a sampling). `--protocol REVISION` makes it speak
//! only that revision of the protocol. `--bad-output-schema` adds
//! `weather_unchecked`, whose outputSchema does not compile.
//! With `$MCP_TEST_LOG` set, every call's tool name is appended to that
//! file, so tests can tell which tools were called.
//!
//! Started with a listening Unix socket as its stdin (`"forks": true`),
//! it forks a child per connection, which reads the connection's first
//! line (a JSON list of arguments more) and serves on it.

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashSet;
use std::io::Write as _;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock,
    ElicitRequest, ElicitRequestParams, ElicitationAction, ErrorData, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, ServerRequest, Tool,
    ToolAnnotations,
};
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestParams, SamplingMessage};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// What the server remembers across calls (shared by every HTTP session).
#[derive(Default)]
struct State {
    counter: AtomicI64,
    /// Keys `flaky` has failed for once already.
    failed_once: Mutex<HashSet<String>>,
}

#[derive(Clone)]
struct TestServer {
    state: Arc<State>,
    /// `--asks`: serve `greet` and `summarize`.
    asks: bool,
    /// `--bad-output-schema`: serve `weather_unchecked`.
    bad_output_schema: bool,
    /// `--protocol`: the one revision it speaks.
    protocol: Option<ProtocolVersion>,
    /// `--counter-file PATH`: the counter starts from this file's value
    /// and is written back after each increment (state one trial leaves
    /// for the next, as a chain of scenarios shares it).
    counter_file: Option<std::path::PathBuf>,
}

/// The tools served with `--asks`.
fn asking_tools() -> Vec<Tool> {
    vec![
        tool(
            "greet",
            "Greet the user, asking their name (an elicitation).",
            json!({"type": "object", "properties": {}}),
            true,
        ),
        tool(
            "summarize",
            "Summarize a text, asking the client's model (a sampling).",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            true,
        ),
    ]
}

/// `greet` and `summarize`: what the client answered, as text.
#[allow(deprecated)]
async fn ask(
    name: &str,
    arguments: &Map<String, Value>,
    peer: &rmcp::Peer<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let failed = |e: rmcp::service::ServiceError| {
        Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "the client did not answer: {e}"
        ))])
        .into())
    };
    if name == "greet" {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string"},
                "greeting": {"type": "string", "default": "Hello"}
            }, "required": ["name"]}
        }))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        // Sent as is: rmcp's helper for it needs its `elicitation` feature.
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        return match peer.send_request(request).await {
            Ok(ClientResult::ElicitResult(answer)) => Ok(text(match answer.action {
                ElicitationAction::Accept => {
                    let field = |f: &str| {
                        answer
                            .content
                            .as_ref()
                            .and_then(|c| c.get(f))
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned()
                    };
                    format!("{}, {}!", field("greeting"), field("name"))
                }
                ElicitationAction::Decline => "declined".to_owned(),
                ElicitationAction::Cancel => "cancelled".to_owned(),
                _ => "another action".to_owned(),
            })),
            Ok(other) => Ok(text(format!("an answer of another kind: {other:?}"))),
            Err(e) => failed(e),
        };
    }
    let asked = arguments
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(format!("Summarize: {asked}"))],
        100,
    );
    match peer.create_message(params).await {
        Ok(answer) => {
            let said = answer
                .message
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone())
                .unwrap_or_default();
            Ok(text(format!("{said} (by {})", answer.model)))
        }
        Err(e) => failed(e),
    }
}

fn tool(name: &'static str, description: &'static str, schema: Value, read_only: bool) -> Tool {
    let schema = schema.as_object().cloned().unwrap_or_default();
    let annotations = ToolAnnotations::new().read_only(read_only);
    let annotations = if name == "delete_everything" {
        annotations.destructive(true)
    } else {
        annotations
    };
    Tool::new(name, description, Arc::new(schema)).annotate(annotations)
}

/// `tool` with an `outputSchema`.
fn with_output(mut tool: Tool, schema: Value) -> Tool {
    tool.output_schema = Some(Arc::new(schema.as_object().cloned().unwrap_or_default()));
    tool
}

fn tools() -> Vec<Tool> {
    vec![
        tool(
            "add",
            "Add two integers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false}),
            true,
        ),
        tool(
            "counter_increment",
            "Add `by` (default 1) to the counter and return its value.",
            json!({"type": "object", "properties": {"by": {"type": "integer", "minimum": 1, "maximum": 100}}, "additionalProperties": false}),
            false,
        ),
        tool(
            "counter_get",
            "The counter's value.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            true,
        ),
        tool(
            "flaky",
            "Look up a key; fails the first time for each key, then succeeds.",
            json!({"type": "object", "properties": {"key": {"type": "string", "minLength": 1}}, "required": ["key"], "additionalProperties": false}),
            true,
        ),
        tool(
            "slow",
            "Wait `ms` milliseconds, then answer.",
            json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": 1000}}, "required": ["ms"], "additionalProperties": false}),
            true,
        ),
        tool(
            "lenient_echo",
            "Echo a short text a few times. Does not check its arguments.",
            json!({"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 20}, "count": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["text", "count"], "additionalProperties": false}),
            true,
        ),
        tool(
            "crash",
            "Stop the server at once, as a crashing server would.",
            json!({"type": "object", "properties": {}}),
            false,
        ),
        with_output(
            tool(
                "weather",
                "The weather in a city, as structured content.",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                true,
            ),
            json!({"type": "object", "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}}, "required": ["city", "temp_c"]}),
        ),
        with_output(
            tool(
                "weather_broken",
                "The weather in a city; its structured content breaks its own outputSchema.",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                true,
            ),
            json!({"type": "object", "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}}, "required": ["city", "temp_c"]}),
        ),
        tool(
            "delete_everything",
            "Destructive: never to be called by a fuzzer unless allowed.",
            json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}}),
            false,
        ),
    ]
}

fn text(result: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(result)]).into()
}

fn invalid(tool: &str, problem: &str) -> ErrorData {
    ErrorData::invalid_params(format!("invalid arguments for {tool}: {problem}"), None)
}

/// Whether `value` is an integer (`5` or `5.0`) within the bounds.
fn integer_in(value: Option<&Value>, low: f64, high: f64) -> Option<i64> {
    let n = value?.as_f64()?;
    (n.fract() == 0.0 && (low..=high).contains(&n)).then_some(n as i64)
}

/// Only the listed keys.
fn only(arguments: &Map<String, Value>, keys: &[&str]) -> bool {
    arguments.keys().all(|k| keys.contains(&k.as_str()))
}

impl TestServer {
    async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResponse, ErrorData> {
        match name {
            "add" => {
                let (Some(a), Some(b)) = (
                    integer_in(arguments.get("a"), -9e15, 9e15),
                    integer_in(arguments.get("b"), -9e15, 9e15),
                ) else {
                    return Err(invalid(name, "a and b must be integers"));
                };
                if !only(&arguments, &["a", "b"]) {
                    return Err(invalid(name, "only a and b are allowed"));
                }
                Ok(text((a + b).to_string()))
            }
            "counter_increment" => {
                let by = match arguments.get("by") {
                    None => 1,
                    some => integer_in(some, 1.0, 100.0)
                        .ok_or_else(|| invalid(name, "by must be an integer from 1 to 100"))?,
                };
                if !only(&arguments, &["by"]) {
                    return Err(invalid(name, "only by is allowed"));
                }
                let value = self.state.counter.fetch_add(by, Ordering::SeqCst) + by;
                if let Some(path) = &self.counter_file {
                    std::fs::write(path, value.to_string())
                        .map_err(|e| invalid(name, &format!("cannot write the counter: {e}")))?;
                }
                Ok(text(value.to_string()))
            }
            "counter_get" => {
                if !arguments.is_empty() {
                    return Err(invalid(name, "takes no arguments"));
                }
                Ok(text(self.state.counter.load(Ordering::SeqCst).to_string()))
            }
            "flaky" => {
                let Some(key) = arguments
                    .get("key")
                    .and_then(Value::as_str)
                    .filter(|k| !k.is_empty())
                else {
                    return Err(invalid(name, "key must be a non-empty string"));
                };
                if !only(&arguments, &["key"]) {
                    return Err(invalid(name, "only key is allowed"));
                }
                let first = self
                    .state
                    .failed_once
                    .lock()
                    .map(|mut keys| keys.insert(key.to_owned()))
                    .unwrap_or(false);
                if first {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(
                        "temporarily unavailable, try again",
                    )])
                    .into());
                }
                Ok(text(json!({"key": key, "value": key.len()}).to_string()))
            }
            "slow" => {
                let ms = integer_in(arguments.get("ms"), 0.0, 1000.0)
                    .ok_or_else(|| invalid(name, "ms must be an integer from 0 to 1000"))?;
                if !only(&arguments, &["ms"]) {
                    return Err(invalid(name, "only ms is allowed"));
                }
                tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                Ok(text(format!("slept {ms} ms")))
            }
            // Deliberately no checks: the fuzzer must find this.
            "lenient_echo" => Ok(text(Value::Object(arguments).to_string())),
            "crash" => {
                eprintln!("mcp_test_server: crash requested, exiting");
                std::process::exit(3);
            }
            "delete_everything" => Ok(text("deleted everything")),
            "weather" | "weather_broken" => {
                let city = arguments.get("city").cloned().unwrap_or(Value::Null);
                // The broken one gives the temperature as a word.
                let temp = if name == "weather" {
                    json!(18)
                } else {
                    json!("mild")
                };
                let content = json!({"city": city, "temp_c": temp});
                Ok(CallToolResult::structured(content).into())
            }
            other => Err(ErrorData::invalid_params(
                format!("no tool {other:?}"),
                None,
            )),
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        match &self.protocol {
            Some(protocol) => config.with_protocol_version(protocol.clone()),
            None => config,
        }
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        match &self.protocol {
            Some(protocol) => vec![protocol.clone()].into(),
            None => ProtocolVersion::KNOWN_VERSIONS.into(),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = tools();
        if self.asks {
            tools.extend(asking_tools());
        }
        if self.bad_output_schema {
            tools.push(with_output(
                tool(
                    "weather_unchecked",
                    "The weather; its outputSchema does not compile.",
                    json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                    true,
                ),
                json!({"type": "object", "properties": {"temp_c": {"type": "number", "pattern": "("}}}),
            ));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Ok(path) = std::env::var("MCP_TEST_LOG")
            && let Ok(mut log) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(log, "{}", request.name);
        }
        let arguments = request.arguments.unwrap_or_default();
        if self.asks && (request.name == "greet" || request.name == "summarize") {
            return ask(&request.name, &arguments, &context.peer).await;
        }
        self.call(&request.name, arguments).await
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let runtime = || tokio::runtime::Runtime::new();
    let Some(listener) = listening_stdin() else {
        return runtime()?.block_on(serve(args, None));
    };
    // Forked before any thread is made: the child is whole.
    loop {
        let (connection, _) = listener.accept()?;
        // SAFETY: this process has one thread; the child runs on.
        match unsafe { libc::fork() } {
            0 => {
                drop(listener);
                let (more, connection) = trial_args(connection)?;
                let args = args.into_iter().chain(more).collect();
                runtime()?.block_on(serve(args, Some(connection)))?;
                std::process::exit(0);
            }
            -1 => return Err(std::io::Error::last_os_error().into()),
            _ => drop(connection),
        }
    }
}

/// The listening socket given as stdin, if one was.
fn listening_stdin() -> Option<std::os::unix::net::UnixListener> {
    use std::os::fd::FromRawFd;
    let mut listening: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: fd 0 is read, never closed, unless it is a listening socket.
    let asked = unsafe {
        libc::getsockopt(
            0,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&raw mut listening).cast(),
            &raw mut size,
        )
    };
    // SAFETY: fd 0 is a listening socket this process owns from here.
    (asked == 0 && listening != 0)
        .then(|| unsafe { std::os::unix::net::UnixListener::from_raw_fd(0) })
}

/// The connection's first line, a JSON list of arguments, read a byte
/// at a time: what follows is MCP's.
fn trial_args(
    mut connection: std::os::unix::net::UnixStream,
) -> std::io::Result<(Vec<String>, std::os::unix::net::UnixStream)> {
    use std::io::Read as _;
    let mut line = Vec::new();
    let mut byte = [0u8];
    while connection.read(&mut byte)? == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let args = serde_json::from_slice(&line).map_err(std::io::Error::other)?;
    Ok((args, connection))
}

async fn serve(
    args: Vec<String>,
    forked: Option<std::os::unix::net::UnixStream>,
) -> Result<(), Box<dyn std::error::Error>> {
    let protocol = args
        .iter()
        .position(|a| a == "--protocol")
        .and_then(|at| args.get(at + 1))
        .and_then(|v| serde_json::from_value::<ProtocolVersion>(Value::from(v.clone())).ok());
    let counter_file = args
        .iter()
        .position(|a| a == "--counter-file")
        .and_then(|at| args.get(at + 1))
        .map(std::path::PathBuf::from);
    let state = State::default();
    if let Some(start) = counter_file
        .as_ref()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| text.trim().parse().ok())
    {
        state.counter.store(start, Ordering::SeqCst);
    }
    let server = TestServer {
        counter_file,
        state: Arc::new(state),
        asks: args.iter().any(|a| a == "--asks"),
        bad_output_schema: args.iter().any(|a| a == "--bad-output-schema"),
        protocol,
    };
    if let Some(connection) = forked {
        connection.set_nonblocking(true)?;
        let (read, write) = tokio::net::UnixStream::from_std(connection)?.into_split();
        server.serve((read, write)).await?.waiting().await?;
        return Ok(());
    }
    if !args.iter().any(|a| a == "--http") {
        server
            .serve(rmcp::transport::stdio())
            .await?
            .waiting()
            .await?;
        return Ok(());
    }
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = TowerToHyperService::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        Default::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::default())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
