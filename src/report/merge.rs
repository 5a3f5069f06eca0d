//! `report merge` (shard outputs into what one run would have written) and
//! `report compare` (a run against a baseline).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::summary::{Thresholds, Violation, write_summaries};
use super::trials::{TrialReader, TrialsCsv};
use super::{Aggregate, Fanout};
use crate::harness::{Clock, RunPlan, TrialSink};
use crate::model::{Model, ModelFile};
use crate::pipeline::feedback::FeedbackStyle;
use crate::pipeline::{ExecMode, ExecOptions};
use crate::scenario::{Scenario, load_suite};
use crate::source;

/// run.json: the exact configuration of a run, so that it can be repeated
/// and its shards merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub toolgauge: String,
    pub suite: PathBuf,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    pub feedback: FeedbackStyle,
    pub serial: bool,
    pub shard: Option<String>,
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
    pub models: Vec<ModelFile>,
    pub scenarios: Vec<String>,
    /// A fingerprint of the scenario files (`scenario::suite_digest`):
    /// resuming or merging over a suite edited since is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_digest: Option<String>,
}

impl RunRecord {
    pub fn write(&self, out: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(out.join("run.json"), text + "\n")
    }

    pub fn read(dir: &Path) -> Result<RunRecord, String> {
        source::read_json(&dir.join("run.json")).map_err(|e| e.to_string())
    }

    /// Does `scenarios` (the suite as loaded now) still hold what the run
    /// was started with: the same names in order, and the same files? A
    /// changed suite would mix two runs. `Err` says what changed.
    pub fn check_suite(&self, scenarios: &[Scenario]) -> Result<(), String> {
        let now: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
        if now != self.scenarios {
            let then: std::collections::HashSet<&str> =
                self.scenarios.iter().map(String::as_str).collect();
            let added = now.iter().filter(|n| !then.contains(*n)).count();
            let removed = then.len() - (now.len() - added);
            return Err(format!(
                "the suite {} has changed since the run started ({added} scenario(s) added, \
                 {removed} removed or renamed)",
                self.suite.display()
            ));
        }
        match &self.suite_digest {
            Some(digest) if *digest != crate::scenario::suite_digest(scenarios) => Err(format!(
                "the scenario files under {} have been edited since the run started",
                self.suite.display()
            )),
            _ => Ok(()),
        }
    }

    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            min_success: self.min_success,
            min_pass_k: self.min_pass_k,
        }
    }
}

