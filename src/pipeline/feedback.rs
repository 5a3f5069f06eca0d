//! How errors are worded for the model. The wording matters: a model can
//! only fix what the message names, so every validation error carries its
//! JSON pointer, and an unknown tool lists the tools that exist.

use std::fmt::Write as _;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

use crate::call::MalformedCall;

/// The heading of a validation failure; one `- /pointer: message` line per
/// error follows.
pub const VALIDATION_HEADING: &str = "Validation failed:";

/// `Validation failed:` and one line per schema error.
pub fn validation_failed<'a>(errors: impl Iterator<Item = ValidationError<'a>>) -> String {
    let mut text = String::with_capacity(64);
    text.push_str(VALIDATION_HEADING);
    for error in errors {
        text.push_str("\n- ");
        let path = error.instance_path().as_str();
        text.push_str(if path.is_empty() { "/" } else { path });
        text.push_str(": ");
        describe(&error, &mut text);
    }
    text
}

/// One error as `/pointer: message`.
pub fn error_line(error: &ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let mut text = String::from(if path.is_empty() { "/" } else { path });
    text.push_str(": ");
    describe(error, &mut text);
    text
}

/// One schema error, as the words a model reads say it. The general
/// validator's errors and the quick check's are both worded here.
#[derive(Debug, Clone, Copy)]
pub enum Violation<'a> {
    /// Allowed types as bits, in jsonschema's order: null, boolean,
    /// integer, number, string, array, object.
    Type(u8),
    Required(&'a Value),
    Enum(&'a Value),
    Const(&'a Value),
    Minimum(&'a Value),
    Maximum(&'a Value),
    ExclusiveMinimum(&'a Value),
    ExclusiveMaximum(&'a Value),
    MinLength(u64),
    MaxLength(u64),
    MinItems(u64),
    MaxItems(u64),
    /// The unexpected property names.
    AdditionalProperties(&'a [&'a str]),
}

/// The names of type bits, lowest bit first.
const TYPE_NAMES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// Append one violation, in the short style of Ajv that agent developers
/// know.
pub fn word(violation: Violation<'_>, out: &mut String) {
    let _ = match violation {
        Violation::Type(bits) => {
            out.push_str("must be ");
            let mut first = true;
            for (bit, name) in TYPE_NAMES.iter().enumerate() {
                if bits & (1 << bit) != 0 {
                    if !first {
                        out.push_str(" or ");
                    }
                    out.push_str(name);
                    first = false;
                }
            }
            Ok(())
        }
        Violation::Required(property) => {
            out.push_str("must have required property ");
            write_quoted(property, out)
        }
        Violation::Enum(options) => {
            out.push_str("must be one of ");
            write_list(options, out)
        }
        Violation::Const(expected) => write!(out, "must be equal to {expected}"),
        Violation::Minimum(limit) => write!(out, "must be >= {limit}"),
        Violation::Maximum(limit) => write!(out, "must be <= {limit}"),
        Violation::ExclusiveMinimum(limit) => write!(out, "must be > {limit}"),
        Violation::ExclusiveMaximum(limit) => write!(out, "must be < {limit}"),
        Violation::MinLength(limit) => write!(out, "must NOT have fewer than {limit} characters"),
        Violation::MaxLength(limit) => write!(out, "must NOT have more than {limit} characters"),
        Violation::MinItems(limit) => write!(out, "must NOT have fewer than {limit} items"),
        Violation::MaxItems(limit) => write!(out, "must NOT have more than {limit} items"),
        Violation::AdditionalProperties(names) => {
            out.push_str("must NOT have additional properties: ");
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "'{name}'");
            }
            Ok(())
        }
    };
}

/// One error of the general validator.
fn describe(error: &ValidationError<'_>, out: &mut String) {
    let violation = match error.kind() {
        ValidationErrorKind::Type { kind } => Violation::Type(match kind {
            TypeKind::Single(ty) => type_bit(*ty),
            TypeKind::Multiple(types) => types.iter().fold(0, |bits, ty| bits | type_bit(ty)),
        }),
        ValidationErrorKind::Required { property } => Violation::Required(property),
        ValidationErrorKind::Enum { options } => Violation::Enum(options),
        ValidationErrorKind::Constant { expected_value } => Violation::Const(expected_value),
        ValidationErrorKind::Minimum { limit } => Violation::Minimum(limit),
        ValidationErrorKind::Maximum { limit } => Violation::Maximum(limit),
        ValidationErrorKind::ExclusiveMinimum { limit } => Violation::ExclusiveMinimum(limit),
        ValidationErrorKind::ExclusiveMaximum { limit } => Violation::ExclusiveMaximum(limit),
        ValidationErrorKind::MinLength { limit } => Violation::MinLength(*limit),
        ValidationErrorKind::MaxLength { limit } => Violation::MaxLength(*limit),
        ValidationErrorKind::MinItems { limit } => Violation::MinItems(*limit),
        ValidationErrorKind::MaxItems { limit } => Violation::MaxItems(*limit),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<&str> = unexpected.iter().map(String::as_str).collect();
            return word(Violation::AdditionalProperties(&names), out);
        }
        // Kinds worded once, in their own way.
        ValidationErrorKind::MultipleOf { multiple_of } => {
            let _ = write!(out, "must be a multiple of {multiple_of}");
            return;
        }
        ValidationErrorKind::UniqueItems => {
            out.push_str("must NOT have duplicate items");
            return;
        }
        ValidationErrorKind::Pattern { pattern } => {
            let _ = write!(out, "must match pattern {pattern:?}");
            return;
        }
        ValidationErrorKind::Format { format } => {
            let _ = write!(out, "must match format {format:?}");
            return;
        }
        _ => {
            out.push_str(&crate::excerpt::schema_error_message(error));
            return;
        }
    };
    word(violation, out);
}

fn type_bit(ty: JsonType) -> u8 {
    let name = match ty {
        JsonType::Null => "null",
        JsonType::Boolean => "boolean",
        JsonType::Integer => "integer",
        JsonType::Number => "number",
        JsonType::String => "string",
        JsonType::Array => "array",
        JsonType::Object => "object",
    };
    1 << TYPE_NAMES.iter().position(|n| *n == name).unwrap_or(0)
}

// Both write into the message rather than building strings to join:
// invalid calls are a third of a typical workload.

fn write_quoted(value: &Value, out: &mut String) -> std::fmt::Result {
    match value {
        Value::String(s) => write!(out, "'{s}'"),
        other => write!(out, "{other}"),
    }
}

fn write_list(options: &Value, out: &mut String) -> std::fmt::Result {
    match options {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{item}")?;
            }
            Ok(())
        }
        other => write!(out, "{other}"),
    }
}

