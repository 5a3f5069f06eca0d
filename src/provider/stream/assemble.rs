//! The whole body a stream whose events are kept as JSON stands for, per
//! format (Chat's is read by `chat`), built as the events come, each
//! event taken once: the Responses API's items by `item_id` and
//! `output_index` (its final `response.completed` holds the whole
//! response, and wins); Anthropic's content blocks by `index` (`input`
//! whole in `content_block_start`, or in `input_json_delta` parts);
//! Gemini's chunks, each call whole, or Vertex's `partialArgs` pieces
//! joined while `willContinue` says more is coming. A call handed over
//! early is read from its own item, block or part alone, so a stream's
//! cost grows with its events, not with its events times its calls.

use serde_json::{Map, Value, json};

use super::progress::ValueFormat;

/// A stream's body so far, in its format.
#[derive(Debug)]
pub(super) enum Assembler {
    Responses(ResponsesBody),
    Anthropic(AnthropicBody),
    Gemini(GeminiBody),
}

impl Assembler {
    pub(super) fn new(format: ValueFormat) -> Assembler {
        match format {
            ValueFormat::Responses => Assembler::Responses(ResponsesBody::default()),
            ValueFormat::Anthropic => Assembler::Anthropic(AnthropicBody::default()),
            ValueFormat::Gemini => Assembler::Gemini(GeminiBody::default()),
        }
    }

    /// Take one event, read as JSON.
    pub(super) fn feed(&mut self, event: Value) {
        match self {
            Assembler::Responses(body) => body.feed(event),
            Assembler::Anthropic(body) => body.feed(event),
            Assembler::Gemini(body) => body.feed(&event),
        }
    }

    /// A body in the format that holds call `k` (in call order) alone,
    /// as the stream shows it now.
    pub(super) fn call_body(&self, k: usize) -> Option<Value> {
        match self {
            Assembler::Responses(body) => body.call_body(k),
            Assembler::Anthropic(body) => body.call_body(k),
            Assembler::Gemini(body) => body.call_body(k),
        }
    }

    /// The whole body the events stand for.
    pub(super) fn body(self) -> Value {
        match self {
            Assembler::Responses(body) => body.body(),
            Assembler::Anthropic(body) => body.body(),
            Assembler::Gemini(body) => body.body(),
        }
    }
}

/// What `key` of an object event holds, taken out of it.
fn take(event: &mut Value, key: &str) -> Value {
    event.get_mut(key).map(Value::take).unwrap_or_default()
}

/// Items (or blocks) by the position the stream gave each, kept in that
/// order. A hostile position costs nothing: nothing is laid out up to it.
#[derive(Debug, Default)]
struct Positioned<T> {
    entries: Vec<(u64, T)>,
}

impl<T> Positioned<T> {
    /// Put `entry` at `at`, in place of one there before.
    fn put(&mut self, at: u64, entry: T) {
        // Entries come in order: the search starts from the back.
        let slot = self.entries.iter().rposition(|(i, _)| *i <= at);
        match slot {
            Some(s) if self.entries[s].0 == at => self.entries[s].1 = entry,
            Some(s) => self.entries.insert(s + 1, (at, entry)),
            None => self.entries.insert(0, (at, entry)),
        }
    }

    fn get_mut(&mut self, at: u64) -> Option<&mut T> {
        let slot = self.entries.iter().rposition(|(i, _)| *i == at)?;
        Some(&mut self.entries[slot].1)
    }

    /// The next position after the last.
    fn next(&self) -> u64 {
        self.entries.last().map_or(0, |(i, _)| i.saturating_add(1))
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, entry)| entry)
    }
}

/// A Responses stream's response so far.
#[derive(Debug)]
pub(super) struct ResponsesBody {
    base: Value,
    items: Positioned<Value>,
    /// The response a `response.completed` (or `incomplete`, `failed`)
    /// gave whole: it wins over the deltas.
    whole: Option<Value>,
}

impl Default for ResponsesBody {
    fn default() -> Self {
        ResponsesBody {
            base: cut_short(Map::new()),
            items: Positioned::default(),
            whole: None,
        }
    }
}

/// A response whose stream has not said it ended.
fn cut_short(mut response: Map<String, Value>) -> Value {
    response
        .entry("object")
        .or_insert_with(|| json!("response"));
    response.insert("status".into(), json!("incomplete"));
    response.insert(
        "incomplete_details".into(),
        json!({"reason": "the stream ended early"}),
    );
    Value::Object(response)
}

impl ResponsesBody {
    fn feed(&mut self, mut event: Value) {
        if self.whole.is_some() {
            return;
        }
        let kind = take(&mut event, "type");
        match kind.as_str().unwrap_or_default() {
            // The whole response: everything the deltas said, once.
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.whole = Some(take(&mut event, "response"));
            }
            "response.created" | "response.in_progress" => {
                if let Value::Object(response) = take(&mut event, "response") {
                    self.base = cut_short(response);
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                let at = event["output_index"]
                    .as_u64()
                    .unwrap_or_else(|| self.items.next());
                self.items.put(at, take(&mut event, "item"));
            }
            "response.function_call_arguments.delta" => {
                if let Some(item) = self.item(&event) {
                    append(&mut item["arguments"], &event["delta"]);
                }
            }
            // The arguments whole: they replace the deltas, never add.
            "response.function_call_arguments.done" => {
                let arguments = take(&mut event, "arguments");
                if let Some(item) = self.item(&event) {
                    item["arguments"] = arguments;
                }
            }
            "response.output_text.delta" => {
                if let Some(item) = self.item(&event) {
                    if !item["content"][0]["text"].is_string() {
                        item["content"] = json!([{"type": "output_text", "text": ""}]);
                    }
                    append(&mut item["content"][0]["text"], &event["delta"]);
                }
            }
            _ => {}
        }
    }

