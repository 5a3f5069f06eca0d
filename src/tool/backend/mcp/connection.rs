//! One started MCP server: a child process over stdio (its own process
//! group, killed with toolgauge) or a streamable HTTP endpoint, with the
//! tail of its stderr for error messages. A server's messages are held to
//! [`MESSAGE_LIMIT`]: a longer one ends the connection, named as such,
//! where rmcp alone would drop it unread and leave the call to time out.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};

use super::client::{Asked, Client};
use super::hub::{Hub, JudgeEnv};
use super::{McpError, McpServerSpec, worded};

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 8;

/// The last lines a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    pub(super) fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    pub(super) fn text(&self) -> String {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }
}

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
        let service = if let Some(url) = &spec.url {
            crate::transport::tls_ready();
            let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
            client
                .serve(transport)
                .await
                .map_err(|e| start_error(worded(&e.to_string()), &stderr))?
        } else {
            let command = server_command(spec, given);
            let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
            // Its whole process group goes when it is stopped.
            wrapped
                .wrap(process_wrap::tokio::ProcessGroup::leader())
                .wrap(process_wrap::tokio::KillOnDrop);
            let (mut spawned, guard) =
                crate::child::GroupGuard::spawned(|| wrapped.spawn(), |child| child.id())
                    .map_err(|e| start_error(e.to_string(), &stderr))?;
            group = guard;
            let (Some(stdin), Some(stdout)) = (spawned.stdin().take(), spawned.stdout().take())
            else {
                return Err(start_error(
                    "its stdin or stdout is not a pipe".into(),
                    &stderr,
                ));
            };
            if let Some(child_stderr) = spawned.stderr().take() {
                keep_tail(child_stderr, stderr.clone());
            }
            child = Some(spawned);
            let stdout = LineLimit {
                inner: stdout,
                line: 0,
                oversized: oversized.clone(),
            };
            // The limit is ours: a line over it ends the stream, named.
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new(stdout, stdin)
                .with_max_line_length(usize::MAX);
            match client.serve(transport).await {
                Ok(service) => service,
                Err(e) => {
                    // Let the stderr reader catch the server's last words.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return Err(start_error(worded(&e.to_string()), &stderr));
                }
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
        })
    }

    /// [`Connection::start`] within the start-up deadline, waited for from
    /// any thread. A server that lets it pass is dropped, and its process
    /// group with it.
    pub(super) fn start_blocking(
        hub: &Hub,
        spec: &McpServerSpec,
        asked: &Arc<Asked>,
    ) -> Result<Connection, McpError> {
        let starting = Connection::start_later(hub, spec, asked)?;
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
    ) -> Result<Starting, McpError> {
        let deadline = spec.startup_timeout();
        let asked = asked.clone();
        let owned = spec.clone();
        let given = hub.env_for(spec);
        let gate = hub.start_gate();
        Ok(hub.runtime()?.spawn(async move {
            let spec = &owned;
            let stderr = StderrTail::default();
            let Some(_turn) = gate.turn().await else {
                let stopped = McpError::Start {
                    label: spec.label(),
                    message: "not started: the run is over".to_owned(),
                    stderr: String::new(),
                };
                return (Err(stopped), std::time::Duration::ZERO);
            };
            let began = std::time::Instant::now();
            let started =
                match tokio::time::timeout(deadline, Connection::start_with(spec, &given, stderr.clone(), asked))
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

/// The command that starts `spec`'s server, its pipes set: a suite's
/// server gets the run's judge (`given`) and no key of ours it was not
/// given.
fn server_command(spec: &McpServerSpec, given: &JudgeEnv) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&spec.command[0]);
    // A suite's server gets no key of ours it was not given.
    if !spec.users_own {
        crate::child::suite_env(command.as_std_mut());
    }
    command
        .args(&spec.command[1..])
        .envs(&spec.env)
        .envs(given.0.iter().map(|(k, v)| (k, v)));
    // Killed with toolgauge, however it dies; this runs on the
    // servers' runtime, whose thread lives as long as its owner.
    crate::child::die_with_us(&mut command);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

/// The server's stderr read line by line into `tail`, until it closes.
fn keep_tail(child_stderr: tokio::process::ChildStderr, tail: StderrTail) {
    tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(child_stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.push(line);
        }
    });
}
