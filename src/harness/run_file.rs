//! run.json: the exact configuration of a run, so that it can be repeated,
//! resumed and its shards merged.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Settings, SuitePaths};

use crate::model::ModelFile;
use crate::report::{ModelInfo, RunInfo};
use crate::scenario::Scenario;
use crate::source::{self, FileError};

/// A suite that is not the one the run was started with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SuiteChanged {
    #[error(
        "the suite {suite} has changed since the run started ({added} scenario(s) added, {removed} removed or renamed)"
    )]
    Scenarios {
        suite: SuitePaths,
        added: usize,
        removed: usize,
    },
    #[error("the scenario files under {suite} have been edited since the run started")]
    Edited { suite: SuitePaths },
}

/// run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    pub toolgauge: String,
    /// The run's settings, whole: what `--resume` continues with.
    #[serde(flatten)]
    pub settings: Settings,
    pub models: Vec<ModelFile>,
    pub scenarios: Vec<String>,
    /// What reports need of each scenario, in order: `report merge` and
    /// `report html` read them here, and start nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenario_infos: Vec<crate::report::ScenarioInfo>,
    /// A fingerprint of the scenario files (`scenario::suite_digest`):
    /// resuming or merging over a suite edited since is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_digest: Option<String>,
    /// What the `bash` tool ran inside, when a scenario lists it
    /// (`tool::shell::isolation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_isolation: Option<String>,
    /// MCP servers the run used: start-ups and `tools/call` round trips
    /// (written when the run ends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_sources: Vec<crate::tool::mcp::SourceStats>,
}

impl RunFile {
    pub fn write(&self, out: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::whole_file::write(&out.join("run.json"), text + "\n")
    }

    pub fn read(dir: &Path) -> Result<RunFile, FileError> {
        source::read_json(&dir.join("run.json"))
    }

    /// Does `scenarios` (the suite as loaded now) still hold what the run
    /// was started with: the same names in order, and the same files? A
    /// changed suite would mix two runs. `Err` says what changed.
    pub fn check_suite(&self, scenarios: &[Scenario]) -> Result<(), SuiteChanged> {
        let now: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
        if now != self.scenarios {
            let then: std::collections::HashSet<&str> =
                self.scenarios.iter().map(String::as_str).collect();
            let added = now.iter().filter(|n| !then.contains(*n)).count();
            let removed = then.len() - (now.len() - added);
            return Err(SuiteChanged::Scenarios {
                suite: self.settings.suite.clone(),
                added,
                removed,
            });
        }
        match &self.suite_digest {
            Some(digest) if *digest != crate::scenario::suite_digest(scenarios) => {
                Err(SuiteChanged::Edited {
                    suite: self.settings.suite.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    /// What reporters know of the run from this record alone, when it
    /// keeps its scenarios' infos (runs since they were kept).
    pub fn run_info(&self) -> Option<RunInfo> {
        (self.scenario_infos.len() == self.scenarios.len() && !self.scenarios.is_empty())
            .then(|| self.info_with(self.scenario_infos.clone()))
    }

    /// What reporters know of the run, from this record and the suite's
    /// scenarios (for their limits): no model is made ready for it.
    pub fn info(&self, scenarios: &[Scenario]) -> RunInfo {
        self.info_with(super::scenario_infos(scenarios))
    }

    fn info_with(&self, scenarios: Vec<crate::report::ScenarioInfo>) -> RunInfo {
        RunInfo {
            models: self
                .models
                .iter()
                .map(|file| ModelInfo {
                    name: file.name.clone(),
                    // As the run charged them: a batch's at the batch rate.
                    prices: file
                        .api()
                        .and_then(|a| a.prices)
                        .map(|p| match self.settings.batch {
                            true => crate::batch::at_batch_rate(p),
                            false => p,
                        }),
                    max_attempts: file.kind().max_attempts(),
                })
                .collect(),
            scenarios,
            trials: self.settings.trials,
            seed: self.settings.seed,
            feedback: super::file_name(&self.settings.feedback),
            clock: super::file_name(&self.settings.clock),
            thresholds: self.settings.thresholds.clone(),
            batch: self.settings.batch,
        }
    }
}
