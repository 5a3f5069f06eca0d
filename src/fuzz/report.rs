//! What a fuzz run writes: fuzz.csv (a row per tool, validator and
//! operator, then a row per path it broke) with its table for the
//! terminal, and disagreements.csv with each site the validators
//! disagree on. Tables go to `out`, notes (survivors, false rejects,
//! where the files are) to `notes`.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use super::session::{Named, ToolResult};
use super::{Counts, ToolFuzz, wire};
use crate::markup::{Align, Table};

/// fuzz.csv: one row per tool, validator and operator (`valid` for the
/// valid instances), each operator's followed by a row per path it broke.
#[derive(Debug, Serialize)]
struct FuzzRow<'a> {
    tool: &'a str,
    operator: &'a str,
    generated: u64,
    killed: u64,
    survived: u64,
    false_rejects: u64,
    kill_rate: Option<f64>,
    /// Where in the arguments (array items as `*`); empty on the valid
    /// row and on an operator's total row.
    path: &'a str,
    /// The `--validator` as given.
    validator: &'a str,
}

/// disagreements.csv: one row per tool and site the validators disagree
/// on, under these columns (written even when there is no row).
const DISAGREEMENT_COLUMNS: [&str; 8] = [
    "tool",
    "operator",
    "path",
    "cases",
    "verdicts",
    "instance",
    "minimised",
    "replay",
];

#[derive(Debug, Serialize)]
struct DisagreementRow<'a> {
    tool: &'a str,
    /// `valid`, or the keyword the cases break.
    operator: &'static str,
    path: &'a str,
    cases: u64,
    /// Each validator's verdict on `instance`: `builtin=invalid; ...`.
    verdicts: String,
    instance: String,
    /// The smallest instance with the same verdicts.
    minimised: String,
    replay: String,
}

/// What a fuzz run found, and where its files go.
pub struct Findings<'a> {
    pub dir: &'a Path,
    pub seed: u64,
    pub validators: &'a [Named],
    pub results: &'a [ToolResult],
}

/// fuzz.csv in `dir` and its table; whether any validator let a mutant
/// through or rejected a valid instance.
pub fn write_fuzz_csv(
    found: &Findings<'_>,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> io::Result<bool> {
    let (seed, validators) = (found.seed, found.validators);
    let path = found.dir.join("fuzz.csv");
    let mut writer = csv::Writer::from_path(&path)?;
    let mut failed = false;
    for (v, validator) in validators.iter().enumerate() {
        if validators.len() > 1 {
            writeln!(out, "\nvalidator {}:\n", validator.spec)?;
        }
        let mut table = Table::new(&[
            ("tool", Align::Left),
            ("operator", Align::Left),
            ("generated", Align::Right),
            ("killed", Align::Right),
            ("survived", Align::Right),
            ("false rejects", Align::Right),
            ("kill rate", Align::Right),
        ]);
        for result in found.results {
            let Some(report) = result.reports.get(v) else {
                continue;
            };
            for (row, shown) in rows_of(&result.tool, report, &validator.spec) {
                failed |= row.survived > 0 || row.false_rejects > 0;
                writer.serialize(&row).map_err(io::Error::other)?;
                if shown {
                    table.row([
                        row.tool.to_owned(),
                        format!("{}{}", row.operator, at(row.path)),
                        row.generated.to_string(),
                        row.killed.to_string(),
                        row.survived.to_string(),
                        row.false_rejects.to_string(),
                        row.kill_rate
                            .map_or("-".to_owned(), |r| format!("{:.1}%", 100.0 * r)),
                    ]);
                }
            }
            let by = if validators.len() > 1 {
                format!(" ({})", validator.spec)
            } else {
                String::new()
            };
            write_examples(notes, result, report, seed, &by)?;
        }
        write!(out, "{}", table.render())?;
    }
    writer.flush()?;
    writeln!(notes, "fuzz.csv written to {}", path.display())?;
    Ok(failed)
}

