//! Why a run could not start: every kind is bad input, named with the
//! flag, file or field at fault.

use std::path::PathBuf;

use super::run_file::SuiteChanged;
use super::settings::SettingsError;
use crate::doctor::DoctorError;
use crate::model::{ModelError, RecordingError};
use crate::scenario::LoadError;

/// Why a run could not start. Every kind is bad input.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("--resume {}: no trials.csv there: is it a run's report folder?", dir.display())]
    NotARun { dir: PathBuf },
    #[error("--resume {}: cannot read the run's configuration: {source}", dir.display())]
    Record {
        dir: PathBuf,
        source: crate::source::FileError,
    },
    #[error(
        "--resume: run.json names live model(s) {models}; a key goes only to an endpoint a model \
         file you give names: give their files again with --models (the same contents)"
    )]
    ResumeNeedsModels { models: String },
    #[error("run.json: model {model:?}: {source}")]
    RecordedModel { model: String, source: ModelError },
    #[error(
        "--out {}: already holds a run ({file}); use --resume {0} to continue it, \
         --force to replace it, or another --out", out.display()
    )]
    OutHeld { out: PathBuf, file: String },
    #[error(transparent)]
    Models(#[from] ModelError),
    #[error(
        "{flag} {does}, and no model of this run is live (kind openai, openai-responses, \
         anthropic or gemini); leave {flag} out, or name live models with --models"
    )]
    NoLiveModel {
        flag: &'static str,
        does: &'static str,
    },
    #[error(transparent)]
    JudgeState(#[from] crate::tool::mcp::judges::StateError),
    #[error("--replay: {0}")]
    Replay(RecordingError),
    #[error(transparent)]
    Doctor(#[from] DoctorError),
    #[error("{} bad scenario file(s); no trial was run:\n{}", .0.len(), lines(.0))]
    Suite(Vec<LoadError>),
    #[error("--resume: {0}; resuming would mix two runs")]
    SuiteChanged(SuiteChanged),
    #[error(
        "model {model:?} has no recorded result for {count} scenario(s), e.g. {first:?}; \
         run only the scenarios its result file covers"
    )]
    Unanswerable {
        model: String,
        count: usize,
        first: String,
    },
    #[error(transparent)]
    ForeignTrial(Box<ForeignTrial>),
    #[error(
        "--max-cost: model {model:?} has no api.prices, so what it spends cannot be counted; \
         give its prices, or use --max-tokens"
    )]
    BudgetWithoutPrices { model: String },
    #[error("--batch cannot go with {flag}: {why}")]
    BatchWith {
        flag: &'static str,
        why: &'static str,
    },
    #[error("{}: {source}", scenario.display())]
    UserModel {
        scenario: PathBuf,
        source: ModelError,
    },
    #[error(transparent)]
    Otlp(#[from] crate::report::otel::OtlpSetupError),
    #[error("--otlp and --otlp-file read each trial's session log: drop --no-session")]
    OtlpWithoutSession,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A finished trial of a resumed run that the run does not hold.
#[derive(Debug, thiserror::Error)]
#[error(
    "--resume {}: {}: trial {trial} of {model:?} / {scenario:?} is not part of this run ({trials} trials{shard})",
    dir.display(), file.display()
)]
pub struct ForeignTrial {
    pub(super) dir: PathBuf,
    pub(super) file: PathBuf,
    pub(super) trial: u32,
    pub(super) model: String,
    pub(super) scenario: String,
    pub(super) trials: u32,
    /// `, shard K/N` when the run is a shard.
    pub(super) shard: String,
}

fn lines(errors: &[LoadError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    lines.join("\n")
}
