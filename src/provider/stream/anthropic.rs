//! Anthropic's stream: its body built from its events (content blocks by
//! `index`, `input` whole in `content_block_start` or in `input_json_delta`
//! parts), its delta events read typed, when a call is complete, and the
//! events that end it or say the server failed.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use super::ending::{Signal, worded};
use super::pieces::{append, append_str};
use super::positioned::{Positioned, take};
use super::progress::Progress;

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
    pub(super) fn feed(&mut self, mut event: Value) {
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
    pub(super) fn take_piece(&mut self, data: &str) -> bool {
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

    pub(super) fn call_body(&self, k: usize) -> Option<Value> {
        let (block, input) = (self.blocks.iter())
            .filter(|(block, _)| block["type"] == "tool_use")
            .nth(k)?;
        let block = with_input(block.clone(), input);
        Some(json!({"type": "message", "role": "assistant", "content": [block]}))
    }

    pub(super) fn body(self) -> Value {
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

/// What an Anthropic event says of the stream's end.
pub(super) fn signal(event: &Value) -> Signal {
    match event["type"].as_str().unwrap_or_default() {
        "message_stop" => Signal::Ends,
        // The stop reason says the message is whole; `message_stop`
        // only closes it (some recorded streams end without it).
        "message_delta"
            if event
                .pointer("/delta/stop_reason")
                .is_some_and(|r| !r.is_null()) =>
        {
            Signal::Ends
        }
        "error" => Signal::Failed(worded(event.get("error").unwrap_or(event))),
        _ => Signal::Goes,
    }
}

/// Whether `event` is one of Anthropic's own events.
pub(super) fn of_the_format(event: &Value) -> bool {
    let kind = event["type"].as_str().unwrap_or_default();
    kind.starts_with("message_")
        || kind.starts_with("content_block_")
        || kind == "ping"
        || kind == "error"
}

/// A call is complete at its block's `content_block_stop`.
pub(super) fn progress(p: &mut Progress, event: &Value) {
    let index = event["index"].as_u64();
    match event["type"].as_str().unwrap_or_default() {
        "content_block_start" if event["content_block"]["type"] == "tool_use" => {
            p.token = true;
            p.keys.push((index, String::new()));
            p.ended.push(false);
            p.begun += 1;
        }
        "content_block_delta" => p.token = true,
        "content_block_stop" => {
            if let Some(at) = p.keys.iter().position(|(i, _)| *i == index) {
                p.ended[at] = true;
            }
            p.complete_in_order();
        }
        "message_delta" | "message_stop" => p.end(),
        _ => {}
    }
}

/// Anthropic asks with `stream: true`.
pub(super) fn ask_for_stream(request: &mut crate::transport::ApiRequest) {
    request.body["stream"] = json!(true);
}
