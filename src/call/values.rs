//! The values that flow between stages: a call, its result, the outcome
//! vocabulary (each kind written once), usage and prices.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Arguments;

/// One well-formed tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Arguments,
}

/// A call the model made that could not be read: broken JSON arguments, no
/// name, or arguments that are not an object. It is answered with an error
/// result so the model can correct it; the other calls still run.
#[derive(Debug, Clone, PartialEq)]
pub struct MalformedCall {
    pub id: String,
    /// The name as sent; empty when the model sent none.
    pub name: String,
    /// The arguments as sent (the raw string for OpenAI), for the log.
    pub raw_arguments: String,
    /// What is wrong, worded for the model.
    pub problem: String,
}

/// One entry of a parsed response, in the order the model sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedCall {
    Ok(ToolCall),
    Malformed(MalformedCall),
}

impl ParsedCall {
    pub fn id(&self) -> &str {
        match self {
            ParsedCall::Ok(call) => &call.id,
            ParsedCall::Malformed(call) => &call.id,
        }
    }

    pub(crate) fn id_mut(&mut self) -> &mut String {
        match self {
            ParsedCall::Ok(call) => &mut call.id,
            ParsedCall::Malformed(call) => &mut call.id,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ParsedCall::Ok(call) => &call.name,
            ParsedCall::Malformed(call) => &call.name,
        }
    }

    /// The arguments as JSON text, as a model sends them back: a good
    /// call's object written out, a malformed one's text as it came.
    pub fn arguments_text(&self) -> String {
        match self {
            ParsedCall::Ok(call) => call.arguments.to_string(),
            ParsedCall::Malformed(call) => call.raw_arguments.clone(),
        }
    }
}

/// Why a call failed: the [`Failure`]s a call's result can carry, named
/// as they are (`snake_case` of the variant, in logs and reports alike).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// The call itself could not be read.
    Parse,
    /// No tool has that name.
    UnknownTool,
    /// The arguments break the tool's schema.
    Validation,
    /// The tool ran and failed.
    Runtime,
    /// The tool did not finish within its timeout.
    Timeout,
    /// A path pointed outside the sandbox; nothing was touched.
    Sandbox,
    /// The tool could not be run at all (its command does not start, its
    /// endpoint or MCP server is gone): not the model's doing, and the
    /// trial is lost to infrastructure.
    ToolUnavailable,
    /// The tool answered with output that breaks its own `outputSchema`
    /// (or declared one and gave no structured content): the tool's
    /// fault, never the model's; the trial is lost to infrastructure.
    BadOutput,
    /// Not run: the reply was cut by the output token limit before the
    /// call was complete.
    Truncated,
}

impl ErrorKind {
    /// Its name: the failure it counts as in reports.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one call, success or error, as it goes back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool name the call used (Gemini answers by name).
    pub name: String,
    /// Never empty: an error carries its text, an empty success a placeholder.
    pub content: String,
    /// `Some` exactly when the result is an error.
    pub error_kind: Option<ErrorKind>,
    /// When the call started, measured from the start of its batch.
    pub started: Duration,
    /// How long the call ran (zero for calls rejected before execution).
    pub elapsed: Duration,
    /// Images the tool returned, for a model that takes them (`"images":
    /// true`); the content names each in a line whatever the model.
    pub images: Vec<Image>,
}

/// An image a tool returned: its type and its bytes in base64, as MCP
/// and every provider carry them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub mime_type: String,
    pub data: std::sync::Arc<str>,
}

