//! What a run measured of one MCP server ([`SourceStats`]): its
//! start-ups, its `tools/call` round trips and what it asked of the
//! client, as run.json and tool_sources.csv hold them.

use serde::{Deserialize, Serialize};

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
    /// Results that broke the tool's own `outputSchema` (also counted in
    /// `call_errors`).
    #[serde(default)]
    pub bad_outputs: u64,
    /// The protocol revision the server answered `initialize` with (its
    /// latest start's).
    #[serde(default)]
    pub protocol: String,
    /// `elicitation/create` requests the server sent, answered as the
    /// scenario scripted.
    #[serde(default)]
    pub elicitations: u64,
    /// `sampling/createMessage` requests the server sent.
    #[serde(default)]
    pub samplings: u64,
    /// The first start-up: the one that loaded the server (a forking
    /// server's whole load; its trials' start-ups are forks).
    #[serde(default)]
    pub startup_ms_first: f64,
}

impl SourceStats {
    /// The mean of the start-ups after the first, if there were any.
    pub fn later_startup_ms_mean(&self) -> Option<f64> {
        (self.startups > 1).then(|| {
            let all = self.startup_ms_mean * self.startups as f64;
            (all - self.startup_ms_first) / (self.startups - 1) as f64
        })
    }
}
