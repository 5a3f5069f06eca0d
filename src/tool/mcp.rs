//! Tools served by MCP servers, through rmcp's client: a child process
//! over stdio or a streamable HTTP endpoint. `tools/list` gives the
//! definitions and `tools/call` runs a call.
//!
//! Servers live on their own runtime (one thread), so that a server
//! started while a suite loads serves every trial of the run, whatever
//! runtime the trials run on. A server is shared by every scenario that
//! names the same spec, started once (or once per trial with
//! `per_trial`), and stopped by [`shutdown_all`] at the end: its process
//! group is killed, nothing is left behind. A server that crashes gives
//! error results naming it, with the tail of its stderr, and is started
//! again for the next trial.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::backend::{ToolBackend, ToolCallContext, ToolFuture};
use super::{Effect, Metadata, ToolDef, ToolFailure, ToolFailureKind};

/// A tool of a server: its definition and what runs it.
pub type ServedTool = (ToolDef, Arc<dyn ToolBackend>);

/// Where an MCP server is: a command to start (stdio) or a URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program and its arguments, started with the server's stdio as
    /// the transport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Environment variables for the command (added to toolgauge's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The command's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How long start-up may take: spawned (or connected) to `initialize`
    /// answered and `tools/list` read [default: 30000].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
}

/// The start-up deadline when a server names none.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

impl McpServerSpec {
    /// A command line (`node server.js stdio`) or a URL, as given on the
    /// command line after `mcp:`.
    pub fn parse(text: &str) -> Result<McpServerSpec, McpError> {
        let text = text.trim();
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(McpServerSpec {
                url: Some(text.to_owned()),
                ..McpServerSpec::default()
            });
        }
        let command: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        let spec = McpServerSpec {
            command,
            ..McpServerSpec::default()
        };
        spec.check()?;
        Ok(spec)
    }

    /// Exactly one of a command and a URL.
    pub fn check(&self) -> Result<(), McpError> {
        match (self.command.is_empty(), &self.url) {
            (false, None) | (true, Some(_)) => Ok(()),
            _ => Err(McpError::Spec(
                "an MCP server needs a \"command\" (a list: program and arguments) or a \"url\", not both"
                    .into(),
            )),
        }
    }

    /// Spawn (or connect) to `initialize` answered and `tools/list` read.
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_millis(
            self.startup_timeout_ms
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS),
        )
    }

    /// How messages name the server.
    pub fn label(&self) -> String {
        self.url.clone().unwrap_or_else(|| self.command.join(" "))
    }
}

/// Why an MCP server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{0}")]
    Spec(String),
    #[error("MCP server {label}: cannot start: {message}{}", stderr_note(.stderr))]
    Start {
        label: String,
        message: String,
        stderr: String,
    },
    #[error("MCP server {label}: tools/list failed: {message}")]
    List { label: String, message: String },
    #[error(
        "MCP server {label}: the entry names {name:?}, which the server does not list (it lists {listed})"
    )]
    NotListed {
        label: String,
        name: String,
        listed: String,
    },
    #[error("cannot start the MCP runtime: {0}")]
    Runtime(std::io::Error),
}

/// rmcp's error text worded for a person: no Rust type names, no
/// internal plumbing ("Send message error Transport [rmcp::...]").
fn worded(message: &str) -> String {
    static TYPE_NAMES: OnceLock<regex::Regex> = OnceLock::new();
    let type_names = TYPE_NAMES
        .get_or_init(|| regex::Regex::new(r"\s*\[[^\]]*::[^\]]*\]").expect("a valid pattern"));
    let text = type_names.replace_all(message, "");
    text.replace("Send message error Transport error: ", "")
        .replace("Send message error Transport", "")
        .replace(", when send initialize request", " (sending initialize)")
        .replace("Client error: ", "")
        .trim()
        .to_owned()
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {stderr}")
    }
}

/// The runtime every MCP connection runs on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, McpError> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("toolgauge-mcp")
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    Ok(RUNTIME.get_or_init(|| runtime))
}

