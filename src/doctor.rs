//! `doctor`: probes a live endpoint the way a careful engineer would
//! before trusting a run against it, and says what it found with the
//! evidence. A self-correction run means something only when the model
//! can call a tool and is shown what its calls got back; many compatible
//! servers drop tool results from the prompt without a word. Where the
//! server reports usage, "shown" is read off the prompt tokens (a longer
//! result must cost more), which does not depend on how capable the
//! model is; a nonce the model repeats is further evidence.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::call::{Arguments, ErrorKind, FunctionSpec, ParsedCall, ToolCall, ToolResult};
use crate::model::ModelFile;
use crate::model::live::{ApiKey, api_key};
use crate::provider::stream;
use crate::provider::{
    ApiSettings, Ask, Conversation, ParsedResponse, Provider, ResponseError, ToolChoice,
};
use crate::transport::{ApiRequest, Transport, TransportError};

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Yes,
    No,
    /// The probe could not tell (the evidence says why).
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::No => "no",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub probe: String,
    pub verdict: Verdict,
    pub evidence: String,
}

/// What doctor found of one model's endpoint (doctor's `--json`, and
/// `doctor-<model>.json` in a run folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub model: String,
    pub endpoint: String,
    /// The model asks for streamed replies: then a run needs streaming
    /// too, and a stream that fails is a reason not to trust the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streams: bool,
    pub findings: Vec<Finding>,
}

/// The probes a self-correction run cannot do without.
pub const ESSENTIAL: [&str; 3] = [TOOL_CALL, RESULTS_SHOWN, ERRORS_SHOWN];

pub const TOOL_CALL: &str = "tool call";
pub const RESULTS_SHOWN: &str = "tool results shown";
pub const ERRORS_SHOWN: &str = "error results shown";
const PARALLEL: &str = "parallel calls";
const REQUIRED: &str = "tool_choice required";
const NONE: &str = "tool_choice none";
const TRUNCATION: &str = "finish reason on truncation";
const USAGE: &str = "usage reported";
const STREAMING: &str = "streaming";

impl Diagnosis {
    pub fn verdict(&self, probe: &str) -> Option<Verdict> {
        self.findings
            .iter()
            .find(|f| f.probe == probe)
            .map(|f| f.verdict)
    }

    /// The essential probes that did not say yes (streaming too, for a
    /// model that streams): a self-correction run against this endpoint
    /// would not measure what it claims.
    pub fn missing(&self) -> Vec<&Finding> {
        self.findings
            .iter()
            .filter(|f| {
                let essential =
                    ESSENTIAL.contains(&f.probe.as_str()) || (self.streams && f.probe == STREAMING);
                essential && f.verdict != Verdict::Yes
            })
            .collect()
    }

    /// The findings as a table for the terminal.
    pub fn table(&self) -> String {
        let mut text = format!("doctor: {} at {}\n", self.model, self.endpoint);
        let width = self
            .findings
            .iter()
            .map(|f| f.probe.len())
            .max()
            .unwrap_or(0);
        for finding in &self.findings {
            let _ = writeln!(
                text,
                "  {:width$}  {:7}  {}",
                finding.probe,
                finding.verdict.as_str(),
                finding.evidence
            );
        }
        match self.missing().as_slice() {
            [] => text.push_str("A self-correction run against this endpoint can be trusted.\n"),
            missing => {
                let names: Vec<&str> = missing.iter().map(|f| f.probe.as_str()).collect();
                let _ = writeln!(
                    text,
                    "A self-correction run against this endpoint would not measure what it claims: {} not confirmed.",
                    names.join(", ")
                );
            }
        }
        text
    }

