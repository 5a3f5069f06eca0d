//! Reports: trials.csv as trials finish (`trials`), then the summaries a
//! finished run writes (`summary`: summary.csv, models.csv,
//! comparisons.csv, self_correction.csv, pass_k.csv, summary.md,
//! junit.xml). CSV rows are serde structs: the struct is the column
//! contract, documented in reports/README.md.

pub mod bench;
mod merge;
mod summary;
pub mod trials;

use std::io;

use crate::harness::{RunPlan, TrialSink};
use crate::metrics::{CellStats, TrialRecord};

pub use merge::{Change, Comparison, RunRecord, compare, merge};
pub use summary::{Thresholds, Violation, write_summaries};
pub use trials::{TrialReader, TrialRow, TrialsCsv};

/// The file that shows `dir` already holds a run's reports, if any: a
/// command writing reports there must not replace them by accident.
pub fn held_run(dir: &std::path::Path) -> Option<&'static str> {
    ["run.json", "trials.csv"]
        .into_iter()
        .find(|file| dir.join(file).exists())
}

/// Accumulates the measures of a run as trials stream past: constant
/// memory per model x scenario, plus one byte per job for paired
/// comparisons.
pub struct Aggregate {
    pub cells: Vec<Vec<CellStats>>,
    /// `outcomes[model][scenario * trials + trial]`: 0 not run, 1 failed, 2 succeeded.
    pub outcomes: Vec<Vec<u8>>,
    trials: u32,
}

impl Aggregate {
    pub fn new(plan: &RunPlan) -> Self {
        let jobs_per_model = plan.scenarios.len() * plan.trials as usize;
        Aggregate {
            cells: plan.cell_stats(),
            outcomes: vec![vec![0; jobs_per_model]; plan.models.len()],
            trials: plan.trials,
        }
    }

    pub fn add(&mut self, record: &TrialRecord) {
        self.cells[record.model][record.scenario].add(record);
        let slot = record.scenario * self.trials as usize + record.trial as usize;
        self.outcomes[record.model][slot] = 1 + u8::from(record.success());
    }
}

impl TrialSink for Aggregate {
    fn trial(&mut self, _plan: &RunPlan, record: &TrialRecord) -> io::Result<()> {
        self.add(record);
        Ok(())
    }
}

/// Feeds every trial to each sink in turn.
pub struct Fanout<'a>(pub Vec<&'a mut dyn TrialSink>);

impl TrialSink for Fanout<'_> {
    fn trial(&mut self, plan: &RunPlan, record: &TrialRecord) -> io::Result<()> {
        for sink in &mut self.0 {
            sink.trial(plan, record)?;
        }
        Ok(())
    }
}
