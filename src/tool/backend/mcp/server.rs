//! A server as a run knows it ([`McpServer`]: started once, started again
//! after a crash, its start-ups and round trips measured) and its tools
//! as backends ([`McpTool`]), on the run-wide server or a trial's own.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::ServiceError;
use serde_json::{Map, Value};

use super::client::Asked;
use super::connection::{Connection, Route, Starting};
use super::fork::ForkSlot;
use super::hub::Hub;
use super::output;
use super::process::StderrTail;
use super::stats::SourceStats;
use super::{McpError, McpServerSpec, ServedTool, stderr_note};
use crate::tool::backend::{OutputFuture, ToolBackend, ToolCallContext, ToolFuture, ToolOutput};
use crate::tool::registry::TrialResource;
use crate::tool::{Effect, ToolFailure, ToolFailureKind, ToolState};

#[derive(Debug)]
struct Measures {
    startups: Vec<Duration>,
    /// Round trips in microseconds: memory that does not grow with calls.
    calls: hdrhistogram::Histogram<u64>,
    call_errors: u64,
    bad_outputs: u64,
    protocol: String,
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
            bad_outputs: 0,
            protocol: String::new(),
        }
    }
}

/// A server as the run knows it: started once, restarted after a crash.
#[derive(Debug)]
pub struct McpServer {
    hub: Arc<Hub>,
    spec: McpServerSpec,
    label: String,
    /// The running connection; none after a crash, until the next trial
    /// starts it again.
    slot: Mutex<Option<Arc<Connection>>>,
    measures: Mutex<Measures>,
    /// The server's requests of the client, over all its connections.
    asked: Arc<Asked>,
    /// Its forker, for a server that forks a child per connection.
    fork: Option<Arc<ForkSlot>>,
}

impl McpServer {
    pub(super) fn new(
        hub: Arc<Hub>,
        spec: McpServerSpec,
        connection: Connection,
        startup: Duration,
        asked: Arc<Asked>,
        fork: Option<Arc<ForkSlot>>,
    ) -> McpServer {
        McpServer {
            hub,
            fork,
            label: spec.label(),
            spec,
            measures: Mutex::new(Measures {
                startups: vec![startup],
                protocol: connection.protocol.clone(),
                ..Measures::default()
            }),
            slot: Mutex::new(Some(Arc::new(connection))),
            asked,
        }
    }

