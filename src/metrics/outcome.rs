//! A trial's plain outcome and the measures of a model x scenario cell.

use std::time::Duration;

use super::{Score, StreamTimes, TaskEnd};
use crate::call::{Failure, Reason, Usage};

/// The outcome of one attempt (one model turn; in a task, one turn of it):
/// its verdict, then its measures grouped by what they measure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptOutcome {
    pub attempt: u32,
    pub success: bool,
    /// Every failure of the attempt, one per failed call.
    pub failures: Vec<Failure>,
    /// Why the calls did not match, in BFCL's words (BFCL-rules scenarios),
    /// or that a call was written as text.
    pub reason: Option<Reason>,
    /// The parameter the reason is about, when it is about one.
    pub reason_parameter: Option<String>,
    pub calls: u32,
    /// Calls that broke their tool's schema (toolgauge's validation),
    /// whatever the verdict: under BFCL rules they do not fail it.
    pub schema_errors: u32,
    /// A call of this attempt repeats exactly (name and arguments) a call
    /// that failed in the attempt before: the same call again.
    pub repeated_failed_call: bool,
    pub time: AttemptTime,
    /// Tokens of the model's reply (live models; zero for mocks).
    pub usage: Usage,
    /// A streamed reply: when its parts came, and its calls run early.
    pub stream: Option<StreamTimes>,
    /// Tasks: where this turn stands in the conversation.
    pub turn: TurnMeasures,
    /// A simulated user's spend for what it said after this model turn
    /// (apart from the agent's).
    pub user: UserSpend,
    /// Tasks, on the model turn whose user turn a scoring probe judged:
    /// the probe's reward and its parts.
    pub score: Option<Score>,
}

/// Where an attempt's time went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AttemptTime {
    /// The model's time: for a live model, request sent to response read
    /// on the try that was answered; for a mock, its simulated latency.
    pub model: Duration,
    /// Live models: time in toolgauge's own queue (a permit, the pace).
    pub queue: Duration,
    /// Live models: requests tried again before this one was answered,
    /// and the time those tries and their backoff took.
    pub retries: u32,
    pub retry: Duration,
    /// The batch's makespan as scheduled.
    pub tool: Duration,
    /// All calls one after the other.
    pub serial: Duration,
    /// The best makespan possible given the write barriers.
    pub ideal: Duration,
}

/// A task turn's place and progress in its conversation (zero outside
/// tasks).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TurnMeasures {
    /// The user turn this model turn answers (1: the opening one).
    pub user_turn: u32,
    /// On a user turn's last model turn: whether that user turn passed
    /// its checks.
    pub user_turn_passed: Option<bool>,
    /// Milestones first reached in this turn.
    pub milestones: u32,
    /// Calls repeating an earlier successful call exactly.
    pub redundant: u32,
    /// Of this turn's call errors, those a later turn recovered from (a
    /// later turn whose calls all succeeded).
    pub recovered: u32,
}

/// A simulated user's tokens and their price.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UserSpend {
    pub usage: Usage,
    pub cost: f64,
}

/// One trial: a scenario run against a model until success or out of attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialOutcome {
    pub model: usize,
    pub scenario: usize,
    pub trial: u32,
    /// In a task, one per turn.
    pub attempts: Vec<AttemptOutcome>,
    /// Set for a task: how it ended and was judged.
    pub task: Option<TaskEnd>,
}

impl TrialOutcome {
    /// The infrastructure failure that lost the trial, if one did: then
    /// it measured nothing of the model.
    pub fn lost(&self) -> Option<Failure> {
        self.attempts
            .iter()
            .flat_map(|a| &a.failures)
            .copied()
            .find(|f| f.is_infrastructure())
    }

    pub fn success(&self) -> bool {
        match self.task {
            Some(end) => end.success,
            None => self.attempts.last().is_some_and(|a| a.success),
        }
    }

    /// The attempt that succeeded (1-based), if any; a task is one attempt.
    pub fn success_attempt(&self) -> Option<u32> {
        match self.task {
            Some(end) => end.success.then_some(1),
            None => self.attempts.iter().find(|a| a.success).map(|a| a.attempt),
        }
    }
}
