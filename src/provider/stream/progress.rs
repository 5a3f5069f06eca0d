//! What a stream has shown so far, event by event, as a streaming client
//! sees it: whether the first token has come (text, reasoning or part of
//! a call), and how many calls are complete, in call order (the moment a
//! client could run one), for the formats whose events are kept as JSON
//! (Chat's are read by `chat`). Each format says a call is complete its
//! own way: Responses
//! at the call item's `output_item.done`; Anthropic at its block's
//! `content_block_stop`; Gemini with each call part, unless Vertex says
//! `willContinue`.

use serde_json::Value;

use crate::provider::Provider;

/// The formats whose streamed events are kept as JSON values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFormat {
    Responses,
    Anthropic,
    Gemini,
}

impl ValueFormat {
    /// `None`: OpenAI Chat, whose events are read typed.
    pub fn of(provider: Provider) -> Option<ValueFormat> {
        match provider {
            Provider::OpenAi => None,
            Provider::OpenAiResponses => Some(ValueFormat::Responses),
            Provider::Anthropic => Some(ValueFormat::Anthropic),
            Provider::Gemini => Some(ValueFormat::Gemini),
        }
    }
}

/// A stream's progress so far.
#[derive(Debug)]
pub struct Progress {
    format: ValueFormat,
    token: bool,
    begun: usize,
    complete: usize,
    /// Responses: the output index of each call item. Anthropic: the
    /// block index of each tool block.
    keys: Vec<(Option<u64>, String)>,
    /// Responses and Anthropic: calls whose end was seen, in any order.
    ended: Vec<bool>,
    /// Gemini: the `id` and `name` of a Vertex call still coming in pieces.
    open: Option<(Value, Value)>,
}

impl Progress {
    pub fn new(format: ValueFormat) -> Progress {
        Progress {
            format,
            token: false,
            begun: 0,
            complete: 0,
            keys: Vec::new(),
            ended: Vec::new(),
            open: None,
        }
    }

    /// A token of output has come.
    pub fn has_token(&self) -> bool {
        self.token
    }

    /// The calls complete so far: the first this many, in call order.
    pub fn complete(&self) -> usize {
        self.complete
    }

    /// An event that carries a piece of the reply came, read typed.
    pub fn saw_token(&mut self) {
        self.token = true;
    }

    /// Read one event of the stream.
    pub fn feed(&mut self, event: &Value) {
        match self.format {
            ValueFormat::Responses => self.responses(event),
            ValueFormat::Anthropic => self.anthropic(event),
            ValueFormat::Gemini => self.gemini(event),
        }
    }

    /// The stream ended: every call begun is complete.
    pub fn end(&mut self) {
        self.complete = self.begun;
    }

    fn responses(&mut self, event: &Value) {
        let kind = event["type"].as_str().unwrap_or_default();
        let is_call = event["item"]["type"] == "function_call";
        match kind {
            "response.output_item.added" if is_call => {
                self.token = true;
                self.keys
                    .push((event["output_index"].as_u64(), String::new()));
                self.ended.push(false);
                self.begun += 1;
            }
            "response.output_item.done" if is_call => {
                let index = event["output_index"].as_u64();
                if let Some(at) = self.keys.iter().position(|(i, _)| *i == index) {
                    self.ended[at] = true;
                }
                self.complete_in_order();
            }
            "response.completed" | "response.incomplete" | "response.failed" => self.end(),
            _ if kind.ends_with(".delta") => self.token = true,
            _ => {}
        }
    }

    fn anthropic(&mut self, event: &Value) {
        let index = event["index"].as_u64();
        match event["type"].as_str().unwrap_or_default() {
            "content_block_start" if event["content_block"]["type"] == "tool_use" => {
                self.token = true;
                self.keys.push((index, String::new()));
                self.ended.push(false);
                self.begun += 1;
            }
            "content_block_delta" => self.token = true,
            "content_block_stop" => {
                if let Some(at) = self.keys.iter().position(|(i, _)| *i == index) {
                    self.ended[at] = true;
                }
                self.complete_in_order();
            }
            "message_delta" | "message_stop" => self.end(),
            _ => {}
        }
    }

    /// The calls complete so far are the ended ones up to the first that
    /// has not ended.
    fn complete_in_order(&mut self) {
        self.complete = self.ended.iter().take_while(|ended| **ended).count();
    }

    fn gemini(&mut self, chunk: &Value) {
        let parts = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if part["text"].as_str().is_some_and(|t| !t.is_empty()) {
                self.token = true;
            }
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            self.token = true;
            // A Vertex piece of the open call names no other call.
            let named = |key: &str, open: &Value| call[key].is_null() || call[key] == *open;
            let open = self
                .open
                .take()
                .filter(|(id, name)| named("id", id) && named("name", name));
            if open.is_none() {
                self.complete = self.begun;
                self.begun += 1;
            }
            if call["willContinue"] == true {
                self.open =
                    Some(open.unwrap_or_else(|| (call["id"].clone(), call["name"].clone())));
            } else {
                self.complete = self.begun;
            }
        }
        if !chunk
            .pointer("/candidates/0/finishReason")
            .unwrap_or(&Value::Null)
            .is_null()
        {
            self.end();
        }
    }
}
