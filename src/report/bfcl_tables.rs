//! BFCL's own score tables of a run (`report bfcl`): `data_overall.csv`,
//! `data_non_live.csv`, `data_live.csv`, `data_multi_turn.csv`,
//! `data_agentic.csv` and `data_format_sensitivity.csv`, with the columns,
//! weights, rounding, ranking and "N/A" rules of BFCL's
//! `generate_leaderboard_csv` (`bfcl_eval/eval_checker/eval_runner_helper.py`),
//! so that a toolgauge run can stand in a BFCL leaderboard row.
//!
//! A BFCL scenario is one tagged `bfcl`, its category the next tag, as
//! `import bfcl` writes them. A category's accuracy is its trials passed
//! over its trials measured (a trial lost to infrastructure is left out,
//! and counted apart); a category the run lacks is 0 over its entries in
//! BFCL's dataset and shown "N/A", as BFCL's `get_category_score` does.
//! The latency columns are over the model's requests (seconds, those
//! that took time, as BFCL skips zeros); the cost is what the model's
//! `prices` make of its tokens, "N/A" without prices.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::RunInfo;
use crate::metrics::TrialOutcome;

/// BFCL v4's scored categories and their entries in BFCL's dataset
/// (`BFCL_v4_<category>.json`; web search's two share one file, memory's
/// three backends one).
pub const CATEGORIES: [(&str, u64); 22] = [
    ("simple_python", 400),
    ("simple_java", 100),
    ("simple_javascript", 50),
    ("multiple", 200),
    ("parallel", 200),
    ("parallel_multiple", 200),
    ("irrelevance", 240),
    ("live_simple", 258),
    ("live_multiple", 1053),
    ("live_parallel", 16),
    ("live_parallel_multiple", 24),
    ("live_irrelevance", 884),
    ("live_relevance", 16),
    ("multi_turn_base", 200),
    ("multi_turn_miss_func", 200),
    ("multi_turn_miss_param", 200),
    ("multi_turn_long_context", 200),
    ("web_search_base", 100),
    ("web_search_no_snippet", 100),
    ("memory_kv", 155),
    ("memory_vector", 155),
    ("memory_rec_sum", 155),
];

/// The weights of BFCL's overall accuracy: non-live, live, irrelevance,
/// multi-turn, agentic (`calculate_percentage_weighted_accuracy`).
const OVERALL_WEIGHTS: [f64; 5] = [10.0, 10.0, 10.0, 30.0, 40.0];

/// Passed and measured trials of one category.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    correct: u64,
    total: u64,
}

/// What one model did on the run's BFCL scenarios.
#[derive(Debug, Clone, Default)]
pub struct ModelTally {
    pub model: String,
    categories: BTreeMap<&'static str, Tally>,
    /// Trials lost to infrastructure: in no category's accuracy.
    pub lost: u64,
    /// Each request's time, in seconds (zeros left out).
    latencies: Vec<f64>,
    /// The tokens' cost, where the model has prices.
    cost: Option<f64>,
}

/// The BFCL trials of one or more runs, model by model (a model of the
/// same name in two runs is one model: BFCL's categories are often run
/// apart).
#[derive(Debug, Clone, Default)]
pub struct BfclTally {
    pub models: Vec<ModelTally>,
    /// Whether a run had a BFCL scenario.
    any: bool,
}

/// How one run's trials are counted: each scenario's BFCL category (if
/// it is a BFCL scenario), and each of its models' place in the tally.
#[derive(Debug, Clone)]
pub struct RunMap {
    category_of: Vec<Option<&'static str>>,
    model_at: Vec<usize>,
    prices: Vec<Option<crate::call::Prices>>,
}

impl BfclTally {
    pub fn new() -> BfclTally {
        BfclTally::default()
    }

    /// Take in a run's models and scenarios: how its trials are counted.
    pub fn run(&mut self, info: &RunInfo) -> RunMap {
        let category_of: Vec<Option<&'static str>> = info
            .scenarios
            .iter()
            .map(|s| {
                let mut tags = s.tags.iter();
                if !tags.any(|t| t == "bfcl") {
                    return None;
                }
                let tag = tags.next()?;
                CATEGORIES.iter().map(|(c, _)| *c).find(|c| c == tag)
            })
            .collect();
        self.any |= category_of.iter().any(Option::is_some);
        let model_at = info
            .models
            .iter()
            .map(
                |m| match self.models.iter().position(|t| t.model == m.name) {
                    Some(at) => at,
                    None => {
                        self.models.push(ModelTally {
                            model: m.name.clone(),
                            ..ModelTally::default()
                        });
                        self.models.len() - 1
                    }
                },
            )
            .collect();
        RunMap {
            category_of,
            model_at,
            prices: info.models.iter().map(|m| m.prices).collect(),
        }
    }

