//! A model x scenario cell's measures (`CellStats`), merged trial by trial.

use std::collections::BTreeMap;
use std::time::Duration;

use super::outcome::AttemptOutcome;
use super::{
    Latencies, RecoveryByKind, StreamStats, TaskStats, TrialOutcome, recovery, wilson_interval,
};
use crate::call::{Failure, Reason, Usage};

/// Running measures of one model x scenario cell: memory that follows
/// what it holds (a few hundred bytes for one trial).
#[derive(Debug, Clone)]
pub struct CellStats {
    pub trials: u64,
    pub max_attempts: u32,
    /// `first_success[k]`: trials whose first success was attempt k+1.
    pub first_success: Vec<u64>,
    /// Failures of every attempt, by kind.
    pub failures: BTreeMap<Failure, u64>,
    /// Replies with no call that wrote one as text (reason `call_as_text`):
    /// what the server did not read as a call.
    pub calls_as_text: u64,
    /// Trials whose first attempt failed with a kind, and how many of those were fixed.
    pub first_failed_by_kind: BTreeMap<Failure, (u64, u64)>,
    /// What trials did after their first told error, by its kind.
    pub recovery: RecoveryByKind,
    pub parallel_turns: u64,
    pub sum_speedup: f64,
    pub sum_ideal_speedup: f64,
    pub sum_efficiency: f64,
    pub model_ms: Latencies,
    pub tool_ms: Latencies,
    /// Streamed attempts, once one was measured.
    pub stream: Option<Box<StreamStats>>,
    /// Trials lost to infrastructure, by cause (`transport_error`,
    /// `bad_response`, `tool_unavailable`): not counted in `trials`.
    pub lost: BTreeMap<Failure, u64>,
    /// The scores of lost trials whose probe judged them (their judge
    /// failed): the parts judged without it, the reward unknown.
    pub lost_scores: crate::metrics::ScoreStats,
    /// Trials whose first attempt failed with an error the model was told
    /// about (a call error in its results), and how many of those were
    /// fixed later: self-correction from feedback.
    pub told: (u64, u64),
    /// Trials whose first attempt made no call and was not told an error:
    /// the only feedback was the nudge (`provider::NUDGE`).
    pub nudged: (u64, u64),
    /// Trials whose first attempt's calls ran and were answered with no
    /// error (a wrong call's own results): no nudge was sent, so what the
    /// model had to go on was those results.
    pub shown_results: (u64, u64),
    /// Live models: time in toolgauge's own queue, and requests tried
    /// again, over every attempt.
    pub queue: Duration,
    pub retries: u64,
    /// Tokens over every attempt, lost trials included.
    pub usage: Usage,
    /// Model and tool time over every attempt (what a CI report shows as
    /// the time a test took).
    pub busy: Duration,
    /// Set once a task trial was measured.
    pub task: Option<TaskStats>,
}

impl CellStats {
    pub fn new(max_attempts: u32) -> Self {
        CellStats {
            trials: 0,
            max_attempts,
            first_success: vec![0; max_attempts as usize],
            failures: BTreeMap::new(),
            first_failed_by_kind: BTreeMap::new(),
            recovery: BTreeMap::new(),
            parallel_turns: 0,
            sum_speedup: 0.0,
            sum_ideal_speedup: 0.0,
            sum_efficiency: 0.0,
            model_ms: Latencies::default(),
            tool_ms: Latencies::default(),
            stream: None,
            lost: BTreeMap::new(),
            lost_scores: crate::metrics::ScoreStats::default(),
            told: (0, 0),
            nudged: (0, 0),
            shown_results: (0, 0),
            calls_as_text: 0,
            queue: Duration::ZERO,
            retries: 0,
            usage: Usage::default(),
            busy: Duration::ZERO,
            task: None,
        }
    }

