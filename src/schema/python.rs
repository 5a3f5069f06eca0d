//! A schema's violations worded as the Python `jsonschema` package words
//! them (its `_keywords.py`, 4.x), values written as Python's `repr`
//! writes them: what harnesses built on it (inspect_ai) tell a model.

use std::fmt::Write as _;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::Compiled;

impl Compiled {
    /// Every way `instance` breaks `schema` (this one's source), in
    /// python-jsonschema's words and in its order: keywords as the schema
    /// lists them, level by level.
    pub fn python_messages(&self, schema: &Value, instance: &Value) -> Vec<String> {
        let mut found: Vec<(Vec<usize>, String)> = self
            .full
            .iter_errors(instance)
            .map(|error| {
                (
                    visit_order(schema, error.schema_path().as_str()),
                    message(&error),
                )
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.into_iter().map(|(_, message)| message).collect()
    }
}

/// Where python-jsonschema meets the keyword at `path`: at each level, the
/// position of the segment among its object's keys (an array's index as
/// is), so that sorting by it visits as Python's `iter_errors` does.
fn visit_order(schema: &Value, path: &str) -> Vec<usize> {
    let mut node = Some(schema);
    path.split('/')
        .skip(1)
        .map(|segment| {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            let (position, next) = match node {
                Some(Value::Object(map)) => (
                    map.keys().position(|k| *k == segment).unwrap_or(usize::MAX),
                    map.get(&segment),
                ),
                Some(Value::Array(items)) => {
                    let index = segment.parse().unwrap_or(usize::MAX);
                    (index, items.get(index))
                }
                _ => (usize::MAX, None),
            };
            node = next;
            position
        })
        .collect()
}

/// One violation as python-jsonschema's `ValidationError.message`.
fn message(error: &ValidationError<'_>) -> String {
    let instance = repr(error.instance());
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            format!("{} is a required property", repr(property))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| repr_str(n)).collect();
            let verb = if names.len() == 1 { "was" } else { "were" };
            format!(
                "Additional properties are not allowed ({} {verb} unexpected)",
                names.join(", ")
            )
        }
        ValidationErrorKind::Enum { options } => {
            format!("{instance} is not one of {}", repr(options))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("{} was expected", repr(expected_value))
        }
        ValidationErrorKind::Type { kind } => {
            let names: Vec<String> = match kind {
                TypeKind::Single(ty) => vec![repr_str(&ty.to_string())],
                TypeKind::Multiple(types) => {
                    types.iter().map(|ty| repr_str(&ty.to_string())).collect()
                }
            };
            format!("{instance} is not of type {}", names.join(", "))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("{instance} is less than the minimum of {}", repr(limit))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("{instance} is greater than the maximum of {}", repr(limit))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => format!(
            "{instance} is less than or equal to the minimum of {}",
            repr(limit)
        ),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!(
            "{instance} is greater than or equal to the maximum of {}",
            repr(limit)
        ),
        ValidationErrorKind::MinLength { limit } | ValidationErrorKind::MinItems { limit } => {
            let short = if *limit == 1 {
                "should be non-empty"
            } else {
                "is too short"
            };
            format!("{instance} {short}")
        }
        ValidationErrorKind::MaxLength { limit } | ValidationErrorKind::MaxItems { limit } => {
            let long = if *limit == 0 {
                "is expected to be empty"
            } else {
                "is too long"
            };
            format!("{instance} {long}")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("{instance} does not match {}", repr_str(pattern))
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("{instance} is not a multiple of {}", float(*multiple_of))
        }
        ValidationErrorKind::Format { format } => {
            format!("{instance} is not a {}", repr_str(format))
        }
        ValidationErrorKind::UniqueItems => format!("{instance} has non-unique elements"),
        // The rest are rare in tool schemas: the validator's own words.
        _ => super::errors::message(error),
    }
}

/// A JSON value as Python's `repr` writes the value `json.loads` makes
/// of it.
pub fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(value, &mut out);
    out
}

fn write_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) if n.is_i64() || n.is_u64() => out.push_str(&n.to_string()),
        Value::Number(n) => out.push_str(&float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => out.push_str(&repr_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&repr_str(key));
                out.push_str(": ");
                write_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// A float as Python's `repr`: always a point or an exponent.
fn float(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A string as Python's `repr`: single quotes unless it holds one and no
/// double quote; backslashes, the quote and control characters escaped.
pub fn repr_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: Value, instance: Value) -> Vec<String> {
        Compiled::new(&schema)
            .unwrap()
            .python_messages(&schema, &instance)
    }

    #[test]
    fn values_are_written_as_python_writes_them() {
        assert_eq!(
            repr(&json!({"a": [1, 2.5, true, null, "it's"]})),
            r#"{'a': [1, 2.5, True, None, "it's"]}"#
        );
        assert_eq!(repr(&json!(3.0)), "3.0");
        assert_eq!(repr_str("a'b\"c\n"), r#"'a\'b"c\n'"#);
    }

    #[test]
    fn violations_read_as_python_jsonschema_words_them() {
        // The templates of python-jsonschema's `_keywords.py`.
        let schema = json!({
            "type": "object",
            "properties": {
                "units": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
                "city": {"type": "string", "pattern": "^[A-Z]"}
            },
            "required": ["city", "when"],
            "additionalProperties": false
        });
        assert_eq!(
            messages(
                schema,
                json!({"units": "kelvin", "days": 0, "city": "oslo", "x": 1})
            ),
            // Python's order: "properties" (in their order), "required",
            // "additionalProperties", as the schema lists them.
            [
                "'kelvin' is not one of ['celsius', 'fahrenheit']",
                "0 is less than the minimum of 1",
                "'oslo' does not match '^[A-Z]'",
                "'when' is a required property",
                "Additional properties are not allowed ('x' was unexpected)",
            ]
        );
        assert_eq!(
            messages(json!({"type": "string"}), json!(5)),
            ["5 is not of type 'string'"]
        );
    }
}
