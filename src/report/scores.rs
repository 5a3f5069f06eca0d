//! Probes' scores in the reports (tau2's reward, say): scores.csv, one
//! row per measure of each model, per scenario and per tag of the scored
//! scenarios (tau2: a domain is a tag), and the "Rewards" table of
//! summary.md and report.html, per model and tag. The measures: the mean
//! reward (with the trials rewarded 1), each component's pass rate, why
//! conversations ended, how often a judging model's repeated verdicts
//! flipped and what it took, and over a tag's tasks pass^k as tau2
//! computes it (the mean of each task's unbiased estimate). Nothing is
//! written for a run no probe scored.

use maud::{Markup, html};
use serde::Serialize;

use super::{RunInfo, round};
use crate::markup::{Align::Left, Align::Right, Table};
use crate::metrics::{Aggregate, CellStats, ScoreStats, pass_hat_k};

/// scores.csv's row. `kind` says what `count`, `of` and `value` are:
/// `reward` (trials rewarded 1, trials whose reward is known, the mean
/// reward; named `unknown`: trials whose judge failed, trials scored,
/// the share),
/// `component` (trials the component `name` passed, trials it was scored
/// on, the share), `ended` (trials ended by `name`, trials scored, the
/// share), `judge` (`flipped`: trials whose repeated verdicts differ,
/// trials judged, the share; `input_tokens` and `output_tokens`: the sum,
/// trials judged, the mean; `cost_usd`: trials judged, again, the total),
/// `check` (trials the check `name` said yes on, trials it checked, the
/// share; trials scored less those it checked went unchecked), `pass_k`
/// (k is `name`; tasks, tasks, the mean pass^k).
#[derive(Debug, Default, Serialize)]
pub(super) struct ScoreRow {
    model: String,
    /// `scenario` or `tag`.
    scope: &'static str,
    group: String,
    kind: &'static str,
    name: String,
    count: u64,
    of: u64,
    value: f64,
}

/// The scored scenarios of one model grouped under a name: their scores
/// merged, and each one's (successes, trials) for pass^k.
struct Group {
    scope: &'static str,
    name: String,
    scores: ScoreStats,
    tasks: Vec<(u64, u64)>,
}

/// A cell's scores: its measured trials', and the parts judged of those
/// lost when their judge failed (their reward unknown); none if nothing
/// scored.
fn scores(cell: &CellStats) -> Option<ScoreStats> {
    let mut all = cell
        .task
        .as_ref()
        .map(|t| t.scores.clone())
        .unwrap_or_default();
    all.merge(&cell.lost_scores);
    (all.scored > 0).then_some(all)
}

/// Each model's groups: its scored scenarios, then each tag of them.
fn groups(info: &RunInfo, stats: &Aggregate, m: usize) -> Vec<Group> {
    let mut by_scenario = Vec::new();
    let mut by_tag: Vec<Group> = Vec::new();
    for (s, cell) in stats.cells[m].iter().enumerate() {
        let Some(scored) = scores(cell) else { continue };
        let scored = &scored;
        let task = (cell.successes(), cell.trials);
        by_scenario.push(Group {
            scope: "scenario",
            name: info.scenarios[s].name.clone(),
            scores: scored.clone(),
            tasks: vec![task],
        });
        for tag in &info.scenarios[s].tags {
            let at = match by_tag.iter().position(|g| &g.name == tag) {
                Some(at) => at,
                None => {
                    by_tag.push(Group {
                        scope: "tag",
                        name: tag.clone(),
                        scores: ScoreStats::default(),
                        tasks: Vec::new(),
                    });
                    by_tag.len() - 1
                }
            };
            by_tag[at].scores.merge(scored);
            by_tag[at].tasks.push(task);
        }
    }
    by_tag.sort_by(|a, b| a.name.cmp(&b.name));
    by_scenario.extend(by_tag);
    by_scenario
}

/// pass^k over a group's tasks at k = 1 up to the fewest trials any of
/// them had: tau2's mean of each task's C(c, k) / C(n, k).
pub(super) fn pass_k(tasks: &[(u64, u64)]) -> Vec<(u64, f64)> {
    let fewest = tasks.iter().map(|t| t.1).min().unwrap_or(0);
    (1..=fewest)
        .map(|k| {
            let sum: f64 = tasks.iter().map(|&(c, n)| pass_hat_k(c, n, k)).sum();
            (k, sum / tasks.len() as f64)
        })
        .collect()
}

pub(super) fn rows(info: &RunInfo, stats: &Aggregate) -> Vec<ScoreRow> {
    let mut rows = Vec::new();
    for (m, model) in info.models.iter().enumerate() {
        for group in groups(info, stats, m) {
            let tasks = group.tasks.len() as u64;
            let pass_ks = pass_k(&group.tasks)
                .into_iter()
                .map(|(k, value)| ("pass_k", k.to_string(), tasks, tasks, value));
            for (kind, name, count, of, value) in measures(&group.scores).into_iter().chain(pass_ks)
            {
                rows.push(ScoreRow {
                    model: model.name.clone(),
                    scope: group.scope,
                    group: group.name.clone(),
                    kind,
                    name,
                    count,
                    of,
                    value: round(value),
                });
            }
        }
    }
    rows
}

