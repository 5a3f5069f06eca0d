//! What a run shows on the terminal as it goes, heard as a reporter:
//! one bar per model on a terminal, plain periodic lines otherwise,
//! nothing with `--quiet`; and every notice (a lost trial, a failed
//! request, an exchange not recorded) as a line on stderr, always.

use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::{FinishedTrial, Notice, Reporter, RunInfo};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Bars on a terminal, lines otherwise.
    Auto,
    Quiet,
}

/// The terminal's reporter.
pub struct Progress {
    mode: ProgressMode,
    started: Instant,
    total: u64,
    done: u64,
    successes: u64,
    shown: Shown,
}

/// Progress as it is shown.
enum Shown {
    Nothing,
    /// On a terminal: the whole run with the ETA, then one bar per model
    /// with its success so far.
    Bars {
        multi: MultiProgress,
        overall: ProgressBar,
        bars: Vec<(ProgressBar, u64)>,
    },
    /// A line every few seconds.
    Plain {
        last: Instant,
    },
}

const PLAIN_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    pub fn new(mode: ProgressMode) -> Progress {
        Progress {
            mode,
            started: Instant::now(),
            total: 0,
            done: 0,
            successes: 0,
            shown: Shown::Nothing,
        }
    }

    fn bars(info: &RunInfo, total: u64) -> Shown {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let per_model = total / info.models.len().max(1) as u64;
        // Models run one after the other: a model's own rate says nothing
        // of the time left, so only the whole run has an ETA.
        let style = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> ");
        let overall = multi.add(ProgressBar::new(total));
        overall.set_style(style.clone());
        overall.set_prefix("all");
        overall.set_message(eta_text(Duration::ZERO, 0, total));
        let bars = info
            .models
            .iter()
            .map(|model| {
                let bar = multi.add(ProgressBar::new(per_model));
                bar.set_style(style.clone());
                bar.set_prefix(model.name.clone());
                (bar, 0)
            })
            .collect();
        Shown::Bars {
            multi,
            overall,
            bars,
        }
    }
}

impl Reporter for Progress {
    fn run_started(&mut self, info: &RunInfo, trials: u64) -> io::Result<()> {
        self.started = Instant::now();
        self.total = trials;
        self.shown = match self.mode {
            ProgressMode::Quiet => Shown::Nothing,
            ProgressMode::Auto if io::stderr().is_terminal() => Progress::bars(info, trials),
            ProgressMode::Auto => Shown::Plain {
                last: Instant::now(),
            },
        };
        Ok(())
    }

    fn trial_finished(&mut self, _info: &RunInfo, trial: FinishedTrial<'_>) -> io::Result<()> {
        let success = trial.outcome.success();
        self.done += 1;
        self.successes += u64::from(success);
        let (done, total, elapsed) = (self.done, self.total, self.started.elapsed());
        match &mut self.shown {
            Shown::Nothing => {}
            Shown::Bars { overall, bars, .. } => {
                overall.inc(1);
                // Formatting costs more than a trial: refresh now and then.
                if done % 256 == 1 || done == total {
                    overall.set_message(eta_text(elapsed, done, total));
                }
                if let Some((bar, successes)) = bars.get_mut(trial.outcome.model) {
                    bar.inc(1);
                    *successes += u64::from(success);
                    let done = bar.position().max(1);
                    bar.set_message(format!(
                        "success {:.0}%",
                        100.0 * *successes as f64 / done as f64
                    ));
                }
            }
            Shown::Plain { last } if last.elapsed() >= PLAIN_EVERY => {
                *last = Instant::now();
                eprintln!(
                    "progress: {done}/{total} trials, success {:.1}%, {}",
                    100.0 * self.successes as f64 / done as f64,
                    eta_text(elapsed, done, total)
                );
            }
            Shown::Plain { .. } => {}
        }
        Ok(())
    }

    fn notice(&mut self, _info: &RunInfo, notice: &Notice) -> io::Result<()> {
        // A notice quotes servers and models: shown, never obeyed.
        let notice = super::for_terminal(&notice.to_string());
        match &self.shown {
            Shown::Bars { multi, .. } => multi.suspend(|| eprintln!("{notice}")),
            _ => eprintln!("{notice}"),
        }
        Ok(())
    }

    fn run_finished(
        &mut self,
        _info: &RunInfo,
        _stats: &crate::metrics::Aggregate,
    ) -> io::Result<()> {
        if let Shown::Bars { overall, bars, .. } = &self.shown {
            overall.finish();
            for (bar, _) in bars {
                bar.finish();
            }
        }
        Ok(())
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
