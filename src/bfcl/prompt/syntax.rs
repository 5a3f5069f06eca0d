//! What every language's decoder shares: a decoded call's shape, why
//! decoding failed, and the tree-sitter parse with its checks.

use serde_json::{Map, Value};

/// One decoded call: BFCL's function name (dots kept) and its arguments,
/// in the order the model wrote them.
pub type PromptCall = (String, Map<String, Value>);

/// A call with its positional values apart: name, positional, keywords.
pub type PositionalCall = (String, Vec<Value>, Map<String, Value>);

/// The argument BFCL files under `None`: a Java or JavaScript value given
/// without a name. No function declares it, so it is always unexpected.
pub const POSITIONAL: &str = "<positional>";

/// BFCL's parsers recurse; Python stops them near this depth, and the
/// output then fails to decode.
pub(crate) const MAX_DEPTH: usize = 900;

/// Why BFCL's decoder would fail on an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub(crate) String);

impl From<String> for DecodeError {
    fn from(message: String) -> Self {
        DecodeError(message)
    }
}

impl From<&str> for DecodeError {
    fn from(message: &str) -> Self {
        DecodeError(message.to_owned())
    }
}

/// An `Err` of a decoder.
pub(crate) fn fail<T>(message: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(message.into()))
}

/// Python's `text[1:-1]`, by characters.
pub(crate) fn strip_ends(text: &str) -> String {
    let mut chars = text.chars();
    chars.next();
    chars.next_back();
    chars.collect()
}

/// Add an argument; a name given twice is an error for BFCL's Java and
/// JavaScript parsers ("multiple arguments with the same name").
pub(crate) fn insert_once(
    arguments: &mut Map<String, Value>,
    name: String,
    value: String,
) -> Result<(), DecodeError> {
    if arguments.contains_key(&name) {
        return fail(format!("the argument {name} is given twice"));
    }
    arguments.insert(name, Value::String(value));
    Ok(())
}

/// `text` parsed with tree-sitter's grammar for `language`.
pub(crate) fn parse(
    language: &tree_sitter::Language,
    text: &str,
) -> Result<tree_sitter::Tree, DecodeError> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(language).map_err(|e| e.to_string())?;
    parser
        .parse(text, None)
        .ok_or_else(|| DecodeError::from("the parser gave up"))
}

/// BFCL refuses a Java or JavaScript parse whose S-expression shows an
/// `ERROR` node; a missing token (a `;`, say) is allowed, and so is an
/// unexpected character on its own, which the S-expression writes as
/// `UNEXPECTED`. Writing the S-expression costs more than the parse, so
/// this walks the subtrees that have a problem instead.
pub(crate) fn has_error_node(tree: &tree_sitter::Tree) -> bool {
    let mut cursor = tree.root_node().walk();
    loop {
        let node = cursor.node();
        let unexpected = node.child_count() == 0 && !node.byte_range().is_empty();
        if node.is_error() && !unexpected {
            return true;
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return false;
            }
        }
    }
}