    /// Write the findings as JSON to `path`.
    pub fn save(&self, path: &std::path::Path) -> Result<(), DoctorError> {
        let text = serde_json::to_string_pretty(self).expect("a diagnosis serializes");
        std::fs::write(path, text + "\n").map_err(|source| DoctorError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// A warning for each probe that says a self-correction run against
    /// this endpoint would not measure what it claims.
    /// `streams`: the model asks for streamed replies, which the endpoint
    /// may not give.
    pub fn warnings(&self, streams: bool) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .missing()
            .into_iter()
            .map(|finding| {
                format!(
                    "model {:?}: doctor says {}: {} ({}); its self-correction figures are not feedback the model saw",
                    self.model,
                    finding.probe,
                    finding.verdict.as_str(),
                    finding.evidence
                )
            })
            .collect();
        let streaming = self.findings.iter().find(|f| f.probe == STREAMING);
        if let Some(finding) =
            streaming.filter(|f| streams && !self.streams && f.verdict == Verdict::No)
        {
            warnings.push(format!(
                "model {:?} asks for streamed replies (\"stream\": true), and doctor says streaming: no ({}); expect lost trials",
                self.model, finding.evidence
            ));
        }
        warnings
    }
}

/// Why doctor could not probe at all.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error(
        "model {model:?}: doctor probes live models (kind openai, openai-responses, anthropic or gemini)"
    )]
    NotLive { model: String },
    #[error("model {model:?}: {problem}")]
    Setup { model: String, problem: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a doctor result: {source}", path.display())]
    NotADiagnosis {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
}

/// Probe the endpoint of a live model file on a runtime of its own.
pub fn diagnose_blocking(file: &ModelFile) -> Result<Diagnosis, DoctorError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DoctorError::Setup {
            model: file.name.clone(),
            problem: format!("cannot start the probes: {e}"),
        })?;
    runtime.block_on(diagnose(file))
}

/// The diagnosis of `file` for a run in `out`: the one cached there
/// (`doctor-<model>.json`), or with `probe_now` a new probe, cached; none
/// when there is none and no probe was asked for.
pub fn before_run(
    file: &ModelFile,
    out: &std::path::Path,
    probe_now: bool,
) -> Result<Option<Diagnosis>, DoctorError> {
    let cached = out.join(format!("doctor-{}.json", file.name));
    let diagnosis: Diagnosis = match std::fs::read(&cached) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|source| DoctorError::NotADiagnosis {
                path: cached.clone(),
                source,
            })?
        }
        Err(_) if probe_now => {
            let diagnosis = diagnose_blocking(file)?;
            diagnosis.save(&cached)?;
            diagnosis
        }
        Err(_) => return Ok(None),
    };
    Ok(Some(diagnosis))
}

/// The word a probe hides in a tool result, for the model to repeat.
const NONCE: &str = "PLUM-7391";
const TOOL: &str = "lookup_word";
const SYSTEM: &str = "You are a helpful assistant. Use the tools when asked.";

/// A result long enough that showing it costs many prompt tokens.
fn long_result(error: bool) -> String {
    let mut text = if error {
        format!("Error: the key alpha is retired; its word is now {NONCE}. ")
    } else {
        format!("The word for key alpha is {NONCE}. ")
    };
    for i in 0..40 {
        let _ = write!(text, "Archive entry {i} lists no other word for this key. ");
    }
    text
}

struct Prober {
    provider: Provider,
    settings: ApiSettings,
    key: Option<ApiKey>,
    transport: Transport,
    tools: Vec<FunctionSpec>,
}

/// What came back for one probe's request.
struct Answer {
    json: Value,
    parsed: Result<ParsedResponse, ResponseError>,
}

/// Probe the endpoint of a live model file.
pub async fn diagnose(file: &ModelFile) -> Result<Diagnosis, DoctorError> {
    let (Some(provider), Some(settings)) = (file.kind.live_provider(), &file.api) else {
        return Err(DoctorError::NotLive {
            model: file.name.clone(),
        });
    };
    let setup = |problem: String| DoctorError::Setup {
        model: file.name.clone(),
        problem,
    };
    settings.check().map_err(|e| setup(e.to_string()))?;
    let mut settings = settings.clone();
    // Without it some servers only answer in text (llama-cpp-python).
    settings.tool_choice.get_or_insert(ToolChoice::Auto);
    // Every probe reads a whole reply; the streaming probe asks for its
    // own stream.
    settings.stream = false;
    let prober = Prober {
        provider,
        key: api_key(&settings).map_err(|e| setup(e.to_string()))?,
        transport: Transport::new(&settings.transport()).map_err(|e| setup(e.to_string()))?,
        settings,
        tools: vec![FunctionSpec {
            name: TOOL.to_owned(),
            description: "Look up the word stored under a key.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {"key": {"type": "string", "description": "The key, e.g. alpha."}},
                "required": ["key"]
            }),
        }],
    };
    let endpoint = prober
        .provider
        .request(&prober.ask_of(&Conversation::new(provider, &[]), &prober.settings))
        .url;
    let mut findings = Vec::new();
    let (call, usage) = prober.tool_call().await;
    findings.push(call);
    findings.push(prober.shown(RESULTS_SHOWN, false).await);
    findings.push(prober.shown(ERRORS_SHOWN, true).await);
    findings.push(prober.parallel().await);
    findings.push(prober.choice(REQUIRED, ToolChoice::Required).await);
    findings.push(prober.choice(NONE, ToolChoice::None).await);
    findings.push(prober.truncation().await);
    findings.push(usage);
    findings.push(prober.streaming().await);
    Ok(Diagnosis {
        model: file.name.clone(),
        endpoint: crate::transport::redact_url(&endpoint),
        streams: file.api.as_ref().is_some_and(|api| api.stream),
        findings,
    })
}

