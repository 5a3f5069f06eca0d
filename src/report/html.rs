//! report.html: one self-contained file a person opens from disk. Top to
//! bottom: the verdict (models ranked with intervals, the significant
//! paired differences), the charts, the per-scenario table (sortable,
//! filtered by model and tag, worst first), and for each cell a few failed
//! trials with their conversation as it happened (from session.jsonl: the
//! calls, the errors the model got back, what it did next). Styles, SVG
//! and the little script that sorts and filters are inline; nothing is
//! loaded from the network.

use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;

use super::charts::charts;
use super::markdown::points;
use super::session::{index, job_at_start};
use super::summary::{ComparisonRow, comparison_rows, summary_rows};
use super::{FinishedTrial, Reporter, RunInfo};
use crate::metrics::Aggregate;

/// Failed trials shown per model x scenario, and in all: the report's
/// size stays bounded whatever the run's.
const FAILED_PER_CELL: usize = 3;
const FAILED_IN_ALL: usize = 300;
/// More significant pairs than this are folded away (66 models make
/// over 2,000 pairs); comparisons.csv has them all.
const FOLDED_PAIRS: usize = 10;

/// One entry of a trial's log, as shown.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    attempt: u32,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    arguments: serde_json::Value,
    #[serde(default)]
    content: String,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    error_kind: Option<String>,
    /// A `model_reply`: what the model said and why it stopped, or why
    /// its reply could not be read.
    #[serde(default)]
    text: String,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    error: Option<String>,
    /// A `user_message`: who spoke (`scenario`, `simulated_user`) and the
    /// tokens a live simulated user took; a `tool_call` or `tool_result`
    /// of the user's own tools: `simulated_user`.
    #[serde(default)]
    who: String,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// Failed trials by (model, scenario): the trial and its log entries.
type Failed = BTreeMap<(usize, usize), Vec<(u32, Vec<Entry>)>>;

/// Writes report.html when the run finishes.
pub struct HtmlReport {
    out: PathBuf,
    /// Failed trials kept, by (model, scenario): their log entries.
    failed: Failed,
    kept: usize,
    /// Failed trials per (model, scenario), shown or not.
    failures: BTreeMap<(usize, usize), u64>,
}

impl HtmlReport {
    /// The report goes to `out/report.html`; failed trials' conversations
    /// come from the trials' events, or from `out/session.jsonl`.
    pub fn new(out: &Path) -> Self {
        HtmlReport {
            out: out.to_owned(),
            failed: BTreeMap::new(),
            kept: 0,
            failures: BTreeMap::new(),
        }
    }

    /// Fill in the conversations the events did not carry (a report made
    /// from a run folder) from its session.jsonl.
    fn read_log(&mut self, info: &RunInfo) -> io::Result<()> {
        let missing = self.failed.values().flatten().any(|(_, e)| e.is_empty());
        let path = self.out.join("session.jsonl");
        if !missing || !path.is_file() {
            return Ok(());
        }
        let models = index(info.models.iter().map(|m| &m.name));
        let scenarios = index(info.scenarios.iter().map(|s| &s.name));
        let file = crate::source::open_run_file(&path)?;
        // Large reads: the log of a large run is most of what is read.
        for line in io::BufReader::with_capacity(1 << 20, file).split(b'\n') {
            let line = line?;
            // Only the kept trials' entries are read whole.
            let Some((m, s, trial)) = job_at_start(&line, &models, &scenarios) else {
                continue;
            };
            if let Some(trials) = self.failed.get_mut(&(m, s))
                && let Some((_, entries)) = trials.iter_mut().find(|(t, _)| *t == trial)
                && let Ok(entry) = serde_json::from_slice::<Entry>(&line)
            {
                entries.push(entry);
            }
        }
        Ok(())
    }
}

impl Reporter for HtmlReport {
    fn trial_finished(&mut self, _info: &RunInfo, trial: FinishedTrial<'_>) -> io::Result<()> {
        let outcome = trial.outcome;
        if outcome.success() {
            return Ok(());
        }
        *self
            .failures
            .entry((outcome.model, outcome.scenario))
            .or_default() += 1;
        if self.kept >= FAILED_IN_ALL {
            return Ok(());
        }
        let cell = self
            .failed
            .entry((outcome.model, outcome.scenario))
            .or_default();
        if cell.len() < FAILED_PER_CELL {
            let entries = trial
                .session
                .split(|b| *b == b'\n')
                .filter_map(|line| serde_json::from_slice(line).ok())
                .collect();
            cell.push((outcome.trial, entries));
            self.kept += 1;
        }
        Ok(())
    }

