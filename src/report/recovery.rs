//! self_correction.csv and its tables: per model and kind of first error,
//! what the model did next (fixed at the next attempt, the same call
//! again, text instead, another error), what it recovered later, each as
//! x/y with a Wilson interval; schema errors apart from state and runtime
//! ones, each class also summed. Also what trials whose first attempt
//! failed (for any reason, verdicts included) ended with. The same rows
//! for a live run and for a recorded one (`report recovery`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::call::Failure;
use crate::markup::{Align::*, Table};
use crate::metrics::{ErrorClass, RecoveryByKind, RecoveryCounts, wilson_interval};

/// One row of self_correction.csv.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RecoveryRow {
    pub model: String,
    /// `schema`, `state`, or `verdict` (a first attempt's failure that
    /// was no told error: the calls ran and were wrong).
    pub error_class: String,
    /// The failure kind, or `all` for a class's sum.
    pub failure_kind: String,
    /// Trials whose first told error was of this kind.
    pub first_errors: u64,
    /// Of those, the ones with a next attempt: every share's denominator.
    pub with_next: u64,
    pub fixed_next: u64,
    pub fixed_next_rate: Option<f64>,
    pub fixed_next_low: Option<f64>,
    pub fixed_next_high: Option<f64>,
    pub recovered_later: u64,
    pub recovered_later_rate: Option<f64>,
    pub recovered_later_low: Option<f64>,
    pub recovered_later_high: Option<f64>,
    pub same_call: u64,
    pub same_call_rate: Option<f64>,
    pub same_call_low: Option<f64>,
    pub same_call_high: Option<f64>,
    pub text_instead: u64,
    pub text_instead_rate: Option<f64>,
    pub text_instead_low: Option<f64>,
    pub text_instead_high: Option<f64>,
    pub other_error: u64,
    pub no_next: u64,
    /// Trials whose first attempt failed with this kind, and how many of
    /// those succeeded in the end.
    pub first_attempt_failures: u64,
    pub fixed: u64,
    pub fix_rate: Option<f64>,
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

impl RecoveryRow {
    fn with_counts(mut self, counts: &RecoveryCounts) -> RecoveryRow {
        let n = counts.with_next();
        let share = |x: u64| {
            if n == 0 {
                return (None, None, None);
            }
            let (low, high) = wilson_interval(x, n);
            (
                Some(round(x as f64 / n as f64)),
                Some(round(low)),
                Some(round(high)),
            )
        };
        self.first_errors = counts.first_errors;
        self.with_next = n;
        self.fixed_next = counts.fixed_next;
        (
            self.fixed_next_rate,
            self.fixed_next_low,
            self.fixed_next_high,
        ) = share(counts.fixed_next);
        self.recovered_later = counts.recovered_later;
        (
            self.recovered_later_rate,
            self.recovered_later_low,
            self.recovered_later_high,
        ) = share(counts.recovered_later);
        self.same_call = counts.same_call;
        (self.same_call_rate, self.same_call_low, self.same_call_high) = share(counts.same_call);
        self.text_instead = counts.text_instead;
        (
            self.text_instead_rate,
            self.text_instead_low,
            self.text_instead_high,
        ) = share(counts.text_instead);
        self.other_error = counts.other_error;
        self.no_next = counts.no_next;
        self
    }
}

/// A model's rows: one per kind (of first told error or first attempt's
/// failure), then each class summed.
pub fn recovery_rows(
    model: &str,
    recovery: &RecoveryByKind,
    first_attempt: &BTreeMap<Failure, (u64, u64)>,
) -> Vec<RecoveryRow> {
    let mut rows = Vec::new();
    let mut classes: BTreeMap<ErrorClass, RecoveryCounts> = BTreeMap::new();
    for kind in Failure::all() {
        let counts = recovery.get(&kind);
        let first = first_attempt.get(&kind);
        if counts.is_none() && first.is_none() {
            continue;
        }
        let class = if kind.is_told() {
            ErrorClass::of(kind).as_str()
        } else {
            "verdict"
        };
        let mut row = RecoveryRow {
            model: model.to_owned(),
            error_class: class.to_owned(),
            failure_kind: kind.as_str().to_owned(),
            ..RecoveryRow::default()
        };
        if let Some(counts) = counts {
            classes
                .entry(ErrorClass::of(kind))
                .or_default()
                .merge(counts);
            row = row.with_counts(counts);
        }
        if let Some(&(failed, fixed)) = first {
            row.first_attempt_failures = failed;
            row.fixed = fixed;
            row.fix_rate = (failed > 0).then(|| round(fixed as f64 / failed as f64));
        }
        rows.push(row);
    }
    for (class, counts) in classes {
        rows.push(
            RecoveryRow {
                model: model.to_owned(),
                error_class: class.as_str().to_owned(),
                failure_kind: "all".to_owned(),
                ..RecoveryRow::default()
            }
            .with_counts(&counts),
        );
    }
    rows
}

/// self_correction.csv, whole, with its header when it has no row.
pub fn write_recovery_csv(path: &std::path::Path, rows: &[RecoveryRow]) -> std::io::Result<()> {
    let header = super::header_of::<RecoveryRow>()?;
    crate::whole_file::write_with(path, |file| {
        let mut writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(file);
        writer
            .write_record(&header)
            .map_err(std::io::Error::other)?;
        for row in rows {
            writer.serialize(row).map_err(std::io::Error::other)?;
        }
        writer.flush()
    })
}

