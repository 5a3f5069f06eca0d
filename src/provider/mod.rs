//! Wire formats of OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages and Gemini generateContent. Each provider's format is whole in its own file: Parse
//! (responses in), Return (tool results out), tool definitions, the shape
//! of its conversation, its request and its usage block. This module holds
//! what they share and dispatches on [`Provider`]. Nothing here knows about
//! scheduling, tools' behaviour or how requests travel.

mod anthropic;
pub mod conversation;
mod declared;
mod gemini;
mod loose;
mod openai;
mod openai_responses;
pub mod settings;
pub mod stream;
#[cfg(test)]
mod tests;
mod wire;

pub use crate::call::FunctionSpec;
pub use anthropic::ANTHROPIC_VERSION;
pub use conversation::{Conversation, NUDGE};
pub use settings::{ApiSettings, ApiSettingsError, PerTrial, SeedChoice, ToolChoice};
pub(crate) use wire::write_arguments;
pub use wire::{
    Ask, EMPTY_RESULT_PLACEHOLDER, GENERATED_ID_PREFIX, ParsedResponse, Provider, ResponseError,
    UnknownProvider,
};
pub(crate) use wire::{
    IdMaker, WireArguments, api_error_message, append_line, fnv1a, from_body, make_call, non_empty,
    usage_of,
};
