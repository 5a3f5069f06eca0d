//! What every wire format shares: the `Provider`, what is asked of it,
//! a parsed response and why a body is refused, calls named and made.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::{
    ApiSettings, Conversation, FunctionSpec, anthropic, gemini, loose, openai, openai_responses,
    stream,
};
use crate::call::{Arguments, ParsedCall, SentArguments, ToolCall, ToolResult, Usage};
use crate::transport::ApiRequest;

/// Ids we make up for calls that came without one start with this, so that
/// they are never sent back to a provider as if it had chosen them.
pub const GENERATED_ID_PREFIX: &str = "tg_call_";

/// Text sent back for a successful call that produced no output: providers
/// reject or mishandle empty tool results.
pub const EMPTY_RESULT_PLACEHOLDER: &str = "(no output)";

/// A provider wire format.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Provider {
    #[serde(rename = "openai")]
    #[strum(serialize = "openai")]
    OpenAi,
    /// OpenAI's Responses API.
    #[serde(rename = "openai-responses")]
    #[strum(serialize = "openai-responses")]
    OpenAiResponses,
    Anthropic,
    Gemini,
}

impl Provider {
    /// The provider's name in the OpenTelemetry GenAI conventions
    /// (`gen_ai.provider.name`; a wire format served by any server, so
    /// the format's owner).
    pub fn semconv_name(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gcp.gemini",
        }
    }

    /// Every wire format.
    pub fn all() -> impl Iterator<Item = Provider> {
        <Provider as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The API whose wire format this is, for messages.
    pub fn api_name(self) -> &'static str {
        match self {
            Provider::OpenAi => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic Messages",
            Provider::Gemini => "Gemini generateContent",
        }
    }

    /// Parse: a response body into the text and the calls it holds.
    pub fn parse_response(self, body: &[u8]) -> Result<ParsedResponse, ResponseError> {
        match self {
            Provider::OpenAi => openai::parse_response(body),
            Provider::OpenAiResponses => openai_responses::parse_response(body),
            Provider::Anthropic => anthropic::parse_response(body),
            Provider::Gemini => gemini::parse_response(body),
        }
    }

    /// Parse a streamed reply (server-sent events), read as it would be
    /// as it came: what Parse reads of the body it stands for.
    pub fn parse_stream(self, body: &[u8]) -> Result<ParsedResponse, ResponseError> {
        stream::parse_whole(self, body).map_err(|e| ResponseError::NotAResponse {
            provider: self,
            reason: e.to_string(),
        })?
    }

    /// Return: append the JSON array of message(s) this provider expects
    /// next, written straight from the results (no intermediate values).
    pub fn write_results(self, results: &[ToolResult], out: &mut Vec<u8>) {
        match self {
            Provider::OpenAi => openai::write_results(results, out),
            Provider::OpenAiResponses => openai_responses::write_results(results, out),
            Provider::Anthropic => anthropic::write_results(results, out),
            Provider::Gemini => gemini::write_results(results, out),
        }
    }

    /// The inverse of Return: the text of each result in a returned message
    /// array (what a model reads of its calls' outcomes).
    /// Texts are borrowed from `returned` where they need no unescaping.
    pub fn result_texts(self, returned: &[u8]) -> Vec<std::borrow::Cow<'_, str>> {
        match self {
            Provider::OpenAi => openai::result_texts(returned),
            Provider::OpenAiResponses => openai_responses::result_texts(returned),
            Provider::Anthropic => anthropic::result_texts(returned),
            Provider::Gemini => gemini::result_texts(returned),
        }
    }

    /// Return, as JSON values: the message(s) this provider expects next.
    pub fn format_results(self, results: &[ToolResult]) -> Vec<Value> {
        let mut wire = Vec::new();
        self.write_results(results, &mut wire);
        serde_json::from_slice(&wire).expect("result messages are a JSON array")
    }

    /// Tool definitions in this provider's `tools` format.
    pub fn format_tools(self, tools: &[FunctionSpec]) -> Value {
        match self {
            Provider::OpenAi => openai::format_tools(tools),
            Provider::OpenAiResponses => openai_responses::format_tools(tools),
            Provider::Anthropic => anthropic::format_tools(tools),
            Provider::Gemini => gemini::format_tools(tools),
        }
    }

    /// The inverse of `format_tools`: the functions a `tools` value declares.
    pub fn parse_tools(self, tools: &Value) -> Result<Vec<FunctionSpec>, ResponseError> {
        match self {
            Provider::OpenAi => openai::parse_tools(tools),
            Provider::OpenAiResponses => openai_responses::parse_tools(tools),
            Provider::Anthropic => anthropic::parse_tools(tools),
            Provider::Gemini => gemini::parse_tools(tools),
        }
        .map_err(|problem| ResponseError::NotAResponse {
            provider: self,
            reason: format!("tools{problem}"),
        })
    }

    /// A request for the model's next turn (a streamed one when the
    /// model's settings say `stream`).
    pub fn request(self, ask: &Ask<'_>) -> ApiRequest {
        let mut request = self.whole_request(ask);
        if ask.settings.stream {
            stream::ask_for_stream(self, &mut request);
        }
        request
    }

    fn whole_request(self, ask: &Ask<'_>) -> ApiRequest {
        match self {
            Provider::OpenAi => openai::request(ask),
            Provider::OpenAiResponses => openai_responses::request(ask),
            Provider::Anthropic => anthropic::request(ask),
            Provider::Gemini => gemini::request(ask),
        }
    }

    /// Input and output tokens from a reply's usage block.
    pub fn usage(self, reply: &Value) -> Usage {
        match self {
            Provider::OpenAi => openai::usage(reply),
            Provider::OpenAiResponses => openai_responses::usage(reply),
            Provider::Anthropic => anthropic::usage(reply),
            Provider::Gemini => gemini::usage(reply),
        }
    }

    /// A message of plain text from `role` (`user`, `assistant`).
    pub fn text_message(self, role: &str, text: &str) -> Value {
        match self {
            Provider::OpenAi => openai::text_message(role, text),
            Provider::OpenAiResponses => openai_responses::text_message(role, text),
            Provider::Anthropic => anthropic::text_message(role, text),
            Provider::Gemini => gemini::text_message(role, text),
        }
    }

    /// The model's own message as it goes back next turn: exactly what
    /// the format defines for an assistant turn (text, calls with the ids
    /// their results answer, reasoning the API requires back), never a
    /// field a server added. One message, or none when the reply holds
    /// nothing to send; the Responses API's turn is several input items.
    pub fn assistant_message(self, reply: &Value, parsed: &ParsedResponse) -> Vec<Value> {
        match self {
            Provider::OpenAi => vec![openai::assistant_message(parsed)],
            Provider::OpenAiResponses => openai_responses::assistant_items(reply, parsed),
            Provider::Anthropic => anthropic::assistant_message(reply, parsed)
                .into_iter()
                .collect(),
            Provider::Gemini => gemini::assistant_message(reply, parsed)
                .into_iter()
                .collect(),
        }
    }

    /// A response body holding `text` and `calls`, as this provider would
    /// send it. Mock models speak through this, so Parse runs on every turn.
    /// A malformed call is written as it would arrive (broken arguments).
    pub fn format_response(self, text: &str, calls: &[ParsedCall]) -> Value {
        let mut body = Vec::new();
        self.write_response(text, calls, &mut body);
        serde_json::from_slice(&body).expect("a written response is JSON")
    }

    /// The body a model of this wire format would send for `text` and
    /// `calls`, written straight into `out` (the mock models' replies).
    pub fn write_response(self, text: &str, calls: &[ParsedCall], out: &mut Vec<u8>) {
        self.write_response_with(text, calls, Usage::default(), out);
    }

    /// [`Provider::write_response`] with a usage block that says `usage`
    /// (a replayed run's recorded token counts).
    pub fn write_response_with(
        self,
        text: &str,
        calls: &[ParsedCall],
        usage: Usage,
        out: &mut Vec<u8>,
    ) {
        match self {
            Provider::OpenAi => openai::write_response(text, calls, usage, out),
            Provider::OpenAiResponses => openai_responses::write_response(text, calls, usage, out),
            Provider::Anthropic => anthropic::write_response(text, calls, usage, out),
            Provider::Gemini => gemini::write_response(text, calls, usage, out),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is none of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}; use openai, openai-responses, anthropic or gemini")]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::all()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

/// What a request asks: the model's settings, its key (absent when
/// replaying or for a local server), the conversation so far and the tools.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub settings: &'a ApiSettings,
    pub key: Option<&'a str>,
    pub conversation: &'a Conversation,
    pub tools: &'a [FunctionSpec],
    /// The trial's seed shared by every model, sent where `seed` is
    /// `"trial"` (0 outside a trial).
    pub trial_seed: u64,
}