    /// Count one finished trial of the run `run` maps.
    pub fn add(&mut self, run: &RunMap, trial: &TrialOutcome) {
        let Some(category) = run.category_of[trial.scenario] else {
            return;
        };
        let prices = run.prices[trial.model];
        let tally = &mut self.models[run.model_at[trial.model]];
        for attempt in &trial.attempts {
            let seconds = attempt.time.model.as_secs_f64();
            if seconds > 0.0 {
                tally.latencies.push(seconds);
            }
            if let Some(prices) = prices {
                *tally.cost.get_or_insert(0.0) += prices.cost(attempt.usage);
            }
        }
        if trial.lost().is_some() {
            tally.lost += 1;
            return;
        }
        let counted = tally.categories.entry(category).or_default();
        counted.total += 1;
        counted.correct += u64::from(trial.success());
    }

    /// Whether a run had a BFCL scenario at all.
    pub fn has_bfcl(&self) -> bool {
        self.any
    }

    /// Each model's accuracy and count per category it ran, as BFCL's
    /// score files head them (`{"accuracy", "total_count"}`).
    pub fn scores(&self) -> Value {
        let models = self.models.iter().map(|m| {
            let categories: serde_json::Map<String, Value> = m
                .categories
                .iter()
                .filter(|(_, t)| t.total > 0)
                .map(|(c, t)| {
                    let accuracy = t.correct as f64 / t.total as f64;
                    (
                        (*c).to_owned(),
                        json!({"accuracy": accuracy, "total_count": t.total}),
                    )
                })
                .collect();
            json!({"model": m.model, "categories": categories, "lost": m.lost})
        });
        Value::Array(models.collect())
    }

    /// The six tables, by file name, as BFCL writes them.
    pub fn tables(&self) -> Vec<(&'static str, String)> {
        let rows: Vec<Rows> = self.models.iter().map(Rows::of).collect();
        let table = |pick: fn(&Rows) -> &Vec<Cell>, header: Vec<String>, sort: usize| {
            write_table(&header, rows.iter().map(pick).cloned().collect(), sort)
        };
        vec![
            (
                "data_overall.csv",
                table(|r| &r.overall, headers::overall(), 1),
            ),
            (
                "data_non_live.csv",
                table(|r| &r.non_live, headers::non_live(), 2),
            ),
            ("data_live.csv", table(|r| &r.live, headers::live(), 2)),
            (
                "data_multi_turn.csv",
                table(|r| &r.multi_turn, headers::multi_turn(), 2),
            ),
            (
                "data_agentic.csv",
                table(|r| &r.agentic, headers::agentic(), 2),
            ),
            (
                "data_format_sensitivity.csv",
                table(|r| &r.format, headers::format_sensitivity(), 2),
            ),
        ]
    }
}

/// An accuracy as BFCL carries it: its value, the entries it is over,
/// and whether it is shown (else "N/A").
#[derive(Debug, Clone, Copy)]
struct Score {
    accuracy: f64,
    count: u64,
    shown: bool,
}

/// `calculate_weighted_accuracy`: by entries.
fn weighted(scores: &[Score], na_if_missing: bool) -> Score {
    let count: u64 = scores.iter().map(|s| s.count).sum();
    let sum: f64 = scores.iter().map(|s| s.accuracy * s.count as f64).sum();
    Score {
        accuracy: sum / count as f64,
        count,
        shown: !(na_if_missing && scores.iter().any(|s| !s.shown)),
    }
}

/// `calculate_unweighted_accuracy`: each the same.
fn unweighted(scores: &[Score], na_if_missing: bool) -> Score {
    let sum: f64 = scores.iter().map(|s| s.accuracy).sum();
    Score {
        accuracy: sum / scores.len() as f64,
        count: scores.iter().map(|s| s.count).sum(),
        shown: !(na_if_missing && scores.iter().any(|s| !s.shown)),
    }
}

