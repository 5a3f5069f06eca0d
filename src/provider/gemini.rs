//! Gemini generateContent: `candidates[0].content.parts[].functionCall` in
//! (ids are optional: stable ones are made when absent), one message of
//! `functionResponse` parts out (an error goes in `response.error`), tools
//! as `functionDeclarations`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use super::declared::{SchemaAt, declarations, declared};
use super::loose::{Loose, LooseCount, LooseStr, present};
use super::settings::ToolChoice;
use super::{
    Ask, FunctionSpec, GENERATED_ID_PREFIX, IdMaker, ParsedResponse, Provider, ResponseError,
    make_call, non_empty, usage_of, write_arguments,
};
use crate::call::{ParsedCall, SentArguments, ToolResult, Usage};
use crate::json_writer::{write_separated, write_str, write_u64};
use crate::pointer::{Located, Pointer};
use crate::transport::ApiRequest;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(borrow, default)]
    candidates: Option<Vec<Candidate<'a>>>,
    #[serde(default)]
    prompt_feedback: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage_metadata: Loose<UsageBlock>,
}

/// `usageMetadata`: thoughts are billed as output, and counted apart.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct UsageBlock {
    prompt_token_count: LooseCount,
    candidates_token_count: LooseCount,
    thoughts_token_count: LooseCount,
    cached_content_token_count: LooseCount,
}

impl From<UsageBlock> for Usage {
    fn from(block: UsageBlock) -> Usage {
        Usage {
            input_tokens: block.prompt_token_count.0,
            output_tokens: block.candidates_token_count.0 + block.thoughts_token_count.0,
            reasoning_tokens: block.thoughts_token_count.0,
            cached_tokens: block.cached_content_token_count.0,
            // The format reports no cache writes (they cost nothing extra).
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    finish_reason: LooseStr<'a>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<Part<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, default)]
    text: LooseStr<'a>,
    #[serde(default)]
    thought: Option<Value>,
    #[serde(borrow, default)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    #[serde(borrow, default)]
    name: LooseStr<'a>,
    #[serde(default, deserialize_with = "present")]
    args: Option<SentArguments>,
}

pub(super) fn parse_response(body: &[u8]) -> Result<ParsedResponse, ResponseError> {
    let parsed: Body<'_> = super::from_body(Provider::Gemini, body)?;
    if let Some(error) = parsed.error.filter(|e| !e.is_null()) {
        return Err(ResponseError::Api {
            provider: Provider::Gemini,
            message: super::api_error_message(&error),
        });
    }
    let Some(candidates) = parsed.candidates else {
        // A prompt blocked by safety filters has feedback and no candidates.
        if parsed.prompt_feedback.is_some() {
            return Ok(ParsedResponse::default());
        }
        return Err(ResponseError::NotAResponse {
            provider: Provider::Gemini,
            reason: "it has no `candidates`".to_owned(),
        });
    };
    let mut response = ParsedResponse {
        usage: parsed.usage_metadata.0.into(),
        ..ParsedResponse::default()
    };
    let candidate = candidates.into_iter().next();
    if let Some(candidate) = &candidate {
        response.stopped(candidate.finish_reason.as_deref(), "MAX_TOKENS");
    }
    let parts = candidate
        .and_then(|candidate| candidate.content)
        .and_then(|content| content.parts)
        .unwrap_or_default();
    let mut ids = IdMaker::new(body);
    for part in parts {
        if let Some(call) = part.function_call {
            let index = response.calls.len();
            let id = ids.id_for(call.id.as_deref(), index);
            response
                .calls
                .push(make_call(id, call.name.as_deref(), call.args.into()));
        } else if let Some(text) = part.text.as_deref() {
            if part.thought == Some(Value::Bool(true)) {
                super::append_line(&mut response.reasoning, text);
            } else {
                super::append_line(&mut response.text, text);
            }
        }
    }
    Ok(response)
}

/// Gemini matches responses to calls by name (and by id when the model gave one).
fn model_given_id(id: &str) -> Option<&str> {
    (!id.starts_with(GENERATED_ID_PREFIX)).then_some(id)
}

/// `[{"role":"user","parts":[{"functionResponse":{"id":..,"name":..,"response":{"result"|"error":..}}}, ...]}]`,
/// the id only where the model gave one.
pub(super) fn write_results(results: &[ToolResult], out: &mut Vec<u8>) {
    out.extend_from_slice(b"[{\"role\":\"user\",\"parts\":[");
    write_separated(out, results, |out, result| {
        out.extend_from_slice(b"{\"functionResponse\":{");
        if let Some(id) = model_given_id(&result.call_id) {
            out.extend_from_slice(b"\"id\":");
            write_str(out, id);
            out.push(b',');
        }
        out.extend_from_slice(b"\"name\":");
        write_str(out, &result.name);
        out.extend_from_slice(if result.is_error() {
            b",\"response\":{\"error\":"
        } else {
            b",\"response\":{\"result\":"
        });
        write_str(out, non_empty(&result.content));
        out.push(b'}');
        if !result.images.is_empty() {
            out.extend_from_slice(b",\"parts\":[");
            write_separated(out, &result.images, |out, image| {
                out.extend_from_slice(b"{\"inlineData\":{\"mimeType\":");
                write_str(out, &image.mime_type);
                out.extend_from_slice(b",\"data\":");
                write_str(out, &image.data);
                out.extend_from_slice(b"}}");
            });
            out.push(b']');
        }
        out.extend_from_slice(b"}}");
    });
    out.extend_from_slice(b"]}]");
}

pub(super) fn format_tools(tools: &[FunctionSpec]) -> Value {
    let declarations: Vec<Value> = tools
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "parametersJsonSchema": spec.parameters,
            })
        })
        .collect();
    json!([{"functionDeclarations": declarations}])
}

