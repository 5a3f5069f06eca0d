//! One started MCP server: a child process over stdio (its own process
//! group, killed with toolgauge) or a streamable HTTP endpoint, with the
//! tail of its stderr for error messages. A server's messages are held to
//! [`MESSAGE_LIMIT`]: a longer one ends the connection, named as such,
//! where rmcp alone would drop it unread and leave the call to time out.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};

use super::client::{Asked, Client};
use super::fork::{ForkSlot, Forker};
use super::hub::{Hub, JudgeEnv};
use super::process::{StderrTail, spawn_owned};
use super::{McpError, McpServerSpec, worded};

/// The most bytes one message of a server (one line of JSON-RPC on its
/// stdout) may hold.
pub(super) const MESSAGE_LIMIT: usize = 16 * 1024 * 1024;

/// A server's stdout as rmcp reads it, ended with an error at the first
/// line longer than [`MESSAGE_LIMIT`] (and `oversized` set), so that the
/// call fails at once, as the server's fault, with what happened.
struct LineLimit<R> {
    inner: R,
    line: usize,
    oversized: Arc<AtomicBool>,
}

impl<R> LineLimit<R> {
    fn new(inner: R, oversized: &Arc<AtomicBool>) -> Self {
        LineLimit {
            inner,
            line: 0,
            oversized: oversized.clone(),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let read = &buf.filled()[before..];
        this.line = match memchr::memrchr(b'\n', read) {
            Some(at) => read.len() - at - 1,
            None => this.line + read.len(),
        };
        if this.line > MESSAGE_LIMIT {
            this.oversized.store(true, Ordering::SeqCst);
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a message over the size limit",
            )));
        }
        Poll::Ready(Ok(()))
    }
}

/// How a connection reaches its server.
#[derive(Debug, Clone)]
pub(super) enum Route {
    /// The spec's URL, or a process of its own from the spec's command.
    Own,
    /// A child of the server's forker, sent these trial arguments.
    Forked(Arc<ForkSlot>, Vec<String>),
}

/// A start under way on the servers' runtime: the connection (or why
/// not) and how long the start took.
pub(super) type Starting = tokio::task::JoinHandle<(Result<Connection, McpError>, Duration)>;