/// `calculate_percentage_weighted_accuracy`, never "N/A".
fn percentage_weighted(scores: &[Score], weights: &[f64]) -> Score {
    let total: f64 = weights.iter().sum();
    Score {
        accuracy: scores
            .iter()
            .zip(weights)
            .map(|(s, w)| s.accuracy * w / total)
            .sum(),
        count: scores.iter().map(|s| s.count).sum(),
        shown: true,
    }
}

/// One cell of a table: an accuracy (a percentage, or "N/A") or text.
#[derive(Debug, Clone)]
enum Cell {
    Acc(Score),
    Text(String),
}

impl Cell {
    fn shown(&self) -> String {
        match self {
            Cell::Acc(s) if s.shown => format!("{:.2}%", s.accuracy * 100.0),
            Cell::Acc(_) => "N/A".to_owned(),
            Cell::Text(text) => text.clone(),
        }
    }

    /// BFCL's sort key: the value, or -1 for "N/A" (last).
    fn sort_key(&self) -> f64 {
        match self {
            Cell::Acc(s) if s.shown => s.accuracy,
            _ => -1.0,
        }
    }
}

fn na() -> Cell {
    Cell::Text("N/A".to_owned())
}

/// One model's row of each table (the rank left to fill).
struct Rows {
    overall: Vec<Cell>,
    non_live: Vec<Cell>,
    live: Vec<Cell>,
    multi_turn: Vec<Cell>,
    agentic: Vec<Cell>,
    format: Vec<Cell>,
}

/// BFCL's summaries of one model's categories.
struct Summary {
    simple: Score,
    summary_non_live: Score,
    overall_non_live: Score,
    summary_live: Score,
    overall_live: Score,
    overall_multi: Score,
    web: Score,
    memory: Score,
    overall_agentic: Score,
    irrelevance: Score,
    overall: Score,
}

impl Summary {
    fn of(model: &ModelTally) -> Summary {
        let s = |name: &str| model.category(name);
        let simple = unweighted(
            &[s("simple_python"), s("simple_java"), s("simple_javascript")],
            true,
        );
        let non_live = [simple, s("multiple"), s("parallel"), s("parallel_multiple")];
        let live = [
            s("live_simple"),
            s("live_multiple"),
            s("live_parallel"),
            s("live_parallel_multiple"),
        ];
        let multi = [
            s("multi_turn_base"),
            s("multi_turn_miss_func"),
            s("multi_turn_miss_param"),
            s("multi_turn_long_context"),
        ];
        let web = unweighted(&[s("web_search_base"), s("web_search_no_snippet")], true);
        let memory = unweighted(
            &[s("memory_kv"), s("memory_vector"), s("memory_rec_sum")],
            true,
        );
        let overall_non_live = unweighted(&non_live, false);
        let overall_live = weighted(&live, false);
        let overall_multi = unweighted(&multi, false);
        let overall_agentic = unweighted(&[web, memory], false);
        let irrelevance = unweighted(&[s("irrelevance"), s("live_irrelevance")], true);
        Summary {
            simple,
            summary_non_live: unweighted(&non_live, true),
            overall_non_live,
            summary_live: weighted(&live, true),
            overall_live,
            overall_multi,
            web,
            memory,
            overall_agentic,
            irrelevance,
            overall: percentage_weighted(
                &[
                    overall_non_live,
                    overall_live,
                    irrelevance,
                    overall_multi,
                    overall_agentic,
                ],
                &OVERALL_WEIGHTS,
            ),
        }
    }
}

