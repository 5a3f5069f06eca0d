//! The run's charts, from its measures: the verdict (final success with
//! intervals), the retry curve, pass^k, failures by kind, self-correction
//! by kind, parallel speedup against the ideal, latency percentiles and,
//! when the run has tasks, task progress and turns. report.html embeds
//! them; summary.md links them as SVG files beside it.

use std::io;
use std::path::Path;

use super::RunInfo;
use super::summary::{model_rows, total, total_of_kind};
use super::svg::{Bars, Intervals, Lines};
use crate::call::Failure;
use crate::metrics::{Aggregate, CellStats, histogram_mean, pass_hat_k};

/// One chart: its file stem (`retry_curve`), title and SVG.
#[derive(Debug, Clone)]
pub struct Chart {
    pub name: &'static str,
    pub title: String,
    pub svg: String,
}

/// Attempts and k shown at most.
const MAX_K: u32 = 10;

/// Failure kinds with a colour of their own (the palette's size, less one
/// for "other").
const COLOURED_KINDS: usize = 6;

/// Each model's cells of one kind summed: single-turn scenarios, or tasks.
fn per_model(info: &RunInfo, stats: &Aggregate, tasks: bool) -> Vec<CellStats> {
    stats
        .cells
        .iter()
        .map(|cells| total_of_kind(info, cells, tasks))
        .collect()
}

/// What every chart reads: the run's measures, and each model's cells
/// summed three ways.
struct Data<'a> {
    info: &'a RunInfo,
    stats: &'a Aggregate,
    names: Vec<String>,
    /// Single-turn scenarios only.
    turns: Vec<CellStats>,
    /// Tasks only.
    tasks: Vec<CellStats>,
    /// Everything.
    all: Vec<CellStats>,
}

/// One chart of the run, from its data; `None` when it has nothing to show.
type Plot = fn(&Data) -> Option<Chart>;

/// The charts, in reading order (criterion's `Plotter`: one function per
/// chart).
const PLOTS: [Plot; 9] = [
    verdict,
    retry_curve,
    pass_k,
    failures,
    self_correction,
    speedup,
    latency,
    task_success,
    task_turns,
];

/// Every chart the run has data for, in reading order.
pub fn charts(info: &RunInfo, stats: &Aggregate) -> Vec<Chart> {
    let data = Data {
        info,
        stats,
        names: info.models.iter().map(|m| m.name.clone()).collect(),
        turns: per_model(info, stats, false),
        tasks: per_model(info, stats, true),
        all: per_model_all(stats),
    };
    PLOTS.iter().filter_map(|plot| plot(&data)).collect()
}

fn chart(name: &'static str, title: &str, svg: String) -> Option<Chart> {
    Some(Chart {
        name,
        title: title.to_owned(),
        svg,
    })
}

/// The verdict: models ranked by final success. Each model keeps its own
/// colour (its index) in every chart.
fn verdict(data: &Data) -> Option<Chart> {
    let mut ranked: Vec<(usize, (String, f64, f64, f64))> = model_rows(data.info, data.stats)
        .into_iter()
        .enumerate()
        .filter_map(|(i, m)| {
            Some((
                i,
                (m.model, m.final_success?, m.wilson_low?, m.wilson_high?),
            ))
        })
        .collect();
    ranked.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    if ranked.is_empty() {
        return None;
    }
    let title = "Final success by model";
    let svg = Intervals {
        title: title.to_owned(),
        unit: "final success, with its 95% Wilson interval".to_owned(),
        colours: ranked.iter().map(|(i, _)| *i).collect(),
        rows: ranked.into_iter().map(|(_, row)| row).collect(),
    }
    .render();
    chart("verdict", title, svg)
}

