//! What one trial's tools share: [`ToolState`] (how often each tool ran,
//! the trial's store, sandbox, random draws, and what tools keep for the
//! trial alone), and [`ToolId`], how a registry names its tools.

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Sandbox, Store, ToolFailure};

/// Identifies a registered tool; cheap to copy, valid for its registry only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolId(pub(super) usize);

impl ToolId {
    pub(super) fn index(self) -> usize {
        self.0
    }
}

/// What tools remember between executions within one trial (how often each
/// ran, for "fail the first N" injection). Start one per trial.
#[derive(Debug)]
pub struct ToolState {
    /// How often each tool ran, by [`ToolId`].
    pub(super) executions: Vec<AtomicU32>,
    pub(super) seed: u64,
    /// Draws simulated latencies; seeded on the first draw, since most
    /// batches run no simulated tool and seeding costs more than a call.
    pub(super) rng: Mutex<Option<StdRng>>,
    /// The trial's own store, from the scenario's `state`.
    pub(super) store: Mutex<Store>,
    /// The trial's own copy of the sandbox, when it has one; file tools
    /// use the registry's otherwise.
    pub(super) sandbox: Option<Sandbox>,
    /// Shared servers that went down during this trial, by their key,
    /// and why: the trial is told so, the next trial starts them again.
    pub(super) down: Mutex<Vec<(usize, String)>>,
    /// What tools keep for this trial only (its own MCP server, say), by
    /// the key the tool chose; dropped with the state.
    pub(super) resources: Mutex<Vec<(usize, TrialResource)>>,
    /// Tools the model has not been given yet (a conversation adds them
    /// at a later user turn): calls to them are calls to unknown tools.
    pub(super) hidden: Vec<String>,
    /// The folder the trial's chain of scenarios shares (`{chain_dir}`),
    /// or why it could not be made; `None` off a chain.
    pub(super) chain_dir: Option<Result<std::path::PathBuf, ChainFolderError>>,
}

/// Why a trial's chain folder (`{chain_dir}`) could not be made.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot make the chain folder {}: {source}", path.display())]
pub struct ChainFolderError {
    pub path: std::path::PathBuf,
    pub source: std::sync::Arc<std::io::Error>,
}

/// Something a tool keeps for one trial.
pub(super) type TrialResource = Arc<dyn std::any::Any + Send + Sync>;

impl ToolState {
    /// Tools the model has not been given yet.
    /// The folder the trial's chain of scenarios shares, or why it could
    /// not be made (`None`: the trial is on no chain).
    pub fn chain_dir(&self) -> Option<&Result<std::path::PathBuf, ChainFolderError>> {
        self.chain_dir.as_ref()
    }

    pub fn hidden(&self) -> &[String] {
        &self.hidden
    }

    /// Hide `names` until [`ToolState::show`] gives them.
    pub fn hide(&mut self, names: &[String]) {
        self.hidden.extend(names.iter().cloned());
    }

    /// Hide `hidden` in place of what is hidden now, which is given back:
    /// the simulated user's view of the trial's tools (its own alone)
    /// while its calls run, the agent's put back after.
    pub fn swap_hidden(&mut self, hidden: Vec<String>) -> Vec<String> {
        std::mem::replace(&mut self.hidden, hidden)
    }

    /// The model is given `names` now.
    pub fn show(&mut self, names: &[String]) {
        self.hidden.retain(|h| !names.contains(h));
    }

    /// What the trial's store holds now: `{"collection": [records]}`.
    pub fn store_snapshot(&self) -> serde_json::Value {
        self.store
            .lock()
            .map_or(serde_json::Value::Null, |store| store.snapshot())
    }

    /// A record of the trial's store, if it holds one.
    pub fn store_record(&self, collection: &str, id: &str) -> Option<serde_json::Value> {
        self.store.lock().ok()?.record(collection, id)
    }

    /// File tools of this trial work in `sandbox`, not the registry's.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The trial's resource under `key`, made by `make` on first use.
    pub(super) fn resource(
        &self,
        key: usize,
        make: impl FnOnce() -> Result<TrialResource, ToolFailure>,
    ) -> Result<TrialResource, ToolFailure> {
        let mut resources = self
            .resources
            .lock()
            .map_err(|_| ToolFailure::runtime("the trial's resources are poisoned"))?;
        if let Some((_, found)) = resources.iter().find(|(k, _)| *k == key) {
            return Ok(found.clone());
        }
        let made = make()?;
        resources.push((key, made.clone()));
        Ok(made)
    }

    /// Note that the shared server under `key` went down in this trial.
    pub(super) fn note_down(&self, key: usize, message: String) {
        if let Ok(mut down) = self.down.lock() {
            down.push((key, message));
        }
    }

    /// Why the shared server under `key` went down in this trial, if it did.
    pub(super) fn went_down(&self, key: usize) -> Option<String> {
        let down = self.down.lock().ok()?;
        down.iter().find(|(k, _)| *k == key).map(|(_, m)| m.clone())
    }

    /// A uniform draw in 0..1 from the trial's seed.
    pub fn uniform(&self) -> f64 {
        self.rng.lock().map_or(0.5, |mut rng| {
            rng.get_or_insert_with(|| StdRng::seed_from_u64(self.seed))
                .random()
        })
    }
}