impl Rows {
    fn of(model: &ModelTally) -> Rows {
        let sum = Summary::of(model);
        let c = |name: &str| Cell::Acc(model.category(name));
        let name = || Cell::Text(model.model.clone());
        Rows {
            overall: overall_row(model, &sum),
            non_live: vec![
                na(),
                name(),
                Cell::Acc(sum.overall_non_live),
                Cell::Acc(sum.summary_non_live),
                Cell::Acc(sum.simple),
                c("simple_python"),
                c("simple_java"),
                c("simple_javascript"),
                c("multiple"),
                c("parallel"),
                c("parallel_multiple"),
                c("irrelevance"),
            ],
            live: vec![
                na(),
                name(),
                Cell::Acc(sum.overall_live),
                Cell::Acc(sum.summary_live),
                c("live_simple"),
                c("live_multiple"),
                c("live_parallel"),
                c("live_parallel_multiple"),
                c("live_irrelevance"),
                c("live_relevance"),
            ],
            multi_turn: vec![
                na(),
                name(),
                Cell::Acc(sum.overall_multi),
                c("multi_turn_base"),
                c("multi_turn_miss_func"),
                c("multi_turn_miss_param"),
                c("multi_turn_long_context"),
            ],
            agentic: vec![
                na(),
                name(),
                Cell::Acc(sum.overall_agentic),
                Cell::Acc(sum.web),
                c("web_search_base"),
                c("web_search_no_snippet"),
                Cell::Acc(sum.memory),
                c("memory_kv"),
                c("memory_vector"),
                c("memory_rec_sum"),
            ],
            // Prompting models only, which toolgauge does not import.
            format: [na(), name()]
                .into_iter()
                .chain((0..2 + headers::format_configs().len()).map(|_| na()))
                .collect(),
        }
    }
}

/// data_overall.csv's row of one model.
fn overall_row(model: &ModelTally, sum: &Summary) -> Vec<Cell> {
    let c = |name: &str| Cell::Acc(model.category(name));
    let mut row = vec![
        na(),
        Cell::Acc(sum.overall),
        Cell::Text(model.model.clone()),
        na(),
    ];
    row.extend(model.cost_latency());
    row.extend([
        Cell::Acc(sum.summary_non_live),
        Cell::Acc(sum.simple),
        c("multiple"),
        c("parallel"),
        c("parallel_multiple"),
        Cell::Acc(sum.overall_live),
        c("live_simple"),
        c("live_multiple"),
        c("live_parallel"),
        c("live_parallel_multiple"),
        Cell::Acc(sum.overall_multi),
        c("multi_turn_base"),
        c("multi_turn_miss_func"),
        c("multi_turn_miss_param"),
        c("multi_turn_long_context"),
        Cell::Acc(sum.web),
        c("web_search_base"),
        c("web_search_no_snippet"),
        Cell::Acc(sum.memory),
        c("memory_kv"),
        c("memory_vector"),
        c("memory_rec_sum"),
        c("live_relevance"),
        Cell::Acc(sum.irrelevance),
    ]);
    // Format sensitivity (prompting models only); the organisation and
    // licence, which toolgauge does not know.
    row.extend([na(), na(), na(), na()]);
    row
}

impl ModelTally {
    /// `get_category_score`: the run's, or 0 over BFCL's entries, "N/A".
    fn category(&self, name: &str) -> Score {
        match self.categories.get(name) {
            Some(t) if t.total > 0 => Score {
                accuracy: t.correct as f64 / t.total as f64,
                count: t.total,
                shown: true,
            },
            _ => Score {
                accuracy: 0.0,
                count: CATEGORIES
                    .iter()
                    .find(|(c, _)| *c == name)
                    .map_or(0, |(_, n)| *n),
                shown: false,
            },
        }
    }

    /// Cost, then latency mean, standard deviation and 95th percentile,
    /// rounded to 2 places as BFCL rounds them.
    fn cost_latency(&self) -> [Cell; 4] {
        let number = |x: f64| Cell::Text(python_float(round2(x)));
        let cost = self.cost.map_or_else(na, number);
        let samples = &self.latencies;
        if samples.len() < 2 {
            // BFCL's standard deviation needs two.
            let mean = samples.first().map_or_else(na, |x| number(*x));
            return [cost, mean, na(), na()];
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        [
            cost,
            number(mean),
            number(variance.sqrt()),
            number(percentile(samples, 95.0)),
        ]
    }
}

/// numpy's default percentile: linear between the two nearest ranks.
fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = q / 100.0 * (sorted.len() - 1) as f64;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
}

