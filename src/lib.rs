//! toolgauge drives the tool-calling pipeline of an LLM agent and measures it:
//! Parse the model's response, Validate the arguments against the tool's
//! JSON Schema, Execute the tool, Return the result to the model, Record
//! both to a JSONL log.
//!
//! # Layout
//!
//! - [`call`]: the provider-neutral values that flow between stages.
//! - [`tool`]: tool definitions, their checks, the [`tool::Registry`] of
//!   compiled validators (with the quick check for the common schema
//!   subset), built-in tools and the file sandbox.
//! - [`provider`]: OpenAI, Anthropic and Gemini wire formats (Parse, Return,
//!   tool definitions).
//! - [`pipeline`]: Validate, Execute (the scheduler), error wording, Record.
//! - [`source`]: reading JSON input files with located errors.
//! - [`excerpt`]: long values cut to an excerpt in every message.
//! - [`cli`]: the command-line interface; `main.rs` only calls it.
//!
//! Dependencies point one way: `cli -> pipeline -> {provider, tool} -> call`.

pub mod bfcl;
pub mod call;
pub mod cli;
pub mod excerpt;
pub mod fuzz;
pub mod harness;
mod json_writer;
pub mod metrics;
pub mod model;
pub mod pipeline;
pub mod provider;
pub mod report;
pub mod scenario;
pub mod source;
pub mod tool;
pub mod transport;
