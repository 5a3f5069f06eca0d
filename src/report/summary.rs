//! The summary CSVs a finished run writes: summary.csv (model x scenario),
//! models.csv, comparisons.csv (paired, McNemar), self_correction.csv and
//! pass_k.csv. Rows are computed here from the run's measures; the
//! Markdown and JUnit reporters read the same rows.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::ser::{SerializeTuple, Serializer};

use super::recovery::{RecoveryRow, recovery_rows, write_recovery_csv};
use super::streamed::StreamColumns;
use super::{Reporter, RunInfo, cell_violations, header_of, round};
use crate::call::Failure;
use crate::metrics::{
    Aggregate, CellStats, histogram_mean, histogram_percentile, pass_hat_k, pass_hat_k_curve,
    pass_k_ladder,
};

/// Significance level for comparisons.
pub(super) const ALPHA: f64 = 0.05;

fn opt(x: Option<f64>) -> Option<f64> {
    x.map(round)
}

/// A rate of a cell, or nothing when no trial was measured.
fn measured(cell: &CellStats, rate: impl FnOnce(&CellStats) -> f64) -> Option<f64> {
    (cell.trials > 0).then(|| round(rate(cell)))
}

/// The failure kinds with a column of their own, in column order.
fn counted_failures() -> impl Iterator<Item = Failure> {
    Failure::all().filter(|f| f.has_column())
}

/// summary.csv: one row per model x scenario. The failure columns come
/// from [`Failure`] (between `passed` and `transport_errors`); the task
/// columns close the row, empty for a single-turn scenario.
#[derive(Debug, Default)]
pub(super) struct SummaryRow {
    pub head: SummaryHead,
    /// Per failure kind with a column, in [`counted_failures`] order.
    pub failures: Vec<u64>,
    pub tail: SummaryTail,
    pub task: TaskColumns,
    /// Streamed replies' figures (last, after the task's).
    pub stream: StreamColumns,
    /// Is the scenario a task (not written: the task columns say it)?
    pub is_task: bool,
}

#[derive(Debug, Default, Serialize)]
pub(super) struct SummaryHead {
    pub model: String,
    pub scenario: String,
    pub trials: u64,
    pub max_attempts: u32,
    pub success_at_1: Option<f64>,
    pub success_at_2: Option<f64>,
    pub success_at_3: Option<f64>,
    pub conditional_at_2: Option<f64>,
    pub conditional_at_3: Option<f64>,
    pub final_success: Option<f64>,
    pub wilson_low: Option<f64>,
    pub wilson_high: Option<f64>,
    pub mean_attempts: Option<f64>,
    pub self_correction_rate: Option<f64>,
    /// Empty with fewer than 3 measured trials: pass^3 is undefined then.
    pub pass_k_3: Option<f64>,
    pub threshold: Option<f64>,
    /// `yes` or `no` against the thresholds that apply; `-` when none
    /// but the lost-trial check does, and it passed.
    pub passed: Passed,
}

/// A cell's verdict against the run's checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub(super) enum Passed {
    Yes,
    No,
    /// No success threshold applies (and nothing failed).
    #[default]
    #[strum(serialize = "-")]
    NoThreshold,
}

impl Passed {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Did the cell fail a check?
    pub fn failed(self) -> bool {
        self == Passed::No
    }
}

impl Serialize for Passed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[derive(Debug, Default, Serialize)]
pub(super) struct SummaryTail {
    /// Trials lost to infrastructure, by cause: not in `trials`.
    pub transport_errors: u64,
    pub bad_responses: u64,
    pub tools_unavailable: u64,
    /// Lost to a tool whose output broke its own `outputSchema`.
    pub bad_outputs: u64,
    pub lost_trials: u64,
    /// Of the trials whose first attempt failed with an error the model
    /// was told about, the share fixed later (self-correction from
    /// feedback); of those that made no call, the share fixed after the
    /// nudge; of those whose wrong calls got their own results and no
    /// error (no nudge sent), the share fixed after those results.
    pub fixed_after_feedback: Option<f64>,
    pub fixed_after_nudge: Option<f64>,
    pub fixed_after_results: Option<f64>,
    /// Live models: time in toolgauge's own queue and requests tried
    /// again, apart from the model's time.
    pub queue_ms: f64,
    pub retries: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input tokens, the share read from the prompt cache.
    pub cached_input_share: Option<f64>,
    pub cost_usd: f64,
    pub cost_per_success: Option<f64>,
    pub parallel_turns: u64,
    pub mean_speedup: Option<f64>,
    pub mean_ideal_speedup: Option<f64>,
    pub mean_efficiency: Option<f64>,
    pub model_p50_ms: Option<f64>,
    pub model_p95_ms: Option<f64>,
    pub model_p99_ms: Option<f64>,
    pub tool_p50_ms: Option<f64>,
    pub tool_p95_ms: Option<f64>,
    pub tool_p99_ms: Option<f64>,
}

