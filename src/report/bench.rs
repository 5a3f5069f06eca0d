//! The bench report: criterion's estimates (target/criterion/**/new/
//! estimates.json) beside the Node anchor's figures, as reports/bench.csv
//! and reports/bench.md.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::markup::{Align, Table};

/// One criterion benchmark, read from its folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub bench: String,
    /// Median time of one iteration, nanoseconds.
    pub median_ns: f64,
    /// Elements per iteration (calls, trials, instances), when declared.
    pub elements: Option<u64>,
}

/// One row of bench.csv.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub bench: String,
    pub median: f64,
    pub unit: &'static str,
    /// Elements per second, when the bench declares a throughput.
    pub throughput: Option<f64>,
    /// The Node anchor row this one is compared with.
    pub anchor: Option<String>,
    /// The anchor's nanoseconds per element.
    pub anchor_ns: Option<f64>,
    /// anchor time / our time: above 1, we are faster.
    pub ratio_to_anchor: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Estimates {
    median: Estimate,
}

#[derive(Debug, Deserialize)]
struct Estimate {
    point_estimate: f64,
}

#[derive(Debug, Deserialize)]
struct BenchmarkJson {
    full_id: String,
    throughput: Option<Throughput>,
}

#[derive(Debug, Deserialize)]
enum Throughput {
    Elements(u64),
    Bytes(u64),
    #[serde(other)]
    Other,
}

/// The Node anchor's output (`OUTFILE` of ../shared/anchors/bench.js).
#[derive(Debug, Deserialize)]
pub struct NodeResults {
    pub results: Vec<NodeRow>,
}

#[derive(Debug, Deserialize)]
pub struct NodeRow {
    pub name: String,
    pub median_ns_per_op: f64,
}

/// Which anchor row a bench compares with, by the anchor's code in
/// parentheses; our time is taken per element (per call).
const ANCHORS: [(&str, &str); 6] = [
    ("pipeline/full_3_calls_recorded", "(b2)"),
    ("pipeline_parse/anthropic_anchor_response", "(c)"),
    // Lookup + validate, errors worded for the invalid ones: Ajv's h2.
    ("validate/small_hot/toolgauge", "(h2)"),
    // Lookup + the decision alone, every call: Ajv's h1.
    ("validate/small_hot/toolgauge_is_valid", "(h1)"),
    ("validate/small_hot/raw_is_valid", "(h1)"),
    ("validate/small_hot_valid/toolgauge", "(h1)"),
];

/// Why the bench report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no criterion results (run `cargo bench` first)", .0.display())]
    NoResults(PathBuf),
}

