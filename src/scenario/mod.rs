//! Scenarios: the file format (serde types checked against the published
//! JSON Schema `scenarios/scenario.schema.json`), loading a suite with
//! located errors, and expectations (which calls count as correct).

mod call_file;
mod checks;
mod compile;
mod expect;
mod file;
pub mod judge;
mod load;
mod loaded;
pub mod matcher;
mod order;
pub mod probe;
pub mod task;
pub mod user;

pub use call_file::ExpectedCallFile;
pub use checks::{Milestone, MilestoneFile, StepBy, StoreEntry};
pub use expect::{Expectation, ExpectedCall, Order, Rules, Verdict};
pub use file::{
    DEFAULT_MAX_RETRIES, ExpectFile, McpEntry, OpeningFile, ScenarioFile, ScriptCall, ScriptTurn,
    ToolEntry,
};
pub use judge::{TaskJudge, TurnMarks};
pub use load::{
    LoadError, SCENARIO_SCHEMA, Skipped, Suite, load_scenario, load_suite, load_suites,
};
pub(crate) use loaded::{FNV_OFFSET, fnv1a};
pub use loaded::{Scenario, suite_digest};
pub use order::prerequisites;
pub use probe::{Probe, ScoreFile};
pub use task::{Task, UserTurn};