/// The measures of a task (summary.csv's last columns; models.csv's over
/// a model's tasks).
#[derive(Debug, Default, Serialize)]
pub(super) struct TaskColumns {
    /// Milestones reached over milestones (AgentBoard's progress rate).
    pub progress_rate: Option<f64>,
    pub turns_mean: Option<f64>,
    pub turns_p95: Option<u32>,
    pub calls_mean: Option<f64>,
    pub calls_p95: Option<u32>,
    pub redundant_calls: Option<u64>,
    /// Failed calls and unreadable replies inside tasks.
    pub call_errors: Option<u64>,
    /// Of those, the share a later turn recovered from.
    pub errors_recovered_rate: Option<f64>,
    pub forbidden_calls: Option<u64>,
    /// Tasks that ended with a milestone missed, the final state wrong,
    /// the answer wrong, or every turn used.
    pub milestones_missed: Option<u64>,
    pub wrong_final_state: Option<u64>,
    pub wrong_answer: Option<u64>,
    pub turn_limit: Option<u64>,
    pub tokens_per_task: Option<f64>,
    pub cost_per_task: Option<f64>,
    /// Conversations (the user speaks more than once): the share of user
    /// turns passed, and user turns survived per task (passed before the
    /// first that failed).
    pub user_turn_success: Option<f64>,
    pub turns_survived_mean: Option<f64>,
    /// Trials lost to a simulated user (it never said it was done,
    /// repeated its instructions, said nothing, could not be asked): not
    /// the agent's doing, apart from its failures.
    pub user_simulator_failures: Option<u64>,
    /// Trials lost to a probe's judging model (tau2's NL judge failed):
    /// their reward unknown, not the agent's doing.
    pub judge_failures: Option<u64>,
    /// A simulated user's tokens per task (apart from the agent's).
    pub user_tokens_per_task: Option<f64>,
}

impl TaskColumns {
    fn of(info: &RunInfo, m: usize, cell: &CellStats) -> TaskColumns {
        let Some(task) = cell.task.as_ref().filter(|t| t.tasks > 0) else {
            // Every trial lost: still say to whom.
            let lost = cell.lost_to(Failure::UserSimulator);
            let judge = cell.lost_to(Failure::Judge);
            return TaskColumns {
                user_simulator_failures: (lost > 0).then_some(lost),
                judge_failures: (judge > 0).then_some(judge),
                ..TaskColumns::default()
            };
        };
        let count = |kind: Failure| Some(cell.failures.get(&kind).copied().unwrap_or(0));
        let per_task = |x: f64| Some(round(x / task.tasks as f64));
        TaskColumns {
            progress_rate: opt(task.progress_rate()),
            turns_mean: opt(histogram_mean(&task.turns)),
            turns_p95: histogram_percentile(&task.turns, 0.95),
            calls_mean: opt(histogram_mean(&task.calls)),
            calls_p95: histogram_percentile(&task.calls, 0.95),
            redundant_calls: Some(task.redundant_calls),
            call_errors: Some(task.errors),
            errors_recovered_rate: opt(task.recovery_rate()),
            forbidden_calls: count(Failure::ForbiddenCall),
            milestones_missed: count(Failure::MilestoneMissed),
            wrong_final_state: count(Failure::WrongFinalState),
            wrong_answer: count(Failure::WrongAnswer),
            turn_limit: count(Failure::TurnLimit),
            tokens_per_task: per_task((cell.usage.input_tokens + cell.usage.output_tokens) as f64),
            cost_per_task: per_task(cost(info, m, cell)),
            user_turn_success: opt(task.user_turn_measures().map(|m| m.0)),
            turns_survived_mean: opt(task.user_turn_measures().map(|m| m.1)),
            user_simulator_failures: Some(cell.lost_to(Failure::UserSimulator)),
            judge_failures: Some(cell.lost_to(Failure::Judge)),
            user_tokens_per_task: (task.user_tokens > 0)
                .then(|| round(task.user_tokens as f64 / task.tasks as f64)),
        }
    }
}

