//! Which file asks for and reads each format's stream (Chat's events,
//! read typed, read themselves): the one place that names them all, so
//! that a format's own arms live whole in its file.

use serde_json::Value;

use super::super::Provider;
use super::ending::{Signal, done};
use super::progress::{Progress, ValueFormat};
use super::{anthropic, chat, gemini, responses};
use crate::transport::ApiRequest;

/// Make `request` ask for a streamed reply, as `provider`'s API wants it
/// asked.
pub fn ask_for_stream(provider: Provider, request: &mut ApiRequest) {
    match provider {
        Provider::OpenAi => chat::ask_for_stream(request),
        Provider::OpenAiResponses => responses::ask_for_stream(request),
        Provider::Anthropic => anthropic::ask_for_stream(request),
        Provider::Gemini => gemini::ask_for_stream(request),
    }
}

/// What the event with `data` (read as JSON: `event`) says of the end.
pub(super) fn signal(format: ValueFormat, data: &str, event: Option<&Value>) -> Signal {
    if let Some(signal) = done(data) {
        return signal;
    }
    let Some(event) = event else {
        return Signal::Goes;
    };
    match format {
        ValueFormat::Responses => responses::signal(event),
        ValueFormat::Anthropic => anthropic::signal(event),
        ValueFormat::Gemini => gemini::signal(event),
    }
}

/// Whether `event` is one of the format's own events (a stream of
/// another format's events assembles into an empty reply, silently).
pub(super) fn of_the_format(format: ValueFormat, event: &Value) -> bool {
    match format {
        ValueFormat::Responses => responses::of_the_format(event),
        ValueFormat::Anthropic => anthropic::of_the_format(event),
        ValueFormat::Gemini => gemini::of_the_format(event),
    }
}

impl Progress {
    /// Read one event of the stream.
    pub fn feed(&mut self, event: &Value) {
        match self.format {
            ValueFormat::Responses => responses::progress(self, event),
            ValueFormat::Anthropic => anthropic::progress(self, event),
            ValueFormat::Gemini => gemini::progress(self, event),
        }
    }
}
