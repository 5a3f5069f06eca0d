//! Prompt-mode output decoded into calls through tree-sitter's grammars,
//! and the ground truth's call syntax.

use super::super::Language;
use super::{DecodeError, PositionalCall, PromptCall, java, javascript, python};

/// Read one Python call of BFCL's multi-turn ground truth, positional
/// values kept (see `python::decode_positional`).
pub fn decode_ground_truth_call(text: &str) -> Result<PositionalCall, DecodeError> {
    python::decode_positional(text.trim())
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

/// The one call an output decodes to: its name, its arguments, and their
/// names in the order written.
#[cfg(test)]
use super::{has_error_node, parse};
#[cfg(test)]
use serde_json::Value;

#[cfg(test)]
pub(crate) fn decode_one(text: &str, language: Language) -> (String, Value, Vec<String>) {
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
