//! BFCL's schema dialect turned into JSON Schema tool definitions: type
//! names (`dict`, `float`, `tuple`, `String`, `HashMap`, `any`, ...), the
//! non-standard `optional` key, enums written on arrays, and function names
//! with dots, which no provider accepts.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Language;
use crate::tool::{Metadata, ToolDef};

/// What "no type" becomes: every JSON type, so the property still states a
/// type (the definition checker asks for one) while constraining nothing.
const ANY_TYPE: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// The name function-calling models see: dots become underscores
/// (`math.factorial` -> `math_factorial`), as in BFCL's published FC results.
pub fn tool_name(bfcl_name: &str) -> String {
    bfcl_name.replace('.', "_")
}

/// How values of a parameter are written in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// JSON values of the declared type (the schema is normalised).
    Typed,
    /// Java and JavaScript entries: BFCL asks for every parameter as source
    /// text, so each top-level parameter is a string and its declared type
    /// is kept in the tool's metadata.
    SourceText,
}

impl Values {
    pub fn of(language: Language) -> Values {
        match language {
            Language::Python => Values::Typed,
            Language::Java | Language::JavaScript => Values::SourceText,
        }
    }
}

/// One BFCL function doc as a tool definition. The original doc is kept in
/// `metadata.bfcl` (name, parameters, language).
pub fn to_tool(function: &Value, language: Language, values: Values) -> ToolDef {
    let bfcl_name = function["name"].as_str().unwrap_or_default();
    let original = function.get("parameters").cloned().unwrap_or(Value::Null);
    let mut parameters = normalise(&original);
    let mut declared = Map::new();
    if values == Values::SourceText
        && let Some(properties) = parameters
            .get_mut("properties")
            .and_then(Value::as_object_mut)
    {
        for (name, property) in properties.iter_mut() {
            let declared_type = original["properties"][name]["type"].clone();
            declared.insert(name.clone(), declared_type.clone());
            let mut text = json!({"type": "string"});
            if let Some(description) = property.get("description") {
                text["description"] = description.clone();
            }
            *property = text;
        }
    }
    let mut bfcl = json!({
        "name": bfcl_name,
        "language": language.as_str(),
        "parameters": original,
    });
    if !declared.is_empty() {
        bfcl["declared_types"] = Value::Object(declared);
    }
    ToolDef {
        name: tool_name(bfcl_name),
        description: function["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        parameters,
        effect: Default::default(),
        timeout_ms: crate::tool::DEFAULT_TIMEOUT_MS,
        metadata: Some(Metadata {
            category: Some("bfcl".to_owned()),
            other: BTreeMap::from([("bfcl".to_owned(), bfcl)]),
            ..Metadata::default()
        }),
        simulate: None,
        http: None,
        command: None,
    }
}

/// A BFCL schema node in JSON Schema, recursively.
pub fn normalise(node: &Value) -> Value {
    let Some(node) = node.as_object() else {
        return node.clone();
    };
    let mut out = Map::new();
    for (key, value) in node {
        match key.as_str() {
            "type" => {
                if let Some(t) = json_type(value) {
                    out.insert("type".to_owned(), t);
                }
            }
            "properties" => {
                let properties = value.as_object().map(|p| {
                    p.iter()
                        .map(|(name, child)| (name.clone(), normalise(child)))
                        .collect::<Map<_, _>>()
                });
                out.insert(
                    key.clone(),
                    properties.map_or_else(|| value.clone(), Value::Object),
                );
            }
            "items" | "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), normalise(value));
            }
            // Not JSON Schema; its boolean forms are honoured below.
            "optional" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    honour_optional(node, &mut out);
    declare_required(&mut out);
    move_array_enum_to_items(&mut out);
    if !out.contains_key("type") && !has_composition(&out) {
        out.insert("type".to_owned(), json!(ANY_TYPE));
    }
    Value::Object(out)
}

fn json_type(bfcl: &Value) -> Option<Value> {
    let name = bfcl.as_str()?;
    let mapped = match name.to_ascii_lowercase().as_str() {
        "dict" | "hashmap" | "object" | "map" => "object",
        "float" | "double" | "number" => "number",
        "integer" | "int" | "long" | "short" | "byte" => "integer",
        "tuple" | "arraylist" | "array" | "list" => "array",
        "string" | "char" | "str" => "string",
        "boolean" | "bool" => "boolean",
        "null" => "null",
        // `any`, `""` and anything unknown: unconstrained.
        _ => return Some(json!(ANY_TYPE)),
    };
    Some(json!(mapped))
}

/// A property marked `optional: true` (or "True", "true", "yes") is not
/// required, whatever the parent's `required` says.
fn honour_optional(node: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(properties) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    let optional: Vec<&String> = properties
        .iter()
        .filter(|(_, p)| is_optional(p.get("optional")))
        .map(|(name, _)| name)
        .collect();
    if optional.is_empty() {
        return;
    }
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| optional.iter().any(|o| *o == r)));
    }
}

