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
    pub(super) format: ValueFormat,
    pub(super) token: bool,
    pub(super) begun: usize,
    pub(super) complete: usize,
    /// Responses: the output index of each call item. Anthropic: the
    /// block index of each tool block.
    pub(super) keys: Vec<(Option<u64>, String)>,
    /// Responses and Anthropic: calls whose end was seen, in any order.
    pub(super) ended: Vec<bool>,
    /// Gemini: the `id` and `name` of a Vertex call still coming in pieces.
    pub(super) open: Option<(Value, Value)>,
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

    /// The stream ended: every call begun is complete.
    pub fn end(&mut self) {
        self.complete = self.begun;
    }

    /// The calls complete so far are the ended ones up to the first that
    /// has not ended.
    pub(super) fn complete_in_order(&mut self) {
        self.complete = self.ended.iter().take_while(|ended| **ended).count();
    }
}
