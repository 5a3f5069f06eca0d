//! The models under evaluation, behind one [`Model`] trait: mocks
//! (`mock`: scripted, stochastic, feedback-aware), live models over HTTP
//! (`live`) and the replay of a published BFCL run (`bfcl_replay`). A
//! model starts one [`ModelTrial`] per trial, which owns that trial's side
//! of the conversation: it is asked for a reply, given what Return
//! produced for its last calls. Replies come as the provider's response
//! bytes, so Parse runs on every turn. The harness never knows which kind
//! it drives.

mod bfcl_replay;
pub mod judge;
pub mod live;
mod mock;
pub mod operators;
pub mod recording;
mod task_play;
mod tau2_replay;
pub mod user_sim;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::call::{Prices, StreamTiming, Usage};
use crate::provider::{ApiSettings, Provider};
use crate::scenario::Scenario;
use crate::source::{self, FileError};
use crate::transport::{Timing, TransportError};

pub use crate::bfcl::results::{BfclResults, ResultsFormat};
pub use live::{LiveModel, LiveOptions};
pub use operators::Operator;
pub use recording::{NotRecorded, Position, RecordingError, Replayer};

/// A model file (`scenarios/models/*.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub name: String,
    pub kind: ModelKind,
    /// The wire format its replies use.
    #[serde(default = "default_provider")]
    pub provider: Provider,
    #[serde(default)]
    pub parameters: Parameters,
    /// `bfcl-results`: the BFCL result file (JSON Lines); `tau2-results`:
    /// a tau2 Results JSON. Relative to the model file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
    /// `bfcl-results`: how the run's model answered: `fc` (function
    /// calling, the default) or `prompt` (call syntax, decoded as BFCL
    /// decodes prompting models' outputs).
    #[serde(default, skip_serializing_if = "ResultsFormat::is_fc")]
    pub results_format: ResultsFormat,
    /// Live kinds (`openai`, `anthropic`, `gemini`): endpoint, key, options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiSettings>,
    /// How this model's errors are worded (`--feedback` otherwise): two
    /// files on one model with different styles pair as two arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<crate::pipeline::FeedbackStyle>,
}

impl ModelFile {
    /// Its `api.images`: images tools return go to it as image parts.
    pub fn takes_images(&self) -> bool {
        self.api.as_ref().is_some_and(|api| api.images)
    }
}

fn default_provider() -> Provider {
    Provider::OpenAi
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    Scripted,
    Stochastic,
    FeedbackAware,
    /// Answers each BFCL entry with a published run's output, once.
    BfclResults,
    /// Replays a tau2 Results JSON's conversations, both sides.
    Tau2Results,
    /// A live model over HTTP, by wire format.
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI's Responses API.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    Anthropic,
    Gemini,
}

impl ModelKind {
    /// At most this many attempts per trial, whatever the scenario allows:
    /// a published run has one answer per entry.
    pub fn max_attempts(self) -> Option<u32> {
        (self == ModelKind::BfclResults).then_some(1)
    }

    /// The wire format of a live kind.
    pub fn live_provider(self) -> Option<Provider> {
        match self {
            ModelKind::OpenAi => Some(Provider::OpenAi),
            ModelKind::OpenAiResponses => Some(Provider::OpenAiResponses),
            ModelKind::Anthropic => Some(Provider::Anthropic),
            ModelKind::Gemini => Some(Provider::Gemini),
            _ => None,
        }
    }
}

/// How a mock behaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameters {
    /// Probability of a correct turn on the first attempt.
    #[serde(default = "one")]
    pub p_first: f64,
    /// After a failed attempt k, the probability that attempt k+1 is
    /// correct: `p_fix[0]` for the second attempt, `p_fix[1]` for the
    /// third, the last value for any later one. Absent: `p_first`.
    #[serde(
        default,
        deserialize_with = "non_empty_probabilities",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub p_fix: Vec<f64>,
    /// Relative weights of the error operators; missing ones weigh 1.
    #[serde(default)]
    pub operators: BTreeMap<Operator, f64>,
    /// Response latency.
    #[serde(default)]
    pub latency_ms: u64,
    /// Extra latency drawn uniformly from 0..=jitter_ms.
    #[serde(default)]
    pub jitter_ms: u64,
}

fn one() -> f64 {
    1.0
}

/// `p_fix` given empty says nothing: refused, not read as "absent".
fn non_empty_probabilities<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<f64>, D::Error> {
    let values = Vec::<f64>::deserialize(deserializer)?;
    if values.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty list gives no probability: give one per later attempt ([0.8, 0.5]), or leave p_fix out (later attempts then use p_first)",
        ));
    }
    Ok(values)
}

