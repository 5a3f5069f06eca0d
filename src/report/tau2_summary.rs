//! tau2's own summary of a run (`report tau2`): for each model and tau2
//! domain, what tau2's `compute_metrics` (`tau2/metrics/agent_metrics.py`)
//! gives on the same simulations, under its field names: the average
//! reward and pass^k over the trials not lost to infrastructure (tau2's
//! `infrastructure_error`), pass^k for k from 1 to the fewest trials of
//! any task, the trials by why they ended, and tau2's database check;
//! beside them each reward component's pass rate, as tau2's
//! `analyze_reward` counts it over the simulations that weigh it.
//!
//! A tau2 scenario is one tagged `tau2`; its domain is its next tag, as
//! `import tau2` writes them (`["tau2", "airline", ...]`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::RunInfo;
use crate::metrics::{Aggregate, ScoreStats};

/// tau2's metrics of one model on one domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tau2Metrics {
    pub model: String,
    pub domain: String,
    pub avg_reward: f64,
    /// k -> the mean over tasks of C(c, k) / C(n, k).
    pub pass_hat_ks: BTreeMap<u64, f64>,
    /// Trials scored: those not lost to infrastructure.
    pub total_simulations: u64,
    pub total_tasks: u64,
    /// Trials lost to infrastructure (a server, a tool, the transport):
    /// left out of every measure above, as tau2 leaves its own out.
    pub infra_error_count: u64,
    pub db_match_count: u64,
    pub db_mismatch_count: u64,
    pub db_not_checked: u64,
    pub termination_user_stop: u64,
    pub termination_agent_stop: u64,
    pub termination_max_steps: u64,
    /// `too_many_errors`, `agent_error` and `user_error`.
    pub termination_error: u64,
    pub termination_infrastructure_error: u64,
    /// By tau2's reward type (`DB`, `COMMUNICATE`, ...).
    pub components: BTreeMap<String, ComponentRate>,
}

/// A reward component over the simulations that weigh it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ComponentRate {
    pub passed: u64,
    pub of: u64,
    pub rate: f64,
}

/// One domain's scored tasks so far: their scores merged, each task's
/// (rewarded, scored), and the trials lost.
#[derive(Default)]
struct Domain {
    scores: ScoreStats,
    tasks: Vec<(u64, u64)>,
    lost: u64,
}

/// tau2's metrics of every model on every tau2 domain of the run, by
/// model then domain.
pub fn tau2_metrics(info: &RunInfo, stats: &Aggregate) -> Vec<Tau2Metrics> {
    let mut all = Vec::new();
    for (m, model) in info.models.iter().enumerate() {
        let mut domains: BTreeMap<&str, Domain> = BTreeMap::new();
        for (s, scenario) in info.scenarios.iter().enumerate() {
            let mut tags = scenario.tags.iter();
            if !tags.any(|t| t == "tau2") {
                continue;
            }
            let Some(domain) = tags.next() else { continue };
            let cell = &stats.cells[m][s];
            let entry = domains.entry(domain).or_default();
            entry.lost += cell.lost.values().sum::<u64>();
            // Measured trials only: a lost one is tau2's infrastructure
            // error, its judge's failure too.
            if let Some(scores) = cell.task.as_ref().map(|t| &t.scores)
                && scores.scored > 0
            {
                entry.scores.merge(scores);
                entry.tasks.push((scores.rewarded, scores.scored));
            }
        }
        for (domain, seen) in domains {
            all.push(metrics_of(&model.name, domain, &seen));
        }
    }
    all
}

fn metrics_of(model: &str, domain: &str, seen: &Domain) -> Tau2Metrics {
    let s = &seen.scores;
    let ended = |reason: &str| s.reasons.get(reason).copied().unwrap_or(0);
    let (db_yes, db_checked) = s.checks.get("db_match").copied().unwrap_or((0, 0));
    let pass_hat_ks = super::scores::pass_k(&seen.tasks).into_iter().collect();
    let components = s
        .components
        .iter()
        .map(|(name, &(passed, of))| {
            let rate = passed as f64 / of.max(1) as f64;
            (name.clone(), ComponentRate { passed, of, rate })
        })
        .collect();
    Tau2Metrics {
        model: model.to_owned(),
        domain: domain.to_owned(),
        avg_reward: s.mean_reward().unwrap_or(0.0),
        pass_hat_ks,
        total_simulations: s.scored,
        total_tasks: seen.tasks.len() as u64,
        infra_error_count: seen.lost,
        db_match_count: db_yes,
        db_mismatch_count: db_checked - db_yes,
        db_not_checked: s.scored - db_checked,
        termination_user_stop: ended("user_stop"),
        termination_agent_stop: ended("agent_stop"),
        termination_max_steps: ended("max_steps"),
        termination_error: ended("too_many_errors") + ended("agent_error") + ended("user_error"),
        termination_infrastructure_error: seen.lost,
        components,
    }
}
