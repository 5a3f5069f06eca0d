//! Charts as standalone SVG, drawn from data: horizontal bars (grouped or
//! stacked), points with intervals, and lines. Every chart has a title,
//! axes with their unit, a legend, the numbers beside the marks and in a
//! hover title, and colours from the Okabe-Ito palette (told apart by
//! colour-blind readers). Markup and escaping come from maud.

use maud::{Markup, html};

/// Okabe-Ito, without the yellow (too pale on white).
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

const WIDTH: f64 = 720.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 90.0;
const TOP: f64 = 44.0;
const ROW: f64 = 18.0;
/// Legend entries per line.
const LEGEND_COLUMNS: usize = 4;

/// Bars per row label, one per series; `stacked` puts a row's bars end to
/// end (counts by kind), otherwise side by side.
#[derive(Debug, Clone)]
pub struct Bars {
    pub title: String,
    /// What the values are, with their unit (`final success`, `ms`).
    pub unit: String,
    pub series: Vec<String>,
    /// Row label, then one value per series (`None`: not measured).
    pub rows: Vec<(String, Vec<Option<f64>>)>,
    pub stacked: bool,
    /// Values are fractions: shown as percentages on a 0..100% axis.
    pub percent: bool,
}

/// A point and its interval per row (final success and its 95% interval).
#[derive(Debug, Clone)]
pub struct Intervals {
    pub title: String,
    pub unit: String,
    /// Label, value, low, high: fractions.
    pub rows: Vec<(String, f64, f64, f64)>,
    /// Each row's palette index (a model's own, so that it has one colour
    /// in every chart); a row without one takes its position.
    pub colours: Vec<usize>,
}

/// Lines over x (attempt, k), one per series; y in 0..=1.
#[derive(Debug, Clone)]
pub struct Lines {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Each series' palette index, as in [`Intervals`].
    pub colours: Vec<usize>,
}

fn number(x: f64, percent: bool) -> String {
    if percent {
        format!("{:.1}%", 100.0 * x)
    } else if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn frame(title: &str, height: f64, body: Markup) -> String {
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(height)
            viewBox=(format!("0 0 {WIDTH} {height}")) role="img" aria-label=(title)
            font-family="sans-serif" font-size="12" {
            rect width="100%" height="100%" fill="white" {}
            text x="10" y="20" font-size="15" font-weight="bold" { (title) }
            (body)
        }
    }
    .into_string()
}

/// The height a legend of `n` entries takes, its lines wrapped.
fn legend_height(n: usize) -> f64 {
    16.0 * n.div_ceil(LEGEND_COLUMNS) as f64 + 12.0
}

fn legend(series: &[String], top: f64) -> Markup {
    legend_in(series, &[], top)
}

/// A legend whose entries take the palette indices `colours` (their
/// position where it has none).
fn legend_in(series: &[String], colours: &[usize], top: f64) -> Markup {
    html! {
        @for (i, name) in series.iter().enumerate() {
            @let x = LEFT + 135.0 * (i % LEGEND_COLUMNS) as f64;
            @let y = top + 16.0 * (i / LEGEND_COLUMNS) as f64;
            g class="legend" {
                rect x=(x) y=(y - 10.0) width="12" height="12" fill=(colour(colours.get(i).copied().unwrap_or(i))) {}
                text x=(x + 16.0) y=(y) { (name) }
            }
        }
    }
}

/// The x axis of a value chart: ticks at 0, 25, 50, 75, 100% of `max`.
fn axis(max: f64, percent: bool, unit: &str, (top, bottom): (f64, f64), plot: f64) -> Markup {
    html! {
        @for i in 0..=4 {
            @let x = LEFT + plot * f64::from(i) / 4.0;
            line x1=(x) x2=(x) y1=(top) y2=(bottom) stroke="#ddd" {}
            text x=(x) y=(bottom + 14.0) text-anchor="middle" { (number(max * f64::from(i) / 4.0, percent)) }
        }
        text x=(LEFT + plot / 2.0) y=(bottom + 30.0) text-anchor="middle" { (unit) }
    }
}

