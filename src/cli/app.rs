//! The command line's definition (clap), its errors by kind with the one
//! match from kind to exit code, and the dispatch to each subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use super::{
    BenchReportArgs, CheckToolsArgs, CliError, DoctorArgs, ExecArgs, FuzzArgs, ImportArgs,
    ReportArgs, RunArgs, bench_report, check_tools, doctor, exec, fuzz, import, report, signals,
    tools,
};

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
        Command::Run(args) => super::run::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Report(args) => report::run(&args),
        Command::BenchReport(args) => bench_report::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Tools(args) => tools::run(&args),
        Command::Import(args) => import::run(&args),
    }
}
