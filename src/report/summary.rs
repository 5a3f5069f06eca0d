//! The files a finished run writes from its aggregate, and the threshold
//! checks for CI.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use serde::Serialize;

use super::Aggregate;
use super::trials::FAILURE_KINDS;
use crate::harness::RunPlan;
use crate::metrics::{CellStats, mcnemar_p_value, pass_hat_k, pass_hat_k_curve, pass_k_ladder};

/// Significance level for comparisons.
const ALPHA: f64 = 0.05;

/// CI thresholds: on final success, and on pass^k.
#[derive(Debug, Clone, Default)]
pub struct Thresholds {
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
}

/// A model x scenario under its threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub model: String,
    pub scenario: String,
    pub message: String,
}

fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn opt(x: Option<f64>) -> Option<f64> {
    x.map(round)
}

/// A rate of a cell, or nothing when no trial was measured.
fn measured(cell: &CellStats, rate: impl FnOnce(&CellStats) -> f64) -> Option<f64> {
    (cell.trials > 0).then(|| round(rate(cell)))
}

/// summary.csv: one row per model x scenario.
#[derive(Debug, Default, Serialize)]
struct SummaryRow {
    model: String,
    scenario: String,
    trials: u64,
    max_attempts: u32,
    success_at_1: Option<f64>,
    success_at_2: Option<f64>,
    success_at_3: Option<f64>,
    conditional_at_2: Option<f64>,
    conditional_at_3: Option<f64>,
    final_success: Option<f64>,
    wilson_low: Option<f64>,
    wilson_high: Option<f64>,
    mean_attempts: Option<f64>,
    self_correction_rate: Option<f64>,
    pass_k_3: Option<f64>,
    threshold: Option<f64>,
    passed: bool,
    failures_parse: u64,
    failures_unknown_tool: u64,
    failures_validation: u64,
    failures_runtime: u64,
    failures_timeout: u64,
    failures_sandbox: u64,
    failures_bad_response: u64,
    failures_unexpected_call: u64,
    failures_missing_call: u64,
    failures_wrong_call: u64,
    transport_errors: u64,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    cost_per_success: Option<f64>,
    parallel_turns: u64,
    mean_speedup: Option<f64>,
    mean_ideal_speedup: Option<f64>,
    mean_efficiency: Option<f64>,
    model_p50_ms: Option<f64>,
    model_p95_ms: Option<f64>,
    model_p99_ms: Option<f64>,
    tool_p50_ms: Option<f64>,
    tool_p95_ms: Option<f64>,
    tool_p99_ms: Option<f64>,
}

/// models.csv: one row per model, over all its scenarios.
#[derive(Debug, Default, Serialize)]
struct ModelRow {
    model: String,
    scenarios: usize,
    trials: u64,
    success_at_1: Option<f64>,
    final_success: Option<f64>,
    wilson_low: Option<f64>,
    wilson_high: Option<f64>,
    self_correction_rate: Option<f64>,
    mean_attempts: Option<f64>,
    mean_speedup: Option<f64>,
    mean_efficiency: Option<f64>,
    transport_errors: u64,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    cost_per_success: Option<f64>,
}

/// What a cell's tokens cost at the model's prices (0 without prices).
fn cost(plan: &RunPlan, m: usize, cell: &CellStats) -> f64 {
    plan.models[m].prices().map_or(0.0, |p| {
        round(p.cost(cell.input_tokens, cell.output_tokens))
    })
}

fn cost_per_success(plan: &RunPlan, m: usize, cell: &CellStats) -> Option<f64> {
    let successes = cell.successes();
    (plan.models[m].prices().is_some() && successes > 0)
        .then(|| round(cost(plan, m, cell) / successes as f64))
}

/// comparisons.csv: one row per pair of models, paired on scenario and trial.
#[derive(Debug, Default, Serialize)]
struct ComparisonRow {
    model_a: String,
    model_b: String,
    paired_trials: u64,
    success_a: Option<f64>,
    success_b: Option<f64>,
    difference: Option<f64>,
    only_a: u64,
    only_b: u64,
    p_value: f64,
    significant: bool,
}

/// self_correction.csv: per model and failure kind of the first attempt.
#[derive(Debug, Default, Serialize)]
struct SelfCorrectionRow {
    model: String,
    failure_kind: String,
    first_attempt_failures: u64,
    fixed: u64,
    fix_rate: f64,
}

/// pass_k.csv: pass^k at the k values of [`pass_k_ladder`].
#[derive(Debug, Default, Serialize)]
struct PassKRow {
    model: String,
    scenario: String,
    k: u64,
    pass_k: f64,
}