/// An unknown tool: name it and list what exists.
pub fn unknown_tool<'a>(name: &str, available: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = available.collect();
    if names.is_empty() {
        format!("Unknown tool {name:?}: no tools are available.")
    } else {
        format!(
            "Unknown tool {name:?}. Available tools: {}.",
            names.join(", ")
        )
    }
}

/// How error results are worded when they go back to the model: a run
/// option, so that users can measure what the wording buys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeedbackStyle {
    /// `Validation failed:` and a `- /pointer: message` line per error.
    #[default]
    PointerList,
    /// The same facts as a JSON object.
    Json,
    /// What a pipeline that drops the error field sends: a placeholder.
    Bare,
}

/// What the model sees of a result under `style`.
pub fn restyle(
    content: &str,
    kind: Option<crate::call::ErrorKind>,
    style: FeedbackStyle,
) -> String {
    let Some(kind) = kind else {
        return content.to_owned();
    };
    match style {
        FeedbackStyle::PointerList => content.to_owned(),
        FeedbackStyle::Bare => crate::provider::EMPTY_RESULT_PLACEHOLDER.to_owned(),
        FeedbackStyle::Json => {
            let mut lines = content.lines();
            let message = lines.next().unwrap_or_default();
            let details: Vec<Value> = lines
                .filter_map(|line| line.strip_prefix("- "))
                .map(|line| match line.split_once(": ") {
                    Some((pointer, message)) => {
                        serde_json::json!({"pointer": pointer, "message": message})
                    }
                    None => serde_json::json!({"message": line}),
                })
                .collect();
            let mut object = serde_json::json!({"error": kind.as_str(), "message": message});
            if !details.is_empty() {
                object["details"] = Value::Array(details);
            }
            object.to_string()
        }
    }
}

/// A call that could not be read.
pub fn malformed(call: &MalformedCall) -> String {
    if call.name.is_empty() {
        format!("Could not read call {:?}: {}.", call.id, call.problem)
    } else {
        format!(
            "Could not read the call to {:?} ({:?}): {}.",
            call.name, call.id, call.problem
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feedback(schema: Value, instance: Value) -> String {
        let validator = jsonschema::validator_for(&schema).unwrap();
        validation_failed(validator.iter_errors(&instance))
    }

    #[test]
    fn every_error_gets_a_line_with_its_pointer() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "lines": {"type": "object", "properties": {"start": {"type": "integer", "minimum": 1}}},
                "mode": {"enum": ["r", "w"]}
            },
            "required": ["path", "mode"],
            "additionalProperties": false
        });
        let text = feedback(
            schema,
            json!({"path": 7, "lines": {"start": 0}, "extra": true}),
        );
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.remove(0), "Validation failed:");
        lines.sort();
        assert_eq!(
            lines,
            [
                "- /: must NOT have additional properties: 'extra'",
                "- /: must have required property 'mode'",
                "- /lines/start: must be >= 1",
                "- /path: must be string",
            ]
        );
    }

    #[test]
    fn enum_and_union_types_name_what_is_allowed() {
        let text = feedback(
            json!({"properties": {"op": {"enum": ["add", "sub"]}, "n": {"type": ["integer", "null"]}}}),
            json!({"op": "pow", "n": "1"}),
        );
        assert!(
            text.contains("- /op: must be one of \"add\", \"sub\""),
            "{text}"
        );
        assert!(text.contains("- /n: must be null or integer"), "{text}");
    }

    #[test]
    fn styles_keep_or_drop_the_facts() {
        use crate::call::ErrorKind;
        let text = "Validation failed:\n- /a: must be number\n- /: must have required property 'b'";
        let kind = Some(ErrorKind::Validation);
        assert_eq!(restyle(text, kind, FeedbackStyle::PointerList), text);
        assert_eq!(restyle(text, kind, FeedbackStyle::Bare), "(no output)");
        let json: Value = serde_json::from_str(&restyle(text, kind, FeedbackStyle::Json)).unwrap();
        assert_eq!(json["error"], "validation");
        assert_eq!(
            json["details"][0],
            serde_json::json!({"pointer": "/a", "message": "must be number"})
        );
        assert_eq!(
            json["details"][1]["message"],
            "must have required property 'b'"
        );
        assert_eq!(
            restyle("50", None, FeedbackStyle::Bare),
            "50",
            "successes are untouched"
        );
    }

    #[test]
    fn unknown_tool_lists_the_available_ones() {
        assert_eq!(
            unknown_tool("serch", ["search", "echo"].into_iter()),
            "Unknown tool \"serch\". Available tools: search, echo."
        );
    }
}
