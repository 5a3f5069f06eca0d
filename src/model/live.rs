//! Live models over HTTP: OpenAI-compatible Chat Completions, Anthropic
//! Messages and Gemini generateContent. Each trial owns its conversation
//! in the provider's shape: the scenario's prompt, then per turn the
//! model's message and what Return produced. Requests travel through the
//! neutral [`crate::transport`]; every exchange can be recorded, and a
//! recording replayed without network or keys.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::recording::{Exchange, Position, Recorder, RecordingError, Replayer};
use super::{
    EarlyCalls, Model, ModelError, ModelTerms, ModelTrial, Reply, ReplyError, ReplyFuture,
    TrialStart,
};
use crate::batch::{BatchClient, BatchItem, ItemAnswer, OpenTrial, RoundError, Rounds};
use crate::call::{EarlyCall, FunctionSpec, Usage};
use crate::provider::{ApiSettings, Ask, Conversation, ParsedResponse, Provider, stream};
use crate::transport::{Transport, TransportError};

/// How live models reach their answers in this run.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// `--batch`: requests go through the provider's batch API, each
    /// batch kept in this ledger (the run folder's).
    pub batch: Option<Arc<crate::batch::Ledger>>,
}

/// The variable a model file names for its key is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the environment variable {variable} (api.api_key_env) is not set; export the API key there"
)]
pub struct MissingKey {
    pub variable: String,
}

/// An API key: never shown by `Debug`, read only where a request is made.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// The API key a model file names (`api.api_key_env`), read from the
/// environment; `None` when it names none (a local server).
pub fn api_key(settings: &ApiSettings) -> Result<Option<ApiKey>, MissingKey> {
    let Some(variable) = &settings.api_key_env else {
        return Ok(None);
    };
    std::env::var(variable)
        .map(|key| {
            // Known from here on: a server that quotes it back is never
            // printed, logged or written with it.
            crate::secret::know(&key);
            Some(ApiKey(key))
        })
        .map_err(|_| MissingKey {
            variable: variable.clone(),
        })
}

/// A model behind an API, ready to answer.
pub struct LiveModel {
    name: String,
    provider: Provider,
    settings: ApiSettings,
    key: Option<ApiKey>,
    source: Source,
    recorder: Option<Recorder>,
}

enum Source {
    Network(Transport),
    Replay(Arc<Replayer>),
    /// `--batch`: each request waits for its round.
    Batch(Arc<Rounds>),
}

impl std::fmt::Debug for LiveModel {
    // Never print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveModel")
            .field("name", &self.name)
            .field("provider", &self.provider)
            .field("model", &self.settings.model)
            .field("key", &self.key)
            .finish()
    }
}

impl LiveModel {
    /// Resolve the key (not needed to replay) and set up the transport.
    pub fn connect(
        name: &str,
        provider: Provider,
        settings: &ApiSettings,
        options: &LiveOptions,
        replayer: Option<Arc<Replayer>>,
    ) -> Result<LiveModel, ModelError> {
        let fail = |problem: String| ModelError::Connect {
            name: name.to_owned(),
            problem,
        };
        settings.check().map_err(|e| fail(e.to_string()))?;
        let mut settings = settings.clone();
        let source = match (replayer, &options.batch) {
            (Some(replayer), _) => Source::Replay(replayer),
            (None, Some(ledger)) => {
                // A batch's answers come whole: nothing streams.
                settings.stream = false;
                settings.execute_early = false;
                let first_poll = settings
                    .batch_poll_ms
                    .map_or(crate::batch::DEFAULT_FIRST_POLL, Duration::from_millis);
                let client = BatchClient::new(provider, &settings.transport(), first_poll)
                    .map_err(|e| fail(e.to_string()))?;
                Source::Batch(Arc::new(Rounds::new(
                    name,
                    provider,
                    client,
                    Arc::clone(ledger),
                )))
            }
            (None, None) => Source::Network(
                Transport::new(&settings.transport()).map_err(|e| fail(e.to_string()))?,
            ),
        };
        let key = match &source {
            Source::Network(_) | Source::Batch(_) => {
                api_key(&settings).map_err(|e| fail(format!("{e}, or --replay a recording")))?
            }
            Source::Replay(_) => None,
        };
        let recorder = options
            .record
            .as_deref()
            .map(Recorder::new)
            .transpose()
            .map_err(|e| fail(format!("--record: {e}")))?;
        Ok(LiveModel {
            name: name.to_owned(),
            provider,
            settings,
            key,
            source,
            recorder,
        })
    }