    pub fn add(&mut self, trial: &TrialOutcome) {
        for attempt in &trial.attempts {
            self.usage += attempt.usage;
            self.busy += attempt.time.model + attempt.time.tool;
            self.queue += attempt.time.queue;
            self.retries += u64::from(attempt.time.retries);
        }
        // A trial lost to infrastructure says nothing about the model.
        if let Some(cause) = trial.lost() {
            *self.lost.entry(cause).or_default() += 1;
            for score in trial.attempts.iter().filter_map(|a| a.score.as_ref()) {
                self.lost_scores.add(score);
            }
            return;
        }
        self.trials += 1;
        if let Some(recovery) = recovery::of_attempts(&trial.attempts) {
            self.recovery
                .entry(recovery.first)
                .or_default()
                .add(&recovery);
        }
        if let Some(k) = trial.success_attempt() {
            let slot = (k as usize - 1).min(self.first_success.len() - 1);
            self.first_success[slot] += 1;
        }
        for attempt in &trial.attempts {
            self.add_measured(attempt);
        }
        if let Some(end) = trial.task {
            // Self-correction inside a task is its recovered errors.
            self.task
                .get_or_insert_with(TaskStats::default)
                .add(trial, end);
            return;
        }
        if let Some(first) = trial.attempts.first().filter(|a| !a.success) {
            let fixed = u64::from(trial.success());
            // What the model was shown: an error, its own results, or
            // (no call at all) the nudge.
            let path = if first.failures.iter().any(|f| f.is_told()) {
                &mut self.told
            } else if first.calls > 0 {
                &mut self.shown_results
            } else {
                &mut self.nudged
            };
            path.0 += 1;
            path.1 += fixed;
            let mut kinds = first.failures.clone();
            kinds.sort_unstable();
            kinds.dedup();
            for kind in kinds {
                let entry = self.first_failed_by_kind.entry(kind).or_default();
                entry.0 += 1;
                entry.1 += u64::from(trial.success());
            }
        }
    }

    /// A measured trial's attempt: its failures, times and speedups.
    fn add_measured(&mut self, attempt: &AttemptOutcome) {
        for kind in &attempt.failures {
            *self.failures.entry(*kind).or_default() += 1;
        }
        if attempt.reason == Some(Reason::CallAsText) {
            self.calls_as_text += 1;
        }
        self.model_ms.record(attempt.time.model);
        self.tool_ms.record(attempt.time.tool);
        if let Some(stream) = &attempt.stream {
            self.stream
                .get_or_insert_default()
                .add(stream, attempt.calls, attempt.time.ideal);
        }
        if attempt.calls >= 2 && !attempt.time.tool.is_zero() {
            let serial = attempt.time.serial.as_secs_f64();
            let parallel = attempt.time.tool.as_secs_f64();
            let ideal = attempt.time.ideal.as_secs_f64().max(f64::MIN_POSITIVE);
            self.parallel_turns += 1;
            self.sum_speedup += serial / parallel;
            self.sum_ideal_speedup += serial / ideal;
            self.sum_efficiency += ideal / parallel;
        }
    }

    pub fn successes(&self) -> u64 {
        self.first_success.iter().sum()
    }

    /// Fraction of trials that succeeded by attempt k (1-based), cumulative.
    pub fn success_by(&self, k: u32) -> f64 {
        let k = (k as usize).min(self.first_success.len());
        ratio(self.first_success[..k].iter().sum(), self.trials)
    }

    /// Of the trials that reached attempt k, the fraction that succeeded there.
    pub fn conditional_success(&self, k: u32) -> Option<f64> {
        if k == 0 || k > self.max_attempts {
            return None;
        }
        let before: u64 = self.first_success[..k as usize - 1].iter().sum();
        let reached = self.trials - before;
        (reached > 0).then(|| ratio(self.first_success[k as usize - 1], reached))
    }

    pub fn final_success(&self) -> f64 {
        ratio(self.successes(), self.trials)
    }

    pub fn wilson(&self) -> (f64, f64) {
        wilson_interval(self.successes(), self.trials)
    }

    /// Mean attempts of the trials that succeeded.
    pub fn mean_attempts_to_success(&self) -> Option<f64> {
        let successes = self.successes();
        let weighted: u64 = self
            .first_success
            .iter()
            .enumerate()
            .map(|(i, n)| (i as u64 + 1) * n)
            .sum();
        (successes > 0).then(|| weighted as f64 / successes as f64)
    }

    /// Of the trials whose first attempt failed, the fraction fixed later.
    pub fn self_correction_rate(&self) -> Option<f64> {
        let failed_first = self.trials - self.first_success[0];
        let fixed = self.successes() - self.first_success[0];
        (failed_first > 0).then(|| ratio(fixed, failed_first))
    }

