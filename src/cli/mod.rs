//! The command-line interface: clap definitions, and one file per
//! subcommand that turns arguments into library calls. No logic that the
//! library should own lives here.
//!
//! Exit codes: 0 all is well; 1 a check found problems; 2 bad input or
//! usage (a file that cannot be read, is not JSON, or is not what it
//! should be); 130 a run stopped by Ctrl-C (its finished trials kept for
//! `--resume`).

// The one place that writes to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_report;
mod check_tools;
mod doctor;
mod exec;
mod fuzz;
mod import;
pub mod progress;
mod report;
mod run;
mod signals;
mod tool_source;
mod tools;
mod tools_check;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use bench_report::BenchReportArgs;
pub use check_tools::CheckToolsArgs;
pub use doctor::DoctorArgs;
pub use exec::ExecArgs;
pub use fuzz::FuzzArgs;
pub use import::ImportArgs;
pub use report::ReportArgs;
pub use run::RunArgs;

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
/// 128 + SIGINT, as shells report a command stopped by Ctrl-C (143 for
/// SIGTERM).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Measure how LLM agents call tools.
#[derive(Debug, Parser)]
#[command(name = "toolgauge", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of `run`'s flags costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a JSON array of tool definitions; print every problem.
    CheckTools(CheckToolsArgs),
    /// Run one model response through the pipeline and print the result messages.
    Exec(ExecArgs),
    /// Run a suite: models x scenarios x trials, with self-correction; write reports.
    Run(RunArgs),
    /// Probe a live model's endpoint before trusting a run against it: tool
    /// calls, whether tool results and errors reach the model, parallel
    /// calls, tool_choice, truncation, usage (exit 1 when a self-correction
    /// run would not measure what it claims).
    Doctor(DoctorArgs),
    /// Merge shard reports, or compare a run against a baseline.
    Report(ReportArgs),
    /// Fuzz tool validators with generated valid and invalid arguments.
    Fuzz(FuzzArgs),
    /// Convert an external benchmark's entries into scenario files.
    Import(ImportArgs),
    /// List a tool source's definitions (a file or an MCP server) in any
    /// provider's format, checked.
    Tools(tools::ToolsArgs),
    /// Write reports/bench.csv and bench.md from criterion's results and the Node anchor's.
    BenchReport(BenchReportArgs),
}

/// Text as it may reach the terminal: no known key in it, and every
/// control sequence a server, a bridge or a model sent shown, not obeyed.
pub fn for_terminal(text: &str) -> String {
    crate::excerpt::terminal_safe(&crate::secret::redact(text)).into_owned()
}

/// What stops a command, worded for the person at the terminal: the
/// library's own typed errors, carried whole, or a problem with the
/// command line itself; [`CliError::exit_code`] maps each kind to its
/// exit code in one place. A failed check is an exit code, not an error.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag, a path or a combination of them, worded here.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    File(#[from] crate::source::FileError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error(transparent)]
    Recording(#[from] crate::model::RecordingError),
    #[error(transparent)]
    NotRecorded(#[from] crate::model::NotRecorded),
    #[error(transparent)]
    Tools(#[from] crate::tool::RegistryError),
    #[error(transparent)]
    Merge(#[from] crate::harness::merge::MergeError),
    #[error(transparent)]
    Compare(#[from] crate::report::CompareError),
    #[error(transparent)]
    Bench(#[from] crate::report::bench::BenchError),
    #[error(transparent)]
    Import(#[from] crate::bfcl::import::ImportError),
    #[error(transparent)]
    Tau2(#[from] crate::tau2::Tau2Error),
    #[error(transparent)]
    Doctor(#[from] crate::doctor::DoctorError),
    #[error(transparent)]
    Setup(Box<crate::harness::SetupError>),
    #[error(transparent)]
    Mcp(#[from] crate::tool::mcp::McpError),
    #[error(transparent)]
    JudgeState(#[from] crate::tool::mcp::judges::StateError),
    #[error(transparent)]
    Fuzz(#[from] crate::fuzz::run::FuzzError),
    #[error(transparent)]
    Validator(#[from] crate::fuzz::session::BadValidator),
    #[error(transparent)]
    Run(#[from] crate::harness::RunError),
    /// Tool definitions that could not be written out as JSON.
    #[error("cannot write the tools as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

impl From<crate::harness::SetupError> for CliError {
    fn from(error: crate::harness::SetupError) -> Self {
        CliError::Setup(Box::new(error))
    }
}

impl CliError {
    /// The documented exit code of each kind of error: an interrupted run
    /// says which signal stopped it; everything else is bad input or
    /// usage (a file, a flag, a server or a validator the user named that
    /// does not work as given).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Run(crate::harness::RunError::Interrupted { .. }) => EXIT_INTERRUPTED,
            // Not bad input: the run is not complete, and --resume goes on.
            CliError::Run(crate::harness::RunError::BatchUnfinished(_)) => EXIT_FAILED,
            CliError::Usage(_)
            | CliError::File(_)
            | CliError::Model(_)
            | CliError::Recording(_)
            | CliError::NotRecorded(_)
            | CliError::Tools(_)
            | CliError::Merge(_)
            | CliError::Compare(_)
            | CliError::Bench(_)
            | CliError::Import(_)
            | CliError::Tau2(_)
            | CliError::Doctor(_)
            | CliError::Setup(_)
            | CliError::Mcp(_)
            | CliError::JudgeState(_)
            | CliError::Fuzz(_)
            | CliError::Validator(_)
            | CliError::Run(_)
            | CliError::Json(_)
            | CliError::Runtime(_) => EXIT_BAD_INPUT,
        }
    }
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    signals::install();
    // What a signal that ends the process at once says it interrupted.
    signals::doing(match &cli.command {
        Command::CheckTools(_) => "while checking the tool definitions; nothing was written",
        Command::Exec(_) => "while running the reply through the pipeline",
        Command::Run(_) => "during start-up; nothing was run",
        Command::Doctor(_) => "while probing the endpoint; no diagnosis was written",
        Command::Report(_) => "while writing reports; each file is written whole or not at all",
        Command::Fuzz(_) => "while starting the validators; nothing was fuzzed",
        Command::Import(_) => "while importing; the scenario files written so far are whole",
        Command::Tools(_) => "while reading the tool source",
        Command::BenchReport(_) => "while reading the bench results",
    });
    match cli.command {
        Command::CheckTools(args) => check_tools::run(&args),
        Command::Exec(args) => exec::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Report(args) => report::run(&args),
        Command::BenchReport(args) => bench_report::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Tools(args) => tools::run(&args),
        Command::Import(args) => import::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::RunError;

    #[test]
    fn each_error_keeps_its_kind_and_its_exit_code() {
        let interrupted = CliError::from(RunError::Interrupted {
            finished: 3,
            total: 10,
        });
        assert_eq!(interrupted.exit_code(), EXIT_INTERRUPTED);
        assert_eq!(
            interrupted.to_string(),
            "interrupted after 3 of 10 trial(s)"
        );
        let no_cases = CliError::from(crate::fuzz::run::FuzzError::NoCases);
        assert!(matches!(no_cases, CliError::Fuzz(_)));
        assert_eq!(no_cases.exit_code(), EXIT_BAD_INPUT);
        let unwritable = CliError::from(RunError::Io(std::io::Error::other("disk full")));
        assert_eq!(unwritable.exit_code(), EXIT_BAD_INPUT);
    }
}