    /// Send one request (or find it in the recording) and read the reply;
    /// the calls a stream shows complete go to `early` as they come.
    async fn ask(
        &self,
        conversation: &Conversation,
        tools: &[FunctionSpec],
        position: Position,
        early: Option<EarlySender>,
    ) -> Result<(Reply, Option<Value>), ReplyError> {
        let request = self.provider.request(&Ask {
            settings: &self.settings,
            key: self.key.as_ref().map(ApiKey::expose),
            conversation,
            tools,
            trial_seed: position.trial_seed,
        });
        let hand_over = |assembly: &stream::Assembly, complete: std::ops::Range<usize>| {
            let Some(early) = &early else { return };
            for k in complete {
                if let Some(call) = assembly.call(k) {
                    // The receiver gone: the turn no longer runs calls early.
                    let _ = early.send((k, call));
                }
            }
        };
        let streamed = self.settings.stream;
        let (status, received, timing) = match &self.source {
            Source::Network(transport) if streamed => {
                let opened = transport.open_in_order(&request, position.order).await?;
                let chunks = opened.response.bytes_stream();
                let deadline = opened.sent + Duration::from_millis(self.settings.timeout_ms);
                let received = stream::read(
                    self.provider,
                    chunks,
                    opened.sent,
                    Some(deadline),
                    hand_over,
                )
                .await;
                let mut timing = opened.timing;
                timing.request = opened.sent.elapsed();
                (opened.status, received, Some(timing))
            }
            Source::Network(transport) => {
                let response = transport.send_in_order(&request, position.order).await?;
                (response.status, whole(response.body), Some(response.timing))
            }
            Source::Batch(rounds) => {
                let (status, body) = batched(rounds, &request, &position).await?;
                (status, whole(body), None)
            }
            Source::Replay(replayer) => {
                let exchange = replayer.answer(&request, &position)?;
                let raw = match &exchange.response {
                    Value::String(text) => text.clone().into_bytes(),
                    other => serde_json::to_vec(other).expect("serializes"),
                };
                let received = if streamed && (200..300).contains(&exchange.status) {
                    let arrivals: Vec<Duration> =
                        exchange.arrivals_ms.iter().map(|ms| millis(*ms)).collect();
                    let first_byte = millis(exchange.first_byte_ms.unwrap_or_default());
                    stream::replay(self.provider, &raw, first_byte, &arrivals, hand_over)
                } else {
                    whole(raw)
                };
                (exchange.status, received, None)
            }
        };
        let unrecorded = self.record(&request, position, status, &received);
        let (mut reply, json) = self.reply_of(&request, received, timing)?;
        reply.unrecorded = unrecorded.map(std::sync::Arc::new);
        Ok((reply, json))
    }

    /// What was received, as the reply Parse reads: a stream becomes the
    /// body it stands for; one that is no stream stays as it came, and
    /// Parse says what it is. A stream that stalled, broke or carried an
    /// error event is the server's failure: the trial is lost, and the
    /// model is told nothing.
    fn reply_of(
        &self,
        request: &crate::transport::ApiRequest,
        received: stream::Received,
        timing: Option<crate::transport::Timing>,
    ) -> Result<(Reply, Option<Value>), ReplyError> {
        if let Some(failure) = received.failed_as_a_stream() {
            return Err(ReplyError::Transport(
                crate::transport::TransportError::Network {
                    url: crate::transport::redact_url(&request.url),
                    message: failure.message.clone(),
                    tries: 1,
                    timed_out: failure.timed_out,
                },
            ));
        }
        let (body, json, stream, parsed) = match received.assembled {
            // Parse reads an empty body as the empty reply it is.
            Some(assembled) if assembled.said_nothing() => {
                (Vec::new(), None, Some(assembled.timing), None)
            }
            Some(assembled) => {
                // The conversation keeps the reply as JSON.
                let json = assembled
                    .json
                    .or_else(|| serde_json::from_slice(&assembled.body).ok());
                let parsed = assembled.parsed.ok();
                (assembled.body, json, Some(assembled.timing), parsed)
            }
            None => {
                let json: Option<Value> = serde_json::from_slice(&received.raw).ok();
                (received.raw, json, None, None)
            }
        };
        let usage = match (&parsed, &json) {
            (Some(parsed), _) => parsed.usage,
            (None, Some(json)) => self.provider.usage(json),
            (None, None) => Usage::default(),
        };
        Ok((
            Reply {
                body,
                usage,
                timing,
                stream,
                parsed,
                unrecorded: None,
            },
            json,
        ))
    }