    /// The output item (an object) an event is about: by `item_id`, else
    /// `output_index`.
    fn item(&mut self, event: &Value) -> Option<&mut Value> {
        let by_id = event["item_id"].as_str().and_then(|id| {
            let slot = (self.items.entries.iter()).rposition(|(_, item)| item["id"] == id)?;
            Some(self.items.entries[slot].0)
        });
        let at = by_id.or_else(|| event["output_index"].as_u64())?;
        self.items.get_mut(at).filter(|item| item.is_object())
    }

    fn call_body(&self, k: usize) -> Option<Value> {
        let is_call = |item: &&Value| item["type"] == "function_call";
        let call = match &self.whole {
            Some(whole) => whole["output"].as_array()?.iter().filter(is_call).nth(k),
            None => self.items.iter().filter(is_call).nth(k),
        };
        Some(json!({"object": "response", "status": "completed", "output": [call?]}))
    }

    fn body(self) -> Value {
        if let Some(whole) = self.whole {
            return whole;
        }
        let mut base = self.base;
        base["output"] = Value::Array(self.items.entries.into_iter().map(|(_, i)| i).collect());
        base
    }
}

/// An Anthropic stream's message so far.
#[derive(Debug)]
pub(super) struct AnthropicBody {
    message: Value,
    /// Each content block, with its `input_json_delta` parts.
    blocks: Positioned<(Value, String)>,
}

impl Default for AnthropicBody {
    fn default() -> Self {
        AnthropicBody {
            message: json!({"type": "message", "role": "assistant"}),
            blocks: Positioned::default(),
        }
    }
}

impl AnthropicBody {
    fn feed(&mut self, mut event: Value) {
        let at = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let message = take(&mut event, "message");
                if message.is_object() {
                    self.message = message;
                }
            }
            "content_block_start" => {
                let block = take(&mut event, "content_block");
                if block.is_object() {
                    self.blocks.put(at, (block, String::new()));
                }
            }
            "content_block_delta" => {
                if let Some((block, input)) = self.blocks.get_mut(at) {
                    add_delta(block, input, &event["delta"]);
                }
            }
            "message_delta" => {
                for (key, value) in event["delta"].as_object().into_iter().flatten() {
                    self.message[key] = value.clone();
                }
                if let Some(usage) = event["usage"].as_object() {
                    if !self.message["usage"].is_object() {
                        self.message["usage"] = json!({});
                    }
                    for (key, value) in usage {
                        self.message["usage"][key] = value.clone();
                    }
                }
            }
            _ => {}
        }
    }

    fn call_body(&self, k: usize) -> Option<Value> {
        let (block, input) = (self.blocks.iter())
            .filter(|(block, _)| block["type"] == "tool_use")
            .nth(k)?;
        let block = with_input(block.clone(), input);
        Some(json!({"type": "message", "role": "assistant", "content": [block]}))
    }

    fn body(self) -> Value {
        let mut message = self.message;
        let blocks = (self.blocks.entries.into_iter())
            .map(|(_, (block, input))| with_input(block, &input))
            .collect();
        message["content"] = Value::Array(blocks);
        message
    }
}

/// Add a `content_block_delta`'s `delta` to its block (an object).
fn add_delta(block: &mut Value, input: &mut String, delta: &Value) {
    match delta["type"].as_str().unwrap_or_default() {
        "input_json_delta" => input.push_str(delta["partial_json"].as_str().unwrap_or_default()),
        "signature_delta" => block["signature"] = delta["signature"].clone(),
        kind => {
            // text_delta, thinking_delta: the block's own field.
            let key = kind.trim_end_matches("_delta");
            append(&mut block[key], &delta[key]);
        }
    }
}

/// A block with its `input` from its parts, when there were any; else
/// `input` came whole at the start (or the tool takes no argument).
fn with_input(mut block: Value, input: &str) -> Value {
    if !input.trim().is_empty() {
        block["input"] =
            serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.to_owned()));
    }
    block
}

/// A Gemini stream's reply so far.
#[derive(Debug, Default)]
pub(super) struct GeminiBody {
    parts: GeminiParts,
    finish: Value,
    /// `usageMetadata`, `modelVersion`, `responseId`: the last of each.
    fields: Map<String, Value>,
}

impl GeminiBody {
    fn feed(&mut self, chunk: &Value) {
        let candidate = &chunk["candidates"][0];
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.parts.add(part);
        }
        if !candidate["finishReason"].is_null() {
            self.finish = candidate["finishReason"].clone();
        }
        for key in ["usageMetadata", "modelVersion", "responseId"] {
            if let Some(value) = chunk.get(key) {
                self.fields.insert(key.to_owned(), value.clone());
            }
        }
    }

    fn call_body(&self, k: usize) -> Option<Value> {
        let part = (self.parts.parts.iter())
            .filter(|part| part.get("functionCall").is_some())
            .nth(k)?;
        Some(json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}))
    }

    fn body(self) -> Value {
        let mut candidate =
            json!({"content": {"role": "model", "parts": self.parts.parts}, "index": 0});
        if !self.finish.is_null() {
            candidate["finishReason"] = self.finish;
        }
        let mut body = self.fields;
        body.insert("candidates".into(), json!([candidate]));
        Value::Object(body)
    }
}

/// A Gemini reply's parts so far, and the Vertex call still coming in
/// pieces (`willContinue`), with the string arguments still growing.
#[derive(Debug, Default)]
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
        if let Some(call) = part.get("functionCall").filter(|call| call.is_object()) {
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
            && let Some(args) = args.as_object_mut()
        {
            for (key, value) in more {
                args.insert(key.clone(), value.clone());
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
