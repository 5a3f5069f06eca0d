//! What a run is asked to do ([`RunRequest`], the command line's flags
//! parsed) and the settings it resolves to ([`Settings`]): defaults
//! filled in, or, when resuming, the run's own run.json, which a flag may
//! repeat but not contradict.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::run_file::{RunFile, SuitePaths};
use super::{Clock, Shard};
use crate::pipeline::FeedbackStyle;
use crate::report::Thresholds;

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "--resume: {setting} {given} contradicts the run being resumed, which has {recorded} \
         (run.json); leave {setting} out to continue the run as it was"
    )]
    Contradicts {
        setting: String,
        given: String,
        recorded: String,
    },
    #[error("{flag}: {problem}")]
    Setting { flag: &'static str, problem: String },
    /// A count that must be at least 1, and what it counts.
    #[error("{flag} must be at least 1{counts}")]
    Zero {
        flag: &'static str,
        counts: &'static str,
    },
}

/// A run as asked for: every setting left `None` takes its default (or,
/// resuming, the run's own).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Folders of scenario files, or files, run as one suite.
    pub suites: Vec<PathBuf>,
    /// Model files or folders of them; none: the nearest `models/` folder.
    pub models: Vec<PathBuf>,
    /// Model files that may play a scenario's simulated user (named by
    /// their name in `user.model`), not measured themselves.
    pub user_models: Vec<PathBuf>,
    /// The model that judges for judging servers, and how many times.
    pub judge_model: Option<PathBuf>,
    pub judge_repeats: u32,
    /// Servers the user names to take the judge, besides those `import
    /// tau2` wrote (their commands, as the scenarios write them).
    pub judge_servers: Vec<String>,
    pub trials: Option<u32>,
    pub seed: Option<u64>,
    pub concurrency: Option<usize>,
    /// `Virtual` is taken as asked only when nothing needs the real clock.
    pub clock: Option<Clock>,
    pub feedback: Option<FeedbackStyle>,
    pub serial: bool,
    pub no_session: bool,
    /// The report folder; none: `reports/<run-id>/`.
    pub out: Option<PathBuf>,
    /// Replace a run already in `out`.
    pub force: bool,
    pub min_success: Option<f64>,
    pub min_pass_k: Option<(u64, f64)>,
    pub max_lost: Option<f64>,
    pub shard: Option<Shard>,
    /// Save every live exchange in this folder.
    pub record: Option<PathBuf>,
    /// Answer live models from the recording in this folder.
    pub replay: Option<PathBuf>,
    /// Continue the killed run in this folder.
    pub resume: Option<PathBuf>,
    /// Probe live endpoints before the run.
    pub doctor: bool,
    /// `--max-cost`, `--max-tokens`: this invocation's spending limits
    /// (a resumed run is given its own).
    pub budget: super::BudgetLimits,
    /// Live models answer through their providers' batch APIs.
    pub batch: bool,
}

pub const DEFAULT_TRIALS: u32 = 20;
pub const DEFAULT_SEED: u64 = 1;
pub const DEFAULT_CONCURRENCY: usize = 64;
/// Under `--batch`, trials under way at once: each round's batch holds
/// as many requests.
pub const DEFAULT_BATCH_CONCURRENCY: usize = 1_000;

/// The settings of a run, from the request or, when resuming, from the
/// run's own run.json.
#[derive(Debug, Clone)]
pub struct Settings {
    pub suite: SuitePaths,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    pub feedback: FeedbackStyle,
    pub serial: bool,
    pub no_session: bool,
    pub shard: Option<Shard>,
    pub thresholds: Thresholds,
    /// Live models answer through their providers' batch APIs.
    pub batch: bool,
}

impl Settings {
    /// `live_network`: the run talks to live models, so it needs the real
    /// clock whatever was asked.
    pub fn resolve(
        request: &RunRequest,
        recorded: Option<&RunFile>,
        live_network: bool,
    ) -> Result<Settings, SettingsError> {
        for (flag, rate) in [
            ("--min-success", request.min_success),
            ("--min-pass-k", request.min_pass_k.map(|(_, rate)| rate)),
            ("--max-lost", request.max_lost),
        ] {
            if let Some(rate) = rate
                && !(0.0..=1.0).contains(&rate)
            {
                return Err(SettingsError::Setting {
                    flag,
                    problem: format!("rate {rate} must be between 0 and 1"),
                });
            }
        }
        let clock = request.clock.map(|clock| match clock {
            Clock::Virtual if !live_network => Clock::Virtual,
            _ => Clock::Real,
        });
        let settings = match recorded {
            None => Settings::asked(request, clock, live_network),
            Some(run) => Settings::recorded(request, clock, run)?,
        };
        settings.check()?;
        Ok(settings)
    }