    /// A simulated user's turn, which may call `tools` (its own, or none): the
    /// reply as JSON and as Parse read it (`None`: not a reply).
    pub async fn act(
        &self,
        conversation: &Conversation,
        tools: &[FunctionSpec],
        position: Position,
    ) -> Result<Acted, ReplyError> {
        let (reply, _) = self.ask(conversation, tools, position, None).await?;
        let parsed = self.provider.parse_response(&reply.body).ok();
        let json = serde_json::from_slice::<Value>(&reply.body).ok();
        Ok(Acted {
            reply: json.zip(parsed),
            usage: reply.usage,
            unrecorded: reply.unrecorded,
        })
    }

    /// Keep an exchange as received: a stream keeps its events and when
    /// each came. A recording that cannot be written loses data: the
    /// error goes with the reply, for the run to say.
    fn record(
        &self,
        request: &crate::transport::ApiRequest,
        position: Position,
        status: u16,
        received: &stream::Received,
    ) -> Option<RecordingError> {
        let recorder = self.recorder.as_ref()?;
        let raw = &received.raw;
        let response = serde_json::from_slice(raw)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into_owned()));
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let assembled = received.assembled.as_ref();
        let arrivals_ms = assembled.map_or_else(Vec::new, |a| a.arrivals.iter().map(ms).collect());
        let first_byte_ms = assembled.map(|a| ms(&a.timing.first_byte));
        recorder
            .record(
                request,
                Exchange {
                    position,
                    status,
                    response,
                    first_byte_ms,
                    arrivals_ms,
                },
            )
            .err()
    }
}

/// What a simulated user with tools did: its reply as JSON and as Parse
/// read it (`None`: the body is not a reply), its tokens, and an
/// exchange `--record` could not keep.
#[derive(Debug)]
pub struct Acted {
    pub reply: Option<(Value, ParsedResponse)>,
    pub usage: crate::call::Usage,
    pub unrecorded: Option<Arc<RecordingError>>,
}

/// A request's answer through its round's batch: a 2xx answer as a live
/// one; a request the batch answered otherwise, or not at all, fails as a
/// live request would (the trial lost to the server); a batch that could
/// not be followed stops the run.
async fn batched(
    rounds: &Arc<Rounds>,
    request: &crate::transport::ApiRequest,
    position: &Position,
) -> Result<(u16, Vec<u8>), ReplyError> {
    let item = BatchItem {
        custom_id: format!("t{}-a{}", position.order, position.attempt),
        request: request.clone(),
    };
    let url = || crate::transport::redact_url(&request.url);
    match rounds.ask(item).await {
        Ok(ItemAnswer::Answered { status, body }) if (200..300).contains(&status) => {
            Ok((status, body))
        }
        Ok(ItemAnswer::Answered { status, body }) => Err(TransportError::Status {
            url: format!("{} (in a batch)", url()),
            status,
            tries: 1,
            excerpt: crate::transport::body_excerpt(&body),
        }
        .into()),
        Ok(ItemAnswer::Failed { message }) => Err(TransportError::Network {
            url: format!("{} (in a batch)", url()),
            message,
            tries: 1,
            timed_out: false,
        }
        .into()),
        Err(RoundError::Refused(error)) => Err(error.into()),
        Err(RoundError::Unfinished(unfinished)) => Err(ReplyError::BatchUnfinished(unfinished)),
    }
}

/// Where the calls a stream shows complete go, as they come.
type EarlySender = mpsc::UnboundedSender<EarlyCall>;

/// A body read whole: no events, no timings.
fn whole(raw: Vec<u8>) -> stream::Received {
    stream::Received {
        raw,
        assembled: None,
        failure: None,
    }
}

fn millis(ms: f64) -> Duration {
    Duration::from_secs_f64((ms / 1e3).max(0.0))
}

