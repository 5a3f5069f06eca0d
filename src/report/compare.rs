//! `report compare`: a run's summary.csv against a baseline's, per model x
//! scenario measured in both, and per model over every cell both runs
//! measured (a sign test over the cells: a small drop in every cell is a
//! drop, though no one cell shows it).

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

/// One model over every cell both runs measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChange {
    pub model: String,
    pub cells: usize,
    /// Mean final success over those cells, in each run.
    pub baseline: f64,
    pub current: f64,
    /// Cells that went down, and up (ties left out).
    pub drops: usize,
    pub gains: usize,
    /// The exact two-sided sign test on drops against gains.
    pub p_value: f64,
}

impl ModelChange {
    /// More cells went down than chance allows.
    pub fn significant_drop(&self) -> bool {
        self.drops > self.gains && self.p_value < crate::report::summary::ALPHA
    }
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
    /// Per model, over the cells both runs measured, in first-seen order.
    pub models: Vec<ModelChange>,
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
        models: model_changes(&changes),
        changes,
        only_baseline: before.len() - common,
        only_current: after.len() - common,
    })
}

/// Each model's cells taken together.
fn model_changes(changes: &[Change]) -> Vec<ModelChange> {
    let mut models: Vec<ModelChange> = Vec::new();
    for change in changes {
        let at = match models.iter().position(|m| m.model == change.model) {
            Some(at) => at,
            None => {
                models.push(ModelChange {
                    model: change.model.clone(),
                    cells: 0,
                    baseline: 0.0,
                    current: 0.0,
                    drops: 0,
                    gains: 0,
                    p_value: 1.0,
                });
                models.len() - 1
            }
        };
        let model = &mut models[at];
        model.cells += 1;
        model.baseline += change.baseline;
        model.current += change.current;
        model.drops += usize::from(change.current < change.baseline);
        model.gains += usize::from(change.current > change.baseline);
    }
    for model in &mut models {
        model.baseline /= model.cells as f64;
        model.current /= model.cells as f64;
        // McNemar's exact test is the sign test on the discordant pairs.
        model.p_value = crate::metrics::mcnemar_p_value(model.drops as u64, model.gains as u64);
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(dir: &Path, rate: f64, low: f64, high: f64) {
        let mut text = String::from("model,scenario,final_success,wilson_low,wilson_high\n");
        for s in 0..20 {
            text.push_str(&format!("m,s{s},{rate},{low},{high}\n"));
        }
        std::fs::write(dir.join("summary.csv"), text).unwrap();
    }

    #[test]
    fn a_drop_across_the_whole_suite_is_significant_though_no_cell_shows_it() {
        let (before, after) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // 5 trials a cell: 100% [56.6%, 100%] then 80% [37.6%, 96.4%].
        summary(before.path(), 1.0, 0.566, 1.0);
        summary(after.path(), 0.8, 0.376, 0.964);
        let comparison = compare(before.path(), after.path()).unwrap();
        assert!(
            comparison
                .changes
                .iter()
                .all(|c| c.significant_drop.is_none())
        );
        let model = &comparison.models[0];
        assert_eq!((model.cells, model.drops, model.gains), (20, 20, 0));
        assert!(model.significant_drop(), "{model:?}");
        assert!((model.current - model.baseline + 0.2).abs() < 1e-9);
        // The same suite again: nothing went down.
        let same = compare(before.path(), before.path()).unwrap();
        assert!(!same.models[0].significant_drop());
    }
}