    fn run_finished(&mut self, info: &RunInfo, stats: &Aggregate) -> io::Result<()> {
        self.read_log(info)?;
        let page = render(info, stats, &self.failed, &self.failures);
        crate::whole_file::write(&self.out.join("report.html"), page.into_string())
    }
}

const STYLE: &str = r#"
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { cursor: pointer; background: #f6f6f6; position: sticky; top: 0; }
td:nth-child(-n+3), th:nth-child(-n+3) { text-align: left; }
tr.below td { background: #fff3f0; }
.chart { margin: 12px 0; } .note { color: #555; font-size: 13px; }
.filters { margin: 8px 0; display: flex; gap: 12px; }
details { margin: 6px 0; } summary { cursor: pointer; }
.turn { margin: 4px 0 4px 16px; font-size: 13px; }
.call { font-family: monospace; color: #0b4f8a; white-space: pre-wrap; }
.result { font-family: monospace; white-space: pre-wrap; margin-left: 16px; }
.error { color: #a33; }
.call.user, .result.user { color: #6a3d9a; border-left: 3px solid #c9b3e0; padding-left: 6px; }
.said { white-space: pre-wrap; margin-left: 16px; color: #333; }
.banner { padding: 10px 14px; border-radius: 4px; font-weight: 600; margin: 12px 0; }
.banner.pass { background: #e7f6e7; color: #1d5e1d; }
.banner.fail { background: #fdecea; color: #8a1f11; }
"#;

const SCRIPT: &str = r#"
for (const th of document.querySelectorAll('#cells th')) {
  th.addEventListener('click', () => {
    const body = document.querySelector('#cells tbody');
    const i = th.cellIndex;
    const up = th.dataset.dir !== 'asc';
    th.dataset.dir = up ? 'asc' : 'desc';
    const key = (row) => row.cells[i].dataset.v ?? row.cells[i].textContent;
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b);
      const nx = parseFloat(x), ny = parseFloat(y);
      const c = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
      return up ? c : -c;
    });
    for (const row of rows) body.appendChild(row);
  });
}
function filter() {
  const model = document.querySelector('#model').value;
  const tag = document.querySelector('#tag').value;
  for (const row of document.querySelectorAll('#cells tbody tr')) {
    const show = (!model || row.dataset.model === model) &&
      (!tag || row.dataset.tags.split(' ').includes(tag));
    row.style.display = show ? '' : 'none';
  }
}
document.querySelector('#model').addEventListener('change', filter);
document.querySelector('#tag').addEventListener('change', filter);
"#;

fn pair_list(significant: &[ComparisonRow]) -> Markup {
    html! {
        ul {
            @for c in significant {
                li {
                    (c.model_a) " vs " (c.model_b) ": "
                    (points(c.difference))
                    " (" (super::p_text(c.p_value)) ", " (c.only_a) " trials only "
                    (c.model_a) " got right, " (c.only_b) " only " (c.model_b) ")"
                }
            }
        }
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{:.1}%", 100.0 * x))
}

fn render(
    info: &RunInfo,
    stats: &Aggregate,
    failed: &Failed,
    failures: &BTreeMap<(usize, usize), u64>,
) -> Markup {
    let charts = charts(info, stats);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "toolgauge run" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "toolgauge run" }
                p class="note" {
                    (info.models.len()) " model(s) x " (info.scenarios.len()) " scenario(s) x "
                    (info.trials) " trial(s), seed " (info.seed) ", feedback " (info.feedback)
                    ", clock " (info.clock) "."
                }
                (banner(info, stats))
                (verdict(info, stats, &charts))
                (scenario_table(info, stats))
                (super::recovery::html(&super::summary::correction_rows(info, stats)))
                (super::streamed::html(&super::summary::streamed_cells(&summary_rows(info, stats))))
                (super::scores::html(info, stats))
                (failed_trials(info, failed, failures))
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}

/// Lost trials across the run.
fn lost_trials(stats: &Aggregate) -> u64 {
    stats.cells.iter().flatten().map(|c| c.lost_trials()).sum()
}

/// No success threshold of any kind: a pass then says only that every
/// cell was measured, and the banner says so.
fn no_threshold(info: &RunInfo) -> bool {
    info.thresholds.min_success.is_none()
        && info.thresholds.min_pass_k.is_none()
        && info.scenarios.iter().all(|s| s.min_success.is_none())
}

/// PASSED or FAILED, and the checks that did not hold.
fn banner(info: &RunInfo, stats: &Aggregate) -> Markup {
    let violations = super::violations(info, stats);
    let lost = lost_trials(stats);
    html! {
    @if violations.is_empty() {
        div class="banner pass" {
            @if no_threshold(info) {
                "PASSED: no threshold set (--min-success, --min-pass-k or a scenario's min_success): every cell was measured"
            } @else { "PASSED: every check held" }
            @if lost > 0 { " (" (lost) " lost trial(s) allowed by --max-lost)" } }
    } @else {
        div class="banner fail" {
            "FAILED: " (violations.len()) " check(s) did not hold"
            ul { @for v in &violations { li { (v.model) " / " (v.scenario) ": " (v.message) } } }
        }
    }
    }
}

/// The verdict chart, the significant pairs and the other charts.
fn verdict(info: &RunInfo, stats: &Aggregate, charts: &[super::charts::Chart]) -> Markup {
    let comparisons = comparison_rows(info, stats);
    let pairs = comparisons.len();
    let significant: Vec<_> = comparisons.into_iter().filter(|c| c.significant).collect();
    let lost = lost_trials(stats);
    html! {
    h2 { "Verdict" }
    @if lost > 0 {
        p class="banner fail" {
            (lost) " trial(s) lost to infrastructure, counted in no rate: "
            @for (m, cells) in stats.cells.iter().enumerate() {
                @let total = super::summary::total(cells);
                @if total.lost_trials() > 0 {
                    (info.models[m].name) ": " (total.lost_trials()) " of " (total.trials + total.lost_trials()) " (" (super::lost_causes(&total)) "). "
                }
            }
        }
    }
    @if let Some(verdict) = charts.iter().find(|c| c.name == "verdict") {
        div class="chart" { (PreEscaped(&verdict.svg)) }
    } @else {
        p { "Nothing was measured." }
    }
    @if significant.is_empty() {
        p class="note" { "No difference between models is significant (paired McNemar test, p < 0.05)." }
    } @else if significant.len() > FOLDED_PAIRS {
        details {
            summary { (significant.len()) " of " (pairs) " model pairs differ significantly (paired McNemar test, p < 0.05)" }
            (pair_list(&significant))
        }
    } @else {
        (pair_list(&significant))
    }
    // Each chart's title is its own (inside the SVG), once.
    @for chart in charts.iter().filter(|c| c.name != "verdict") {
        div class="chart" id=(chart.name) { (PreEscaped(&chart.svg)) }
    }
    }
}

/// Every model x scenario cell, worst first, with filters by model and tag.
fn scenario_table(info: &RunInfo, stats: &Aggregate) -> Markup {
    let mut rows = summary_rows(info, stats);
    // Worst first: the cells to look at.
    rows.sort_by(|a, b| {
        let key = |r: &super::summary::SummaryRow| r.head.final_success.unwrap_or(-1.0);
        key(a).total_cmp(&key(b))
    });
    let mut tags: Vec<&str> = info
        .scenarios
        .iter()
        .flat_map(|s| s.tags.iter().map(String::as_str))
        .collect();
    tags.sort_unstable();
    tags.dedup();
    let scenario_index = |name: &str| info.scenarios.iter().position(|s| s.name == name);
    html! {
    h2 { "By scenario (worst first)" }
    div class="filters" {
        label { "model " select id="model" { option value="" { "all" } @for m in &info.models { option value=(m.name) { (m.name) } } } }
        label { "tag " select id="tag" { option value="" { "all" } @for t in &tags { option value=(t) { (t) } } } }
    }
    table id="cells" {
        thead { tr {
            th { "model" } th { "scenario" } th { "tags" } th { "trials" }
            th { "final success" } th { "95% interval" } th { "@1" }
            th { "self-correction" } th { "progress" } th { "failures" } th { "passed" }
        } }
        tbody {
            @for r in &rows {
                @let s = scenario_index(&r.head.scenario);
                @let tags = s.map(|s| info.scenarios[s].tags.join(" ")).unwrap_or_default();
                tr class=(if r.head.passed.failed() { "below" } else { "" }) data-model=(r.head.model) data-tags=(tags) {
                    td { (r.head.model) } td { (r.head.scenario) } td { (tags) }
                    td { (r.head.trials) }
                    td data-v=(r.head.final_success.unwrap_or(-1.0)) { (percent(r.head.final_success)) }
                    td { (percent(r.head.wilson_low)) " - " (percent(r.head.wilson_high)) }
                    td data-v=(r.head.success_at_1.unwrap_or(-1.0)) { (percent(r.head.success_at_1)) }
                    td data-v=(r.head.self_correction_rate.unwrap_or(-1.0)) { (percent(r.head.self_correction_rate)) }
                    td data-v=(r.task.progress_rate.unwrap_or(-1.0)) { (percent(r.task.progress_rate)) }
                    td { (r.failures.iter().sum::<u64>()) }
                    td { (r.head.passed.as_str()) }
                }
            }
        }
    }
    }
}

/// The failed trials kept for the page, each as it happened.
fn failed_trials(
    info: &RunInfo,
    failed: &Failed,
    failures: &BTreeMap<(usize, usize), u64>,
) -> Markup {
    html! {
    h2 { "Failed trials, as they happened" }
    @if failed.is_empty() {
        p class="note" { "No trial failed." }
    }
    @for ((m, s), trials) in failed {
        h3 { (info.models[*m].name) " / " (info.scenarios[*s].name) }
        @let more = failures.get(&(*m, *s)).copied().unwrap_or(0).saturating_sub(trials.len() as u64);
        @if more > 0 {
            p class="note" { (more) " more failed trial(s), not shown: every call is in session.jsonl." }
        }
        // A task's turns, or a single-turn scenario's attempts.
        @let step = if info.scenarios[*s].task_milestones.is_some() { "turn " } else { "attempt " };
        @for (trial, entries) in trials {
            details {
                summary { "trial " (trial) ": " (entries.iter().filter(|e| e.kind == "tool_call" && e.who.is_empty()).count()) " call(s)" }
                @if entries.is_empty() {
                    p class="note" { "Nothing logged: the run had no session log (--no-session), or the trial was lost before a reply." }
                }
                (trial_entries(step, entries))
            }
        }
    }
    }
}

/// One trial's log: what the model said, the calls and their results.
fn trial_entries(step: &str, entries: &[Entry]) -> Markup {
    html! {
        @for entry in entries {
            @if entry.kind == "model_reply" {
                div class="turn" { (step) (entry.attempt) ": the model said" }
                @if let Some(error) = &entry.error {
                    div class="said error" { "[not a response] " (error) }
                } @else {
                    @if !entry.reasoning.is_empty() {
                        div class="said note" { "[reasoning] " (entry.reasoning) }
                    }
                    div class="said" {
                        @if entry.text.is_empty() { i { "(no text)" } } @else { (entry.text) }
                        " "
                        span class=(if entry.truncated { "note error" } else { "note" }) {
                            "[finish: " (entry.finish_reason.as_deref().unwrap_or("not given"))
                            @if entry.truncated { ", cut by the token limit" } "]"
                        }
                    }
                }
            } @else if entry.kind == "user_message" {
                div class="turn user" {
                    "the user said"
                    @if entry.who == "simulated_user" { " (simulated)" }
                }
                div class="said user" {
                    (entry.text)
                    @if let (Some(input), Some(output)) = (entry.input_tokens, entry.output_tokens) {
                        " " span class="note" { "[" (input) " input, " (output) " output tokens]" }
                    }
                }
            } @else if entry.kind == "tool_call" && entry.who == "simulated_user" {
                // The user's own tools (tau2's telecom): never the model's.
                div class="turn call user" { "the user called " (entry.tool) "(" (entry.arguments) ")" }
            } @else if entry.kind == "tool_call" {
                div class="turn call" { (step) (entry.attempt) ": " (entry.tool) "(" (entry.arguments) ")" }
            } @else {
                div class=(match (entry.is_error, entry.who == "simulated_user") {
                    (true, true) => "result user error",
                    (true, false) => "result error",
                    (false, true) => "result user",
                    (false, false) => "result",
                }) {
                    @if let Some(kind) = &entry.error_kind { "[" (kind) "] " }
                    (entry.content)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_runs::ranked_run;

    #[test]
    fn many_significant_pairs_are_folded_away() {
        let (info, stats) = ranked_run(12);
        let page = render(&info, &stats, &Failed::new(), &BTreeMap::new()).into_string();
        let folded = page
            .find("<details><summary>66 of 66 model pairs differ significantly")
            .expect("the pairs are folded");
        assert_eq!(page.matches("<li>m").count(), 66);
        assert!(page.find("<li>m").unwrap() > folded);

        let (info, stats) = ranked_run(3);
        let page = render(&info, &stats, &Failed::new(), &BTreeMap::new()).into_string();
        assert!(!page.contains("<details><summary>"), "{page}");
        assert_eq!(page.matches("<li>m").count(), 3);
    }

    #[test]
    fn a_pass_with_no_threshold_set_says_so() {
        let (mut info, stats) = ranked_run(3);
        info.thresholds.min_success = None;
        info.thresholds.min_pass_k = None;
        for scenario in &mut info.scenarios {
            scenario.min_success = None;
        }
        let page = render(&info, &stats, &Failed::new(), &BTreeMap::new()).into_string();
        assert!(page.contains("PASSED: no threshold set"), "{page}");
        info.thresholds.min_success = Some(0.0);
        let page = render(&info, &stats, &Failed::new(), &BTreeMap::new()).into_string();
        assert!(!page.contains("no threshold set"));
    }
}
