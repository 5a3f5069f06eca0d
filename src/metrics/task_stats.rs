//! Running task measures of one cell: progress over milestones, turns and
//! calls per task, redundant calls, recovered errors, user turns survived.

use std::collections::BTreeMap;

use super::{ScoreStats, TaskEnd, TrialOutcome};

impl TrialOutcome {
    /// A task's user turns passed before the first that failed (or was
    /// never reached).
    pub fn user_turns_survived(&self) -> u32 {
        self.attempts
            .iter()
            .filter_map(|a| a.turn.user_turn_passed)
            .take_while(|passed| *passed)
            .count() as u32
    }
}

/// Running task measures of one cell: a few counters and two small
/// histograms (turns and calls per task take few distinct values).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskStats {
    pub tasks: u64,
    pub milestones_reached: u64,
    pub milestones_possible: u64,
    /// Tasks by how many turns they took.
    pub turns: BTreeMap<u32, u64>,
    /// Tasks by how many calls they made.
    pub calls: BTreeMap<u32, u64>,
    pub redundant_calls: u64,
    /// Failed calls (and unreadable replies).
    pub errors: u64,
    /// Of those, the ones a later turn recovered from.
    pub recovered: u64,
    /// User turns there were, and those passed (a turn never reached
    /// counts as not passed); user turns survived, summed over tasks.
    pub user_turns: u64,
    pub user_turns_passed: u64,
    pub survived: u64,
    /// A simulated user's tokens, input and output.
    pub user_tokens: u64,
    /// What scoring probes gave (empty without one).
    pub scores: ScoreStats,
}

impl TaskStats {
    pub fn add(&mut self, trial: &TrialOutcome, end: TaskEnd) {
        self.tasks += 1;
        self.milestones_possible += u64::from(end.milestones);
        let mut calls = 0;
        for turn in &trial.attempts {
            self.milestones_reached += u64::from(turn.turn.milestones);
            self.redundant_calls += u64::from(turn.turn.redundant);
            self.recovered += u64::from(turn.turn.recovered);
            self.errors += turn.failures.iter().filter(|f| f.is_call_error()).count() as u64;
            calls += turn.calls;
        }
        *self.turns.entry(trial.attempts.len() as u32).or_default() += 1;
        *self.calls.entry(calls).or_default() += 1;
        self.user_turns += u64::from(end.user_turns);
        self.user_turns_passed += trial
            .attempts
            .iter()
            .filter(|a| a.turn.user_turn_passed == Some(true))
            .count() as u64;
        self.survived += u64::from(trial.user_turns_survived());
        self.user_tokens += trial
            .attempts
            .iter()
            .map(|a| a.user.usage.input_tokens + a.user.usage.output_tokens)
            .sum::<u64>();
        for score in trial.attempts.iter().filter_map(|a| a.score.as_ref()) {
            self.scores.add(score);
        }
    }

    pub fn merge(&mut self, other: &TaskStats) {
        self.tasks += other.tasks;
        self.milestones_reached += other.milestones_reached;
        self.milestones_possible += other.milestones_possible;
        for (n, count) in &other.turns {
            *self.turns.entry(*n).or_default() += count;
        }
        for (n, count) in &other.calls {
            *self.calls.entry(*n).or_default() += count;
        }
        self.redundant_calls += other.redundant_calls;
        self.errors += other.errors;
        self.recovered += other.recovered;
        self.user_turns += other.user_turns;
        self.user_turns_passed += other.user_turns_passed;
        self.survived += other.survived;
        self.user_tokens += other.user_tokens;
        self.scores.merge(&other.scores);
    }

    /// Conversations only (a task whose user speaks more than once): of
    /// the user turns, the share passed, and the user turns survived per
    /// task (passed before the first that failed).
    pub fn user_turn_measures(&self) -> Option<(f64, f64)> {
        (self.user_turns > self.tasks && self.tasks > 0).then(|| {
            (
                self.user_turns_passed as f64 / self.user_turns as f64,
                self.survived as f64 / self.tasks as f64,
            )
        })
    }

    /// Milestones reached over milestones there were (AgentBoard's
    /// progress rate); `None` when the tasks have none.
    pub fn progress_rate(&self) -> Option<f64> {
        (self.milestones_possible > 0)
            .then(|| self.milestones_reached as f64 / self.milestones_possible as f64)
    }

    /// Of the call errors, the share recovered later in their task.
    pub fn recovery_rate(&self) -> Option<f64> {
        (self.errors > 0).then(|| self.recovered as f64 / self.errors as f64)
    }
}
