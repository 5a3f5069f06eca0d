//! OpenAI's Responses API (`POST /v1/responses`), the one OpenAI's
//! reasoning models take function tools on: `output[]` items in
//! (`function_call` with its `call_id` and `arguments` as JSON *text*,
//! `message` with `output_text` parts, `reasoning` with a summary and,
//! with `store: false`, its `encrypted_content`); no finish reason: the
//! `status` and `incomplete_details` say why it stopped. The conversation
//! is the `input` item list: the model's own output items go back as it
//! sent them (reasoning items with their function calls), then one
//! `function_call_output` per call. Tools are flat: `{"type": "function",
//! "name", "description", "parameters", "strict"}`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::declared::{PARAMETERS, declarations, declared};
use super::loose::{Loose, LooseCount, LooseStr, LooseText, present};
use super::openai::{CachedTokens, ReasoningTokens};
use super::{
    Ask, FunctionSpec, IdMaker, ParsedResponse, Provider, ResponseError, WireArguments,
    append_line, make_call, non_empty, usage_of,
};
use crate::call::{ParsedCall, ToolResult, Usage};
use crate::json_writer::{write_separated, write_str, write_u64, write_value};
use crate::pointer::{Located, Pointer};
use crate::transport::ApiRequest;

const PROVIDER: Provider = Provider::OpenAiResponses;

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    output: Option<Vec<Item<'a>>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Loose<UsageBlock>,
    #[serde(borrow, default)]
    status: LooseStr<'a>,
    #[serde(default)]
    incomplete_details: Option<Value>,
}

/// `usage`, its details named as Chat's are (`super::openai`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageBlock {
    input_tokens: LooseCount,
    output_tokens: LooseCount,
    output_tokens_details: Loose<ReasoningTokens>,
    input_tokens_details: Loose<CachedTokens>,
}

impl From<UsageBlock> for Usage {
    fn from(block: UsageBlock) -> Usage {
        Usage {
            input_tokens: block.input_tokens.0,
            output_tokens: block.output_tokens.0,
            reasoning_tokens: block.output_tokens_details.0.reasoning_tokens.0,
            cached_tokens: block.input_tokens_details.0.cached_tokens.0,
            // The format reports no cache writes (they cost nothing extra).
            cache_write_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LooseStr<'a>,
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    #[serde(borrow, default)]
    call_id: LooseStr<'a>,
    #[serde(borrow, default)]
    name: LooseStr<'a>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    summary: Option<Value>,
}

pub(super) fn parse_response(body: &[u8]) -> Result<ParsedResponse, ResponseError> {
    let parsed: Body<'_> = super::from_body(PROVIDER, body)?;
    if let Some(error) = parsed.error.filter(|e| !e.is_null()) {
        return Err(ResponseError::Api {
            provider: PROVIDER,
            message: super::api_error_message(&error),
        });
    }
    let output = parsed.output.ok_or_else(|| ResponseError::NotAResponse {
        provider: PROVIDER,
        reason: "it has no `output`".to_owned(),
    })?;
    let mut response = ParsedResponse {
        usage: parsed.usage.0.into(),
        ..ParsedResponse::default()
    };
    // "completed", or why it is incomplete ("max_output_tokens").
    let incomplete = parsed
        .incomplete_details
        .as_ref()
        .and_then(|d| d["reason"].as_str());
    let reason = match parsed.status.as_deref() {
        Some("incomplete") => incomplete.or(Some("incomplete")),
        other => other,
    };
    response.stopped(reason, "max_output_tokens");
    let mut ids = IdMaker::new(body);
    for item in output {
        match item.kind.as_deref() {
            Some("function_call") => {
                let index = response.calls.len();
                // Results go back by `call_id`; the item's own `id` is not it.
                let id = ids.id_for(item.call_id.as_deref().or(item.id.as_deref()), index);
                let arguments = match &item.arguments {
                    None => WireArguments::Missing,
                    Some(Value::String(text)) => WireArguments::Text(text),
                    Some(other) => WireArguments::Value(other.clone()),
                };
                response
                    .calls
                    .push(make_call(id, item.name.as_deref(), arguments));
            }
            Some("message") => append_line(&mut response.text, &parts_text(item.content.as_ref())),
            Some("reasoning") => {
                append_line(&mut response.reasoning, &parts_text(item.summary.as_ref()));
            }
            // Server-side tools (web search, file search, ...) are not ours.
            _ => {}
        }
    }
    Ok(response)
}

/// The text of a list of parts (`output_text`, `summary_text`), joined.
fn parts_text(parts: Option<&Value>) -> String {
    match parts {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    }
}

/// `[{"type":"function_call_output","call_id":..,"output":..}, ...]`
pub(super) fn write_results(results: &[ToolResult], out: &mut Vec<u8>) {
    out.push(b'[');
    write_separated(out, results, |out, result| {
        out.extend_from_slice(b"{\"type\":\"function_call_output\",\"call_id\":");
        write_str(out, &result.call_id);
        out.extend_from_slice(b",\"output\":");
        if result.images.is_empty() {
            write_str(out, non_empty(&result.content));
        } else {
            out.extend_from_slice(b"[{\"type\":\"input_text\",\"text\":");
            write_str(out, non_empty(&result.content));
            out.push(b'}');
            for image in &result.images {
                out.extend_from_slice(b",{\"type\":\"input_image\",\"image_url\":");
                write_str(out, &image.data_url());
                out.push(b'}');
            }
            out.push(b']');
        }
        out.push(b'}');
    });
    out.push(b']');
}

/// The inverse of Return: the output of each result item.
pub(super) fn result_texts(returned: &[u8]) -> Vec<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Output<'a> {
        #[serde(borrow, default)]
        output: LooseText<'a>,
    }
    let items: Vec<Output<'_>> = serde_json::from_slice(returned).unwrap_or_default();
    items.into_iter().filter_map(|item| item.output.0).collect()
}

