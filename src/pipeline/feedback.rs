//! How errors are worded for the model. The wording matters: a model can
//! only fix what the message names, so every validation error carries its
//! JSON pointer, and an unknown tool lists the tools that exist. Each
//! error is worded once, in the run's feedback style: toolgauge's own
//! (`pointer-list`, `json`, `bare`) or another harness's (`bfcl`,
//! `inspect`, `tau2`, each the text that harness sends for the same
//! failure).

use serde_json::{Value, json};

use crate::call::{ErrorKind, MalformedCall};
use crate::provider::EMPTY_RESULT_PLACEHOLDER;
use crate::schema::{ArgumentError, python};

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
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum FeedbackStyle {
    /// `Validation failed:` and a `- /pointer: message` line per error.
    #[default]
    #[value(help = "`Validation failed:` and a `- /pointer: message` line per error")]
    PointerList,
    /// The same facts as a JSON object.
    #[value(help = "the same facts as a JSON object")]
    Json,
    /// What a pipeline that drops the error field sends: a placeholder.
    #[value(help = "a placeholder, as a pipeline that drops the error sends")]
    Bare,
    /// BFCL's multi-turn executor (`bfcl_eval/eval_checker/multi_turn_eval/
    /// multi_turn_utils.py`, `execute_multi_turn_func_call`): a call is
    /// Python evaluated on the tool's class, and what it raises comes
    /// back as `Error during execution: {exception}`.
    #[value(help = "BFCL's multi-turn executor: `Error during execution: <exception>`")]
    Bfcl,
    /// inspect_ai (`inspect_ai/model/_call_tools.py`): arguments checked
    /// by python-jsonschema, `Found N validation errors parsing tool input
    /// arguments:` and a `- message` line each, without paths; a tool's
    /// error as `Error: {message}` (its providers' `tool_message`).
    #[value(help = "inspect_ai: python-jsonschema's messages as a list without paths")]
    Inspect,
    /// tau2-bench (`tau2/environment/environment.py`, `get_response`): the
    /// tool called as a Python method, whatever it raises sent back as
    /// `Error: {exception}`; an unknown tool `Tool '{name}' not found.`
    /// (`tau2/environment/toolkit.py`).
    #[value(help = "tau2-bench: `Error: <exception>`")]
    Tau2,
}

impl FeedbackStyle {
    /// Does wording an invalid call in this style need [`PythonFacts`]?
    pub fn needs_python_facts(self) -> bool {
        matches!(
            self,
            FeedbackStyle::Bfcl | FeedbackStyle::Inspect | FeedbackStyle::Tau2
        )
    }
}

/// A failed call, as every style needs it told.
#[derive(Debug, Clone, Copy)]
pub struct Told<'a> {
    pub kind: ErrorKind,
    /// toolgauge's words: a heading for a validation failure, the
    /// problem of a call not read, the unknown tool and those that
    /// exist, a tool's failure as `Error: {message}`.
    pub message: &'a str,
    /// A validation failure's `(pointer, message)` pairs.
    pub details: &'a [ArgumentError],
    /// The tool's own error text (a failure or a timeout), unprefixed.
    pub tool_error: Option<&'a str>,
    /// The tool the call named.
    pub tool: &'a str,
    /// Set for an invalid call under a style that words it as Python.
    pub python: Option<&'a PythonFacts>,
}

/// What Python says of an invalid call: calling the tool as a function
/// (the first keyword it does not take, the required ones left out), and
/// checking its arguments with python-jsonschema.
#[derive(Debug, Clone, Default)]
pub struct PythonFacts {
    pub unexpected: Option<String>,
    pub missing: Vec<String>,
    pub messages: Vec<String>,
}

impl PythonFacts {
    /// The facts of `arguments` against a tool's `parameters` and its
    /// compiled schema.
    pub fn of(
        parameters: &Value,
        schema: &crate::schema::Compiled,
        arguments: &crate::call::Arguments,
    ) -> PythonFacts {
        let declared = parameters.get("properties").and_then(Value::as_object);
        let given = arguments.as_map();
        PythonFacts {
            unexpected: given
                .keys()
                .find(|key| !declared.is_some_and(|d| d.contains_key(*key)))
                .cloned(),
            missing: parameters
                .as_object()
                .map(crate::schema::required_names)
                .into_iter()
                .flatten()
                .filter(|name| !given.contains_key(*name))
                .map(str::to_owned)
                .collect(),
            messages: schema.python_messages(parameters, arguments.as_value()),
        }
    }

