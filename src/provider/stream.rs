//! Streamed replies: server-sent events, read with `sse-stream`, and
//! assembled into the body the same reply has whole, so that one Parse
//! reads both. Per format: OpenAI Chat's `chat.completion.chunk`s, tool
//! call deltas routed by `index` (by `id` when calls share an index, and
//! an id that comes after the arguments joins them); the Responses API's
//! events by `item_id` and `output_index` (its final `response.completed`
//! holds the whole response, and wins); Anthropic's content blocks by
//! `index` (`input` whole in `content_block_start`, or in
//! `input_json_delta` parts); Gemini's chunks, each call whole. A stream
//! cut in the middle of a call leaves its arguments unfinished, which
//! Parse reports as that call's problem, never a panic.

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value, json};

use super::Provider;

/// One server-sent event: its `event:` name, if it had one, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

/// A body that is not a stream of server-sent events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a stream of server-sent events: {0}")]
pub struct NotAStream(String);

/// The events of a stream that arrived in `chunks` (however it was cut).
pub fn frames<I>(chunks: I) -> Result<Vec<Frame>, NotAStream>
where
    I: IntoIterator<Item = Bytes>,
{
    let chunks: Vec<Result<Bytes, std::io::Error>> = chunks.into_iter().map(Ok).collect();
    let mut events = sse_stream::SseStream::from_bytes_stream(futures_util::stream::iter(chunks));
    let mut frames = Vec::new();
    // Every chunk is here already: each poll is ready at once.
    while let Some(Some(event)) = events.next().now_or_never() {
        let event = event.map_err(|e| NotAStream(e.to_string()))?;
        if let Some(data) = event.data {
            frames.push(Frame {
                event: event.event,
                data,
            });
        }
    }
    Ok(frames)
}

/// Make `request` ask for a streamed reply, as `provider`'s API wants it
/// asked: `stream: true` (with the usage in the last chunk, for Chat), or
/// Gemini's `streamGenerateContent` endpoint with `alt=sse`.
pub fn ask_for_stream(provider: Provider, request: &mut crate::transport::ApiRequest) {
    match provider {
        Provider::Gemini => {
            request.url = request
                .url
                .replace(":generateContent", ":streamGenerateContent?alt=sse");
        }
        Provider::OpenAi => {
            request.body["stream"] = json!(true);
            request.body["stream_options"] = json!({"include_usage": true});
        }
        Provider::OpenAiResponses | Provider::Anthropic => request.body["stream"] = json!(true),
    }
}

/// The body a streamed reply stands for, in `provider`'s format.
pub fn whole(provider: Provider, streamed: &[u8]) -> Result<Value, NotAStream> {
    let frames = frames([Bytes::copy_from_slice(streamed)])?;
    if frames.is_empty() {
        return Err(NotAStream("it holds no event".to_owned()));
    }
    Ok(assemble(provider, &frames))
}

/// [`whole`], as bytes: what Parse reads.
pub fn whole_body(provider: Provider, streamed: &[u8]) -> Result<Vec<u8>, NotAStream> {
    whole(provider, streamed).map(|body| body.to_string().into_bytes())
}

/// The whole body the streamed reply stands for, in `provider`'s format.
pub fn assemble(provider: Provider, frames: &[Frame]) -> Value {
    let chunks = frames.iter().filter_map(|frame| {
        let data = frame.data.trim();
        // OpenAI Chat ends with `[DONE]`; the other formats do not.
        (data != "[DONE]")
            .then(|| serde_json::from_str::<Value>(data).ok())
            .flatten()
    });
    match provider {
        Provider::OpenAi => chat(chunks),
        Provider::OpenAiResponses => responses(chunks),
        Provider::Anthropic => anthropic(chunks),
        Provider::Gemini => gemini(chunks),
    }
}

/// One call of a Chat stream as its deltas come.
#[derive(Debug, Default)]
struct ChatCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

