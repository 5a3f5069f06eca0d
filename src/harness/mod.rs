//! The runner: models x scenarios x trials, the self-correction loop, the
//! virtual or real clock, concurrency and sharding. Each turn of a trial
//! goes through the pipeline whole
//! ([`Pipeline::turn`](crate::pipeline::Pipeline::turn)); finished trials
//! go to the reporters as events in a fixed order (model, scenario, trial)
//! whatever order they finish in, so seeded runs write identical files.
//! `merge` replays shards' trials through the same reporters; `run_file`
//! is run.json.

mod budget;
mod chain;
mod clock;
mod flag_values;
mod job;
pub mod merge;
mod models;
mod plan;
mod run_error;
pub mod run_file;
mod runner;
mod settings;
mod setup;
mod setup_error;
mod shard;
mod simulated_user;
mod suite_paths;
mod task;
mod transcript;
mod trial;

pub use budget::{Admission, Budget, BudgetLimits, Spent};
pub use chain::Chains;
pub use clock::Clock;
pub use job::Job;
pub use plan::{RunPlan, scenario_infos};
pub(crate) use plan::{file_name, splitmix};
pub use run_error::RunError;
pub use runner::{Replay, batch_records, run, run_trial, run_until};
pub use settings::{RunRequest, Settings};
pub use setup::{Notes, PreparedRun, RunEnding};
pub use setup_error::{ForeignTrial, SetupError};
pub use shard::{Shard, ShardError};
pub use suite_paths::SuitePaths;
pub use trial::Notices;
