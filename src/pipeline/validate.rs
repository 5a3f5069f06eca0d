//! Validate: is the call readable, is the tool known, do the arguments fit
//! the tool's schema? A rejected call gets its error text here and is
//! never executed.

use std::borrow::Cow;

use super::feedback;
use crate::call::{Arguments, ErrorKind, ParsedCall};
use crate::schema::ArgumentError;
use crate::tool::{Registry, ToolId};

/// A call that may run: the tool and its (valid) arguments.
#[derive(Debug, Clone, Copy)]
pub struct Approved<'c> {
    pub tool: ToolId,
    pub arguments: &'c Arguments,
}

/// Why a call may not run: what happened, and for arguments that break
/// the schema, every violation as a `(pointer, message)` pair. Worded for
/// the model once, in the run's feedback style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub kind: ErrorKind,
    /// What happened: a fixed heading for a validation failure.
    pub message: Cow<'static, str>,
    pub details: Vec<ArgumentError>,
}

/// Check one call. The cheap boolean check runs first; errors are only
/// collected and worded for a call that fails it: by the quick check where
/// the tool's schema is in its subset (cheap enough to run twice), else in
/// one pass of the general validator.
pub fn validate<'c>(registry: &Registry, call: &'c ParsedCall) -> Result<Approved<'c>, Rejection> {
    validate_among(registry, &[], call)
}

/// [`validate`] for a model not yet given the tools `hidden` names (a
/// conversation adds them at a later user turn): a call to one is a call
/// to an unknown tool, and the error lists only the tools it has.
pub fn validate_among<'c>(
    registry: &Registry,
    hidden: &[String],
    call: &'c ParsedCall,
) -> Result<Approved<'c>, Rejection> {
    let call = match call {
        ParsedCall::Ok(call) => call,
        ParsedCall::Malformed(call) => {
            return Err(Rejection {
                kind: ErrorKind::Parse,
                message: Cow::Owned(feedback::malformed(call)),
                details: Vec::new(),
            });
        }
    };
    let shown = |name: &str| !hidden.iter().any(|h| h == name);
    let Some(tool) = registry.lookup(&call.name).filter(|_| shown(&call.name)) else {
        let available = registry.names().filter(|n| shown(n));
        return Err(Rejection {
            kind: ErrorKind::UnknownTool,
            message: Cow::Owned(feedback::unknown_tool(&call.name, available)),
            details: Vec::new(),
        });
    };
    let approved = Approved {
        tool,
        arguments: &call.arguments,
    };
    let schema = registry.schema(tool);
    if schema.arguments_are_valid(&call.arguments) {
        return Ok(approved);
    }
    let details = schema.argument_errors(&call.arguments);
    Err(Rejection {
        kind: ErrorKind::Validation,
        message: Cow::Borrowed(feedback::VALIDATION_HEADING),
        details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::{MalformedCall, ToolCall};
    use crate::tool::ToolEnv;
    use serde_json::json;

    fn call(name: &str, arguments: serde_json::Value) -> ParsedCall {
        ParsedCall::Ok(ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.try_into().unwrap(),
        })
    }

    #[test]
    fn stages_reject_with_the_right_kind() {
        let registry = Registry::builtins(&["echo", "math"], ToolEnv::default()).unwrap();
        assert!(validate(&registry, &call("echo", json!({"message": "hi"}))).is_ok());

        let unknown = validate(&registry, &call("ecko", json!({}))).unwrap_err();
        assert_eq!(unknown.kind, ErrorKind::UnknownTool);
        assert_eq!(
            unknown.message,
            "Unknown tool \"ecko\". Available tools: echo, math."
        );

        let invalid = validate(
            &registry,
            &call("math", json!({"operation": "pow", "a": "1"})),
        )
        .unwrap_err();
        assert_eq!(invalid.kind, ErrorKind::Validation);
        assert_eq!(invalid.message, "Validation failed:");
        let mut lines: Vec<String> = invalid.details.iter().map(ToString::to_string).collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "/: must have required property 'b'",
                "/a: must be number",
                "/operation: must be one of \"add\", \"subtract\", \"multiply\", \"divide\"",
            ]
        );

        let broken = ParsedCall::Malformed(MalformedCall {
            id: "c2".into(),
            name: "echo".into(),
            raw_arguments: "{\"message\": ".into(),
            problem: "the arguments are not valid JSON".into(),
        });
        let parse = validate(&registry, &broken).unwrap_err();
        assert_eq!(parse.kind, ErrorKind::Parse);
        assert!(parse.message.contains("\"c2\""), "{}", parse.message);
    }
}
