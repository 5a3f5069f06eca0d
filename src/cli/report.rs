//! `toolgauge report merge|html|compare|recovery|tau2|bfcl`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::{CliError, EXIT_FAILED};
use crate::harness::merge::{Merged, html_report, measured, merge, trials_of};
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
    /// What the models of recorded runs did after their errors, read from
    /// what each saw and did next: self_correction.csv as a run writes it,
    /// and its table. BFCL multi-turn result files are read from their
    /// `inference_log`, tau2 Results JSONs from their messages.
    Recovery {
        /// A BFCL multi-turn result file (`BFCL_v4_multi_turn_base_result.json`),
        /// as `LABEL=FILE` or a path (labelled `<model folder>/<category>`).
        /// Repeatable.
        #[arg(long = "bfcl", value_name = "[LABEL=]FILE")]
        bfcl: Vec<String>,
        /// A tau2 Results JSON, as `LABEL=FILE` or a path (labelled by its
        /// file name). Repeatable.
        #[arg(long = "tau2", value_name = "[LABEL=]FILE")]
        tau2: Vec<String>,
        /// The folder self_correction.csv is written to (made if need be).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// tau2's own summary of a run's tau2 domains, per model, as tau2's
    /// compute_metrics gives it: average reward, pass^k, the trials by
    /// why they ended, the database check and each reward component.
    /// Printed, and written to tau2_metrics.json.
    Tau2 {
        /// The run folder (it holds run.json and trials.csv).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The folder tau2_metrics.json is written to [default: DIR].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// BFCL's own score tables of a run's BFCL scenarios, per model, with
    /// BFCL's columns, weights, rounding and "N/A" rules: data_overall.csv,
    /// data_non_live.csv, data_live.csv, data_multi_turn.csv,
    /// data_agentic.csv and data_format_sensitivity.csv, and each
    /// category's accuracy and count in bfcl_scores.json.
    Bfcl {
        /// Run folders (each holds run.json and trials.csv), e.g. the
        /// single-turn and the multi-turn categories run apart; a model
        /// of the same name in two is one model.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// The folder the tables are written to [default: the first DIR].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
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
        ReportCommand::Recovery { bfcl, tau2, out } => recorded_recovery(bfcl, tau2, out),
        ReportCommand::Tau2 { dir, out } => tau2_summary(dir, out.as_deref().unwrap_or(dir)),
        ReportCommand::Bfcl { dirs, out } => bfcl_tables(dirs, out.as_deref().unwrap_or(&dirs[0])),
    }
}

/// `--out`, made if need be.
fn out_folder(out: &Path) -> Result<(), CliError> {
    crate::whole_file::make_folder(out).map_err(|e| {
        CliError::Usage(format!(
            "--out {}: cannot make the folder: {e}",
            out.display()
        ))
    })
}

/// `report tau2`: tau2's metrics of the run in `dir`, printed and
/// written to `out`/tau2_metrics.json.
fn tau2_summary(dir: &Path, out: &Path) -> Result<ExitCode, CliError> {
    let (info, stats) = measured(dir)?;
    let metrics = report::tau2_metrics(&info, &stats);
    if metrics.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: the run has no tau2 scenario (tagged \"tau2\", as `import tau2` writes them)",
            dir.display()
        )));
    }
    out_folder(out)?;
    let path = out.join("tau2_metrics.json");
    let text = serde_json::to_string_pretty(&metrics).map_err(std::io::Error::other);
    text.and_then(|text| crate::whole_file::write(&path, text + "\n"))
        .map_err(|e| CliError::Usage(format!("{}: cannot write: {e}", path.display())))?;
    println!("{}", tau2_table(&metrics));
    eprintln!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `report bfcl`: BFCL's tables of the runs in `dirs`, written to `out`,