    fn asked(request: &RunRequest, clock: Option<Clock>, live_network: bool) -> Settings {
        Settings {
            // Whole paths: `--resume` works from any folder.
            suite: SuitePaths(
                request
                    .suites
                    .iter()
                    .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                    .collect(),
            ),
            trials: request.trials.unwrap_or(DEFAULT_TRIALS),
            seed: request.seed.unwrap_or(DEFAULT_SEED),
            concurrency: request.concurrency.unwrap_or(if request.batch {
                DEFAULT_BATCH_CONCURRENCY
            } else {
                DEFAULT_CONCURRENCY
            }),
            clock: clock.unwrap_or(if live_network {
                Clock::Real
            } else {
                Clock::Virtual
            }),
            feedback: request.feedback.unwrap_or_default(),
            serial: request.serial,
            no_session: request.no_session,
            shard: request.shard,
            thresholds: Thresholds {
                min_success: request.min_success,
                min_pass_k: request.min_pass_k,
                max_lost: request.max_lost.unwrap_or(0.0),
            },
            batch: request.batch,
        }
    }

    fn recorded(
        request: &RunRequest,
        clock: Option<Clock>,
        run: &RunFile,
    ) -> Result<Settings, SettingsError> {
        let same = request.suites.len() == run.suite.0.len()
            && request
                .suites
                .iter()
                .zip(&run.suite.0)
                .all(|(a, b)| same_path(a, b));
        if !request.suites.is_empty() && !same {
            let given = SuitePaths(request.suites.clone());
            return Err(contradiction("SUITE", given, &run.suite));
        }
        let shard = option_as_in_run_file("--shard", request.shard, run.shard)?;
        Ok(Settings {
            suite: run.suite.clone(),
            trials: as_in_run_file("--trials", request.trials, run.trials)?,
            seed: as_in_run_file("--seed", request.seed, run.seed)?,
            concurrency: request.concurrency.unwrap_or(run.concurrency),
            clock: as_in_run_file("--clock", clock, run.clock)?,
            feedback: as_in_run_file("--feedback", request.feedback, run.feedback)?,
            serial: as_in_run_file("--serial", request.serial.then_some(true), run.serial)?,
            no_session: as_in_run_file(
                "--no-session",
                request.no_session.then_some(true),
                run.no_session,
            )?,
            shard,
            thresholds: Thresholds {
                min_success: option_as_in_run_file(
                    "--min-success",
                    request.min_success,
                    run.min_success,
                )?,
                min_pass_k: option_as_in_run_file(
                    "--min-pass-k",
                    request.min_pass_k,
                    run.min_pass_k,
                )?,
                max_lost: as_in_run_file("--max-lost", request.max_lost, run.max_lost)?,
            },
            batch: as_in_run_file("--batch", request.batch.then_some(true), run.batch)?,
        })
    }

    fn check(&self) -> Result<(), SettingsError> {
        if self.trials == 0 {
            return Err(SettingsError::Zero {
                flag: "--trials",
                counts: "",
            });
        }
        if self.concurrency == 0 {
            return Err(SettingsError::Zero {
                flag: "--concurrency",
                counts: " (trials running at once)",
            });
        }
        if let Some((k, _)) = self.thresholds.min_pass_k
            && k > u64::from(self.trials)
        {
            return Err(SettingsError::Setting {
                flag: "--min-pass-k",
                problem: format!(
                    "K = {k} is more than the {} trial(s) per model x scenario; \
                     pass^{k} needs at least {k} trials (--trials {k})",
                    self.trials
                ),
            });
        }
        Ok(())
    }
}

/// A setting given with `--resume` must agree with the run's.
fn as_in_run_file<T: PartialEq + Serialize>(
    flag: &str,
    given: Option<T>,
    recorded: T,
) -> Result<T, SettingsError> {
    match given {
        Some(value) if value != recorded => {
            Err(contradiction(flag, shown(&value), shown(&recorded)))
        }
        _ => Ok(recorded),
    }
}

