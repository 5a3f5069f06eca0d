//! Inputs several benches share, built in code: tool definitions, replies
//! of n calls, and a search tool's schema with a valid and an invalid
//! call. Included with `#[path]` by each bench that needs it.

// Each bench that includes this file uses only part of it.
#![allow(dead_code)]

use serde_json::{Value, json};
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::tool::{Effect, ToolDef};

/// A read-only tool definition with these parameters.
pub fn def(name: &str, parameters: Value) -> ToolDef {
    ToolDef {
        name: name.to_owned(),
        description: format!("{name} for the bench"),
        parameters,
        effect: Effect::Read,
        timeout_ms: 30_000,
        metadata: None,
        simulate: None,
        http: None,
        command: None,
    }
}

/// `n` calls, echo and math by turns.
pub fn calls(n: usize) -> Vec<ParsedCall> {
    (0..n)
        .map(|i| {
            let (name, arguments) = if i % 2 == 0 {
                (
                    "echo",
                    json!({"message": format!("hello world from call {i}")}),
                )
            } else {
                (
                    "math",
                    json!({"operation": "multiply", "a": 12.5 + i as f64, "b": -4}),
                )
            };
            ParsedCall::Ok(ToolCall {
                id: format!("call_{i:08}_abcdefgh"),
                name: name.to_owned(),
                arguments: arguments.try_into().expect("an object"),
            })
        })
        .collect()
}

/// `n` calls to create calendar events: the calls a streamed reply
/// carries in the stream benches.
pub fn calendar_calls(n: usize) -> Vec<ParsedCall> {
    (0..n)
        .map(|i| {
            ParsedCall::Ok(ToolCall {
                id: format!("call_{i}"),
                name: "create_calendar_event".to_owned(),
                arguments: json!({"title": format!("Sync {i}"), "start": "2026-11-23T10:00:00",
                                  "duration_minutes": 30, "attendees": ["Ada", "Lin"]})
                .try_into()
                .expect("an object"),
            })
        })
        .collect()
}

/// The OpenAI Chat stream of `calls`: each call's arguments in eight
/// deltas, the first naming the call, then `[DONE]`.
pub fn chat_stream(calls: &[ParsedCall]) -> String {
    let mut text = String::new();
    for (i, call) in calls.iter().enumerate() {
        let ParsedCall::Ok(call) = call else { continue };
        let arguments = call.arguments.to_string();
        let pieces: Vec<String> = arguments
            .as_bytes()
            .chunks(arguments.len().div_ceil(8))
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        for (k, piece) in pieces.iter().enumerate() {
            let mut delta = json!({"index": i, "function": {"arguments": piece}});
            if k == 0 {
                delta["id"] = json!(call.id);
                delta["type"] = json!("function");
                delta["function"]["name"] = json!(call.name);
            }
            let chunk = json!({"object": "chat.completion.chunk",
                               "choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": Value::Null}]});
            text.push_str(&format!("data: {chunk}\n\n"));
        }
    }
    text + "data: [DONE]\n\n"
}

/// The Anthropic stream of `calls`: each tool block's input in eight
/// `input_json_delta` parts, then the stop reason and `message_stop`.
pub fn anthropic_stream(calls: &[ParsedCall]) -> String {
    let mut text = String::new();
    let mut event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        text.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude", "content": [], "stop_reason": Value::Null,
        "usage": {"input_tokens": 412, "output_tokens": 1}}}),
    );
    for (i, call) in calls.iter().enumerate() {
        let ParsedCall::Ok(call) = call else { continue };
        event(
            json!({"type": "content_block_start", "index": i, "content_block":
            {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        );
        let arguments = call.arguments.to_string();
        for piece in arguments.as_bytes().chunks(arguments.len().div_ceil(8)) {
            let piece = String::from_utf8_lossy(piece);
            event(json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        event(json!({"type": "content_block_stop", "index": i}));
    }
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 96}}),
    );
    event(json!({"type": "message_stop"}));
    text
}

/// The shape of schema tools have (typed properties, bounds, an enum,
/// patterns, a nested object with an array), a valid call's arguments and
/// an invalid one's that breaks most of it.
pub fn search() -> (Value, Value, Value) {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "sort": {"enum": ["relevance", "date", "price"]},
            "filters": {"type": "object", "properties": {
                "min_price": {"type": "number", "minimum": 0},
                "max_price": {"type": "number", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z-]+$"}, "maxItems": 10}
            }, "additionalProperties": false},
            "region": {"type": "string", "pattern": "^[A-Z]{2}$"},
            "include_sold_out": {"type": "boolean"}
        },
        "required": ["query", "limit"],
        "additionalProperties": false
    });
    let valid = json!({"query": "red shoes", "limit": 20, "sort": "price",
        "filters": {"min_price": 10, "max_price": 80.5, "tags": ["running", "trail-run"]}, "region": "PT", "include_sold_out": false});
    let invalid = json!({"query": "", "limit": 500, "sort": "cheapest",
        "filters": {"min_price": -1, "tags": ["Bad Tag"]}, "region": "portugal", "extra": 1});
    (schema, valid, invalid)
}