/// Merge shard folders into `out`: the same files one unsharded run would
/// have written. Returns the threshold violations and the key table.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<(Vec<Violation>, String), String> {
    let first = dirs.first().ok_or("give at least one shard folder")?;
    let mut record = RunRecord::read(first)?;
    for dir in &dirs[1..] {
        let other = RunRecord::read(dir)?;
        let same = RunRecord {
            shard: record.shard.clone(),
            ..other.clone()
        };
        if same != record {
            return Err(format!(
                "{} was run with another configuration than {}",
                dir.display(),
                first.display()
            ));
        }
    }
    let sandbox = tempfile::tempdir().map_err(|e| e.to_string())?;
    let scenarios = load_suite(&record.suite, sandbox.path())
        .map_err(|errors| {
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        })?
        .scenarios;
    record
        .check_suite(&scenarios)
        .map_err(|e| format!("{e}; merging would mix two suites"))?;
    let models = record
        .models
        .iter()
        .cloned()
        .map(Model::new)
        .collect::<Result<Vec<_>, _>>()?;
    let plan = RunPlan {
        scenarios,
        models,
        trials: record.trials,
        seed: record.seed,
        concurrency: record.concurrency,
        clock: record.clock,
        feedback: record.feedback,
        exec: ExecOptions {
            mode: if record.serial {
                ExecMode::Serial
            } else {
                ExecMode::Parallel
            },
            ..ExecOptions::default()
        },
        shard: None,
    };
    // Each shard's file is in job order: merge them one trial at a time.
    let mut shards = dirs
        .iter()
        .map(|dir| {
            TrialReader::open(&plan, &dir.join("trials.csv"))
                .map(Iterator::peekable)
                .map_err(|e| format!("{}: {e}", dir.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Count first, so that nothing is written for an incomplete set.
    let expected = plan.jobs().count();
    let mut held = 0;
    for dir in dirs {
        for trial in TrialReader::open(&plan, &dir.join("trials.csv"))
            .map_err(|e| format!("{}: {e}", dir.display()))?
        {
            trial.map_err(|e| e.to_string())?;
            held += 1;
        }
    }
    if held != expected {
        return Err(format!(
            "the shards hold {held} of the {expected} trials: is a shard missing or unfinished?"
        ));
    }

    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    record.shard = None;
    record.write(out).map_err(|e| e.to_string())?;
    let mut trials = TrialsCsv::create(&out.join("trials.csv")).map_err(|e| e.to_string())?;
    let mut aggregate = Aggregate::new(&plan);
    let mut merged = 0;
    let mut last_key = None;
    {
        let mut sinks = Fanout(vec![&mut trials, &mut aggregate]);
        loop {
            let mut next: Option<(usize, (usize, usize, u32))> = None;
            for (i, shard) in shards.iter_mut().enumerate() {
                match shard.peek() {
                    Some(Ok(r)) => {
                        let key = (r.model, r.scenario, r.trial);
                        if next.is_none_or(|(_, best)| key < best) {
                            next = Some((i, key));
                        }
                    }
                    Some(Err(_)) => {
                        let error = shard.next().and_then(Result::err).map(|e| e.to_string());
                        return Err(error.unwrap_or_default());
                    }
                    None => {}
                }
            }
            let Some((i, key)) = next else { break };
            let trial = shards[i]
                .next()
                .and_then(Result::ok)
                .expect("peeked a record");
            if last_key == Some(key) {
                return Err(format!(
                    "trial {key:?} appears in two shards: were they run with other --shard values?"
                ));
            }
            last_key = Some(key);
            sinks.trial(&plan, &trial).map_err(|e| e.to_string())?;
            merged += 1;
        }
    }
    debug_assert_eq!(merged, expected);
    write_summaries(&plan, &aggregate, &record.thresholds(), out).map_err(|e| e.to_string())
}

/// The columns `compare` reads from summary.csv.
#[derive(Debug, Deserialize)]
struct SummaryLine {
    model: String,
    scenario: String,
    final_success: Option<f64>,
    wilson_low: Option<f64>,
    wilson_high: Option<f64>,
}

impl SummaryLine {
    /// (final success, Wilson low, Wilson high), when the cell measured
    /// anything.
    fn measured(&self) -> Option<(f64, f64, f64)> {
        Some((self.final_success?, self.wilson_low?, self.wilson_high?))
    }
}

/// One model x scenario in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub model: String,
    pub scenario: String,
    pub baseline: f64,
    pub current: f64,
    /// The intervals do not overlap: `Some(true)` a significant drop,
    /// `Some(false)` a significant gain.
    pub significant_drop: Option<bool>,
}

fn read_summary(dir: &Path) -> Result<Vec<SummaryLine>, String> {
    let path = dir.join("summary.csv");
    let mut reader =
        csv::Reader::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines = reader
        .deserialize()
        .collect::<Result<Vec<SummaryLine>, _>>()
        .map_err(|e| format!("{}: not a toolgauge summary: {e}", path.display()))?;
    if lines.is_empty() {
        return Err(format!(
            "{}: no model x scenario rows: is it a run's summary.csv?",
            path.display()
        ));
    }
    Ok(lines)
}

/// What `compare` found: the changes of the cells in both runs, and how
/// many cells only one run has.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub changes: Vec<Change>,
    pub only_baseline: usize,
    pub only_current: usize,
}

/// Compare two runs' summaries, per model x scenario measured in both. No
/// cell in common is an error: nothing was compared.
pub fn compare(baseline: &Path, current: &Path) -> Result<Comparison, String> {
    let before = read_summary(baseline)?;
    let after = read_summary(current)?;
    let key = |l: &SummaryLine| (l.model.clone(), l.scenario.clone());
    let before_by_cell: std::collections::HashMap<_, &SummaryLine> =
        before.iter().map(|l| (key(l), l)).collect();
    let mut changes = Vec::new();
    let mut unmeasured = 0;
    for now in &after {
        let Some(then) = before_by_cell.get(&key(now)) else {
            continue;
        };
        // A cell with no measured trial has no rate to compare.
        let (Some((baseline_rate, then_low, then_high)), Some((current_rate, now_low, now_high))) =
            (then.measured(), now.measured())
        else {
            unmeasured += 1;
            continue;
        };
        let significant_drop = if now_high < then_low {
            Some(true)
        } else if now_low > then_high {
            Some(false)
        } else {
            None
        };
        changes.push(Change {
            model: now.model.clone(),
            scenario: now.scenario.clone(),
            baseline: baseline_rate,
            current: current_rate,
            significant_drop,
        });
    }
    let common = changes.len() + unmeasured;
    if changes.is_empty() {
        return Err(format!(
            "nothing to compare: {} and {} have no measured model x scenario in common \
             (the baseline has {} cell(s), the current run {}, {common} shared, \
             {unmeasured} of those not measured)",
            baseline.display(),
            current.display(),
            before.len(),
            after.len()
        ));
    }
    Ok(Comparison {
        changes,
        only_baseline: before.len() - common,
        only_current: after.len() - common,
    })
}
