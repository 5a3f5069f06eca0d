//! `report compare`: a run's summary.csv against a baseline's, per model x
//! scenario measured in both.

use std::path::{Path, PathBuf};

use serde::Deserialize;

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

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: csv::Error },
    #[error("{}: not a toolgauge summary: {source}", path.display())]
    NotASummary { path: PathBuf, source: csv::Error },
    #[error("{}: no model x scenario rows: is it a run's summary.csv?", path.display())]
    Empty { path: PathBuf },
    #[error(
        "nothing to compare: {} and {} have no measured model x scenario in common \
         (the baseline has {baseline_cells} cell(s), the current run {current_cells}, \
         {shared} shared, {unmeasured} of those not measured)",
        baseline.display(),
        current.display()
    )]
    NothingInCommon {
        baseline: PathBuf,
        current: PathBuf,
        baseline_cells: usize,
        current_cells: usize,
        shared: usize,
        unmeasured: usize,
    },
}

fn read_summary(dir: &Path) -> Result<Vec<SummaryLine>, CompareError> {
    let path = dir.join("summary.csv");
    let mut reader = match csv::Reader::from_path(&path) {
        Ok(reader) => reader,
        Err(source) => return Err(CompareError::Read { path, source }),
    };
    let lines = match reader
        .deserialize()
        .collect::<Result<Vec<SummaryLine>, _>>()
    {
        Ok(lines) => lines,
        Err(source) => return Err(CompareError::NotASummary { path, source }),
    };
    if lines.is_empty() {
        return Err(CompareError::Empty { path });
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
pub fn compare(baseline: &Path, current: &Path) -> Result<Comparison, CompareError> {
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
        return Err(CompareError::NothingInCommon {
            baseline: baseline.to_owned(),
            current: current.to_owned(),
            baseline_cells: before.len(),
            current_cells: after.len(),
            shared: common,
            unmeasured,
        });
    }
    Ok(Comparison {
        changes,
        only_baseline: before.len() - common,
        only_current: after.len() - common,
    })
}
