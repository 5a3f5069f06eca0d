//! Thresholds and the gate: which cells break them, and the reporter that
//! keeps what broke.

use std::io;

use super::{Reporter, RunInfo};
use crate::metrics::{Aggregate, CellStats, pass_hat_k};

/// A model x scenario under its threshold, or not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub model: String,
    pub scenario: String,
    pub message: String,
}

/// Why a cell fails the run, if it does.
pub fn cell_violations(info: &RunInfo, scenario: usize, cell: &CellStats) -> Vec<String> {
    let mut found = Vec::new();
    let lost = cell.lost_trials();
    if cell.trials == 0 {
        // Trials were run but none measured the model: never a pass. (A
        // cell with no trial at all belongs to another shard.)
        if lost > 0 {
            found.push(format!(
                "not measured: all {lost} trial(s) lost ({})",
                lost_causes(cell)
            ));
        }
        return found;
    }
    if lost > 0 && cell.lost_share() > info.thresholds.max_lost {
        found.push(format!(
            "{lost} of {} trial(s) lost ({}), more than --max-lost {} allows",
            cell.trials + lost,
            lost_causes(cell),
            info.thresholds.max_lost
        ));
    }
    if let Some(min) = info.threshold(scenario)
        && cell.final_success() < min
    {
        found.push(format!("success {:.3} < {min}", cell.final_success()));
    }
    if let Some((k, min)) = info.thresholds.min_pass_k {
        let value = pass_hat_k(cell.successes(), cell.trials, k);
        if value < min {
            found.push(format!("pass^{k} {value:.3} < {min}"));
        }
    }
    found
}

/// What lost a cell's trials: `transport error 3, bad response 1`.
pub fn lost_causes(cell: &CellStats) -> String {
    cell.lost
        .iter()
        .map(|(cause, n)| format!("{} {n}", cause.as_str().replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every violation of the run, in model x scenario order; a run that
/// measured nothing at all is one.
pub fn violations(info: &RunInfo, stats: &Aggregate) -> Vec<Violation> {
    let mut found = Vec::new();
    for (m, cells) in stats.cells.iter().enumerate() {
        for (s, cell) in cells.iter().enumerate() {
            for message in cell_violations(info, s, cell) {
                found.push(Violation {
                    model: info.models[m].name.clone(),
                    scenario: info.scenarios[s].name.clone(),
                    message,
                });
            }
        }
    }
    if stats.measured_trials() == 0 && found.is_empty() {
        found.push(Violation {
            model: "(every model)".to_owned(),
            scenario: "(every scenario)".to_owned(),
            message: "not measured: no trial was run (is this shard empty?)".to_owned(),
        });
    }
    found
}

/// The threshold check for CI: the violations of a finished run.
#[derive(Debug, Default)]
pub struct Gate {
    pub violations: Vec<Violation>,
}

impl Reporter for Gate {
    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        self.violations = violations(info, stats);
        Ok(())
    }
}
