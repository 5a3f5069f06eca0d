//! Reports, fed plain trial outcomes and events: a [`RunEvent`] goes to
//! every [`Reporter`] through one fan-out ([`Reporters`]), which also
//! keeps the run's measures ([`Aggregate`](crate::metrics::Aggregate)).
//! Each file has its reporter: trials.csv (`trials`), session.jsonl
//! (`session`), the summary CSVs (`summary`; scores.csv from `scores`),
//! summary.md (`markdown`), junit.xml (`junit`), and the threshold gate
//! for CI ([`Gate`]). `compare` reads two runs' summaries;
//! `tau2_summary` gives tau2's own metrics of a run's tau2 domains. CSV rows are
//! serde structs: the struct is the column contract, documented in
//! reports/README.md. Nothing here knows how trials are run.

mod batches;
pub mod bench;
mod bfcl_tables;
pub mod charts;
mod compare;
mod events;
mod gate;
mod html;
mod junit;
mod markdown;
pub mod otel;
mod recovery;
mod reporters;
mod scores;
mod session;
mod streamed;
mod summary;
pub mod svg;
mod tau2_summary;
#[cfg(test)]
pub(crate) mod test_runs;
mod trial_row;
pub mod trials;

pub use batches::BatchRecord;
pub use bfcl_tables::{BfclTally, ModelTally};
pub use compare::{Change, CompareError, Comparison, ModelChange, compare};
pub use events::{
    FinishedTrial, ModelInfo, Notice, Reporter, RunEvent, RunInfo, ScenarioInfo, Thresholds, p_text,
};
pub(crate) use events::{header_of, round};
pub use gate::{Gate, Violation, cell_violations, lost_causes, violations};
pub use html::HtmlReport;
pub use junit::JUnitXml;
pub use markdown::{Markdown, terminal_summary};
pub use recovery::{RecoveryRow, recovery_rows, recovery_table, write_recovery_csv};
pub use reporters::{Reporters, RunFiles, held_run};
pub use session::{JobKey, SessionFile};
pub use summary::SummaryCsvs;
pub use tau2_summary::{ComponentRate, Tau2Metrics, tau2_metrics};
pub use trial_row::TrialRow;
pub use trials::{TrialReader, TrialsCsv};
