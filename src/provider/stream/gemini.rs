//! Gemini's stream: its chunks, each call whole or in Vertex's pieces,
//! when a call is complete, and the chunk that ends it or says the server
//! failed.

use serde_json::{Map, Value, json};

use super::ending::{Signal, worded};
use super::pieces::GeminiParts;
use super::progress::Progress;

/// A Gemini stream's reply so far.
#[derive(Debug, Default)]
pub(super) struct GeminiBody {
    parts: GeminiParts,
    finish: Value,
    /// `usageMetadata`, `modelVersion`, `responseId`: the last of each.
    fields: Map<String, Value>,
}

impl GeminiBody {
    pub(super) fn feed(&mut self, chunk: &Value) {
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

    pub(super) fn call_body(&self, k: usize) -> Option<Value> {
        let part = (self.parts.parts.iter())
            .filter(|part| part.get("functionCall").is_some())
            .nth(k)?;
        Some(json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}))
    }

    pub(super) fn body(self) -> Value {
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

/// What a Gemini chunk says of the stream's end.
pub(super) fn signal(chunk: &Value) -> Signal {
    if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
        Signal::Failed(worded(error))
    } else if chunk
        .pointer("/candidates/0/finishReason")
        .is_some_and(|r| !r.is_null())
    {
        Signal::Ends
    } else {
        Signal::Goes
    }
}

/// Whether `chunk` is one of Gemini's own chunks.
pub(super) fn of_the_format(chunk: &Value) -> bool {
    let has = |key: &str| chunk.get(key).is_some();
    has("candidates") || has("usageMetadata") || has("promptFeedback") || has("error")
}

/// A call is complete with its part, unless Vertex says `willContinue`.
pub(super) fn progress(p: &mut Progress, chunk: &Value) {
    let parts = chunk
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array);
    for part in parts.into_iter().flatten() {
        if part["text"].as_str().is_some_and(|t| !t.is_empty()) {
            p.token = true;
        }
        let Some(call) = part.get("functionCall") else {
            continue;
        };
        p.token = true;
        // A Vertex piece of the open call names no other call.
        let named = |key: &str, open: &Value| call[key].is_null() || call[key] == *open;
        let open = p
            .open
            .take()
            .filter(|(id, name)| named("id", id) && named("name", name));
        if open.is_none() {
            p.complete = p.begun;
            p.begun += 1;
        }
        if call["willContinue"] == true {
            p.open = Some(open.unwrap_or_else(|| (call["id"].clone(), call["name"].clone())));
        } else {
            p.complete = p.begun;
        }
    }
    if !chunk
        .pointer("/candidates/0/finishReason")
        .unwrap_or(&Value::Null)
        .is_null()
    {
        p.end();
    }
}

/// Gemini asks at its `streamGenerateContent` endpoint, with `alt=sse`.
pub(super) fn ask_for_stream(request: &mut crate::transport::ApiRequest) {
    request.url = request
        .url
        .replace(":generateContent", ":streamGenerateContent?alt=sse");
}