/// and each model's overall accuracy printed.
fn bfcl_tables(dirs: &[PathBuf], out: &Path) -> Result<ExitCode, CliError> {
    let mut tally = report::BfclTally::new();
    for dir in dirs {
        let (info, trials) = trials_of(dir)?;
        let run = tally.run(&info);
        let unreadable = |e: std::io::Error| CliError::Usage(format!("{}: {e}", trials.display()));
        for trial in report::TrialReader::open(&info, &trials).map_err(unreadable)? {
            tally.add(&run, &trial.map_err(unreadable)?);
        }
    }
    let dir = dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if !tally.has_bfcl() {
        return Err(CliError::Usage(format!(
            "{dir}: no BFCL scenario (tagged \"bfcl\" and a category, as `import bfcl` writes them)"
        )));
    }
    out_folder(out)?;
    let scores = serde_json::to_string_pretty(&tally.scores()).map_err(std::io::Error::other);
    let tables = tally.tables();
    let mut files = vec![("bfcl_scores.json", scores.map(|s| s + "\n"))];
    files.extend(tables.iter().map(|(name, text)| (*name, Ok(text.clone()))));
    for (name, text) in files {
        let path = out.join(name);
        text.and_then(|text| crate::whole_file::write(&path, text))
            .map_err(|e| CliError::Usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    // tables() gives data_overall.csv first.
    println!("{}", bfcl_table(&tables[0].1));
    for model in tally.models.iter().filter(|m| m.lost > 0) {
        eprintln!(
            "{}: {} trial(s) lost to infrastructure, left out of every accuracy",
            model.model, model.lost
        );
    }
    eprintln!("wrote data_*.csv and bfcl_scores.json to {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// data_overall.csv's headline columns, one row per model in its rank.
fn bfcl_table(overall: &str) -> String {
    const SHOWN: [&str; 9] = [
        "Rank",
        "Model",
        "Overall Acc",
        "Non-Live AST Acc",
        "Live Acc",
        "Multi Turn Acc",
        "Web Search Acc",
        "Memory Acc",
        "Irrelevance Detection",
    ];
    let mut reader = csv::Reader::from_reader(overall.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map(|h| h.iter().map(str::to_owned).collect())
        .unwrap_or_default();
    let at: Vec<Option<usize>> = SHOWN
        .iter()
        .map(|name| header.iter().position(|h| h == name))
        .collect();
    let columns: Vec<(&str, Align)> = SHOWN
        .iter()
        .map(|name| {
            (
                *name,
                if *name == "Model" {
                    Align::Left
                } else {
                    Align::Right
                },
            )
        })
        .collect();
    let mut table = Table::new(&columns);
    for record in reader.records().map_while(Result::ok) {
        table.row(
            at.iter()
                .map(|i| i.and_then(|i| record.get(i)).unwrap_or("").to_owned()),
        );
    }
    table.render()
}

/// One row per model and domain: tau2's headline numbers.
fn tau2_table(metrics: &[report::Tau2Metrics]) -> String {
    let most_k = metrics
        .iter()
        .map(|m| m.pass_hat_ks.len())
        .max()
        .unwrap_or(0);
    let ks: Vec<String> = (1..=most_k).map(|k| format!("pass^{k}")).collect();
    let mut header = vec![
        ("model", Align::Left),
        ("domain", Align::Left),
        ("avg reward", Align::Right),
    ];
    header.extend(ks.iter().map(|k| (k.as_str(), Align::Right)));
    header.extend([
        ("sims", Align::Right),
        ("tasks", Align::Right),
        ("infra", Align::Right),
        ("db match", Align::Right),
        ("ended", Align::Left),
    ]);
    let mut table = Table::new(&header);
    for m in metrics {
        let mut row = vec![
            m.model.clone(),
            m.domain.clone(),
            format!("{:.4}", m.avg_reward),
        ];
        for k in 1..=most_k as u64 {
            row.push(
                m.pass_hat_ks
                    .get(&k)
                    .map_or("-".into(), |v| format!("{v:.4}")),
            );
        }
        let ended = format!(
            "user {} agent {} max_steps {} error {}",
            m.termination_user_stop,
            m.termination_agent_stop,
            m.termination_max_steps,
            m.termination_error
        );
        row.extend([
            m.total_simulations.to_string(),
            m.total_tasks.to_string(),
            m.infra_error_count.to_string(),
            format!(
                "{}/{}",
                m.db_match_count,
                m.db_match_count + m.db_mismatch_count
            ),
            ended,
        ]);
        table.row(row);
    }
    table.into_string()
}

/// `LABEL=FILE` or `FILE`, labelled by `default`.
fn labelled(given: &str, default: impl Fn(&Path) -> String) -> (String, PathBuf) {
    match given.split_once('=') {
        Some((label, path)) if !label.is_empty() && !Path::new(given).exists() => {
            (label.to_owned(), PathBuf::from(path))
        }
        _ => {
            let path = PathBuf::from(given);
            (default(&path), path)
        }
    }
}

/// A BFCL result file's label: its model's folder and its category.
fn bfcl_label(path: &Path) -> String {
    let category = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .trim_start_matches("BFCL_v4_")
        .trim_start_matches("BFCL_v3_")
        .trim_end_matches(".json")
        .trim_end_matches("_result")
        .to_owned();
    let model = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    match model {
        Some(model) => format!("{model}/{category}"),
        None => category,
    }
}

/// `report recovery`: recorded runs' recoveries, counted per label.
fn recorded_recovery(bfcl: &[String], tau2: &[String], out: &Path) -> Result<ExitCode, CliError> {
    use crate::metrics::{RecoveryByKind, recovery};
    if bfcl.is_empty() && tau2.is_empty() {
        return Err(CliError::Usage(
            "report recovery: give at least one --bfcl or --tau2 file".to_owned(),
        ));
    }
    let mut by_label: Vec<(String, RecoveryByKind, u64)> = Vec::new();
    let mut count = |label: String, trials: Vec<Vec<crate::metrics::AttemptOutcome>>| {
        let mut counts = RecoveryByKind::new();
        for attempts in &trials {
            if let Some(r) = recovery::of_attempts(attempts) {
                counts.entry(r.first).or_default().add(&r);
            }
        }
        by_label.push((label, counts, trials.len() as u64));
    };
    for given in bfcl {
        let (label, path) = labelled(given, bfcl_label);
        let trials =
            crate::bfcl::recovery::recorded_trials(&path).map_err(|e| CliError::Model(e.into()))?;
        if trials.is_empty() {
            return Err(CliError::Usage(format!(
                "{}: no entry has an \"inference_log\": BFCL writes it for multi-turn entries; give a multi-turn result file",
                path.display()
            )));
        }
        count(label, trials.into_iter().map(|t| t.attempts).collect());
    }
    for given in tau2 {
        let (label, path) = labelled(given, |p| {
            p.file_stem()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        });
        let results = crate::tau2::results::Tau2Results::load(&path)
            .map_err(|e| CliError::Model(e.into()))?;
        count(
            label,
            results.simulations().map(|(_, s)| s.attempts()).collect(),
        );
    }
    let none = std::collections::BTreeMap::new();
    let rows: Vec<report::RecoveryRow> = by_label
        .iter()
        .flat_map(|(label, counts, _)| report::recovery_rows(label, counts, &none))
        .collect();
    out_folder(out)?;
    let csv = out.join("self_correction.csv");
    report::write_recovery_csv(&csv, &rows)
        .map_err(|e| CliError::Usage(format!("{}: cannot write: {e}", csv.display())))?;
    match report::recovery_table(&rows) {
        Some(table) => println!("{table}"),
        None => println!("no recorded trial met an error"),
    }
    for (label, counts, trials) in &by_label {
        let errors: u64 = counts.values().map(|c| c.first_errors).sum();
        eprintln!("{label}: {trials} trial(s), {errors} with a told error");
    }
    eprintln!("wrote {}", csv.display());
    Ok(ExitCode::SUCCESS)
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
