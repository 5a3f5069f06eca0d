//! `toolgauge report merge|compare`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{CliError, EXIT_FAILED};
use crate::harness::merge::{Merged, html_report, merge};
use crate::markup::{Align, Table};
use crate::report;

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the outputs of `run --shard K/N` into what one run would have written.
    Merge {
        /// Shard report folders.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// The folder the merged run is written to (made if need be):
        /// trials.csv, session.jsonl, batches.jsonl, the summaries and
        /// report.html, as one run would have written them.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write into an `--out` folder that already holds a run, replacing it.
        #[arg(long)]
        force: bool,
    },
    /// Write DIR/report.html for a finished run folder (a run, merged
    /// shards, or a run made before report.html existed).
    Html {
        /// The run folder (it holds run.json and trials.csv).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Print the change in success per model x scenario; exit 1 on a
    /// significant drop (95% intervals that do not overlap).
    Compare {
        /// The run folder to compare against (its summary.csv is read),
        /// e.g. a run of main kept as a CI artefact.
        #[arg(value_name = "BASELINE_DIR")]
        baseline: PathBuf,
        /// The run folder under test (its summary.csv is read).
        #[arg(value_name = "CURRENT_DIR")]
        current: PathBuf,
    },
}

pub fn run(args: &ReportArgs) -> Result<ExitCode, CliError> {
    match &args.command {
        ReportCommand::Html { dir } => {
            let path = html_report(dir)?;
            println!("{}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        ReportCommand::Merge { dirs, out, force } => merge_shards(dirs, out, *force),
        ReportCommand::Compare { baseline, current } => compare_runs(baseline, current),
    }
}

/// `report merge`: shard folders into one run folder, its gate checked.
fn merge_shards(dirs: &[PathBuf], out: &Path, force: bool) -> Result<ExitCode, CliError> {
    if let Some(file) = report::held_run(out).filter(|_| !force) {
        return Err(CliError::Usage(format!(
            "--out {}: already holds a run ({file}); use --force to replace it, \
             or another --out",
            out.display()
        )));
    }
    let Merged {
        violations,
        table,
        torn_ledger_lines,
    } = merge(dirs, out)?;
    println!("{table}");
    for (path, line) in &torn_ledger_lines {
        eprintln!(
            "warning: {} line {line}: torn by a kill, not merged into batches.jsonl",
            path.display()
        );
    }
    eprintln!("merged {} shard(s) into {}", dirs.len(), out.display());
    if violations.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for v in &violations {
            eprintln!("  {} / {}: {}", v.model, v.scenario, v.message);
        }
        Ok(ExitCode::from(EXIT_FAILED))
    }
}

/// `report compare`: two runs' summaries, cell by cell and per model.
fn compare_runs(baseline: &Path, current: &Path) -> Result<ExitCode, CliError> {
    let comparison = report::compare(baseline, current)?;
    let changes = &comparison.changes;
    let mut table = Table::new(&[
        ("model", Align::Left),
        ("scenario", Align::Left),
        ("baseline", Align::Right),
        ("current", Align::Right),
        ("change", Align::Right),
        ("significant", Align::Left),
    ]);
    let mut drops = 0;
    for c in changes {
        let flag = match c.significant_drop {
            Some(true) => {
                drops += 1;
                "DROP"
            }
            Some(false) => "gain",
            None => "",
        };
        table.row([
            c.model.clone(),
            c.scenario.clone(),
            format!("{:.1}%", 100.0 * c.baseline),
            format!("{:.1}%", 100.0 * c.current),
            format!("{:+.1} pp", 100.0 * (c.current - c.baseline)),
            flag.to_owned(),
        ]);
    }
    print!("{}", table.render());
    eprintln!(
        "compared {} model x scenario cell(s); {} only in the baseline, {} only in the current run",
        changes.len(),
        comparison.only_baseline,
        comparison.only_current
    );
    if comparison.only_baseline + comparison.only_current > changes.len() {
        eprintln!(
            "note: most cells are in one run only: were both runs of the same suite and models?"
        );
    }
    for m in &comparison.models {
        let flag = if m.significant_drop() {
            drops += 1;
            "DROP"
        } else {
            ""
        };
        println!(
            "model {} over {} cell(s): {:.1}% -> {:.1}% ({:+.1} pp), {} down, {} up (sign test, {}) {flag}",
            m.model,
            m.cells,
            100.0 * m.baseline,
            100.0 * m.current,
            100.0 * (m.current - m.baseline),
            m.drops,
            m.gains,
            crate::report::p_text(m.p_value),
        );
    }
    if drops > 0 {
        eprintln!("{drops} significant drop(s)");
        Ok(ExitCode::from(EXIT_FAILED))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}
