//! A schema's draft, its problems, and `Compiled`: compiled once, the
//! general validator with the fast check beside it.

use std::fmt;

use fast::FastSchema;
use serde_json::Value;

use super::{ArgumentError, Draft, errors, fast};
use crate::call::Arguments;
use crate::pointer::Pointer;

/// A problem with a schema itself, at a pointer inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub at: Pointer,
    pub kind: SchemaErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaErrorKind {
    #[error("{0}")]
    Draft(BadDraft),
    /// The draft's meta-schema refuses it.
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
    /// It passes the meta-schema but does not compile (a bad regex, a
    /// `$ref` that resolves nowhere).
    #[error("cannot compile the schema: {0}")]
    Uncompilable(String),
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.kind)
    }
}

impl std::error::Error for SchemaError {}

/// A `$schema` toolgauge does not validate with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDraft {
    #[error("$schema must be a string")]
    NotAString,
    #[error("unsupported $schema {0:?}: use draft 2020-12 (the default) or draft-07")]
    Unsupported(String),
}

/// Which draft a schema is written in: 2020-12 unless `$schema` names
/// another draft.
pub fn draft_of(schema: &Value) -> Result<Draft, BadDraft> {
    let Some(uri) = schema.get("$schema") else {
        return Ok(Draft::Draft202012);
    };
    let uri = uri.as_str().ok_or(BadDraft::NotAString)?;
    let trimmed = uri
        .trim_end_matches('#')
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    match trimmed {
        "json-schema.org/draft-07/schema" => Ok(Draft::Draft7),
        "json-schema.org/draft-06/schema" => Ok(Draft::Draft6),
        "json-schema.org/draft-04/schema" => Ok(Draft::Draft4),
        "json-schema.org/draft/2019-09/schema" => Ok(Draft::Draft201909),
        "json-schema.org/draft/2020-12/schema" => Ok(Draft::Draft202012),
        _ => Err(BadDraft::Unsupported(uri.to_owned())),
    }
}

/// How every tool schema is compiled. `format` is asserted, not just
/// annotated: a tool that declares `format: date` means it, and a model
/// that sends "tomorrow" should hear so before the tool runs.
pub fn options(draft: Draft) -> jsonschema::ValidationOptions<'static> {
    jsonschema::options()
        .with_draft(draft)
        .should_validate_formats(true)
}

/// Every problem of a schema: each place its draft's meta-schema refuses,
/// or else why it does not compile (the meta-schema does not catch bad
/// regexes or unresolvable `$ref`s). Empty for a schema that compiles.
pub fn problems(schema: &Value) -> Vec<SchemaError> {
    let draft = match draft_of(schema) {
        Ok(draft) => draft,
        Err(bad) => {
            return vec![SchemaError {
                at: Pointer::root().key("$schema"),
                kind: SchemaErrorKind::Draft(bad),
            }];
        }
    };
    // The meta-schema of the draft chosen, not the crate's own detection,
    // which panics on a `$schema` it does not know.
    let meta = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validator(),
        Draft::Draft6 => jsonschema::draft6::meta::validator(),
        Draft::Draft7 => jsonschema::draft7::meta::validator(),
        Draft::Draft201909 => jsonschema::draft201909::meta::validator(),
        _ => jsonschema::draft202012::meta::validator(),
    };
    let refused: Vec<SchemaError> = meta
        .iter_errors(schema)
        .map(|error| SchemaError {
            at: Pointer::at(error.instance_path().to_string()),
            kind: SchemaErrorKind::Invalid(error.to_string()),
        })
        .collect();
    if !refused.is_empty() {
        return refused;
    }
    match options(draft).build(schema) {
        Ok(_) => Vec::new(),
        Err(error) => vec![uncompilable(&error)],
    }
}

fn uncompilable(error: &jsonschema::ValidationError<'_>) -> SchemaError {
    SchemaError {
        at: Pointer::at(error.instance_path().to_string()),
        kind: SchemaErrorKind::Uncompilable(error.to_string()),
    }
}

/// A schema compiled once: its draft, the general validator (`full`) and,
/// when the schema is in its subset, the fast check that answers the same.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub(crate) draft: Draft,
    pub(crate) full: jsonschema::Validator,
    pub(crate) fast: Option<FastSchema>,
}

impl Compiled {
    /// Compile `schema` in the draft its `$schema` names.
    pub fn new(schema: &Value) -> Result<Compiled, SchemaError> {
        let draft = draft_of(schema).map_err(|bad| SchemaError {
            at: Pointer::root().key("$schema"),
            kind: SchemaErrorKind::Draft(bad),
        })?;
        let full = options(draft)
            .build(schema)
            .map_err(|error| uncompilable(&error))?;
        Ok(Compiled {
            draft,
            full,
            fast: FastSchema::compile(schema, draft),
        })
    }

    /// As [`Compiled::new`], but `format` only annotates, as the crate's
    /// default has it: the validator some other tools use.
    #[cfg(test)]
    pub(crate) fn with_formats_annotated(schema: &Value) -> Compiled {
        let draft = draft_of(schema).expect("a known draft");
        Compiled {
            draft,
            full: jsonschema::options()
                .with_draft(draft)
                .build(schema)
                .expect("compiles"),
            fast: None,
        }
    }

    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// The fast check, when the schema is in its subset.
    pub fn fast(&self) -> Option<&FastSchema> {
        self.fast.as_ref()
    }

    /// Does `instance` fit? The fast check answers when there is one.
    pub fn is_valid(&self, instance: &Value) -> bool {
        match &self.fast {
            Some(fast) => fast.is_valid(instance),
            None => self.full.is_valid(instance),
        }
    }

    /// The general validator's answer alone: the reference the fast check
    /// and every validator under fuzzing are held to.
    pub fn full_is_valid(&self, instance: &Value) -> bool {
        self.full.is_valid(instance)
    }

    /// Every way `instance` breaks the schema, worded for the model, as
    /// the general validator finds them.
    pub fn errors(&self, instance: &Value) -> Vec<ArgumentError> {
        errors::schema_errors(self.full.iter_errors(instance))
    }

    /// The first way `instance` breaks the schema, if it does.
    pub fn first_error(&self, instance: &Value) -> Option<ArgumentError> {
        self.full
            .iter_errors(instance)
            .next()
            .map(|error| errors::argument_error(&error))
    }

    /// Whether `instance` breaks the schema, and only by `keyword` at
    /// `at` (a pointer into the instance), as the general validator sees.
    pub fn broken_only_by(&self, instance: &Value, keyword: &str, at: &Pointer) -> bool {
        let mut errors = self.full.iter_errors(instance).peekable();
        errors.peek().is_some()
            && errors.all(|e| {
                e.instance_path().as_str() == at.as_str()
                    && e.schema_path().as_str().rsplit('/').next() == Some(keyword)
            })
    }

    /// Do a call's arguments fit? Read as sent when the fast check answers.
    pub fn arguments_are_valid(&self, arguments: &Arguments) -> bool {
        match &self.fast {
            Some(fast) => fast.arguments_are_valid(arguments),
            None => self.full.is_valid(arguments.as_value()),
        }
    }

    /// Every way a call's arguments break the schema, worded for the model.
    pub fn argument_errors(&self, arguments: &Arguments) -> Vec<ArgumentError> {
        match &self.fast {
            Some(fast) => fast.argument_errors(arguments),
            None => self.errors(arguments.as_value()),
        }
    }
}

/// The names an object schema's `required` lists (strings only; anything
/// else there is the definition checker's business).
pub fn required_names(schema: &serde_json::Map<String, Value>) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}