impl Model for LiveModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    /// A batched request is charged at the batch rate. Unbatched, twice
    /// the requests it serves at once may be under way: one trial's tools
    /// run while another's request is answered; batched, as many as the
    /// run has: a round holds them all.
    fn terms(&self) -> ModelTerms {
        let batched = matches!(self.source, Source::Batch(_));
        ModelTerms {
            max_attempts: None,
            prices: self.settings.prices.map(|p| match batched {
                true => crate::batch::at_batch_rate(p),
                false => p,
            }),
            batched,
            trials_at_once: (!batched).then(|| 2 * self.settings.concurrency.max(1)),
        }
    }

    fn trial_coming(&self) -> Option<OpenTrial> {
        match &self.source {
            Source::Batch(rounds) => Some(rounds.open_trial()),
            Source::Network(_) | Source::Replay(_) => None,
        }
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        Box::new(LiveTrial {
            model: self,
            start,
            conversation: Conversation::new(self.provider, &start.scenario.prompt),
            // A conversation gives some tools only at a later user turn.
            tools: {
                let hidden = start
                    .scenario
                    .task
                    .as_ref()
                    .map(|t| t.hidden_at_start())
                    .unwrap_or_default();
                start
                    .scenario
                    .registry
                    .definitions()
                    .filter(|d| !hidden.contains(&d.name))
                    .map(|d| d.spec())
                    .collect()
            },
            last_reply: None,
            early: None,
            user: None,
        })
    }
}

/// One live trial: its conversation so far.
struct LiveTrial<'a> {
    model: &'a LiveModel,
    start: TrialStart<'a>,
    conversation: Conversation,
    tools: Vec<FunctionSpec>,
    /// The last reply, as received and as JSON, and what its stream's
    /// reader parsed of it, to add to the conversation with what its
    /// calls got back.
    last_reply: Option<(Vec<u8>, Value, Option<ParsedResponse>)>,
    /// Where the next reply's complete calls go (`execute_early`).
    early: Option<EarlySender>,
    /// What the user says next, after the last reply and its results.
    user: Option<String>,
}

impl ModelTrial for LiveTrial<'_> {
    fn user_says(&mut self, text: &str, add_tools: &[String]) {
        self.user = Some(text.to_owned());
        let registry = &self.start.scenario.registry;
        self.tools.extend(
            registry
                .definitions()
                .filter(|d| add_tools.contains(&d.name))
                .map(|d| d.spec()),
        );
    }

    fn system_says(&mut self, text: &str) {
        let prompt = crate::scenario::task::SystemFrom::opening(&self.start.scenario.prompt, text);
        self.conversation = Conversation::new(self.model.provider, &prompt);
    }

    fn early_calls(&mut self) -> Option<EarlyCalls> {
        if !(self.model.settings.stream && self.model.settings.execute_early) {
            return None;
        }
        let (sender, receiver) = mpsc::unbounded_channel();
        self.early = Some(sender);
        Some(receiver)
    }

    fn reply<'s>(&'s mut self, attempt: u32, returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let provider = self.model.provider;
        let user = self.user.take();
        match self.last_reply.take() {
            Some((body, reply, streamed)) => {
                // Return wrote a JSON array of messages: sent on as they
                // are, then what the user says next.
                let mut messages: Vec<Value> = returned
                    .and_then(|bytes| serde_json::from_slice(bytes).ok())
                    .unwrap_or_default();
                messages.extend(user.map(|text| provider.text_message("user", &text)));
                // The calls by the ids the pipeline gave them, which their
                // results answer: the stream reader's (a call the stream
                // gave no id is named from its first event), else the
                // same bytes parsed again.
                let parsed = streamed.map_or_else(|| provider.parse_response(&body), Ok);
                if let Ok(parsed) = parsed {
                    self.conversation.push_turn(&reply, &parsed, messages);
                }
            }
            None => {
                if let Some(text) = user {
                    self.conversation.push_user(&text);
                }
            }
        }
        Box::pin(async move {
            let position = Position {
                model: self.model.name.clone(),
                scenario: self.start.scenario.name.clone(),
                trial: self.start.trial,
                attempt,
                order: self.start.order,
                trial_seed: self.start.shared_seed,
            };
            let (reply, json) = self
                .model
                .ask(&self.conversation, &self.tools, position, self.early.take())
                .await?;
            // A reply that is not JSON adds nothing to the conversation.
            self.last_reply = json.map(|json| (reply.body.clone(), json, reply.parsed.clone()));
            Ok(reply)
        })
    }
}
