//! The owner of a run's MCP servers: [`ToolServers`] starts each server
//! once per spec on a runtime of its own, and stops them all, waiting
//! until their processes are gone, when it is dropped.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::McpError;
use super::connection::{Connection, Route};
use super::fork::ForkSlot;
use super::hub::{Hub, JudgeEnv};
use super::judges::JudgeTrust;
use super::server::McpServer;
use super::stats::SourceStats;

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

    /// Servers whose judging ones (`"judge": true`) get `judge`, when
    /// `trust` allows them.
    pub fn judging(judge: JudgeEnv, trust: JudgeTrust) -> ToolServers {
        ToolServers {
            hub: Arc::new(Hub::judging(judge, trust)),
            servers: Mutex::default(),
        }
    }

    /// Whether the server a scenario writes as `written` gets the judge:
    /// refused when it asks for a judge the trust does not allow it.
    pub fn vouch(&self, written: &super::McpServerSpec) -> Result<bool, McpError> {
        self.hub.vouch(written)
    }

    /// The commands given the run's judge, as their scenarios write them.
    pub fn judged(&self) -> Vec<String> {
        self.hub.judged()
    }

    /// The server for `spec`, started if it is not yet.
    pub fn open(&self, spec: &super::McpServerSpec) -> Result<Arc<McpServer>, McpError> {
        spec.check()?;
        let mut servers = self.servers.lock().map_err(|_| McpError::Poisoned)?;
        if let Some(server) = servers.iter().find(|s| s.spec() == spec) {
            return Ok(server.clone());
        }
        let started = Instant::now();
        let asked = Arc::default();
        let fork = spec.forks.then(|| Arc::new(ForkSlot::default()));
        let route = match &fork {
            Some(slot) => Route::Forked(slot.clone(), Vec::new()),
            None => Route::Own,
        };
        let connection = Connection::start_blocking(&self.hub, spec, &asked, route)?;
        let server = Arc::new(McpServer::new(
            self.hub.clone(),
            spec.clone(),
            connection,
            started.elapsed(),
            asked,
            fork,
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
        self.hub.close();
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
