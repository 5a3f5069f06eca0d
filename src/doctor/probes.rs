//! The probes themselves: one request (or a few) per property of the
//! endpoint, each read to a `Finding` with its evidence.

use std::time::Duration;

use serde_json::{Map, Value, json};

use std::fmt::Write as _;

use super::diagnosis::{Diagnosis, DoctorError, Finding, NO_ANSWER, Probe, Verdict, finding};
use crate::call::{Arguments, ErrorKind, FunctionSpec, ParsedCall, ToolCall, ToolResult};
use crate::model::ModelFile;
use crate::model::live::{ApiKey, api_key};
use crate::provider::stream;
use crate::provider::{
    ApiSettings, Ask, Conversation, ParsedResponse, Provider, ResponseError, ToolChoice,
};
use crate::transport::{ApiRequest, Transport, TransportError};
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
    /// A request got no answer at all (refused, timed out): the probes
    /// after it would learn nothing, and are not sent.
    silent: std::sync::atomic::AtomicBool,
}

/// What came back for one probe's request.
struct Answer {
    json: Value,
    parsed: Result<ParsedResponse, ResponseError>,
}

/// The endpoint a live model file's requests go to, its key left out (for
/// the heading printed before any probe); `None` for a model that is not
/// live.
pub fn endpoint(file: &ModelFile) -> Option<String> {
    let (provider, settings) = (file.provider(), file.api()?);
    let conversation = Conversation::new(provider, &[]);
    let ask = Ask {
        settings,
        key: None,
        conversation: &conversation,
        tools: &[],
        trial_seed: 0,
    };
    Some(crate::transport::redact_url(&provider.request(&ask).url))
}

/// Probe the endpoint of a live model file; `on_finding` hears each
/// finding as its probe ends. Once a request gets no answer at all, the
/// probes not yet sent are "unknown: the endpoint did not answer".
pub async fn diagnose(
    file: &ModelFile,
    on_finding: &mut dyn FnMut(&Finding),
) -> Result<Diagnosis, DoctorError> {
    let prober = Prober::new(file)?;
    let mut findings = Vec::new();
    let mut usage = None;
    for probe in Probe::all() {
        let found = if prober.silent.load(std::sync::atomic::Ordering::SeqCst) {
            finding(probe, Verdict::Unknown, NO_ANSWER)
        } else {
            match probe {
                Probe::ToolCall => {
                    let (call, reported) = prober.tool_call().await;
                    usage = Some(reported);
                    call
                }
                Probe::Usage => usage
                    .take()
                    .unwrap_or_else(|| finding(Probe::Usage, Verdict::Unknown, "no reply to read")),
                Probe::ResultsShown => prober.shown(Probe::ResultsShown, false).await,
                Probe::ErrorsShown => prober.shown(Probe::ErrorsShown, true).await,
                Probe::Parallel => prober.parallel().await,
                Probe::ChoiceRequired => {
                    prober
                        .choice(Probe::ChoiceRequired, ToolChoice::Required)
                        .await
                }
                Probe::ChoiceNone => prober.choice(Probe::ChoiceNone, ToolChoice::None).await,
                Probe::Truncation => prober.truncation().await,
                Probe::Streaming => prober.streaming().await,
            }
        };
        on_finding(&found);
        findings.push(found);
    }
    Ok(Diagnosis {
        model: file.name.clone(),
        endpoint: endpoint(file).unwrap_or_default(),
        streams: file.api().is_some_and(|api| api.stream),
        findings,
    })
}