impl Serialize for SummaryRow {
    /// One record: the head's fields, the failure counts, the tail's, the
    /// task's.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tuple = serializer.serialize_tuple(5)?;
        tuple.serialize_element(&self.head)?;
        tuple.serialize_element(&self.failures)?;
        tuple.serialize_element(&self.tail)?;
        tuple.serialize_element(&self.task)?;
        tuple.serialize_element(&self.stream)?;
        tuple.end()
    }
}

impl SummaryRow {
    /// The header: the head's field names, a column per failure kind, the
    /// tail's field names, the task's.
    fn header() -> io::Result<csv::StringRecord> {
        let mut names = header_of::<SummaryHead>()?;
        for failure in counted_failures() {
            names.push_field(&format!("failures_{}", failure.as_str()));
        }
        names.extend(&header_of::<SummaryTail>()?);
        names.extend(&header_of::<TaskColumns>()?);
        names.extend(&header_of::<StreamColumns>()?);
        Ok(names)
    }
}

/// models.csv: one row per model, over all its scenarios.
#[derive(Debug, Default, Serialize)]
pub(super) struct ModelRow {
    pub model: String,
    pub scenarios: usize,
    pub trials: u64,
    pub success_at_1: Option<f64>,
    pub final_success: Option<f64>,
    pub wilson_low: Option<f64>,
    pub wilson_high: Option<f64>,
    pub self_correction_rate: Option<f64>,
    pub mean_attempts: Option<f64>,
    pub mean_speedup: Option<f64>,
    pub mean_efficiency: Option<f64>,
    pub transport_errors: u64,
    /// Trials lost to infrastructure, every cause (transport errors
    /// included): not in `trials`.
    pub lost_trials: u64,
    pub fixed_after_feedback: Option<f64>,
    pub fixed_after_nudge: Option<f64>,
    pub fixed_after_results: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input tokens, the share read from the prompt cache.
    pub cached_input_share: Option<f64>,
    pub cost_usd: f64,
    pub cost_per_success: Option<f64>,
    /// Over the model's tasks only.
    pub task_trials: u64,
    pub task_success: Option<f64>,
    pub task_progress_rate: Option<f64>,
    pub task_turns_mean: Option<f64>,
    pub task_calls_mean: Option<f64>,
    pub task_errors_recovered_rate: Option<f64>,
    pub task_forbidden_calls: u64,
}

/// comparisons.csv: one row per pair of models, paired on scenario and trial.
#[derive(Debug, Default, Serialize)]
pub(super) struct ComparisonRow {
    pub model_a: String,
    pub model_b: String,
    pub paired_trials: u64,
    pub success_a: Option<f64>,
    pub success_b: Option<f64>,
    pub difference: Option<f64>,
    pub only_a: u64,
    pub only_b: u64,
    pub p_value: f64,
    pub significant: bool,
}

/// pass_k.csv: pass^k at the k values of [`pass_k_ladder`].
#[derive(Debug, Default, Serialize)]
struct PassKRow {
    model: String,
    scenario: String,
    k: u64,
    pass_k: f64,
}

/// What a cell's tokens cost at the model's prices (0 without prices).
fn cost(info: &RunInfo, m: usize, cell: &CellStats) -> f64 {
    info.models[m].prices.map_or(0.0, |p| {
        // Cache reads and writes at their own prices.
        round(p.cost(cell.usage))
    })
}

fn cost_per_success(info: &RunInfo, m: usize, cell: &CellStats) -> Option<f64> {
    let successes = cell.successes();
    (info.models[m].prices.is_some() && successes > 0)
        .then(|| round(cost(info, m, cell) / successes as f64))
}

