//! Runs built in memory for the reporters' tests.

use super::{ModelInfo, RunInfo, ScenarioInfo};
use crate::metrics::{Aggregate, AttemptOutcome, TrialOutcome};

/// `models` models on one scenario: model m gets trials `0..10 * m`
/// right, so every pair differs significantly and the best is last.
pub fn ranked_run(models: usize) -> (RunInfo, Aggregate) {
    let trials = 10 * models as u32;
    let info = RunInfo {
        models: (0..models)
            .map(|m| ModelInfo {
                name: format!("m{m}"),
                prices: None,
                max_attempts: None,
            })
            .collect(),
        batch: false,
        scenarios: vec![ScenarioInfo {
            name: "s".to_owned(),
            max_attempts: 1,
            task_milestones: None,
            task_user_turns: None,
            tags: Vec::new(),
            min_success: None,
        }],
        trials,
        ..RunInfo::default()
    };
    let mut stats = info.aggregate();
    for model in 0..models {
        for trial in 0..trials {
            stats.add(&TrialOutcome {
                model,
                scenario: 0,
                trial,
                attempts: vec![AttemptOutcome {
                    attempt: 1,
                    success: trial < 10 * model as u32,
                    calls: 1,
                    ..Default::default()
                }],
                task: None,
            });
        }
    }
    (info, stats)
}