impl Bars {
    pub fn render(&self) -> String {
        let per_row = if self.stacked {
            1
        } else {
            self.series.len().max(1)
        };
        let row_height = ROW * per_row as f64 + 8.0;
        let legend_bottom = TOP + legend_height(self.series.len());
        let bottom = legend_bottom + row_height * self.rows.len() as f64;
        let height = bottom + 40.0;
        let max = self.axis_max();
        let plot = WIDTH - LEFT - RIGHT;
        let (marks, notes) = self.marks(legend_bottom, row_height, |v: f64| {
            plot * (v / max).clamp(0.0, 1.0)
        });
        let body = html! {
            (legend(&self.series, TOP))
            (axis(max, self.percent, &self.unit, (legend_bottom - 6.0, bottom), plot))
            @for (r, (label, _)) in self.rows.iter().enumerate() {
                text x=(LEFT - 8.0) y=(legend_bottom + row_height * r as f64 + row_height / 2.0 + 4.0)
                    text-anchor="end" { (label) }
            }
            @for m in &marks {
                rect class="mark" x=(m.x) y=(m.y) width=(m.width) height=(ROW - 3.0)
                    fill=(colour(m.series)) data-value=(m.value) { title { (m.hover) } }
            }
            @for (x, y, text) in &notes {
                text x=(x) y=(y) { (text) }
            }
        };
        frame(&self.title, height, body)
    }

    /// The axis' end: 100% for shares, else a round number past the
    /// widest bar (or stack).
    fn axis_max(&self) -> f64 {
        if self.percent {
            return 1.0;
        }
        let widest = self.rows.iter().map(|(_, values)| {
            let present = values.iter().flatten();
            if self.stacked {
                present.sum::<f64>()
            } else {
                present.fold(0.0, |a: f64, b| a.max(*b))
            }
        });
        nice(widest.fold(0.0, f64::max))
    }

    /// Where each bar goes, and the numbers written beside them.
    fn marks(
        &self,
        legend_bottom: f64,
        row_height: f64,
        scale: impl Fn(f64) -> f64,
    ) -> (Vec<Mark>, Vec<(f64, f64, String)>) {
        let mut marks = Vec::new();
        let mut notes: Vec<(f64, f64, String)> = Vec::new();
        for (r, (label, values)) in self.rows.iter().enumerate() {
            let y0 = legend_bottom + row_height * r as f64 + 4.0;
            let mut end = 0.0;
            for (s, value) in values.iter().enumerate() {
                let y = if self.stacked {
                    y0
                } else {
                    y0 + ROW * s as f64
                };
                let Some(v) = *value else {
                    if !self.stacked {
                        notes.push((LEFT + 4.0, y + ROW - 7.0, "not measured".to_owned()));
                    }
                    continue;
                };
                let x = if self.stacked {
                    LEFT + scale(end)
                } else {
                    LEFT
                };
                marks.push(Mark {
                    x,
                    y,
                    width: scale(v).max(0.5),
                    series: s,
                    value: v,
                    hover: format!("{label} / {}: {}", self.series[s], number(v, self.percent)),
                });
                if self.stacked {
                    end += v;
                } else {
                    notes.push((x + scale(v) + 4.0, y + ROW - 7.0, number(v, self.percent)));
                }
            }
            if self.stacked {
                notes.push((
                    LEFT + scale(end) + 4.0,
                    y0 + ROW - 7.0,
                    number(end, self.percent),
                ));
            }
        }
        (marks, notes)
    }
}

/// A bar: where it goes, its series and value, and its hover text.
struct Mark {
    x: f64,
    y: f64,
    width: f64,
    series: usize,
    value: f64,
    hover: String,
}

impl Intervals {
    pub fn render(&self) -> String {
        let bottom = TOP + 10.0 + 24.0 * self.rows.len() as f64;
        // Room on the right for "93.0% [89.1%, 95.6%]".
        let plot = WIDTH - LEFT - 2.0 * RIGHT;
        let x = |v: f64| LEFT + plot * v.clamp(0.0, 1.0);
        let body = html! {
            (axis(1.0, true, &self.unit, (TOP, bottom), plot))
            @for (r, (label, value, low, high)) in self.rows.iter().enumerate() {
                @let y = TOP + 20.0 + 24.0 * r as f64;
                @let text = format!("{label}: {} [{}, {}]", number(*value, true), number(*low, true), number(*high, true));
                text x=(LEFT - 8.0) y=(y + 4.0) text-anchor="end" { (label) }
                @let c = colour(self.colours.get(r).copied().unwrap_or(r));
                line x1=(x(*low)) x2=(x(*high)) y1=(y) y2=(y) stroke=(c) stroke-width="3" {}
                circle class="mark" cx=(x(*value)) cy=(y) r="5" fill=(c) data-value=(value) { title { (text) } }
                text x=(x(*high) + 6.0) y=(y + 4.0) { (number(*value, true)) " [" (number(*low, true)) ", " (number(*high, true)) "]" }
            }
        };
        frame(&self.title, bottom + 40.0, body)
    }
}

