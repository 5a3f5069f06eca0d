//! The checks every tool definition must pass before it is registered. Each
//! problem carries the JSON pointer (inside the definition) where it is, and
//! every problem is reported, not just the first.

use std::fmt;
use std::path::Path;

use serde_json::Value;

use super::ToolDef;
use crate::pointer::{Located, Pointer};
use crate::schema::SchemaErrorKind;
use crate::source::{self, FileError};

/// Keywords that give a property a meaning without `type`.
const COMPOSITION_KEYWORDS: [&str; 6] = ["anyOf", "oneOf", "allOf", "enum", "const", "$ref"];

/// The longest tool name all three providers accept.
const MAX_NAME_LEN: usize = 64;

/// One thing wrong with one definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionProblem {
    /// The tool's name, or `#N` (its position) when it has none.
    pub tool: String,
    /// JSON pointer inside the definition.
    pub pointer: Pointer,
    pub message: String,
}

impl DefinitionProblem {
    fn of(tool: &str, problem: Located) -> DefinitionProblem {
        DefinitionProblem {
            tool: tool.to_owned(),
            pointer: problem.pointer,
            message: problem.message,
        }
    }
}

impl fmt::Display for DefinitionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_root() {
            "/"
        } else {
            self.pointer.as_str()
        };
        write!(f, "{}: {}: {}", self.tool, pointer, self.message)
    }
}

/// A tool name providers would refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadName(String);

/// Read a JSON array of definitions and check each. A file that cannot be
/// read or is not a JSON array is an `Err`; problems in the definitions are
/// the `Ok` list (empty when all is well), alongside the definitions that
/// could be read.
pub fn check_definitions_file(
    path: &Path,
) -> Result<(Vec<ToolDef>, Vec<DefinitionProblem>), FileError> {
    let value: Value = source::read_json(path)?;
    let Value::Array(items) = value else {
        return Err(FileError::shape(
            path,
            &crate::pointer::Pointer::root(),
            "expected a JSON array of tool definitions",
        ));
    };
    let mut defs = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let label = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .map_or_else(|| format!("#{index}"), str::to_owned);
        match source::from_value::<ToolDef>(&item) {
            Ok(def) => defs.push(def),
            Err(problem) => problems.push(DefinitionProblem::of(&label, problem)),
        }
    }
    problems.extend(check_definitions(&defs));
    Ok((defs, problems))
}

/// Check a set of definitions: each on its own, then that no two share a name.
pub fn check_definitions(defs: &[ToolDef]) -> Vec<DefinitionProblem> {
    let mut problems = Vec::new();
    for (index, def) in defs.iter().enumerate() {
        let tool = if def.name.is_empty() {
            format!("#{index}")
        } else {
            def.name.clone()
        };
        for problem in check_definition(def) {
            problems.push(DefinitionProblem::of(&tool, problem));
        }
        if let Some(first) = defs[..index]
            .iter()
            .position(|other| !def.name.is_empty() && other.name == def.name)
        {
            problems.push(DefinitionProblem::of(
                &tool,
                Located::new(
                    Pointer::root().key("name"),
                    format!("duplicate name: tool #{first} already uses it"),
                ),
            ));
        }
    }
    problems
}