    pub(super) fn spec(&self) -> &McpServerSpec {
        &self.spec
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The server's tools (`only` those, if given), as definitions whose
    /// calls go to the server: reads where the server's annotations say
    /// `readOnlyHint` or `read` names them, writes otherwise. With
    /// `per_trial`, each trial starts a server of its own, its command
    /// given these arguments more. Without `validate`, toolgauge refuses
    /// no call for its schema: the server's own answer is what the model
    /// sees.
    pub fn tools(
        self: &Arc<McpServer>,
        only: Option<&[String]>,
        read: &[String],
        per_trial: Option<&[String]>,
        validate: bool,
    ) -> Result<Vec<ServedTool>, McpError> {
        let per_trial: Option<Arc<[String]>> = per_trial.map(Arc::from);
        let listed = self.asked(
            "tools/list",
            |c| async move { c.service.list_all_tools().await },
        )?;
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
                // Kept for the definition checks: one that does not
                // compile leaves the tool's results unchecked.
                if let Some(schema) = &tool.output_schema {
                    other.insert(
                        output::OUTPUT_SCHEMA_KEY.to_owned(),
                        Value::Object((**schema).clone()),
                    );
                }
                let def = super::served_definition(
                    name.clone(),
                    tool.description.as_deref().unwrap_or_default().to_owned(),
                    Value::Object((*tool.input_schema).clone()),
                    if read_only {
                        Effect::Read
                    } else {
                        Effect::Write
                    },
                    other,
                );
                let backend: Arc<dyn ToolBackend> = Arc::new(McpTool {
                    server: self.clone(),
                    name,
                    per_trial: per_trial.clone(),
                    takes_any_arguments: !validate,
                    output: output::validator(tool.output_schema.as_deref()),
                    reads_resources: false,
                });
                (def, backend)
            })
            .collect())
    }

    /// A tool named `name` that reads this server's resources.
    pub fn resource_tool(
        self: &Arc<McpServer>,
        name: &str,
        per_trial: Option<&[String]>,
    ) -> Result<ServedTool, McpError> {
        let listed = self.asked("resources/list", |c| async move {
            c.service.list_all_resources().await
        })?;
        let backend = Arc::new(McpTool {
            server: self.clone(),
            name: String::new(),
            per_trial: per_trial.map(Arc::from),
            takes_any_arguments: false,
            output: None,
            reads_resources: true,
        });
        let def = super::resources::resource_tool_def(name, &self.label, &listed);
        Ok((def, backend))
    }

    /// The messages `prompts/get` gives for `name` with `arguments`, as a
    /// conversation's opening.
    pub fn prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Vec<Value>, McpError> {
        let params =
            rmcp::model::GetPromptRequestParams::new(name).with_arguments(arguments.clone());
        let got = self.asked("prompts/get", |c| async move {
            c.service.get_prompt(params).await
        })?;
        super::resources::opening(&got).ok_or_else(|| McpError::Asked {
            label: self.label.clone(),
            method: "prompts/get",
            message: format!("prompt {name:?} has no messages"),
        })
    }

    /// `ask` of the run-wide connection (`method`, for messages), within
    /// the start-up deadline: what the server lists or gives.
    pub(super) fn asked<T, F, Fut>(&self, method: &'static str, ask: F) -> Result<T, McpError>
    where
        F: FnOnce(Arc<Connection>) -> Fut + Send,
        Fut: Future<Output = Result<T, ServiceError>> + Send,
        T: Send,
    {
        let failed = |message: String| McpError::Asked {
            label: self.label.clone(),
            method,
            message,
        };
        let connection = self.connection(None).map_err(|e| failed(e.message))?;
        let deadline = self.spec.startup_timeout();
        // The timer is made inside the servers' runtime.
        self.hub
            .block_on(async { tokio::time::timeout(deadline, ask(connection)).await })?
            .map_err(|_| {
                failed(format!(
                    "no answer within {} ms (startup_timeout_ms)",
                    deadline.as_millis()
                ))
            })?
            .map_err(|e| failed(e.to_string()))
    }

    /// The connection for a trial: the running one, or a new one if the
    /// server went down before. A server found down now is down for the
    /// rest of `trial`.
    fn connection(&self, trial: Option<&ToolState>) -> Result<Arc<Connection>, ToolFailure> {
        if self.hub.is_closed() {
            return Err(ToolFailure::unavailable(format!(
                "the MCP server {} is stopped: the run is over",
                self.label
            )));
        }
        let mut slot = self
            .slot
            .lock()
            .map_err(|_| ToolFailure::runtime("the MCP server's lock is poisoned"))?;
        if let Some(connection) = &*slot {
            if !connection.crashed() {
                return Ok(connection.clone());
            }
            let message = self.stopped_message(&connection.stderr);
            self.take_down(&mut slot);
            if let Some(state) = trial {
                state.note_down(self.key(), message.clone());
                return Err(ToolFailure::unavailable(message));
            }
        }
        let started = Instant::now();
        let connection =
            Connection::start_blocking(&self.hub, &self.spec, &self.asked, self.route(&[]))
                .map_err(|e| ToolFailure::unavailable(e.to_string()))?;
        self.measured(|m| {
            m.startups.push(started.elapsed());
            m.protocol.clone_from(&connection.protocol);
        });
        let connection = Arc::new(connection);
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// How a connection given `trial_args` reaches the server: a child of
    /// its forker, or a process (or endpoint) of its own.
    fn route(&self, trial_args: &[String]) -> Route {
        match &self.fork {
            Some(slot) => Route::Forked(slot.clone(), trial_args.to_vec()),
            None => Route::Own,
        }
    }

    /// How a trial's state names this server.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn take_down(&self, slot: &mut Option<Arc<Connection>>) {
        if let Some(connection) = slot.take() {
            connection.retire(&self.hub);
        }
    }

    /// Stopped by the owner: its forker goes with the last connection
    /// that holds it.
    pub(super) fn stop(&self) {
        if let Ok(mut slot) = self.slot.lock() {
            self.take_down(&mut slot);
        }
        if let Some(forker) = self.fork.as_ref().and_then(|f| f.take()) {
            self.hub.drop_inside(forker);
        }
    }

    fn stopped_message(&self, stderr: &StderrTail) -> String {
        format!(
            "the MCP server {} stopped{} (it is started again for the next trial)",
            self.label,
            stderr_note(&stderr.text())
        )
    }

    /// Mark the server crashed during `trial` (a call found it closed).
    fn mark_crashed(&self, trial: &ToolState, connection: &Connection) -> String {
        let message = self.stopped_message(&connection.stderr);
        self.mark_down(trial, connection, &message);
        message
    }

    /// Mark the server hung during `trial`: a call's timeout fired first.
    fn mark_hung(&self, trial: &ToolState, connection: &Connection) {
        let message = format!(
            "the MCP server {} did not answer a call in time (it is started again for the next trial)",
            self.label
        );
        self.mark_down(trial, connection, &message);
    }

    /// Take the run-wide server down if `connection` is still it (a
    /// trial's own server is the trial's business).
    fn mark_down(&self, trial: &ToolState, connection: &Connection, message: &str) {
        if let Ok(mut slot) = self.slot.lock()
            && matches!(&*slot, Some(c) if std::ptr::eq(&**c, connection))
        {
            self.take_down(&mut slot);
            trial.note_down(self.key(), message.to_owned());
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
            bad_outputs: measures.bad_outputs,
            protocol: measures.protocol.clone(),
            elicitations: self.asked.elicitations.load(Ordering::SeqCst),
            samplings: self.asked.samplings.load(Ordering::SeqCst),
            startup_ms_first: startups.first().map_or(0.0, |d| ms(*d)),
        }
    }

    /// One `tools/call` on `connection`, as a tool's output or failure.
    async fn call(
        &self,
        connection: &Connection,
        trial: &ToolState,
        name: &str,
        arguments: &Map<String, Value>,
        output: Option<&crate::schema::Compiled>,
    ) -> Result<ToolOutput, ToolFailure> {
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
            Ok(CallToolResponse::Complete(result)) => output::result_output(result, output),
            Ok(_) => Err(ToolFailure::runtime(format!(
                "the MCP server {} asked for input or made a task, which toolgauge does not answer",
                self.label
            ))),
            Err(ServiceError::McpError(error)) => {
                Err(output::rpc_failure(&error, &[output::INVALID_PARAMS]))
            }
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                if connection
                    .oversized
                    .load(std::sync::atomic::Ordering::SeqCst) =>
            {
                let message = format!(
                    "the MCP server {} sent a message of more than {} MiB, over the limit of one result (it is started again for the next trial)",
                    self.label,
                    super::connection::MESSAGE_LIMIT >> 20
                );
                self.mark_down(trial, connection, &message);
                Err(ToolFailure::unavailable(message))
            }
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                // Let the stderr reader catch the server's last words.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(ToolFailure::unavailable(
                    self.mark_crashed(trial, connection),
                ))
            }
            // An answer that is no tool result (`"result": "not an
            // object"`) is the server's fault, never the model's.
            Err(other) => Err(ToolFailure::unavailable(format!(
                "the MCP server {} answered tools/call with what is not a tool result ({other})",
                self.label
            ))),
        };
        self.measured(|m| {
            let _ = m.calls.record((elapsed.as_micros() as u64).max(1));
            if let Err(failure) = &outcome {
                m.call_errors += 1;
                m.bad_outputs += u64::from(failure.kind == ToolFailureKind::BadOutput);
            }
        });
        outcome
    }
}