pub(super) fn format_tools(tools: &[FunctionSpec]) -> Value {
    tools
        .iter()
        .map(|spec| {
            json!({
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                // Strict mode rewrites what a schema allows (every property
                // required, no others): the tool's own schema is measured.
                "strict": false,
            })
        })
        .collect()
}

pub(super) fn parse_tools(tools: &Value) -> Result<Vec<FunctionSpec>, Located> {
    declarations(tools)?
        .filter(|(_, tool)| tool["type"] == "function")
        .map(|(i, tool)| declared(tool, || Pointer::root().index(i), PARAMETERS))
        .collect()
}

/// A response as the API sends it, written straight into `out`: a message
/// item for the text, a `function_call` item per call.
pub(super) fn write_response(text: &str, calls: &[ParsedCall], usage: Usage, out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"{\"id\":\"resp_toolgauge\",\"object\":\"response\",\"created_at\":0,\
          \"model\":\"toolgauge-mock\",\"status\":\"completed\",\"output\":[",
    );
    let mut first = true;
    if !text.is_empty() {
        out.extend_from_slice(
            b"{\"type\":\"message\",\"id\":\"msg_0\",\"status\":\"completed\",\"role\":\"assistant\",\
              \"content\":[{\"type\":\"output_text\",\"text\":",
        );
        write_str(out, text);
        out.extend_from_slice(b",\"annotations\":[]}]}");
        first = false;
    }
    let mut arguments = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(b"{\"type\":\"function_call\",\"id\":\"fc_");
        write_u64(out, i as u64);
        out.extend_from_slice(b"\",\"call_id\":");
        write_str(out, call.id());
        out.extend_from_slice(b",\"name\":");
        write_str(out, call.name());
        out.extend_from_slice(b",\"arguments\":");
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
        out.extend_from_slice(b",\"status\":\"completed\"}");
    }
    out.extend_from_slice(b"],\"usage\":{\"input_tokens\":");
    write_u64(out, usage.input_tokens);
    out.extend_from_slice(b",\"output_tokens\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b",\"total_tokens\":");
    write_u64(out, usage.input_tokens + usage.output_tokens);
    out.extend_from_slice(b"}}");
}

pub(super) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An input message of plain text.
pub(super) fn text_message(role: &str, text: &str) -> Value {
    json!({"role": role, "content": text})
}

/// The model's turn as input items, as the API requires them back: its
/// reasoning items whole (their `encrypted_content` carries the reasoning
/// when nothing is stored), its messages' text, and its function calls
/// (`call_id`, `name`, `arguments` as sent); only the fields the API
/// defines for input, and no item ids but the reasoning's (a stored id
/// that is not stored is refused).
pub(super) fn assistant_items(reply: &Value, parsed: &ParsedResponse) -> Vec<Value> {
    let Some(output) = reply["output"].as_array() else {
        return from_parsed(parsed);
    };
    output
        .iter()
        .filter_map(|item| match item["type"].as_str()? {
            "reasoning" => {
                let mut kept = Map::new();
                kept.insert("type".into(), json!("reasoning"));
                for key in ["id", "summary", "encrypted_content"] {
                    if let Some(value) = item.get(key).filter(|v| !v.is_null()) {
                        kept.insert(key.into(), value.clone());
                    }
                }
                kept.entry("summary").or_insert_with(|| json!([]));
                Some(Value::Object(kept))
            }
            "function_call" => Some(json!({
                "type": "function_call",
                "call_id": item["call_id"],
                "name": item["name"],
                "arguments": item["arguments"],
            })),
            "message" => {
                let text = parts_text(item.get("content"));
                (!text.is_empty()).then(|| assistant_text(&text))
            }
            _ => None,
        })
        .collect()
}

/// The turn from what Parse read, for a reply that kept no items.
fn from_parsed(parsed: &ParsedResponse) -> Vec<Value> {
    let mut items = Vec::new();
    if !parsed.text.is_empty() {
        items.push(assistant_text(&parsed.text));
    }
    items.extend(parsed.calls.iter().map(|call| {
        json!({
            "type": "function_call",
            "call_id": call.id(),
            "name": call.name(),
            "arguments": call.arguments_text(),
        })
    }));
    items
}

fn assistant_text(text: &str) -> Value {
    json!({
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    })
}

