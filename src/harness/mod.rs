//! The runner: models x scenarios x trials, the self-correction loop,
//! the virtual or real clock, concurrency and sharding. Finished trials go
//! to reporters in a fixed order (model, scenario, trial) whatever order
//! they finish in, so seeded runs write identical files.

mod progress;

use std::time::Duration;

use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use crate::call::ToolResult;
use crate::live::recording::Position;
use crate::live::{Conversation, LiveError, Usage};
use crate::metrics::{AttemptRecord, CellStats, TrialRecord};
use crate::model::Model;
use crate::pipeline::feedback::{FeedbackStyle, restyle};
use crate::pipeline::{ExecOptions, Pipeline};
use crate::scenario::{Scenario, Verdict};
use crate::tool::ToolDef;

pub use progress::ProgressMode;

/// The failure kind of a trial whose request failed after its retries.
pub const TRANSPORT_ERROR: &str = "transport_error";

/// Which clock latencies run on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// tokio's paused clock: simulated latency costs no wall time and
    /// timings are exact.
    #[default]
    Virtual,
    Real,
}

/// Which part of the jobs this process runs: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (k, n) = text.split_once('/').ok_or("--shard takes K/N, e.g. 1/4")?;
        let index: u32 = k
            .trim()
            .parse()
            .map_err(|_| format!("bad shard index {k:?}"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("bad shard count {n:?}"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("--shard {text}: K must be between 1 and N"));
        }
        Ok(Shard { index, count })
    }

    fn includes(self, job: u64) -> bool {
        job % u64::from(self.count) == u64::from(self.index - 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Everything a run needs, validated.
#[derive(Debug)]
pub struct RunPlan {
    pub scenarios: Vec<Scenario>,
    pub models: Vec<Model>,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    pub feedback: FeedbackStyle,
    pub exec: ExecOptions,
    pub shard: Option<Shard>,
}

/// A job: one trial of one model on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Job {
    pub model: usize,
    pub scenario: usize,
    pub trial: u32,
}

impl RunPlan {
    /// Every job of this run (this shard), in report order.
    pub fn jobs(&self) -> impl Iterator<Item = Job> + '_ {
        let (models, scenarios, trials) = (self.models.len(), self.scenarios.len(), self.trials);
        (0..models)
            .flat_map(move |model| {
                (0..scenarios).flat_map(move |scenario| {
                    (0..trials).map(move |trial| Job {
                        model,
                        scenario,
                        trial,
                    })
                })
            })
            .filter(|job| self.in_shard(*job))
    }

    /// Is `job` one of this run's (this shard's) jobs?
    pub fn includes(&self, job: Job) -> bool {
        job.model < self.models.len()
            && job.scenario < self.scenarios.len()
            && job.trial < self.trials
            && self.in_shard(job)
    }

    /// Shards take every N-th job of the report order.
    fn in_shard(&self, job: Job) -> bool {
        self.shard.is_none_or(|shard| {
            let index = (job.model * self.scenarios.len() + job.scenario) as u64
                * u64::from(self.trials)
                + u64::from(job.trial);
            shard.includes(index)
        })
    }

    /// The seed of one trial: independent of scheduling and of other trials.
    pub fn trial_seed(&self, job: Job) -> u64 {
        let mut hash = self.seed ^ 0x9e37_79b9_7f4a_7c15;
        for part in [
            self.models[job.model].name(),
            self.scenarios[job.scenario].name.as_str(),
        ] {
            for byte in part.bytes().chain([0xff]) {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        splitmix(hash ^ u64::from(job.trial))
    }

    /// How many attempts a trial of this model on this scenario gets: the
    /// scenario's `max_retries`, unless the model answers only once.
    pub fn max_attempts(&self, model: usize, scenario: usize) -> u32 {
        let allowed = self.scenarios[scenario].max_retries;
        self.models[model]
            .max_attempts()
            .map_or(allowed, |m| m.min(allowed))
    }

    pub fn cell_stats(&self) -> Vec<Vec<CellStats>> {
        (0..self.models.len())
            .map(|m| {
                (0..self.scenarios.len())
                    .map(|s| CellStats::new(self.max_attempts(m, s)))
                    .collect()
            })
            .collect()
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Receives finished trials in report order.
pub trait TrialSink {
    /// Called once per trial, in job order. A replayed trial (from
    /// `--resume`) comes through here too.
    fn trial(&mut self, plan: &RunPlan, record: &TrialRecord) -> std::io::Result<()>;
}

/// Where already-finished trials come from when resuming: records in job
/// order, as an earlier run wrote them.
pub type Replay<'a> = Box<dyn Iterator<Item = TrialRecord> + 'a>;

/// Why a run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A fault that stops the run (a replayed request the recording does
    /// not hold).
    #[error("{0}")]
    Trial(String),
    /// Stopped on request (Ctrl-C): every finished trial was handed to the
    /// sink first.
    #[error("interrupted after {finished} of {total} trial(s)")]
    Interrupted { finished: u64, total: u64 },
}

/// Run every job, feeding finished trials to `sink` in job order.
pub fn run(
    plan: &RunPlan,
    sink: &mut dyn TrialSink,
    replay: Option<Replay<'_>>,
    progress: ProgressMode,
) -> Result<(), RunError> {
    run_until(plan, sink, replay, progress, std::future::pending())
}

/// [`run`], stopping early when `stop` completes (e.g. on Ctrl-C): the
/// trials finished by then are all in the sink, in job order, so a
/// `--resume` loses nothing.
pub fn run_until(
    plan: &RunPlan,
    sink: &mut dyn TrialSink,
    mut replay: Option<Replay<'_>>,
    progress: ProgressMode,
    stop: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let runtime = match plan.clock {
        // I/O for the Ctrl-C signal; the clock stays paused.
        Clock::Virtual => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?,
        // I/O for live models' HTTP.
        Clock::Real => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
    };
    let total = plan.jobs().count() as u64;
    let bar = progress::Progress::new(progress, plan, total);
    let mut pending_replay = replay.as_mut().and_then(|r| r.next());
    let mut done = 0;
    runtime.block_on(async {
        let jobs = plan.jobs().map(|job| {
            // A trial already recorded is replayed, not run again.
            let replayed = match &pending_replay {
                Some(record)
                    if (record.model, record.scenario, record.trial)
                        == (job.model, job.scenario, job.trial) =>
                {
                    let record = pending_replay.take();
                    pending_replay = replay.as_mut().and_then(|r| r.next());
                    record
                }
                _ => None,
            };
            async move {
                match replayed {
                    Some(record) => Ok(record),
                    None => run_trial(plan, job).await,
                }
            }
        });
        let mut finished = stream::iter(jobs).buffered(plan.concurrency.max(1));
        let mut stop = std::pin::pin!(stop);
        loop {
            let record = tokio::select! {
                // A stop wins over a trial that is ready too: deterministic.
                biased;
                () = &mut stop => {
                    return Err(RunError::Interrupted { finished: done, total });
                }
                next = finished.next() => match next {
                    Some(record) => record.map_err(RunError::Trial)?,
                    None => break,
                },
            };
            sink.trial(plan, &record)?;
            done += 1;
            bar.trial(record.model, record.success());
        }
        Ok::<(), RunError>(())
    })?;
    bar.finish();
    Ok(())
}

/// One trial: ask, parse, validate, execute, return, until success or out
/// of attempts. `Err` is a fault that stops the run (a replayed request
/// the recording does not hold).
pub async fn run_trial(plan: &RunPlan, job: Job) -> Result<TrialRecord, String> {
    let scenario = &plan.scenarios[job.scenario];
    let model = &plan.models[job.model];
    let mut model_trial = model.start_trial(plan.trial_seed(job));
    let tools = scenario
        .registry
        .new_state_seeded(splitmix(plan.trial_seed(job) ^ 0x746f_6f6c));
    let pipeline = Pipeline::new(scenario.registry.clone(), plan.exec);
    let mut feedback: Vec<ToolResult> = Vec::new();
    let max_attempts = plan.max_attempts(job.model, job.scenario);
    let mut attempts = Vec::with_capacity(max_attempts as usize);
    let live = model.live();
    let mut conversation = live.map(|_| Conversation::new(model.provider(), &scenario.prompt));
    let tool_defs: Vec<&ToolDef> = match live {
        Some(_) => scenario.registry.definitions().collect(),
        None => Vec::new(),
    };

    for attempt in 1..=max_attempts {
        let asked = Instant::now();
        // A live reply also comes as JSON, for the conversation.
        let (body, usage, live_json) = match (live, &conversation) {
            (Some(live), Some(conversation)) => {
                let position = Position {
                    model: model.name().to_owned(),
                    scenario: scenario.name.clone(),
                    trial: job.trial,
                    attempt,
                };
                match live.respond(conversation, &tool_defs, position).await {
                    Ok(reply) => (reply.body, reply.usage, reply.json),
                    Err(LiveError::NotRecorded(message)) => return Err(message),
                    Err(LiveError::Transport(error)) => {
                        // Not the model's failure: the trial ends here and
                        // is counted apart; the run goes on.
                        eprintln!("{} / {}: {error}", model.name(), scenario.name);
                        attempts.push(AttemptRecord {
                            attempt,
                            success: false,
                            failures: vec![TRANSPORT_ERROR],
                            reason: None,
                            calls: 0,
                            model_time: asked.elapsed(),
                            tool_time: Duration::ZERO,
                            serial_time: Duration::ZERO,
                            ideal_time: Duration::ZERO,
                            usage: Usage::default(),
                        });
                        break;
                    }
                }
            }
            _ => {
                let reply = model.respond(&mut model_trial, scenario, attempt, &feedback);
                if !reply.latency.is_zero() {
                    tokio::time::sleep(reply.latency).await;
                }
                (reply.body, Usage::default(), None)
            }
        };
        let model_time = asked.elapsed();
        let record = match model.provider().parse_response(&body) {
            Err(_) => {
                feedback.clear();
                AttemptRecord {
                    attempt,
                    success: false,
                    failures: vec!["bad_response"],
                    reason: None,
                    calls: 0,
                    model_time,
                    tool_time: Duration::ZERO,
                    serial_time: Duration::ZERO,
                    ideal_time: Duration::ZERO,
                    usage,
                }
            }
            Ok(parsed) => {
                let batch = pipeline.run_with(&parsed.calls, &tools).await;
                let mut failures: Vec<&'static str> = batch
                    .results
                    .iter()
                    .filter_map(|r| r.error_kind.map(|k| k.as_str()))
                    .collect();
                if failures.is_empty() {
                    let verdict = scenario.expectation.verdict(&parsed.calls);
                    if verdict != Verdict::Match {
                        failures.push(verdict.as_str());
                    }
                }
                // Under BFCL rules a failed attempt also says why in BFCL's
                // words, whichever stage caught it.
                let reason = if failures.is_empty() {
                    None
                } else {
                    scenario
                        .expectation
                        .reason(&parsed.calls)
                        .map(|r| r.as_str())
                };
                let record = AttemptRecord {
                    attempt,
                    success: failures.is_empty(),
                    failures,
                    reason,
                    calls: parsed.calls.len() as u32,
                    model_time,
                    tool_time: batch.makespan,
                    serial_time: batch.serial_makespan(),
                    ideal_time: batch.ideal_makespan,
                    usage,
                };
                feedback = batch
                    .results
                    .into_iter()
                    .map(|mut result| {
                        result.content = restyle(&result.content, result.error_kind, plan.feedback);
                        result
                    })
                    .collect();
                record
            }
        };
        if let (Some(conversation), Some(reply)) = (&mut conversation, &live_json) {
            conversation.push_turn(reply, &feedback);
        }
        let success = record.success;
        attempts.push(record);
        if success {
            break;
        }
    }
    Ok(TrialRecord {
        model: job.model,
        scenario: job.scenario,
        trial: job.trial,
        attempts,
    })
}
