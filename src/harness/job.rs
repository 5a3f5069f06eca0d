//! A job: one trial of one model on one scenario, the unit the runner
//! schedules, the plan seeds and chains wait on.

/// One trial of one model on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Job {
    pub model: usize,
    pub scenario: usize,
    pub trial: u32,
}
