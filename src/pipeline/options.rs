//! The pipeline value: its registry and options (how calls run, how much
//! output is kept, how errors are worded), and a turn's results.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::FeedbackStyle;
use crate::call::ToolResult;
use crate::tool::Registry;

/// Default bound on reads running at once.
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;
/// Default limit on a tool's output before it is truncated.
pub const DEFAULT_OUTPUT_LIMIT: usize = 32 * 1024;

/// How the calls of one turn are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecMode {
    /// Reads concurrently, writes alone as barriers.
    #[default]
    Parallel,
    /// Every call alone, one after the other.
    Serial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecOptions {
    pub mode: ExecMode,
    pub max_concurrency: usize,
    pub output_limit: usize,
    /// How errors are worded for the model.
    pub feedback: FeedbackStyle,
    /// Images a tool returned go to the model as image parts (its
    /// `api.images`); otherwise only the line naming each.
    pub images: bool,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            mode: ExecMode::Parallel,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            feedback: FeedbackStyle::PointerList,
            images: false,
        }
    }
}

/// Validates and executes calls against one registry.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub(crate) registry: Arc<Registry>,
    pub(crate) options: ExecOptions,
}

impl Pipeline {
    pub fn new(registry: Arc<Registry>, options: ExecOptions) -> Self {
        Pipeline { registry, options }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn options(&self) -> ExecOptions {
        self.options
    }
}

/// The results of one turn's calls, in call order, with timings.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub results: Vec<ToolResult>,
    /// From the first call's start to the last call's end.
    pub makespan: Duration,
    /// The makespan an ideal scheduler would reach given the write
    /// barriers: each read group takes its longest call, each write its own.
    pub ideal_makespan: Duration,
    /// Wall-clock start, for log timestamps.
    pub started_at: SystemTime,
}

impl Batch {
    /// What the batch would have taken with every call run one by one.
    pub fn serial_makespan(&self) -> Duration {
        self.results.iter().map(|r| r.elapsed).sum()
    }

    pub fn error_count(&self) -> usize {
        self.results.iter().filter(|r| r.is_error()).count()
    }
}
