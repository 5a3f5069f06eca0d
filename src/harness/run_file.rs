//! run.json: the exact configuration of a run, so that it can be repeated,
//! resumed and its shards merged.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Clock;
use crate::model::ModelFile;
use crate::pipeline::FeedbackStyle;
use crate::report::{ModelInfo, RunInfo, Thresholds};
use crate::scenario::Scenario;
use crate::source::{self, FileError};

/// The suite folders (or files) of a run, in order: one is written as a
/// path, several as an array of paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuitePaths(pub Vec<PathBuf>);

impl std::fmt::Display for SuitePaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, path) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" + ")?;
            }
            write!(f, "{}", path.display())?;
        }
        Ok(())
    }
}

impl Serialize for SuitePaths {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => one.serialize(serializer),
            many => many.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SuitePaths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(PathBuf),
            Many(Vec<PathBuf>),
        }
        Ok(match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(path) => SuitePaths(vec![path]),
            OneOrMany::Many(paths) => SuitePaths(paths),
        })
    }
}

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
    pub suite: SuitePaths,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    pub feedback: FeedbackStyle,
    pub serial: bool,
    /// Run with `--no-session`: a resume writes no log either.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_session: bool,
    pub shard: Option<super::Shard>,
    /// Run with `--batch`: a resume follows its batches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
    /// The share of a cell's trials it may lose to infrastructure
    /// (`--max-lost`; 0: any lost trial fails the run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_lost: f64,
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

fn is_zero(x: &f64) -> bool {
    *x == 0.0
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
                suite: self.suite.clone(),
                added,
                removed,
            });
        }
        match &self.suite_digest {
            Some(digest) if *digest != crate::scenario::suite_digest(scenarios) => {
                Err(SuiteChanged::Edited {
                    suite: self.suite.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            min_success: self.min_success,
            min_pass_k: self.min_pass_k,
            max_lost: self.max_lost,
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
                    prices: file.api().and_then(|a| a.prices).map(|p| match self.batch {
                        true => crate::batch::at_batch_rate(p),
                        false => p,
                    }),
                    max_attempts: file.kind().max_attempts(),
                })
                .collect(),
            scenarios,
            trials: self.trials,
            seed: self.seed,
            feedback: super::file_name(&self.feedback),
            clock: super::file_name(&self.clock),
            thresholds: self.thresholds(),
            batch: self.batch,
        }
    }
}
