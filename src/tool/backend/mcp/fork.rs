//! A server that forks (`"forks": true`): its command is started once for
//! the run with a listening Unix socket as its stdin, and every
//! connection to it (the shared one that lists the tools, each trial's
//! own) is a child it forks: toolgauge connects, writes the trial's
//! arguments as one JSON line, and speaks MCP on the connection from
//! then on. A trial then starts in milliseconds where a fresh process
//! would import its package again (tau2's bridge: seconds).
//!
//! The forker is owned as any server is: its own process group (the
//! children it forks are in it), killed with toolgauge, and stopped with
//! the children left when the run ends. A child ends when its
//! connection closes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

use super::hub::JudgeEnv;
use super::process::{StderrTail, spawn_owned};
use super::{McpError, McpServerSpec};

/// The started forker: where to connect, what it said on stderr.
pub(super) struct Forker {
    socket: PathBuf,
    pub(super) stderr: StderrTail,
    /// Holds the socket's folder (private to this user) while it runs.
    _dir: tempfile::TempDir,
    _group: Option<crate::child::GroupGuard>,
    child: Mutex<Box<dyn process_wrap::tokio::ChildWrapper>>,
}

impl std::fmt::Debug for Forker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forker")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl Forker {
    /// Start `spec`'s command with the listening socket as its stdin. Run
    /// on the servers' runtime: its death signal follows that thread.
    fn start(spec: &McpServerSpec, given: &JudgeEnv) -> Result<Forker, McpError> {
        let stderr = StderrTail::default();
        let failed = |message: String| McpError::Start {
            label: spec.label(),
            message,
            stderr: String::new(),
        };
        let dir = tempfile::Builder::new()
            .prefix("toolgauge-fork")
            .tempdir()
            .map_err(|e| failed(format!("cannot make a folder for its socket: {e}")))?;
        let socket = dir.path().join("socket");
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .map_err(|e| failed(format!("cannot listen on {}: {e}", socket.display())))?;
        let listening = std::process::Stdio::from(std::os::fd::OwnedFd::from(listener));
        // Its children speak on their connections, never on its stdout.
        let stdio = (listening, std::process::Stdio::null());
        let (child, group) =
            spawn_owned(spec, given, stdio, &stderr).map_err(|e| failed(e.to_string()))?;
        Ok(Forker {
            socket,
            stderr,
            _dir: dir,
            _group: group,
            child: Mutex::new(child),
        })
    }

    /// Whether the forker's own process has ended.
    fn exited(&self) -> bool {
        self.child
            .lock()
            .map(|mut child| !matches!(child.try_wait(), Ok(None)))
            .unwrap_or(true)
    }

    /// A connection to a new child, sent `trial_args`: the stream to
    /// speak MCP on.
    pub(super) async fn connect(&self, trial_args: &[String]) -> std::io::Result<UnixStream> {
        let said = |what: &'static str| {
            let socket = self.socket.display().to_string();
            move |e: std::io::Error| {
                std::io::Error::new(
                    e.kind(),
                    format!("{what} the forking server at {socket}: {e}"),
                )
            }
        };
        let mut stream = UnixStream::connect(&self.socket)
            .await
            .map_err(said("cannot reach"))?;
        let mut line = serde_json::to_vec(trial_args)?;
        line.push(b'\n');
        stream
            .write_all(&line)
            .await
            .map_err(said("cannot send the trial's arguments to"))?;
        Ok(stream)
    }
}

/// A server's forker, started on first use and again after it ended.
#[derive(Debug, Default)]
pub(super) struct ForkSlot(tokio::sync::Mutex<Option<Arc<Forker>>>);

impl ForkSlot {
    /// The running forker, started now if there is none or it ended (on
    /// the servers' runtime).
    pub(super) async fn forker(
        &self,
        spec: &McpServerSpec,
        given: &JudgeEnv,
    ) -> Result<Arc<Forker>, McpError> {
        let mut slot = self.0.lock().await;
        if let Some(forker) = &*slot
            && !forker.exited()
        {
            return Ok(forker.clone());
        }
        let forker = Arc::new(Forker::start(spec, given)?);
        *slot = Some(forker.clone());
        Ok(forker)
    }

    /// The forker taken out, to be stopped (its group killed when the
    /// last connection holding it goes).
    pub(super) fn take(&self) -> Option<Arc<Forker>> {
        self.0.try_lock().ok().and_then(|mut slot| slot.take())
    }
}