    pub fn mean_speedup(&self) -> Option<(f64, f64, f64)> {
        (self.parallel_turns > 0).then(|| {
            let n = self.parallel_turns as f64;
            (
                self.sum_speedup / n,
                self.sum_ideal_speedup / n,
                self.sum_efficiency / n,
            )
        })
    }

    /// Trials lost to infrastructure, whatever the cause.
    pub fn lost_trials(&self) -> u64 {
        self.lost.values().sum()
    }

    /// Trials lost to `cause`.
    pub fn lost_to(&self, cause: Failure) -> u64 {
        self.lost.get(&cause).copied().unwrap_or(0)
    }

    /// Of the trials run (measured or lost), the share lost.
    pub fn lost_share(&self) -> f64 {
        ratio(self.lost_trials(), self.trials + self.lost_trials())
    }

    /// Of the trials whose first attempt failed with an error the model
    /// was told about, the share fixed later.
    pub fn fixed_after_feedback(&self) -> Option<f64> {
        (self.told.0 > 0).then(|| ratio(self.told.1, self.told.0))
    }

    /// Of the trials whose first attempt made no call, the share fixed
    /// after the nudge.
    pub fn fixed_after_nudge(&self) -> Option<f64> {
        (self.nudged.0 > 0).then(|| ratio(self.nudged.1, self.nudged.0))
    }

    /// Of the trials whose first attempt's wrong calls got their own
    /// results and no error, the share fixed after those results.
    pub fn fixed_after_results(&self) -> Option<f64> {
        (self.shown_results.0 > 0).then(|| ratio(self.shown_results.1, self.shown_results.0))
    }

