//! What a stream has shown so far, event by event, as a streaming client
//! sees it: whether the first token has come (text, reasoning or part of
//! a call), and how many calls are complete, in call order (the moment a
//! client could run one). Each format says a call is complete its own
//! way: Chat when the next call begins or the choice finishes; Responses
//! at the call item's `output_item.done`; Anthropic at its block's
//! `content_block_stop`; Gemini with each call part, unless Vertex says
//! `willContinue`.

use serde_json::Value;

use crate::provider::Provider;

/// A stream's progress so far.
#[derive(Debug)]
pub struct Progress {
    provider: Provider,
    token: bool,
    begun: usize,
    complete: usize,
    /// Chat: the `(index, id)` of each call begun. Anthropic: the block
    /// index of each tool block.
    keys: Vec<(Option<u64>, String)>,
    /// Responses and Anthropic: calls whose end was seen, in any order.
    ended: Vec<bool>,
    /// Gemini: the `id` and `name` of a Vertex call still coming in pieces.
    open: Option<(Value, Value)>,
}

impl Progress {
    pub fn new(provider: Provider) -> Progress {
        Progress {
            provider,
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

    /// Read one event of the stream.
    pub fn feed(&mut self, event: &Value) {
        match self.provider {
            Provider::OpenAi => self.chat(event),
            Provider::OpenAiResponses => self.responses(event),
            Provider::Anthropic => self.anthropic(event),
            Provider::Gemini => self.gemini(event),
        }
    }

    /// The stream ended: every call begun is complete.
    pub fn end(&mut self) {
        self.complete = self.begun;
    }

    fn chat(&mut self, chunk: &Value) {
        let Some(choice) = chunk["choices"].get(0) else {
            return;
        };
        let delta = &choice["delta"];
        let said = |key: &str| delta[key].as_str().is_some_and(|s| !s.is_empty());
        if said("content") || said("reasoning_content") || said("reasoning") {
            self.token = true;
        }
        for part in delta["tool_calls"].as_array().into_iter().flatten() {
            self.token = true;
            let index = part["index"].as_u64();
            let id = part["id"].as_str().unwrap_or_default();
            // The same call, unless it names another id or another index.
            let same = self.keys.last().is_some_and(|(last_index, last_id)| {
                (id.is_empty() || last_id.is_empty() || last_id == id) && *last_index == index
            });
            if same {
                if let Some(last) = self.keys.last_mut()
                    && last.1.is_empty()
                {
                    last.1 = id.to_owned();
                }
                continue;
            }
            // A call begins: every call before it is complete.
            self.keys.push((index, id.to_owned()));
            self.complete = self.begun;
            self.begun += 1;
        }
        if !choice["finish_reason"].is_null() {
            self.end();
        }
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
