//! Why a run stopped before its end (`RunError`): interrupted, out of
//! budget, a batch it could not follow, or its runtime.

use super::Spent;

/// Why a run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A reporter could not write.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A replayed request the recording does not hold: the run stops.
    #[error(transparent)]
    NotRecorded(#[from] crate::model::NotRecorded),
    /// A batch could not be followed to its end: every finished trial was
    /// handed to the reporters first, and `--resume` follows the batch.
    #[error(transparent)]
    BatchUnfinished(crate::batch::Unfinished),
    /// Stopped on request (Ctrl-C): every finished trial was handed to the
    /// reporters first.
    #[error("interrupted after {finished} of {total} trial(s)")]
    Interrupted { finished: u64, total: u64 },
    /// The next request would have passed the budget: every finished
    /// trial was handed to the reporters first.
    #[error("the budget was spent after {finished} of {total} trial(s)")]
    BudgetSpent {
        finished: u64,
        total: u64,
        spent: Spent,
        /// What was spent on the trials it cut, and how many they are.
        cut: (Spent, usize),
    },
}
