//! summary.md: the run's key tables for a person (models, paired
//! comparisons, every model x scenario, self-correction by failure kind,
//! what is below threshold), and the table the terminal shows.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::summary::{
    ComparisonRow, ModelRow, SummaryRow, comparison_rows, correction_rows, model_rows, summary_rows,
};
use super::{Reporter, RunInfo, Violation, violations};
use crate::call::Failure;
use crate::markup::{Align::Left, Align::Right, Table};
use crate::metrics::{Aggregate, CellStats};

/// Writes summary.md when the run finishes.
pub struct Markdown {
    path: PathBuf,
    /// A `--batch` run's batches, told as the run ends.
    batches: Vec<super::BatchRecord>,
    /// `--otlp`: what became of the spans (the export ends first).
    otlp: Option<std::sync::Arc<super::otel::ExportTally>>,
}

impl Markdown {
    pub fn new(path: &Path) -> Self {
        Markdown {
            path: path.to_owned(),
            batches: Vec::new(),
            otlp: None,
        }
    }

    /// Say in summary.md what became of the run's spans.
    pub fn tell_otlp(&mut self, tally: std::sync::Arc<super::otel::ExportTally>) {
        self.otlp = Some(tally);
    }
}

impl Reporter for Markdown {
    fn notice(&mut self, _info: &RunInfo, notice: &super::Notice) -> io::Result<()> {
        if let super::Notice::Batch(batch) = notice {
            self.batches.push(batch.clone());
        }
        Ok(())
    }

    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        let rows = summary_rows(info, stats);
        // The charts as SVG files beside summary.md, which links them.
        let charts = super::charts::charts(info, stats);
        if let Some(dir) = self.path.parent() {
            super::charts::write_svgs(&charts, dir)?;
        }
        let mut text = markdown(
            info,
            &key_table(&rows),
            &model_rows(info, stats),
            &comparison_rows(info, stats),
            &correction_rows(info, stats),
            &violations(info, stats),
        );
        text.push_str(&super::streamed::markdown(&super::summary::streamed_cells(
            &rows,
        )));
        text.push_str(&super::scores::markdown(info, stats));
        text.push_str(&super::batches::markdown(info.batch, &self.batches));
        if let Some(tally) = &self.otlp {
            text.push_str(&tally.markdown());
        }
        if !charts.is_empty() {
            text.push_str("\n## Charts\n\n");
            for chart in &charts {
                let _ = writeln!(text, "![{}]({}.svg)\n", chart.title, chart.name);
            }
        }
        crate::whole_file::write(&self.path, text)
    }
}

/// The per-scenario table is printed when it has at most this many rows
/// (or with `--table`).
const PRINTED_ROWS: usize = 40;

/// What the terminal shows after a run, the answer first: one line per
/// model (final success with its interval, success at once, what
/// self-correction added, median latency, cost when priced), the
/// significant paired differences, the worst cells, where report.html is;
/// then the per-scenario tables when small or asked for (`table`).
pub fn terminal_summary(
    info: &RunInfo,
    stats: &Aggregate,
    table: bool,
    report: Option<&Path>,
) -> String {
    let mut text = String::from(
        "Verdict (final success of the trials measured [95% interval], success at once, self-correction gain, p50 latency):\n",
    );
    let models = model_rows(info, stats);
    let totals: Vec<CellStats> = stats
        .cells
        .iter()
        .map(|c| super::summary::total(c))
        .collect();
    let mut order: Vec<usize> = (0..models.len()).collect();
    order.sort_by(|a, b| {
        let key = |m: &ModelRow| m.final_success.unwrap_or(-1.0);
        key(&models[*b]).total_cmp(&key(&models[*a]))
    });
    let width = models.iter().map(|m| m.model.len()).max().unwrap_or(0);
    for &i in &order {
        let priced = info.models[i].prices.is_some();
        verdict_line(&mut text, &models[i], &totals[i], priced, width);
    }
    text.push_str(&significant_pairs(info, stats, &order, table));
    let rows = summary_rows(info, stats);
    text.push_str(&worst_cells(&rows));
    if let Some(report) = report {
        let _ = writeln!(text, "Report: {}", report.display());
    }
    if table || rows.len() <= PRINTED_ROWS {
        text.push('\n');
        text.push_str(&key_table(&rows));
    } else {
        let _ = writeln!(
            text,
            "({} model x scenario rows: --table prints them; all are in summary.md, summary.csv and report.html.)",
            rows.len()
        );
    }
    text
}