pub(super) fn usage(reply: &Value) -> Usage {
    usage_of::<UsageBlock>(&reply["usage"])
}

/// `POST {base}/responses`, the key as a bearer token. Nothing is stored
/// on the server: the whole conversation is sent each time, reasoning
/// included (`include: ["reasoning.encrypted_content"]`).
pub(super) fn request(ask: &Ask<'_>) -> ApiRequest {
    let settings = ask.settings;
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    if !ask.conversation.system.is_empty() {
        body.insert(
            "instructions".into(),
            json!(ask.conversation.system.join("\n\n")),
        );
    }
    body.insert("input".into(), json!(ask.conversation.messages));
    if !ask.tools.is_empty() {
        body.insert("tools".into(), format_tools(ask.tools));
        super::openai::tool_options(settings, &mut body);
    }
    if let Some(effort) = &settings.reasoning_effort {
        body.insert("reasoning".into(), json!({"effort": effort}));
    }
    body.insert("store".into(), json!(false));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        body.insert("max_output_tokens".into(), json!(n));
    }
    ApiRequest {
        url: format!("{}/responses", ask.base_url(DEFAULT_BASE_URL)),
        headers: super::openai::bearer(ask),
        body: Value::Object(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ToolCall;
    use crate::provider::{ApiSettings, Conversation};

    fn call(id: &str, name: &str, arguments: Value) -> ParsedCall {
        ParsedCall::Ok(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.try_into().unwrap(),
        })
    }

    #[test]
    fn a_written_response_parses_back_to_its_text_calls_and_usage() {
        let calls = [
            call("call_a", "get_weather", json!({"city": "Oslo"})),
            call("call_b", "get_time", json!({})),
        ];
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 3,
            ..Usage::default()
        };
        let mut body = Vec::new();
        write_response("Checking.", &calls, usage, &mut body);
        let parsed = parse_response(&body).unwrap();
        assert_eq!(parsed.text, "Checking.");
        assert_eq!(parsed.calls, calls);
        assert_eq!(parsed.usage, usage);
        assert_eq!(parsed.finish_reason.as_deref(), Some("completed"));
        assert!(!parsed.truncated);
    }

    #[test]
    fn reasoning_tokens_are_read_apart_from_the_output_they_are_part_of() {
        let usage = usage(&json!({"usage": {"input_tokens": 50, "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 4}}}));
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.reasoning_tokens
            ),
            (50, 10, 4)
        );
    }

    #[test]
    fn results_go_back_one_output_per_call_id_and_read_back() {
        let result = |id: &str, name: &str, content: &str| ToolResult {
            call_id: id.into(),
            name: name.into(),
            content: content.into(),
            error_kind: None,
            started: std::time::Duration::ZERO,
            elapsed: std::time::Duration::ZERO,
            images: Vec::new(),
        };
        let results = [
            result("call_a", "get_weather", "18 C"),
            result("call_b", "get_time", ""),
        ];
        let mut out = Vec::new();
        write_results(&results, &mut out);
        let items: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            items[0],
            json!({"type": "function_call_output", "call_id": "call_a", "output": "18 C"})
        );
        let texts: Vec<String> = result_texts(&out)
            .into_iter()
            .map(Cow::into_owned)
            .collect();
        assert_eq!(texts, ["18 C", crate::provider::EMPTY_RESULT_PLACEHOLDER]);
    }

    #[test]
    fn the_turn_goes_back_with_its_reasoning_and_no_server_extras() {
        let reply = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": [],
             "status": null},
            {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "f",
             "arguments": "{}", "status": "completed"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"}
        ]});
        let parsed = parse_response(reply.to_string().as_bytes()).unwrap();
        let items = assistant_items(&reply, &parsed);
        assert_eq!(
            items,
            [
                json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}),
                json!({"type": "function_call", "call_id": "call_0", "name": "f", "arguments": "{}"}),
            ]
        );
    }

    #[test]
    fn the_request_is_stateless_with_flat_tools_and_instructions() {
        let settings: ApiSettings = serde_json::from_value(json!({
            "model": "gpt-5.4", "max_tokens": 100, "reasoning_effort": "high",
            "tool_choice": "required"
        }))
        .unwrap();
        let prompt = [
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Hi"}),
        ];
        let conversation = Conversation::new(Provider::OpenAiResponses, &prompt);
        let tools = [FunctionSpec {
            name: "f".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let ask = Ask {
            settings: &settings,
            key: Some("k"),
            conversation: &conversation,
            tools: &tools,
            trial_seed: 0,
        };
        let request = request(&ask);
        assert_eq!(request.url, "https://api.openai.com/v1/responses");
        let body = &request.body;
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["input"], json!([{"role": "user", "content": "Hi"}]));
        assert_eq!(body["tools"][0]["name"], "f");
        assert!(body["tools"][0].get("function").is_none());
        assert_eq!(body["tool_choice"], "required");
        assert_eq!(body["reasoning"], json!({"effort": "high"}));
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["store"], false);
        assert!(body.get("max_tokens").is_none());
        let parsed = parse_tools(&body["tools"]).unwrap();
        assert_eq!(parsed, tools);
    }
}
