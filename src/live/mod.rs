//! Live models over HTTP: OpenAI-compatible Chat Completions, Anthropic
//! Messages and Gemini generateContent. A live model sends its trial's
//! conversation with the scenario's tools, and its replies go through the
//! pipeline's Parse like a mock's. Every exchange can be recorded, and a
//! recording replayed without network or keys.

pub mod conversation;
pub mod recording;
pub mod request;
pub mod settings;
pub mod transport;

use std::path::PathBuf;

use serde_json::Value;

use crate::provider::Provider;
use crate::tool::ToolDef;
pub use conversation::Conversation;
use recording::{Exchange, Position, Recorder, Replayer};
pub use settings::{ApiSettings, Prices};
use transport::Transport;
pub use transport::TransportError;

/// How live models reach their answers in this run.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
}

/// Tokens a reply used, from its usage block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A live reply: the body as the provider sent it, and as JSON (`None`
/// when it is not JSON), read once for usage, recording and the conversation.
#[derive(Debug, Clone)]
pub struct LiveReply {
    pub body: Vec<u8>,
    pub json: Option<Value>,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The request failed after its retries: the trial is a transport
    /// error, not a model failure, and the run goes on.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// Replay asked for a request the recording does not hold: the run stops.
    #[error("{0}")]
    NotRecorded(String),
}

/// A model behind an API, ready to answer.
pub struct LiveModel {
    provider: Provider,
    settings: ApiSettings,
    key: Option<String>,
    source: Source,
    recorder: Option<Recorder>,
}

enum Source {
    Network(Transport),
    Replay(std::sync::Arc<Replayer>),
}

impl std::fmt::Debug for LiveModel {
    // Never print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveModel")
            .field("provider", &self.provider)
            .field("model", &self.settings.model)
            .field("key", &self.key.as_ref().map(|_| "[REDACTED]"))
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
        replayer: Option<std::sync::Arc<Replayer>>,
    ) -> Result<LiveModel, String> {
        settings
            .check()
            .map_err(|e| format!("model {name:?}: {e}"))?;
        let source = match replayer {
            Some(replayer) => Source::Replay(replayer),
            None => Source::Network(Transport::new(settings)?),
        };
        let key = match (&source, &settings.api_key_env) {
            (Source::Network(_), Some(variable)) => Some(std::env::var(variable).map_err(|_| {
                format!(
                    "model {name:?}: the environment variable {variable} (api.api_key_env) is not set; \
                     export the API key there, or --replay a recording"
                )
            })?),
            _ => None,
        };
        let recorder = options
            .record
            .as_deref()
            .map(Recorder::new)
            .transpose()
            .map_err(|e| format!("--record: {e}"))?;
        Ok(LiveModel {
            provider,
            settings: settings.clone(),
            key,
            source,
            recorder,
        })
    }

    pub fn prices(&self) -> Option<Prices> {
        self.settings.prices
    }

    /// Ask the model for its next turn.
    pub async fn respond(
        &self,
        conversation: &Conversation,
        tools: &[&ToolDef],
        position: Position,
    ) -> Result<LiveReply, LiveError> {
        let request = request::build(
            self.provider,
            &self.settings,
            self.key.as_deref(),
            conversation,
            tools,
        );
        let (status, body) = match &self.source {
            Source::Network(transport) => {
                let response = transport.send(&request).await?;
                (response.status, response.body)
            }
            Source::Replay(replayer) => {
                let exchange = replayer
                    .answer(&request, &position)
                    .map_err(LiveError::NotRecorded)?;
                let body = match &exchange.response {
                    Value::String(text) => text.clone().into_bytes(),
                    other => serde_json::to_vec(other).expect("serializes"),
                };
                (exchange.status, body)
            }
        };
        let json: Option<Value> = serde_json::from_slice(&body).ok();
        if let Some(recorder) = &self.recorder {
            let response = json
                .clone()
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
        let usage = json
            .as_ref()
            .map(|v| usage(self.provider, v))
            .unwrap_or_default();
        Ok(LiveReply { body, json, usage })
    }
}

/// Input and output tokens from a response's usage block.
pub fn usage(provider: Provider, body: &Value) -> Usage {
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    match provider {
        Provider::OpenAi => Usage {
            input_tokens: count(&body["usage"]["prompt_tokens"]),
            output_tokens: count(&body["usage"]["completion_tokens"]),
        },
        Provider::Anthropic => Usage {
            input_tokens: count(&body["usage"]["input_tokens"])
                + count(&body["usage"]["cache_read_input_tokens"])
                + count(&body["usage"]["cache_creation_input_tokens"]),
            output_tokens: count(&body["usage"]["output_tokens"]),
        },
        Provider::Gemini => Usage {
            input_tokens: count(&body["usageMetadata"]["promptTokenCount"]),
            output_tokens: count(&body["usageMetadata"]["candidatesTokenCount"])
                + count(&body["usageMetadata"]["thoughtsTokenCount"]),
        },
    }
}
