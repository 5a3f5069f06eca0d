//! Progress while a run goes: one bar per model on a terminal, plain
//! periodic lines otherwise, nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::RunPlan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Bars on a terminal, lines otherwise.
    Auto,
    Quiet,
}

pub(super) struct Progress {
    /// The whole run, with the ETA; then one bar per model.
    overall: Option<ProgressBar>,
    started: Instant,
    done: AtomicU64,
    bars: Vec<ProgressBar>,
    successes: Vec<AtomicU64>,
    plain: Option<Mutex<PlainState>>,
    names: Vec<String>,
    total: u64,
}

struct PlainState {
    last: Instant,
    done: u64,
    successes: u64,
}

const PLAIN_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    pub(super) fn new(mode: ProgressMode, plan: &RunPlan, total: u64) -> Progress {
        let names: Vec<String> = plan.models.iter().map(|m| m.name().to_owned()).collect();
        let mut progress = Progress {
            overall: None,
            started: Instant::now(),
            done: AtomicU64::new(0),
            bars: Vec::new(),
            successes: names.iter().map(|_| AtomicU64::new(0)).collect(),
            plain: None,
            names,
            total,
        };
        if mode == ProgressMode::Quiet {
            return progress;
        }
        if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let per_model = total / progress.names.len().max(1) as u64;
            // Models run one after the other: a model's own rate says
            // nothing of the time left, so only the whole run has an ETA.
            let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} {msg}")
                .expect("a valid template")
                .progress_chars("=> ");
            let overall = multi.add(ProgressBar::new(total));
            overall.set_style(style.clone());
            overall.set_prefix("all");
            overall.set_message(eta_text(Duration::ZERO, 0, total));
            progress.overall = Some(overall);
            for name in &progress.names {
                let bar = multi.add(ProgressBar::new(per_model));
                bar.set_style(style.clone());
                bar.set_prefix(name.clone());
                progress.bars.push(bar);
            }
        } else {
            progress.plain = Some(Mutex::new(PlainState {
                last: Instant::now(),
                done: 0,
                successes: 0,
            }));
        }
        progress
    }

    pub(super) fn trial(&self, model: usize, success: bool) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(overall) = &self.overall {
            overall.inc(1);
            // Formatting costs more than a trial: refresh now and then.
            if done % 256 == 1 || done == self.total {
                overall.set_message(eta_text(self.started.elapsed(), done, self.total));
            }
        }
        if let Some(bar) = self.bars.get(model) {
            bar.inc(1);
            let done = bar.position().max(1);
            let successes = self.successes[model].fetch_add(u64::from(success), Ordering::Relaxed)
                + u64::from(success);
            bar.set_message(format!(
                "success {:.0}%",
                100.0 * successes as f64 / done as f64
            ));
        }
        if let Some(plain) = &self.plain {
            let mut state = plain.lock().expect("progress lock");
            state.done += 1;
            state.successes += u64::from(success);
            if state.last.elapsed() >= PLAIN_EVERY {
                state.last = Instant::now();
                eprintln!(
                    "progress: {}/{} trials, success {:.1}%, {}",
                    state.done,
                    self.total,
                    100.0 * state.successes as f64 / state.done as f64,
                    eta_text(self.started.elapsed(), state.done, self.total)
                );
            }
        }
    }

    pub(super) fn finish(&self) {
        if let Some(overall) = &self.overall {
            overall.finish();
        }
        for bar in &self.bars {
            bar.finish();
        }
    }
}

/// The time left at the whole run's rate so far: `elapsed` for `done` of
/// `total` trials.
fn eta(elapsed: Duration, done: u64, total: u64) -> Option<Duration> {
    (done > 0).then(|| elapsed.mul_f64(total.saturating_sub(done) as f64 / done as f64))
}

fn eta_text(elapsed: Duration, done: u64, total: u64) -> String {
    match eta(elapsed, done, total) {
        Some(left) if left.as_secs() >= 60 => {
            format!("ETA {}m{:02}s", left.as_secs() / 60, left.as_secs() % 60)
        }
        Some(left) => format!("ETA {}s", left.as_secs()),
        None => "ETA -".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_is_the_time_left_at_the_whole_runs_rate() {
        // A quarter done in 1 s: 3 s left, whatever the models' own bars say.
        assert_eq!(
            eta(Duration::from_secs(1), 250, 1000),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            eta(Duration::from_secs(4), 1000, 1000),
            Some(Duration::ZERO)
        );
        assert_eq!(eta(Duration::from_secs(1), 0, 1000), None);
        assert_eq!(eta_text(Duration::from_secs(10), 1, 10), "ETA 1m30s");
    }
}