impl Ask<'_> {
    /// The `seed` to send, if any.
    pub fn seed(&self) -> Option<u64> {
        self.settings
            .seed
            .map(|seed| seed.for_trial(self.trial_seed))
    }

    /// The model file's endpoint, or the provider's public one.
    pub(crate) fn base_url<'b>(&'b self, default: &'b str) -> &'b str {
        self.settings
            .base_url
            .as_deref()
            .unwrap_or(default)
            .trim_end_matches('/')
    }
}

/// The usage of a reply kept as JSON (a live model's reply, a doctor's
/// answer), read by the same typed block as its parse.
pub(crate) fn usage_of<B: serde::de::DeserializeOwned + Default + Into<Usage>>(
    block: &Value,
) -> Usage {
    <loose::Loose<B> as serde::Deserialize>::deserialize(block)
        .map(|block| block.0.into())
        .unwrap_or_default()
}

/// What a model said in one response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedResponse {
    /// The text blocks, joined; empty when there were none.
    pub text: String,
    /// Client tool calls in the order sent; server-side tools are left out.
    pub calls: Vec<ParsedCall>,
    /// Why the model stopped, as the server wrote it (`finish_reason`,
    /// `stop_reason`, `finishReason`), when it said.
    pub finish_reason: Option<String>,
    /// The reply was cut by the output token limit: what it holds is not
    /// what the model meant to send, so it is not the model's mistake.
    pub truncated: bool,
    /// The reasoning the format shows (a summary, thinking text), joined.
    pub reasoning: String,
    /// Tokens, from the reply's usage block (zero when it has none).
    pub usage: Usage,
}

