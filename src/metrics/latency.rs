//! Latency samples of one cell, in memory that follows what the cell
//! holds: a few samples are kept as they are, and only a cell with many
//! moves to a histogram (3 significant digits), which grows with the range
//! of its values. Percentiles are the same either way.

use std::sync::LazyLock;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Samples kept as they are before moving to a histogram (4 KiB).
const FEW: usize = 512;

/// The longest latency recorded, in microseconds (an hour).
const MAX_MICROS: u64 = 3_600_000_000;

const SIGNIFICANT_DIGITS: u8 = 3;

#[derive(Debug, Clone)]
pub enum Latencies {
    /// Microseconds, as recorded.
    Few(Vec<u64>),
    Many(Box<Histogram<u64>>),
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::Few(Vec::new())
    }
}

impl Latencies {
    pub fn record(&mut self, latency: Duration) {
        let micros = (latency.as_micros() as u64).clamp(1, MAX_MICROS);
        match self {
            Latencies::Few(samples) if samples.len() < FEW => samples.push(micros),
            Latencies::Few(samples) => {
                let mut histogram = histogram_of(samples);
                record(&mut histogram, micros);
                *self = Latencies::Many(Box::new(histogram));
            }
            Latencies::Many(histogram) => record(histogram, micros),
        }
    }

    /// The `q` quantile in milliseconds; `None` without samples.
    pub fn percentile_ms(&self, q: f64) -> Option<f64> {
        let micros = match self {
            Latencies::Few(samples) if samples.is_empty() => return None,
            Latencies::Few(samples) => quantile_of_few(samples, q),
            Latencies::Many(histogram) => histogram.value_at_quantile(q),
        };
        Some(micros as f64 / 1000.0)
    }

    /// Add another cell's samples (shards, model totals).
    pub fn merge(&mut self, other: &Latencies) {
        match other {
            Latencies::Few(samples) => {
                for &micros in samples {
                    self.record(Duration::from_micros(micros));
                }
            }
            Latencies::Many(theirs) => {
                let mut mine = match std::mem::take(self) {
                    Latencies::Few(samples) => histogram_of(&samples),
                    Latencies::Many(histogram) => *histogram,
                };
                let _ = mine.add(&**theirs);
                *self = Latencies::Many(Box::new(mine));
            }
        }
    }
}

/// A histogram that grows with its values: its buckets depend on the
/// lowest value (1 µs) and the digits, not on the highest, so quantiles
/// match a histogram sized for an hour from the start.
fn histogram_of(samples: &[u64]) -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2, SIGNIFICANT_DIGITS).expect("valid histogram bounds");
    histogram.auto(true);
    for &micros in samples {
        record(&mut histogram, micros);
    }
    histogram
}

/// The quantile a histogram of `samples` would give, without building
/// one: a report reads percentiles of many small cells. Like hdrhistogram,
/// the sample of rank `ceil(q * n)` (at least 1), reported as the highest
/// value of its bucket (the lowest for `q = 0`).
fn quantile_of_few(samples: &[u64], q: f64) -> u64 {
    static BUCKETS: LazyLock<Histogram<u64>> = LazyLock::new(|| histogram_of(&[]));
    let q = q.min(1.0);
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
    let mut ranked = samples.to_vec();
    let (_, &mut sample, _) = ranked.select_nth_unstable(rank - 1);
    if q == 0.0 {
        BUCKETS.lowest_equivalent(sample)
    } else {
        BUCKETS.highest_equivalent(sample)
    }
}

fn record(histogram: &mut Histogram<u64>, micros: u64) {
    // An auto-resizing histogram takes any value up to MAX_MICROS.
    let _ = histogram.record(micros);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized_for_an_hour(samples: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, MAX_MICROS, 3).unwrap();
        for &s in samples {
            h.record(s).unwrap();
        }
        h
    }

    #[test]
    fn percentiles_match_a_full_size_histogram_whether_few_or_many() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut samples = Vec::new();
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            samples.push(1 + state % 2_000_000);
        }
        for count in [1, 7, FEW, FEW + 1, 5_000] {
            let mut latencies = Latencies::default();
            for &s in &samples[..count] {
                latencies.record(Duration::from_micros(s));
            }
            assert_eq!(matches!(latencies, Latencies::Many(_)), count > FEW);
            let reference = sized_for_an_hour(&samples[..count]);
            for q in [0.0, 0.001, 0.25, 0.5, 0.95, 0.99, 1.0, 1.5] {
                assert_eq!(
                    latencies.percentile_ms(q),
                    Some(reference.value_at_quantile(q) as f64 / 1000.0),
                    "{count} samples, q {q}"
                );
            }
        }
        assert_eq!(Latencies::default().percentile_ms(0.5), None);
    }

    proptest::proptest! {
        #[test]
        fn few_samples_give_the_histogram_s_quantile(
            // Few distinct values, so ranks fall among repeats too.
            samples in proptest::collection::vec(
                proptest::sample::select(vec![1u64, 2, 999, 2_047, 2_048, 2_049, 70_001, 70_002, MAX_MICROS]),
                1..=FEW,
            ),
            q in 0.0f64..=1.0,
        ) {
            let reference = sized_for_an_hour(&samples);
            proptest::prop_assert_eq!(
                quantile_of_few(&samples, q),
                reference.value_at_quantile(q)
            );
        }
    }

    #[test]
    fn a_cell_with_one_sample_holds_bytes_not_a_histogram() {
        let mut latencies = Latencies::default();
        latencies.record(Duration::from_millis(100));
        match &latencies {
            Latencies::Few(samples) => assert!(samples.capacity() < 16),
            Latencies::Many(_) => panic!("a histogram for one sample"),
        }
    }

    #[test]
    fn merging_keeps_every_sample() {
        let (mut a, mut b) = (Latencies::default(), Latencies::default());
        for i in 1..=400 {
            a.record(Duration::from_micros(i));
            b.record(Duration::from_micros(1000 + i));
        }
        let mut many = Latencies::default();
        for i in 0..2_000 {
            many.record(Duration::from_micros(5_000 + i));
        }
        a.merge(&b);
        assert!(matches!(a, Latencies::Many(_)));
        a.merge(&many);
        let all: Vec<u64> = (1..=400).chain(1001..=1400).chain(5_000..7_000).collect();
        let reference = sized_for_an_hour(&all);
        assert_eq!(
            a.percentile_ms(0.5),
            Some(reference.value_at_quantile(0.5) as f64 / 1000.0)
        );
    }
}
