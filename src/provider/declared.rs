//! A tool declaration of a request read back into a `FunctionSpec`: each
//! format finds its declarations, and this reads each one's name,
//! description and schema.

use serde_json::{Value, json};

use crate::call::FunctionSpec;
use crate::pointer::{Located, Pointer};

/// Where a format keeps a declaration's schema, and what a declaration
/// without one means.
pub(super) struct SchemaAt {
    /// Tried in order; a `null` is no schema.
    pub keys: &'static [&'static str],
    /// Without one the declaration is refused, naming the first key;
    /// otherwise the tool takes no arguments.
    pub required: bool,
}

/// A request's `tools`, by their place: it must be an array.
pub(super) fn declarations(
    tools: &Value,
) -> Result<impl Iterator<Item = (usize, &Value)>, Located> {
    let tools = tools
        .as_array()
        .ok_or_else(|| Located::here("must be an array"))?;
    Ok(tools.iter().enumerate())
}

/// OpenAI's formats: `parameters`, which a tool without arguments may
/// leave out.
pub(super) const PARAMETERS: SchemaAt = SchemaAt {
    keys: &["parameters"],
    required: false,
};

/// The declaration at `at` (within the request's `tools`).
pub(super) fn declared(
    declaration: &Value,
    at: impl Fn() -> Pointer,
    schema: SchemaAt,
) -> Result<FunctionSpec, Located> {
    let name = declaration
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Located::new(at(), "has no name"))?;
    let found = schema
        .keys
        .iter()
        .find_map(|key| declaration.get(*key).filter(|p| !p.is_null()));
    let parameters = match found {
        Some(parameters) => parameters.clone(),
        None if schema.required => {
            return Err(Located::new(at(), format!("has no {}", schema.keys[0])));
        }
        None => json!({"type": "object", "properties": {}}),
    };
    Ok(FunctionSpec {
        name: name.to_owned(),
        description: declaration
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        parameters,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Provider;
    use serde_json::json;

    #[test]
    fn every_format_reads_a_declarations_name_description_and_schema_alike() {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let tools = [
            (
                Provider::OpenAi,
                json!([{"type": "function", "function": {"name": "find", "description": "Find.", "parameters": schema}}]),
            ),
            (
                Provider::OpenAiResponses,
                json!([{"type": "function", "name": "find", "description": "Find.", "parameters": schema}]),
            ),
            (
                Provider::Anthropic,
                json!([{"name": "find", "description": "Find.", "input_schema": schema}]),
            ),
            (
                Provider::Gemini,
                json!([{"functionDeclarations": [{"name": "find", "description": "Find.", "parametersJsonSchema": schema, "parameters": {}}]}]),
            ),
        ];
        for (provider, tools) in tools {
            let specs = provider.parse_tools(&tools).unwrap();
            assert_eq!(specs.len(), 1, "{provider:?}");
            assert_eq!(
                (specs[0].name.as_str(), specs[0].description.as_str()),
                ("find", "Find."),
                "{provider:?}"
            );
            assert_eq!(specs[0].parameters, schema, "{provider:?}");
        }
    }

    #[test]
    fn a_declaration_without_its_name_or_required_schema_is_refused_where_it_stands() {
        use super::super::{anthropic, gemini, openai};
        let anthropic =
            anthropic::parse_tools(&json!([{"name": "a", "input_schema": {}}, {"name": "b"}]));
        assert_eq!(
            anthropic.unwrap_err().to_string(),
            "/1: has no input_schema"
        );
        let chat =
            openai::parse_tools(&json!([{"type": "function", "function": {"parameters": {}}}]));
        assert_eq!(chat.unwrap_err().to_string(), "/0/function: has no name");
        let gemini = gemini::parse_tools(&json!([{"functionDeclarations": [{"name": "a"}, {}]}]));
        assert_eq!(
            gemini.unwrap_err().to_string(),
            "/0/functionDeclarations/1: has no name"
        );
    }

    #[test]
    fn a_null_schema_is_a_tool_without_arguments() {
        let specs = Provider::OpenAi
            .parse_tools(
                &json!([{"type": "function", "function": {"name": "now", "parameters": null}}]),
            )
            .unwrap();
        assert_eq!(
            specs[0].parameters,
            json!({"type": "object", "properties": {}})
        );
    }
}
