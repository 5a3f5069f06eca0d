//! Prompt-mode outputs: models run by BFCL in prompting mode answer with
//! call syntax, `[get_weather(city="Paris", days=3), f(x=[1, 2])]`, which
//! BFCL decodes with Python's own parser (`default_decode_ast_prompting`).
//! Here tree-sitter's Python grammar reads it, and values resolve as BFCL
//! resolves them: literals as values, a bare name as its text, a call
//! without keywords as its source, a call with keywords as a nested call.
//! Anything else (or a syntax error) means the output does not decode.

use serde_json::{Map, Value};
use tree_sitter::Node;

/// One decoded call: BFCL's function name (dots kept) and its arguments.
pub type PromptCall = (String, Map<String, Value>);

/// Decode a prompt-mode Python output as BFCL does; `Err` says why not.
pub fn decode_python(result: &str) -> Result<Vec<PromptCall>, String> {
    let mut text = result
        .trim_matches(|c| c == '`' || c == '\n' || c == ' ')
        .to_owned();
    if !text.starts_with('[') {
        text.insert(0, '[');
    }
    if !text.ends_with(']') {
        text.push(']');
    }
    let text = text.trim().trim_matches('\'');
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .map_err(|e| e.to_string())?;
    let tree = parser.parse(text, None).ok_or("the parser gave up")?;
    let root = tree.root_node();
    if root.has_error() {
        return Err("not Python call syntax".into());
    }
    // One expression: a call, or a list (or tuple) of calls.
    let mut cursor = root.walk();
    let statements: Vec<Node> = root.named_children(&mut cursor).collect();
    let [statement] = statements.as_slice() else {
        return Err("not one expression".into());
    };
    let expression = only_child(*statement).ok_or("not one expression")?;
    let source = Source(text);
    match expression.kind() {
        "call" => Ok(vec![source.call(expression)?]),
        "list" | "tuple" => {
            let mut cursor = expression.walk();
            expression
                .named_children(&mut cursor)
                .map(|element| {
                    if element.kind() == "call" {
                        source.call(element)
                    } else {
                        Err(format!("{} is not a call", source.text(element)))
                    }
                })
                .collect()
        }
        other => Err(format!("a {other}, not calls")),
    }
}

fn only_child(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.named_children(&mut cursor).collect();
    match children.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

struct Source<'t>(&'t str);

impl Source<'_> {
    fn text(&self, node: Node) -> &str {
        &self.0[node.byte_range()]
    }

    fn call(&self, node: Node) -> Result<PromptCall, String> {
        let function = node
            .child_by_field_name("function")
            .ok_or("a call without a name")?;
        let name = self.dotted(function)?;
        let mut arguments = Map::new();
        if let Some(list) = node.child_by_field_name("arguments") {
            let mut cursor = list.walk();
            // BFCL reads keyword arguments only.
            for argument in list.named_children(&mut cursor) {
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
        }
        Ok((name, arguments))
    }

    /// `a.b.c` from nested attributes.
    fn dotted(&self, node: Node) -> Result<String, String> {
        match node.kind() {
            "identifier" => Ok(self.text(node).to_owned()),
            "attribute" => {
                let object = node.child_by_field_name("object").ok_or("a bad name")?;
                let attribute = node.child_by_field_name("attribute").ok_or("a bad name")?;
                Ok(format!("{}.{}", self.dotted(object)?, self.text(attribute)))
            }
            other => Err(format!("a call of a {other}")),
        }
    }

    /// BFCL's `resolve_ast_by_type`.
    fn value(&self, node: Node) -> Result<Value, String> {
        Ok(match node.kind() {
            "integer" => python_int(self.text(node)).ok_or("an integer out of range")?,
            "float" => float(self.text(node))?,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "none" => Value::Null,
            "ellipsis" => Value::String("...".into()),
            "string" | "concatenated_string" => Value::String(self.string(node)?),
            "identifier" => Value::String(self.text(node).to_owned()),
            "unary_operator" => {
                let operand = node
                    .child_by_field_name("argument")
                    .ok_or("a bad operator")?;
                let operator = node.child_by_field_name("operator").map(|o| self.text(o));
                match (operator, self.value(operand)?) {
                    (Some("-"), Value::Number(n)) => negate(&n)?,
                    (Some("+"), number @ Value::Number(_)) => number,
                    _ => return Err(format!("{} is not a number", self.text(node))),
                }
            }
            "list" | "tuple" => {
                let mut cursor = node.walk();
                Value::Array(
                    node.named_children(&mut cursor)
                        .map(|item| self.value(item))
                        .collect::<Result<_, _>>()?,
                )
            }
            "dictionary" => {
                let mut map = Map::new();
                let mut cursor = node.walk();
                for pair in node.named_children(&mut cursor) {
                    let (Some(key), Some(value)) = (
                        pair.child_by_field_name("key"),
                        pair.child_by_field_name("value"),
                    ) else {
                        return Err(format!("{} is not a key and value", self.text(pair)));
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
            other => return Err(format!("a {other} value BFCL does not read")),
        })
    }

    /// A string literal's value: quotes, prefixes and escapes resolved.
    fn string(&self, node: Node) -> Result<String, String> {
        if node.kind() == "concatenated_string" {
            let mut cursor = node.walk();
            return node
                .named_children(&mut cursor)
                .map(|part| self.string(part))
                .collect();
        }
        let literal = self.text(node);
        let prefix_end = literal.find(['\'', '"']).ok_or("a string without quotes")?;
        let prefix = literal[..prefix_end].to_ascii_lowercase();
        if prefix.contains('f') || prefix.contains('b') {
            return Err("an f-string or bytes".into());
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

fn unescape(text: &str) -> Result<String, String> {
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
            Some('0') => out.push('\0'),
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
    } else {
        clean.parse::<i64>().ok()
    };
    parsed.map(Value::from)
}

fn float(text: &str) -> Result<Value, String> {
    let number: f64 = text
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{text} is not a number"))?;
    serde_json::Number::from_f64(number)
        .map(Value::Number)
        .ok_or_else(|| format!("{text} is not a finite number"))
}

fn negate(n: &serde_json::Number) -> Result<Value, String> {
    if let Some(i) = n.as_i64() {
        return Ok(Value::from(-i));
    }
    float(&format!("-{}", n.as_f64().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_call_syntax_decodes_as_bfcl_reads_it() {
        let calls = decode_python(
            "[math.factorial(number=5, s='a\\nb', l=[1, -2.5], d={'k': True}, n=None, v=x, c=f(1), t=(1, 2)), g(a=h(b=1))]",
        )
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
        let one = decode_python("```\nget_weather(city=\"Paris\", days=3)\n```").unwrap();
        assert_eq!(one[0].0, "get_weather");
        assert_eq!(
            Value::Object(one[0].1.clone()),
            json!({"city": "Paris", "days": 3})
        );
        // Prose does not decode; neither does a list of non-calls.
        assert!(decode_python("The weather in Paris is sunny.").is_err());
        assert!(decode_python("[1, 2]").is_err());
        assert_eq!(decode_python("[]").unwrap(), vec![]);
    }
}