impl Image {
    /// The image as a `data:` URL, as OpenAI's formats take it.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

impl ToolResult {
    pub fn is_error(&self) -> bool {
        self.error_kind.is_some()
    }
}

/// Why an attempt's calls do not match, beyond its failure kinds: BFCL's
/// error types (`wrong_count`, `value_error:string`, ...), or a call
/// written as text that the server did not read as a call.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[strum(serialize_all = "snake_case")]
pub enum Reason {
    WrongCount,
    WrongFuncName,
    MissingRequired,
    UnexpectedParam,
    MissingOptional,
    TypeError,
    #[strum(serialize = "value_error:string")]
    ValueString,
    #[strum(serialize = "value_error:list")]
    ValueList,
    #[strum(serialize = "value_error:dict")]
    ValueDict,
    #[strum(serialize = "value_error:others")]
    ValueOthers,
    CannotFindMatch,
    /// A call whose arguments could not be read at all.
    DecoderFailed,
    /// The reply made no call but wrote one as text (a tag, or a JSON
    /// object naming a function and its arguments).
    CallAsText,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(text: &str) -> Option<Reason> {
        text.parse().ok()
    }
}

/// Why an attempt failed: a call's error, a reply that could not be read,
/// calls that did not match what was expected, or a request that never got
/// an answer. Each kind is written here once: its name (`snake_case` of the
/// variant: the failure columns of every report, in this order) and, by
/// [`Failure::party`], whose failure it is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Failure {
    Parse,
    UnknownTool,
    Validation,
    Runtime,
    Timeout,
    Sandbox,
    /// The reply was not a response of the model's wire format (an empty
    /// object, an HTML page, an API error): the server's doing, not the
    /// model's, and the trial is lost to infrastructure.
    BadResponse,
    /// A call was made where none was wanted.
    UnexpectedCall,
    /// Fewer calls than wanted.
    MissingCall,
    /// The calls do not match what was wanted.
    WrongCall,
    /// The request failed after its retries: not the model's failure, and
    /// the trial is counted apart.
    TransportError,
    /// A task: a call the task forbids was made (the task fails at once).
    ForbiddenCall,
    /// A task ended with a milestone not reached.
    MilestoneMissed,
    /// A task ended with files or store entries not as required.
    WrongFinalState,
    /// A task's final answer does not say what it must.
    WrongAnswer,
    /// A task used every turn it had without answering.
    TurnLimit,
    /// The reply was cut by the output token limit (`max_tokens`): not
    /// the model's mistake, and never fed back as one.
    Truncated,
    /// A tool could not be run at all: the trial is lost to
    /// infrastructure.
    ToolUnavailable,
    /// A tool's output broke its own `outputSchema`: the trial is lost to
    /// infrastructure (the tool's fault).
    BadOutput,
    /// A conversation's simulated user failed (it never said it was done,
    /// repeated its instructions to the model, said nothing, or its model
    /// could not be reached): not the agent's doing, and the trial is
    /// counted apart.
    UserSimulator,
    /// A task's judging model failed (tau2's NL judge did not answer in
    /// its format, or could not be reached): the trial's reward is
    /// unknown, and what the probe judged without it is kept.
    Judge,
}

/// Who caused a failure. Only the model's count against the model; a
/// trial that meets any other's is lost, and measures nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Party {
    /// The model (a tool's runtime error or timeout is told to the model,
    /// whose to recover from, as a verdict on its calls or task is).
    Model,
    /// A tool that could not run, or broke its own `outputSchema`.
    Tool,
    /// The model's server: a request that failed after its retries, or a
    /// reply that was not its wire format.
    Server,
    /// A conversation's simulated user.
    UserSimulator,
    /// A model that judges a conversation for a task's probe.
    Judge,
}

