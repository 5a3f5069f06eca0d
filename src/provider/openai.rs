//! OpenAI Chat Completions (and compatible servers): `choices[0].message.
//! tool_calls` in, where `arguments` is a JSON *string*; one `role: tool`
//! message per result out; tools as `{"type": "function", "function": ...}`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::declared::{PARAMETERS, declarations, declared};
use super::loose::{Loose, LooseCount, LooseStr, present};
use super::settings::ToolChoice;
use super::{
    Ask, FunctionSpec, IdMaker, ParsedResponse, Provider, ResponseError, WireArguments, make_call,
    non_empty, usage_of,
};
use crate::call::{ParsedCall, ToolResult, Usage};
use crate::json_writer::{write_separated, write_str, write_u64, write_value};
use crate::pointer::{Located, Pointer};
use crate::transport::ApiRequest;

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Loose<UsageBlock>,
}

/// `usage`: reasoning and cached tokens are counted in its details.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageBlock {
    prompt_tokens: LooseCount,
    completion_tokens: LooseCount,
    completion_tokens_details: Loose<ReasoningTokens>,
    prompt_tokens_details: Loose<CachedTokens>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct ReasoningTokens {
    pub(super) reasoning_tokens: LooseCount,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct CachedTokens {
    pub(super) cached_tokens: LooseCount,
}

impl From<UsageBlock> for Usage {
    fn from(block: UsageBlock) -> Usage {
        Usage {
            input_tokens: block.prompt_tokens.0,
            output_tokens: block.completion_tokens.0,
            reasoning_tokens: block.completion_tokens_details.0.reasoning_tokens.0,
            cached_tokens: block.prompt_tokens_details.0.cached_tokens.0,
            // The format reports no cache writes (they cost nothing extra).
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    finish_reason: LooseStr<'a>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default)]
    content: Option<Value>,
    /// Compatible servers' reasoning text (vLLM, llama.cpp, DeepSeek):
    /// shown in the log, never sent back (DeepSeek refuses it).
    #[serde(borrow, default)]
    reasoning_content: LooseStr<'a>,
    #[serde(borrow, default)]
    reasoning: LooseStr<'a>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<RawCall<'a>>>,
}

#[derive(Deserialize)]
struct RawCall<'a> {
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    /// Absent on some compatible servers (Mistral); `custom` tools are not ours.
    #[serde(rename = "type", borrow, default)]
    kind: LooseStr<'a>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: LooseStr<'a>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
}

pub(super) fn parse_response(body: &[u8]) -> Result<ParsedResponse, ResponseError> {
    let parsed: Body<'_> = super::from_body(Provider::OpenAi, body)?;
    if let Some(error) = parsed.error.filter(|e| !e.is_null()) {
        return Err(ResponseError::Api {
            provider: Provider::OpenAi,
            message: super::api_error_message(&error),
        });
    }
    let choice = parsed
        .choices
        .and_then(|choices| choices.into_iter().next())
        .ok_or_else(|| ResponseError::NotAResponse {
            provider: Provider::OpenAi,
            reason: "it has no `choices`".to_owned(),
        })?;
    let Some(message) = choice.message else {
        return Err(ResponseError::NotAResponse {
            provider: Provider::OpenAi,
            reason: "choices[0] has no `message`".to_owned(),
        });
    };
    let mut response = ParsedResponse {
        text: content_text(message.content.as_ref()),
        reasoning: message
            .reasoning_content
            .as_deref()
            .or(message.reasoning.as_deref())
            .unwrap_or_default()
            .to_owned(),
        usage: parsed.usage.0.into(),
        ..ParsedResponse::default()
    };
    response.stopped(choice.finish_reason.as_deref(), "length");
    let mut ids = IdMaker::new(body);
    for raw in message.tool_calls.unwrap_or_default() {
        if raw.kind.as_deref().is_some_and(|kind| kind != "function") {
            continue;
        }
        let index = response.calls.len();
        let id = ids.id_for(raw.id.as_deref(), index);
        let call = match &raw.function {
            None => make_call(id, None, WireArguments::Missing),
            Some(function) => {
                let arguments = match &function.arguments {
                    None => WireArguments::Missing,
                    Some(Value::String(text)) => WireArguments::Text(text),
                    // Some compatible servers send an object; accept what is unambiguous.
                    Some(other) => WireArguments::Value(other.clone()),
                };
                make_call(id, function.name.as_deref(), arguments)
            }
        };
        response.calls.push(call);
    }
    Ok(response)
}

/// `content` is a string, null, or (some servers) an array of text parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `[{"role":"tool","tool_call_id":..,"content":..}, ...]`; images, which
/// a tool message cannot hold, follow in one user message, each after a
/// line naming its call.
pub(super) fn write_results(results: &[ToolResult], out: &mut Vec<u8>) {
    out.push(b'[');
    write_separated(out, results, |out, result| {
        out.extend_from_slice(b"{\"role\":\"tool\",\"tool_call_id\":");
        write_str(out, &result.call_id);
        out.extend_from_slice(b",\"content\":");
        write_str(out, non_empty(&result.content));
        out.push(b'}');
    });
    let with_images: Vec<&ToolResult> = results.iter().filter(|r| !r.images.is_empty()).collect();
    if !with_images.is_empty() {
        out.extend_from_slice(b",{\"role\":\"user\",\"content\":[");
        write_separated(out, &with_images, |out, result| {
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
            write_str(
                out,
                &format!("The images call {} returned:", result.call_id),
            );
            out.push(b'}');
            for image in &result.images {
                out.extend_from_slice(b",{\"type\":\"image_url\",\"image_url\":{\"url\":");
                write_str(out, &image.data_url());
                out.extend_from_slice(b"}}");
            }
        });
        out.extend_from_slice(b"]}");
    }
    out.push(b']');
}

pub(super) fn format_tools(tools: &[FunctionSpec]) -> Value {
    tools
        .iter()
        .map(|spec| {
            json!({
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                },
            })
        })
        .collect()
}

pub(super) fn parse_tools(tools: &Value) -> Result<Vec<FunctionSpec>, Located> {
    declarations(tools)?
        .map(|(i, tool)| {
            let function = tool
                .get("function")
                .ok_or_else(|| Located::new(Pointer::root().index(i), "has no function"))?;
            let at = || Pointer::root().index(i).key("function");
            declared(function, at, PARAMETERS)
        })
        .collect()
}

/// A chat completion as the API sends it, written straight into `out`.
pub(super) fn write_response(text: &str, calls: &[ParsedCall], usage: Usage, out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"{\"id\":\"chatcmpl-toolgauge\",\"object\":\"chat.completion\",\"created\":0,\
          \"model\":\"toolgauge-mock\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\
          \"content\":",
    );
    if text.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        write_str(out, text);
    }
    if !calls.is_empty() {
        out.extend_from_slice(b",\"tool_calls\":[");
        let mut arguments = Vec::new();
        write_separated(out, calls, |out, call| {
            out.extend_from_slice(b"{\"id\":");
            write_str(out, call.id());
            out.extend_from_slice(b",\"type\":\"function\",\"function\":{");
            if !call.name().is_empty() {
                out.extend_from_slice(b"\"name\":");
                write_str(out, call.name());
                out.push(b',');
            }
            // The arguments are JSON text inside a string.
            out.extend_from_slice(b"\"arguments\":");
            match call {
                ParsedCall::Ok(call) => {
                    arguments.clear();
                    write_value(&mut arguments, call.arguments.as_value());
                    write_str(
                        out,
                        std::str::from_utf8(&arguments).expect("JSON text is UTF-8"),
                    );
                }
                ParsedCall::Malformed(call) => write_str(out, &call.raw_arguments),
            }
            out.extend_from_slice(b"}}");
        });
        out.push(b']');
    }
    out.extend_from_slice(b"},\"finish_reason\":");
    out.extend_from_slice(if calls.is_empty() {
        b"\"stop\""
    } else {
        b"\"tool_calls\""
    });
    out.extend_from_slice(b"}],\"usage\":{\"prompt_tokens\":");
    write_u64(out, usage.input_tokens);
    out.extend_from_slice(b",\"completion_tokens\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b",\"total_tokens\":");
    write_u64(out, usage.input_tokens + usage.output_tokens);
    out.extend_from_slice(b"}}");
}

