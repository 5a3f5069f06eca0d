//! The owner of a run's MCP servers: [`ToolServers`] starts each server
//! once per spec on a runtime of its own, and stops them all, waiting
//! until their processes are gone, when it is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::McpError;
use super::connection::Connection;
use super::server::{McpServer, SourceStats};

/// Every MCP server a run (or a command) uses. Servers are shared by the
/// scenarios that name the same spec; dropping the value stops them all
/// (run-wide ones and trials' own) and waits until they are gone.
#[derive(Debug, Default)]
pub struct ToolServers {
    hub: Arc<Hub>,
    servers: Mutex<Vec<Arc<McpServer>>>,
}

impl ToolServers {
    pub fn new() -> ToolServers {
        ToolServers::default()
    }

    /// The server for `spec`, started if it is not yet.
    pub fn open(&self, spec: &super::McpServerSpec) -> Result<Arc<McpServer>, McpError> {
        spec.check()?;
        let mut servers = self.servers.lock().map_err(|_| McpError::Poisoned)?;
        if let Some(server) = servers.iter().find(|s| s.spec() == spec) {
            return Ok(server.clone());
        }
        let started = Instant::now();
        let connection = Connection::start_blocking(&self.hub, spec)?;
        let server = Arc::new(McpServer::new(
            self.hub.clone(),
            spec.clone(),
            connection,
            started.elapsed(),
        ));
        servers.push(server.clone());
        Ok(server)
    }

    /// Every server with its measures, in the order they started.
    pub fn stats(&self) -> Vec<SourceStats> {
        self.servers
            .lock()
            .map(|servers| servers.iter().map(|s| s.stats()).collect())
            .unwrap_or_default()
    }

    /// Stop every server and wait until they are gone. Tools of a stopped
    /// server answer that it is stopped; their measures stay.
    pub fn stop(&self) {
        self.hub.closed.store(true, Ordering::SeqCst);
        if let Ok(servers) = self.servers.lock() {
            for server in servers.iter() {
                server.stop();
            }
        }
        self.hub.wait_for_stops();
    }
}

impl Drop for ToolServers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The runtime MCP connections live on (one thread, made on first use),
/// and the stops still to finish.
#[derive(Debug, Default)]
pub(super) struct Hub {
    runtime: OnceLock<tokio::runtime::Runtime>,
    stopping: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Set once the owner stops: nothing starts again.
    closed: AtomicBool,
}

impl Hub {
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(super) fn runtime(&self) -> Result<&tokio::runtime::Runtime, McpError> {
        if let Some(runtime) = self.runtime.get() {
            return Ok(runtime);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolgauge-mcp")
            .enable_all()
            .build()
            .map_err(McpError::Runtime)?;
        Ok(self.runtime.get_or_init(|| runtime))
    }

    /// Run `future` on the servers' runtime and wait for it, from any
    /// thread: from inside another runtime (a trial's), on a thread of
    /// its own.
    pub(super) fn block_on<F>(&self, future: F) -> Result<F::Output, McpError>
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime()?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Ok(runtime.block_on(future));
        }
        std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(future))
                .join()
                .map_err(|_| McpError::Panicked)
        })
    }

    /// Stop `connection` in the background; the owner waits for it.
    pub(super) fn stop(&self, connection: Connection) {
        let Ok(runtime) = self.runtime() else { return };
        let handle = runtime.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), connection.cancel()).await;
        });
        if let Ok(mut stopping) = self.stopping.lock() {
            stopping.retain(|h| !h.is_finished());
            stopping.push(handle);
        }
    }

    /// A connection put out of use: dropped on the servers' runtime, where
    /// its process is killed, once no call holds it any more.
    pub(super) fn retire(&self, connection: Arc<Connection>) {
        match Arc::try_unwrap(connection) {
            Ok(connection) => self.stop(connection),
            Err(shared) => {
                if let Ok(runtime) = self.runtime() {
                    let _entered = runtime.enter();
                    drop(shared);
                }
            }
        }
    }

    fn wait_for_stops(&self) {
        let stopping: Vec<_> = self
            .stopping
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        if stopping.is_empty() {
            return;
        }
        let _ = self.block_on(async {
            for handle in stopping {
                let _ = handle.await;
            }
        });
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        // Allowed anywhere, inside a runtime too; every server is stopped
        // by then (the owner waited for them).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