fn option_as_in_run_file<T: PartialEq + Serialize>(
    flag: &str,
    given: Option<T>,
    recorded: Option<T>,
) -> Result<Option<T>, SettingsError> {
    match (given, recorded) {
        (Some(value), None) => Err(contradiction(flag, shown(&value), "none")),
        (Some(value), Some(recorded)) => as_in_run_file(flag, Some(value), recorded).map(Some),
        (None, recorded) => Ok(recorded),
    }
}

pub(super) fn contradiction(
    setting: &str,
    given: impl std::fmt::Display,
    recorded: impl std::fmt::Display,
) -> SettingsError {
    SettingsError::Contradicts {
        setting: setting.to_owned(),
        given: given.to_string(),
        recorded: recorded.to_string(),
    }
}

/// A setting as a person would type it (`real`, `3`, `[3,0.8]`).
fn shown(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// Two spellings of one path (`scenarios` and `./scenarios/`).
fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.components().eq(b.components()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(trials: u32, clock: &str) -> RunFile {
        serde_json::from_value(serde_json::json!({
            "toolgauge": "0", "suite": ["scenarios/starter"], "trials": trials, "seed": 7,
            "concurrency": 4, "clock": clock, "feedback": "pointer-list", "serial": false,
            "shard": null, "min_success": null, "min_pass_k": null, "models": [], "scenarios": []
        }))
        .unwrap()
    }

    #[test]
    fn a_new_run_takes_the_defaults_and_live_models_take_the_real_clock() {
        let request = RunRequest::default();
        let settings = Settings::resolve(&request, None, false).unwrap();
        assert_eq!(
            (settings.trials, settings.seed, settings.concurrency),
            (DEFAULT_TRIALS, DEFAULT_SEED, DEFAULT_CONCURRENCY)
        );
        assert_eq!(settings.clock, Clock::Virtual);
        let asked_virtual = RunRequest {
            clock: Some(Clock::Virtual),
            ..RunRequest::default()
        };
        let live = Settings::resolve(&asked_virtual, None, true).unwrap();
        assert_eq!(live.clock, Clock::Real);
    }

    #[test]
    fn a_resumed_run_keeps_its_settings_and_refuses_a_contradicting_flag() {
        let run = recorded(5, "real");
        let same = RunRequest {
            trials: Some(5),
            ..RunRequest::default()
        };
        let settings = Settings::resolve(&same, Some(&run), false).unwrap();
        assert_eq!((settings.trials, settings.seed), (5, 7));
        assert_eq!(settings.clock, Clock::Real);
        let other = RunRequest {
            trials: Some(6),
            ..RunRequest::default()
        };
        let error = Settings::resolve(&other, Some(&run), false).unwrap_err();
        assert!(
            matches!(&error, SettingsError::Contradicts { setting, given, recorded }
                if setting == "--trials" && given == "6" && recorded == "5"),
            "{error}"
        );
        // Only the concurrency may change: it does not change results.
        let faster = RunRequest {
            concurrency: Some(64),
            ..RunRequest::default()
        };
        assert_eq!(
            Settings::resolve(&faster, Some(&run), false)
                .unwrap()
                .concurrency,
            64
        );
    }

    #[test]
    fn impossible_settings_are_refused_before_anything_runs() {
        let zero = RunRequest {
            trials: Some(0),
            ..RunRequest::default()
        };
        assert!(matches!(
            Settings::resolve(&zero, None, false),
            Err(SettingsError::Zero {
                flag: "--trials",
                ..
            })
        ));
        let pass_k = RunRequest {
            trials: Some(2),
            min_pass_k: Some((3, 0.5)),
            ..RunRequest::default()
        };
        assert!(matches!(
            Settings::resolve(&pass_k, None, false),
            Err(SettingsError::Setting {
                flag: "--min-pass-k",
                ..
            })
        ));
        let rate = RunRequest {
            max_lost: Some(1.5),
            ..RunRequest::default()
        };
        assert!(matches!(
            Settings::resolve(&rate, None, false),
            Err(SettingsError::Setting {
                flag: "--max-lost",
                ..
            })
        ));
    }
}