/// Run `future` on the servers' runtime and wait for it, from any thread:
/// from inside another runtime (a trial's), on a thread of its own.
fn block_on<F>(future: F) -> Result<F::Output, McpError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    let runtime = runtime()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(runtime.block_on(future));
    }
    std::thread::scope(|s| {
        s.spawn(|| runtime.block_on(future))
            .join()
            .map_err(|_| McpError::Spec("an MCP request panicked".into()))
    })
}

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 8;

/// The last lines a server wrote to stderr.
#[derive(Debug, Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    fn text(&self) -> String {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }
}

/// One started server.
struct Connection {
    service: RunningService<RoleClient, ()>,
    stderr: StderrTail,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

/// Stops still to finish: [`shutdown_all`] waits for them.
static STOPPING: Mutex<Vec<tokio::task::JoinHandle<()>>> = Mutex::new(Vec::new());

impl Connection {
    async fn start_with(spec: &McpServerSpec, stderr: StderrTail) -> Result<Connection, McpError> {
        let label = spec.label();
        let start_error = |message: String, stderr: &StderrTail| McpError::Start {
            label: label.clone(),
            message,
            stderr: stderr.text(),
        };
        let service = if let Some(url) = &spec.url {
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
            ().serve(transport)
                .await
                .map_err(|e| start_error(worded(&e.to_string()), &stderr))?
        } else {
            let mut command = tokio::process::Command::new(&spec.command[0]);
            command.args(&spec.command[1..]).envs(&spec.env);
            // Killed with toolgauge, however it dies; this runs on the
            // servers' runtime, whose thread lives as long as toolgauge.
            crate::child::die_with_us(&mut command);
            if let Some(cwd) = &spec.cwd {
                command.current_dir(cwd);
            }
            let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
            // Its whole process group goes when it is stopped.
            wrapped
                .wrap(process_wrap::tokio::ProcessGroup::leader())
                .wrap(process_wrap::tokio::KillOnDrop);
            let (transport, child_stderr) = rmcp::transport::TokioChildProcess::builder(wrapped)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| start_error(e.to_string(), &stderr))?;
            if let Some(child_stderr) = child_stderr {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncBufReadExt;
                    let mut lines = tokio::io::BufReader::new(child_stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tail.push(line);
                    }
                });
            }
            match ().serve(transport).await {
                Ok(service) => service,
                Err(e) => {
                    // Let the stderr reader catch the server's last words.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return Err(start_error(worded(&e.to_string()), &stderr));
                }
            }
        };
        Ok(Connection { service, stderr })
    }

    /// [`Connection::start`] within the start-up deadline, waited for from
    /// any thread. A server that lets it pass is dropped, and its process
    /// group with it.
    fn start_blocking(spec: &McpServerSpec) -> Result<Connection, McpError> {
        let deadline = spec.startup_timeout();
        let owned = spec.clone();
        // Spawned as a task of the servers' runtime: the child is started
        // from its thread, which the death signal follows.
        let started = runtime()?.spawn(async move {
            let spec = &owned;
            let stderr = StderrTail::default();
            match tokio::time::timeout(deadline, Connection::start_with(spec, stderr.clone())).await
            {
                Ok(started) => started,
                Err(_) => Err(McpError::Start {
                    label: spec.label(),
                    message: format!(
                        "no answer to initialize within {} ms (startup_timeout_ms); is it an MCP server speaking JSON-RPC on its stdout?",
                        deadline.as_millis()
                    ),
                    stderr: stderr.text(),
                }),
            }
        });
        block_on(started)?
            .map_err(|e| McpError::Spec(format!("the MCP start-up task failed: {e}")))?
    }

    /// Stop the server in the background; [`shutdown_all`] waits for it.
    fn stop(self) {
        let Ok(runtime) = runtime() else { return };
        let handle = runtime.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
        });
        if let Ok(mut stopping) = STOPPING.lock() {
            stopping.retain(|h| !h.is_finished());
            stopping.push(handle);
        }
    }

    fn crashed(&self) -> bool {
        self.service.is_transport_closed() || self.service.is_closed()
    }
}