fn is_optional(flag: Option<&Value>) -> bool {
    match flag {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => false,
    }
}

/// BFCL sometimes lists required keys of a free-form dict without
/// declaring them; each gets an unconstrained property, so the requirement
/// stays and the definition checker finds every required name declared.
fn declare_required(out: &mut Map<String, Value>) {
    let Some(required) = out.get("required").and_then(Value::as_array).cloned() else {
        return;
    };
    let properties = out
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(properties) = properties {
        for name in required.iter().filter_map(Value::as_str) {
            properties
                .entry(name)
                .or_insert_with(|| json!({"type": ANY_TYPE}));
        }
    }
}

/// BFCL writes the allowed values of an array's items on the array.
fn move_array_enum_to_items(out: &mut Map<String, Value>) {
    let is_array = out.get("type") == Some(&json!("array"));
    let scalar_options = out
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|o| o.iter().all(|v| !v.is_array()));
    if !(is_array && scalar_options) {
        return;
    }
    let options = out.remove("enum").unwrap_or_default();
    let items = out
        .entry("items")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(items) = items {
        items.insert("enum".to_owned(), options);
    }
}

fn has_composition(node: &Map<String, Value>) -> bool {
    ["anyOf", "oneOf", "allOf", "enum", "const", "$ref"]
        .iter()
        .any(|k| node.contains_key(*k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_optional_and_array_enums_become_json_schema() {
        let bfcl = json!({
            "type": "dict",
            "properties": {
                "x": {"type": "float", "default": "1.2"},
                "pair": {"type": "tuple", "items": {"type": "String"}},
                "map": {"type": "HashMap"},
                "anything": {"type": "any"},
                "blank": {"type": ""},
                "n": {"type": "long", "optional": "True"},
                "days": {"type": "array", "enum": ["mon", "tue"]}
            },
            "required": ["x", "n"]
        });
        let schema = normalise(&bfcl);
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["x"],
            json!({"type": "number", "default": "1.2"})
        );
        assert_eq!(schema["properties"]["pair"]["items"]["type"], "string");
        assert_eq!(schema["properties"]["map"]["type"], "object");
        assert_eq!(schema["properties"]["anything"]["type"], json!(ANY_TYPE));
        assert_eq!(schema["properties"]["blank"]["type"], json!(ANY_TYPE));
        assert_eq!(schema["properties"]["n"], json!({"type": "integer"}));
        assert_eq!(schema["required"], json!(["x"]));
        let free = normalise(&json!({"type": "dict", "required": ["adults"]}));
        assert_eq!(free["properties"]["adults"]["type"], json!(ANY_TYPE));
        assert_eq!(
            schema["properties"]["days"],
            json!({"type": "array", "items": {"enum": ["mon", "tue"]}})
        );
        let validator = crate::schema::Compiled::new(&schema).unwrap();
        assert!(validator.is_valid(&json!({"x": 2, "days": ["mon"], "anything": [1]})));
        assert!(!validator.is_valid(&json!({"x": "2"})));
    }

    #[test]
    fn source_text_parameters_are_strings_with_their_declared_type_kept() {
        let function = json!({
            "name": "Geometry.create",
            "description": "d",
            "parameters": {"type": "dict", "properties": {"flag": {"type": "boolean", "description": "f"}}, "required": ["flag"]}
        });
        let tool = to_tool(&function, Language::Java, Values::SourceText);
        assert_eq!(tool.name, "Geometry_create");
        assert_eq!(
            tool.parameters["properties"]["flag"],
            json!({"type": "string", "description": "f"})
        );
        let bfcl = &tool.metadata.unwrap().other["bfcl"];
        assert_eq!(bfcl["name"], "Geometry.create");
        assert_eq!(bfcl["declared_types"]["flag"], "boolean");
        assert_eq!(bfcl["parameters"]["type"], "dict");
    }
}
