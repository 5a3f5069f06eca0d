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

mod app;
mod bench_report;
mod check_tools;
mod doctor;
mod error;
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

pub use app::{Cli, Command, run};
pub use bench_report::BenchReportArgs;
pub use check_tools::CheckToolsArgs;
pub use doctor::DoctorArgs;
pub use error::{CliError, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, for_terminal};
pub use exec::ExecArgs;
pub use fuzz::FuzzArgs;
pub use import::ImportArgs;
pub use report::ReportArgs;
pub use run::RunArgs;