/// Per tool source: start-ups and `tools/call` round trips.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SourceStats {
    /// The server, as messages name it.
    pub source: String,
    pub startups: u64,
    pub startup_ms_mean: f64,
    pub calls: u64,
    pub call_errors: u64,
    pub call_ms_p50: f64,
    pub call_ms_p95: f64,
}

#[derive(Debug)]
struct Measures {
    startups: Vec<Duration>,
    /// Round trips in microseconds: memory that does not grow with calls.
    calls: hdrhistogram::Histogram<u64>,
    call_errors: u64,
}

impl Default for Measures {
    fn default() -> Self {
        let mut calls =
            hdrhistogram::Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
        calls.auto(true);
        Measures {
            startups: Vec::new(),
            calls,
            call_errors: 0,
        }
    }
}

/// Every server of the run, by spec.
static SERVERS: Mutex<Vec<Arc<McpServer>>> = Mutex::new(Vec::new());
/// Tells trials apart, so a crashed server restarts for the next one.
static NEXT_TRIAL: AtomicU64 = AtomicU64::new(1);

/// A fresh trial number.
pub(super) fn next_trial() -> u64 {
    NEXT_TRIAL.fetch_add(1, Ordering::Relaxed)
}

/// A server as the run knows it: started once, restarted after a crash.
#[derive(Debug)]
pub struct McpServer {
    spec: McpServerSpec,
    label: String,
    slot: Mutex<Slot>,
    measures: Mutex<Measures>,
}

#[derive(Debug)]
enum Slot {
    Up(Arc<Connection>),
    /// Crashed during `trial`, and why.
    Down {
        trial: u64,
        message: String,
    },
}

