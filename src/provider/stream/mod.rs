//! Streamed replies: server-sent events, read with `sse-stream`, each
//! event read once. OpenAI Chat's are read into typed fields, each call
//! straight from its deltas (`chat`): the reply comes with Parse's
//! answer and its body written once. The other formats' events (their
//! deltas typed, the rest as JSON) are each taken as they come into the
//! body the same reply has whole, which Parse reads at the end; a call
//! handed over early is read from its own part of that body alone. Per
//! format: OpenAI Chat's `chat.completion.chunk`s, tool
//! call deltas routed by `index` (by `id` when calls share an index, and
//! an id that comes after the arguments joins them); the Responses API's
//! events by `item_id` and `output_index` (its final `response.completed`
//! holds the whole response, and wins); Anthropic's content blocks by
//! `index` (`input` whole in `content_block_start`, or in
//! `input_json_delta` parts); Gemini's chunks, each call whole. A stream
//! cut in the middle of a call leaves its arguments unfinished, which
//! Parse reports as that call's problem, never a panic.
//!
//! A stream read as it comes ([`read`]) is timed event by event
//! ([`Assembly`]): first byte, first token, each call complete, end. A
//! stream that stalls past its deadline, is cut before its last event or
//! carries an error event has failed ([`StreamFailure`]): the server's
//! failure, which loses the trial, never a reply of the model's.

mod anthropic;
mod assemble;
mod assembly;
mod chat;
mod ending;
mod formats;
mod gemini;
mod pieces;
mod positioned;
mod progress;
mod responses;

pub use assembly::{
    Assembled, Assembly, Frame, NotAStream, Received, StreamFailure, assemble, frames, parse_whole,
    read, replay, whole_body,
};
pub use formats::ask_for_stream;
