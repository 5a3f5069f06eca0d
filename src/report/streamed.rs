//! Streamed replies in the reports: per cell, the attempts streamed,
//! first token and first complete call (p50, p95, from the request's
//! send), and what running calls early buys against waiting for the
//! whole reply (measured where calls ran early, and the ideal).
//! summary.csv's last columns, a table in summary.md, a section of
//! report.html; nothing where no reply streamed.

use maud::{Markup, html};
use serde::Serialize;

use super::round;
use crate::markup::{Align::Left, Align::Right, Table};
use crate::metrics::CellStats;

/// summary.csv's streamed-reply columns (empty for a cell that did not
/// stream).
#[derive(Debug, Default, Clone, Serialize)]
pub(super) struct StreamColumns {
    pub streamed_attempts: u64,
    pub first_token_p50_ms: Option<f64>,
    pub first_token_p95_ms: Option<f64>,
    pub first_call_p50_ms: Option<f64>,
    pub first_call_p95_ms: Option<f64>,
    /// Waiting for the whole reply over running calls early, as measured
    /// (`execute_early`), and had each call started when complete.
    pub early_speedup: Option<f64>,
    pub early_ideal_speedup: Option<f64>,
}

impl StreamColumns {
    pub(super) fn of(cell: &CellStats) -> StreamColumns {
        let Some(stream) = cell.stream.as_deref() else {
            return StreamColumns::default();
        };
        let (measured, ideal) = stream.early_speedup();
        StreamColumns {
            streamed_attempts: stream.attempts,
            first_token_p50_ms: stream.first_token.percentile_ms(0.50),
            first_token_p95_ms: stream.first_token.percentile_ms(0.95),
            first_call_p50_ms: stream.first_call.percentile_ms(0.50),
            first_call_p95_ms: stream.first_call.percentile_ms(0.95),
            early_speedup: measured.map(round),
            early_ideal_speedup: ideal.map(round),
        }
    }
}

/// A cell's streamed figures, named.
pub(super) struct StreamedCell<'a> {
    pub model: &'a str,
    pub scenario: &'a str,
    pub columns: &'a StreamColumns,
}

fn ms(p50: Option<f64>, p95: Option<f64>) -> String {
    match (p50, p95) {
        (Some(p50), Some(p95)) => format!("{p50:.0} / {p95:.0} ms"),
        _ => "-".to_owned(),
    }
}

fn speedup(columns: &StreamColumns) -> String {
    match (columns.early_speedup, columns.early_ideal_speedup) {
        (Some(measured), Some(ideal)) => format!("{measured:.2}x (ideal {ideal:.2}x)"),
        (None, Some(ideal)) => format!("not run early (ideal {ideal:.2}x)"),
        _ => "-".to_owned(),
    }
}

/// summary.md's table of streamed cells; empty when none streamed.
pub(super) fn markdown(cells: &[StreamedCell<'_>]) -> String {
    let cells: Vec<&StreamedCell<'_>> = cells
        .iter()
        .filter(|c| c.columns.streamed_attempts > 0)
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[
        ("model", Left),
        ("scenario", Left),
        ("streamed", Right),
        ("first token p50 / p95", Right),
        ("first call p50 / p95", Right),
        ("calls run early", Right),
    ]);
    for c in cells {
        t.row([
            c.model.to_owned(),
            c.scenario.to_owned(),
            c.columns.streamed_attempts.to_string(),
            ms(c.columns.first_token_p50_ms, c.columns.first_token_p95_ms),
            ms(c.columns.first_call_p50_ms, c.columns.first_call_p95_ms),
            speedup(c.columns),
        ]);
    }
    format!(
        "\n## Streamed replies\n\nFrom the request's send; calls run early against waiting for the whole reply.\n\n{}",
        t.into_string()
    )
}

/// report.html's section of streamed cells; nothing when none streamed.
pub(super) fn html(cells: &[StreamedCell<'_>]) -> Markup {
    let cells: Vec<&StreamedCell<'_>> = cells
        .iter()
        .filter(|c| c.columns.streamed_attempts > 0)
        .collect();
    html! {
        @if !cells.is_empty() {
            h2 { "Streamed replies" }
            p class="note" { "From the request's send; calls run early against waiting for the whole reply." }
            table {
                thead { tr {
                    th { "model" } th { "scenario" } th { "streamed" }
                    th { "first token p50 / p95" } th { "first call p50 / p95" } th { "calls run early" }
                } }
                tbody {
                    @for c in &cells {
                        tr {
                            td { (c.model) } td { (c.scenario) }
                            td { (c.columns.streamed_attempts) }
                            td { (ms(c.columns.first_token_p50_ms, c.columns.first_token_p95_ms)) }
                            td { (ms(c.columns.first_call_p50_ms, c.columns.first_call_p95_ms)) }
                            td { (speedup(c.columns)) }
                        }
                    }
                }
            }
        }
    }
}