impl McpServer {
    /// The run's server for `spec`, started if it is not yet.
    pub fn open(spec: &McpServerSpec) -> Result<Arc<McpServer>, McpError> {
        spec.check()?;
        let mut servers = SERVERS
            .lock()
            .map_err(|_| McpError::Spec("poisoned".into()))?;
        if let Some(server) = servers.iter().find(|s| &s.spec == spec) {
            return Ok(server.clone());
        }
        let started = Instant::now();
        let connection = Connection::start_blocking(spec)?;
        let server = Arc::new(McpServer {
            spec: spec.clone(),
            label: spec.label(),
            slot: Mutex::new(Slot::Up(Arc::new(connection))),
            measures: Mutex::new(Measures {
                startups: vec![started.elapsed()],
                ..Measures::default()
            }),
        });
        servers.push(server.clone());
        Ok(server)
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The server's tools (`only` those, if given), as definitions whose
    /// calls go to the server: reads where the server's annotations say
    /// `readOnlyHint` or `read` names them, writes otherwise.
    pub fn tools(
        self: &Arc<McpServer>,
        only: Option<&[String]>,
        read: &[String],
        per_trial: bool,
    ) -> Result<Vec<ServedTool>, McpError> {
        let connection = self.connection(0).map_err(|e| McpError::List {
            label: self.label.clone(),
            message: e.message,
        })?;
        let deadline = self.spec.startup_timeout();
        // The timer is made inside the servers' runtime.
        let listed = block_on(async {
            tokio::time::timeout(deadline, connection.service.list_all_tools()).await
        })?
        .map_err(|_| McpError::List {
            label: self.label.clone(),
            message: format!(
                "no answer within {} ms (startup_timeout_ms)",
                deadline.as_millis()
            ),
        })?
        .map_err(|e| McpError::List {
            label: self.label.clone(),
            message: e.to_string(),
        })?;
        let named = only.into_iter().flatten().chain(read);
        if let Some(missing) = named
            .into_iter()
            .find(|n| !listed.iter().any(|t| t.name == **n))
        {
            return Err(McpError::NotListed {
                label: self.label.clone(),
                name: missing.clone(),
                listed: listed
                    .iter()
                    .map(|t| t.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Ok(listed
            .into_iter()
            .filter(|t| only.is_none_or(|only| only.iter().any(|n| *n == t.name)))
            .map(|tool| {
                let name = tool.name.to_string();
                let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint)
                    == Some(true)
                    || read.contains(&name);
                let mut other = BTreeMap::new();
                other.insert("mcp_server".to_owned(), Value::from(self.label.clone()));
                if let Some(annotations) = &tool.annotations
                    && let Ok(value) = serde_json::to_value(annotations)
                {
                    other.insert("mcp_annotations".to_owned(), value);
                }
                let def = ToolDef {
                    name: name.clone(),
                    description: tool.description.as_deref().unwrap_or_default().to_owned(),
                    parameters: Value::Object((*tool.input_schema).clone()),
                    effect: if read_only {
                        Effect::Read
                    } else {
                        Effect::Write
                    },
                    timeout_ms: super::DEFAULT_TIMEOUT_MS,
                    metadata: Some(Metadata {
                        category: Some("mcp".into()),
                        other,
                        ..Metadata::default()
                    }),
                    simulate: None,
                    http: None,
                    command: None,
                };
                let backend: Arc<dyn ToolBackend> = Arc::new(McpTool {
                    server: self.clone(),
                    name,
                    per_trial,
                });
                (def, backend)
            })
            .collect())
    }

    /// The connection for `trial`: the running one, or a new one if the
    /// server crashed in an earlier trial.
    fn connection(&self, trial: u64) -> Result<Arc<Connection>, ToolFailure> {
        let mut slot = self
            .slot
            .lock()
            .map_err(|_| ToolFailure::runtime("the MCP server's lock is poisoned"))?;
        match &*slot {
            Slot::Up(connection) if !connection.crashed() => return Ok(connection.clone()),
            Slot::Up(connection) => {
                let message = self.stopped_message(&connection.stderr);
                let old = std::mem::replace(&mut *slot, Slot::Down { trial, message });
                retire(old);
            }
            Slot::Down { .. } => {}
        }
        if let Slot::Down {
            trial: crashed_in,
            message,
        } = &*slot
            && *crashed_in == trial
        {
            return Err(ToolFailure::unavailable(message.clone()));
        }
        let started = Instant::now();
        let connection = Connection::start_blocking(&self.spec)
            .map_err(|e| ToolFailure::unavailable(e.to_string()))?;
        self.measured(|m| m.startups.push(started.elapsed()));
        let connection = Arc::new(connection);
        *slot = Slot::Up(connection.clone());
        Ok(connection)
    }

    fn stopped_message(&self, stderr: &StderrTail) -> String {
        format!(
            "the MCP server {} stopped{} (it is started again for the next trial)",
            self.label,
            stderr_note(&stderr.text())
        )
    }

    /// Mark the server crashed during `trial` (a call found it closed).
    fn mark_crashed(&self, trial: u64, connection: &Connection) -> String {
        let message = self.stopped_message(&connection.stderr);
        self.mark_down(trial, connection, &message);
        message
    }

    /// Mark the server hung during `trial`: a call's timeout fired first.
    fn mark_hung(&self, trial: u64, connection: &Connection) {
        let message = format!(
            "the MCP server {} did not answer a call in time (it is started again for the next trial)",
            self.label
        );
        self.mark_down(trial, connection, &message);
    }

    fn mark_down(&self, trial: u64, connection: &Connection, message: &str) {
        if let Ok(mut slot) = self.slot.lock()
            && matches!(&*slot, Slot::Up(c) if std::ptr::eq(&**c, connection))
        {
            let old = std::mem::replace(
                &mut *slot,
                Slot::Down {
                    trial,
                    message: message.to_owned(),
                },
            );
            retire(old);
        }
    }

    fn measured(&self, f: impl FnOnce(&mut Measures)) {
        if let Ok(mut measures) = self.measures.lock() {
            f(&mut measures);
        }
    }

    /// Start-ups and round trips so far.
    pub fn stats(&self) -> SourceStats {
        let Ok(measures) = self.measures.lock() else {
            return SourceStats::default();
        };
        let (startups, calls, call_errors) =
            (&measures.startups, &measures.calls, measures.call_errors);
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let percentile = |p: f64| {
            if calls.is_empty() {
                0.0
            } else {
                calls.value_at_quantile(p) as f64 / 1000.0
            }
        };
        SourceStats {
            source: self.label.clone(),
            startups: startups.len() as u64,
            startup_ms_mean: if startups.is_empty() {
                0.0
            } else {
                startups.iter().map(|d| ms(*d)).sum::<f64>() / startups.len() as f64
            },
            calls: calls.len(),
            call_errors,
            call_ms_p50: percentile(0.5),
            call_ms_p95: percentile(0.95),
        }
    }

    /// One `tools/call` on `connection`, as a tool's output or failure.
    async fn call(
        &self,
        connection: &Connection,
        trial: u64,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<String, ToolFailure> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments.clone());
        let started = Instant::now();
        // Dropped unanswered (the tool's timeout fired): the server is
        // taken as hung, and started again for the next trial.
        let mut unanswered = Unanswered {
            server: self,
            connection,
            trial,
            answered: false,
        };
        let answer = connection.service.call_tool_once(params).await;
        unanswered.answered = true;
        let elapsed = started.elapsed();
        let outcome = match answer {
            Ok(CallToolResponse::Complete(result)) => result_output(result),
            Ok(_) => Err(ToolFailure::runtime(format!(
                "the MCP server {} asked for input or made a task, which toolgauge does not answer",
                self.label
            ))),
            Err(ServiceError::McpError(error)) => Err(ToolFailure::new(
                if error.code.0 == INVALID_PARAMS {
                    ToolFailureKind::Invalid
                } else {
                    ToolFailureKind::Runtime
                },
                format!("MCP error {}: {}", error.code.0, error.message),
            )),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                // Let the stderr reader catch the server's last words.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(ToolFailure::unavailable(
                    self.mark_crashed(trial, connection),
                ))
            }
            Err(other) => Err(ToolFailure::runtime(format!(
                "MCP server {}: {other}",
                self.label
            ))),
        };
        self.measured(|m| {
            let _ = m.calls.record((elapsed.as_micros() as u64).max(1));
            if outcome.is_err() {
                m.call_errors += 1;
            }
        });
        outcome
    }
}

