//! Prompt-mode Python outputs, read as BFCL's `ast_parse` reads them with
//! Python's own parser; here tree-sitter's Python grammar. Values resolve
//! as BFCL resolves them: literals as values, a bare name as its text, a
//! call without keywords as its source, a call with keywords as a nested
//! call. Anything else (or a syntax error) means the output does not decode.

use serde_json::{Map, Value};
use tree_sitter::Node;

use super::{DecodeError, PromptCall, fail, python_eval};

/// Decode framed call syntax (`[...]`) as BFCL does; `Err` says why not.
pub(super) fn decode(framed: &str) -> Result<Vec<PromptCall>, DecodeError> {
    // BFCL removes quotes a model may have wrapped the list in.
    let text = framed.trim().trim_matches('\'');
    let tree = super::parse(&tree_sitter_python::LANGUAGE.into(), text)?;
    let root = tree.root_node();
    if root.has_error() {
        return fail("not Python call syntax");
    }
    // One expression: a call, or a list (or tuple) of calls.
    let statements = children(root);
    let [statement] = statements.as_slice() else {
        return fail("not one expression");
    };
    let expression = only_child(*statement).ok_or("not one expression")?;
    let source = Source(text);
    match expression.kind() {
        "call" => Ok(vec![source.call(expression)?]),
        "list" | "tuple" => children(expression)
            .into_iter()
            .map(|element| {
                if element.kind() == "call" {
                    source.call(element)
                } else {
                    fail(format!("{} is not a call", source.text(element)))
                }
            })
            .collect(),
        other => fail(format!("a {other}, not calls")),
    }
}

/// One call as BFCL's multi-turn ground truth writes it (`cd('docs')`,
/// `mv(source='a', destination='b')`): its name, its positional values in
/// order (which BFCL's `eval` binds by position) and its keywords.
pub(super) fn decode_positional(text: &str) -> Result<super::PositionalCall, DecodeError> {
    let tree = super::parse(&tree_sitter_python::LANGUAGE.into(), text)?;
    let root = tree.root_node();
    let expression = match children(root).as_slice() {
        [statement] if !root.has_error() => only_child(*statement),
        _ => None,
    }
    .filter(|e| e.kind() == "call")
    .ok_or("not one Python call")?;
    let source = Source(text);
    let (name, keywords) = source.call(expression)?;
    let list = expression.child_by_field_name("arguments");
    let mut positional = Vec::new();
    for argument in list.map(children).unwrap_or_default() {
        match argument.kind() {
            "keyword_argument" => {}
            "list_splat" | "dictionary_splat" => return fail("unpacking in a call"),
            _ => positional.push(source.value(argument)?),
        }
    }
    Ok((name, positional, keywords))
}

/// The named children that are not comments.
fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .filter(|child| !child.is_extra())
        .collect()
}

fn only_child(node: Node) -> Option<Node> {
    match children(node).as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

struct Source<'t>(&'t str);

