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

/// A run as asked for, read from the command line by clap (each field's
/// doc is its `--help`): every setting left `None` takes its default (or,
/// resuming, the run's own).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunRequest {
    /// Folders of scenario files (read recursively; `models/` and
    /// `examples/` are skipped), or scenario files, run as one suite. With
    /// `--resume`, the run's own suites.
    #[arg(value_name = "SUITE", required_unless_present = "resume")]
    pub suites: Vec<PathBuf>,
    /// Model files, or folders of them. Default: the nearest models/ folder
    /// in SUITE or above it.
    #[arg(long = "models", value_name = "PATH")]
    pub models: Vec<PathBuf>,
    /// A live model file that may play a scenario's simulated user, which
    /// names it by its name in `task.user.model`; it is not measured. A
    /// suite may name no key of yours otherwise: a model file inside it
    /// that plays the user must carry no `api_key_env`.
    #[arg(long = "user-model", value_name = "FILE")]
    pub user_models: Vec<PathBuf>,
    /// An OpenAI-compatible chat model (a model file, kind openai) that
    /// judges for the scenarios' judging servers (`"judge": true`: tau2's
    /// NL assertions). Its endpoint and key go only to judging servers
    /// that `toolgauge import tau2` wrote on this machine or that
    /// --judge-server names, each named when the run starts; a suite
    /// that marks any other server a judge is refused.
    #[arg(long = "judge-model", value_name = "FILE")]
    pub judge_model: Option<PathBuf>,
    /// A judging server that may take the judge though `import tau2` did
    /// not write it: its command as the scenario writes it, words joined
    /// by one space (or its URL). Repeatable.
    #[arg(
        long = "judge-server",
        value_name = "COMMAND",
        requires = "judge_model"
    )]
    pub judge_servers: Vec<String>,
    /// Judge each conversation N times, to report how often the verdict
    /// flips [default: 1]; the first verdict counts.
    #[arg(long = "judge-repeats", value_name = "N", requires = "judge_model",
          value_parser = clap::value_parser!(u32).range(1..=20),
          default_value = "1", hide_default_value = true)]
    pub judge_repeats: u32,
    /// Trials per model x scenario [default: 20].
    #[arg(long)]
    pub trials: Option<u32>,
    /// Seed of every random choice [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Trials running at once [default: 64]. The only setting `--resume`
    /// lets change: it does not change results.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// `virtual`: simulated latency costs no wall time and timings are
    /// exact; `real`: wall time [default: virtual].
    #[arg(long, value_enum)]
    pub clock: Option<Clock>,
    /// How errors are worded for the model [default: pointer-list].
    #[arg(long, value_enum)]
    pub feedback: Option<FeedbackStyle>,
    /// Run every call of a turn alone, one after the other.
    #[arg(long)]
    pub serial: bool,
    /// Report folder. Default: reports/<run-id>/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into an `--out` folder that already holds a run, replacing it.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Exit 1 when any model x scenario succeeds less often than this.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub min_success: Option<f64>,
    /// Exit 1 when pass^K of any model x scenario is under RATE.
    #[arg(long, value_name = "K:RATE", value_parser = super::flag_values::parse_pass_k)]
    pub min_pass_k: Option<(u64, f64)>,
    /// The share of a model x scenario's trials it may lose to
    /// infrastructure (transport errors, replies not of the provider's
    /// format, tools that cannot run) before the run fails [default: 0,
    /// any lost trial fails the run].
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub max_lost: Option<f64>,
    /// Run the K-th of N deterministic parts (1-based); `auto/N` takes K
    /// from a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (0-based) + 1.
    #[arg(long, value_name = "K/N", value_parser = super::flag_values::parse_shard)]
    pub shard: Option<Shard>,
    /// Save every live exchange (request and response, keys redacted) in DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer live models from a recording in DIR: no network, no keys.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// Continue a killed run in DIR with the configuration in DIR/run.json:
    /// trials already in DIR/trials.csv are kept, the rest are run; the
    /// files come out as from one run. A flag that contradicts run.json is
    /// an error.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "force"])]
    pub resume: Option<PathBuf>,
    /// Do not write session.jsonl (every call and result of every trial):
    /// for pure throughput runs.
    #[arg(long)]
    pub no_session: bool,
    /// Probe every live model's endpoint first (`toolgauge doctor`; the
    /// findings are kept in the run folder as doctor-<model>.json and
    /// reused on --resume) and warn when tool results or errors do not
    /// reach the model.
    #[arg(long)]
    pub doctor: bool,
    /// `--max-cost`, `--max-tokens`: this invocation's spending limits
    /// (a resumed run is given its own).
    #[command(flatten)]
    pub budget: super::BudgetLimits,
    /// Send live models' requests through their providers' batch APIs
    /// (OpenAI Batch, Anthropic Message Batches, Gemini batch mode), at
    /// half price: trials under way form a round, sent as one batch,
    /// polled until it ends; a multi-turn trial asks once per round.
    /// Costs are at the batch rate, batch ids in DIR/batches.jsonl, and
    /// `--resume` follows a batch already submitted. Replies come whole
    /// (no streaming); --concurrency (default 1000 here) bounds a round.
    #[arg(long)]
    pub batch: bool,
    /// Export every trial as OpenTelemetry GenAI spans to this OTLP
    /// HTTP/protobuf collector (a base URL, `/v1/traces` added, or the
    /// traces URL); default `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. A collector that fails loses spans,
    /// never a trial. `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`
    /// emits the conventions' v1.41.0 names (default v1.36.0).
    #[arg(long, value_name = "ENDPOINT")]
    pub otlp: Option<String>,
    /// Write the spans as OTLP JSON lines to PATH (a collector file
    /// exporter's format), for CI artefacts and `toolgauge import otel`.
    #[arg(long, value_name = "PATH")]
    pub otlp_file: Option<PathBuf>,
    /// Put message contents, call arguments and results in the spans (the
    /// conventions' opt-in; never credentials: they are never in the log).
    #[arg(long)]
    pub otlp_content: bool,
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
    /// `trials` trials, every other setting at the library's default: seed
    /// 1, 64 at once, the virtual clock, calls in parallel worded
    /// pointer-list, no session log, no shard, no thresholds; each set
    /// apart with `Settings { field, ..Settings::of_trials(n) }`.
    pub fn of_trials(trials: u32) -> Settings {
        Settings {
            suite: SuitePaths(Vec::new()),
            trials,
            seed: DEFAULT_SEED,
            concurrency: DEFAULT_CONCURRENCY,
            clock: Clock::Virtual,
            feedback: FeedbackStyle::PointerList,
            serial: false,
            no_session: true,
            shard: None,
            batch: false,
            thresholds: Thresholds::default(),
        }
    }

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
        // Live models need the real clock, whatever was asked: the
        // request as this run can take it, lent to both readings.
        let request = &RunRequest {
            clock: request.clock.map(|clock| match clock {
                Clock::Virtual if !live_network => Clock::Virtual,
                _ => Clock::Real,
            }),
            ..request.clone()
        };
        let settings = match recorded {
            None => Settings::asked(request, live_network),
            Some(recorded) => Settings::recorded(request, recorded)?,
        };
        settings.check()?;
        Ok(settings)
    }

    fn asked(request: &RunRequest, live_network: bool) -> Settings {
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
            clock: request.clock.unwrap_or(if live_network {
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

    fn recorded(request: &RunRequest, recorded: &Settings) -> Result<Settings, SettingsError> {
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
        for (flag, given, kept) in HELD {
            if let Some(given) = given(request)
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
        // A row whose setting is not written here: set it above, so that
        // run.json writes it and this test sees it.
        assert_eq!(
            kept.len(),
            held.len(),
            "run.json writes {kept:?}; HELD holds {held:?}"
        );
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
