//! summary.md: the run's key tables for a person (models, paired
//! comparisons, every model x scenario, self-correction by failure kind,
//! what is below threshold), and the table the terminal shows.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::summary::{
    ComparisonRow, ModelRow, SelfCorrectionRow, SummaryRow, comparison_rows, correction_rows,
    model_rows, summary_rows,
};
use super::{Reporter, RunInfo, Violation, violations};
use crate::metrics::Aggregate;

/// The most model x scenario rows printed on the terminal.
const MAX_PRINTED_ROWS: usize = 200;

/// Writes summary.md when the run finishes.
pub struct Markdown {
    path: PathBuf,
}

impl Markdown {
    pub fn new(path: &Path) -> Self {
        Markdown {
            path: path.to_owned(),
        }
    }
}

impl Reporter for Markdown {
    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        let rows = summary_rows(info, stats);
        let text = markdown(
            info,
            &key_table(&rows),
            &model_rows(info, stats),
            &comparison_rows(info, stats),
            &correction_rows(info, stats),
            &violations(info, stats),
        );
        std::fs::write(&self.path, text)
    }
}

/// The table for the terminal: every model x scenario, or for a big suite
/// (whose table would scroll away) the models.
pub fn terminal_table(info: &RunInfo, stats: &Aggregate) -> String {
    let rows = summary_rows(info, stats);
    if rows.len() <= MAX_PRINTED_ROWS {
        key_table(&rows)
    } else {
        format!(
            "{}\n{} model x scenario rows are in summary.md and summary.csv.",
            models_table(&model_rows(info, stats)),
            rows.len()
        )
    }
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn percent_opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), percent)
}

/// The tables a person reads first, as Markdown (also fine on a
/// terminal): single-turn scenarios, then tasks.
fn key_table(rows: &[SummaryRow]) -> String {
    let (tasks, turns): (Vec<&SummaryRow>, Vec<&SummaryRow>) = rows.iter().partition(|r| r.is_task);
    let mut t = String::new();
    if !turns.is_empty() || tasks.is_empty() {
        t.push_str(&turn_table(&turns));
    }
    if !tasks.is_empty() {
        if !t.is_empty() {
            t.push('\n');
        }
        t.push_str(&task_table(&tasks));
    }
    t
}

/// Tasks: success, pass^3, progress, turns and calls, recovery, forbidden calls.
fn task_table(rows: &[&SummaryRow]) -> String {
    let mut t = String::from(
        "| model | task | trials | success [95% CI] | pass^3 | progress | turns (p95) | calls (p95) | errors recovered | forbidden |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let number = |mean: Option<f64>, p95: Option<u32>| match (mean, p95) {
        (Some(mean), Some(p95)) => format!("{mean:.1} ({p95})"),
        _ => "-".to_owned(),
    };
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} [{}, {}] | {} | {} | {} | {} | {} | {} |",
            r.head.model,
            r.head.scenario,
            r.head.trials,
            percent_opt(r.head.final_success),
            percent_opt(r.head.wilson_low),
            percent_opt(r.head.wilson_high),
            percent_opt(r.head.pass_k_3),
            percent_opt(r.task.progress_rate),
            number(r.task.turns_mean, r.task.turns_p95),
            number(r.task.calls_mean, r.task.calls_p95),
            percent_opt(r.task.errors_recovered_rate),
            r.task.forbidden_calls.unwrap_or(0),
        );
    }
    t
}

/// Single-turn scenarios: success by attempt, self-correction, speedup.
fn turn_table(rows: &[&SummaryRow]) -> String {
    let mut t = String::from(
        "| model | scenario | trials | @1 | @2 | @3 | final [95% CI] | self-correction | speedup (eff.) |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for r in rows {
        let speed = match (r.tail.mean_speedup, r.tail.mean_efficiency) {
            (Some(s), Some(e)) => format!("{s:.2}x ({e:.2})"),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} [{}, {}] | {} | {} |",
            r.head.model,
            r.head.scenario,
            r.head.trials,
            percent_opt(r.head.success_at_1),
            percent_opt(r.head.success_at_2),
            percent_opt(r.head.success_at_3),
            percent_opt(r.head.final_success),
            percent_opt(r.head.wilson_low),
            percent_opt(r.head.wilson_high),
            percent_opt(r.head.self_correction_rate),
            speed
        );
    }
    t
}

/// The per-model table (summary.md, and the terminal for big suites).
fn models_table(models: &[ModelRow]) -> String {
    let mut md = String::from(
        "| model | trials | success @1 | final [95% CI] | self-correction | mean attempts |\n|---|---:|---:|---|---:|---:|\n",
    );
    for m in models {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} [{}, {}] | {} | {} |",
            m.model,
            m.trials,
            percent_opt(m.success_at_1),
            percent_opt(m.final_success),
            percent_opt(m.wilson_low),
            percent_opt(m.wilson_high),
            percent_opt(m.self_correction_rate),
            m.mean_attempts
                .map_or("-".to_owned(), |a| format!("{a:.2}"))
        );
    }
    let transport: u64 = models.iter().map(|m| m.transport_errors).sum();
    if transport > 0 {
        let _ = writeln!(
            md,
            "\n{transport} trial(s) ended by a transport error (a request that failed after its retries): not counted as model failures; see transport_errors in summary.csv."
        );
    }
    md
}

fn markdown(
    info: &RunInfo,
    table: &str,
    models: &[ModelRow],
    comparisons: &[ComparisonRow],
    corrections: &[SelfCorrectionRow],
    violations: &[Violation],
) -> String {
    let mut md = format!(
        "# toolgauge run\n\n{} model(s) x {} scenario(s) x {} trial(s), seed {}, feedback {}, clock {}.\n\n## Models\n\n{}",
        info.models.len(),
        info.scenarios.len(),
        info.trials,
        info.seed,
        info.feedback,
        info.clock,
        models_table(models)
    );
    if !comparisons.is_empty() {
        md.push_str("\n## Comparisons (paired, McNemar)\n\n| A | B | A | B | difference | only A | only B | p | significant |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n");
        for c in comparisons {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {:.4} | {} |",
                c.model_a,
                c.model_b,
                percent_opt(c.success_a),
                percent_opt(c.success_b),
                c.difference
                    .map_or("-".to_owned(), |d| format!("{:+.1} pp", 100.0 * d)),
                c.only_a,
                c.only_b,
                c.p_value,
                if c.significant { "yes" } else { "no" }
            );
        }
    }
    md.push_str("\n## By scenario\n\n");
    md.push_str(table);
    if !corrections.is_empty() {
        md.push_str("\n## Self-correction by first-attempt failure\n\n| model | failure | first-attempt failures | fixed | rate |\n|---|---|---:|---:|---:|\n");
        for c in corrections {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                c.model,
                c.failure_kind,
                c.first_attempt_failures,
                c.fixed,
                percent(c.fix_rate)
            );
        }
    }
    if !violations.is_empty() {
        md.push_str("\n## Below threshold\n\n");
        for v in violations {
            let _ = writeln!(md, "- {} / {}: {}", v.model, v.scenario, v.message);
        }
    }
    md
}