    /// The `TypeError` Python raises calling `function` with these
    /// arguments, if it raises one.
    fn type_error(&self, function: &str) -> Option<String> {
        if let Some(name) = &self.unexpected {
            return Some(format!(
                "{function}() got an unexpected keyword argument {}",
                python::repr_str(name)
            ));
        }
        let names: Vec<String> = self.missing.iter().map(|n| python::repr_str(n)).collect();
        let listed = match names.as_slice() {
            [] => return None,
            [one] => one.clone(),
            [first, second] => format!("{first} and {second}"),
            [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
        };
        let plural = if names.len() == 1 { "" } else { "s" };
        Some(format!(
            "{function}() missing {} required positional argument{plural}: {listed}",
            names.len()
        ))
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

/// A call's error as the model reads it under `style`.
pub fn word_error(style: FeedbackStyle, told: &Told) -> String {
    match style {
        FeedbackStyle::PointerList => {
            let details = told.details;
            let lines: usize = details.iter().map(|d| d.line().len() + 2).sum();
            let mut text = String::with_capacity(told.message.len() + lines);
            text.push_str(told.message);
            for detail in details {
                text.push_str("\n- ");
                text.push_str(detail.line());
            }
            text
        }
        FeedbackStyle::Json => {
            let mut object = json!({"error": told.kind.as_str(), "message": told.message});
            if !told.details.is_empty() {
                object["details"] = told
                    .details
                    .iter()
                    .map(|d| json!({"pointer": d.pointer(), "message": d.message()}))
                    .collect::<Value>();
            }
            object.to_string()
        }
        FeedbackStyle::Bare => EMPTY_RESULT_PLACEHOLDER.to_owned(),
        FeedbackStyle::Bfcl => format!("Error during execution: {}", raised(told, "bfcl")),
        FeedbackStyle::Tau2 => format!("Error: {}", raised(told, "tau2")),
        FeedbackStyle::Inspect => format!("Error: {}", inspect_error(told)),
    }
}

/// What the tool, called as a Python function the way BFCL and tau2 call
/// it, raises: their executors' exception text.
fn raised(told: &Told, harness: &str) -> String {
    match told.kind {
        // BFCL evaluates `name(...)`: a name no class defines is Python's
        // NameError; tau2's toolkit raises its own ValueError.
        ErrorKind::UnknownTool if harness == "bfcl" => {
            format!("name {} is not defined", python::repr_str(told.tool))
        }
        ErrorKind::UnknownTool => format!("Tool {} not found.", python::repr_str(told.tool)),
        // Python checks no schema: an argument the function does not take
        // or a required one left out is its TypeError; any other
        // violation, the validator's first words, as the tool's own check
        // would raise them.
        ErrorKind::Validation => told
            .python
            .and_then(|facts| facts.type_error(told.tool))
            .or_else(|| told.details.first().map(|d| d.line().to_owned()))
            .unwrap_or_else(|| told.tool_error.unwrap_or(told.message).to_owned()),
        _ => told.tool_error.unwrap_or(told.message).to_owned(),
    }
}

/// inspect_ai's `ToolCallError` message for the same failure.
fn inspect_error(told: &Told) -> String {
    match told.kind {
        ErrorKind::UnknownTool => format!("Tool {} not found", told.tool),
        ErrorKind::Timeout => "Command timed out before completing.".to_owned(),
        ErrorKind::Validation => match told.python {
            Some(facts) if !facts.messages.is_empty() => {
                let mut text = format!(
                    "Found {} validation errors parsing tool input arguments:",
                    facts.messages.len()
                );
                for message in &facts.messages {
                    text.push_str("\n- ");
                    text.push_str(message);
                }
                text
            }
            // A server's own validation: its words, as a ToolError.
            _ => told.tool_error.unwrap_or(told.message).to_owned(),
        },
        _ => told.tool_error.unwrap_or(told.message).to_owned(),
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

    fn told<'a>(kind: ErrorKind, message: &'a str, details: &'a [ArgumentError]) -> Told<'a> {
        Told {
            kind,
            message,
            details,
            tool_error: None,
            tool: "get_weather",
            python: None,
        }
    }

    #[test]
    fn styles_keep_or_drop_the_facts() {
        let details = [
            ArgumentError::new("/a", "must be number"),
            ArgumentError::new("/", "must have required property 'b'"),
        ];
        let kind = ErrorKind::Validation;
        let word = |style| word_error(style, &told(kind, VALIDATION_HEADING, &details));
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
        let runtime = word_error(
            FeedbackStyle::Json,
            &told(ErrorKind::Runtime, "Error: boom", &[]),
        );
        assert_eq!(runtime, r#"{"error":"runtime","message":"Error: boom"}"#);
    }

    /// The facts of `arguments` against the weather tool.
    fn weather_facts(arguments: Value) -> PythonFacts {
        let parameters = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"}
            },
            "required": ["city", "units", "days"],
            "additionalProperties": false
        });
        let schema = crate::schema::Compiled::new(&parameters).unwrap();
        let arguments = crate::call::Arguments::try_from(arguments).unwrap();
        PythonFacts::of(&parameters, &schema, &arguments)
    }

    fn word_invalid(style: FeedbackStyle, facts: &PythonFacts) -> String {
        let details = [ArgumentError::new(
            "/units",
            "must be one of \"celsius\", \"fahrenheit\"",
        )];
        let mut told = told(ErrorKind::Validation, VALIDATION_HEADING, &details);
        told.python = Some(facts);
        word_error(style, &told)
    }

    fn word_tool_error(style: FeedbackStyle, kind: ErrorKind, raw: &str) -> String {
        let message = format!("Error: {raw}");
        let mut told = told(kind, &message, &[]);
        told.tool_error = Some(raw);
        word_error(style, &told)
    }

    #[test]
    fn bfcl_words_errors_as_its_executor_does() {
        // multi_turn_utils.py: `execution_results.append(f"Error during
        // execution: {str(e)}")` around `eval(func_call)`.
        let style = FeedbackStyle::Bfcl;
        assert_eq!(
            word_invalid(
                style,
                &weather_facts(json!({"city": "Oslo", "unit": "c", "days": 1}))
            ),
            "Error during execution: get_weather() got an unexpected keyword argument 'unit'"
        );
        assert_eq!(
            word_invalid(style, &weather_facts(json!({"city": "Oslo"}))),
            "Error during execution: get_weather() missing 2 required positional arguments: 'units' and 'days'"
        );
        assert_eq!(
            word_invalid(style, &weather_facts(json!({}))),
            "Error during execution: get_weather() missing 3 required positional arguments: 'city', 'units', and 'days'"
        );
        // Python checks no enum: the tool's own check, in the validator's words.
        assert_eq!(
            word_invalid(
                style,
                &weather_facts(json!({"city": "Oslo", "units": "kelvin", "days": 1}))
            ),
            "Error during execution: /units: must be one of \"celsius\", \"fahrenheit\""
        );
        assert_eq!(
            word_tool_error(style, ErrorKind::Runtime, "No such file"),
            "Error during execution: No such file"
        );
        let unknown = told(ErrorKind::UnknownTool, "Unknown tool", &[]);
        assert_eq!(
            word_error(style, &unknown),
            "Error during execution: name 'get_weather' is not defined"
        );
    }

    #[test]
    fn tau2_words_errors_as_its_environment_does() {
        // environment.py get_response: `resp = f"Error: {e}"`; toolkit.py
        // use_tool: `raise ValueError(f"Tool '{tool_name}' not found.")`.
        let style = FeedbackStyle::Tau2;
        assert_eq!(
            word_error(style, &told(ErrorKind::UnknownTool, "Unknown tool", &[])),
            "Error: Tool 'get_weather' not found."
        );
        assert_eq!(
            word_invalid(
                style,
                &weather_facts(json!({"city": "Oslo", "units": "celsius"}))
            ),
            "Error: get_weather() missing 1 required positional argument: 'days'"
        );
        assert_eq!(
            word_tool_error(style, ErrorKind::Runtime, "User not found"),
            "Error: User not found"
        );
    }

    #[test]
    fn inspect_words_errors_as_inspect_ai_does() {
        // _call_tools.py validate_tool_input: "Found {len(errors)}
        // validation errors parsing tool input arguments:" and "- {message}"
        // per python-jsonschema error; call_tool: `Tool {function} not
        // found`; the providers' tool_message: `f"Error: {message}"`.
        let style = FeedbackStyle::Inspect;
        assert_eq!(
            word_invalid(
                style,
                &weather_facts(json!({"city": "Oslo", "units": "kelvin"}))
            ),
            "Error: Found 2 validation errors parsing tool input arguments:\n- 'kelvin' is not one of ['celsius', 'fahrenheit']\n- 'days' is a required property"
        );
        assert_eq!(
            word_error(style, &told(ErrorKind::UnknownTool, "Unknown tool", &[])),
            "Error: Tool get_weather not found"
        );
        assert_eq!(
            word_tool_error(style, ErrorKind::Timeout, "timed out after 100 ms"),
            "Error: Command timed out before completing."
        );
        assert_eq!(
            word_tool_error(style, ErrorKind::Runtime, "quota exceeded"),
            "Error: quota exceeded"
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