fn finding(probe: &str, verdict: Verdict, evidence: impl Into<String>) -> Finding {
    Finding {
        probe: probe.to_owned(),
        verdict,
        evidence: evidence.into(),
    }
}

impl Prober {
    fn ask_of<'a>(&'a self, conversation: &'a Conversation, settings: &'a ApiSettings) -> Ask<'a> {
        Ask {
            settings,
            key: self.key.as_ref().map(ApiKey::expose),
            conversation,
            tools: &self.tools,
        }
    }

    fn opening(&self, user: &str) -> Conversation {
        Conversation::new(
            self.provider,
            &[
                json!({"role": "system", "content": SYSTEM}),
                json!({"role": "user", "content": user}),
            ],
        )
    }

    async fn send(
        &self,
        conversation: &Conversation,
        settings: &ApiSettings,
    ) -> Result<Answer, TransportError> {
        let request: ApiRequest = self.provider.request(&self.ask_of(conversation, settings));
        let response = self.transport.send(&request).await?;
        let json: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        let parsed = self.provider.parse_response(&response.body);
        Ok(Answer { json, parsed })
    }

    /// A plain call, and whether the reply reports usage.
    async fn tool_call(&self) -> (Finding, Finding) {
        let conversation =
            self.opening("Look up the word for key alpha with the lookup_word tool.");
        let answer = match self.send(&conversation, &self.settings).await {
            Ok(answer) => answer,
            Err(error) => {
                return (
                    finding(
                        TOOL_CALL,
                        Verdict::No,
                        format!("the request failed: {error}"),
                    ),
                    finding(USAGE, Verdict::Unknown, "no reply to read"),
                );
            }
        };
        let usage = self.provider.usage(&answer.json);
        let usage = if usage.input_tokens > 0 {
            finding(
                USAGE,
                Verdict::Yes,
                format!(
                    "{} input, {} output tokens",
                    usage.input_tokens, usage.output_tokens
                ),
            )
        } else {
            finding(USAGE, Verdict::No, "the reply has no token counts")
        };
        let call = match &answer.parsed {
            Err(error) => finding(TOOL_CALL, Verdict::No, error.to_string()),
            Ok(parsed) => match parsed.calls.first() {
                Some(ParsedCall::Ok(call)) if call.name == TOOL => finding(
                    TOOL_CALL,
                    Verdict::Yes,
                    format!("{}({})", call.name, call.arguments),
                ),
                Some(other) => finding(
                    TOOL_CALL,
                    Verdict::No,
                    format!("a call toolgauge cannot use: {:?}", other.name()),
                ),
                None => finding(TOOL_CALL, Verdict::No, said(parsed)),
            },
        };
        (call, usage)
    }

    /// The conversation after a call of lookup_word answered with `content`.
    fn after_result(&self, content: &str, error: bool) -> Conversation {
        let mut conversation = self.opening(
            "Call lookup_word with key alpha, then answer with the word it gives, and nothing else.",
        );
        let call = ParsedCall::Ok(ToolCall {
            id: "call_doctor_1".to_owned(),
            name: TOOL.to_owned(),
            arguments: Arguments::from_map(Map::from_iter([("key".to_owned(), json!("alpha"))])),
        });
        let reply = self
            .provider
            .format_response("", std::slice::from_ref(&call));
        let parsed = ParsedResponse {
            calls: vec![call],
            ..ParsedResponse::default()
        };
        let returned = self.provider.format_results(&[ToolResult {
            call_id: "call_doctor_1".to_owned(),
            name: TOOL.to_owned(),
            content: content.to_owned(),
            error_kind: error.then_some(ErrorKind::Runtime),
            started: Default::default(),
            elapsed: Default::default(),
        }]);
        conversation.push_turn(&reply, &parsed, returned);
        conversation
    }

    /// Is a tool result (an error result) shown to the model? The same
    /// conversation with a short and a long result: a server that shows
    /// it counts more prompt tokens for the long one.
    async fn shown(&self, probe: &str, error: bool) -> Finding {
        let short = if error { "Error: not found." } else { "ok" };
        let long = long_result(error);
        let (short_answer, long_answer) = match (
            self.send(&self.after_result(short, error), &self.settings)
                .await,
            self.send(&self.after_result(&long, error), &self.settings)
                .await,
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                return finding(
                    probe,
                    Verdict::No,
                    format!("a conversation with a tool result was refused: {e}"),
                );
            }
        };
        let repeated = long_answer
            .parsed
            .as_ref()
            .is_ok_and(|p| p.text.to_uppercase().contains(NONCE));
        let (few, many) = (
            self.provider.usage(&short_answer.json).input_tokens,
            self.provider.usage(&long_answer.json).input_tokens,
        );
        let words = long.split_whitespace().count();
        if few > 0 && many > 0 {
            let grown = many.saturating_sub(few);
            return if grown * 4 >= words as u64 {
                finding(
                    probe,
                    Verdict::Yes,
                    format!(
                        "prompt tokens grew by {grown} with a {words}-word result{}",
                        if repeated {
                            "; the model repeated the word in it"
                        } else {
                            ""
                        }
                    ),
                )
            } else {
                finding(
                    probe,
                    Verdict::No,
                    format!(
                        "{few} prompt tokens with a 1-line result and {many} with a {words}-word one: the server does not put the result in the prompt"
                    ),
                )
            };
        }
        // No token counts: only the model's own words can tell.
        if repeated {
            return finding(
                probe,
                Verdict::Yes,
                format!("the model repeated {NONCE} from the result"),
            );
        }
        let control = self
            .send(
                &self.opening(&format!("The word is {NONCE}. Answer with the word only.")),
                &self.settings,
            )
            .await;
        match control {
            Ok(answer)
                if answer
                    .parsed
                    .as_ref()
                    .is_ok_and(|p| p.text.to_uppercase().contains(NONCE)) =>
            {
                finding(
                    probe,
                    Verdict::No,
                    format!(
                        "the model repeats {NONCE} from a user message but not from a tool result"
                    ),
                )
            }
            _ => finding(
                probe,
                Verdict::Unknown,
                "no token counts, and the model does not repeat a word from a user message either",
            ),
        }
    }

    async fn parallel(&self) -> Finding {
        let mut settings = self.settings.clone();
        settings.parallel_tool_calls = Some(true);
        let conversation = self.opening(
            "Look up the words for keys alpha and beta: call lookup_word twice in one reply.",
        );
        match self.send(&conversation, &settings).await {
            Err(error) => finding(PARALLEL, Verdict::No, format!("refused: {error}")),
            Ok(Answer {
                parsed: Err(error), ..
            }) => finding(PARALLEL, Verdict::No, error.to_string()),
            Ok(Answer {
                parsed: Ok(parsed), ..
            }) => {
                let calls = parsed.calls.len();
                let verdict = if calls >= 2 {
                    Verdict::Yes
                } else {
                    Verdict::No
                };
                finding(PARALLEL, verdict, format!("{calls} call(s) in one reply"))
            }
        }
    }

    async fn choice(&self, probe: &str, choice: ToolChoice) -> Finding {
        let mut settings = self.settings.clone();
        settings.tool_choice = Some(choice);
        let conversation = self.opening("Look up the word for key alpha.");
        let wants_call = choice == ToolChoice::Required;
        match self.send(&conversation, &settings).await {
            Err(error) => finding(probe, Verdict::No, format!("refused: {error}")),
            Ok(Answer {
                parsed: Err(error), ..
            }) => finding(probe, Verdict::No, error.to_string()),
            Ok(Answer {
                parsed: Ok(parsed), ..
            }) => {
                let called = !parsed.calls.is_empty();
                let verdict = if called == wants_call {
                    Verdict::Yes
                } else {
                    Verdict::No
                };
                let evidence = if called {
                    format!("{} call(s)", parsed.calls.len())
                } else {
                    said(&parsed)
                };
                finding(probe, verdict, evidence)
            }
        }
    }

    /// Asked for a stream (`"stream": true`), does the server send
    /// server-sent events that assemble into the call?
    async fn streaming(&self) -> Finding {
        let mut settings = self.settings.clone();
        settings.stream = true;
        let conversation =
            self.opening("Look up the word for key alpha with the lookup_word tool.");
        let request = self
            .provider
            .request(&self.ask_of(&conversation, &settings));
        let opened = match self.transport.open(&request).await {
            Ok(opened) => opened,
            Err(error) => return finding(STREAMING, Verdict::No, format!("refused: {error}")),
        };
        let status = opened.status;
        let chunks = opened.response.bytes_stream();
        let deadline = Some(opened.sent + Duration::from_millis(settings.timeout_ms));
        let received = stream::read(self.provider, chunks, opened.sent, deadline, |_, _| {}).await;
        // Events that stall, break off or carry an error are no stream to
        // trust, whatever they assembled into.
        let evidence = match (&received.assembled, received.failed_as_a_stream()) {
            (Some(_), Some(failure)) => format!("HTTP {status}: {}", failure.message),
            (Some(_), None) => String::new(),
            (None, _) if received.raw.is_empty() => format!(
                "HTTP {status} and then nothing: the server failed once the stream began (0 bytes)"
            ),
            (None, _) => format!(
                "HTTP {status}: the reply is no stream of server-sent events ({} bytes)",
                received.raw.len()
            ),
        };
        let Some(assembled) = received.assembled.filter(|_| evidence.is_empty()) else {
            return finding(STREAMING, Verdict::No, evidence);
        };
        let events = assembled.arrivals.len();
        let ms = |d: Duration| d.as_millis();
        match self
            .provider
            .parse_response(assembled.body.to_string().as_bytes())
        {
            Ok(parsed) if parsed.calls.iter().any(|c| c.name() == TOOL) => finding(
                STREAMING,
                Verdict::Yes,
                format!(
                    "{events} events, assembled into a call of {TOOL}, complete at {} ms (first token at {} ms)",
                    assembled.timing.calls.first().map_or(0, |d| ms(*d)),
                    assembled.timing.first_token.map_or(0, ms),
                ),
            ),
            Ok(parsed) => finding(
                STREAMING,
                Verdict::Unknown,
                format!("{events} events; {}", said(&parsed)),
            ),
            Err(error) => finding(STREAMING, Verdict::No, error.to_string()),
        }
    }

    async fn truncation(&self) -> Finding {
        let mut settings = self.settings.clone();
        settings.max_tokens = Some(8);
        settings.tool_choice = Some(ToolChoice::None);
        let conversation = self.opening("Write a story of at least 200 words about the sea.");
        match self.send(&conversation, &settings).await {
            Err(error) => finding(TRUNCATION, Verdict::Unknown, format!("refused: {error}")),
            Ok(Answer {
                parsed: Err(error), ..
            }) => finding(TRUNCATION, Verdict::Unknown, error.to_string()),
            Ok(Answer {
                parsed: Ok(parsed), ..
            }) => {
                let reason = parsed.finish_reason.as_deref().unwrap_or("none given");
                let verdict = if parsed.truncated {
                    Verdict::Yes
                } else {
                    Verdict::No
                };
                finding(
                    TRUNCATION,
                    verdict,
                    format!("max_tokens 8: finish reason {reason}"),
                )
            }
        }
    }
}