impl ParsedResponse {
    /// Set the stop reason; `limit` is the format's word for the token limit.
    pub(crate) fn stopped(&mut self, reason: Option<&str>, limit: &str) {
        self.truncated = reason == Some(limit);
        self.finish_reason = reason.map(str::to_owned);
    }
}

/// Add `part` to `text` on a line of its own.
pub(crate) fn append_line(text: &mut String, part: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(part);
}

/// A body that is not a usable response at all. Problems with a single call
/// are not errors: they become `ParsedCall::Malformed`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResponseError {
    /// A 2xx answer with nothing of a reply in it: an empty body (a
    /// server that failed after sending the head of a stream), or a
    /// stream with no output and no token count (a proxy that turned
    /// such a failure into an empty stream).
    #[error(
        "the reply is empty: no output and no output token counted (a server that failed after answering 2xx, or a proxy that hid its error)"
    )]
    Empty,
    #[error("the response body is not JSON: {message} (line {line}, column {column})")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("not a response of the {} API: {reason}", provider.api_name())]
    NotAResponse { provider: Provider, reason: String },
    #[error("the {} API answered with an error: {message}", provider.api_name())]
    Api { provider: Provider, message: String },
}

/// Deserialize a body: by sonic-rs, which reads a reply in about half of
/// serde_json's time, where it reads the body as serde_json does; else,
/// and to word every error, by serde_json, UTF-8 checked once for the
/// whole body so that serde_json need not check every string again.
pub(crate) fn from_body<'a, T: serde::Deserialize<'a>>(
    provider: Provider,
    body: &'a [u8],
) -> Result<T, ResponseError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ResponseError::Empty);
    }
    if sonic_reads_as_serde_json(body)
        && let Ok(value) = sonic_rs::from_slice(body)
    {
        return Ok(value);
    }
    let text = std::str::from_utf8(body).map_err(|e| {
        let line = 1 + body[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        let column = e.valid_up_to()
            - body[..e.valid_up_to()]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |p| p + 1)
            + 1;
        ResponseError::NotJson {
            line,
            column,
            message: "invalid UTF-8".to_owned(),
        }
    })?;
    serde_json::from_str(text).map_err(|e| ResponseError::from_serde(provider, &e))
}

/// serde_json's limit of nesting (sonic-rs allows 255 levels, too deep for
/// a thread's stack in a debug build).
pub(crate) const NESTING_LIMIT: usize = 128;

/// Whether sonic-rs reads `body` as serde_json would: it holds no `-0`
/// (sonic-rs drops the sign of a negative zero) and too few brackets to
/// nest past serde_json's limit. Both take a few nanoseconds per hundred
/// bytes of a reply.
pub(crate) fn sonic_reads_as_serde_json(body: &[u8]) -> bool {
    let mut openings = 0;
    // Counted a chunk at a time in bytes, which the compiler vectorizes;
    // `[` and `{` are the only bytes that are `{` with bit 5 set.
    for chunk in body.chunks(255) {
        let in_chunk: u8 = chunk
            .iter()
            .map(|&byte| u8::from(byte | 0x20 == b'{'))
            .sum();
        openings += usize::from(in_chunk);
    }
    // A number that starts `-0` is followed by no digit (`-0`, `-0.0`,
    // `-0.5`); a date's `-05` is not one.
    let may_be_negative_zero = |at: usize| {
        body.get(at + 1) == Some(&b'0') && !body.get(at + 2).is_some_and(u8::is_ascii_digit)
    };
    openings <= NESTING_LIMIT && !memchr::memchr_iter(b'-', body).any(may_be_negative_zero)
}