/// summary.md's sections: the recovery table, then what trials whose
/// first attempt failed ended with.
pub fn markdown(rows: &[RecoveryRow]) -> String {
    let mut md = String::new();
    if let Some(table) = recovery_table(rows) {
        md.push_str("\n## Recovery after the first error\n\n");
        md.push_str(
            "What the attempt after each trial's first told error did, of those with a next attempt, with 95% intervals; schema errors apart from state and runtime ones.\n\n",
        );
        md.push_str(&table);
    }
    let first_attempt: Vec<&RecoveryRow> = rows
        .iter()
        .filter(|r| r.first_attempt_failures > 0)
        .collect();
    if !first_attempt.is_empty() {
        md.push_str("\n## Self-correction by first-attempt failure\n\n");
        let mut t = Table::new(&[
            ("model", Left),
            ("failure", Left),
            ("first-attempt failures", Right),
            ("fixed", Right),
            ("rate", Right),
        ]);
        for c in first_attempt {
            let rate = c
                .fix_rate
                .map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", 100.0 * r));
            t.row([
                c.model.clone(),
                c.failure_kind.clone(),
                c.first_attempt_failures.to_string(),
                c.fixed.to_string(),
                rate,
            ]);
        }
        md.push_str(&t.into_string());
    }
    md
}

/// `x/y (rate [low, high])`, or `-` without a denominator.
fn share(x: u64, y: u64, low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(low), Some(high)) if y > 0 => format!(
            "{x}/{y} {:.0}% [{:.0}, {:.0}]",
            100.0 * x as f64 / y as f64,
            100.0 * low,
            100.0 * high
        ),
        _ => "-".to_owned(),
    }
}

/// The recovery table (summary.md, `report recovery`): rows with a told
/// first error only.
pub fn recovery_table(rows: &[RecoveryRow]) -> Option<String> {
    let mut t = Table::new(&[
        ("model", Left),
        ("class", Left),
        ("first error", Left),
        ("trials", Right),
        ("fixed at next", Right),
        ("recovered later", Right),
        ("same call again", Right),
        ("text instead", Right),
    ]);
    let mut any = false;
    for r in rows.iter().filter(|r| r.first_errors > 0) {
        any = true;
        t.row([
            r.model.clone(),
            r.error_class.clone(),
            r.failure_kind.clone(),
            r.first_errors.to_string(),
            share(
                r.fixed_next,
                r.with_next,
                r.fixed_next_low,
                r.fixed_next_high,
            ),
            share(
                r.recovered_later,
                r.with_next,
                r.recovered_later_low,
                r.recovered_later_high,
            ),
            share(r.same_call, r.with_next, r.same_call_low, r.same_call_high),
            share(
                r.text_instead,
                r.with_next,
                r.text_instead_low,
                r.text_instead_high,
            ),
        ]);
    }
    any.then(|| t.into_string())
}

/// report.html's recovery section (none when no trial was told an error).
pub fn html(rows: &[RecoveryRow]) -> maud::Markup {
    let told: Vec<&RecoveryRow> = rows.iter().filter(|r| r.first_errors > 0).collect();
    maud::html! {
        @if !told.is_empty() {
            h2 { "Recovery after the first error" }
            p class="note" {
                "What the attempt after each trial's first told error did, of those with a next attempt (95% intervals)."
            }
            table {
                thead { tr {
                    th { "model" } th { "class" } th { "first error" } th { "trials" }
                    th { "fixed at next" } th { "recovered later" } th { "same call again" } th { "text instead" }
                } }
                tbody { @for r in &told { tr {
                    td { (r.model) } td { (r.error_class) } td { (r.failure_kind) } td { (r.first_errors) }
                    td { (share(r.fixed_next, r.with_next, r.fixed_next_low, r.fixed_next_high)) }
                    td { (share(r.recovered_later, r.with_next, r.recovered_later_low, r.recovered_later_high)) }
                    td { (share(r.same_call, r.with_next, r.same_call_low, r.same_call_high)) }
                    td { (share(r.text_instead, r.with_next, r.text_instead_low, r.text_instead_high)) }
                } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{NextMove, Recovery};

    #[test]
    fn rows_give_each_kind_and_each_class_with_intervals() {
        let mut recovery = RecoveryByKind::new();
        for (first, next) in [
            (Failure::Validation, NextMove::Fixed),
            (Failure::Validation, NextMove::SameCall),
            (Failure::Runtime, NextMove::Text),
            (Failure::Runtime, NextMove::NoNext),
        ] {
            recovery.entry(first).or_default().add(&Recovery {
                first,
                next,
                later: next == NextMove::SameCall,
            });
        }
        let first_attempt = BTreeMap::from([(Failure::WrongCall, (2, 1))]);
        let rows = recovery_rows("m", &recovery, &first_attempt);
        let keys: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.error_class.as_str(), r.failure_kind.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("schema", "validation"),
                ("state", "runtime"),
                ("verdict", "wrong_call"),
                ("schema", "all"),
                ("state", "all"),
            ]
        );
        let validation = &rows[0];
        assert_eq!((validation.with_next, validation.fixed_next), (2, 1));
        assert_eq!(validation.fixed_next_rate, Some(0.5));
        assert_eq!(validation.recovered_later, 1);
        let runtime = &rows[1];
        // One had no next attempt: the shares are of one.
        assert_eq!((runtime.first_errors, runtime.with_next), (2, 1));
        assert_eq!(runtime.text_instead_rate, Some(1.0));
        assert_eq!(rows[2].fix_rate, Some(0.5));
        assert_eq!(rows[2].fixed_next_rate, None);
        let table = recovery_table(&rows).unwrap();
        assert!(table.contains("1/2 50% [9, 91]"), "{table}");
    }
}