/// A call on its way: marks the server hung if it is dropped unanswered.
struct Unanswered<'a> {
    server: &'a McpServer,
    connection: &'a Connection,
    trial: &'a ToolState,
    answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.server.mark_hung(self.trial, self.connection);
        }
    }
}

/// A tool of an MCP server.
#[derive(Debug)]
struct McpTool {
    server: Arc<McpServer>,
    name: String,
    /// A fresh server per trial, for stateful servers, started with
    /// these arguments added to the command.
    per_trial: Option<Arc<[String]>>,
    /// Calls go to the server whatever their arguments.
    takes_any_arguments: bool,
    /// Its `outputSchema`, compiled as arguments' schemas are.
    output: Option<Arc<crate::schema::Compiled>>,
    /// The tool that reads the server's resources (`resources/read` of
    /// its `uri`), not one of its tools.
    reads_resources: bool,
}

impl McpTool {
    /// The call on `connection`: a `tools/call`, or a `resources/read`.
    async fn on(
        &self,
        connection: &Connection,
        trial: &ToolState,
        arguments: &Map<String, Value>,
    ) -> Result<ToolOutput, ToolFailure> {
        if self.reads_resources {
            let uri = arguments
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return super::resources::read(&self.server.label, connection, uri)
                .await
                .map(ToolOutput::from);
        }
        self.server
            .call(
                connection,
                trial,
                &self.name,
                arguments,
                self.output.as_deref(),
            )
            .await
    }
}