impl ResponseError {
    fn from_serde(provider: Provider, error: &serde_json::Error) -> Self {
        if error.is_syntax() || error.is_eof() || error.is_io() {
            let text = error.to_string();
            let message = text
                .rfind(" at line ")
                .map_or(text.as_str(), |at| &text[..at]);
            ResponseError::NotJson {
                line: error.line(),
                column: error.column(),
                message: message.to_owned(),
            }
        } else {
            ResponseError::NotAResponse {
                provider,
                reason: error.to_string(),
            }
        }
    }
}

/// Makes ids for calls that came without one: stable (the same body gives
/// the same ids) and distinct within a response.
pub(crate) struct IdMaker<'a> {
    body: &'a [u8],
    hash: Option<u64>,
}

impl<'a> IdMaker<'a> {
    pub(crate) fn new(body: &'a [u8]) -> Self {
        IdMaker { body, hash: None }
    }

    pub(crate) fn id_for(&mut self, given: Option<&str>, index: usize) -> String {
        match given {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => {
                let hash = *self.hash.get_or_insert_with(|| fnv1a(self.body));
                format!("{GENERATED_ID_PREFIX}{hash:016x}_{index}")
            }
        }
    }
}

pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Build a call from its parts, or say why it is malformed.
pub(crate) fn make_call(
    id: String,
    name: Option<&str>,
    arguments: WireArguments<'_>,
) -> ParsedCall {
    let name_text = name.unwrap_or_default().to_owned();
    let malformed = |raw_arguments: String, problem: String| {
        ParsedCall::Malformed(crate::call::MalformedCall {
            id: id.clone(),
            name: name_text.clone(),
            raw_arguments,
            problem,
        })
    };
    let sent = match arguments {
        WireArguments::Missing => SentArguments::Object(Arguments::default()),
        WireArguments::Sent(sent) => sent,
        WireArguments::Value(value) => SentArguments::from(value),
        WireArguments::Text(text) if text.trim().is_empty() => {
            SentArguments::Object(Arguments::default())
        }
        WireArguments::Text(text) => match serde_json::from_str::<SentArguments>(text) {
            Ok(sent) => sent,
            Err(error) => {
                return malformed(
                    text.to_owned(),
                    format!("the arguments are not valid JSON ({error}); send a JSON object"),
                );
            }
        },
    };
    if name.is_none_or(str::is_empty) {
        let raw_arguments = match &sent {
            SentArguments::Object(arguments) => arguments.to_string(),
            SentArguments::Other(other) => other.to_string(),
        };
        return malformed(raw_arguments, "the call has no tool name".to_owned());
    }
    let arguments = match sent {
        SentArguments::Object(arguments) => arguments,
        SentArguments::Other(other) => {
            return malformed(
                other.to_string(),
                format!(
                    "the arguments must be a JSON object, not {}",
                    json_type_name(&other)
                ),
            );
        }
    };
    ParsedCall::Ok(ToolCall {
        id,
        name: name_text,
        arguments,
    })
}

/// Arguments as they arrive: a JSON string to decode (OpenAI), a JSON value
/// (Anthropic, Gemini), or nothing at all.
pub(crate) enum WireArguments<'a> {
    Missing,
    Text(&'a str),
    /// Read straight from the body.
    Sent(SentArguments),
    /// Taken from a value already read.
    Value(Value),
}

/// Arguments read straight from a body: none sent is no arguments.
impl From<Option<SentArguments>> for WireArguments<'_> {
    fn from(sent: Option<SentArguments>) -> Self {
        sent.map_or(WireArguments::Missing, WireArguments::Sent)
    }
}

pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The arguments of a malformed call as they would arrive on the wire.
fn raw_arguments_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// A call's arguments as an object member (Anthropic `input`, Gemini
/// `args`): a malformed call's raw text as JSON if it is, else a string.
pub(crate) fn write_arguments(call: &ParsedCall, out: &mut Vec<u8>) {
    match call {
        ParsedCall::Ok(call) => call.arguments.write_json(out),
        ParsedCall::Malformed(call) => {
            crate::json_writer::write_value(out, &raw_arguments_value(&call.raw_arguments));
        }
    }
}

/// The `message` of a provider's error object, or the object itself.
pub(crate) fn api_error_message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned)
}

/// Content never goes back empty.
pub(crate) fn non_empty(content: &str) -> &str {
    if content.is_empty() {
        EMPTY_RESULT_PLACEHOLDER
    } else {
        content
    }
}