/// A model's verdict line, and what it lost to infrastructure or to the
/// token limit.
fn verdict_line(text: &mut String, m: &ModelRow, total: &CellStats, priced: bool, width: usize) {
    let gain = points(m.final_success.zip(m.success_at_1).map(|(f, a)| f - a));
    let cost = if priced {
        format!(", ${:.4}", m.cost_usd)
    } else {
        String::new()
    };
    let _ = writeln!(
        text,
        "  {:width$}  {} of {} measured [{}, {}]  at once {}  self-correction {}{}  p50 {}{}",
        m.model,
        percent_opt(m.final_success),
        m.trials,
        percent_opt(m.wilson_low),
        percent_opt(m.wilson_high),
        percent_opt(m.success_at_1),
        gain,
        correction_paths(total),
        total
            .model_ms
            .percentile_ms(0.5)
            .map_or("-".to_owned(), |ms| format!("{ms:.0} ms")),
        cost,
    );
    let lost = total.lost_trials();
    if lost > 0 {
        let _ = writeln!(
            text,
            "  {:width$}  LOST {lost} of {} trials: {} (not the model's doing; counted in no rate above)",
            "",
            total.trials + lost,
            super::lost_causes(total),
        );
    }
    let truncated = total
        .failures
        .get(&Failure::Truncated)
        .copied()
        .unwrap_or(0);
    if truncated > 0 {
        let _ = writeln!(
            text,
            "  {:width$}  {truncated} repl(ies) cut by the output token limit (truncated: raise max_tokens)",
            "",
        );
    }
    if total.calls_as_text > 0 {
        let _ = writeln!(
            text,
            "  {:width$}  {} repl(ies) with no call wrote one as text, which the server did not read as a call (reason call_as_text)",
            "", total.calls_as_text,
        );
    }
}

/// The five cells with the lowest final success.
fn worst_cells(rows: &[SummaryRow]) -> String {
    let mut worst: Vec<&SummaryRow> = rows.iter().filter(|r| r.head.trials > 0).collect();
    worst.sort_by(|a, b| {
        let key = |r: &SummaryRow| r.head.final_success.unwrap_or(0.0);
        key(a).total_cmp(&key(b))
    });
    let worst: Vec<String> = worst
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{} / {} {}",
                r.head.model,
                r.head.scenario,
                percent_opt(r.head.final_success)
            )
        })
        .collect();
    if worst.is_empty() {
        String::new()
    } else {
        format!("Worst cells: {}\n", worst.join("; "))
    }
}

/// At most this many model pairs are printed unasked (`--table` prints
/// every significant one).
const PRINTED_PAIRS: usize = 10;

/// The paired differences the terminal shows: every significant pair when
/// few; otherwise how many there are and the verdict on the first
/// neighbours in the ranking (`order`, best first), the question a ranking
/// raises: is each model really ahead of the next? comparisons.csv has
/// every pair.
fn significant_pairs(info: &RunInfo, stats: &Aggregate, order: &[usize], table: bool) -> String {
    let mut text = String::new();
    let rows = comparison_rows(info, stats);
    let significant: Vec<&ComparisonRow> = rows.iter().filter(|c| c.significant).collect();
    if significant.is_empty() && info.models.len() > 1 {
        text.push_str("No difference between models is significant (paired McNemar, p < 0.05).\n");
    }
    if table || significant.len() <= PRINTED_PAIRS {
        for c in &significant {
            let _ = writeln!(
                text,
                "Significant: {} vs {}: {} ({})",
                c.model_a,
                c.model_b,
                points(c.difference),
                super::p_text(c.p_value)
            );
        }
        return text;
    }
    let _ = writeln!(
        text,
        "{} of {} model pairs differ significantly (paired McNemar, p < 0.05; --table prints them; all are in comparisons.csv). Next in the ranking:",
        significant.len(),
        rows.len()
    );
    for pair in order.windows(2).take(PRINTED_PAIRS) {
        let (ahead, next) = (pair[0], pair[1]);
        let paired = stats.paired(ahead, next);
        let _ = writeln!(
            text,
            "  {} vs {}: {} ({}) {}",
            info.models[ahead].name,
            info.models[next].name,
            points(paired.rates().map(|(a, b)| a - b)),
            super::p_text(paired.p_value),
            if paired.p_value < super::summary::ALPHA {
                "significant"
            } else {
                "not significant"
            }
        );
    }
    text
}

