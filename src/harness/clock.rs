//! The clock a run's latencies run on.

/// Which clock latencies run on.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    // tokio's paused clock: simulated latency costs no wall time and
    // timings are exact (a comment, not a doc: `--clock`'s help says it).
    #[default]
    Virtual,
    Real,
}