/// Python's `round(x, 2)`.
fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// A float as Python's `str` writes it: `2.0`, `1.99`.
fn python_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// `write_score_csv_file`: rows sorted by column `sort` (highest first,
/// "N/A" last, ties in model order), ranked from 1, the header first, no
/// newline after the last row.
fn write_table(header: &[String], mut rows: Vec<Vec<Cell>>, sort: usize) -> String {
    rows.sort_by(|a, b| b[sort].sort_key().total_cmp(&a[sort].sort_key()));
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(header).expect("writing to memory");
    for (i, row) in rows.iter().enumerate() {
        let mut cells: Vec<String> = row.iter().map(Cell::shown).collect();
        cells[0] = (i + 1).to_string();
        out.write_record(&cells).expect("writing to memory");
    }
    let mut text = String::from_utf8(out.into_inner().expect("in memory")).expect("UTF-8 cells");
    text.truncate(text.trim_end_matches('\n').len());
    text
}

/// BFCL's column headers (`bfcl_eval/constants/column_headers.py`).
mod headers {
    fn owned(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    pub(super) fn non_live() -> Vec<String> {
        owned(&[
            "Rank",
            "Model",
            "Non-Live Overall Acc",
            "AST Summary",
            "Simple AST",
            "Python Simple AST",
            "Java Simple AST",
            "JavaScript Simple AST",
            "Multiple AST",
            "Parallel AST",
            "Parallel Multiple AST",
            "Irrelevance Detection",
        ])
    }

    pub(super) fn live() -> Vec<String> {
        owned(&[
            "Rank",
            "Model",
            "Live Overall Acc",
            "AST Summary",
            "Python Simple AST",
            "Python Multiple AST",
            "Python Parallel AST",
            "Python Parallel Multiple AST",
            "Irrelevance Detection",
            "Relevance Detection",
        ])
    }

    pub(super) fn multi_turn() -> Vec<String> {
        owned(&[
            "Rank",
            "Model",
            "Multi Turn Overall Acc",
            "Base",
            "Miss Func",
            "Miss Param",
            "Long Context",
        ])
    }

    pub(super) fn agentic() -> Vec<String> {
        owned(&[
            "Rank",
            "Model",
            "Agentic Overall Acc",
            "Web Search Summary",
            "Web Search Base",
            "Web Search No Snippet",
            "Memory Summary",
            "Memory KV",
            "Memory Vector",
            "Memory Recursive Summarization",
        ])
    }

    /// `get_all_format_sensitivity_configs`: every return format, with
    /// and without the tool-call tag, each function-doc format; then the
    /// two prompt variations.
    pub(super) fn format_configs() -> Vec<String> {
        let mut configs = Vec::new();
        for ret in ["python", "json", "verbose_xml", "concise_xml"] {
            for tag in ["True", "False"] {
                for doc in ["python", "xml", "json"] {
                    configs.push(format!(
                        "ret_fmt={ret}&tool_call_tag={tag}&func_doc_fmt={doc}&prompt_fmt=plaintext&style=classic"
                    ));
                }
            }
        }
        configs.push("ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=markdown&style=classic".to_owned());
        configs.push("ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=experimental".to_owned());
        configs
    }

    pub(super) fn format_sensitivity() -> Vec<String> {
        let mut header = owned(&[
            "Rank",
            "Model",
            "Format Sensitivity Max Delta",
            "Format Sensitivity Standard Deviation",
        ]);
        header.extend(format_configs().into_iter().map(|c| format!("Config {c}")));
        header
    }

    pub(super) fn overall() -> Vec<String> {
        owned(&[
            "Rank",
            "Overall Acc",
            "Model",
            "Model Link",
            "Total Cost ($)",
            "Latency Mean (s)",
            "Latency Standard Deviation (s)",
            "Latency 95th Percentile (s)",
            "Non-Live AST Acc",
            "Non-Live Simple AST",
            "Non-Live Multiple AST",
            "Non-Live Parallel AST",
            "Non-Live Parallel Multiple AST",
            "Live Acc",
            "Live Simple AST",
            "Live Multiple AST",
            "Live Parallel AST",
            "Live Parallel Multiple AST",
            "Multi Turn Acc",
            "Multi Turn Base",
            "Multi Turn Miss Func",
            "Multi Turn Miss Param",
            "Multi Turn Long Context",
            "Web Search Acc",
            "Web Search Base",
            "Web Search No Snippet",
            "Memory Acc",
            "Memory KV",
            "Memory Vector",
            "Memory Recursive Summarization",
            "Relevance Detection",
            "Irrelevance Detection",
            "Format Sensitivity Max Delta",
            "Format Sensitivity Standard Deviation",
            "Organization",
            "License",
        ])
    }
}