/// One started server.
pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Client>,
    pub(super) stderr: StderrTail,
    /// The protocol revision the server answered `initialize` with.
    pub(super) protocol: String,
    /// The server's process group, killed when the connection goes,
    /// whether or not its leader already exited (a server that ends on
    /// stdin's EOF leaves its helpers running otherwise). Dropped after
    /// `service`, so after the leader's own graceful stop.
    _group: Option<crate::child::GroupGuard>,
    /// The server process, waited for a moment when the session closes
    /// (its stdin closed), then killed with its group.
    child: Option<Box<dyn process_wrap::tokio::ChildWrapper>>,
    /// The server sent a message over [`MESSAGE_LIMIT`]: the connection
    /// ended there.
    pub(super) oversized: Arc<AtomicBool>,
    /// The forker whose child this is, kept running while it is used.
    _forker: Option<Arc<Forker>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    async fn start_with(
        spec: &McpServerSpec,
        given: &JudgeEnv,
        stderr: StderrTail,
        asked: Arc<Asked>,
        forker: Option<(Arc<Forker>, Vec<String>)>,
    ) -> Result<Connection, McpError> {
        let label = spec.label();
        let start_error = |message: String, stderr: &StderrTail| McpError::Start {
            label: label.clone(),
            message,
            stderr: stderr.text(),
        };
        let (mut group, mut child) = (None, None);
        let oversized = Arc::new(AtomicBool::new(false));
        let client = Client::new(spec.answers.clone(), asked);
        let served = if let Some(url) = &spec.url {
            crate::transport::tls_ready();
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
            client.serve(transport).await
        } else if let Some((forker, trial_args)) = &forker {
            let stream = forker
                .connect(trial_args)
                .await
                .map_err(|e| start_error(e.to_string(), &stderr))?;
            let (read, write) = stream.into_split();
            // The limit is ours: a line over it ends the stream, named.
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new(
                LineLimit::new(read, &oversized),
                write,
            )
            .with_max_line_length(usize::MAX);
            client.serve(transport).await
        } else {
            let piped = (std::process::Stdio::piped(), std::process::Stdio::piped());
            let (mut spawned, guard) = spawn_owned(spec, given, piped, &stderr)
                .map_err(|e| start_error(e.to_string(), &stderr))?;
            group = guard;
            let (Some(stdin), Some(stdout)) = (spawned.stdin().take(), spawned.stdout().take())
            else {
                return Err(start_error(
                    "its stdin or stdout is not a pipe".into(),
                    &stderr,
                ));
            };
            child = Some(spawned);
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new(
                LineLimit::new(stdout, &oversized),
                stdin,
            )
            .with_max_line_length(usize::MAX);
            client.serve(transport).await
        };
        let service = match served {
            Ok(service) => service,
            Err(e) => {
                // Let the stderr reader catch the server's last words.
                if spec.url.is_none() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                return Err(start_error(worded(&e.to_string()), &stderr));
            }
        };
        let protocol = answered_protocol(&service, &label, &stderr)?;
        Ok(Connection {
            service,
            stderr,
            protocol,
            _group: group,
            child,
            oversized,
            _forker: forker.map(|(forker, _)| forker),
        })
    }

    /// [`Connection::start`] within the start-up deadline, waited for from
    /// any thread. A server that lets it pass is dropped, and its process
    /// group with it.
    pub(super) fn start_blocking(
        hub: &Hub,
        spec: &McpServerSpec,
        asked: &Arc<Asked>,
        route: Route,
    ) -> Result<Connection, McpError> {
        let starting = Connection::start_later(hub, spec, asked, route)?;
        hub.block_on(starting)?.map_err(|_| McpError::Panicked)?.0
    }

    /// Start within the start-up deadline, as a task of the servers'
    /// runtime (the child is started from its thread, which the death
    /// signal follows), to be awaited from any runtime: the connection,
    /// and how long the start took.
    pub(super) fn start_later(
        hub: &Hub,
        spec: &McpServerSpec,
        asked: &Arc<Asked>,
        route: Route,
    ) -> Result<Starting, McpError> {
        let deadline = spec.startup_timeout();
        let asked = asked.clone();
        let owned = spec.clone();
        let given = hub.env_for(spec);
        let gate = hub.start_gate();
        Ok(hub.runtime()?.spawn(async move {
            let spec = &owned;
            let Some(_turn) = gate.turn().await else {
                let stopped = McpError::Start {
                    label: spec.label(),
                    message: "not started: the run is over".to_owned(),
                    stderr: String::new(),
                };
                return (Err(stopped), std::time::Duration::ZERO);
            };
            let began = std::time::Instant::now();
            // A forked child's stderr is its forker's.
            let forker = match route {
                Route::Own => None,
                Route::Forked(slot, trial_args) => match slot.forker(spec, &given).await {
                    Ok(forker) => Some((forker, trial_args)),
                    Err(e) => return (Err(e), began.elapsed()),
                },
            };
            let stderr = forker
                .as_ref()
                .map_or_else(StderrTail::default, |(f, _)| f.stderr.clone());
            let starting = Connection::start_with(spec, &given, stderr.clone(), asked, forker);
            let started =
                match tokio::time::timeout(deadline, starting)
                    .await
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
                };
            (started, began.elapsed())
        }))
    }

    /// Close the session in the background (its process group goes with
    /// it); the hub's owner waits for it.
    pub(super) fn stop(self, hub: &Hub) {
        hub.stop_later(self.close());
    }

    /// Close the session (its process group goes with it): its stdin
    /// closed, a moment to exit of its own accord, then killed.
    pub(super) async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
        if let Some(child) = self.child.as_mut() {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
    }

    /// Put out of use: stopped now if nothing else holds it, or else
    /// killed when the last call holding it lets go.
    pub(super) fn retire(self: Arc<Connection>, hub: &Hub) {
        match Arc::try_unwrap(self) {
            Ok(connection) => connection.stop(hub),
            Err(shared) => hub.drop_inside(shared),
        }
    }

    pub(super) fn crashed(&self) -> bool {
        self.service.is_transport_closed() || self.service.is_closed()
    }
}

/// The revision the server answered `initialize` with, if toolgauge
/// speaks it; a server that answers one it does not is not used (the
/// specification's advice: disconnect).
fn answered_protocol(
    service: &RunningService<RoleClient, Client>,
    label: &str,
    stderr: &StderrTail,
) -> Result<String, McpError> {
    let refused = |message: String| McpError::Start {
        label: label.to_owned(),
        message,
        stderr: stderr.text(),
    };
    let Some(info) = service.peer_info() else {
        return Err(refused("it gave no answer to initialize".to_owned()));
    };
    if super::client::speaks(&info.protocol_version) {
        return Ok(info.protocol_version.to_string());
    }
    Err(refused(format!(
        "it answered initialize with protocol revision {}, which toolgauge does not speak (it speaks {}; it offered {})",
        info.protocol_version,
        super::client::spoken(),
        super::client::OFFERED
    )))
}