/// Where self-correction came from, by what the model was shown after
/// its first attempt: an error, the nudge (it made no call), or only the
/// results of its own wrong calls (no nudge is sent then).
fn correction_paths(total: &CellStats) -> String {
    let mut parts = Vec::new();
    if total.told.0 > 0 {
        // The one path that measures what the wording buys: its interval.
        let (low, high) = crate::metrics::wilson_interval(total.told.1, total.told.0);
        parts.push(format!(
            "after feedback {}/{} [{}, {}]",
            total.told.1,
            total.told.0,
            percent(low),
            percent(high)
        ));
    }
    if total.nudged.0 > 0 {
        parts.push(format!(
            "after a nudge {}/{}",
            total.nudged.1, total.nudged.0
        ));
    }
    if total.shown_results.0 > 0 {
        parts.push(format!(
            "after its own results {}/{}",
            total.shown_results.1, total.shown_results.0
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({} fixed)", parts.join(", "))
    }
}

/// A difference of rates in percentage points (`-` when unknown).
pub(super) fn points(difference: Option<f64>) -> String {
    difference.map_or("-".to_owned(), |d| format!("{:+.1} points", 100.0 * d))
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
    let conversations: Vec<&SummaryRow> = tasks
        .into_iter()
        .filter(|r| r.task.user_turn_success.is_some())
        .collect();
    if !conversations.is_empty() {
        t.push('\n');
        t.push_str(&conversation_table(&conversations));
    }
    t
}

/// Conversations (the user speaks more than once): user turns passed and
/// survived.
fn conversation_table(rows: &[&SummaryRow]) -> String {
    let mut t = Table::new(&[
        ("model", Left),
        ("conversation", Left),
        ("trials", Right),
        ("all user turns passed", Right),
        ("user turns passed", Right),
        ("turns survived (mean)", Right),
    ]);
    for r in rows {
        t.row([
            r.head.model.clone(),
            r.head.scenario.clone(),
            r.head.trials.to_string(),
            percent_opt(r.head.final_success),
            percent_opt(r.task.user_turn_success),
            r.task
                .turns_survived_mean
                .map_or("-".to_owned(), |m| format!("{m:.2}")),
        ]);
    }
    t.into_string()
}

/// Tasks: success, pass^3, progress, turns and calls, recovery, forbidden calls.
fn task_table(rows: &[&SummaryRow]) -> String {
    let mut t = Table::new(&[
        ("model", Left),
        ("task", Left),
        ("trials", Right),
        ("success [95% CI]", Left),
        ("pass^3", Right),
        ("progress", Right),
        ("turns (p95)", Right),
        ("calls (p95)", Right),
        ("errors recovered", Right),
        ("forbidden", Right),
    ]);
    let number = |mean: Option<f64>, p95: Option<u32>| match (mean, p95) {
        (Some(mean), Some(p95)) => format!("{mean:.1} ({p95})"),
        _ => "-".to_owned(),
    };
    for r in rows {
        t.row([
            r.head.model.clone(),
            r.head.scenario.clone(),
            r.head.trials.to_string(),
            with_interval(r.head.final_success, r.head.wilson_low, r.head.wilson_high),
            percent_opt(r.head.pass_k_3),
            percent_opt(r.task.progress_rate),
            number(r.task.turns_mean, r.task.turns_p95),
            number(r.task.calls_mean, r.task.calls_p95),
            percent_opt(r.task.errors_recovered_rate),
            r.task.forbidden_calls.unwrap_or(0).to_string(),
        ]);
    }
    t.into_string()
}

/// A rate with its interval: `90% [80%, 95%]`.
fn with_interval(rate: Option<f64>, low: Option<f64>, high: Option<f64>) -> String {
    format!(
        "{} [{}, {}]",
        percent_opt(rate),
        percent_opt(low),
        percent_opt(high)
    )
}

/// Single-turn scenarios: success by attempt, self-correction, speedup.
fn turn_table(rows: &[&SummaryRow]) -> String {
    let mut t = Table::new(&[
        ("model", Left),
        ("scenario", Left),
        ("trials", Right),
        ("@1", Right),
        ("@2", Right),
        ("@3", Right),
        ("final [95% CI]", Left),
        ("self-correction", Right),
        ("speedup (eff.)", Right),
    ]);
    for r in rows {
        let speed = match (r.tail.mean_speedup, r.tail.mean_efficiency) {
            (Some(s), Some(e)) => format!("{s:.2}x ({e:.2})"),
            _ => "-".to_owned(),
        };
        t.row([
            r.head.model.clone(),
            r.head.scenario.clone(),
            r.head.trials.to_string(),
            percent_opt(r.head.success_at_1),
            percent_opt(r.head.success_at_2),
            percent_opt(r.head.success_at_3),
            with_interval(r.head.final_success, r.head.wilson_low, r.head.wilson_high),
            percent_opt(r.head.self_correction_rate),
            speed,
        ]);
    }
    t.into_string()
}

/// The per-model table (summary.md, and the terminal for big suites).
fn models_table(models: &[ModelRow]) -> String {
    let mut t = Table::new(&[
        ("model", Left),
        ("trials", Right),
        ("success @1", Right),
        ("final [95% CI]", Left),
        ("self-correction", Right),
        ("mean attempts of successes", Right),
    ]);
    for m in models {
        t.row([
            m.model.clone(),
            m.trials.to_string(),
            percent_opt(m.success_at_1),
            with_interval(m.final_success, m.wilson_low, m.wilson_high),
            percent_opt(m.self_correction_rate),
            m.mean_attempts
                .map_or("-".to_owned(), |a| format!("{a:.2}")),
        ]);
    }
    let mut md = t.into_string();
    // Said only where a provider's cache served input (models.csv has it).
    let cached: Vec<String> = models
        .iter()
        .filter_map(|m| m.cached_input_share.filter(|s| *s > 0.0).map(|s| (m, s)))
        .map(|(m, share)| format!("{} {}", m.model, percent_opt(Some(share))))
        .collect();
    if !cached.is_empty() {
        let _ = writeln!(
            md,
            "\nInput read from the prompt cache: {}.",
            cached.join(", ")
        );
    }
    let lost: u64 = models.iter().map(|m| m.lost_trials).sum();
    if lost > 0 {
        let _ = writeln!(
            md,
            "\n**{lost} trial(s) lost to infrastructure** (transport errors, replies not of the provider's format, tools that could not run): not counted in any rate; see lost_trials and its causes in summary.csv."
        );
    }
    md
}

fn markdown(
    info: &RunInfo,
    table: &str,
    models: &[ModelRow],
    comparisons: &[ComparisonRow],
    corrections: &[super::recovery::RecoveryRow],
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
        md.push_str("\n## Comparisons (paired, McNemar)\n\n");
        let mut t = Table::new(&[
            ("A", Left),
            ("B", Left),
            ("A", Right),
            ("B", Right),
            ("difference", Right),
            ("only A", Right),
            ("only B", Right),
            ("p", Right),
            ("significant", Left),
        ]);
        for c in comparisons {
            t.row([
                c.model_a.clone(),
                c.model_b.clone(),
                percent_opt(c.success_a),
                percent_opt(c.success_b),
                c.difference
                    .map_or("-".to_owned(), |d| format!("{:+.1} pp", 100.0 * d)),
                c.only_a.to_string(),
                c.only_b.to_string(),
                super::p_text(c.p_value)
                    .trim_start_matches("p = ")
                    .to_owned(),
                if c.significant { "yes" } else { "no" }.to_owned(),
            ]);
        }
        md.push_str(&t.into_string());
    }
    md.push_str("\n## By scenario\n\n");
    md.push_str(table);
    md.push_str(&super::recovery::markdown(corrections));
    if !violations.is_empty() {
        md.push_str("\n## Below threshold\n\n");
        for v in violations {
            let _ = writeln!(md, "- {} / {}: {}", v.model, v.scenario, v.message);
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::ranked_run;

    #[test]
    fn a_few_significant_pairs_are_all_printed() {
        let (info, stats) = ranked_run(3);
        let text = terminal_summary(&info, &stats, false, None);
        let pairs: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("Significant: "))
            .collect();
        assert_eq!(pairs.len(), 3, "{text}");
    }

    #[test]
    fn many_models_print_a_count_and_the_ranking_neighbours_not_every_pair() {
        let (info, stats) = ranked_run(12);
        let text = terminal_summary(&info, &stats, false, None);
        assert!(!text.contains("Significant: "), "{text}");
        assert!(
            text.contains("66 of 66 model pairs differ significantly"),
            "{text}"
        );
        let neighbours: Vec<&str> = text.lines().filter(|l| l.contains(" vs ")).collect();
        assert_eq!(neighbours.len(), PRINTED_PAIRS, "{text}");
        // Best first, each against the next in the ranking, ahead by 10 of 120.
        assert!(
            neighbours[0].starts_with("  m11 vs m10: +8.3 points"),
            "{text}"
        );
        assert!(neighbours[9].starts_with("  m2 vs m1: "), "{text}");
        assert!(
            neighbours.iter().all(|l| l.ends_with(") significant")),
            "{text}"
        );
        // Asked for the table, every pair.
        let all = terminal_summary(&info, &stats, true, None);
        let pairs = all
            .lines()
            .filter(|l| l.starts_with("Significant: "))
            .count();
        assert_eq!(pairs, 66, "{all}");
    }
}