impl Prober {
    fn new(file: &ModelFile) -> Result<Prober, DoctorError> {
        let (provider, Some(settings)) = (file.provider(), file.api()) else {
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
        // A silent endpoint is told from the first probe's tries, not
        // after four of every probe's.
        settings.max_attempts = settings.max_attempts.min(2);
        Ok(Prober {
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
            silent: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Note a request that got no answer at all.
    fn heard(&self, error: &TransportError) {
        if matches!(error, TransportError::Network { .. }) {
            self.silent.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Prober {
    fn ask_of<'a>(&'a self, conversation: &'a Conversation, settings: &'a ApiSettings) -> Ask<'a> {
        Ask {
            settings,
            key: self.key.as_ref().map(ApiKey::expose),
            conversation,
            tools: &self.tools,
            trial_seed: 0,
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
        let response = self
            .transport
            .send(&request)
            .await
            .inspect_err(|e| self.heard(e))?;
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
                        Probe::ToolCall,
                        Verdict::No,
                        format!("the request failed: {error}"),
                    ),
                    finding(Probe::Usage, Verdict::Unknown, "no reply to read"),
                );
            }
        };
        let usage = self.provider.usage(&answer.json);
        let usage = if usage.input_tokens > 0 {
            finding(
                Probe::Usage,
                Verdict::Yes,
                format!(
                    "{} input, {} output tokens",
                    usage.input_tokens, usage.output_tokens
                ),
            )
        } else {
            finding(Probe::Usage, Verdict::No, "the reply has no token counts")
        };
        let call = match &answer.parsed {
            Err(error) => finding(Probe::ToolCall, Verdict::No, error.to_string()),
            Ok(parsed) => match parsed.calls.first() {
                Some(ParsedCall::Ok(call)) if call.name == TOOL => finding(
                    Probe::ToolCall,
                    Verdict::Yes,
                    format!("{}({})", call.name, call.arguments),
                ),
                Some(other) => finding(
                    Probe::ToolCall,
                    Verdict::No,
                    format!("a call toolgauge cannot use: {:?}", other.name()),
                ),
                None => finding(Probe::ToolCall, Verdict::No, said(parsed)),
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
            images: Vec::new(),
        }]);
        conversation.push_turn(&reply, &parsed, returned);
        conversation
    }

    /// Is a tool result (an error result) shown to the model? The same
    /// conversation with a short and a long result: a server that shows
    /// it counts more prompt tokens for the long one.
    async fn shown(&self, probe: Probe, error: bool) -> Finding {
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
        self.repeats_from_a_user_message(probe).await
    }

    /// With no token counts and no word repeated from the result: does
    /// the model repeat a word from a user message? If so, the result was
    /// not shown to it.
    async fn repeats_from_a_user_message(&self, probe: Probe) -> Finding {
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
            Err(error) => finding(Probe::Parallel, Verdict::No, format!("refused: {error}")),
            Ok(Answer {
                parsed: Err(error), ..
            }) => finding(Probe::Parallel, Verdict::No, error.to_string()),
            Ok(Answer {
                parsed: Ok(parsed), ..
            }) => {
                let calls = parsed.calls.len();
                let verdict = if calls >= 2 {
                    Verdict::Yes
                } else {
                    Verdict::No
                };
                finding(
                    Probe::Parallel,
                    verdict,
                    format!("{calls} call(s) in one reply"),
                )
            }
        }
    }

    async fn choice(&self, probe: Probe, choice: ToolChoice) -> Finding {
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
            Err(error) => {
                self.heard(&error);
                return finding(Probe::Streaming, Verdict::No, format!("refused: {error}"));
            }
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
            return finding(Probe::Streaming, Verdict::No, evidence);
        };
        let events = assembled.arrivals.len();
        let ms = |d: Duration| d.as_millis();
        match assembled.parsed {
            Ok(parsed) if parsed.calls.iter().any(|c| c.name() == TOOL) => finding(
                Probe::Streaming,
                Verdict::Yes,
                format!(
                    "{events} events, assembled into a call of {TOOL}, complete at {} ms (first token at {} ms)",
                    assembled.timing.calls.first().map_or(0, |d| ms(*d)),
                    assembled.timing.first_token.map_or(0, ms),
                ),
            ),
            Ok(parsed) => finding(
                Probe::Streaming,
                Verdict::Unknown,
                format!("{events} events; {}", said(&parsed)),
            ),
            Err(error) => finding(Probe::Streaming, Verdict::No, error.to_string()),
        }
    }

    async fn truncation(&self) -> Finding {
        let mut settings = self.settings.clone();
        settings.max_tokens = Some(8);
        settings.tool_choice = Some(ToolChoice::None);
        let conversation = self.opening("Write a story of at least 200 words about the sea.");
        match self.send(&conversation, &settings).await {
            Err(error) => finding(
                Probe::Truncation,
                Verdict::Unknown,
                format!("refused: {error}"),
            ),
            Ok(Answer {
                parsed: Err(error), ..
            }) => finding(Probe::Truncation, Verdict::Unknown, error.to_string()),
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
                    Probe::Truncation,
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
