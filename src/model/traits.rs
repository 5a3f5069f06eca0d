//! The `Model` and `ModelTrial` traits, a reply and its errors, and
//! `build`, a model made from its file.

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use super::{RecordingError, recording};
use crate::batch::OpenTrial;
use crate::call::{Prices, StreamTiming, Usage};
use crate::pointer::Pointer;
use crate::provider::Provider;
use crate::scenario::Scenario;
use crate::source::FileError;
use crate::transport::{Timing, TransportError};

/// A model file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    File(#[from] FileError),
    /// A field of the file, by JSON pointer.
    #[error("{}{pointer}: {problem}", file_prefix(path))]
    Invalid {
        path: Option<PathBuf>,
        pointer: Pointer,
        problem: String,
    },
    /// A `bfcl-results` result file.
    #[error(transparent)]
    Results(#[from] crate::bfcl::results::ResultsError),
    /// A `tau2-results` Results JSON.
    #[error(transparent)]
    Tau2Results(#[from] crate::tau2::results::Tau2ResultsError),
    /// A live model that cannot be made ready (key, client, recording).
    #[error("model {name:?}: {problem}")]
    Connect { name: String, problem: String },
    #[error("{}: no such model file or folder (use --models)", .0.display())]
    Missing(PathBuf),
    #[error("no model files found (use --models PATH)")]
    NoneFound,
    #[error("{}: cannot read: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: model name {name:?} is used twice", path.display())]
    NameTwice { path: PathBuf, name: String },
    /// `task.user.model`: not a model the user gave, nor a keyless file
    /// inside the suite.
    #[error("/task/user/model {named:?}: {problem}")]
    UserModel { named: String, problem: String },
    /// The `--judge-model` file, by the field at fault.
    #[error("{name} (--judge-model) {pointer}: {problem}")]
    Judge {
        name: String,
        pointer: Pointer,
        problem: String,
    },
}

fn file_prefix(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

impl ModelError {
    pub(crate) fn invalid(pointer: Pointer, problem: impl Into<String>) -> ModelError {
        ModelError::Invalid {
            path: None,
            pointer,
            problem: problem.into(),
        }
    }

    pub(crate) fn in_file(self, file: &Path) -> ModelError {
        match self {
            ModelError::Invalid {
                path: None,
                pointer,
                problem,
            } => ModelError::Invalid {
                path: Some(file.to_owned()),
                pointer,
                problem,
            },
            other => other,
        }
    }

    /// The same error, its pointer inside `prefix`.
    pub(crate) fn under(self, prefix: &Pointer) -> ModelError {
        match self {
            ModelError::Invalid {
                path,
                pointer,
                problem,
            } => ModelError::Invalid {
                path,
                pointer: prefix.clone().join(&pointer),
                problem,
            },
            other => other,
        }
    }
}

/// Why a model gave no reply.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    /// The request failed after its retries: the trial is a transport
    /// error, not a model failure, and the run goes on.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// Replay asked for a request the recording does not hold: the run stops.
    #[error(transparent)]
    NotRecorded(#[from] recording::NotRecorded),
    /// A batch could not be followed to its end: the run stops, and
    /// `--resume` follows it.
    #[error(transparent)]
    BatchUnfinished(crate::batch::Unfinished),
}

/// One model turn: the body as the provider sent it, and the tokens it used.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub body: Vec<u8>,
    pub usage: Usage,
    /// A request's timing (live models): the server's time apart from
    /// toolgauge's queue and retries. `None`: the whole wait was the
    /// model's (mocks, replays).
    pub timing: Option<Timing>,
    /// A streamed reply: when its parts came.
    pub stream: Option<StreamTiming>,
    /// A streamed reply, read as it came: what Parse reads of `body`,
    /// so that Parse need not read it again.
    pub parsed: Option<crate::provider::ParsedResponse>,
    /// `--record` could not keep this exchange: a replay will lack it.
    pub unrecorded: Option<std::sync::Arc<RecordingError>>,
}

impl Reply {
    /// Parse: what a streamed reply was read as while it came, or its
    /// body read now.
    pub fn parse(
        &mut self,
        provider: Provider,
    ) -> Result<crate::provider::ParsedResponse, crate::provider::ResponseError> {
        match self.parsed.take() {
            Some(parsed) => Ok(parsed),
            None => provider.parse_response(&self.body),
        }
    }
}

/// The calls of a streamed reply, each as the stream shows it complete,
/// with its place among the reply's calls.
pub type EarlyCalls = tokio::sync::mpsc::UnboundedReceiver<crate::call::EarlyCall>;

/// A reply to come.
pub type ReplyFuture<'a> = Pin<Box<dyn Future<Output = Result<Reply, ReplyError>> + Send + 'a>>;

/// Which trial a model is asked to play.
#[derive(Debug, Clone, Copy)]
pub struct TrialStart<'a> {
    pub scenario: &'a Scenario,
    pub trial: u32,
    /// Every random choice of the trial comes from this seed.
    pub seed: u64,
    /// The trial's seed shared by every model: what a live model whose
    /// `seed` is `"trial"` sends.
    pub shared_seed: u64,
    /// The trial's place among its model's in the run's report order.
    pub order: u64,
}

