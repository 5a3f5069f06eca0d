//! How a stream ends, in words every format shares: the event that says
//! the reply is whole (`Signal::Ends`), or one that says the server failed
//! in the middle of it (`Signal::Failed`, its error `worded`). A stream
//! that stops before its last event was cut; one that carries an error
//! event broke. Either is the server's failure, never the model's. Each
//! format's file says which of its events does which: Chat ends with
//! `[DONE]` or a choice's `finish_reason`, Responses with
//! `response.completed`, Anthropic with `message_stop`, Gemini with a
//! candidate's `finishReason`.

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

/// What the event with `data` says before it is read as JSON: `[DONE]`
/// (Chat's and some servers' last line) ends a stream; anything else is
/// for the format to say.
pub(super) fn done(data: &str) -> Option<Signal> {
    (data.trim() == "[DONE]").then_some(Signal::Ends)
}

/// Why `events` events, none of them of `provider`'s format, are no
/// reply of it.
pub(super) fn foreign(provider: Provider, events: usize) -> String {
    format!(
        "none of its {events} event(s) is of the {} format: is the provider right?",
        provider.as_str()
    )
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