pub(super) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A message of plain text (system text stays among the messages).
pub(super) fn text_message(role: &str, text: &str) -> Value {
    json!({"role": role, "content": text})
}

/// The assistant turn as Chat Completions defines it: `content` a string
/// (`""` beside calls: some servers refuse `null`), `tool_calls` with
/// `id`, `type` and `function` (arguments as the JSON text sent), nothing
/// else (a server's own extras, such as a legacy `function_call`, are
/// refused by other servers, and reasoning text is not sent back).
pub(super) fn assistant_message(parsed: &ParsedResponse) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(parsed.text));
    if !parsed.calls.is_empty() {
        let calls: Vec<Value> = parsed
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id(),
                    "type": "function",
                    "function": {"name": call.name(), "arguments": call.arguments_text()},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

pub(super) fn usage(reply: &Value) -> Usage {
    usage_block(&reply["usage"])
}

/// The tokens of a `usage` block.
pub(super) fn usage_block(block: &Value) -> Usage {
    usage_of::<UsageBlock>(block)
}

/// `POST {base}/chat/completions`, the key as a bearer token.
pub(super) fn request(ask: &Ask<'_>) -> ApiRequest {
    let settings = ask.settings;
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert("messages".into(), json!(ask.conversation.messages));
    if !ask.tools.is_empty() {
        body.insert("tools".into(), format_tools(ask.tools));
        tool_options(settings, &mut body);
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(seed) = ask.seed() {
        body.insert("seed".into(), json!(seed));
    }
    ApiRequest {
        url: format!("{}/chat/completions", ask.base_url(DEFAULT_BASE_URL)),
        headers: bearer(ask),
        body: Value::Object(body),
    }
}

/// The key as a bearer token, as both OpenAI APIs take it.
pub(super) fn bearer(ask: &Ask<'_>) -> Vec<(&'static str, String)> {
    ask.key
        .map(|key| ("authorization", format!("Bearer {key}")))
        .into_iter()
        .collect()
}

/// `tool_choice` and `parallel_tool_calls`, as both OpenAI APIs take them.
pub(super) fn tool_options(settings: &super::ApiSettings, body: &mut Map<String, Value>) {
    if let Some(choice) = settings.tool_choice {
        let name = match choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
        };
        body.insert("tool_choice".into(), json!(name));
    }
    if let Some(parallel) = settings.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
}

/// The inverse of Return: the content of each result message.
pub(super) fn result_texts(returned: &[u8]) -> Vec<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        content: LooseStr<'a>,
    }
    let messages: Vec<Message<'_>> = serde_json::from_slice(returned).unwrap_or_default();
    messages.into_iter().filter_map(|m| m.content.0).collect()
}
