//! The whole body a stream whose events are kept as JSON stands for, per
//! format (Chat's is read by `chat`): the Responses API's events by `item_id` and
//! `output_index` (its final `response.completed` holds the whole
//! response, and wins); Anthropic's content blocks by `index` (`input`
//! whole in `content_block_start`, or in `input_json_delta` parts);
//! Gemini's chunks, each call whole, or Vertex's `partialArgs` pieces
//! joined while `willContinue` says more is coming.

use serde_json::{Value, json};

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