impl Default for Parameters {
    fn default() -> Self {
        Parameters {
            p_first: 1.0,
            p_fix: Vec::new(),
            operators: BTreeMap::new(),
            latency_ms: 0,
            jitter_ms: 0,
        }
    }
}

/// A model file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    File(#[from] FileError),
    /// A field of the file, by JSON pointer.
    #[error("{}{pointer}: {problem}", file_prefix(path))]
    Invalid {
        path: Option<PathBuf>,
        pointer: String,
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
}

/// The model files a run names: `paths` (files, or folders of them), or
/// with none the nearest `models/` folder in `suite` or above it. Names
/// must be unique.
pub fn load_files(paths: &[PathBuf], suite: Option<&Path>) -> Result<Vec<ModelFile>, ModelError> {
    let sources = if paths.is_empty() {
        // The suite's own models/ folder, or a parent's (`run
        // scenarios/bfcl` finds scenarios/models).
        let default = suite
            .unwrap_or(Path::new("."))
            .ancestors()
            .map(|dir| dir.join("models"))
            .find(|models| models.is_dir())
            .unwrap_or_else(|| PathBuf::from("scenarios/models"));
        vec![default]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for source in &sources {
        if source.is_dir() {
            let folder = |e: std::io::Error| ModelError::Folder {
                path: source.clone(),
                source: e,
            };
            let mut found: Vec<PathBuf> = std::fs::read_dir(source)
                .map_err(folder)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else if source.exists() {
            files.push(source.clone());
        } else {
            return Err(ModelError::Missing(source.clone()));
        }
    }
    if files.is_empty() {
        return Err(ModelError::NoneFound);
    }
    let mut models: Vec<ModelFile> = Vec::new();
    for file in files {
        let model = ModelFile::load(&file)?;
        if models.iter().any(|m| m.name == model.name) {
            return Err(ModelError::NameTwice {
                path: file,
                name: model.name,
            });
        }
        models.push(model);
    }
    Ok(models)
}

fn file_prefix(path: &Option<PathBuf>) -> String {
    path.as_ref()
        .map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

impl ModelError {
    fn invalid(pointer: impl Into<String>, problem: impl Into<String>) -> ModelError {
        ModelError::Invalid {
            path: None,
            pointer: pointer.into(),
            problem: problem.into(),
        }
    }

    fn in_file(self, file: &Path) -> ModelError {
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
    /// `--record` could not keep this exchange: a replay will lack it.
    pub unrecorded: Option<std::sync::Arc<RecordingError>>,
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

/// A model ready to answer.
pub trait Model: Send + Sync + fmt::Debug {
    fn name(&self) -> &str;

    /// The wire format of its replies.
    fn provider(&self) -> Provider;

    /// At most this many attempts per trial (`None`: the scenario decides).
    fn max_attempts(&self) -> Option<u32> {
        None
    }

    /// US dollars per million input and output tokens, if known.
    fn prices(&self) -> Option<Prices> {
        None
    }

    /// At most this many of its trials under way at once (`None`: as many
    /// as the run's concurrency): a model that serves a few requests at a
    /// time gets a few trials, which then end in order, their rows written
    /// as the run goes.
    fn trials_at_once(&self) -> Option<usize> {
        None
    }

    /// The scenarios this model cannot answer (a result file without their
    /// entry).
    fn unanswerable<'s>(&self, _scenarios: &'s [Scenario]) -> Vec<&'s str> {
        Vec::new()
    }

    /// The user's words a recorded conversation holds for `scenario`'s
    /// trial `trial` (a replay plays both sides): they replace the
    /// scenario's simulated user. `None`: the scenario's user speaks.
    fn recorded_user(&self, _scenario: &str, _trial: u32) -> Option<Vec<String>> {
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

    /// Asked before [`ModelTrial::reply`]: where that reply's calls will
    /// come as each is complete, for a model that streams and runs calls
    /// early; `None` (the default): they come with the whole reply.
    fn early_calls(&mut self) -> Option<EarlyCalls> {
        None
    }
}

impl ModelFile {
    /// Read a model file; a `results` path is relative to it.
    pub fn load(path: &Path) -> Result<ModelFile, ModelError> {
        let mut file: ModelFile = source::read_json(path)?;
        if let (Some(results), Some(dir)) = (&file.results, path.parent()) {
            // Whole, so that run.json names it from any folder.
            let joined = dir.join(results);
            file.results = Some(std::path::absolute(&joined).unwrap_or(joined));
        }
        file.check().map_err(|e| e.in_file(path))?;
        Ok(file)
    }

    /// Problems a person must fix, by JSON pointer into the file.
    pub fn check(&self) -> Result<(), ModelError> {
        // The name names files (doctor-<name>.json) and report rows.
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 128
            && !self.name.starts_with('.')
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@'));
        if !name_ok {
            return Err(ModelError::invalid(
                "/name",
                format!(
                    "{:?} is not a model name: use 1 to 128 letters, digits and - _ . : @, not starting with .",
                    self.name
                ),
            ));
        }
        let p = &self.parameters;
        let probabilities = std::iter::once(("/parameters/p_first".to_owned(), p.p_first)).chain(
            p.p_fix
                .iter()
                .enumerate()
                .map(|(i, x)| (format!("/parameters/p_fix/{i}"), *x)),
        );
        for (pointer, probability) in probabilities {
            if !(0.0..=1.0).contains(&probability) {
                return Err(ModelError::invalid(
                    pointer,
                    format!("{probability} is outside 0..=1"),
                ));
            }
        }
        mock::weights(p)?;
        match (self.kind, &self.results) {
            (ModelKind::BfclResults, None) => {
                return Err(ModelError::invalid(
                    "/results",
                    "a bfcl-results model needs \"results\": the BFCL result file",
                ));
            }
            (ModelKind::Tau2Results, None) => {
                return Err(ModelError::invalid(
                    "/results",
                    "a tau2-results model needs \"results\": the Results JSON tau2 saved",
                ));
            }
            (ModelKind::BfclResults | ModelKind::Tau2Results, Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                return Err(ModelError::invalid(
                    "/results",
                    "\"results\" is only for bfcl-results and tau2-results models",
                ));
            }
        }
        if self.kind != ModelKind::BfclResults && !self.results_format.is_fc() {
            return Err(ModelError::invalid(
                "/results_format",
                "\"results_format\" is only for bfcl-results models",
            ));
        }
        match (self.kind.live_provider(), &self.api) {
            (Some(_), Some(api)) => api
                .check()
                .map_err(|e| ModelError::invalid(e.pointer, e.problem)),
            (Some(_), None) => Err(ModelError::invalid(
                "/api",
                "a live model needs an \"api\" block (at least \"model\")",
            )),
            (None, Some(_)) => Err(ModelError::invalid(
                "/api",
                "\"api\" is only for live models (kind openai, openai-responses, anthropic or gemini)",
            )),
            (None, None) => Ok(()),
        }
    }

    pub fn is_live(&self) -> bool {
        self.kind.live_provider().is_some()
    }
}

/// Make a model ready to answer: a mock at once, a BFCL replay with its
/// result file read, a live model with its key, client and recording.
pub fn build(
    file: &ModelFile,
    options: &LiveOptions,
    replayer: Option<Arc<Replayer>>,
) -> Result<Arc<dyn Model>, ModelError> {
    file.check()?;
    if let (Some(provider), Some(api)) = (file.kind.live_provider(), &file.api) {
        let live = LiveModel::connect(&file.name, provider, api, options, replayer)?;
        return Ok(Arc::new(live));
    }
    if file.kind == ModelKind::BfclResults {
        let path = file.results.as_deref().expect("checked: results is set");
        let results = BfclResults::load(path, file.results_format)?;
        return Ok(Arc::new(bfcl_replay::BfclReplay::new(
            &file.name,
            file.provider,
            results,
        )));
    }
    if file.kind == ModelKind::Tau2Results {
        let path = file.results.as_deref().expect("checked: results is set");
        let results = crate::tau2::results::Tau2Results::load(path)?;
        return Ok(Arc::new(tau2_replay::Tau2Replay::new(
            &file.name,
            file.provider,
            results,
        )));
    }
    Ok(Arc::new(mock::MockModel::new(file)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(parameters: serde_json::Value) -> Result<(), String> {
        let file: ModelFile = serde_json::from_value(serde_json::json!({
            "name": "m", "kind": "stochastic", "parameters": parameters
        }))
        .unwrap();
        file.check().map_err(|e| e.to_string())
    }

    #[test]
    fn range_errors_in_model_files_name_the_field() {
        let error = |p| check(p).err().unwrap();
        assert_eq!(
            error(serde_json::json!({"p_fix": [0.5, 1.5]})),
            "/parameters/p_fix/1: 1.5 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"p_first": -0.1})),
            "/parameters/p_first: -0.1 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"operators": {"wrong_type": -1.0}})),
            "/parameters/operators/wrong_type: weight -1 must be finite and >= 0"
        );
        assert!(check(serde_json::json!({"p_fix": [0.0, 1.0]})).is_ok());
    }
}
