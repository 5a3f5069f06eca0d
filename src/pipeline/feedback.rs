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

/// One error, in the short style of Ajv that agent developers know.
fn describe(error: &ValidationError<'_>, out: &mut String) {
    let _ = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            out.push_str("must be ");
            match kind {
                TypeKind::Single(ty) => out.push_str(type_name(*ty)),
                TypeKind::Multiple(types) => {
                    let names: Vec<&str> = types.iter().map(type_name).collect();
                    out.push_str(&names.join(" or "));
                }
            }
            Ok(())
        }
        ValidationErrorKind::Required { property } => {
            out.push_str("must have required property ");
            write_quoted(property, out)
        }
        ValidationErrorKind::Enum { options } => {
            out.push_str("must be one of ");
            write_list(options, out)
        }
        ValidationErrorKind::Constant { expected_value } => {
            write!(out, "must be equal to {expected_value}")
        }
        ValidationErrorKind::Minimum { limit } => write!(out, "must be >= {limit}"),
        ValidationErrorKind::Maximum { limit } => write!(out, "must be <= {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => write!(out, "must be > {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => write!(out, "must be < {limit}"),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            write!(out, "must be a multiple of {multiple_of}")
        }
        ValidationErrorKind::MinLength { limit } => {
            write!(out, "must NOT have fewer than {limit} characters")
        }
        ValidationErrorKind::MaxLength { limit } => {
            write!(out, "must NOT have more than {limit} characters")
        }
        ValidationErrorKind::MinItems { limit } => {
            write!(out, "must NOT have fewer than {limit} items")
        }
        ValidationErrorKind::MaxItems { limit } => {
            write!(out, "must NOT have more than {limit} items")
        }
        ValidationErrorKind::UniqueItems => write!(out, "must NOT have duplicate items"),
        ValidationErrorKind::Pattern { pattern } => write!(out, "must match pattern {pattern:?}"),
        ValidationErrorKind::Format { format } => write!(out, "must match format {format:?}"),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("'{n}'")).collect();
            write!(
                out,
                "must NOT have additional properties: {}",
                names.join(", ")
            )
        }
        _ => {
            out.push_str(&crate::excerpt::schema_error_message(error));
            Ok(())
        }
    };
}

fn type_name(ty: JsonType) -> &'static str {
    match ty {
        JsonType::Array => "array",
        JsonType::Boolean => "boolean",
        JsonType::Integer => "integer",
        JsonType::Null => "null",
        JsonType::Number => "number",
        JsonType::Object => "object",
        JsonType::String => "string",
    }
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