pub(super) fn summary_row(info: &RunInfo, m: usize, s: usize, cell: &CellStats) -> SummaryRow {
    let speed = cell.mean_speedup();
    let is_task = info.scenarios[s].task_milestones.is_some();
    // A task is one attempt: the retry columns do not apply.
    let retries = |x: Option<f64>| x.filter(|_| !is_task);
    SummaryRow {
        is_task,
        task: TaskColumns::of(info, m, cell),
        stream: StreamColumns::of(cell),
        head: SummaryHead {
            model: info.models[m].name.clone(),
            scenario: info.scenarios[s].name.clone(),
            trials: cell.trials,
            max_attempts: cell.max_attempts,
            success_at_1: measured(cell, |c| c.success_by(1)),
            success_at_2: retries(measured(cell, |c| c.success_by(2))),
            success_at_3: retries(measured(cell, |c| c.success_by(3))),
            conditional_at_2: opt(cell.conditional_success(2)),
            conditional_at_3: opt(cell.conditional_success(3)),
            final_success: measured(cell, CellStats::final_success),
            wilson_low: measured(cell, |c| c.wilson().0),
            wilson_high: measured(cell, |c| c.wilson().1),
            mean_attempts: retries(opt(cell.mean_attempts_to_success())),
            self_correction_rate: retries(opt(cell.self_correction_rate())),
            pass_k_3: measured(cell, |c| pass_hat_k(c.successes(), c.trials, 3))
                .filter(|_| cell.trials >= 3),
            threshold: info.threshold(s),
            passed: passed(info, s, cell),
        },
        failures: counted_failures()
            .map(|kind| cell.failures.get(&kind).copied().unwrap_or(0))
            .collect(),
        tail: SummaryTail {
            transport_errors: cell.lost_to(Failure::TransportError),
            bad_responses: cell.lost_to(Failure::BadResponse),
            tools_unavailable: cell.lost_to(Failure::ToolUnavailable),
            bad_outputs: cell.lost_to(Failure::BadOutput),
            lost_trials: cell.lost_trials(),
            fixed_after_feedback: retries(opt(cell.fixed_after_feedback())),
            fixed_after_nudge: retries(opt(cell.fixed_after_nudge())),
            fixed_after_results: retries(opt(cell.fixed_after_results())),
            queue_ms: round(cell.queue.as_secs_f64() * 1e3),
            retries: cell.retries,
            input_tokens: cell.usage.input_tokens,
            output_tokens: cell.usage.output_tokens,
            cached_input_share: opt(cell.usage.cached_share()),
            cost_usd: cost(info, m, cell),
            cost_per_success: cost_per_success(info, m, cell),
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
        },
    }
}

/// A cell's verdict: `no` on any violation, else `yes` where a success
/// threshold applies, `-` where none does.
fn passed(info: &RunInfo, s: usize, cell: &CellStats) -> Passed {
    if !cell_violations(info, s, cell).is_empty() {
        Passed::No
    } else if info.threshold(s).is_some() || info.thresholds.min_pass_k.is_some() {
        Passed::Yes
    } else {
        Passed::NoThreshold
    }
}

/// Every model x scenario row, in report order.
pub(super) fn summary_rows(info: &RunInfo, stats: &Aggregate) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    for (m, cells) in stats.cells.iter().enumerate() {
        for (s, cell) in cells.iter().enumerate() {
            rows.push(summary_row(info, m, s, cell));
        }
    }
    rows
}

/// The streamed-reply figures of each cell, named.
pub(super) fn streamed_cells(rows: &[SummaryRow]) -> Vec<super::streamed::StreamedCell<'_>> {
    rows.iter()
        .map(|r| super::streamed::StreamedCell {
            model: &r.head.model,
            scenario: &r.head.scenario,
            columns: &r.stream,
        })
        .collect()
}

/// A model's cells summed.
pub(super) fn total(cells: &[CellStats]) -> CellStats {
    let mut sum = CellStats::new(1);
    for cell in cells {
        sum.merge(cell);
    }
    sum
}

/// A model's cells of one kind summed: its single-turn scenarios
/// (`tasks` false), or its tasks.
pub(super) fn total_of_kind(info: &RunInfo, cells: &[CellStats], tasks: bool) -> CellStats {
    let mut sum = CellStats::new(1);
    for (s, cell) in cells.iter().enumerate() {
        if info.scenarios[s].task_milestones.is_some() == tasks {
            sum.merge(cell);
        }
    }
    sum
}