/// What a model asks of the run that holds it, told in one value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelTerms {
    /// At most this many attempts per trial (`None`: the scenario decides).
    pub max_attempts: Option<u32>,
    /// US dollars per million input and output tokens, if known, as the
    /// run charges them (a batched request at the batch rate).
    pub prices: Option<Prices>,
    /// Its requests go through a batch API (`run --batch`).
    pub batched: bool,
    /// At most this many of its trials under way at once (`None`: as
    /// many as the run's concurrency): a model that serves a few requests
    /// at a time gets a few trials, which then end in order, their rows
    /// written as the run goes.
    pub trials_at_once: Option<usize>,
}

/// A model ready to answer.
pub trait Model: Send + Sync + fmt::Debug {
    fn name(&self) -> &str;

    /// The wire format of its replies.
    fn provider(&self) -> Provider;

    /// What it asks of the run, as one value (the defaults: nothing).
    fn terms(&self) -> ModelTerms {
        ModelTerms::default()
    }

    /// A trial of this model is taken into the run's window: what this
    /// gives is held until the trial ends. A batched model's round waits
    /// for every trial held, so the harness takes it before any trial of
    /// the window asks.
    fn trial_coming(&self) -> Option<OpenTrial> {
        None
    }

    /// The scenarios this model cannot answer (a result file without their
    /// entry).
    fn unanswerable<'s>(&self, _scenarios: &'s [Scenario]) -> Vec<&'s str> {
        Vec::new()
    }

    /// The user's words and calls a recorded conversation holds for
    /// `scenario`'s trial `trial` (a replay plays both sides): they
    /// replace the scenario's simulated user. `None`: the scenario's user
    /// speaks.
    fn recorded_user(
        &self,
        _scenario: &str,
        _trial: u32,
    ) -> Option<Vec<crate::scenario::user::ScriptLine>> {
        None
    }

    /// Start one trial: its own conversation, its own random sequence.
    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a>;
}

/// One trial of one model: asked for each turn in order.
pub trait ModelTrial: Send {
    /// The reply for `attempt` (1-based). `returned` is what Return
    /// produced for the previous turn's calls (the provider's message
    /// array, as bytes); `None` on the first turn.
    fn reply<'s>(&'s mut self, attempt: u32, returned: Option<&'s [u8]>) -> ReplyFuture<'s>;

    /// The user speaks again (a conversation's next user turn, with the
    /// tools it gives): the next reply answers this after what came before.
    fn user_says(&mut self, _text: &str, _add_tools: &[String]) {}

    /// Before the first reply: the conversation opens with this system
    /// message, in place of one the scenario opens with (a task's
    /// `system_from`). Models that are not sent the messages ignore it.
    fn system_says(&mut self, _text: &str) {}

    /// Asked before [`ModelTrial::reply`]: where that reply's calls will
    /// come as each is complete, for a model that streams and runs calls
    /// early; `None` (the default): they come with the whole reply.
    fn early_calls(&mut self) -> Option<EarlyCalls> {
        None
    }
}
