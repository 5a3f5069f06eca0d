//! Prompt-mode outputs: models run by BFCL in prompting mode answer with
//! call syntax, `[get_weather(city="Paris", days=3), f(x=[1, 2])]`, which
//! BFCL decodes by the entry's language (`default_decode_ast_prompting`):
//! Python with Python's parser, Java and JavaScript with tree-sitter's
//! grammars. Each language's reading is its own module; this one owns the
//! framing they share and the choice among them.

mod decode;
mod java;
mod javascript;
mod python;
mod python_eval;
mod syntax;

#[cfg(test)]
pub(crate) use decode::decode_one;
pub use decode::{decode, decode_ground_truth_call};
pub use syntax::{DecodeError, POSITIONAL, PositionalCall, PromptCall};
pub(crate) use syntax::{MAX_DEPTH, fail, has_error_node, insert_once, parse, strip_ends};