fn summary_row(
    plan: &RunPlan,
    m: usize,
    s: usize,
    cell: &CellStats,
    thresholds: &Thresholds,
) -> SummaryRow {
    let speed = cell.mean_speedup();
    let threshold = threshold_of(plan, s, thresholds);
    let failures = |kind: &str| cell.failures.get(kind).copied().unwrap_or(0);
    SummaryRow {
        model: plan.models[m].name().to_owned(),
        scenario: plan.scenarios[s].name.clone(),
        trials: cell.trials,
        max_attempts: cell.max_attempts,
        success_at_1: measured(cell, |c| c.success_by(1)),
        success_at_2: measured(cell, |c| c.success_by(2)),
        success_at_3: measured(cell, |c| c.success_by(3)),
        conditional_at_2: opt(cell.conditional_success(2)),
        conditional_at_3: opt(cell.conditional_success(3)),
        final_success: measured(cell, CellStats::final_success),
        wilson_low: measured(cell, |c| c.wilson().0),
        wilson_high: measured(cell, |c| c.wilson().1),
        mean_attempts: opt(cell.mean_attempts_to_success()),
        self_correction_rate: opt(cell.self_correction_rate()),
        pass_k_3: measured(cell, |c| pass_hat_k(c.successes(), c.trials, 3)),
        threshold,
        passed: violations_of(cell, threshold, thresholds).is_empty(),
        failures_parse: failures("parse"),
        failures_unknown_tool: failures("unknown_tool"),
        failures_validation: failures("validation"),
        failures_runtime: failures("runtime"),
        failures_timeout: failures("timeout"),
        failures_sandbox: failures("sandbox"),
        failures_bad_response: failures("bad_response"),
        failures_unexpected_call: failures("unexpected_call"),
        failures_missing_call: failures("missing_call"),
        failures_wrong_call: failures("wrong_call"),
        transport_errors: cell.transport_errors,
        input_tokens: cell.input_tokens,
        output_tokens: cell.output_tokens,
        cost_usd: cost(plan, m, cell),
        cost_per_success: cost_per_success(plan, m, cell),
        parallel_turns: cell.parallel_turns,
        mean_speedup: opt(speed.map(|s| s.0)),
        mean_ideal_speedup: opt(speed.map(|s| s.1)),
        mean_efficiency: opt(speed.map(|s| s.2)),
        model_p50_ms: cell.model_ms.percentile_ms(0.50),
        model_p95_ms: cell.model_ms.percentile_ms(0.95),
        model_p99_ms: cell.model_ms.percentile_ms(0.99),
        tool_p50_ms: cell.tool_ms.percentile_ms(0.50),
        tool_p95_ms: cell.tool_ms.percentile_ms(0.95),
        tool_p99_ms: cell.tool_ms.percentile_ms(0.99),
    }
}