pub(super) fn model_rows(info: &RunInfo, stats: &Aggregate) -> Vec<ModelRow> {
    stats
        .cells
        .iter()
        .enumerate()
        .map(|(m, cells)| {
            let sum = total(cells);
            // Retries are measured on single-turn scenarios, tasks apart.
            let (turns, tasks) = (
                total_of_kind(info, cells, false),
                total_of_kind(info, cells, true),
            );
            let task = tasks.task.clone().unwrap_or_default();
            let columns = TaskColumns::of(info, m, &tasks);
            ModelRow {
                task_trials: task.tasks,
                task_success: measured(&tasks, CellStats::final_success).filter(|_| task.tasks > 0),
                task_progress_rate: columns.progress_rate,
                task_turns_mean: columns.turns_mean,
                task_calls_mean: columns.calls_mean,
                task_errors_recovered_rate: columns.errors_recovered_rate,
                task_forbidden_calls: columns.forbidden_calls.unwrap_or(0),
                model: info.models[m].name.clone(),
                scenarios: cells.len(),
                trials: sum.trials,
                success_at_1: measured(&sum, |c| c.success_by(1)),
                final_success: measured(&sum, CellStats::final_success),
                wilson_low: measured(&sum, |c| c.wilson().0),
                wilson_high: measured(&sum, |c| c.wilson().1),
                self_correction_rate: opt(turns.self_correction_rate()),
                mean_attempts: opt(turns.mean_attempts_to_success()),
                mean_speedup: opt(sum.mean_speedup().map(|s| s.0)),
                mean_efficiency: opt(sum.mean_speedup().map(|s| s.2)),
                transport_errors: sum.lost_to(Failure::TransportError),
                lost_trials: sum.lost_trials(),
                fixed_after_feedback: opt(turns.fixed_after_feedback()),
                fixed_after_nudge: opt(turns.fixed_after_nudge()),
                fixed_after_results: opt(turns.fixed_after_results()),
                input_tokens: sum.usage.input_tokens,
                output_tokens: sum.usage.output_tokens,
                cached_input_share: opt(sum.usage.cached_share()),
                cost_usd: cost(info, m, &sum),
                cost_per_success: cost_per_success(info, m, &sum),
            }
        })
        .collect()
}

pub(super) fn comparison_rows(info: &RunInfo, stats: &Aggregate) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for a in 0..info.models.len() {
        for b in a + 1..info.models.len() {
            let paired = stats.paired(a, b);
            let rates = paired.rates();
            rows.push(ComparisonRow {
                model_a: info.models[a].name.clone(),
                model_b: info.models[b].name.clone(),
                paired_trials: paired.trials,
                success_a: opt(rates.map(|r| r.0)),
                success_b: opt(rates.map(|r| r.1)),
                difference: rates.map(|(a, b)| round(a - b)),
                only_a: paired.only_a,
                only_b: paired.only_b,
                p_value: round(paired.p_value),
                significant: paired.p_value < ALPHA,
            });
        }
    }
    rows
}

pub(super) fn correction_rows(info: &RunInfo, stats: &Aggregate) -> Vec<RecoveryRow> {
    stats
        .cells
        .iter()
        .enumerate()
        .flat_map(|(m, cells)| {
            let sum = total(cells);
            recovery_rows(
                &info.models[m].name,
                &sum.recovery,
                &sum.first_failed_by_kind,
            )
        })
        .collect()
}

/// Write rows under `header`; a file with no rows still has its header,
/// so CSV readers see the columns.
fn write_csv<R: Serialize>(
    path: &Path,
    header: &csv::StringRecord,
    rows: impl IntoIterator<Item = impl std::borrow::Borrow<R>>,
) -> io::Result<()> {
    crate::whole_file::write_with(path, |file| {
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(file);
        writer.write_record(header).map_err(io::Error::other)?;
        for row in rows {
            writer.serialize(row.borrow()).map_err(io::Error::other)?;
        }
        writer.flush()
    })
}

/// A row struct's file, under the struct's own header.
fn write_rows<R: Serialize + Default>(
    path: &Path,
    rows: impl IntoIterator<Item = impl std::borrow::Borrow<R>>,
) -> io::Result<()> {
    write_csv::<R>(path, &header_of::<R>()?, rows)
}

/// Writes the summary CSVs into a folder when the run finishes.
pub struct SummaryCsvs {
    out: PathBuf,
}

impl SummaryCsvs {
    pub fn new(out: &Path) -> Self {
        SummaryCsvs {
            out: out.to_owned(),
        }
    }
}

