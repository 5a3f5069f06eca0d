//! Anthropic Messages: `content[]` blocks of `type: tool_use` in, one `user`
//! message of `tool_result` blocks out, tools as `{name, description,
//! input_schema}`.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

use super::declared::{SchemaAt, declarations, declared};
use super::loose::{Loose, LooseCount, LooseStr, LooseText};
use super::settings::{CacheMode, ToolChoice};
use super::{
    Ask, FunctionSpec, IdMaker, ParsedResponse, Provider, ResponseError, api_error_message,
    make_call, non_empty, usage_of, write_arguments,
};
use crate::call::{ParsedCall, SentArguments, ToolResult, Usage};
use crate::json_writer::{write_separated, write_str, write_u64};
use crate::pointer::{Located, Pointer};
use crate::transport::ApiRequest;

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LooseStr<'a>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    stop_reason: LooseStr<'a>,
    #[serde(default)]
    usage: Loose<UsageBlock>,
    #[serde(default)]
    error: Option<Value>,
}

/// `usage`: cached input tokens count as input.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageBlock {
    input_tokens: LooseCount,
    output_tokens: LooseCount,
    cache_read_input_tokens: LooseCount,
    cache_creation_input_tokens: LooseCount,
}

impl From<UsageBlock> for Usage {
    fn from(block: UsageBlock) -> Usage {
        Usage {
            input_tokens: block.input_tokens.0
                + block.cache_read_input_tokens.0
                + block.cache_creation_input_tokens.0,
            output_tokens: block.output_tokens.0,
            // Thinking is in the output; the format does not count it apart.
            reasoning_tokens: 0,
            cached_tokens: block.cache_read_input_tokens.0,
            cache_write_tokens: block.cache_creation_input_tokens.0,
        }
    }
}

/// What Parse keeps of the `content` blocks, taken from each block as it
/// is read: no block is made whole (a struct of its fields is 160 bytes,
/// moved two or three times per block, a tenth of Parse's time).
#[derive(Default)]
struct Content<'a> {
    text: String,
    reasoning: String,
    calls: Vec<UseBlock<'a>>,
}

/// A `tool_use` block's parts.
struct UseBlock<'a> {
    id: LooseStr<'a>,
    name: LooseStr<'a>,
    input: Option<SentArguments>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ContentVisitor(PhantomData))
    }
}

struct ContentVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
    type Value = Content<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut blocks: A) -> Result<Content<'a>, A::Error> {
        let mut content = Content::default();
        while blocks.next_element_seed(BlockSeed(&mut content))?.is_some() {}
        Ok(content)
    }
}

/// One block, its fields read into what [`Content`] keeps of it.
struct BlockSeed<'c, 'a>(&'c mut Content<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for BlockSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for BlockSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut kind: Option<LooseStr<'a>> = None;
        let (mut id, mut name, mut text, mut thinking) = (None, None, None, None);
        let mut input: Option<SentArguments> = None;
        while let Some(field) = map.next_key::<BlockField>()? {
            match field {
                BlockField::Kind => once(&mut kind, "type", map.next_value()?)?,
                BlockField::Id => once(&mut id, "id", map.next_value()?)?,
                BlockField::Name => once(&mut name, "name", map.next_value()?)?,
                BlockField::Input => once(&mut input, "input", map.next_value()?)?,
                BlockField::Text => once(&mut text, "text", map.next_value()?)?,
                BlockField::Thinking => once(&mut thinking, "thinking", map.next_value()?)?,
                BlockField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let content = self.0;
        match kind.as_ref().and_then(LooseStr::as_deref) {
            Some("text") => {
                if let Some(text) = text.as_ref().and_then(LooseStr::as_deref) {
                    super::append_line(&mut content.text, text);
                }
            }
            Some("thinking") => {
                if let Some(thinking) = thinking.as_ref().and_then(LooseStr::as_deref) {
                    super::append_line(&mut content.reasoning, thinking);
                }
            }
            // Server tools (`server_tool_use`, `mcp_tool_use`) run at the
            // provider: only client calls count.
            Some("tool_use") => content.calls.push(UseBlock {
                id: id.unwrap_or_default(),
                name: name.unwrap_or_default(),
                input,
            }),
            _ => {}
        }
        Ok(())
    }
}

/// A field read once: a block that names one twice is refused, as a
/// derived reader refuses it.
fn once<T, E: de::Error>(slot: &mut Option<T>, field: &'static str, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(field));
    }
    *slot = Some(value);
    Ok(())
}

/// The fields of a content block that Parse reads.
enum BlockField {
    Kind,
    Id,
    Name,
    Input,
    Text,
    Thinking,
    Other,
}

impl<'de> Deserialize<'de> for BlockField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(BlockFieldVisitor)
    }
}

struct BlockFieldVisitor;