/// A call on its way: marks the server hung if it is dropped unanswered.
struct Unanswered<'a> {
    server: &'a McpServer,
    connection: &'a Connection,
    trial: u64,
    answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.server.mark_hung(self.trial, self.connection);
        }
    }
}

/// A server's connection put out of use: dropped on the servers' runtime,
/// where its process is killed (once no call holds it any more).
fn retire(slot: Slot) {
    if let (Slot::Up(connection), Ok(runtime)) = (slot, runtime()) {
        runtime.spawn(async move { drop(connection) });
    }
}

/// JSON-RPC's "invalid params", which MCP servers answer for arguments
/// that break a tool's schema.
const INVALID_PARAMS: i32 = -32602;

/// A `tools/call` result as a tool's output: its text blocks (other
/// blocks as JSON), or its structured content when it has no text. An
/// `isError` result is a failure with that text; one that says "MCP error
/// -32602" (servers built on the TypeScript SDK word schema failures so)
/// is a refusal of the arguments.
fn result_output(result: CallToolResult) -> Result<String, ToolFailure> {
    let mut text = String::new();
    for block in &result.content {
        if !text.is_empty() {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            other => text.push_str(&serde_json::to_string(other).unwrap_or_default()),
        }
    }
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    if result.is_error != Some(true) {
        return Ok(text);
    }
    let kind = if text.starts_with("MCP error -32602") {
        ToolFailureKind::Invalid
    } else {
        ToolFailureKind::Runtime
    };
    Err(ToolFailure::new(kind, text))
}

