//! What a run is asked to do ([`RunRequest`], the command line's flags
//! parsed) and the settings it resolves to ([`Settings`]): defaults
//! filled in, or, when resuming, the run's own run.json, which a flag may
//! repeat but not contradict.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::SuitePaths;
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
/// run's own run.json, which holds them whole (in this order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub suite: SuitePaths,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    pub feedback: FeedbackStyle,
    pub serial: bool,
    /// Run with `--no-session`: a resume writes no log either.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_session: bool,
    pub shard: Option<Shard>,
    /// Live models answer through their providers' batch APIs; a resume
    /// follows its batches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    #[serde(flatten)]
    pub thresholds: Thresholds,
}

impl Settings {
    /// `live_network`: the run talks to live models, so it needs the real
    /// clock whatever was asked.
    pub fn resolve(
        request: &RunRequest,
        recorded: Option<&Settings>,
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
            Some(recorded) => Settings::recorded(request, clock, recorded)?,
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
        recorded: &Settings,
    ) -> Result<Settings, SettingsError> {
        let same = request.suites.len() == recorded.suite.0.len()
            && request
                .suites
                .iter()
                .zip(&recorded.suite.0)
                .all(|(a, b)| same_path(a, b));
        if !request.suites.is_empty() && !same {
            let given = SuitePaths(request.suites.clone());
            return Err(contradiction("SUITE", given, &recorded.suite));
        }
        let request = RunRequest {
            clock,
            ..request.clone()
        };
        for (flag, given, kept) in HELD {
            if let Some(given) = given(&request)
                && given != kept(recorded)
            {
                return Err(contradiction(flag, shown(&given), shown(&kept(recorded))));
            }
        }
        Ok(Settings {
            concurrency: request.concurrency.unwrap_or(recorded.concurrency),
            ..recorded.clone()
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

/// A setting `--resume` holds to the run's: its flag, what the flags
/// gave (none: not given) and what the run kept, each as run.json writes
/// it. `--concurrency` alone may change: it does not change results.
type Held = (
    &'static str,
    fn(&RunRequest) -> Option<Value>,
    fn(&Settings) -> Value,
);

const HELD: [Held; 11] = [
    ("--trials", |r| given(r.trials), |s| json(&s.trials)),
    ("--seed", |r| given(r.seed), |s| json(&s.seed)),
    ("--clock", |r| given(r.clock), |s| json(&s.clock)),
    ("--feedback", |r| given(r.feedback), |s| json(&s.feedback)),
    (
        "--serial",
        |r| given(r.serial.then_some(true)),
        |s| json(&s.serial),
    ),
    (
        "--no-session",
        |r| given(r.no_session.then_some(true)),
        |s| json(&s.no_session),
    ),
    ("--shard", |r| given(r.shard), |s| json(&s.shard)),
    (
        "--min-success",
        |r| given(r.min_success),
        |s| json(&s.thresholds.min_success),
    ),
    (
        "--min-pass-k",
        |r| given(r.min_pass_k),
        |s| json(&s.thresholds.min_pass_k),
    ),
    (
        "--max-lost",
        |r| given(r.max_lost),
        |s| json(&s.thresholds.max_lost),
    ),
    (
        "--batch",
        |r| given(r.batch.then_some(true)),
        |s| json(&s.batch),
    ),
];

fn json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn given(value: Option<impl Serialize>) -> Option<Value> {
    value.map(|v| json(&v))
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

/// A setting as a person would type it (`real`, `3`, `[3,0.8]`, `none`).
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "none".to_owned(),
        other => other.to_string(),
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
    use crate::harness::run_file::RunFile;

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
        let settings = Settings::resolve(&same, Some(&run.settings), false).unwrap();
        assert_eq!((settings.trials, settings.seed), (5, 7));
        assert_eq!(settings.clock, Clock::Real);
        let other = RunRequest {
            trials: Some(6),
            ..RunRequest::default()
        };
        let error = Settings::resolve(&other, Some(&run.settings), false).unwrap_err();
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
            Settings::resolve(&faster, Some(&run.settings), false)
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

    #[test]
    fn every_setting_run_json_keeps_is_held_to_on_resume() {
        // run.json's settings are Settings whole: each field but the suite
        // (compared as paths) and the concurrency (free to change) has
        // its flag in HELD, so a setting added to Settings without one
        // fails here rather than resuming a run under other settings.
        let settings = Settings::resolve(&RunRequest::default(), None, false).unwrap();
        let Value::Object(fields) = serde_json::to_value(Settings {
            no_session: true,
            batch: true,
            thresholds: Thresholds {
                max_lost: 0.5,
                ..Thresholds::default()
            },
            ..settings
        })
        .unwrap() else {
            panic!("settings are an object");
        };
        let held: Vec<String> = HELD
            .iter()
            .map(|(flag, _, _)| flag.trim_start_matches("--").replace('-', "_"))
            .collect();
        let kept: Vec<&String> = fields
            .keys()
            .filter(|k| !matches!(k.as_str(), "suite" | "concurrency"))
            .collect();
        assert_eq!(kept.len(), held.len(), "{kept:?} against {held:?}");
        for key in kept {
            assert!(
                held.contains(key),
                "{key} is kept in run.json but --resume does not hold it"
            );
        }
    }

    #[test]
    fn run_json_holds_the_settings_whole_in_their_order() {
        let run = recorded(5, "real");
        let written = serde_json::to_string(&run).unwrap();
        assert!(
            written.starts_with(
                "{\"toolgauge\":\"0\",\"suite\":\"scenarios/starter\",\"trials\":5,\"seed\":7,\
                 \"concurrency\":4,\"clock\":\"real\",\"feedback\":\"pointer-list\",\"serial\":false,\
                 \"shard\":null,\"min_success\":null,\"min_pass_k\":null,\"models\":[]"
            ),
            "{written}"
        );
        let read: RunFile = serde_json::from_str(&written).unwrap();
        assert_eq!(read, run);
    }

    #[test]
    fn a_boolean_or_threshold_flag_against_the_run_is_named_with_both_values() {
        let run = recorded(5, "real");
        let serial = RunRequest {
            serial: true,
            ..RunRequest::default()
        };
        let error = Settings::resolve(&serial, Some(&run.settings), false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--resume: --serial true contradicts the run being resumed, which has false \
             (run.json); leave --serial out to continue the run as it was"
        );
        let threshold = RunRequest {
            min_success: Some(0.9),
            ..RunRequest::default()
        };
        let error = Settings::resolve(&threshold, Some(&run.settings), false).unwrap_err();
        assert!(
            error.to_string().contains("--min-success 0.9 contradicts"),
            "{error}"
        );
        assert!(error.to_string().contains("which has none"), "{error}");
    }
}
