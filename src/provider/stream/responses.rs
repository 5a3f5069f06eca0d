//! OpenAI Responses' stream: its body built from its events (items by
//! `item_id` and `output_index`; the final `response.completed` holds the
//! whole response, and wins), its delta events read typed, when a call is
//! complete, and the events that end it or say the server failed.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ending::{Signal, worded};
use super::pieces::{append, append_str};
use super::positioned::{Positioned, take};
use super::progress::Progress;

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

/// A message item's text, made its first `output_text` part if it had none.
fn output_text(item: &mut Value) -> &mut Value {
    if !item["content"][0]["text"].is_string() {
        item["content"] = json!([{"type": "output_text", "text": ""}]);
    }
    &mut item["content"][0]["text"]
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
    pub(super) fn feed(&mut self, mut event: Value) {
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
    pub(super) fn take_piece(&mut self, data: &str) -> bool {
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

    pub(super) fn call_body(&self, k: usize) -> Option<Value> {
        let is_call = |item: &&Value| item["type"] == "function_call";
        let call = match &self.whole {
            Some(whole) => whole["output"].as_array()?.iter().filter(is_call).nth(k),
            None => self.items.iter().filter(is_call).nth(k),
        };
        Some(json!({"object": "response", "status": "completed", "output": [call?]}))
    }

    pub(super) fn body(self) -> Value {
        if let Some(whole) = self.whole {
            return whole;
        }
        let mut base = self.base;
        base["output"] = Value::Array(self.items.entries.into_iter().map(|(_, i)| i).collect());
        base
    }
}

/// What a Responses event says of the stream's end.
pub(super) fn signal(event: &Value) -> Signal {
    match event["type"].as_str().unwrap_or_default() {
        "response.completed" | "response.incomplete" => Signal::Ends,
        "response.failed" => Signal::Failed(
            event
                .pointer("/response/error")
                .map_or_else(|| "response.failed".to_owned(), worded),
        ),
        "error" => Signal::Failed(worded(event)),
        _ => Signal::Goes,
    }
}

/// Whether `event` is one of the Responses API's own events.
pub(super) fn of_the_format(event: &Value) -> bool {
    let kind = event["type"].as_str().unwrap_or_default();
    kind.starts_with("response.") || kind == "error"
}

/// A call is complete at its item's `output_item.done`.
pub(super) fn progress(p: &mut Progress, event: &Value) {
    let kind = event["type"].as_str().unwrap_or_default();
    let is_call = event["item"]["type"] == "function_call";
    match kind {
        "response.output_item.added" if is_call => {
            p.token = true;
            p.keys.push((event["output_index"].as_u64(), String::new()));
            p.ended.push(false);
            p.begun += 1;
        }
        "response.output_item.done" if is_call => {
            let index = event["output_index"].as_u64();
            if let Some(at) = p.keys.iter().position(|(i, _)| *i == index) {
                p.ended[at] = true;
            }
            p.complete_in_order();
        }
        "response.completed" | "response.incomplete" | "response.failed" => p.end(),
        _ if kind.ends_with(".delta") => p.token = true,
        _ => {}
    }
}

/// The Responses API asks with `stream: true`.
pub(super) fn ask_for_stream(request: &mut crate::transport::ApiRequest) {
    request.body["stream"] = json!(true);
}
