//! The models under evaluation, behind one [`Model`] trait: mocks
//! (`mock`: scripted, stochastic, feedback-aware), live models over HTTP
//! (`live`) and the replay of a published BFCL run (`bfcl_replay`). A
//! model starts one [`ModelTrial`] per trial, which owns that trial's side
//! of the conversation: it is asked for a reply, given what Return
//! produced for its last calls. Replies come as the provider's response
//! bytes, so Parse runs on every turn. The harness never knows which kind
//! it drives; `file` reads what each kind is given.

mod bfcl_replay;
mod build;
mod file;
pub mod judge;
pub mod live;
mod mock;
pub mod operators;
pub mod recording;
mod task_play;
mod tau2_replay;
mod traits;
pub mod user_sim;

pub use crate::bfcl::results::{BfclResults, ResultsFormat};
pub use build::build;
pub use file::{
    BfclResultsSpec, LiveSpec, MockKind, MockSpec, ModelFile, ModelKind, ModelSpec, Parameters,
    Tau2ResultsSpec, load_files,
};
pub use live::{LiveModel, LiveOptions};
pub use operators::Operator;
pub use recording::{NotRecorded, Position, RecordingError, Replayer};
pub use traits::{
    EarlyCalls, Model, ModelError, ModelTerms, ModelTrial, Reply, ReplyError, ReplyFuture,
    TrialStart,
};
