//! The Berkeley Function Calling Leaderboard, in one home: its data files
//! (JSON Lines of questions and possible answers), its schema dialect, its
//! answer format, its matching rules (`rules`: BFCL's checker's verdict,
//! `values` and `source` for how it compares values and reads Java and
//! JavaScript source text, `reason` for its error types), the prompt-mode
//! decoders, the replay of published results, and the import of its
//! entries as scenarios.

pub mod agentic;
pub mod answer;
mod bridge_ask;
pub mod dialect;
mod entry;
pub mod import;
pub mod memory;
pub mod multi_turn;
pub mod prompt;
mod reason;
pub mod recovery;
pub mod results;
pub mod rules;
pub mod source;
pub mod values;
pub mod web_search;

pub use bridge_ask::BridgeError;
pub use entry::{
    AnswerEntry, BfclError, Entry, Language, SINGLE_TURN_CATEGORIES, category_of, read_jsonl,
};
