//! How a schema violation is worded for a model: one wording for the
//! general validator's errors and the quick check's, in the short style of
//! Ajv that agent developers know. A violation is a `(pointer, message)`
//! pair ([`ArgumentError`]); how pairs are laid out for the model is the
//! pipeline's feedback style.

use std::fmt::Write as _;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

/// One way arguments break their schema: where (a JSON pointer, `/` for
/// the whole object) and what is wrong, worded for the model. Held as the
/// one line `pointer: message` (one allocation: invalid calls are a third
/// of a typical workload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    line: String,
    pointer_end: usize,
}

impl ArgumentError {
    pub fn new(pointer: &str, message: &str) -> ArgumentError {
        let mut error = ArgumentError::start(pointer, message.len());
        error.line.push_str(message);
        error
    }

    /// The pointer and the separator written, the message to follow.
    fn start(pointer: &str, message_len: usize) -> ArgumentError {
        let mut line = String::with_capacity(pointer.len() + 2 + message_len);
        line.push_str(pointer);
        line.push_str(": ");
        ArgumentError {
            line,
            pointer_end: pointer.len(),
        }
    }

    /// An error at the pointer `push_pointer` writes, its violation worded.
    pub(crate) fn worded(
        push_pointer: impl FnOnce(&mut String),
        violation: Violation<'_>,
    ) -> ArgumentError {
        let mut line = String::with_capacity(64);
        push_pointer(&mut line);
        let pointer_end = line.len();
        line.push_str(": ");
        word(violation, &mut line);
        ArgumentError { line, pointer_end }
    }

    pub fn pointer(&self) -> &str {
        &self.line[..self.pointer_end]
    }

    pub fn message(&self) -> &str {
        &self.line[self.pointer_end + 2..]
    }

    /// `pointer: message`.
    pub fn line(&self) -> &str {
        &self.line
    }
}

/// The general validator's errors as pairs.
pub fn schema_errors<'a>(errors: impl Iterator<Item = ValidationError<'a>>) -> Vec<ArgumentError> {
    errors.map(|error| argument_error(&error)).collect()
}

/// One general validator error as a pair.
pub fn argument_error(error: &ValidationError<'_>) -> ArgumentError {
    let path = error.instance_path().as_str();
    let mut error_line = ArgumentError::start(if path.is_empty() { "/" } else { path }, 48);
    describe(error, &mut error_line.line);
    error_line
}

impl std::fmt::Display for ArgumentError {
    /// `/pointer: message`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
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
    /// A message worded ahead of time (an `enum`'s, which lists every
    /// option, once per schema).
    Worded(&'a str),
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
        Violation::Worded(message) => {
            out.push_str(message);
            Ok(())
        }
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
pub fn describe(error: &ValidationError<'_>, out: &mut String) {
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
            out.push_str(&message(error));
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
        Value::String(s) => {
            out.push('\'');
            out.push_str(s);
            out.push('\'');
            Ok(())
        }
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

/// jsonschema's own message for an error, with the instance it starts
/// with (`{…whole tool…} is not valid under any of …`) cut to an excerpt.
pub fn message(error: &ValidationError<'_>) -> String {
    let message = error.to_string();
    let instance = error.instance().to_string();
    match message.strip_prefix(&instance) {
        Some(rest) if instance.len() > crate::excerpt::MAX_CHARS => {
            format!(
                "{}{}",
                crate::excerpt::json_excerpt(error.instance()),
                crate::excerpt::cut_quoted(rest)
            )
        }
        _ => crate::excerpt::cut_quoted(&message).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_messages_show_an_excerpt_of_the_instance() {
        let schema = serde_json::json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let instance = serde_json::json!({"big": "x".repeat(100_000)});
        let error = validator.iter_errors(&instance).next().unwrap();
        let message = message(&error);
        assert!(message.len() < 300, "{message}");
        assert!(message.contains("bytes)"), "{message}");
        assert!(message.contains("anyOf"), "{message}");
    }
}