impl Visitor<'_> for BlockFieldVisitor {
    type Value = BlockField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<BlockField, E> {
        Ok(match name {
            "type" => BlockField::Kind,
            "id" => BlockField::Id,
            "name" => BlockField::Name,
            "input" => BlockField::Input,
            "text" => BlockField::Text,
            "thinking" => BlockField::Thinking,
            _ => BlockField::Other,
        })
    }
}

pub(super) fn parse_response(body: &[u8]) -> Result<ParsedResponse, ResponseError> {
    let parsed: Body<'_> = super::from_body(Provider::Anthropic, body)?;
    if parsed.kind.is("error") || parsed.error.is_some() {
        return Err(ResponseError::Api {
            provider: Provider::Anthropic,
            message: parsed
                .error
                .as_ref()
                .map_or_else(|| "no details given".to_owned(), api_error_message),
        });
    }
    let content = parsed.content.ok_or_else(|| ResponseError::NotAResponse {
        provider: Provider::Anthropic,
        reason: "it has no `content` array".to_owned(),
    })?;
    let mut ids = IdMaker::new(body);
    let mut response = ParsedResponse {
        text: content.text,
        reasoning: content.reasoning,
        calls: Vec::with_capacity(content.calls.len()),
        usage: parsed.usage.0.into(),
        ..ParsedResponse::default()
    };
    response.stopped(parsed.stop_reason.as_deref(), "max_tokens");
    for (index, call) in content.calls.into_iter().enumerate() {
        let id = ids.id_for(call.id.as_deref(), index);
        response
            .calls
            .push(make_call(id, call.name.as_deref(), call.input.into()));
    }
    Ok(response)
}

/// `[{"role":"user","content":[{"type":"tool_result","tool_use_id":..,"content":..,"is_error":..}, ...]}]`
pub(super) fn write_results(results: &[ToolResult], out: &mut Vec<u8>) {
    out.extend_from_slice(b"[{\"role\":\"user\",\"content\":[");
    write_separated(out, results, |out, result| {
        out.extend_from_slice(b"{\"type\":\"tool_result\",\"tool_use_id\":");
        write_str(out, &result.call_id);
        out.extend_from_slice(b",\"content\":");
        if result.images.is_empty() {
            write_str(out, non_empty(&result.content));
        } else {
            // The text first, then each image as a part of its own.
            out.extend_from_slice(b"[{\"type\":\"text\",\"text\":");
            write_str(out, non_empty(&result.content));
            out.push(b'}');
            for image in &result.images {
                out.extend_from_slice(
                    b",{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":",
                );
                write_str(out, &image.mime_type);
                out.extend_from_slice(b",\"data\":");
                write_str(out, &image.data);
                out.extend_from_slice(b"}}");
            }
            out.push(b']');
        }
        out.extend_from_slice(if result.is_error() {
            b",\"is_error\":true}"
        } else {
            b",\"is_error\":false}"
        });
    });
    out.extend_from_slice(b"]}]");
}

pub(super) fn format_tools(tools: &[FunctionSpec]) -> Value {
    tools
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.parameters,
            })
        })
        .collect()
}

pub(super) fn parse_tools(tools: &Value) -> Result<Vec<FunctionSpec>, Located> {
    declarations(tools)?
        .map(|(i, tool)| {
            let schema = SchemaAt {
                keys: &["input_schema"],
                required: true,
            };
            declared(tool, || Pointer::root().index(i), schema)
        })
        .collect()
}

/// A message as the API sends it, written straight into `out`.
pub(super) fn write_response(text: &str, calls: &[ParsedCall], usage: Usage, out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"{\"id\":\"msg_toolgauge\",\"type\":\"message\",\"role\":\"assistant\",\
          \"model\":\"toolgauge-mock\",\"content\":[",
    );
    if !text.is_empty() {
        out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
        write_str(out, text);
        out.push(b'}');
        if !calls.is_empty() {
            out.push(b',');
        }
    }
    write_separated(out, calls, |out, call| {
        out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
        write_str(out, call.id());
        if !call.name().is_empty() {
            out.extend_from_slice(b",\"name\":");
            write_str(out, call.name());
        }
        out.extend_from_slice(b",\"input\":");
        write_arguments(call, out);
        out.push(b'}');
    });
    out.extend_from_slice(b"],\"stop_reason\":");
    out.extend_from_slice(if calls.is_empty() {
        b"\"end_turn\""
    } else {
        b"\"tool_use\""
    });
    out.extend_from_slice(b",\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
    write_u64(out, usage.input_tokens);
    out.extend_from_slice(b",\"output_tokens\":");
    write_u64(out, usage.output_tokens);
    out.extend_from_slice(b"}}");
}

pub(super) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The API version every request names.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A message of one text block.
pub(super) fn text_message(role: &str, text: &str) -> Value {
    json!({"role": role, "content": [{"type": "text", "text": text}]})
}