    /// Merge another cell's measures into this one (shards, model totals).
    pub fn merge(&mut self, other: &CellStats) {
        self.trials += other.trials;
        for (cause, n) in &other.lost {
            *self.lost.entry(*cause).or_default() += n;
        }
        self.lost_scores.merge(&other.lost_scores);
        self.told.0 += other.told.0;
        self.told.1 += other.told.1;
        self.nudged.0 += other.nudged.0;
        self.nudged.1 += other.nudged.1;
        self.shown_results.0 += other.shown_results.0;
        self.shown_results.1 += other.shown_results.1;
        self.calls_as_text += other.calls_as_text;
        self.queue += other.queue;
        self.retries += other.retries;
        self.usage += other.usage;
        self.busy += other.busy;
        if other.first_success.len() > self.first_success.len() {
            self.first_success.resize(other.first_success.len(), 0);
            self.max_attempts = other.max_attempts;
        }
        for (i, n) in other.first_success.iter().enumerate() {
            self.first_success[i] += n;
        }
        for (kind, n) in &other.failures {
            *self.failures.entry(*kind).or_default() += n;
        }
        for (kind, counts) in &other.recovery {
            self.recovery.entry(*kind).or_default().merge(counts);
        }
        for (kind, (failed, fixed)) in &other.first_failed_by_kind {
            let entry = self.first_failed_by_kind.entry(*kind).or_default();
            entry.0 += failed;
            entry.1 += fixed;
        }
        self.parallel_turns += other.parallel_turns;
        self.sum_speedup += other.sum_speedup;
        self.sum_ideal_speedup += other.sum_ideal_speedup;
        self.sum_efficiency += other.sum_efficiency;
        self.model_ms.merge(&other.model_ms);
        self.tool_ms.merge(&other.tool_ms);
        if let Some(stream) = &other.stream {
            self.stream.get_or_insert_default().merge(stream);
        }
        if let Some(task) = &other.task {
            self.task.get_or_insert_with(TaskStats::default).merge(task);
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(n: u32, success: bool, failures: &[Failure]) -> AttemptOutcome {
        AttemptOutcome {
            attempt: n,
            success,
            failures: failures.to_vec(),
            reason: None,
            usage: Default::default(),
            calls: 3,
            time: crate::metrics::AttemptTime {
                model: Duration::from_millis(100),
                tool: Duration::from_millis(100),
                serial: Duration::from_millis(300),
                ideal: Duration::from_millis(100),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn trial(attempts: Vec<AttemptOutcome>) -> TrialOutcome {
        TrialOutcome {
            model: 0,
            scenario: 0,
            trial: 0,
            attempts,
            task: None,
        }
    }

    #[test]
    fn success_by_attempt_conditional_and_self_correction() {
        let mut cell = CellStats::new(3);
        cell.add(&trial(vec![attempt(1, true, &[])]));
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::Validation]),
            attempt(2, true, &[]),
        ]));
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::UnknownTool]),
            attempt(2, false, &[Failure::Validation]),
            attempt(3, false, &[Failure::Validation]),
        ]));
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::Validation, Failure::Validation]),
            attempt(2, false, &[Failure::Validation]),
            attempt(3, true, &[]),
        ]));
        assert_eq!(cell.success_by(1), 0.25);
        assert_eq!(cell.success_by(2), 0.5);
        assert_eq!(cell.success_by(3), 0.75);
        assert_eq!(cell.conditional_success(2), Some(1.0 / 3.0));
        assert_eq!(cell.conditional_success(3), Some(0.5));
        assert_eq!(cell.self_correction_rate(), Some(2.0 / 3.0));
        assert_eq!(cell.mean_attempts_to_success(), Some(2.0));
        assert_eq!(cell.first_failed_by_kind[&Failure::Validation], (2, 2));
        assert_eq!(cell.first_failed_by_kind[&Failure::UnknownTool], (1, 0));
        assert_eq!(cell.failures[&Failure::Validation], 6);
        let (speedup, ideal, efficiency) = cell.mean_speedup().unwrap();
        for (measured, expected) in [(speedup, 3.0), (ideal, 3.0), (efficiency, 1.0)] {
            assert!(
                (measured - expected).abs() < 1e-9,
                "{measured} != {expected}"
            );
        }
        let p50 = cell.tool_ms.percentile_ms(0.5).unwrap();
        assert!((p50 - 100.0).abs() < 0.1, "{p50}"); // 3 significant digits
    }

    #[test]
    fn a_retry_counts_as_after_a_nudge_only_where_a_nudge_was_sent() {
        let mut cell = CellStats::new(3);
        // Told of a validation error, then fixed.
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::Validation]),
            attempt(2, true, &[]),
        ]));
        // A wrong call gets no error text and no nudge: its own results
        // were all it was shown.
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::WrongCall]),
            attempt(2, true, &[]),
        ]));
        // No call at all: the nudge was sent, then fixed.
        let mut silent = attempt(1, false, &[Failure::MissingCall]);
        silent.calls = 0;
        cell.add(&trial(vec![silent.clone(), attempt(2, true, &[])]));
        cell.add(&trial(vec![
            silent,
            attempt(2, false, &[Failure::MissingCall]),
            attempt(3, false, &[Failure::MissingCall]),
        ]));
        // Both kinds at once: the model was told something.
        cell.add(&trial(vec![
            attempt(1, false, &[Failure::WrongCall, Failure::Runtime]),
            attempt(2, false, &[Failure::Runtime]),
            attempt(3, false, &[Failure::Runtime]),
        ]));
        assert_eq!(cell.told, (2, 1));
        assert_eq!(cell.nudged, (2, 1));
        assert_eq!(cell.shown_results, (1, 1));
        assert_eq!(cell.fixed_after_feedback(), Some(0.5));
        assert_eq!(cell.fixed_after_nudge(), Some(0.5));
        assert_eq!(cell.fixed_after_results(), Some(1.0));
    }

    #[test]
    fn a_lost_trial_measures_nothing_and_is_counted_by_cause() {
        let mut cell = CellStats::new(3);
        cell.add(&trial(vec![attempt(1, true, &[])]));
        for cause in [
            Failure::TransportError,
            Failure::BadResponse,
            Failure::ToolUnavailable,
        ] {
            cell.add(&trial(vec![
                attempt(1, false, &[Failure::Validation]),
                attempt(2, false, &[cause]),
            ]));
        }
        assert_eq!(cell.trials, 1);
        assert_eq!(cell.final_success(), 1.0);
        assert_eq!(cell.lost_trials(), 3);
        assert_eq!(cell.lost_to(Failure::BadResponse), 1);
        assert_eq!(cell.lost_share(), 0.75);
        assert!(!cell.failures.contains_key(&Failure::Validation));
    }
}