pub(super) fn parse_tools(tools: &Value) -> Result<Vec<FunctionSpec>, Located> {
    let mut specs = Vec::new();
    for (g, group) in declarations(tools)? {
        let Some(declarations) = group.get("functionDeclarations").and_then(Value::as_array) else {
            continue; // built-in tools such as googleSearch
        };
        for (i, declaration) in declarations.iter().enumerate() {
            let at = || {
                Pointer::root()
                    .index(g)
                    .key("functionDeclarations")
                    .index(i)
            };
            let schema = SchemaAt {
                keys: &[
                    "parametersJsonSchema",
                    "parameters_json_schema",
                    "parameters",
                ],
                required: false,
            };
            specs.push(declared(declaration, at, schema)?);
        }
    }
    Ok(specs)
}

/// A generateContent response as the API sends it, written straight into
/// `out`.
pub(super) fn write_response(text: &str, calls: &[ParsedCall], usage: Usage, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[");
    if !text.is_empty() {
        out.extend_from_slice(b"{\"text\":");
        write_str(out, text);
        out.push(b'}');
        if !calls.is_empty() {
            out.push(b',');
        }
    }
    write_separated(out, calls, |out, call| {
        out.extend_from_slice(b"{\"functionCall\":{");
        if let Some(id) = model_given_id(call.id()) {
            out.extend_from_slice(b"\"id\":");
            write_str(out, id);
            out.push(b',');
        }
        if !call.name().is_empty() {
            out.extend_from_slice(b"\"name\":");
            write_str(out, call.name());
            out.push(b',');
        }
        out.extend_from_slice(b"\"args\":");
        write_arguments(call, out);
        out.extend_from_slice(b"}}");
    });
    out.extend_from_slice(
        b"]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":",
    );
    write_u64(out, usage.input_tokens);
    out.extend_from_slice(b",\"candidatesTokenCount\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b",\"totalTokenCount\":");
    write_u64(out, usage.input_tokens + usage.output_tokens);
    out.extend_from_slice(b"},\"modelVersion\":\"toolgauge-mock\"}");
}

pub(super) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A message of one text part; Gemini's roles are `user` and `model`.
pub(super) fn text_message(role: &str, text: &str) -> Value {
    let role = if role == "assistant" { "model" } else { "user" };
    json!({"role": role, "parts": [{"text": text}]})
}

/// The model turn as generateContent defines it: its parts with only
/// their defined fields (`text`, `thought`, `functionCall` with the id
/// the model gave, and `thoughtSignature`, which Gemini 3 requires back
/// on the part it came with); anything a server added is left out.
pub(super) fn assistant_message(reply: &Value, parsed: &ParsedResponse) -> Option<Value> {
    const PART_FIELDS: [&str; 6] = [
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "executableCode",
        "codeExecutionResult",
    ];
    let mut calls = parsed.calls.iter();
    let mut parts = Vec::new();
    for part in reply["candidates"][0]["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut kept = Map::new();
        for field in PART_FIELDS {
            if let Some(value) = part.get(field) {
                kept.insert(field.to_owned(), value.clone());
            }
        }
        if kept.contains_key("functionCall")
            && let Some(call) = calls.next()
        {
            let mut function = Map::new();
            if let Some(id) = model_given_id(call.id()) {
                function.insert("id".into(), json!(id));
            }
            function.insert("name".into(), json!(call.name()));
            let args = match call {
                ParsedCall::Ok(call) => call.arguments.as_value().clone(),
                ParsedCall::Malformed(_) => part["functionCall"]["args"].clone(),
            };
            function.insert("args".into(), args);
            kept.insert("functionCall".into(), Value::Object(function));
        }
        if !kept.is_empty() {
            parts.push(Value::Object(kept));
        }
    }
    (!parts.is_empty()).then(|| json!({"role": "model", "parts": parts}))
}

/// Thinking tokens count as output.
pub(super) fn usage(reply: &Value) -> Usage {
    usage_of::<UsageBlock>(&reply["usageMetadata"])
}

/// `POST {base}/models/{model}:generateContent` with `x-goog-api-key`.
pub(super) fn request(ask: &Ask<'_>) -> ApiRequest {
    let settings = ask.settings;
    let mut headers = Vec::new();
    if let Some(key) = ask.key {
        headers.push(("x-goog-api-key", key.to_owned()));
    }
    let mut body = Map::new();
    body.insert("contents".into(), json!(ask.conversation.messages));
    if !ask.conversation.system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": ask.conversation.system.join("\n\n")}]}),
        );
    }
    if !ask.tools.is_empty() {
        body.insert("tools".into(), format_tools(ask.tools));
        if let Some(choice) = settings.tool_choice {
            let mode = match choice {
                ToolChoice::Auto => "AUTO",
                ToolChoice::Required => "ANY",
                ToolChoice::None => "NONE",
            };
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(t) = settings.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(seed) = ask.seed() {
        generation.insert("seed".into(), json!(seed));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    ApiRequest {
        url: format!(
            "{}/models/{}:generateContent",
            ask.base_url(DEFAULT_BASE_URL),
            settings.model
        ),
        headers,
        body: Value::Object(body),
    }
}

/// The inverse of Return: the result or error of each `functionResponse`.
pub(super) fn result_texts(returned: &[u8]) -> Vec<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        parts: Vec<Part<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Part<'a> {
        #[serde(borrow, default)]
        function_response: Option<FunctionResponse<'a>>,
    }
    #[derive(Deserialize)]
    struct FunctionResponse<'a> {
        #[serde(borrow)]
        response: Response<'a>,
    }
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow, default)]
        result: LooseStr<'a>,
        #[serde(borrow, default)]
        error: LooseStr<'a>,
    }
    let messages: Vec<Message<'_>> = serde_json::from_slice(returned).unwrap_or_default();
    messages
        .into_iter()
        .flat_map(|m| m.parts)
        .filter_map(|p| p.function_response)
        .filter_map(|f| f.response.result.0.or(f.response.error.0))
        .collect()
}