/// The assistant turn as the Messages API defines it: its content blocks
/// with only their defined fields (`text`; `tool_use` with the id its
/// result answers; `thinking` and `redacted_thinking` whole with their
/// signatures, which the API requires back unchanged); server tools'
/// blocks as sent; anything else left out.
pub(super) fn assistant_message(reply: &Value, parsed: &ParsedResponse) -> Option<Value> {
    let mut calls = parsed.calls.iter();
    let mut content = Vec::new();
    for block in reply["content"].as_array().into_iter().flatten() {
        let kind = block["type"].as_str().unwrap_or_default();
        let kept = match kind {
            "text" => json!({"type": "text", "text": block["text"]}),
            "tool_use" => {
                let Some(call) = calls.next() else { continue };
                let input = match call {
                    ParsedCall::Ok(call) => call.arguments.as_value().clone(),
                    ParsedCall::Malformed(_) => block["input"].clone(),
                };
                json!({"type": "tool_use", "id": call.id(), "name": call.name(), "input": input})
            }
            "thinking" => json!({
                "type": "thinking",
                "thinking": block["thinking"],
                "signature": block["signature"],
            }),
            "redacted_thinking" => json!({"type": "redacted_thinking", "data": block["data"]}),
            kind if kind.starts_with("server_tool_use")
                || kind.starts_with("mcp_tool")
                || kind.ends_with("_tool_result") =>
            {
                block.clone()
            }
            _ => continue,
        };
        content.push(kept);
    }
    (!content.is_empty()).then(|| json!({"role": "assistant", "content": content}))
}

pub(super) fn usage(reply: &Value) -> Usage {
    usage_of::<UsageBlock>(&reply["usage"])
}

/// `POST {base}/messages` with `x-api-key` and `anthropic-version`.
pub(super) fn request(ask: &Ask<'_>) -> ApiRequest {
    let settings = ask.settings;
    let mut headers = Vec::new();
    if let Some(key) = ask.key {
        headers.push(("x-api-key", key.to_owned()));
    }
    headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    // Required by the Messages API.
    body.insert(
        "max_tokens".into(),
        json!(settings.max_tokens.unwrap_or(1024)),
    );
    if !ask.conversation.system.is_empty() {
        body.insert("system".into(), json!(ask.conversation.system.join("\n\n")));
    }
    body.insert("messages".into(), json!(ask.conversation.messages));
    if !ask.tools.is_empty() {
        body.insert("tools".into(), format_tools(ask.tools));
        let mut choice = json!({"type": match settings.tool_choice {
            Some(ToolChoice::Required) => "any",
            Some(ToolChoice::None) => "none",
            _ => "auto",
        }});
        if settings.parallel_tool_calls == Some(false) {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        if settings.tool_choice.is_some() || settings.parallel_tool_calls.is_some() {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if settings.cache == CacheMode::Auto {
        mark_for_cache(&mut body);
    }
    ApiRequest {
        url: format!("{}/messages", ask.base_url(DEFAULT_BASE_URL)),
        headers,
        body: Value::Object(body),
    }
}

/// Anthropic caches a prompt's prefix up to each block marked with
/// `cache_control`, at most four marks a request.
const MAX_CACHE_MARKS: usize = 4;

/// Mark what repeats from request to request for Anthropic's prompt
/// cache, in the order the prompt is read: the last tool, the system
/// prompt, and the last block of the conversation so far (the next turn
/// reads this one's whole prefix from the cache). Three marks of the four
/// allowed.
fn mark_for_cache(body: &mut Map<String, Value>) {
    let mark = || json!({"type": "ephemeral"});
    let mut marks = 0;
    if let Some(Value::Array(tools)) = body.get_mut("tools")
        && let Some(Value::Object(last)) = tools.last_mut()
    {
        last.insert("cache_control".into(), mark());
        marks += 1;
    }
    if let Some(Value::String(system)) = body.get("system") {
        let block = json!([{"type": "text", "text": system, "cache_control": mark()}]);
        body.insert("system".into(), block);
        marks += 1;
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages")
        && let Some(Value::Object(last)) = messages.last_mut()
        && let Some(content) = last.get_mut("content")
    {
        if let Value::String(text) = content {
            *content = json!([{"type": "text", "text": text}]);
        }
        if let Some(Value::Object(block)) = content.as_array_mut().and_then(|b| b.last_mut()) {
            block.insert("cache_control".into(), mark());
            marks += 1;
        }
    }
    debug_assert!(marks <= MAX_CACHE_MARKS);
}

/// The inverse of Return: the content of each `tool_result` block.
pub(super) fn result_texts(returned: &[u8]) -> Vec<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        content: Vec<Block<'a>>,
    }
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, default)]
        content: LooseText<'a>,
    }
    let messages: Vec<Message<'_>> = serde_json::from_slice(returned).unwrap_or_default();
    messages
        .into_iter()
        .flat_map(|m| m.content)
        .filter_map(|b| b.content.0)
        .collect()
}
