//! How errors are worded for the model. The wording matters: a model can
//! only fix what the message names, so every validation error carries its
//! JSON pointer, and an unknown tool lists the tools that exist. Each
//! error is worded once, in the run's feedback style.

use serde_json::{Value, json};

use crate::call::{ErrorKind, MalformedCall};
use crate::provider::EMPTY_RESULT_PLACEHOLDER;
use crate::schema::ArgumentError;

/// The heading of a validation failure; one `- /pointer: message` line per
/// error follows.
pub const VALIDATION_HEADING: &str = "Validation failed:";

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

/// A call's error as the model reads it under `style`: what happened, and
/// for a validation failure the `(pointer, message)` of every violation.
pub fn word_error(
    style: FeedbackStyle,
    kind: ErrorKind,
    message: &str,
    details: &[ArgumentError],
) -> String {
    match style {
        FeedbackStyle::PointerList => {
            let lines: usize = details.iter().map(|d| d.line().len() + 2).sum();
            let mut text = String::with_capacity(message.len() + lines);
            text.push_str(message);
            for detail in details {
                text.push_str("\n- ");
                text.push_str(detail.line());
            }
            text
        }
        FeedbackStyle::Json => {
            let mut object = json!({"error": kind.as_str(), "message": message});
            if !details.is_empty() {
                object["details"] = details
                    .iter()
                    .map(|d| json!({"pointer": d.pointer(), "message": d.message()}))
                    .collect::<Value>();
            }
            object.to_string()
        }
        FeedbackStyle::Bare => EMPTY_RESULT_PLACEHOLDER.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(schema: Value, instance: Value) -> Vec<String> {
        let compiled = crate::schema::Compiled::new(&schema).unwrap();
        let mut lines: Vec<String> = compiled
            .errors(&instance)
            .iter()
            .map(ToString::to_string)
            .collect();
        lines.sort();
        lines
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
        assert_eq!(
            errors(
                schema,
                json!({"path": 7, "lines": {"start": 0}, "extra": true}),
            ),
            [
                "/: must NOT have additional properties: 'extra'",
                "/: must have required property 'mode'",
                "/lines/start: must be >= 1",
                "/path: must be string",
            ]
        );
    }

    #[test]
    fn enum_and_union_types_name_what_is_allowed() {
        let lines = errors(
            json!({"properties": {"op": {"enum": ["add", "sub"]}, "n": {"type": ["integer", "null"]}}}),
            json!({"op": "pow", "n": "1"}),
        );
        assert!(
            lines.contains(&"/n: must be null or integer".to_owned()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"/op: must be one of \"add\", \"sub\"".to_owned()),
            "{lines:?}"
        );
    }

    #[test]
    fn styles_keep_or_drop_the_facts() {
        let details = [
            ArgumentError::new("/a", "must be number"),
            ArgumentError::new("/", "must have required property 'b'"),
        ];
        let kind = ErrorKind::Validation;
        let word = |style| word_error(style, kind, VALIDATION_HEADING, &details);
        assert_eq!(
            word(FeedbackStyle::PointerList),
            "Validation failed:\n- /a: must be number\n- /: must have required property 'b'"
        );
        assert_eq!(word(FeedbackStyle::Bare), "(no output)");
        let json: Value = serde_json::from_str(&word(FeedbackStyle::Json)).unwrap();
        assert_eq!(json["error"], "validation");
        assert_eq!(json["message"], "Validation failed:");
        assert_eq!(
            json["details"][0],
            json!({"pointer": "/a", "message": "must be number"})
        );
        let runtime = word_error(FeedbackStyle::Json, ErrorKind::Runtime, "Error: boom", &[]);
        assert_eq!(runtime, r#"{"error":"runtime","message":"Error: boom"}"#);
    }

    #[test]
    fn unknown_tool_lists_the_available_ones() {
        assert_eq!(
            unknown_tool("serch", ["search", "echo"].into_iter()),
            "Unknown tool \"serch\". Available tools: search, echo."
        );
    }
}