/// What a reply without a call said, shortened.
fn said(parsed: &ParsedResponse) -> String {
    if parsed.text.is_empty() {
        "no call and no text".to_owned()
    } else {
        format!(
            "no call; it said {:?}",
            crate::excerpt::cut(&parsed.text, 60)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_that_streams_is_warned_when_its_endpoint_does_not() {
        let diagnosis = Diagnosis {
            model: "m".into(),
            endpoint: "http://x".into(),
            streams: false,
            findings: vec![
                finding(TOOL_CALL, Verdict::Yes, "f()"),
                finding(RESULTS_SHOWN, Verdict::Yes, "-"),
                finding(ERRORS_SHOWN, Verdict::Yes, "-"),
                finding(STREAMING, Verdict::No, "HTTP 200: 0 bytes"),
            ],
        };
        assert!(diagnosis.warnings(false).is_empty());
        let warnings = diagnosis.warnings(true);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("streaming: no (HTTP 200: 0 bytes)"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_streaming_model_whose_streams_fail_is_not_trusted() {
        let diagnosis = Diagnosis {
            model: "m".into(),
            endpoint: "http://x".into(),
            streams: true,
            findings: vec![
                finding(TOOL_CALL, Verdict::Yes, "f()"),
                finding(RESULTS_SHOWN, Verdict::Yes, "-"),
                finding(ERRORS_SHOWN, Verdict::Yes, "-"),
                finding(
                    STREAMING,
                    Verdict::No,
                    "HTTP 200: the stream ended before its last event",
                ),
            ],
        };
        let table = diagnosis.table();
        assert!(!table.contains("can be trusted"), "{table}");
        assert!(table.contains("streaming not confirmed"), "{table}");
        assert_eq!(diagnosis.warnings(true).len(), 1);
    }
}
