//! Prompt-mode Java outputs, read as BFCL's `parse_java_function_call`
//! reads them with tree-sitter's Java grammar: the first method invocation
//! anywhere in the text is the one call; `name=value` arguments keep their
//! value as source text rebuilt token by token (whitespace dropped), a
//! string without its quotes; a bare name, class literal or set is an
//! argument without a name; other arguments are ignored. Values are later
//! read by their declared types, as in function-calling mode.

use serde_json::Map;
use tree_sitter::Node;

use super::{
    DecodeError, MAX_DEPTH, POSITIONAL, PromptCall, fail, has_error_node, insert_once, parse,
    strip_ends,
};

pub(super) fn decode(text: &str) -> Result<Vec<PromptCall>, DecodeError> {
    let tree = parse(&tree_sitter_java::LANGUAGE.into(), text)?;
    if has_error_node(&tree) {
        return fail("not Java call syntax");
    }
    let source = Source::new(text);
    let Some(call) = first_call(tree.root_node(), 0)? else {
        return fail("no method call");
    };
    Ok(vec![source.call(call)?])
}

/// The first method invocation with arguments, depth first; BFCL does not
/// look inside one without them.
fn first_call(node: Node, depth: usize) -> Result<Option<Node>, DecodeError> {
    if depth > MAX_DEPTH {
        return fail("nested too deeply");
    }
    if node.kind() == "method_invocation" {
        return Ok(node.child_by_field_name("arguments").map(|_| node));
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if let Some(call) = first_call(child, depth + 1)? {
            return Ok(Some(call));
        }
    }
    Ok(None)
}

/// The output's text as BFCL indexes it.
struct Source {
    chars: Vec<char>,
}

impl Source {
    fn new(text: &str) -> Source {
        Source {
            chars: text.chars().collect(),
        }
    }

    /// BFCL slices the text by the node's byte offsets as if they counted
    /// characters; past ASCII that shifts the text, and so does this.
    fn text(&self, node: Node) -> String {
        let end = node.end_byte().min(self.chars.len());
        let start = node.start_byte().min(end);
        self.chars[start..end].iter().collect()
    }

    fn call(&self, node: Node) -> Result<PromptCall, DecodeError> {
        let method = node
            .child_by_field_name("name")
            .ok_or("a call without a name")?;
        let name = match node.child_by_field_name("object") {
            Some(object) => format!("{}.{}", self.text(object), self.text(method)),
            None => self.text(method),
        };
        let list = node
            .child_by_field_name("arguments")
            .ok_or("a call without arguments")?;
        let mut arguments = Map::new();
        let mut cursor = list.walk();
        for argument in list.children(&mut cursor) {
            match argument.kind() {
                // BFCL takes the first and third children whatever the
                // operator (`+=` too).
                "assignment_expression" => {
                    let (Some(key), Some(value)) = (argument.child(0), argument.child(2)) else {
                        return fail("an assignment without a value");
                    };
                    insert_once(&mut arguments, self.text(key), self.value(value, false, 0)?)?;
                }
                "identifier" | "class_literal" => {
                    let value = self.value(argument, false, 0)?;
                    insert_once(&mut arguments, POSITIONAL.to_owned(), value)?;
                }
                _ => {}
            }
        }
        Ok((name, arguments))
    }

    /// BFCL's `traverse_node`: a value as text; `nested` inside another
    /// value, where strings keep their quotes.
    fn value(&self, node: Node, nested: bool, depth: usize) -> Result<String, DecodeError> {
        if depth > MAX_DEPTH {
            return fail("nested too deeply");
        }
        let inner = |node: Option<Node>| match node {
            Some(node) => self.value(node, true, depth + 1),
            None => fail(format!("a {} without its parts", node_kind(node))),
        };
        Ok(match node.kind() {
            "string_literal" | "character_literal" if nested => self.text(node),
            "string_literal" | "character_literal" => strip_ends(&self.text(node)),
            "identifier" | "class_literal" | "type_identifier" | "method_invocation" => {
                self.text(node)
            }
            // `new int[]{1,2}`: the dimensions are not kept.
            "array_creation_expression" => format!(
                "new {}[]{}",
                inner(node.child_by_field_name("type"))?,
                inner(node.child_by_field_name("value"))?
            ),
            // `new T(a, b)`: a class body is not kept.
            "object_creation_expression" => {
                let kind = inner(node.child_by_field_name("type"))?;
                match node.child_by_field_name("arguments") {
                    Some(list) => {
                        let mut cursor = list.walk();
                        let arguments = list
                            .children(&mut cursor)
                            .filter(|c| !matches!(c.kind(), "," | "(" | ")"))
                            .map(|c| self.value(c, true, depth + 1))
                            .collect::<Result<Vec<_>, _>>()?;
                        format!("new {kind}({})", arguments.join(", "))
                    }
                    None => format!("new {kind}()"),
                }
            }
            _ if node.child_count() > 0 => {
                let mut cursor = node.walk();
                node.children(&mut cursor)
                    .map(|c| self.value(c, true, depth + 1))
                    .collect::<Result<String, _>>()?
            }
            _ => self.text(node),
        })
    }
}

fn node_kind(node: Option<Node>) -> &'static str {
    node.map_or("value", |n| n.kind())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::bfcl::Language;
    use crate::bfcl::prompt::{POSITIONAL, decode, decode_one};

    fn one(text: &str) -> (String, Value) {
        let (name, arguments, _) = decode_one(text, Language::Java);
        (name, arguments)
    }

    #[test]
    fn java_values_are_source_text_rebuilt_as_bfcl_rebuilds_it() {
        let (name, arguments, keys) = decode_one(
            "[Foo.bar(z=1, b=\"x y\", c=new int[]{1, 2}, d=new ArrayList<>(Arrays.asList(1, 2)), e=x, f=-5, g=\"a\" + \"b\", h=new HashMap<String, String>() {{ put(\"k\", \"v\"); }}, i='c')]",
            Language::Java,
        );
        assert_eq!(name, "Foo.bar");
        assert_eq!(
            arguments,
            json!({
                "z": "1", "b": "x y", "c": "new int[]{1,2}",
                "d": "new ArrayList<>(Arrays.asList(1, 2))", "e": "x", "f": "-5",
                "g": "\"a\"+\"b\"", "h": "new HashMap<String,String>()", "i": "c",
            })
        );
        // The model's order is kept.
        assert_eq!(keys, ["z", "b", "c", "d", "e", "f", "g", "h", "i"]);
    }

    #[test]
    fn java_calls_decode_only_where_bfcls_parser_reads_them() {
        // The first method call only; fenced; nested calls are text.
        assert_eq!(
            one("```\nf(a=g(b=1));\nh(c=2);\n```"),
            ("f".into(), json!({"a": "g(b=1)"}))
        );
        // A bare name is an argument without a name; a literal is ignored.
        assert_eq!(
            one("f(x, 5, a=1);"),
            ("f".into(), json!({POSITIONAL: "x", "a": "1"}))
        );
        // Syntax errors, a name given twice, an array without its values,
        // prose: none decode.
        for text in [
            "[f(a=1), g(b=2)]",
            "f(a=1, a=2);",
            "f(a=new int[3]);",
            "I would call f.",
        ] {
            assert!(decode(text, Language::Java).is_err(), "{text}");
        }
    }
}