impl Failure {
    /// Every kind, in report order.
    pub fn all() -> impl Iterator<Item = Failure> {
        <Failure as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whose failure it is.
    pub fn party(self) -> Party {
        match self {
            Failure::TransportError | Failure::BadResponse => Party::Server,
            Failure::ToolUnavailable | Failure::BadOutput => Party::Tool,
            Failure::UserSimulator => Party::UserSimulator,
            Failure::Judge => Party::Judge,
            Failure::Parse
            | Failure::UnknownTool
            | Failure::Validation
            | Failure::Runtime
            | Failure::Timeout
            | Failure::Sandbox
            | Failure::UnexpectedCall
            | Failure::MissingCall
            | Failure::WrongCall
            | Failure::ForbiddenCall
            | Failure::MilestoneMissed
            | Failure::WrongFinalState
            | Failure::WrongAnswer
            | Failure::TurnLimit
            | Failure::Truncated => Party::Model,
        }
    }

    /// A failure of the infrastructure, not of the model: the request
    /// failed, the server's reply was not its format, a tool could not
    /// run, or the simulated user failed. A trial that meets one is lost.
    pub fn is_infrastructure(self) -> bool {
        self.party() != Party::Model
    }

    /// An error the model was told about in the results it got back, so
    /// that a later attempt is self-correction from feedback (the others:
    /// a verdict on calls that ran, or a missing call, get no error text).
    pub fn is_told(self) -> bool {
        matches!(
            self,
            Failure::Parse
                | Failure::UnknownTool
                | Failure::Validation
                | Failure::Runtime
                | Failure::Timeout
                | Failure::Sandbox
        )
    }

    /// The kind named `text` in a report.
    pub fn parse(text: &str) -> Option<Failure> {
        text.parse().ok()
    }

    /// Did a call fail, as opposed to a verdict on the calls or the task?
    pub fn is_call_error(self) -> bool {
        self.is_told()
    }

    /// Whether it has a column of its own in summary.csv,
    /// `failures_<name>`: infrastructure failures have the lost-trial
    /// columns (they count trials, not attempts), and a task's verdicts
    /// have the task columns.
    pub fn has_column(self) -> bool {
        self.is_told()
            || matches!(
                self,
                Failure::UnexpectedCall
                    | Failure::MissingCall
                    | Failure::WrongCall
                    | Failure::Truncated
            )
    }
}

impl From<ErrorKind> for Failure {
    fn from(kind: ErrorKind) -> Failure {
        match kind {
            ErrorKind::Parse => Failure::Parse,
            ErrorKind::UnknownTool => Failure::UnknownTool,
            ErrorKind::Validation => Failure::Validation,
            ErrorKind::Runtime => Failure::Runtime,
            ErrorKind::Timeout => Failure::Timeout,
            ErrorKind::Sandbox => Failure::Sandbox,
            ErrorKind::ToolUnavailable => Failure::ToolUnavailable,
            ErrorKind::BadOutput => Failure::BadOutput,
            ErrorKind::Truncated => Failure::Truncated,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tokens a reply used, from its usage block (zero for mock models).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    /// Every billed output token, reasoning included.
    pub output_tokens: u64,
    /// Of the output, the reasoning the format counts apart (OpenAI's
    /// `reasoning_tokens`, Gemini's `thoughtsTokenCount`; 0 where the
    /// format does not say).
    pub reasoning_tokens: u64,
    /// Of the input, the tokens read from the provider's prompt cache
    /// (OpenAI's `cached_tokens`, Anthropic's `cache_read_input_tokens`,
    /// Gemini's `cachedContentTokenCount`): billed at the cached price.
    pub cached_tokens: u64,
    /// Of the input, the tokens written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`): billed at the cache-write price.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// The share of input tokens read from the prompt cache; `None`
    /// without input.
    pub fn cached_share(&self) -> Option<f64> {
        (self.input_tokens > 0).then(|| self.cached_tokens as f64 / self.input_tokens as f64)
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// A call a stream shows complete, with its place among the reply's
/// calls: what runs early (`execute_early`).
pub type EarlyCall = (usize, ParsedCall);

/// When a streamed reply's parts came, each from the request's send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTiming {
    pub first_byte: Duration,
    /// The first text, reasoning or call part; `None`: the reply had none.
    pub first_token: Option<Duration>,
    /// Each call complete (a streaming client could run it), in call order.
    pub calls: Vec<Duration>,
    /// The last event.
    pub end: Duration,
}

/// US dollars per million input and output tokens, per million input
/// tokens read from the prompt cache (the input price when unset), and
/// per million written to it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    /// Unset: 1.25 times the input price, what Anthropic (the one format
    /// that reports writes) charges for its five-minute cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

/// Anthropic's price of a five-minute cache write, per input price.
pub const CACHE_WRITE_FACTOR: f64 = 1.25;

impl Prices {
    /// Every rate times `factor` (a batch API's discount); a cache write
    /// left unset keeps its 1.25 times the input.
    pub fn scaled(self, factor: f64) -> Prices {
        Prices {
            input_per_mtok: self.input_per_mtok * factor,
            output_per_mtok: self.output_per_mtok * factor,
            cached_input_per_mtok: self.cached_input_per_mtok.map(|p| p * factor),
            cache_write_per_mtok: self.cache_write_per_mtok.map(|p| p * factor),
        }
    }

    pub fn cost(&self, usage: Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let cached_price = self.cached_input_per_mtok.unwrap_or(self.input_per_mtok);
        let write_price = self
            .cache_write_per_mtok
            .unwrap_or(self.input_per_mtok * CACHE_WRITE_FACTOR);
        ((usage.input_tokens - cached - written) as f64 * self.input_per_mtok
            + cached as f64 * cached_price
            + written as f64 * write_price
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// A function as a provider's tools format declares it: what a model is
/// told of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_names_are_the_report_names_and_read_back() {
        for failure in Failure::all() {
            let json = serde_json::to_value(failure).unwrap();
            assert_eq!(json, failure.as_str());
            assert_eq!(Failure::parse(failure.as_str()), Some(failure));
        }
        // The log's errorKind (serde), the reports' names and the failure
        // a call error counts as agree.
        for kind in <ErrorKind as strum::IntoEnumIterator>::iter() {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(Failure::from(kind).as_str(), kind.as_str());
        }
        assert_eq!(Failure::parse("wrong"), None);
    }

    #[test]
    fn only_the_models_failures_are_the_models() {
        let lost: Vec<(&str, &str)> = Failure::all()
            .filter(|f| f.is_infrastructure())
            .map(|f| (f.as_str(), f.party().into()))
            .collect();
        assert_eq!(
            lost,
            [
                ("bad_response", "server"),
                ("transport_error", "server"),
                ("tool_unavailable", "tool"),
                ("bad_output", "tool"),
                ("user_simulator", "user_simulator"),
                ("judge", "judge"),
            ]
        );
    }

    #[test]
    fn arguments_are_an_object_written_in_the_order_sent() {
        let sent = r#"{"b":1,"a":{"y":[true,null],"x":"\"q\""}}"#;
        let value: Value = serde_json::from_str(sent).unwrap();
        let arguments = Arguments::try_from(value.clone()).unwrap();
        assert_eq!(arguments.to_string(), sent);
        assert_eq!(serde_json::to_string(&arguments).unwrap(), sent);
        assert_eq!(arguments, value);
        assert_eq!(arguments.get("b"), Some(&Value::from(1)));
        assert_eq!(arguments.len(), 2);
        for other in [
            Value::Null,
            Value::from(1),
            Value::from("{}"),
            Value::Array(vec![]),
        ] {
            assert_eq!(Arguments::try_from(other.clone()), Err(other));
        }
        assert!(Arguments::default().is_empty());
        assert_eq!(Arguments::default().to_string(), "{}");
    }
}