/// A tool's rows under one validator: the valid row, then each operator's
/// total and a row per path it broke; each with whether the terminal
/// shows it (an operator's paths only when it broke several).
fn rows_of<'a>(
    tool: &'a str,
    report: &'a ToolFuzz,
    validator: &'a str,
) -> Vec<(FuzzRow<'a>, bool)> {
    let mut rows = vec![(
        FuzzRow {
            tool,
            operator: "valid",
            generated: report.valid,
            killed: 0,
            survived: 0,
            false_rejects: report.false_rejects,
            kill_rate: None,
            path: "",
            validator,
        },
        true,
    )];
    let row = |operator: &'static str, path, counts: &Counts| FuzzRow {
        tool,
        operator,
        generated: counts.generated,
        killed: counts.killed,
        survived: counts.survived,
        false_rejects: 0,
        kill_rate: Some(counts.killed as f64 / counts.generated.max(1) as f64),
        path,
        validator,
    };
    for (mutation, counts) in &report.by_mutation {
        rows.push((row(mutation.as_str(), "", counts), true));
        let sites: Vec<_> = report
            .by_site
            .iter()
            .filter(|((m, _), _)| m == mutation)
            .collect();
        for ((_, path), counts) in &sites {
            rows.push((row(mutation.as_str(), path, counts), sites.len() > 1));
        }
    }
    rows
}

/// The first valid instance rejected and each operator's first survivor,
/// with the `--replay` that makes it again.
fn write_examples(
    notes: &mut dyn Write,
    result: &ToolResult,
    report: &ToolFuzz,
    seed: u64,
    by: &str,
) -> io::Result<()> {
    let tool = &result.tool;
    let replay = |case: u64| format!("(--replay {seed}:{})", result.offset + case);
    if let Some(example) = &report.false_reject {
        writeln!(
            notes,
            "{tool}: a valid instance was rejected{by}: {} {}",
            wire::to_string(&example.instance),
            replay(example.case)
        )?;
    }
    for (mutation, example) in &report.survivors {
        writeln!(
            notes,
            "{tool}: a {} mutant at {} survived{by}: {} {}",
            mutation.as_str(),
            if example.pointer.is_root() {
                "/"
            } else {
                example.pointer.as_str()
            },
            wire::to_string(&example.instance),
            replay(example.case)
        )?;
    }
    Ok(())
}

/// disagreements.csv and the disagreements on the terminal; whether
/// there were any.
pub fn write_disagreements(
    found: &Findings<'_>,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> io::Result<bool> {
    let (seed, validators) = (found.seed, found.validators);
    let path = found.dir.join("disagreements.csv");
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_path(&path)?;
    writer.write_record(DISAGREEMENT_COLUMNS)?;
    let total: usize = found.results.iter().map(|r| r.disagreements.len()).sum();
    writeln!(
        out,
        "\n{} site(s) where the {} validators disagree",
        total,
        validators.len()
    )?;
    for result in found.results {
        for d in &result.disagreements {
            let verdicts = validators
                .iter()
                .zip(&d.verdicts)
                .map(|(v, valid)| {
                    format!("{}={}", v.spec, if *valid { "valid" } else { "invalid" })
                })
                .collect::<Vec<_>>()
                .join("; ");
            let row = DisagreementRow {
                tool: &result.tool,
                operator: d.keyword(),
                path: if d.mutation.is_some() { &d.path } else { "" },
                cases: d.cases,
                verdicts,
                instance: wire::to_string(&d.example.instance),
                minimised: wire::to_string(&d.minimised),
                replay: format!("{seed}:{}", result.offset + d.example.case),
            };
            writeln!(
                out,
                "{}: {}{}, {} case(s): {}: {} (--replay {}; minimised from {})",
                row.tool,
                row.operator,
                at(row.path),
                row.cases,
                row.verdicts,
                row.minimised,
                row.replay,
                crate::excerpt::excerpt(&row.instance),
            )?;
            writer.serialize(&row).map_err(io::Error::other)?;
        }
    }
    writer.flush()?;
    writeln!(notes, "disagreements.csv written to {}", path.display())?;
    Ok(total > 0)
}

/// ` at PATH`, or nothing for no path.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}
