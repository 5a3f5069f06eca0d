//! Streamed replies' measures: when their parts came (first token, first
//! complete call), and what running calls early buys: the same as
//! parallel speedup, a measured figure against an ideal one, both over
//! the turn's reply and tools against waiting for the whole reply.

use std::time::Duration;

use super::Latencies;
use crate::call::StreamTiming;

/// One streamed attempt's times, each from the request's send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTimes {
    pub timing: StreamTiming,
    /// To the last call's result: the reply and its tools, as run.
    pub turn: Duration,
    /// `turn` had each call started the moment it was complete (write
    /// barriers kept), each taking as long as it took.
    pub early_ideal: Duration,
    /// Calls run before the reply ended (`execute_early`).
    pub ran_early: u32,
}

impl StreamTimes {
    /// Waiting for the whole reply, then the ideal schedule: the base
    /// both speedups are over.
    pub fn waiting(&self, ideal_tools: Duration) -> Duration {
        self.timing.end + ideal_tools
    }
}

/// A cell's streamed attempts.
#[derive(Debug, Clone, Default)]
pub struct StreamStats {
    pub attempts: u64,
    pub first_token: Latencies,
    pub first_call: Latencies,
    /// Attempts with calls: the ideal early speedup's sum.
    pub with_calls: u64,
    pub sum_ideal_speedup: f64,
    /// Attempts whose calls ran early: the measured speedup's sum.
    pub ran_early: u64,
    pub sum_speedup: f64,
}

impl StreamStats {
    pub fn add(&mut self, stream: &StreamTimes, calls: u32, ideal_tools: Duration) {
        self.attempts += 1;
        if let Some(at) = stream.timing.first_token {
            self.first_token.record(at);
        }
        if let Some(at) = stream.timing.calls.first() {
            self.first_call.record(*at);
        }
        if calls == 0 || stream.early_ideal.is_zero() {
            return;
        }
        let waiting = stream.waiting(ideal_tools).as_secs_f64();
        self.with_calls += 1;
        self.sum_ideal_speedup += waiting / stream.early_ideal.as_secs_f64();
        if stream.ran_early > 0 && !stream.turn.is_zero() {
            self.ran_early += 1;
            self.sum_speedup += waiting / stream.turn.as_secs_f64();
        }
    }

    pub fn merge(&mut self, other: &StreamStats) {
        self.attempts += other.attempts;
        self.first_token.merge(&other.first_token);
        self.first_call.merge(&other.first_call);
        self.with_calls += other.with_calls;
        self.sum_ideal_speedup += other.sum_ideal_speedup;
        self.ran_early += other.ran_early;
        self.sum_speedup += other.sum_speedup;
    }

    /// Running calls early against waiting for the whole reply: the mean
    /// measured speedup (`None`: no call ran early) and the mean ideal.
    pub fn early_speedup(&self) -> (Option<f64>, Option<f64>) {
        let mean = |sum: f64, n: u64| (n > 0).then(|| sum / n as f64);
        (
            mean(self.sum_speedup, self.ran_early),
            mean(self.sum_ideal_speedup, self.with_calls),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn early_speedup_is_over_waiting_for_the_whole_reply() {
        let stream = StreamTimes {
            timing: StreamTiming {
                first_byte: ms(10),
                first_token: Some(ms(20)),
                calls: vec![ms(100), ms(300)],
                end: ms(400),
            },
            // Waiting: 400 + 200 = 600; early, ideally 300 + 200 = 500.
            turn: ms(480),
            early_ideal: ms(500),
            ran_early: 2,
        };
        let mut stats = StreamStats::default();
        stats.add(&stream, 2, ms(200));
        let (measured, ideal) = stats.early_speedup();
        assert!((ideal.unwrap() - 1.2).abs() < 1e-9);
        assert!((measured.unwrap() - 1.25).abs() < 1e-9);
        // Latencies keep three significant digits.
        let p50 = |l: &Latencies| l.percentile_ms(0.5).unwrap();
        assert!((p50(&stats.first_token) - 20.0).abs() < 0.1);
        assert!((p50(&stats.first_call) - 100.0).abs() < 0.5);

        // Not run early: the ideal still says what it would buy.
        let mut waited = StreamStats::default();
        waited.add(
            &StreamTimes {
                ran_early: 0,
                ..stream
            },
            2,
            ms(200),
        );
        assert_eq!(waited.early_speedup().0, None);
        assert!(waited.early_speedup().1.is_some());
    }
}