impl Source<'_> {
    fn text(&self, node: Node) -> &str {
        &self.0[node.byte_range()]
    }

    fn call(&self, node: Node) -> Result<PromptCall, DecodeError> {
        let function = node
            .child_by_field_name("function")
            .ok_or("a call without a name")?;
        let name = self.dotted(function)?;
        let mut arguments = Map::new();
        let list = node.child_by_field_name("arguments");
        let list = list.filter(|l| l.kind() == "argument_list");
        // Python refuses a positional argument after a keyword, and `*`
        // after `**`; BFCL reads keyword arguments only.
        let (mut keyword, mut double_star) = (false, false);
        for argument in list.map(children).unwrap_or_default() {
            match argument.kind() {
                "keyword_argument" => keyword = true,
                "dictionary_splat" => double_star = true,
                "list_splat" if double_star => {
                    return fail("iterable unpacking after keyword unpacking");
                }
                "list_splat" => {}
                _ if keyword || double_star => {
                    return fail("a positional argument after a keyword argument");
                }
                _ => {}
            }
            if argument.kind() != "keyword_argument" {
                continue;
            }
            let (Some(key), Some(value)) = (
                argument.child_by_field_name("name"),
                argument.child_by_field_name("value"),
            ) else {
                continue;
            };
            arguments.insert(self.text(key).to_owned(), self.value(value)?);
        }
        Ok((name, arguments))
    }

    /// BFCL's name of a called function (`resolve_ast_call`): the
    /// attributes down to a plain name, joined by dots; whatever else is at
    /// the base (a call, a string) is left out, so `'f'(x=1)` calls "".
    fn dotted(&self, node: Node) -> Result<String, DecodeError> {
        let mut parts = Vec::new();
        let mut node = self.unparenthesised(node)?;
        while node.kind() == "attribute" {
            let attribute = node.child_by_field_name("attribute").ok_or("a bad name")?;
            parts.push(self.text(attribute));
            let object = node.child_by_field_name("object").ok_or("a bad name")?;
            node = self.unparenthesised(object)?;
        }
        if node.kind() == "identifier" {
            parts.push(self.text(node));
        }
        parts.reverse();
        Ok(parts.join("."))
    }

    /// BFCL's `resolve_ast_by_type`.
    fn value(&self, node: Node) -> Result<Value, DecodeError> {
        Ok(match node.kind() {
            "integer" => python_int(self.text(node)).ok_or("not a Python integer")?,
            "float" => float(self.text(node))?,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "none" => Value::Null,
            "ellipsis" => Value::String("...".into()),
            "string" | "concatenated_string" => Value::String(self.string(node)?),
            "identifier" => Value::String(self.text(node).to_owned()),
            // BFCL negates the operand's constant whatever the operator
            // (`+5` and `not 5` read -5); anything but a number fails.
            "unary_operator" | "not_operator" => {
                let operand = node
                    .child_by_field_name("argument")
                    .ok_or("a bad operator")?;
                let operand = self.unparenthesised(operand)?;
                match operand.kind() {
                    "integer" | "float" | "true" | "false" => {
                        python_eval::unary("-", &self.value(operand)?)?
                    }
                    _ => return fail(format!("{} is not a number", self.text(node))),
                }
            }
            // BFCL evaluates the operation with Python.
            "binary_operator" => self.evaluate(node)?,
            "list" | "tuple" => Value::Array(
                children(node)
                    .into_iter()
                    .map(|item| self.value(item))
                    .collect::<Result<_, _>>()?,
            ),
            "dictionary" => {
                let mut map = Map::new();
                for pair in children(node) {
                    let (Some(key), Some(value)) = (
                        pair.child_by_field_name("key"),
                        pair.child_by_field_name("value"),
                    ) else {
                        return fail(format!("{} is not a key and value", self.text(pair)));
                    };
                    let key = match self.value(key)? {
                        Value::String(key) => key,
                        other => other.to_string(),
                    };
                    map.insert(key, self.value(value)?);
                }
                Value::Object(map)
            }
            "call" => {
                let (name, arguments) = self.call(node)?;
                if arguments.is_empty() {
                    Value::String(self.text(node).to_owned())
                } else {
                    let mut nested = Map::new();
                    nested.insert(name, Value::Object(arguments));
                    Value::Object(nested)
                }
            }
            "parenthesized_expression" => {
                self.value(only_child(node).ok_or("empty parentheses")?)?
            }
            "subscript" => Value::String(self.text(node).to_owned()),
            other => return fail(format!("a {other} value BFCL does not read")),
        })
    }

    /// The expression inside any parentheses.
    fn unparenthesised<'n>(&self, node: Node<'n>) -> Result<Node<'n>, DecodeError> {
        let mut node = node;
        while node.kind() == "parenthesized_expression" {
            node = only_child(node).ok_or("empty parentheses")?;
        }
        Ok(node)
    }

    /// A value as Python's `eval` computes it: literals and arithmetic.
    fn evaluate(&self, node: Node) -> Result<Value, DecodeError> {
        let node = self.unparenthesised(node)?;
        match node.kind() {
            "binary_operator" => {
                let part = |field| node.child_by_field_name(field).ok_or("a bad operation");
                let operator = self.text(part("operator")?);
                let left = self.evaluate(part("left")?)?;
                let right = self.evaluate(part("right")?)?;
                python_eval::binary(operator, &left, &right)
            }
            "unary_operator" | "not_operator" => {
                let operand = node
                    .child_by_field_name("argument")
                    .ok_or("a bad operator")?;
                let operator = match node.kind() {
                    "not_operator" => "not",
                    _ => node
                        .child_by_field_name("operator")
                        .map_or("", |o| self.text(o)),
                };
                python_eval::unary(operator, &self.evaluate(operand)?)
            }
            "list" | "tuple" => Ok(Value::Array(
                children(node)
                    .into_iter()
                    .map(|item| self.evaluate(item))
                    .collect::<Result<_, _>>()?,
            )),
            "integer" | "float" | "true" | "false" | "none" | "string" | "concatenated_string" => {
                self.value(node)
            }
            _ => fail(format!("{} cannot be evaluated here", self.text(node))),
        }
    }

    /// A string literal's value: quotes, prefixes and escapes resolved.
    fn string(&self, node: Node) -> Result<String, DecodeError> {
        if node.kind() == "concatenated_string" {
            return children(node)
                .into_iter()
                .map(|part| self.string(part))
                .collect();
        }
        let literal = self.text(node);
        let prefix_end = literal.find(['\'', '"']).ok_or("a string without quotes")?;
        let prefix = literal[..prefix_end].to_ascii_lowercase();
        if prefix.contains('f') || prefix.contains('b') {
            return fail("an f-string or bytes");
        }
        let body = &literal[prefix_end..];
        let quote = if body.starts_with("\"\"\"") || body.starts_with("'''") {
            3
        } else {
            1
        };
        let inner = body
            .get(quote..body.len().saturating_sub(quote))
            .ok_or("a broken string")?;
        if prefix.contains('r') {
            return Ok(inner.to_owned());
        }
        unescape(inner)
    }
}

