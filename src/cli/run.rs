//! `toolgauge run SUITE`: models x scenarios x trials with self-correction,
//! reports written as trials finish.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::progress::{Progress, ProgressMode};
use super::{CliError, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::harness::{BudgetLimits, PreparedRun, RunEnding, RunError, RunRequest, Spent};
use crate::report::Violation;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run's flags: the library's own request, parsed by clap.
    #[command(flatten)]
    pub request: RunRequest,
    /// No progress output (the verdict is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Print the per-scenario table after the verdict, however long (by
    /// default only when it has at most 40 rows).
    #[arg(long)]
    pub table: bool,
}

pub fn run(args: &RunArgs) -> Result<ExitCode, CliError> {
    let prepared = PreparedRun::prepare(&args.request)?;
    say_notes(&prepared, args.quiet);
    let out = prepared.out.clone();
    let mut progress = Progress::new(if args.quiet {
        ProgressMode::Quiet
    } else {
        ProgressMode::Auto
    });
    // SIGINT and SIGTERM stop the run the same way; between trials and
    // after them a stop at once says where the run's trials are.
    super::signals::doing(
        "while running; every finished trial is in trials.csv (run --resume continues it)",
    );
    let ending = prepared.execute(&mut progress, args.table, super::signals::requested());
    super::signals::doing(
        "while writing the run's reports; every trial is in trials.csv (report html writes report.html again)",
    );
    let ending = match ending {
        Ok(ending) => ending,
        Err(RunError::Io(e)) => return Err(CliError::Usage(format!("{}: {e}", out.display()))),
        Err(RunError::BatchUnfinished(batch)) => {
            say_batches(&out);
            say_how_to_follow(&out, &args.request.models);
            return Err(RunError::BatchUnfinished(batch).into());
        }
        Err(error) => return Err(error.into()),
    };
    let (table, violations) = match ending {
        RunEnding::Interrupted { finished, total } => {
            // A batch sent runs on at its provider: say which.
            say_batches(&out);
            let (signal, code) = super::signals::received().unwrap_or(("SIGINT", EXIT_INTERRUPTED));
            eprintln!(
                "interrupted ({signal}): {finished} of {total} trial(s) are in {}; \
                 continue with: {}",
                out.join("trials.csv").display(),
                resume_command(&out, &args.request.models)
            );
            return Ok(ExitCode::from(code));
        }
        RunEnding::BudgetSpent {
            finished,
            total,
            spent,
            limits,
            cut,
        } => {
            say_budget_spent(&out, &args.request.models, finished, total, spent, limits);
            say_cut_spend(cut);
            return Ok(ExitCode::from(EXIT_FAILED));
        }
        RunEnding::Finished {
            verdict: table,
            violations,
            sources,
        } => {
            sources.iter().for_each(say_server_stats);
            (table, violations)
        }
    };
    println!("{table}");
    if !args.quiet {
        eprintln!("reports written to {}", out.display());
    }
    Ok(verdict(&violations))
}

/// A finished run passes, or its results below threshold are told.
fn verdict(violations: &[Violation]) -> ExitCode {
    if violations.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "{} model x scenario result(s) below threshold:",
        violations.len()
    );
    for v in violations {
        let line = format!("  {} / {}: {}", v.model, v.scenario, v.message);
        eprintln!("{}", super::for_terminal(&line));
    }
    ExitCode::from(EXIT_FAILED)
}

/// What setting the run up found: warnings always, the rest unless quiet.
fn say_notes(prepared: &PreparedRun, quiet: bool) {
    for warning in &prepared.notes.warnings {
        eprintln!("warning: {}", super::for_terminal(warning));
    }
    if !quiet {
        for line in &prepared.notes.info {
            eprintln!("{}", super::for_terminal(line));
        }
    }
}

/// A batch could not be followed: what is kept, how to go on.
fn say_how_to_follow(out: &Path, models: &[PathBuf]) {
    eprintln!(
        "the run stopped: every finished trial is in {}; continue with: {} \
         (it follows the batch, not sending it again)",
        out.join("trials.csv").display(),
        resume_command(out, models)
    );
}

/// The command that resumes the run in `out`, with the model files the
/// user gave (a live model's key goes only where a file given names).
fn resume_command(out: &Path, models: &[PathBuf]) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut command = format!("toolgauge run --resume {}", absolute(out).display());
    for model in models {
        command.push_str(&format!(" --models {}", absolute(model).display()));
    }
    command
}

/// The run's batches, each with how it ended, from its ledger.
fn say_batches(out: &Path) {
    let entries = crate::batch::ledger::entries(out).unwrap_or_default();
    for batch in crate::harness::batch_records(entries) {
        eprintln!("{}", super::for_terminal(&batch.to_string()));
    }
}

/// What the trials the budget cut had spent: paid, and in no row of
/// trials.csv (`--resume` runs those trials again from their start).
fn say_cut_spend((cut, trials): (Spent, usize)) {
    if trials == 0 {
        return;
    }
    eprintln!(
        "of that, ${:.4} and {} tokens over {} request(s) went to {trials} trial(s) the budget cut: \
         paid, and in no report's rows (a resume runs them again from their start)",
        cut.cost, cut.tokens, cut.requests
    );
}

/// The budget ended the run: what was spent, what is kept, how to go on.
/// Not a model's failure; the run is not complete, so it does not pass.
fn say_budget_spent(
    out: &Path,
    models: &[PathBuf],
    finished: u64,
    total: u64,
    spent: Spent,
    limits: BudgetLimits,
) {
    let mut limit = Vec::new();
    if let Some(usd) = limits.max_cost {
        limit.push(format!("${:.4} of --max-cost ${usd}", spent.cost));
    }
    if let Some(tokens) = limits.max_tokens {
        limit.push(format!("{} of --max-tokens {tokens} tokens", spent.tokens));
    }
    eprintln!(
        "budget spent ({}, over {} request(s)): the next request could pass it, so none was sent; \
         {finished} of {total} trial(s) are in {}; continue with: {}",
        limit.join(", "),
        spent.requests,
        out.join("trials.csv").display(),
        resume_command(out, models)
    );
}

/// One MCP server's start-ups and calls over the run.
fn say_server_stats(s: &crate::tool::mcp::SourceStats) {
    // The first start loads the server; later ones (trials' own, forks)
    // are what a trial pays.
    let startups = match s.later_startup_ms_mean() {
        Some(later) => format!(
            "{} start-up(s): the first {:.1} ms, the others {later:.1} ms on average",
            s.startups, s.startup_ms_first
        ),
        None => format!("{} start-up(s), {:.1} ms", s.startups, s.startup_ms_mean),
    };
    eprintln!(
        "MCP server {}: {startups}; {} tools/call, p50 {:.2} ms, p95 {:.2} ms, {} error result(s){}",
        s.source,
        s.calls,
        s.call_ms_p50,
        s.call_ms_p95,
        s.call_errors,
        if s.bad_outputs > 0 {
            format!(", {} breaking the tool's outputSchema", s.bad_outputs)
        } else {
            String::new()
        }
    );
}