fn chat(chunks: impl Iterator<Item = Value>) -> Value {
    let (mut text, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<ChatCall> = Vec::new();
    let (mut finish, mut usage, mut head) = (Value::Null, Value::Null, Map::new());
    for chunk in chunks {
        for key in ["id", "model", "created"] {
            if let Some(value) = chunk.get(key) {
                head.entry(key).or_insert_with(|| value.clone());
            }
        }
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        text.push_str(delta["content"].as_str().unwrap_or_default());
        for key in ["reasoning_content", "reasoning"] {
            reasoning.push_str(delta[key].as_str().unwrap_or_default());
        }
        for part in delta["tool_calls"].as_array().into_iter().flatten() {
            chat_call(&mut calls, part);
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    let mut message = json!({"role": "assistant", "content": (!text.is_empty()).then_some(text)});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .into_iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    let mut body = Value::Object(head);
    body["object"] = json!("chat.completion");
    body["choices"] = json!([{"index": 0, "message": message, "finish_reason": finish}]);
    body["usage"] = usage;
    body
}

/// Route a tool call delta: by its `id` when it has one (several calls
/// can share index 0, and an id can come after the arguments), else to
/// the last call with its index.
fn chat_call(calls: &mut Vec<ChatCall>, part: &Value) {
    let index = part["index"].as_u64();
    let id = part["id"].as_str().filter(|id| !id.is_empty());
    let same_index = |c: &ChatCall| index.is_none() || c.index == index;
    let at = match id {
        Some(id) => calls.iter().position(|c| c.id == id).or_else(|| {
            // Arguments came first, under this index, with no id yet.
            calls.iter().rposition(|c| same_index(c) && c.id.is_empty())
        }),
        None => calls.iter().rposition(same_index),
    };
    let call = match at {
        Some(at) => &mut calls[at],
        None => {
            calls.push(ChatCall {
                index,
                ..ChatCall::default()
            });
            calls.last_mut().expect("just pushed")
        }
    };
    if let Some(id) = id {
        call.id = id.to_owned();
    }
    let function = &part["function"];
    if let Some(name) = function["name"].as_str().filter(|n| !n.is_empty())
        && call.name.is_empty()
    {
        call.name = name.to_owned();
    }
    call.arguments
        .push_str(function["arguments"].as_str().unwrap_or_default());
}

fn responses(chunks: impl Iterator<Item = Value>) -> Value {
    let mut items: Vec<Value> = Vec::new();
    let mut base = json!({"object": "response", "status": "incomplete",
                          "incomplete_details": {"reason": "the stream ended early"}});
    for event in chunks {
        let kind = event["type"].as_str().unwrap_or_default();
        match kind {
            // The whole response: everything the deltas said, once.
            "response.completed" | "response.incomplete" | "response.failed" => {
                return event["response"].clone();
            }
            "response.created" | "response.in_progress" => {
                base = event["response"].clone();
                base["status"] = json!("incomplete");
                base["incomplete_details"] = json!({"reason": "the stream ended early"});
            }
            "response.output_item.added" | "response.output_item.done" => {
                let at = event["output_index"].as_u64().unwrap_or(items.len() as u64) as usize;
                if items.len() <= at {
                    items.resize(at + 1, Value::Null);
                }
                items[at] = event["item"].clone();
            }
            "response.function_call_arguments.delta" => {
                if let Some(item) = responses_item(&mut items, &event) {
                    let sent = item["arguments"].as_str().unwrap_or_default().to_owned();
                    item["arguments"] = json!(sent + event["delta"].as_str().unwrap_or_default());
                }
            }
            // The arguments whole: they replace the deltas, never add.
            "response.function_call_arguments.done" => {
                if let Some(item) = responses_item(&mut items, &event) {
                    item["arguments"] = event["arguments"].clone();
                }
            }
            "response.output_text.delta" => {
                if let Some(item) = responses_item(&mut items, &event) {
                    let sent = item.pointer("/content/0/text").and_then(Value::as_str);
                    let text = sent.unwrap_or_default().to_owned()
                        + event["delta"].as_str().unwrap_or_default();
                    item["content"] = json!([{"type": "output_text", "text": text}]);
                }
            }
            _ => {}
        }
    }
    base["output"] = Value::Array(items.into_iter().filter(|i| !i.is_null()).collect());
    base
}

/// The output item an event is about: by `item_id`, else `output_index`.
fn responses_item<'i>(items: &'i mut [Value], event: &Value) -> Option<&'i mut Value> {
    if let Some(id) = event["item_id"].as_str()
        && let Some(at) = items.iter().position(|i| i["id"] == id)
    {
        return items.get_mut(at);
    }
    items.get_mut(event["output_index"].as_u64()? as usize)
}

fn anthropic(chunks: impl Iterator<Item = Value>) -> Value {
    let mut message = json!({"type": "message", "role": "assistant"});
    let mut blocks: Vec<Value> = Vec::new();
    // The `input_json_delta` parts of each tool block.
    let mut inputs: Vec<String> = Vec::new();
    for event in chunks {
        let at = event["index"].as_u64().unwrap_or(0) as usize;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => message = event["message"].clone(),
            "content_block_start" => {
                if blocks.len() <= at {
                    blocks.resize(at + 1, Value::Null);
                    inputs.resize(at + 1, String::new());
                }
                blocks[at] = event["content_block"].clone();
            }
            "content_block_delta" => {
                let Some(block) = blocks.get_mut(at) else {
                    continue;
                };
                let delta = &event["delta"];
                match delta["type"].as_str().unwrap_or_default() {
                    "input_json_delta" => {
                        inputs[at].push_str(delta["partial_json"].as_str().unwrap_or_default())
                    }
                    "signature_delta" => block["signature"] = delta["signature"].clone(),
                    kind => {
                        // text_delta, thinking_delta: the block's own field.
                        let key = kind.trim_end_matches("_delta");
                        let sent = block[key].as_str().unwrap_or_default().to_owned();
                        block[key] = json!(sent + delta[key].as_str().unwrap_or_default());
                    }
                }
            }
            "message_delta" => {
                for (key, value) in event["delta"].as_object().into_iter().flatten() {
                    message[key] = value.clone();
                }
                if let Some(usage) = event["usage"].as_object() {
                    for (key, value) in usage {
                        message["usage"][key] = value.clone();
                    }
                }
            }
            _ => {}
        }
    }
    for (block, input) in blocks.iter_mut().zip(&inputs) {
        // The parts, when there were any; else `input` came whole at the
        // start (or the tool takes no argument).
        if !input.trim().is_empty() {
            block["input"] =
                serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.clone()));
        }
    }
    message["content"] = Value::Array(blocks.into_iter().filter(|b| !b.is_null()).collect());
    message
}

