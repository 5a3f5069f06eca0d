//! toolgauge drives the tool-calling pipeline of an LLM agent and measures it:
//! Parse the model's response, Validate the arguments against the tool's
//! JSON Schema, Execute the tool, Return the result to the model, Record
//! both to a JSONL log.
//!
//! # Layout
//!
//! One house where data flows one way:
//! `cli -> harness -> {model, pipeline, scenario} -> {provider, tool, schema} -> call`,
//! with [`report`] and [`metrics`] fed plain outcomes and events. Every
//! module, what it owns and its dependencies are in ARCHITECTURE.md.

pub mod batch;
pub mod bfcl;
pub mod call;
pub mod child;
pub mod cli;
pub mod doctor;
pub mod excerpt;
pub mod fuzz;
pub mod harness;
mod json_eq;
mod json_writer;
pub mod markup;
pub mod metrics;
pub mod model;
pub mod pipeline;
pub mod pointer;
pub mod provider;
pub mod report;
pub mod scenario;
pub mod schema;
pub mod secret;
pub mod source;
pub mod tau2;
pub mod tool;
pub mod traces;
pub mod transport;
pub mod whole_file;