/// A trial's own server: started when the trial begins (on the servers'
/// runtime, while the trial's own thread goes on), awaited by its first
/// call, stopped when the trial's state goes.
#[derive(Debug)]
struct TrialServer {
    hub: Arc<Hub>,
    /// The start under way, until a call has awaited it.
    starting: tokio::sync::Mutex<Option<Starting>>,
    connection: tokio::sync::OnceCell<Result<Connection, ToolFailure>>,
}

impl TrialServer {
    /// The connection, once the start is done (its time measured).
    async fn connection(&self, server: &McpServer) -> Result<&Connection, ToolFailure> {
        let ready = self
            .connection
            .get_or_init(|| async {
                let mut starting = self.starting.lock().await;
                let Some(handle) = starting.as_mut() else {
                    return Err(ToolFailure::unavailable("the trial's MCP server is gone"));
                };
                // Taken at once when done: a call cancelled while waiting
                // leaves the start to the next one.
                let outcome = handle.await;
                *starting = None;
                match outcome {
                    Ok((started, took)) => {
                        server.measured(|m| {
                            m.startups.push(took);
                            if let Ok(connection) = &started {
                                m.protocol.clone_from(&connection.protocol);
                            }
                        });
                        started.map_err(|e| ToolFailure::unavailable(e.to_string()))
                    }
                    Err(_) => Err(ToolFailure::unavailable(format!(
                        "the MCP server {} could not start",
                        server.label
                    ))),
                }
            })
            .await;
        ready.as_ref().map_err(Clone::clone)
    }
}

impl Drop for TrialServer {
    fn drop(&mut self) {
        if let Some(Ok(connection)) = self.connection.take() {
            connection.stop(&self.hub);
        }
        // A start never awaited: stopped once it is done.
        if let Some(handle) = self.starting.get_mut().take() {
            self.hub.stop_later(async move {
                if let Ok((Ok(connection), _)) = handle.await {
                    connection.close().await;
                }
            });
        }
    }
}

/// In `trial_args`, the folder a chain of scenarios shares.
pub const CHAIN_DIR: &str = "{chain_dir}";

