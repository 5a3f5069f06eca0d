//! The pipeline: one model reply through Parse, Validate, Execute, Return
//! and Record (`turn`). Validate (`validate`), Execute (`execute`, the
//! scheduler), the wording of errors for the model (`feedback`) and Record
//! (`record`, the JSONL session log) live here; Parse and Return are the
//! provider's wire format.

mod early;
mod execute;
pub mod feedback;
mod options;
mod record;
#[cfg(test)]
mod tests;
mod turn;
mod validate;

pub use early::EarlyRun;
pub use execute::truncate;
pub use feedback::FeedbackStyle;
pub use options::{
    Batch, DEFAULT_MAX_CONCURRENCY, DEFAULT_OUTPUT_LIMIT, ExecMode, ExecOptions, Pipeline,
};
pub use record::{Coordinates, SessionLog};
pub use turn::{Streamed, Turn};
pub use validate::{Approved, Rejection, validate, validate_among};