/// The stricter of the run's and the scenario's success threshold.
fn threshold_of(plan: &RunPlan, scenario: usize, thresholds: &Thresholds) -> Option<f64> {
    match (thresholds.min_success, plan.scenarios[scenario].min_success) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn violations_of(cell: &CellStats, threshold: Option<f64>, thresholds: &Thresholds) -> Vec<String> {
    let mut found = Vec::new();
    if cell.trials == 0 {
        // Trials were run but none measured the model: never a pass. (A
        // cell with no trial at all belongs to another shard.)
        if cell.transport_errors > 0 {
            found.push(format!(
                "not measured: all {} trial(s) ended by a transport error",
                cell.transport_errors
            ));
        }
        return found;
    }
    if let Some(min) = threshold
        && cell.final_success() < min
    {
        found.push(format!("success {:.3} < {min}", cell.final_success()));
    }
    if let Some((k, min)) = thresholds.min_pass_k {
        let value = pass_hat_k(cell.successes(), cell.trials, k);
        if value < min {
            found.push(format!("pass^{k} {value:.3} < {min}"));
        }
    }
    found
}

/// Write rows under their struct's header; a file with no rows still has
/// its header, so CSV readers see the columns.
fn write_csv<R: Serialize + Default>(
    path: &Path,
    rows: impl IntoIterator<Item = impl std::borrow::Borrow<R>>,
) -> io::Result<()> {
    let mut writer = csv::Writer::from_path(path).map_err(io::Error::other)?;
    let mut empty = true;
    for row in rows {
        writer.serialize(row.borrow()).map_err(io::Error::other)?;
        empty = false;
    }
    if empty {
        let mut probe = csv::Writer::from_writer(Vec::new());
        probe.serialize(R::default()).map_err(io::Error::other)?;
        let bytes = probe
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        let header = bytes
            .split_inclusive(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        writer.flush()?;
        std::fs::write(path, header)?;
        return Ok(());
    }
    writer.flush()
}

fn total(cells: &[CellStats]) -> CellStats {
    let mut sum = CellStats::new(1);
    for cell in cells {
        sum.merge(cell);
    }
    sum
}

/// Write every summary file into `out`; return the threshold violations
/// and the key table (also in summary.md) for the terminal.
/// The most model x scenario rows printed on the terminal.
const MAX_PRINTED_ROWS: usize = 200;

pub fn write_summaries(
    plan: &RunPlan,
    aggregate: &Aggregate,
    thresholds: &Thresholds,
    out: &Path,
) -> io::Result<(Vec<Violation>, String)> {
    let mut violations = Vec::new();
    let mut summary_rows = Vec::new();
    for (m, model_cells) in aggregate.cells.iter().enumerate() {
        for (s, cell) in model_cells.iter().enumerate() {
            let row = summary_row(plan, m, s, cell, thresholds);
            for message in violations_of(cell, row.threshold, thresholds) {
                violations.push(Violation {
                    model: row.model.clone(),
                    scenario: row.scenario.clone(),
                    message,
                });
            }
            summary_rows.push(row);
        }
    }

    let measured_trials: u64 = aggregate.cells.iter().flatten().map(|c| c.trials).sum();
    if measured_trials == 0 && violations.is_empty() {
        violations.push(Violation {
            model: "(every model)".to_owned(),
            scenario: "(every scenario)".to_owned(),
            message: "not measured: no trial was run (is this shard empty?)".to_owned(),
        });
    }

    let model_rows: Vec<ModelRow> = aggregate
        .cells
        .iter()
        .enumerate()
        .map(|(m, cells)| {
            let sum = total(cells);
            ModelRow {
                model: plan.models[m].name().to_owned(),
                scenarios: cells.len(),
                trials: sum.trials,
                success_at_1: measured(&sum, |c| c.success_by(1)),
                final_success: measured(&sum, CellStats::final_success),
                wilson_low: measured(&sum, |c| c.wilson().0),
                wilson_high: measured(&sum, |c| c.wilson().1),
                self_correction_rate: opt(sum.self_correction_rate()),
                mean_attempts: opt(sum.mean_attempts_to_success()),
                mean_speedup: opt(sum.mean_speedup().map(|s| s.0)),
                mean_efficiency: opt(sum.mean_speedup().map(|s| s.2)),
                transport_errors: sum.transport_errors,
                input_tokens: sum.input_tokens,
                output_tokens: sum.output_tokens,
                cost_usd: cost(plan, m, &sum),
                cost_per_success: cost_per_success(plan, m, &sum),
            }
        })
        .collect();

    let mut comparisons = Vec::new();
    for a in 0..plan.models.len() {
        for b in a + 1..plan.models.len() {
            let (mut paired, mut ok_a, mut ok_b, mut only_a, mut only_b) =
                (0u64, 0u64, 0u64, 0u64, 0u64);
            for (x, y) in aggregate.outcomes[a].iter().zip(&aggregate.outcomes[b]) {
                if *x == 0 || *y == 0 {
                    continue;
                }
                paired += 1;
                ok_a += u64::from(*x == 2);
                ok_b += u64::from(*y == 2);
                only_a += u64::from(*x == 2 && *y == 1);
                only_b += u64::from(*x == 1 && *y == 2);
            }
            let rate = |n: u64| (paired > 0).then(|| n as f64 / paired as f64);
            let p_value = mcnemar_p_value(only_a, only_b);
            comparisons.push(ComparisonRow {
                model_a: plan.models[a].name().to_owned(),
                model_b: plan.models[b].name().to_owned(),
                paired_trials: paired,
                success_a: opt(rate(ok_a)),
                success_b: opt(rate(ok_b)),
                difference: rate(ok_a).zip(rate(ok_b)).map(|(a, b)| round(a - b)),
                only_a,
                only_b,
                p_value: round(p_value),
                significant: p_value < ALPHA,
            });
        }
    }

    let mut correction_rows = Vec::new();
    for (m, cells) in aggregate.cells.iter().enumerate() {
        let sum = total(cells);
        for kind in FAILURE_KINDS {
            if let Some((failed, fixed)) = sum.first_failed_by_kind.get(kind) {
                correction_rows.push(SelfCorrectionRow {
                    model: plan.models[m].name().to_owned(),
                    failure_kind: kind.to_owned(),
                    first_attempt_failures: *failed,
                    fixed: *fixed,
                    fix_rate: round(*fixed as f64 / *failed as f64),
                });
            }
        }
    }

    let extra_k = thresholds.min_pass_k.map(|(k, _)| k);
    let pass_k_rows = aggregate.cells.iter().enumerate().flat_map(|(m, cells)| {
        cells.iter().enumerate().flat_map(move |(s, cell)| {
            let ks = pass_k_ladder(cell.trials, extra_k);
            pass_hat_k_curve(cell.successes(), cell.trials, &ks)
                .into_iter()
                .map(move |(k, pass_k)| PassKRow {
                    model: plan.models[m].name().to_owned(),
                    scenario: plan.scenarios[s].name.clone(),
                    k,
                    pass_k: round(pass_k),
                })
        })
    });

    let table = key_table(&summary_rows);
    let markdown = markdown(
        plan,
        &table,
        &model_rows,
        &comparisons,
        &correction_rows,
        &violations,
    );
    let junit = junit(&summary_rows, &violations);

    write_csv::<SummaryRow>(&out.join("summary.csv"), &summary_rows)?;
    write_csv::<ModelRow>(&out.join("models.csv"), &model_rows)?;
    write_csv::<ComparisonRow>(&out.join("comparisons.csv"), &comparisons)?;
    write_csv::<SelfCorrectionRow>(&out.join("self_correction.csv"), &correction_rows)?;
    write_csv::<PassKRow>(&out.join("pass_k.csv"), pass_k_rows)?;
    std::fs::write(out.join("summary.md"), markdown)?;
    std::fs::write(out.join("junit.xml"), junit)?;
    // A big suite's per-scenario table would scroll away: print the models.
    let printed = if summary_rows.len() <= MAX_PRINTED_ROWS {
        table
    } else {
        format!(
            "{}\n{} model x scenario rows are in summary.md and summary.csv.",
            models_table(&model_rows),
            summary_rows.len()
        )
    };
    Ok((violations, printed))
}

fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn percent_opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), percent)
}

