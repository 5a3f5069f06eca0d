//! Live models over HTTP: OpenAI-compatible Chat Completions, Anthropic
//! Messages and Gemini generateContent. Each trial owns its conversation
//! in the provider's shape: the scenario's prompt, then per turn the
//! model's message and what Return produced. Requests travel through the
//! neutral [`crate::transport`]; every exchange can be recorded, and a
//! recording replayed without network or keys.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::recording::{Exchange, Position, Recorder, Replayer};
use super::{Model, ModelError, ModelTrial, Reply, ReplyError, ReplyFuture, TrialStart};
use crate::call::{FunctionSpec, Prices};
use crate::provider::{ApiSettings, Ask, Conversation, Provider};
use crate::transport::Transport;

/// How live models reach their answers in this run.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
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
        .map(|key| Some(ApiKey(key)))
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
        let source = match replayer {
            Some(replayer) => Source::Replay(replayer),
            None => Source::Network(
                Transport::new(&settings.transport()).map_err(|e| fail(e.to_string()))?,
            ),
        };
        let key = match &source {
            Source::Network(_) => {
                api_key(settings).map_err(|e| fail(format!("{e}, or --replay a recording")))?
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
            settings: settings.clone(),
            key,
            source,
            recorder,
        })
    }

    /// Send one request (or find it in the recording) and read the reply.
    async fn ask(
        &self,
        conversation: &Conversation,
        tools: &[FunctionSpec],
        position: Position,
    ) -> Result<(Reply, Option<Value>), ReplyError> {
        let request = self.provider.request(&Ask {
            settings: &self.settings,
            key: self.key.as_ref().map(ApiKey::expose),
            conversation,
            tools,
        });
        let (status, body, timing) = match &self.source {
            Source::Network(transport) => {
                let response = transport.send(&request).await?;
                (response.status, response.body, Some(response.timing))
            }
            Source::Replay(replayer) => {
                let exchange = replayer.answer(&request, &position)?;
                let body = match &exchange.response {
                    Value::String(text) => text.clone().into_bytes(),
                    other => serde_json::to_vec(other).expect("serializes"),
                };
                (exchange.status, body, None)
            }
        };
        // Recorded as received: a stream keeps its events.
        let received: Option<Value> = serde_json::from_slice(&body).ok();
        if let Some(recorder) = &self.recorder {
            let response = received
                .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&body).into_owned()));
            // A recording that cannot be written loses data: say so, go on.
            if let Err(e) = recorder.record(
                &request,
                Exchange {
                    position,
                    status,
                    response,
                },
            ) {
                eprintln!("--record: {e}");
            }
        }
        // A stream (live or replayed) becomes the body it stands for; one
        // that is no stream stays as it came, and Parse says what it is.
        let streamed = (self.settings.stream && (200..300).contains(&status))
            .then(|| crate::provider::stream::whole(self.provider, &body).ok())
            .flatten();
        let (body, json) = match streamed {
            Some(whole) => (whole.to_string().into_bytes(), Some(whole)),
            None => {
                let json: Option<Value> = serde_json::from_slice(&body).ok();
                (body, json)
            }
        };
        let usage = json
            .as_ref()
            .map(|v| self.provider.usage(v))
            .unwrap_or_default();
        Ok((
            Reply {
                body,
                usage,
                timing,
            },
            json,
        ))
    }
}

impl Model for LiveModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    fn prices(&self) -> Option<Prices> {
        self.settings.prices
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        Box::new(LiveTrial {
            model: self,
            start,
            conversation: Conversation::new(self.provider, &start.scenario.prompt),
            tools: start
                .scenario
                .registry
                .definitions()
                .map(|d| d.spec())
                .collect(),
            last_reply: None,
        })
    }
}

/// One live trial: its conversation so far.
struct LiveTrial<'a> {
    model: &'a LiveModel,
    start: TrialStart<'a>,
    conversation: Conversation,
    tools: Vec<FunctionSpec>,
    /// The last reply, as received and as JSON, to add to the
    /// conversation with what its calls got back.
    last_reply: Option<(Vec<u8>, Value)>,
}

impl ModelTrial for LiveTrial<'_> {
    fn reply<'s>(&'s mut self, attempt: u32, returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        if let Some(reply) = self.last_reply.take() {
            // Return wrote a JSON array of messages: sent on as they are.
            let messages: Vec<Value> = returned
                .and_then(|bytes| serde_json::from_slice(bytes).ok())
                .unwrap_or_default();
            let (body, reply) = reply;
            // The same bytes give the same call ids as the pipeline's Parse.
            if let Ok(parsed) = self.model.provider.parse_response(&body) {
                self.conversation.push_turn(&reply, &parsed, messages);
            }
        }
        Box::pin(async move {
            let position = Position {
                model: self.model.name.clone(),
                scenario: self.start.scenario.name.clone(),
                trial: self.start.trial,
                attempt,
            };
            let (reply, json) = self
                .model
                .ask(&self.conversation, &self.tools, position)
                .await?;
            // A reply that is not JSON adds nothing to the conversation.
            self.last_reply = json.map(|json| (reply.body.clone(), json));
            Ok(reply)
        })
    }
}