impl Reporter for SummaryCsvs {
    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        let out = &self.out;
        write_csv::<SummaryRow>(
            &out.join("summary.csv"),
            &SummaryRow::header()?,
            summary_rows(info, stats),
        )?;
        write_rows::<ModelRow>(&out.join("models.csv"), model_rows(info, stats))?;
        write_rows::<ComparisonRow>(&out.join("comparisons.csv"), comparison_rows(info, stats))?;
        write_recovery_csv(
            &out.join("self_correction.csv"),
            &correction_rows(info, stats),
        )?;
        let extra_k = info.thresholds.min_pass_k.map(|(k, _)| k);
        let pass_k_rows = stats.cells.iter().enumerate().flat_map(|(m, cells)| {
            cells.iter().enumerate().flat_map(move |(s, cell)| {
                let ks = pass_k_ladder(cell.trials, extra_k);
                pass_hat_k_curve(cell.successes(), cell.trials, &ks)
                    .into_iter()
                    .map(move |(k, pass_k)| PassKRow {
                        model: info.models[m].name.clone(),
                        scenario: info.scenarios[s].name.clone(),
                        k,
                        pass_k: round(pass_k),
                    })
            })
        });
        write_rows::<PassKRow>(&out.join("pass_k.csv"), pass_k_rows)?;
        let scores = super::scores::rows(info, stats);
        if scores.is_empty() {
            return Ok(());
        }
        write_rows::<super::scores::ScoreRow>(&out.join("scores.csv"), scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::ranked_run;

    #[test]
    fn pass_k_is_empty_below_k_trials_and_passed_says_dash_without_a_threshold() {
        // 20 trials each: m0 gets none right, m1 half.
        let (mut info, stats) = ranked_run(2);
        let row = summary_row(&info, 1, 0, &stats.cells[1][0]);
        assert!(row.head.pass_k_3.is_some());
        assert_eq!(row.head.passed, Passed::NoThreshold);
        info.thresholds.min_success = Some(0.4);
        assert_eq!(
            summary_row(&info, 1, 0, &stats.cells[1][0]).head.passed,
            Passed::Yes
        );
        assert_eq!(
            summary_row(&info, 0, 0, &stats.cells[0][0]).head.passed,
            Passed::No
        );
        let mut two = CellStats::new(1);
        for success in [true, true] {
            two.add(&crate::metrics::TrialOutcome {
                model: 0,
                scenario: 0,
                trial: 0,
                attempts: vec![crate::metrics::AttemptOutcome {
                    attempt: 1,
                    success,
                    ..Default::default()
                }],
                task: None,
            });
        }
        // pass^3 of 2 trials is undefined, not 0.
        assert_eq!(summary_row(&info, 0, 0, &two).head.pass_k_3, None);
    }

    #[test]
    fn a_cells_cost_prices_cache_reads_and_writes_at_their_own_rates() {
        let (mut info, _) = ranked_run(2);
        info.models[0].prices = Some(crate::call::Prices {
            input_per_mtok: 2.0,
            output_per_mtok: 8.0,
            cached_input_per_mtok: Some(0.5),
            cache_write_per_mtok: None,
        });
        let mut cell = CellStats::new(1);
        cell.add(&crate::metrics::TrialOutcome {
            model: 0,
            scenario: 0,
            trial: 0,
            attempts: vec![crate::metrics::AttemptOutcome {
                attempt: 1,
                success: true,
                usage: crate::call::Usage {
                    input_tokens: 1_000_000,
                    output_tokens: 0,
                    reasoning_tokens: 0,
                    cached_tokens: 600_000,
                    cache_write_tokens: 300_000,
                },
                ..Default::default()
            }],
            task: None,
        });
        // 100k plain at 2, 600k read at 0.5, 300k written at 2.5: the
        // cell once priced all 1M at the input price (2.0).
        assert_eq!(cost(&info, 0, &cell), 0.2 + 0.3 + 0.75);
        let row = summary_row(&info, 0, 0, &cell);
        assert_eq!(row.tail.cached_input_share, Some(0.6));
    }

    #[test]
    fn summary_columns_keep_their_contract() {
        let header = SummaryRow::header().unwrap();
        let failures: Vec<&str> = header
            .iter()
            .filter(|c| c.starts_with("failures_"))
            .collect();
        assert_eq!(
            failures,
            [
                "failures_parse",
                "failures_unknown_tool",
                "failures_validation",
                "failures_runtime",
                "failures_timeout",
                "failures_sandbox",
                "failures_unexpected_call",
                "failures_missing_call",
                "failures_wrong_call",
                "failures_truncated",
            ]
        );
        let passed = header.iter().position(|c| c == "passed").unwrap();
        assert_eq!(&header[passed + 1], "failures_parse");
        assert_eq!(&header[passed + 11], "transport_errors");
        // A record has as many fields as the header.
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        let row = SummaryRow {
            failures: vec![0; failures.len()],
            ..SummaryRow::default()
        };
        writer.serialize(&row).unwrap();
        let bytes = writer.into_inner().unwrap();
        let fields = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(bytes.as_slice())
            .records()
            .next()
            .unwrap()
            .unwrap()
            .len();
        assert_eq!(fields, header.len());
    }
}