impl Lines {
    pub fn render(&self) -> String {
        let names: Vec<String> = self.series.iter().map(|(n, _)| n.clone()).collect();
        let top = TOP + legend_height(names.len());
        let bottom = top + 220.0;
        let plot = WIDTH - LEFT - RIGHT;
        let xs = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(x, _)| *x));
        let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let (x_min, x_max) = if x_min > x_max {
            (0.0, 1.0)
        } else {
            (x_min, x_max.max(x_min + 1.0))
        };
        let px = |x: f64| LEFT + plot * (x - x_min) / (x_max - x_min);
        let py = |y: f64| bottom - (bottom - top) * y.clamp(0.0, 1.0);
        let ticks: Vec<f64> = {
            let mut xs: Vec<f64> = self
                .series
                .iter()
                .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
                .collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            xs
        };
        let body = html! {
            (legend_in(&names, &self.colours, TOP))
            @for i in 0..=4 {
                @let y = py(f64::from(i) / 4.0);
                line x1=(LEFT) x2=(LEFT + plot) y1=(y) y2=(y) stroke="#ddd" {}
                text x=(LEFT - 8.0) y=(y + 4.0) text-anchor="end" { (number(f64::from(i) / 4.0, true)) }
            }
            @for x in &ticks {
                text x=(px(*x)) y=(bottom + 14.0) text-anchor="middle" { (number(*x, false)) }
            }
            text x=(LEFT + plot / 2.0) y=(bottom + 30.0) text-anchor="middle" { (self.x_label) }
            text x="14" y=((top + bottom) / 2.0) transform=(format!("rotate(-90 14 {})", (top + bottom) / 2.0)) text-anchor="middle" { (self.y_label) }
            @for (s, (name, points)) in self.series.iter().enumerate() {
                @let path: Vec<String> = points.iter().map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y))).collect();
                @let c = colour(self.colours.get(s).copied().unwrap_or(s));
                polyline points=(path.join(" ")) fill="none" stroke=(c) stroke-width="2" {}
                @for (x, y) in points {
                    circle class="mark" cx=(px(*x)) cy=(py(*y)) r="4" fill=(c) data-value=(y) {
                        title { (name) " at " (number(*x, false)) ": " (number(*y, true)) }
                    }
                }
            }
        };
        frame(&self.title, bottom + 40.0, body)
    }
}

/// A round axis end at or above `x`: 1, 2 or 5 times a power of ten.
fn nice(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|end| *end >= x)
        .unwrap_or(10.0 * power)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_carry_every_value_escaped_names_and_a_legend() {
        let chart = Bars {
            title: "Failures <by kind>".into(),
            unit: "failed calls".into(),
            series: vec!["validation".into(), "runtime".into()],
            rows: vec![
                ("a&b".into(), vec![Some(3.0), Some(1.0)]),
                ("c".into(), vec![None, Some(7.0)]),
            ],
            stacked: true,
            percent: false,
        }
        .render();
        assert_eq!(chart.matches("class=\"mark\"").count(), 3);
        assert!(chart.contains("Failures &lt;by kind&gt;") && chart.contains("a&amp;b"));
        assert!(chart.contains("data-value=\"7\"") && chart.contains(">validation<"));
        assert!(!chart.contains("<by kind>"));
        assert_eq!(nice(7.0), 10.0);
        assert_eq!(nice(0.3), 0.5);
        assert_eq!(nice(120.0), 200.0);
    }

    #[test]
    fn intervals_and_lines_draw_one_mark_per_point() {
        let intervals = Intervals {
            title: "Final success".into(),
            unit: "final success (95% interval)".into(),
            rows: vec![("m1".into(), 0.9, 0.8, 0.95), ("m2".into(), 0.5, 0.4, 0.6)],
            colours: vec![1, 0],
        }
        .render();
        assert_eq!(intervals.matches("<circle class=\"mark\"").count(), 2);
        assert!(intervals.contains("90.0% [80.0%, 95.0%]"));
        let lines = Lines {
            title: "Retry curve".into(),
            x_label: "attempt".into(),
            y_label: "success by attempt".into(),
            series: vec![("m1".into(), vec![(1.0, 0.6), (2.0, 0.9), (3.0, 0.95)])],
            colours: vec![1],
        }
        .render();
        assert_eq!(lines.matches("<circle class=\"mark\"").count(), 3);
        // A model's colour is its own, whatever its place in the chart.
        let second = colour(1);
        assert!(
            intervals.find(second) < intervals.find(colour(0)),
            "{intervals}"
        );
        assert!(
            lines.contains(second) && !lines.contains(colour(0)),
            "{lines}"
        );
        assert!(lines.contains("m1 at 2: 90.0%"));
    }
}
