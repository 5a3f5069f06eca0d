//! The whole body a stream whose events are kept as JSON stands for, per
//! format (Chat's is read by `chat`), built as the events come, each
//! event taken once: the Responses API's items by `item_id` and
//! `output_index` (its final `response.completed` holds the whole
//! response, and wins); Anthropic's content blocks by `index` (`input`
//! whole in `content_block_start`, or in `input_json_delta` parts);
//! Gemini's chunks, each call whole, or Vertex's pieces (`pieces`).
//! The delta events, most of a stream's, are read into typed fields
//! borrowed from their data, every field strictly of its type; any other
//! event, or a delta with a field of another type, as a JSON value. A
//! call handed over early is read from its own item, block or part
//! alone, so a stream's cost grows with its events, not with its events
//! times its calls.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::pieces::{GeminiParts, append, append_str};
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

    /// Take an event that carries a piece of the reply (Responses'
    /// `*.delta`, Anthropic's `content_block_delta`: most of a stream's
    /// events) read typed from its data, no JSON value made; false: it is
    /// none, or has a field of another type, and is for [`Self::feed`].
    /// An event the server named (`event:`) other than a delta is not
    /// read for it.
    pub(super) fn take_piece(&mut self, name: Option<&str>, data: &str) -> bool {
        match self {
            Assembler::Responses(body) if name.is_none_or(|n| n.ends_with(".delta")) => {
                body.take_piece(data)
            }
            Assembler::Anthropic(body) if name.is_none_or(|n| n == "content_block_delta") => {
                body.take_piece(data)
            }
            _ => false,
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

/// The fields of a Responses delta event, each strictly of its type.
#[derive(Deserialize)]
struct ResponsesPiece<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
}

/// The fields of an Anthropic `content_block_delta`, each strictly of its
/// type.
#[derive(Deserialize)]
struct AnthropicPiece<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<BlockDelta<'a>>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

/// A message item's text, made its first `output_text` part if it had none.
fn output_text(item: &mut Value) -> &mut Value {
    if !item["content"][0]["text"].is_string() {
        item["content"] = json!([{"type": "output_text", "text": ""}]);
    }
    &mut item["content"][0]["text"]
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
                    append(output_text(item), &event["delta"]);
                }
            }
            _ => {}
        }
    }

    /// The output item (an object) an event is about: by `item_id`, else
    /// `output_index`.
    fn item(&mut self, event: &Value) -> Option<&mut Value> {
        self.item_at(event["item_id"].as_str(), event["output_index"].as_u64())
    }

    fn item_at(&mut self, item_id: Option<&str>, output_index: Option<u64>) -> Option<&mut Value> {
        let by_id = item_id.and_then(|id| {
            let slot = (self.items.entries.iter()).rposition(|(_, item)| item["id"] == id)?;
            Some(self.items.entries[slot].0)
        });
        let at = by_id.or(output_index)?;
        self.items.get_mut(at).filter(|item| item.is_object())
    }

    /// Take a delta event read typed; false: it is not one whose every
    /// field is of its type, for the JSON path to take.
    fn take_piece(&mut self, data: &str) -> bool {
        let Ok(piece) = serde_json::from_str::<ResponsesPiece<'_>>(data) else {
            return false;
        };
        let arguments = match piece.kind.as_deref() {
            Some("response.function_call_arguments.delta") => true,
            Some("response.output_text.delta") => false,
            _ => return false,
        };
        let Some(delta) = piece.delta else {
            return false;
        };
        if self.whole.is_some() {
            return true;
        }
        if let Some(item) = self.item_at(piece.item_id.as_deref(), piece.output_index) {
            let text = match arguments {
                true => &mut item["arguments"],
                false => output_text(item),
            };
            append_str(text, &delta);
        }
        true
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

    /// Take a `content_block_delta` read typed; false: it is not one
    /// whose every field is of its type, for the JSON path to take.
    fn take_piece(&mut self, data: &str) -> bool {
        let Ok(piece) = serde_json::from_str::<AnthropicPiece<'_>>(data) else {
            return false;
        };
        let Some(delta) = piece
            .delta
            .filter(|_| piece.kind.as_deref() == Some("content_block_delta"))
        else {
            return false;
        };
        let Some(kind) = delta.kind.as_deref() else {
            return false;
        };
        let (key, said) = match kind {
            "input_json_delta" => ("input", &delta.partial_json),
            "text_delta" => ("text", &delta.text),
            "thinking_delta" => ("thinking", &delta.thinking),
            "signature_delta" => ("signature", &delta.signature),
            _ => return false,
        };
        let Some(said) = said else {
            return false;
        };
        let Some((block, input)) = self.blocks.get_mut(piece.index.unwrap_or(0)) else {
            return true;
        };
        match key {
            "input" => input.push_str(said),
            "signature" => block[key] = Value::String(said.to_string()),
            _ => append_str(&mut block[key], said),
        }
        true
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The body of `text`'s events, with delta events read typed or not,
    /// and how many were.
    fn body(format: ValueFormat, text: &str, typed: bool) -> (Value, usize) {
        let mut assembler = Assembler::new(format);
        let mut pieces = 0;
        for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
            let data = data.trim();
            if typed && assembler.take_piece(None, data) {
                pieces += 1;
            } else if let Ok(event) = serde_json::from_str(data) {
                assembler.feed(event);
            }
        }
        (assembler.body(), pieces)
    }

    #[test]
    fn delta_events_read_typed_make_the_body_the_json_path_makes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/corpora/provider-responses");
        let folders = [
            (ValueFormat::Responses, "openai/responses-sse"),
            (ValueFormat::Anthropic, "anthropic/sse"),
            (ValueFormat::Anthropic, "anthropic/sse-sdk-snapshots"),
            (ValueFormat::Anthropic, "anthropic/sse-sdk-fixtures"),
        ];
        let mut typed = 0;
        for (format, folder) in folders {
            for entry in std::fs::read_dir(root.join(folder)).into_iter().flatten() {
                let path = entry.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                let (with_pieces, pieces) = body(format, &text, true);
                assert_eq!(
                    with_pieces,
                    body(format, &text, false).0,
                    "{}",
                    path.display()
                );
                typed += pieces;
            }
        }
        if root.exists() {
            assert!(typed > 500, "delta events read typed: {typed}");
        }
    }

    #[test]
    fn a_delta_with_a_field_of_another_type_is_left_to_the_json_path() {
        let mut anthropic = Assembler::new(ValueFormat::Anthropic);
        anthropic.feed(json!({"type": "content_block_start", "index": 0,
                              "content_block": {"type": "text", "text": ""}}));
        let odd = [
            r#"{"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "a"}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}}"#,
        ];
        for data in odd {
            assert!(!anthropic.take_piece(None, data), "{data}");
        }
        assert!(anthropic.take_piece(
            None,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "b\n"}}"#
        ));
        assert_eq!(anthropic.body()["content"][0]["text"], "b\n");
        let mut responses = Assembler::new(ValueFormat::Responses);
        assert!(!responses.take_piece(
            None,
            r#"{"type": "response.output_text.delta", "output_index": 0, "delta": ["a"]}"#
        ));
        assert!(!responses.take_piece(None, r#"{"type": "response.created", "response": {}}"#));
    }
}