fn retry_curve(data: &Data) -> Option<Chart> {
    if !data.turns.iter().any(|c| c.trials > 0) {
        return None;
    }
    let k_max = data
        .turns
        .iter()
        .map(|c| c.max_attempts)
        .max()
        .unwrap_or(1)
        .min(MAX_K);
    let (colours, series): (Vec<usize>, Vec<_>) = data
        .names
        .iter()
        .zip(&data.turns)
        .enumerate()
        .filter(|(_, (_, c))| c.trials > 0)
        .map(|(m, (name, c))| {
            let points = (1..=k_max)
                .map(|k| (f64::from(k), c.success_by(k)))
                .collect();
            (m, (name.clone(), points))
        })
        .unzip();
    let title = "Retry curve: success by attempt";
    let svg = Lines {
        title: title.to_owned(),
        x_label: "attempt".to_owned(),
        y_label: "succeeded by this attempt".to_owned(),
        series,
        colours,
    }
    .render();
    chart("retry_curve", title, svg)
}

/// pass^k: the mean over a model's cells of the chance that k trials all
/// succeed.
fn pass_k(data: &Data) -> Option<Chart> {
    type Series = (String, Vec<(f64, f64)>);
    let (colours, series): (Vec<usize>, Vec<Series>) = data
        .stats
        .cells
        .iter()
        .enumerate()
        .filter_map(|(m, cells)| {
            let n = cells.iter().map(|c| c.trials).max()?;
            let points: Vec<(f64, f64)> = (1..=n.min(u64::from(MAX_K)))
                .filter_map(|k| {
                    let values: Vec<f64> = cells
                        .iter()
                        .filter(|c| c.trials >= k)
                        .map(|c| pass_hat_k(c.successes(), c.trials, k))
                        .collect();
                    (!values.is_empty())
                        .then(|| (k as f64, values.iter().sum::<f64>() / values.len() as f64))
                })
                .collect();
            (!points.is_empty()).then(|| (m, (data.names[m].clone(), points)))
        })
        .unzip();
    if series.is_empty() {
        return None;
    }
    let title = "pass^k: every one of k trials succeeds";
    let svg = Lines {
        title: title.to_owned(),
        x_label: "k (trials that must all succeed)".to_owned(),
        y_label: "pass^k, mean over scenarios".to_owned(),
        series,
        colours,
    }
    .render();
    chart("pass_k", title, svg)
}

/// Failures by kind, per model: the most frequent kinds get a colour
/// each; the rest are "other".
fn failures(data: &Data) -> Option<Chart> {
    let count = |c: &CellStats, k: &Failure| c.failures.get(k).copied().unwrap_or(0);
    let mut kinds: Vec<(Failure, u64)> = Failure::all()
        .map(|k| (k, data.all.iter().map(|c| count(c, &k)).sum()))
        .filter(|(_, n)| *n > 0)
        .collect();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let shown: Vec<Failure> = kinds.iter().take(COLOURED_KINDS).map(|(k, _)| *k).collect();
    let other = kinds.len() > shown.len();
    if shown.is_empty() {
        return None;
    }
    let title = "Failures by kind";
    let mut series: Vec<String> = shown.iter().map(|k| k.as_str().to_owned()).collect();
    if other {
        series.push("other".to_owned());
    }
    let row = |c: &CellStats| {
        let mut counts: Vec<Option<f64>> = shown.iter().map(|k| Some(count(c, k) as f64)).collect();
        if other {
            let rest: u64 = c
                .failures
                .iter()
                .filter(|(k, _)| !shown.contains(k))
                .map(|(_, n)| n)
                .sum();
            counts.push(Some(rest as f64));
        }
        counts
    };
    let svg = Bars {
        title: title.to_owned(),
        unit: "failed calls or turns, over every attempt".to_owned(),
        series,
        rows: per_name(data, &data.all, row),
        stacked: true,
        percent: false,
    }
    .render();
    chart("failures", title, svg)
}

/// Self-correction by the first attempt's failure kind.
fn self_correction(data: &Data) -> Option<Chart> {
    let corrected: Vec<Failure> = Failure::all()
        .filter(|k| {
            data.turns
                .iter()
                .any(|c| c.first_failed_by_kind.contains_key(k))
        })
        .collect();
    if corrected.is_empty() {
        return None;
    }
    let title = "Self-correction by first-attempt failure";
    let svg = Bars {
        title: title.to_owned(),
        unit: "trials fixed by a later attempt".to_owned(),
        series: data.names.clone(),
        rows: corrected
            .iter()
            .map(|kind| {
                let rates = data
                    .turns
                    .iter()
                    .map(|c| {
                        c.first_failed_by_kind
                            .get(kind)
                            .filter(|(failed, _)| *failed > 0)
                            .map(|(failed, fixed)| *fixed as f64 / *failed as f64)
                    })
                    .collect();
                (kind.as_str().to_owned(), rates)
            })
            .collect(),
        stacked: false,
        percent: true,
    }
    .render();
    chart("self_correction", title, svg)
}

