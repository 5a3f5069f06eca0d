//! Prompt-mode outputs: models run by BFCL in prompting mode answer with
//! call syntax, `[get_weather(city="Paris", days=3), f(x=[1, 2])]`, which
//! BFCL decodes by the entry's language (`default_decode_ast_prompting`):
//! Python with Python's parser, Java and JavaScript with tree-sitter's
//! grammars. Each language's reading is its own module; this one owns the
//! framing they share and the choice among them.

mod java;
mod javascript;
mod python;
mod python_eval;

use serde_json::{Map, Value};

use super::Language;

/// One decoded call: BFCL's function name (dots kept) and its arguments,
/// in the order the model wrote them.
pub type PromptCall = (String, Map<String, Value>);

/// A call with its positional values apart: name, positional, keywords.
pub type PositionalCall = (String, Vec<Value>, Map<String, Value>);

/// Read one Python call of BFCL's multi-turn ground truth, positional
/// values kept (see `python::decode_positional`).
pub fn decode_ground_truth_call(text: &str) -> Result<PositionalCall, DecodeError> {
    python::decode_positional(text.trim())
}

/// The argument BFCL files under `None`: a Java or JavaScript value given
/// without a name. No function declares it, so it is always unexpected.
pub const POSITIONAL: &str = "<positional>";

/// BFCL's parsers recurse; Python stops them near this depth, and the
/// output then fails to decode.
const MAX_DEPTH: usize = 900;

/// Why BFCL's decoder would fail on an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(String);

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
fn fail<T>(message: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(message.into()))
}

/// Decode a prompt-mode output of an entry in `language` as BFCL does;
/// `Err` says why BFCL's decoder would fail on it.
pub fn decode(result: &str, language: Language) -> Result<Vec<PromptCall>, DecodeError> {
    let framed = framed(result);
    match language {
        Language::Python => python::decode(&framed),
        // BFCL drops the first and last characters, the brackets it added
        // or the model wrote.
        Language::Java => java::decode(without_brackets(&framed)),
        Language::JavaScript => javascript::decode(without_brackets(&framed)),
    }
}

/// The output without code fences, inside `[` and `]`.
fn framed(result: &str) -> String {
    let mut text = result
        .trim_matches(|c| c == '`' || c == '\n' || c == ' ')
        .to_owned();
    if !text.starts_with('[') {
        text.insert(0, '[');
    }
    if !text.ends_with(']') {
        text.push(']');
    }
    text
}

fn without_brackets(framed: &str) -> &str {
    // `framed` starts with `[` and ends with `]`; `[]` leaves nothing.
    framed.get(1..framed.len() - 1).unwrap_or_default()
}

/// Python's `text[1:-1]`, by characters.
fn strip_ends(text: &str) -> String {
    let mut chars = text.chars();
    chars.next();
    chars.next_back();
    chars.collect()
}

/// Add an argument; a name given twice is an error for BFCL's Java and
/// JavaScript parsers ("multiple arguments with the same name").
fn insert_once(
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
fn parse(language: &tree_sitter::Language, text: &str) -> Result<tree_sitter::Tree, DecodeError> {
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
fn has_error_node(tree: &tree_sitter::Tree) -> bool {
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

/// The one call an output decodes to: its name, its arguments, and their
/// names in the order written.
#[cfg(test)]
fn decode_one(text: &str, language: Language) -> (String, Value, Vec<String>) {
    let mut calls = decode(text, language).unwrap();
    assert_eq!(calls.len(), 1, "{text}");
    let (name, arguments) = calls.remove(0);
    let keys = arguments.keys().cloned().collect();
    (name, Value::Object(arguments), keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_nodes_are_found_as_bfcls_s_expression_shows_them() {
        let texts = [
            "f(a=1)",
            "f(a=1), g(b=2)",
            "a.b.c(x=y)",
            "f(x)",
            "Foo.bar(a=1, b=\"x\");",
            "f(a=1) @ # $",
            "f(a=\u{e9}1)",
            "[[[",
            "f(a=new int[3]);",
            "I would call f.",
            "f(a=`t${x}`)",
            "json\n[f(a='x')]",
            "",
            "}",
            "f(a=1,)",
        ];
        for language in [
            tree_sitter::Language::from(tree_sitter_java::LANGUAGE),
            tree_sitter::Language::from(tree_sitter_javascript::LANGUAGE),
        ] {
            for text in texts {
                let tree = parse(&language, text).unwrap();
                assert_eq!(
                    has_error_node(&tree),
                    tree.root_node().to_sexp().contains("ERROR"),
                    "{text}: {}",
                    tree.root_node().to_sexp()
                );
            }
        }
    }
}
