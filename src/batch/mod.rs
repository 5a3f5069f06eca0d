//! The providers' batch APIs (`run --batch`): a round of requests written
//! as the provider's batch (OpenAI's JSONL file of `custom_id` lines,
//! Anthropic's Message Batches, Gemini's batch mode), submitted, polled
//! with backoff until it ends, and each request's answer read back as the
//! body a live request would have had. `rounds` gathers a model's trials
//! into rounds; `ledger` keeps every batch submitted in the run folder, so
//! that `--resume` follows a batch already paid for instead of sending it
//! again. Credentials go only where the model file's endpoint is: a
//! results address elsewhere is refused.

mod anthropic;
mod client;
mod follow;
mod gemini;
pub mod ledger;
mod openai;
pub mod rounds;

pub use client::{
    BATCH_PRICE_FACTOR, BatchClient, BatchItem, DEFAULT_FIRST_POLL, Ended, FollowError, ItemAnswer,
    MAX_POLL_INTERVAL, Polled, SubmitError, Unfinished, at_batch_rate, limits,
};
pub(crate) use client::{id_in, json_lines, same_origin};
pub use ledger::{BatchEntry, Ledger};
pub use rounds::{OpenTrial, RoundError, Rounds};
