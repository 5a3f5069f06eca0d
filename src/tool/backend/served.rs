//! Tools served outside toolgauge with a definition written inline: an
//! HTTP endpoint (`"http": {...}`) or a command (`"command": [...]`).
//! Both are slow and real: they run on the real clock, within the tool's
//! timeout, which the pipeline applies.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ToolBackend, ToolCallContext, ToolFuture};
use crate::tool::{HttpSend as Send, HttpTool};
use crate::tool::{ToolFailure, ToolFailureKind};
use crate::transport::{Transport, TransportError, TransportSettings};

/// How much of an error body an error result carries.
const BODY_EXCERPT: usize = 512;

/// An [`HttpTool`] ready to call: one try per call (tools are not
/// retried unless the model tries again).
pub(in crate::tool) struct HttpBackend {
    tool: HttpTool,
    method: reqwest::Method,
    headers: Vec<(&'static str, String)>,
    transport: Transport,
}

impl std::fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBackend")
            .field("tool", &self.tool)
            .finish()
    }
}

/// Why a definition's `http` or `command` cannot serve it.
#[derive(Debug, thiserror::Error)]
pub enum ServedError {
    #[error("{0:?} is not an HTTP method")]
    Method(String),
    #[error("{0:?} is not an http:// or https:// URL")]
    Url(String),
    #[error(transparent)]
    Client(#[from] crate::transport::ClientError),
    #[error("\"command\" needs a program: [\"python3\", \"tool.py\"]")]
    NoProgram,
}

impl HttpBackend {
    pub(in crate::tool) fn new(
        tool: &HttpTool,
        timeout: std::time::Duration,
    ) -> Result<Self, ServedError> {
        let method = reqwest::Method::from_bytes(tool.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| ServedError::Method(tool.method.clone()))?;
        if !(tool.url.starts_with("http://") || tool.url.starts_with("https://")) {
            return Err(ServedError::Url(tool.url.clone()));
        }
        let transport = Transport::new(&TransportSettings {
            timeout,
            max_attempts: 1,
            retry_base: std::time::Duration::ZERO,
            concurrency: 64,
            requests_per_minute: None,
        })?;
        // Header names must live as long as the transport's requests.
        let headers = tool
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    &*Box::leak(k.to_ascii_lowercase().into_boxed_str()),
                    v.clone(),
                )
            })
            .collect();
        Ok(HttpBackend {
            tool: tool.clone(),
            method,
            headers,
            transport,
        })
    }

    async fn call(&self, arguments: &Map<String, Value>) -> Result<String, ToolFailure> {
        let sent = match self.tool.send {
            Send::Json => {
                let body = serde_json::to_vec(arguments).expect("a JSON object serializes");
                self.transport
                    .send_with(
                        self.method.clone(),
                        &self.tool.url,
                        &self.headers,
                        Some(&body),
                    )
                    .await
            }
            Send::Query => {
                let pairs = arguments.iter().map(|(k, v)| {
                    (
                        k.as_str(),
                        match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        },
                    )
                });
                let url = reqwest::Url::parse_with_params(&self.tool.url, pairs)
                    .map_err(|e| ToolFailure::runtime(format!("{}: {e}", self.tool.url)))?;
                self.transport
                    .send_with(self.method.clone(), url.as_str(), &self.headers, None)
                    .await
            }
        };
        match sent {
            Ok(response) => Ok(String::from_utf8_lossy(&response.body).into_owned()),
            Err(TransportError::Status {
                status, excerpt, ..
            }) => Err(ToolFailure::runtime(format!(
                "HTTP {status}: {}",
                cut(&excerpt, BODY_EXCERPT)
            ))),
            Err(TransportError::Network {
                timed_out: true, ..
            }) => Err(ToolFailure::new(
                ToolFailureKind::Timeout,
                format!("{} did not answer in time", self.tool.url),
            )),
            // No connection at all: the endpoint is down, not the call wrong.
            Err(other) => Err(ToolFailure::unavailable(other.to_string())),
        }
    }
}

fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

impl ToolBackend for HttpBackend {
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(self.call(call.arguments.as_map()))
    }

    fn is_real(&self) -> bool {
        true
    }
}

/// A command that runs a tool: the arguments as JSON on its stdin, its
/// stdout the result; a non-zero exit is an error result with its stderr.
#[derive(Debug)]
pub(in crate::tool) struct CommandBackend {
    pub program: Vec<String>,
    /// Where it runs: the scenario's (or tools file's) folder.
    pub cwd: Option<PathBuf>,
}

/// How much stderr an error result carries.
const STDERR_EXCERPT: usize = 2048;

impl CommandBackend {
    async fn call(&self, arguments: &Map<String, Value>) -> Result<String, ToolFailure> {
        let mut command = tokio::process::Command::new(&self.program[0]);
        // A suite's command gets no key of ours.
        crate::child::suite_env(command.as_std_mut());
        command
            .args(&self.program[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A call that times out is dropped: so is its process.
            .kill_on_drop(true);
        crate::child::own_async(&mut command);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let label = self.program.join(" ");
        // A call dropped at its timeout ends the command's whole group.
        let (mut child, _group) = crate::child::GroupGuard::spawned(|| command.spawn(), |c| c.id())
            .map_err(|e| ToolFailure::unavailable(format!("cannot start {label:?}: {e}")))?;
        let input = serde_json::to_vec(arguments).expect("a JSON object serializes");
        let mut stdin = child.stdin.take().expect("piped");
        let (mut stdout, mut stderr) = (
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let write = async move {
            // A command that exits without reading is allowed.
            let _ = stdin.write_all(&input).await;
        };
        let (_, read_out, read_err) = tokio::join!(
            write,
            stdout.read_to_end(&mut out),
            stderr.read_to_end(&mut err)
        );
        read_out
            .and(read_err)
            .map_err(|e| ToolFailure::runtime(e.to_string()))?;
        let status = child
            .wait()
            .await
            .map_err(|e| ToolFailure::runtime(e.to_string()))?;
        if status.success() {
            return Ok(String::from_utf8_lossy(&out).into_owned());
        }
        let stderr = String::from_utf8_lossy(&err);
        Err(ToolFailure::runtime(format!(
            "{label:?} exited with {}: {}",
            status
                .code()
                .map_or("a signal".to_owned(), |c| format!("code {c}")),
            cut(stderr.trim(), STDERR_EXCERPT)
        )))
    }
}

impl ToolBackend for CommandBackend {
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(self.call(call.arguments.as_map()))
    }

    fn is_real(&self) -> bool {
        true
    }
}

/// The backend a definition's `http` or `command` asks for, if any.
pub(in crate::tool) fn backend_of(
    def: &crate::tool::ToolDef,
    base: Option<&std::path::Path>,
) -> Option<Result<Arc<dyn ToolBackend>, ServedError>> {
    if let Some(http) = &def.http {
        return Some(
            HttpBackend::new(http, def.timeout()).map(|b| Arc::new(b) as Arc<dyn ToolBackend>),
        );
    }
    let program = def.command.as_ref()?;
    if program.is_empty() || program[0].is_empty() {
        return Some(Err(ServedError::NoProgram));
    }
    let mut program = program.clone();
    if let Some(folder) = base {
        program[0] = crate::tool::resolve_program(&program[0], folder);
    }
    Some(Ok(Arc::new(CommandBackend {
        program,
        cwd: base.map(std::path::Path::to_path_buf),
    })))
}