/// A tool of an MCP server.
#[derive(Debug)]
struct McpTool {
    server: Arc<McpServer>,
    name: String,
    /// A fresh server per trial, for stateful servers.
    per_trial: bool,
}

/// A trial's own server, stopped when the trial's state goes.
#[derive(Debug)]
struct TrialServer(Option<Connection>);

impl Drop for TrialServer {
    fn drop(&mut self) {
        if let Some(connection) = self.0.take() {
            connection.stop();
        }
    }
}

impl McpTool {
    /// The trial's own server, started on first use.
    fn trial_server(
        &self,
        state: &super::ToolState,
    ) -> Result<super::registry::TrialResource, String> {
        let key = Arc::as_ptr(&self.server) as usize;
        state.resource(key, || {
            let started = Instant::now();
            let connection =
                Connection::start_blocking(&self.server.spec).map_err(|e| e.to_string());
            self.server.measured(|m| m.startups.push(started.elapsed()));
            connection.map(|c| Arc::new(TrialServer(Some(c))) as super::registry::TrialResource)
        })
    }
}

impl ToolBackend for McpTool {
    fn is_real(&self) -> bool {
        true
    }

    /// A per-trial server starts with the trial, before its clock runs,
    /// so its start-up is not tool time. (A start that fails is tried
    /// again, and reported, by the first call.)
    fn prepare(&self, state: &super::ToolState) {
        if self.per_trial {
            let _ = self.trial_server(state);
        }
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let trial = call.state.trial;
            if !self.per_trial {
                let connection = self.server.connection(trial)?;
                return self
                    .server
                    .call(&connection, trial, &self.name, call.arguments)
                    .await;
            }
            let own = self
                .trial_server(call.state)
                .map_err(ToolFailure::unavailable)?;
            let Some(TrialServer(Some(connection))) = own.downcast_ref::<TrialServer>() else {
                return Err(ToolFailure::unavailable("the trial's MCP server is gone"));
            };
            if connection.crashed() {
                return Err(ToolFailure::unavailable(
                    self.server.stopped_message(&connection.stderr),
                ));
            }
            self.server
                .call(connection, trial, &self.name, call.arguments)
                .await
        })
    }
}

/// The measures of servers already stopped.
static STOPPED: Mutex<Vec<SourceStats>> = Mutex::new(Vec::new());

/// Every server of the run with its measures, in the order they started
/// (those stopped by [`shutdown_all`] too).
pub fn source_stats() -> Vec<SourceStats> {
    let mut stats = STOPPED.lock().map(|s| s.clone()).unwrap_or_default();
    if let Ok(servers) = SERVERS.lock() {
        stats.extend(servers.iter().map(|s| s.stats()));
    }
    stats
}

/// Stop every server (run-wide ones and trials' own) and wait until they
/// are gone.
pub fn shutdown_all() {
    let servers: Vec<Arc<McpServer>> = SERVERS
        .lock()
        .map(|mut servers| std::mem::take(&mut *servers))
        .unwrap_or_default();
    for server in servers {
        if let Ok(mut stopped) = STOPPED.lock() {
            stopped.push(server.stats());
        }
        if let Ok(mut slot) = server.slot.lock()
            && let Slot::Up(connection) = std::mem::replace(
                &mut *slot,
                Slot::Down {
                    trial: 0,
                    message: "stopped".into(),
                },
            )
        {
            match Arc::try_unwrap(connection) {
                Ok(connection) => connection.stop(),
                // Still held by a call: dropped, which kills its process
                // (on the servers' runtime, where the kill runs).
                Err(shared) => {
                    if let Ok(runtime) = runtime() {
                        let _entered = runtime.enter();
                        drop(shared);
                    }
                }
            }
        }
    }
    let stopping: Vec<_> = STOPPING
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    let _ = block_on(async {
        for handle in stopping {
            let _ = handle.await;
        }
    });
}
