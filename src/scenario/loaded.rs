//! A scenario as loaded and compiled: its tools, prompt, expectation and
//! task, and the digest that names a suite.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::{Expectation, ScriptTurn, Task};
use crate::tool::Registry;

/// A loaded scenario: checked, with its tools registered and its
/// validators compiled, ready for any number of trials.
#[derive(Debug)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub path: PathBuf,
    pub registry: Arc<Registry>,
    /// The opening user message(s).
    pub prompt: Vec<Value>,
    /// What a correct turn is (`NoCall` for a task, which says instead).
    pub expectation: Expectation,
    /// Set for a task: it, not `expectation`, says what success is.
    pub task: Option<Task>,
    pub max_retries: u32,
    pub min_success: Option<f64>,
    pub script: Option<Vec<ScriptTurn>>,
    /// The scenario's sandbox directory, when it has file tools.
    pub sandbox: Option<PathBuf>,
    /// The scenarios whose trials end before this one's start (same
    /// model, same trial number).
    pub after: Vec<String>,
    /// A fingerprint of the file's bytes (FNV-1a), so that a resumed or
    /// merged run can tell the suite changed under it.
    pub digest: u64,
}

/// One fingerprint for a suite: its scenarios' names and file digests, in
/// order, as 16 hex digits.
pub fn suite_digest(scenarios: &[Scenario]) -> String {
    let mut hash = FNV_OFFSET;
    for scenario in scenarios {
        hash = fnv1a(hash, scenario.name.as_bytes());
        hash = fnv1a(hash, &scenario.digest.to_le_bytes());
    }
    format!("{hash:016x}")
}

pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `bytes`, continuing from `hash`: stable across builds and
/// platforms, unlike std's hasher, since run.json keeps it.
pub(crate) fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
