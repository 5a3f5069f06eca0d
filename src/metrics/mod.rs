//! Measures computed from plain trial outcomes: success after each attempt,
//! conditional success, Wilson intervals, pass^k, self-correction (overall
//! and per failure kind), parallel speedup and efficiency, latency
//! percentiles, probes' rewards, and paired model comparisons with McNemar's test. Nothing
//! here knows about models, HTTP or files.

mod aggregate;
mod cell;
mod latency;
mod outcome;
pub mod recovery;
mod score;
mod stats;
mod streaming;
mod task;
mod task_stats;

pub use aggregate::{Aggregate, Paired};
pub use cell::CellStats;
pub use latency::Latencies;
pub use outcome::{AttemptOutcome, AttemptTime, TrialOutcome, TurnMeasures, UserSpend};
pub use recovery::{ErrorClass, NextMove, Recovery, RecoveryByKind, RecoveryCounts};
pub use score::{JudgeUse, PASSED, Score, ScoreStats};
pub use stats::{mcnemar_p_value, pass_hat_k, pass_hat_k_curve, pass_k_ladder, wilson_interval};
pub use streaming::{StreamStats, StreamTimes};
pub use task::{Ending, TaskEnd, histogram_mean, histogram_percentile};
pub use task_stats::TaskStats;