/// The problems of one definition, located inside it.
fn check_definition(def: &ToolDef) -> Vec<Located> {
    let mut problems = Vec::new();
    if let Err(bad) = check_name(&def.name) {
        problems.push(Located::new(Pointer::root().key("name"), bad.to_string()));
    }
    if def.description.trim().is_empty() {
        problems.push(Located::new(
            Pointer::root().key("description"),
            "description is missing: models choose tools by it",
        ));
    }
    check_parameters(&def.parameters, &mut problems);
    check_output_schema(def, &mut problems);
    // One way to run it: which one would win was the code's choice.
    let ways: Vec<&str> = [
        ("simulate", def.simulate.is_some()),
        ("http", def.http.is_some()),
        ("command", def.command.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if ways.len() > 1 {
        problems.push(Located::new(
            Pointer::root().key(ways[1]),
            format!(
                "a tool runs one way: give only one of \"simulate\", \"http\" or \"command\" (this one has {})",
                ways.join(" and ")
            ),
        ));
    }
    problems
}

/// Letters, digits, `_` and `-`; 1 to 64 characters; not starting with a
/// digit: the intersection of what OpenAI, Anthropic and Gemini accept.
pub(crate) fn check_name(name: &str) -> Result<(), BadName> {
    if name.is_empty() {
        return Err(BadName("name is missing".to_owned()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(BadName(format!(
            "name is {} characters long; providers accept at most {MAX_NAME_LEN}",
            name.len()
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(BadName(format!(
            "name {name:?} contains {bad:?}; use only letters, digits, _ and -"
        )));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(BadName(format!("name {name:?} starts with a digit")));
    }
    Ok(())
}

fn check_parameters(parameters: &Value, problems: &mut Vec<Located>) {
    let at = Pointer::root().key("parameters");
    let Some(schema) = parameters.as_object() else {
        let message = if parameters.is_null() {
            "parameters is missing: give a JSON Schema with type \"object\""
        } else {
            "parameters must be a JSON Schema object with type \"object\""
        };
        problems.push(Located::new(at, message));
        return;
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push(Located::new(
            at.clone().key("type"),
            "must be \"object\": tool arguments are always an object",
        ));
    }
    check_object_schema(parameters, &at, problems);
    let before = problems.len();
    outside_refs(parameters, &at, problems);
    let refs_outside = problems.len() > before;
    for problem in crate::schema::problems(parameters) {
        // A `$ref` outside is named above in toolgauge's words; the
        // compiler's failure on it would say it again in the crate's.
        if refs_outside && matches!(problem.kind, SchemaErrorKind::Uncompilable(_)) {
            continue;
        }
        problems.push(Located::new(
            at.clone().join(&problem.at),
            problem.kind.to_string(),
        ));
    }
}

/// Every `$ref` that leaves the schema (a URL, another file): toolgauge
/// fetches no schema, so each is named where it is.
fn outside_refs(schema: &Value, at: &Pointer, problems: &mut Vec<Located>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let here = at.clone().key(key);
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) if !target.starts_with('#') => {
                        problems.push(Located::new(
                            here,
                            format!(
                                "{target:?} points outside the schema, and toolgauge fetches no schema: define it under \"$defs\" and refer to it as \"#/$defs/NAME\""
                            ),
                        ));
                    }
                    _ => outside_refs(value, &here, problems),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                outside_refs(item, &at.clone().index(i), problems);
            }
        }
        _ => {}
    }
}

/// `required` names must be properties, and every property (recursively
/// through `properties` and `items`) needs a type or a composition keyword.
fn check_object_schema(schema: &Value, pointer: &Pointer, problems: &mut Vec<Located>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    let properties = object.get("properties").and_then(Value::as_object);
    if let Some(required) = object.get("required").and_then(Value::as_array) {
        for (i, name) in required.iter().enumerate() {
            let Some(name) = name.as_str() else { continue };
            if !properties.is_some_and(|p| p.contains_key(name)) {
                problems.push(Located::new(
                    pointer.clone().key("required").index(i),
                    format!("{name:?} is required but not defined in properties"),
                ));
            }
        }
    }
    if let Some(properties) = properties {
        for (name, property) in properties {
            let here = pointer.clone().key("properties").key(name);
            check_property(property, &here, problems);
        }
    }
    match object.get("items") {
        Some(items @ Value::Object(_)) => {
            check_property(items, &pointer.clone().key("items"), problems)
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                check_property(item, &pointer.clone().key("items").index(i), problems);
            }
        }
        _ => {}
    }
}

fn check_property(property: &Value, pointer: &Pointer, problems: &mut Vec<Located>) {
    let Some(object) = property.as_object() else {
        // `true`/`false` schemas and non-objects are for the meta-schema check.
        return;
    };
    let typed =
        object.contains_key("type") || COMPOSITION_KEYWORDS.iter().any(|k| object.contains_key(*k));
    if !typed {
        problems.push(Located::new(
            pointer.clone(),
            "has no type: add \"type\" or one of anyOf, oneOf, allOf, enum, const, $ref",
        ));
    }
    check_object_schema(property, pointer, problems);
}

/// A served tool's `outputSchema` (kept in its metadata) compiles: one
/// that does not leaves its results unchecked.
fn check_output_schema(def: &ToolDef, problems: &mut Vec<Located>) {
    let key = crate::tool::mcp::OUTPUT_SCHEMA_KEY;
    let Some(schema) = def.metadata.as_ref().and_then(|m| m.other.get(key)) else {
        return;
    };
    if let Err(error) = crate::schema::Compiled::new(schema) {
        let why = match error.kind {
            SchemaErrorKind::Draft(bad) => bad.to_string(),
            SchemaErrorKind::Invalid(why) | SchemaErrorKind::Uncompilable(why) => why,
        };
        problems.push(Located::new(
            Pointer::root().key("metadata").key(key),
            format!("the server's outputSchema does not compile ({why}): its results cannot be checked against it"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(value: Value) -> ToolDef {
        serde_json::from_value(value).unwrap()
    }

    fn problems(value: Value) -> Vec<String> {
        check_definitions(&[def(value)])
            .iter()
            .map(|p| format!("{}: {}", p.pointer, p.message))
            .collect()
    }

    #[test]
    fn a_good_definition_has_no_problems() {
        let found = problems(json!({
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "units": {"enum": ["c", "f"]},
                    "days": {"type": "array", "items": {"type": "integer"}}
                },
                "required": ["city"]
            }
        }));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn every_problem_is_reported_with_its_pointer() {
        let found = problems(json!({
            "name": "9lives.now",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"description": "untyped"},
                    "list": {"type": "array", "items": {"type": "object", "properties": {"deep": {}}}}
                },
                "required": ["a", "ghost"]
            }
        }));
        let expected = [
            "/name: name \"9lives.now\" contains '.'; use only letters, digits, _ and -",
            "/description: description is missing: models choose tools by it",
            "/parameters/required/1: \"ghost\" is required but not defined in properties",
            "/parameters/properties/a: has no type: add \"type\" or one of anyOf, oneOf, allOf, enum, const, $ref",
            "/parameters/properties/list/items/properties/deep: has no type: add \"type\" or one of anyOf, oneOf, allOf, enum, const, $ref",
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn names_follow_the_providers_rules() {
        assert!(check_name("get-weather_2").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("2fast").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(&"x".repeat(64)).is_ok());
        assert!(check_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn parameters_must_be_an_object_schema_valid_against_the_meta_schema() {
        let found = problems(json!({
            "name": "t", "description": "d",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
        }));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("/parameters/properties/n/minimum: invalid JSON Schema"),
            "{found:?}"
        );

        let found =
            problems(json!({"name": "t", "description": "d", "parameters": {"type": "string"}}));
        assert_eq!(
            found,
            ["/parameters/type: must be \"object\": tool arguments are always an object"]
        );

        let found = problems(json!({"name": "t", "description": "d"}));
        assert_eq!(
            found,
            ["/parameters: parameters is missing: give a JSON Schema with type \"object\""]
        );
    }

    #[test]
    fn draft_07_is_used_when_schema_says_so() {
        // `definitions` + `$ref` as draft-07 writes them; a bad regex fails compilation.
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"x": {"$ref": "#/definitions/x"}},
            "definitions": {"x": {"type": "string"}}
        });
        assert_eq!(
            crate::schema::draft_of(&draft7).unwrap(),
            crate::schema::Draft::Draft7
        );
        assert!(
            problems(json!({"name": "t", "description": "d", "parameters": draft7})).is_empty()
        );
        let unknown = json!({"$schema": "https://example.com/mine", "type": "object"});
        assert_eq!(
            problems(json!({"name": "t", "description": "d", "parameters": unknown})),
            [
                "/parameters/$schema: unsupported $schema \"https://example.com/mine\": use draft 2020-12 (the default) or draft-07"
            ]
        );
        let bad_regex =
            json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "(["}}});
        let found = problems(json!({"name": "t", "description": "d", "parameters": bad_regex}));
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn a_schema_uri_the_validator_crate_does_not_detect_does_not_panic() {
        // jsonschema's own draft detection panics on this spelling.
        let https = json!({"$schema": "https://json-schema.org/draft-07/schema", "type": "object"});
        assert!(problems(json!({"name": "t", "description": "d", "parameters": https})).is_empty());
    }

    #[test]
    fn duplicate_names_are_reported() {
        let one = json!({"name": "t", "description": "d", "parameters": {"type": "object"}});
        let found = check_definitions(&[def(one.clone()), def(one)]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].to_string(),
            "t: /name: duplicate name: tool #0 already uses it"
        );
    }
}