fn speedup(data: &Data) -> Option<Chart> {
    if !data.all.iter().any(|c| c.parallel_turns > 0) {
        return None;
    }
    let title = "Parallel speedup against the ideal";
    let svg = Bars {
        title: title.to_owned(),
        unit: "speedup over running the calls one by one (x)".to_owned(),
        series: vec![
            "measured".to_owned(),
            "ideal (write barriers kept)".to_owned(),
        ],
        rows: per_name(data, &data.all, |c| {
            let speed = c.mean_speedup();
            vec![speed.map(|s| s.0), speed.map(|s| s.1)]
        }),
        stacked: false,
        percent: false,
    }
    .render();
    chart("speedup", title, svg)
}

fn latency(data: &Data) -> Option<Chart> {
    if !data.all.iter().any(|c| c.trials > 0) {
        return None;
    }
    let title = "Model latency";
    let svg = Bars {
        title: title.to_owned(),
        unit: "response time per attempt (ms)".to_owned(),
        series: vec!["p50".to_owned(), "p95".to_owned(), "p99".to_owned()],
        rows: per_name(data, &data.all, |c| {
            let p = |q| c.model_ms.percentile_ms(q);
            vec![p(0.50), p(0.95), p(0.99)]
        }),
        stacked: false,
        percent: false,
    }
    .render();
    chart("latency", title, svg)
}

fn has_tasks(data: &Data) -> bool {
    data.tasks.iter().any(|c| c.task.is_some())
}

fn task_success(data: &Data) -> Option<Chart> {
    if !has_tasks(data) {
        return None;
    }
    let title = "Agent tasks: success and progress";
    let svg = Bars {
        title: title.to_owned(),
        unit: "fraction of tasks, of milestones".to_owned(),
        series: vec![
            "task success".to_owned(),
            "progress (milestones reached)".to_owned(),
        ],
        rows: per_name(data, &data.tasks, |c| {
            let success = (c.trials > 0).then(|| c.final_success());
            let progress = c.task.as_ref().and_then(|t| t.progress_rate());
            vec![success, progress]
        }),
        stacked: false,
        percent: true,
    }
    .render();
    chart("tasks", title, svg)
}

fn task_turns(data: &Data) -> Option<Chart> {
    if !has_tasks(data) {
        return None;
    }
    let title = "Agent tasks: turns and calls per task";
    let svg = Bars {
        title: title.to_owned(),
        unit: "mean per task".to_owned(),
        series: vec!["turns".to_owned(), "calls".to_owned()],
        rows: per_name(data, &data.tasks, |c| {
            let task = c.task.as_ref();
            let turns = task.and_then(|t| histogram_mean(&t.turns));
            let calls = task.and_then(|t| histogram_mean(&t.calls));
            vec![turns, calls]
        }),
        stacked: false,
        percent: false,
    }
    .render();
    chart("task_turns", title, svg)
}

/// A bar row per model: its name and `values` of its cells.
fn per_name(
    data: &Data,
    cells: &[CellStats],
    values: impl Fn(&CellStats) -> Vec<Option<f64>>,
) -> Vec<(String, Vec<Option<f64>>)> {
    data.names
        .iter()
        .zip(cells)
        .map(|(name, c)| (name.clone(), values(c)))
        .collect()
}

/// Each model's cells summed, tasks and single turns together.
fn per_model_all(stats: &Aggregate) -> Vec<CellStats> {
    stats.cells.iter().map(|cells| total(cells)).collect()
}

/// Write each chart as `<name>.svg` in `dir`.
pub fn write_svgs(charts: &[Chart], dir: &Path) -> io::Result<()> {
    for chart in charts {
        crate::whole_file::write(&dir.join(format!("{}.svg", chart.name)), &chart.svg)?;
    }
    Ok(())
}