fn unescape(text: &str) -> Result<String, DecodeError> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(first @ '0'..='7') => {
                // Up to three octal digits.
                let mut code = first.to_digit(8).unwrap_or_default();
                for _ in 0..2 {
                    match chars.clone().next().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            code = code * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(code).ok_or("a bad escape")?);
            }
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some(kind @ ('x' | 'u' | 'U')) => {
                let digits = match kind {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(digits).collect();
                let code = u32::from_str_radix(&hex, 16).map_err(|_| "a bad escape")?;
                out.push(char::from_u32(code).ok_or("a bad escape")?);
            }
            // Python keeps an unknown escape as written.
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    Ok(out)
}

fn python_int(text: &str) -> Option<Value> {
    let clean = text.replace('_', "").to_ascii_lowercase();
    let parsed = if let Some(hex) = clean.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if let Some(octal) = clean.strip_prefix("0o") {
        i64::from_str_radix(octal, 8).ok()
    } else if let Some(binary) = clean.strip_prefix("0b") {
        i64::from_str_radix(binary, 2).ok()
    } else if clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|b| b != b'0') {
        // Python refuses leading zeros in a decimal integer.
        None
    } else {
        clean.parse::<i64>().ok()
    };
    parsed.map(Value::from)
}

fn float(text: &str) -> Result<Value, DecodeError> {
    let number: f64 = text
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{text} is not a number"))?;
    serde_json::Number::from_f64(number)
        .map(Value::Number)
        .ok_or_else(|| DecodeError(format!("{text} is not a finite number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bfcl::Language;
    use crate::bfcl::prompt::decode as decode_prompt;
    use serde_json::json;

    #[test]
    fn a_ground_truth_call_keeps_its_positional_values_in_order() {
        let (name, positional, keywords) =
            decode_positional("tail('log.txt', 20, mode='l')").unwrap();
        assert_eq!(name, "tail");
        assert_eq!(positional, [json!("log.txt"), json!(20)]);
        assert_eq!(Value::Object(keywords), json!({"mode": "l"}));
        for bad in ["tail(*args)", "[tail(1), cd(2)]", "x = 1", "tail("] {
            assert!(decode_positional(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn python_call_syntax_decodes_as_bfcl_reads_it() {
        let calls = decode_prompt("[math.factorial(number=5, s='a\\nb', l=[1, -2.5], d={'k': True}, n=None, v=x, c=f(1), t=(1, 2)), g(a=h(b=1))]", Language::Python)
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "math.factorial");
        assert_eq!(
            Value::Object(calls[0].1.clone()),
            json!({"number": 5, "s": "a\nb", "l": [1, -2.5], "d": {"k": true}, "n": null, "v": "x", "c": "f(1)", "t": [1, 2]})
        );
        assert_eq!(
            Value::Object(calls[1].1.clone()),
            json!({"a": {"h": {"b": 1}}})
        );
        // Without brackets, in a code fence, one call.
        let one = decode_prompt(
            "```\nget_weather(city=\"Paris\", days=3)\n```",
            Language::Python,
        )
        .unwrap();
        assert_eq!(one[0].0, "get_weather");
        assert_eq!(
            Value::Object(one[0].1.clone()),
            json!({"city": "Paris", "days": 3})
        );
        // Names as BFCL takes them: attributes down to a plain name.
        let odd = decode_prompt(
            "['f'(a=1), datetime.now().strftime(b=x.y().z('%H')), g(h=1, c=2 * 3.5, n=-(4), p=+5)]  # done",
            Language::Python,
        )
        .unwrap();
        let names: Vec<&str> = odd.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["", "strftime", "g"]);
        assert_eq!(odd[1].1["b"], json!("x.y().z('%H')"));
        assert_eq!(
            Value::Object(odd[2].1.clone()),
            json!({"h": 1, "c": 7.0, "n": -4, "p": -5})
        );
        // Python refuses a positional argument after a keyword.
        assert!(decode_prompt("[f(a=1, 'x')]", Language::Python).is_err());
        // Prose does not decode; neither does a list of non-calls.
        assert!(decode_prompt("The weather in Paris is sunny.", Language::Python).is_err());
        assert!(decode_prompt("[1, 2]", Language::Python).is_err());
        assert_eq!(decode_prompt("[]", Language::Python).unwrap(), vec![]);
    }
}
