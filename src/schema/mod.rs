//! JSON Schema, the product's core, in one room: which draft a schema is
//! written in, how it compiles (`Compiled`: the general validator and,
//! for the subset most tools use, the `fast` check beside it), how a
//! violation is worded for the model (`errors`), and the instances the
//! fuzzer and the mocks make of it: valid ones (`generate`) and ones just
//! outside each keyword's bound (`mutate`). The `jsonschema` crate is
//! named here and nowhere else but the scenario file format's own check.

mod compiled;
pub mod errors;
pub mod fast;
pub mod generate;
pub mod mutate;
pub mod python;

pub use compiled::{
    BadDraft, Compiled, SchemaError, SchemaErrorKind, draft_of, options, problems, required_names,
};
pub use errors::ArgumentError;
/// A draft of JSON Schema.
pub use jsonschema::Draft;
