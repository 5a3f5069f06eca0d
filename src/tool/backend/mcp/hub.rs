//! The runtime MCP connections live on, owned by [`super::ToolServers`]:
//! one thread made on first use, the stops still to finish, the servers
//! starting at once, whether the owner has closed it, and what a server
//! that judges (`"judge": true`) is given of the run's judge. It knows
//! nothing else of what runs on it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::McpError;
use super::judges::JudgeTrust;

/// The runtime MCP connections live on (one thread, made on first use),
/// and the stops still to finish.
#[derive(Debug)]
pub(super) struct Hub {
    runtime: OnceLock<tokio::runtime::Runtime>,
    stopping: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    gate: StartGate,
    judge: JudgeEnv,
    /// The servers that may take the judge.
    trust: JudgeTrust,
    /// The commands vouched for, given the judge when they start.
    judged: Mutex<BTreeSet<String>>,
}

/// The judge the user named for the run, as the environment of servers
/// that judge (`TOOLGAUGE_JUDGE_*`); its values never printed (a key).
#[derive(Clone, Default)]
pub struct JudgeEnv(pub Vec<(String, String)>);

impl std::fmt::Debug for JudgeEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

/// At most one server starting per core: a start under load (a BFCL
/// bridge imports its package) then takes what one core allows, and its
/// deadline counts its own start, not its wait for a turn. Closed once
/// the owner stops: nothing starts again.
#[derive(Debug, Clone)]
pub(super) struct StartGate {
    turns: Arc<Semaphore>,
    closed: Arc<AtomicBool>,
}

impl StartGate {
    fn new(at_once: usize) -> Self {
        StartGate {
            turns: Arc::new(Semaphore::new(at_once.max(1))),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A turn to start a server, held until it has answered or failed;
    /// `None` once the hub is closed.
    pub(super) async fn turn(&self) -> Option<OwnedSemaphorePermit> {
        let turn = self.turns.clone().acquire_owned().await.ok()?;
        (!self.closed.load(Ordering::SeqCst)).then_some(turn)
    }
}

impl Default for Hub {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Hub {
            runtime: OnceLock::new(),
            stopping: Mutex::new(Vec::new()),
            gate: StartGate::new(cores),
            judge: JudgeEnv::default(),
            trust: JudgeTrust::default(),
            judged: Mutex::default(),
        }
    }
}

impl Hub {
    pub(super) fn judging(judge: JudgeEnv, trust: JudgeTrust) -> Hub {
        let mut hub = Hub::default();
        hub.judge = judge;
        hub.trust = trust;
        hub
    }

    /// Whether a server a scenario writes as `written` judges: one that
    /// does not ask, no; one that asks while the run has no judge, yes
    /// (it is given nothing); else only one the trust allows, named
    /// among those given the judge. Any other is refused: it would take
    /// a key the user did not send it.
    pub(super) fn vouch(&self, written: &super::McpServerSpec) -> Result<bool, McpError> {
        if !written.judge || self.judge.0.is_empty() {
            return Ok(written.judge);
        }
        let label = written.label();
        if !self.trust.allows(written) {
            return Err(McpError::JudgeRefused { label });
        }
        if let Ok(mut judged) = self.judged.lock() {
            judged.insert(label);
        }
        Ok(true)
    }

    /// The servers given the judge, by their commands as written.
    pub(super) fn judged(&self) -> Vec<String> {
        self.judged
            .lock()
            .map(|judged| judged.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// What a server started from `spec` is given besides its own env.
    pub(super) fn env_for(&self, spec: &super::McpServerSpec) -> JudgeEnv {
        if spec.judge {
            self.judge.clone()
        } else {
            JudgeEnv::default()
        }
    }

    /// Nothing starts again once the owner closes the hub.
    pub(super) fn close(&self) {
        self.gate.closed.store(true, Ordering::SeqCst);
    }

    pub(super) fn is_closed(&self) -> bool {
        self.gate.closed.load(Ordering::SeqCst)
    }

    /// Where starts wait for their turn.
    pub(super) fn start_gate(&self) -> StartGate {
        self.gate.clone()
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

    /// Run `stop` in the background; the owner waits for it.
    pub(super) fn stop_later(&self, stop: impl Future<Output = ()> + Send + 'static) {
        let Ok(runtime) = self.runtime() else { return };
        let handle = runtime.spawn(stop);
        if let Ok(mut stopping) = self.stopping.lock() {
            stopping.retain(|h| !h.is_finished());
            stopping.push(handle);
        }
    }

    /// Drop `value` inside the servers' runtime, where what it holds must
    /// be dropped (a child process is killed there).
    pub(super) fn drop_inside<T>(&self, value: T) {
        if let Ok(runtime) = self.runtime() {
            let _entered = runtime.enter();
            drop(value);
        }
    }

    pub(super) fn wait_for_stops(&self) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn no_more_servers_start_at_once_than_the_gate_allows() {
        let gate = StartGate::new(2);
        let first = gate.turn().await.unwrap();
        let _second = gate.turn().await.unwrap();
        let mut third = Box::pin(gate.turn());
        assert!(futures_util::poll!(third.as_mut()).is_pending());
        drop(first);
        assert!(third.await.is_some());
        // Closed: a start that waited gets no turn.
        let gate = StartGate::new(1);
        let held = gate.turn().await.unwrap();
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.turn().await.is_none() }
        });
        tokio::task::yield_now().await;
        gate.closed.store(true, Ordering::SeqCst);
        drop(held);
        assert!(waiting.await.unwrap());
    }
}