/// `trial_args` with `{chain_dir}` filled in from the trial's state.
fn with_chain_dir(trial_args: &[String], state: &ToolState) -> Result<Vec<String>, ToolFailure> {
    if !trial_args.iter().any(|a| a.contains(CHAIN_DIR)) {
        return Ok(trial_args.to_vec());
    }
    let folder = match state.chain_dir() {
        Some(Ok(folder)) => folder,
        Some(Err(why)) => return Err(ToolFailure::unavailable(why.to_string())),
        None => {
            return Err(ToolFailure::unavailable(
                "\"trial_args\" name {chain_dir}, but the trial was given no chain folder",
            ));
        }
    };
    let folder = folder.to_string_lossy();
    Ok(trial_args
        .iter()
        .map(|a| a.replace(CHAIN_DIR, &folder))
        .collect())
}

impl McpTool {
    /// The trial's own server, its start begun on first use.
    fn trial_server(
        &self,
        state: &ToolState,
        trial_args: &[String],
    ) -> Result<TrialResource, ToolFailure> {
        let server = &self.server;
        if server.hub.is_closed() {
            return Err(ToolFailure::unavailable(format!(
                "the MCP server {} is stopped: the run is over",
                server.label
            )));
        }
        state.resource(server.key(), || {
            let trial_args = &with_chain_dir(trial_args, state)?;
            let mut spec = server.spec.clone();
            if server.fork.is_none() {
                spec.command.extend(trial_args.iter().cloned());
            }
            let route = server.route(trial_args);
            let starting = Connection::start_later(&server.hub, &spec, &server.asked, route)
                .map_err(|e| ToolFailure::unavailable(e.to_string()))?;
            let own = TrialServer {
                hub: server.hub.clone(),
                starting: tokio::sync::Mutex::new(Some(starting)),
                connection: tokio::sync::OnceCell::new(),
            };
            Ok(Arc::new(own) as TrialResource)
        })
    }
}

impl ToolBackend for McpTool {
    fn is_real(&self) -> bool {
        true
    }

    fn takes_any_arguments(&self) -> bool {
        self.takes_any_arguments
    }

    fn uses_chain_dir(&self) -> bool {
        self.per_trial
            .as_ref()
            .is_some_and(|args| args.iter().any(|a| a.contains(CHAIN_DIR)))
    }

    /// A per-trial server starts with the trial, before its clock runs,
    /// so its start-up is not tool time; the trial does not wait for it
    /// until its first call. (A start that fails is reported by that call.)
    fn prepare(&self, state: &ToolState) {
        if let Some(args) = &self.per_trial {
            let _ = self.trial_server(state, args);
        }
    }

    /// The trial's own server started (a start that failed is reported
    /// by the first call).
    fn ready<'a>(
        &'a self,
        state: &'a ToolState,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if let Some(args) = &self.per_trial
                && let Ok(own) = self.trial_server(state, args)
                && let Some(own) = own.downcast_ref::<TrialServer>()
            {
                let _ = own.connection(&self.server).await;
            }
        })
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        let output = self.run_output(call);
        Box::pin(async move { output.await.map(|output| output.text) })
    }

    fn run_output<'a>(&'a self, call: ToolCallContext<'a>) -> OutputFuture<'a> {
        Box::pin(async move {
            let trial = call.state;
            let Some(trial_args) = &self.per_trial else {
                if let Some(message) = trial.went_down(self.server.key()) {
                    return Err(ToolFailure::unavailable(message));
                }
                let connection = self.server.connection(Some(trial))?;
                return self.on(&connection, trial, call.arguments.as_map()).await;
            };
            let own = self.trial_server(trial, trial_args)?;
            let Some(own) = own.downcast_ref::<TrialServer>() else {
                return Err(ToolFailure::unavailable("the trial's MCP server is gone"));
            };
            let connection = own.connection(&self.server).await?;
            if connection.crashed() {
                return Err(ToolFailure::unavailable(
                    self.server.stopped_message(&connection.stderr),
                ));
            }
            self.on(connection, trial, call.arguments.as_map()).await
        })
    }
}