/// A group's measures but pass^k, as scores.csv's (kind, name, count, of,
/// value).
fn measures(s: &ScoreStats) -> Vec<(&'static str, String, u64, u64, f64)> {
    let share = |n: u64, of: u64| n as f64 / of.max(1) as f64;
    let mean = s.mean_reward().unwrap_or(0.0);
    let mut rows = vec![("reward", String::new(), s.rewarded, s.known(), mean)];
    if s.unknown > 0 {
        let unknown = share(s.unknown, s.scored);
        rows.push(("reward", "unknown".into(), s.unknown, s.scored, unknown));
    }
    for (name, &(passed, of)) in &s.components {
        rows.push(("component", name.clone(), passed, of, share(passed, of)));
    }
    for (name, &n) in &s.reasons {
        rows.push(("ended", name.clone(), n, s.scored, share(n, s.scored)));
    }
    for (name, &(yes, checked)) in &s.checks {
        rows.push(("check", name.clone(), yes, checked, share(yes, checked)));
    }
    if s.judged > 0 {
        let judged = s.judged;
        rows.push((
            "judge",
            "flipped".into(),
            s.flipped,
            judged,
            share(s.flipped, judged),
        ));
        for (name, tokens) in [
            ("input_tokens", s.judge_input_tokens),
            ("output_tokens", s.judge_output_tokens),
        ] {
            rows.push((
                "judge",
                name.into(),
                tokens,
                judged,
                tokens as f64 / judged as f64,
            ));
        }
        rows.push(("judge", "cost_usd".into(), judged, judged, s.judge_cost_usd));
    }
    rows
}

/// The Rewards table's columns.
const REWARD_COLUMNS: [&str; 9] = [
    "model",
    "tag",
    "tasks",
    "trials",
    "mean reward",
    "pass^1 / ^2 / ^3",
    "components passed",
    "ended",
    "judge flipped",
];

/// The Rewards table's rows: per model and tag of the scored scenarios.
fn reward_rows(info: &RunInfo, stats: &Aggregate) -> Vec<[String; 9]> {
    let mut rows = Vec::new();
    for (m, model) in info.models.iter().enumerate() {
        for group in groups(info, stats, m).iter().filter(|g| g.scope == "tag") {
            let s = &group.scores;
            let ks: Vec<String> = pass_k(&group.tasks)
                .iter()
                .take(3)
                .map(|(_, v)| format!("{:.1}%", v * 100.0))
                .collect();
            let components: Vec<String> = s
                .components
                .iter()
                .map(|(name, (passed, of))| format!("{name} {passed}/{of}"))
                .collect();
            let reasons: Vec<String> = s.reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
            rows.push([
                model.name.clone(),
                group.name.clone(),
                group.tasks.len().to_string(),
                s.known().to_string(),
                format!("{:.3}", s.mean_reward().unwrap_or(0.0)),
                ks.join(" / "),
                components.join(", "),
                reasons.join(", "),
                if s.judged > 0 {
                    format!("{}/{}", s.flipped, s.judged)
                } else {
                    "-".to_owned()
                },
            ]);
        }
    }
    rows
}

const REWARDS_NOTE: &str = "What the scenarios' probes scored (tau2: its evaluator's reward and parts), per tag; per scenario in scores.csv.";

/// summary.md's "Rewards" table; empty when no probe scored.
pub(super) fn markdown(info: &RunInfo, stats: &Aggregate) -> String {
    let rows = reward_rows(info, stats);
    if rows.is_empty() {
        return String::new();
    }
    let aligns = [Left, Left, Right, Right, Right, Right, Left, Left, Right];
    let columns: Vec<(&str, _)> = REWARD_COLUMNS.into_iter().zip(aligns).collect();
    let mut t = Table::new(&columns);
    for row in rows {
        t.row(row.to_vec());
    }
    format!("\n## Rewards\n\n{REWARDS_NOTE}\n\n{}", t.render())
}

/// report.html's Rewards section; nothing when no probe scored.
pub(super) fn html(info: &RunInfo, stats: &Aggregate) -> Markup {
    let rows = reward_rows(info, stats);
    html! {
        @if !rows.is_empty() {
            h2 { "Rewards" }
            p class="note" { (REWARDS_NOTE) }
            table {
                thead { tr { @for c in REWARD_COLUMNS { th { (c) } } } }
                tbody { @for row in &rows { tr { @for cell in row { td { (cell) } } } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_k_of_a_group_is_the_mean_of_its_tasks_estimates() {
        // tau2's example shape: one task 2 of 2, one 1 of 2.
        let curve = pass_k(&[(2, 2), (1, 2)]);
        assert_eq!(curve.len(), 2);
        assert!((curve[0].1 - 0.75).abs() < 1e-12);
        assert!((curve[1].1 - 0.5).abs() < 1e-12);
        assert!(pass_k(&[]).is_empty());
    }
}
