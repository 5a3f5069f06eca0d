//! The batch client and what it speaks: a batch's items and answers, how
//! one ended or could not be followed, and the requests every provider's
//! batch API is made of (create, get), which `submit` and `wait` use.

use std::time::Duration;

use serde_json::Value;

use crate::provider::Provider;
use crate::transport::{ApiRequest, Transport, TransportError, TransportSettings};

/// The batch rate: what the providers charge for a batched request, per
/// live price (OpenAI, Anthropic and Gemini all halve it).
pub const BATCH_PRICE_FACTOR: f64 = 0.5;

/// `prices` at the batch rate.
pub fn at_batch_rate(prices: crate::call::Prices) -> crate::call::Prices {
    prices.scaled(BATCH_PRICE_FACTOR)
}

/// Polling backs off from the model file's `batch_poll_ms` up to this.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);

/// The first poll's wait when the model file names none.
pub const DEFAULT_FIRST_POLL: Duration = Duration::from_secs(5);

/// The most requests and bytes one batch may hold, as each provider
/// documents it (OpenAI: 50,000 and a 200 MB file; Anthropic: 100,000 and
/// 256 MB; Gemini's inlined requests: 20 MB), with a margin for framing.
pub fn limits(provider: Provider) -> (usize, usize) {
    const MB: usize = 1 << 20;
    match provider {
        Provider::OpenAi | Provider::OpenAiResponses => (50_000, 190 * MB),
        Provider::Anthropic => (100_000, 240 * MB),
        Provider::Gemini => (100_000, 19 * MB),
    }
}

/// One request of a batch, named by an id unique in its run.
#[derive(Debug, Clone)]
pub struct BatchItem {
    pub custom_id: String,
    pub request: ApiRequest,
}

/// What a batch said of one of its requests.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemAnswer {
    /// The provider's answer: a live request's status and body.
    Answered { status: u16, body: Vec<u8> },
    /// No answer: the request errored, expired or was cancelled.
    Failed { message: String },
}

/// A batch submitted that could not be followed to its end: it runs on at
/// the provider, and `--resume` picks it up by its id.
#[derive(Debug, Clone, thiserror::Error)]
#[error("batch {id} could not be followed to its end: {problem}")]
pub struct Unfinished {
    pub id: String,
    pub problem: FollowError,
}

/// Why a batch could not be followed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FollowError {
    /// Polling or reading its results failed after the retries.
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("{url}: the answer is not JSON ({message})")]
    NotJson { url: String, message: String },
    #[error("the batch ended with no results_url")]
    NoResults,
    /// The server named another host for the results: the key would go
    /// where the user did not send it.
    #[error("its results_url {url} is not on the model's endpoint: the key is not sent there")]
    ForeignResults { url: String },
    /// The ledger could not keep the batch: a `--resume` would not know it.
    #[error("{path} could not be written ({message}): the batch runs on unrecorded")]
    Ledger { path: String, message: String },
    /// Its create got no answer that says whether it was made.
    #[error(transparent)]
    Unconfirmed(Box<SubmitError>),
    /// The run ended while the request waited for its round.
    #[error("the run ended before its round")]
    RunEnded,
}

/// What one poll of a batch found.
#[derive(Debug, Clone)]
pub enum Polled {
    /// Not ended: the provider's word for where it is.
    Running(String),
    Ended(Ended),
}

/// How a provider's batch ended, and what it said of each request.
#[derive(Debug, Clone)]
pub struct Ended {
    pub state: String,
    pub answers: Vec<(String, ItemAnswer)>,
}

/// A model's way to its provider's batch API.
pub struct BatchClient {
    pub(crate) provider: Provider,
    pub(crate) transport: Transport,
    pub(crate) first_poll: Duration,
}

impl BatchClient {
    pub fn new(
        provider: Provider,
        transport: &TransportSettings,
        first_poll: Duration,
    ) -> Result<BatchClient, crate::transport::ClientError> {
        Ok(BatchClient {
            provider,
            transport: Transport::new(transport)?,
            first_poll,
        })
    }

    pub(crate) async fn get(&self, url: &str, like: &ApiRequest) -> Result<Vec<u8>, FollowError> {
        let response = self
            .transport
            .send_with(reqwest::Method::GET, url, &like.headers, None)
            .await?;
        Ok(response.body)
    }

    pub(crate) async fn get_json(
        &self,
        url: &str,
        like: &ApiRequest,
    ) -> Result<Value, FollowError> {
        let body = self.get(url, like).await?;
        serde_json::from_slice(&body).map_err(|e| FollowError::NotJson {
            url: crate::transport::redact_url(url),
            message: e.to_string(),
        })
    }

    /// Create a batch with `body` at `url`: the id in its answer's
    /// `field`. Sent once unless the provider says nothing was made: an
    /// answer lost or unreadable may follow a batch made and paid.
    pub(crate) async fn create(
        &self,
        url: &str,
        like: &ApiRequest,
        body: &Value,
        field: &str,
    ) -> Result<String, SubmitError> {
        let bytes = serde_json::to_vec(body).expect("a batch body serializes");
        let response = self
            .transport
            .send_create(url, &like.headers, &bytes)
            .await
            .map_err(SubmitError::of_create)?;
        let answer = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        id_in(&answer, field, url).map_err(SubmitError::Unanswered)
    }
}

/// Why a batch was not submitted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SubmitError {
    /// The provider refused it: nothing was made.
    #[error(transparent)]
    Refused(TransportError),
    /// Its create got no answer that says what became of it: a batch
    /// may have been made, and paid. Not sent again.
    #[error(
        "its create got no answer that says whether it was made ({0}): not sent again, so as \
         not to pay twice; batches.jsonl records it; look for it in the provider's batch list"
    )]
    Unanswered(TransportError),
}

impl SubmitError {
    /// A create's failure: a 4xx (or 503, 529: overloaded) says nothing
    /// was made; anything else may follow a batch made.
    fn of_create(error: TransportError) -> SubmitError {
        match error.status() {
            Some(status) if (400..500).contains(&status) || matches!(status, 503 | 529) => {
                SubmitError::Refused(error)
            }
            _ => SubmitError::Unanswered(error),
        }
    }
}

/// An id the server gave, or the refusal it amounts to.
pub(crate) fn id_in(answer: &Value, field: &str, url: &str) -> Result<String, TransportError> {
    answer[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| TransportError::Network {
            url: crate::transport::redact_url(url),
            message: format!("the answer names no batch (no \"{field}\")"),
            tries: 1,
            timed_out: false,
        })
}

/// Lines of JSON, a torn or blank one skipped.
pub(crate) fn json_lines(body: &[u8]) -> impl Iterator<Item = Value> + '_ {
    body.split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
}

/// Whether `url` is on the same origin (scheme, host, port) as `base`:
/// only there may a request carry the model's key.
pub(crate) fn same_origin(url: &str, base: &str) -> bool {
    match (reqwest::Url::parse(url), reqwest::Url::parse(base)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}
