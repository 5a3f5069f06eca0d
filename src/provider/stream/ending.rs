//! How a stream ends, per format: the event that says the reply is
//! whole, or one that says the server failed in the middle of it. A
//! stream that stops before its last event was cut; one that carries an
//! error event broke. Either is the server's failure, never the model's.
//! Chat ends with `[DONE]` (or a choice's `finish_reason`, for servers
//! that send no `[DONE]`) and fails with a chunk holding `error`;
//! Responses ends with `response.completed` or `response.incomplete` and
//! fails with `response.failed` or `error`; Anthropic ends with
//! `message_stop` (or the `message_delta` that gives its stop reason) and
//! fails with an `error` event (`overloaded_error`);
//! Gemini ends with a candidate's `finishReason` and fails with a chunk
//! holding `error`.

use serde_json::Value;

use crate::provider::Provider;

/// What one event says of the stream's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Signal {
    /// More is to come.
    Goes,
    /// The reply is whole.
    Ends,
    /// The server failed: its words.
    Failed(String),
}

/// What the event with `data` (read as JSON: `event`) says.
pub(super) fn signal(provider: Provider, data: &str, event: Option<&Value>) -> Signal {
    if data.trim() == "[DONE]" {
        return Signal::Ends;
    }
    let Some(event) = event else {
        return Signal::Goes;
    };
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match provider {
        Provider::OpenAi => {
            if let Some(error) = event.get("error").filter(|e| !e.is_null()) {
                Signal::Failed(worded(error))
            } else if finished_choice(event) {
                Signal::Ends
            } else {
                Signal::Goes
            }
        }
        Provider::OpenAiResponses => match kind {
            "response.completed" | "response.incomplete" => Signal::Ends,
            "response.failed" => Signal::Failed(
                event
                    .pointer("/response/error")
                    .map_or_else(|| "response.failed".to_owned(), worded),
            ),
            "error" => Signal::Failed(worded(event)),
            _ => Signal::Goes,
        },
        Provider::Anthropic => match kind {
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
        },
        Provider::Gemini => {
            if let Some(error) = event.get("error").filter(|e| !e.is_null()) {
                Signal::Failed(worded(error))
            } else if event
                .pointer("/candidates/0/finishReason")
                .is_some_and(|r| !r.is_null())
            {
                Signal::Ends
            } else {
                Signal::Goes
            }
        }
    }
}

/// Whether `event` is one of the format's own events (a stream of
/// another format's events assembles into an empty reply, silently).
pub(super) fn of_the_format(provider: Provider, event: &Value) -> bool {
    let has = |key: &str| event.get(key).is_some();
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match provider {
        Provider::OpenAi => has("choices") || has("error"),
        Provider::OpenAiResponses => kind.starts_with("response.") || kind == "error",
        Provider::Anthropic => {
            kind.starts_with("message_")
                || kind.starts_with("content_block_")
                || kind == "ping"
                || kind == "error"
        }
        Provider::Gemini => {
            has("candidates") || has("usageMetadata") || has("promptFeedback") || has("error")
        }
    }
}

/// Why `events` events, none of them of `provider`'s format, are no
/// reply of it.
pub(super) fn foreign(provider: Provider, events: usize) -> String {
    format!(
        "none of its {events} event(s) is of the {} format: is the provider right?",
        provider.as_str()
    )
}

/// A Chat chunk whose choice says why it finished.
fn finished_choice(event: &Value) -> bool {
    event
        .get("choices")
        .and_then(Value::as_array)
        .is_some_and(|choices| {
            choices
                .iter()
                .any(|c| c.get("finish_reason").is_some_and(|r| !r.is_null()))
        })
}

/// An error object as one line: its type (or code or status) and message.
pub(super) fn worded(error: &Value) -> String {
    let field = |name: &str| match error.get(name) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let kind = field("type")
        .or_else(|| field("code"))
        .or_else(|| field("status"));
    let message = field("message");
    match (kind, message) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => crate::excerpt::cut(&error.to_string(), 200).into_owned(),
    }
}