fn at(path: &Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Every benchmark under a criterion output folder, sorted by name.
pub fn read_criterion(dir: &Path) -> Result<Vec<Measured>, BenchError> {
    let mut found = Vec::new();
    walk(dir, &mut found).map_err(at(dir))?;
    found.sort_by(|a, b| a.bench.cmp(&b.bench));
    if found.is_empty() {
        return Err(BenchError::NoResults(dir.to_owned()));
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<Measured>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        let new: PathBuf = path.join("new");
        if new.join("estimates.json").is_file() && new.join("benchmark.json").is_file() {
            let estimates: Estimates =
                serde_json::from_slice(&std::fs::read(new.join("estimates.json"))?)
                    .map_err(std::io::Error::other)?;
            let benchmark: BenchmarkJson =
                serde_json::from_slice(&std::fs::read(new.join("benchmark.json"))?)
                    .map_err(std::io::Error::other)?;
            found.push(Measured {
                bench: benchmark.full_id,
                median_ns: estimates.median.point_estimate,
                elements: match benchmark.throughput {
                    Some(Throughput::Elements(n) | Throughput::Bytes(n)) => Some(n),
                    _ => None,
                },
            });
        } else if path.file_name().is_some_and(|n| n != "report") {
            walk(&path, found)?;
        }
    }
    Ok(())
}

/// Join our measures with the anchor's.
pub fn rows(measured: &[Measured], node: Option<&NodeResults>) -> Vec<BenchRow> {
    measured
        .iter()
        .map(|m| {
            let per_element = m.elements.map(|n| m.median_ns / n.max(1) as f64);
            let anchor = ANCHORS
                .iter()
                .find(|(bench, _)| *bench == m.bench)
                .and_then(|(_, code)| node?.results.iter().find(|r| r.name.starts_with(code)));
            let ours = per_element.unwrap_or(m.median_ns);
            BenchRow {
                bench: m.bench.clone(),
                median: round(m.median_ns),
                unit: "ns/iter",
                throughput: per_element.map(|ns| round(1e9 / ns)),
                anchor: anchor.map(|a| a.name.clone()),
                anchor_ns: anchor.map(|a| a.median_ns_per_op),
                ratio_to_anchor: anchor.map(|a| round(a.median_ns_per_op / ours)),
            }
        })
        .collect()
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Write bench.csv and bench.md into `out`.
pub fn write(rows: &[BenchRow], machine: &str, out: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(out).map_err(at(out))?;
    let csv_path = out.join("bench.csv");
    let mut writer =
        csv::Writer::from_path(&csv_path).map_err(|e| at(&csv_path)(std::io::Error::other(e)))?;
    for row in rows {
        writer
            .serialize(row)
            .map_err(|e| at(&csv_path)(std::io::Error::other(e)))?;
    }
    writer.flush().map_err(at(&csv_path))?;

    let mut md = format!(
        "# Bench report\n\nMachine: {machine}.\n\nMedians from criterion; per-element times divide by the bench's declared throughput (calls, trials, instances). Ratios compare with the Node + Ajv anchor measured in the same session (above 1: toolgauge is faster).\n\n"
    );
    let mut table = Table::new(&[
        ("bench", Align::Left),
        ("median", Align::Right),
        ("per element", Align::Right),
        ("throughput /s", Align::Right),
        ("anchor", Align::Left),
        ("anchor per element", Align::Right),
        ("ratio", Align::Right),
    ]);
    for r in rows {
        let per_element = r.throughput.map_or("-".to_owned(), |t| format_ns(1e9 / t));
        table.row([
            r.bench.clone(),
            format_ns(r.median),
            per_element,
            r.throughput.map_or("-".to_owned(), |t| format!("{t:.0}")),
            r.anchor.clone().unwrap_or_else(|| "-".to_owned()),
            r.anchor_ns.map_or("-".to_owned(), format_ns),
            r.ratio_to_anchor
                .map_or("-".to_owned(), |x| format!("{x:.2}x")),
        ]);
    }
    md.push_str(&table.into_string());
    // Sections below the table (`## ...`: the scaling figures of
    // scripts/scale.sh, notes) are written by hand and kept.
    let path = out.join("bench.md");
    if let Ok(old) = std::fs::read_to_string(&path)
        && let Some(at) = old.find("\n## ")
    {
        md.push_str(&old[at..]);
    }
    std::fs::write(&path, md).map_err(at(&path))
}

fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_folders_are_read_and_joined_with_the_anchor() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("pipeline/full_3_calls_recorded/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(
            new.join("estimates.json"),
            r#"{"median": {"point_estimate": 9000.0}, "mean": {"point_estimate": 1}}"#,
        )
        .unwrap();
        std::fs::write(
            new.join("benchmark.json"),
            r#"{"group_id": "pipeline", "full_id": "pipeline/full_3_calls_recorded", "throughput": {"Elements": 3}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("report")).unwrap();
        let measured = read_criterion(dir.path()).unwrap();
        assert_eq!(
            measured,
            [Measured {
                bench: "pipeline/full_3_calls_recorded".into(),
                median_ns: 9000.0,
                elements: Some(3)
            }]
        );
        let node: NodeResults = serde_json::from_str(
            r#"{"results": [{"name": "(b2) full pipeline serial, buffered WriteStream", "median_ns_per_op": 15000}]}"#,
        )
        .unwrap();
        let rows = rows(&measured, Some(&node));
        assert_eq!(rows[0].throughput, Some(333333.333));
        assert_eq!(rows[0].ratio_to_anchor, Some(5.0));
        std::fs::write(
            dir.path().join("bench.md"),
            "# old\n\n| stale row |\n\n## Scaling\n\nkept\n",
        )
        .unwrap();
        write(&rows, "test machine", dir.path()).unwrap();
        let md = std::fs::read_to_string(dir.path().join("bench.md")).unwrap();
        assert!(md.contains("| pipeline/full_3_calls_recorded | 9.00 µs | 3.00 µs | 333333 | (b2) full pipeline serial, buffered WriteStream | 15.00 µs | 5.00x |"), "{md}");
        // Hand-written sections below the table survive; the old table does not.
        assert!(
            md.ends_with("\n## Scaling\n\nkept\n") && !md.contains("stale"),
            "{md}"
        );
    }
}
