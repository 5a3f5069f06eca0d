//! Prompt-mode JavaScript outputs, read as BFCL's
//! `parse_javascript_function_call` reads them with tree-sitter's
//! JavaScript grammar: the first top-level statement that is a call is the
//! one call; `name=value` arguments keep their value's source text, a
//! quoted string without its quotes; a bare name or `true` is an argument
//! without a name; other arguments are ignored. Values are later read by
//! their declared types, as in function-calling mode.

use serde_json::Map;
use tree_sitter::Node;

use super::{
    DecodeError, POSITIONAL, PromptCall, fail, has_error_node, insert_once, parse, strip_ends,
};

pub(super) fn decode(text: &str) -> Result<Vec<PromptCall>, DecodeError> {
    let tree = parse(&tree_sitter_javascript::LANGUAGE.into(), text)?;
    if has_error_node(&tree) {
        return fail("not JavaScript call syntax");
    }
    let root = tree.root_node();
    let mut statements = root.walk();
    for statement in root.children(&mut statements) {
        if statement.kind() != "expression_statement" {
            continue;
        }
        let mut parts = statement.walk();
        let call = statement
            .children(&mut parts)
            .find(|part| part.kind() == "call_expression");
        if let Some(call) = call {
            return Ok(vec![self::call(call, text)?]);
        }
    }
    fail("no call statement")
}

fn call(node: Node, text: &str) -> Result<PromptCall, DecodeError> {
    let source = |node: Node| text[node.byte_range()].to_owned();
    // BFCL takes the first child as the name and the second as the
    // arguments, whatever they are (`f?.(...)` has none it reads).
    let (Some(function), Some(list)) = (node.child(0), node.child(1)) else {
        return fail("a call without arguments");
    };
    let mut arguments = Map::new();
    let mut cursor = list.walk();
    for argument in list.children(&mut cursor) {
        match argument.kind() {
            "assignment_expression" => {
                let (Some(key), Some(value)) = (argument.child(0), argument.child(2)) else {
                    return fail("an assignment without a value");
                };
                let value = source(value);
                let quoted = ['"', '\'']
                    .iter()
                    .any(|&q| value.starts_with(q) && value.ends_with(q));
                let value = if quoted { strip_ends(&value) } else { value };
                insert_once(&mut arguments, source(key), value)?;
            }
            "identifier" | "true" => {
                insert_once(&mut arguments, POSITIONAL.to_owned(), source(argument))?;
            }
            _ => {}
        }
    }
    Ok((source(function), arguments))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::bfcl::Language;
    use crate::bfcl::prompt::{POSITIONAL, decode, decode_one};

    fn one(text: &str) -> (String, Value) {
        let (name, arguments, _) = decode_one(text, Language::JavaScript);
        (name, arguments)
    }

    #[test]
    fn javascript_values_are_source_text_as_bfcl_reads_it() {
        let (name, arguments, keys) = decode_one(
            "[validate(b=\"x y\", a=[1, 2], c={k: 1}, d='single', e=userInput, f=`t${x}`, g=4n)]",
            Language::JavaScript,
        );
        assert_eq!(name, "validate");
        assert_eq!(
            arguments,
            json!({"b": "x y", "a": "[1, 2]", "c": "{k: 1}", "d": "single", "e": "userInput", "f": "`t${x}`", "g": "4n"})
        );
        assert_eq!(keys, ["b", "a", "c", "d", "e", "f", "g"]);
    }

    #[test]
    fn javascript_calls_decode_only_where_bfcls_parser_reads_them() {
        // The first call statement; a bare name or `true` has no name;
        // other literals are ignored; a member call keeps its dots.
        assert_eq!(
            one("```\nx = 1;\nf(a=1); g(b=2)\n```"),
            ("f".into(), json!({"a": "1"}))
        );
        assert_eq!(
            one("el.focus(node, false, 3, a=1)"),
            ("el.focus".into(), json!({POSITIONAL: "node", "a": "1"}))
        );
        assert_eq!(one("f?.(a=1)"), ("f".into(), json!({})));
        for text in [
            "[f(a=1), g(b=2)]",
            "f(a=1, a=2)",
            "f(x, true)",
            "I would call f.",
        ] {
            assert!(decode(text, Language::JavaScript).is_err(), "{text}");
        }
    }
}