/// The table a person reads first, as Markdown (also fine on a terminal).
fn key_table(rows: &[SummaryRow]) -> String {
    let mut t = String::from(
        "| model | scenario | trials | @1 | @2 | @3 | final [95% CI] | self-correction | speedup (eff.) |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n",
    );
    for r in rows {
        let speed = match (r.mean_speedup, r.mean_efficiency) {
            (Some(s), Some(e)) => format!("{s:.2}x ({e:.2})"),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} [{}, {}] | {} | {} |",
            r.model,
            r.scenario,
            r.trials,
            percent_opt(r.success_at_1),
            percent_opt(r.success_at_2),
            percent_opt(r.success_at_3),
            percent_opt(r.final_success),
            percent_opt(r.wilson_low),
            percent_opt(r.wilson_high),
            percent_opt(r.self_correction_rate),
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
    plan: &RunPlan,
    table: &str,
    models: &[ModelRow],
    comparisons: &[ComparisonRow],
    corrections: &[SelfCorrectionRow],
    violations: &[Violation],
) -> String {
    let mut md = format!(
        "# toolgauge run\n\n{} model(s) x {} scenario(s) x {} trial(s), seed {}, feedback {}, clock {}.\n\n## Models\n\n{}",
        plan.models.len(),
        plan.scenarios.len(),
        plan.trials,
        plan.seed,
        serde_name(&plan.feedback),
        serde_name(&plan.clock),
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

/// The name a value has in files (`pointer-list`, `virtual`).
fn serde_name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One testsuite per model, one testcase per scenario, failing when under
/// its threshold.
fn junit(rows: &[SummaryRow], violations: &[Violation]) -> String {
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"toolgauge\" tests=\"{}\" failures=\"{}\">\n",
        rows.len(),
        rows.iter().filter(|r| !r.passed).count()
    );
    let mut models: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    models.dedup();
    for model in models {
        let cases: Vec<&SummaryRow> = rows.iter().filter(|r| r.model == model).collect();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">",
            xml_escape(model),
            cases.len(),
            cases.iter().filter(|r| !r.passed).count()
        );
        for case in cases {
            let _ = write!(
                xml,
                "    <testcase classname=\"{}\" name=\"{}\">",
                xml_escape(model),
                xml_escape(&case.scenario)
            );
            let messages: Vec<&str> = violations
                .iter()
                .filter(|v| v.model == case.model && v.scenario == case.scenario)
                .map(|v| v.message.as_str())
                .collect();
            if !messages.is_empty() {
                let _ = write!(
                    xml,
                    "<failure message=\"{}\">final success {} over {} trials</failure>",
                    xml_escape(&messages.join("; ")),
                    percent_opt(case.final_success),
                    case.trials
                );
            }
            xml.push_str("</testcase>\n");
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}