fn gemini(chunks: impl Iterator<Item = Value>) -> Value {
    let mut parts: Vec<Value> = Vec::new();
    let mut body = json!({});
    let mut finish = Value::Null;
    for chunk in chunks {
        let candidate = &chunk["candidates"][0];
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            gemini_part(&mut parts, part);
        }
        if !candidate["finishReason"].is_null() {
            finish = candidate["finishReason"].clone();
        }
        for key in ["usageMetadata", "modelVersion", "responseId"] {
            if let Some(value) = chunk.get(key) {
                body[key] = value.clone();
            }
        }
    }
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if !finish.is_null() {
        candidate["finishReason"] = finish;
    }
    body["candidates"] = json!([candidate]);
    body
}

/// Text streamed in pieces is one text part again; every other part
/// (a call, a thought, a part with a signature) stays whole, in order.
fn gemini_part(parts: &mut Vec<Value>, part: &Value) {
    let plain = |p: &Value| {
        p.as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key("text"))
    };
    if plain(part)
        && let Some(last) = parts.last_mut().filter(|last| plain(last))
    {
        let text = last["text"].as_str().unwrap_or_default().to_owned();
        last["text"] = json!(text + part["text"].as_str().unwrap_or_default());
        return;
    }
    parts.push(part.clone());
}
