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

use serde_json::Value;

use super::anthropic::AnthropicBody;
use super::gemini::GeminiBody;
use super::progress::ValueFormat;
use super::responses::ResponsesBody;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
