//! The whole body a stream stands for, per format: OpenAI Chat's
//! `chat.completion.chunk`s, tool call deltas routed by `index` (by `id`
//! when calls share an index, and an id that comes after the arguments
//! joins them); the Responses API's events by `item_id` and
//! `output_index` (its final `response.completed` holds the whole
//! response, and wins); Anthropic's content blocks by `index` (`input`
//! whole in `content_block_start`, or in `input_json_delta` parts);
//! Gemini's chunks, each call whole, or Vertex's `partialArgs` pieces
//! joined while `willContinue` says more is coming.

use serde_json::{Map, Value, json};

/// One call of a Chat stream as its deltas come.
#[derive(Debug, Default)]
struct ChatCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

pub(super) fn chat(chunks: impl Iterator<Item = Value>) -> Value {
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

pub(super) fn responses(chunks: impl Iterator<Item = Value>) -> Value {
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
                    append(&mut item["arguments"], &event["delta"]);
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
                    if item.pointer("/content/0/text").is_none() {
                        item["content"] = json!([{"type": "output_text", "text": ""}]);
                    }
                    append(&mut item["content"][0]["text"], &event["delta"]);
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

pub(super) fn anthropic(chunks: impl Iterator<Item = Value>) -> Value {
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
                        append(&mut block[key], &delta[key]);
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

pub(super) fn gemini(chunks: impl Iterator<Item = Value>) -> Value {
    let mut parts = GeminiParts::default();
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
            parts.add(part);
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
    let mut candidate = json!({"content": {"role": "model", "parts": parts.done()}, "index": 0});
    if !finish.is_null() {
        candidate["finishReason"] = finish;
    }
    body["candidates"] = json!([candidate]);
    body
}

/// A Gemini reply's parts so far, and the Vertex call still coming in
/// pieces (`willContinue`), with the string arguments still growing.
#[derive(Default)]
struct GeminiParts {
    parts: Vec<Value>,
    /// The part of the call that said `willContinue: true`.
    open: Option<usize>,
    /// Its arguments whose last piece said `willContinue: true`.
    growing: Vec<String>,
}

impl GeminiParts {
    /// Text streamed in pieces is one text part again; a call in Vertex
    /// pieces is one call; every other part (a whole call, a thought, a
    /// part with a signature) stays whole, in order.
    fn add(&mut self, part: &Value) {
        let plain = |p: &Value| {
            p.as_object()
                .is_some_and(|o| o.len() == 1 && o.contains_key("text"))
        };
        if let Some(call) = part.get("functionCall") {
            return self.add_call(part, call);
        }
        if plain(part)
            && let Some(last) = self.parts.last_mut().filter(|last| plain(last))
        {
            append(&mut last["text"], &part["text"]);
            return;
        }
        self.parts.push(part.clone());
    }

    fn add_call(&mut self, part: &Value, call: &Value) {
        // A piece of the open call: it names no other call.
        let continues = self.open.filter(|&at| {
            let open = &self.parts[at]["functionCall"];
            ["id", "name"]
                .iter()
                .all(|key| call[key].is_null() || call[key] == open[key])
        });
        let at = match continues {
            Some(at) => at,
            None => {
                let mut whole = part.clone();
                let fields = whole["functionCall"].as_object_mut().expect("an object");
                fields.remove("partialArgs");
                fields.remove("willContinue");
                fields.entry("args").or_insert_with(|| json!({}));
                self.parts.push(whole);
                self.growing.clear();
                self.parts.len() - 1
            }
        };
        let args = &mut self.parts[at]["functionCall"]["args"];
        if continues.is_some()
            && let Some(more) = call["args"].as_object()
        {
            for (key, value) in more {
                args[key] = value.clone();
            }
        }
        for piece in call["partialArgs"].as_array().into_iter().flatten() {
            let path = piece["jsonPath"].as_str().unwrap_or("$");
            let value = ["stringValue", "numberValue", "boolValue"]
                .iter()
                .find_map(|key| piece.get(*key).cloned())
                .unwrap_or(Value::Null);
            let growing = self.growing.iter().any(|p| p == path);
            set_at_path(args, path, value, growing);
            self.growing.retain(|p| p != path);
            if piece["willContinue"] == true {
                self.growing.push(path.to_owned());
            }
        }
        self.open = (call["willContinue"] == true).then_some(at);
    }

    fn done(self) -> Vec<Value> {
        self.parts
    }
}

/// Put `value` at a JSON path (`$.a.b[0]`, `$['a b']`), making the
/// objects and arrays on the way; a string still growing is added to.
fn set_at_path(root: &mut Value, path: &str, value: Value, growing: bool) {
    let mut target = root;
    for step in path_steps(path) {
        target = match step {
            Step::Key(key) => {
                if !target.is_object() {
                    *target = json!({});
                }
                target
                    .as_object_mut()
                    .expect("an object")
                    .entry(key)
                    .or_insert(Value::Null)
            }
            Step::Index(index) => {
                if !target.is_array() {
                    *target = json!([]);
                }
                let items = target.as_array_mut().expect("an array");
                if items.len() <= index {
                    items.resize(index + 1, Value::Null);
                }
                &mut items[index]
            }
        };
    }
    match (growing, target.as_str(), value.as_str()) {
        (true, Some(sent), Some(more)) => *target = json!(format!("{sent}{more}")),
        _ => *target = value,
    }
}

enum Step {
    Key(String),
    Index(usize),
}

/// The steps of an RFC 9535 path as Vertex writes them: `$`, then
/// `.name`, `['name']` or `[0]`.
fn path_steps(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            let inside = after[..end].trim();
            steps.push(match inside.parse::<usize>() {
                Ok(index) => Step::Index(index),
                Err(_) => Step::Key(inside.trim_matches(['\'', '"']).to_owned()),
            });
            rest = after.get(end + 1..).unwrap_or_default();
        } else {
            // Not a path Vertex writes: the rest is one key.
            steps.push(Step::Key(rest.to_owned()));
            break;
        }
    }
    steps
}

/// Add a streamed piece to a text said so far, in place: a long stream
/// costs its length, not its length squared.
fn append(text: &mut Value, piece: &Value) {
    let piece = piece.as_str().unwrap_or_default();
    match text {
        Value::String(sent) => sent.push_str(piece),
        other => *other = Value::String(piece.to_owned()),
    }
}
