//! The runner: models x scenarios x trials, the self-correction loop,
//! the virtual or real clock, concurrency and sharding. Each turn of a
//! trial goes through the pipeline whole ([`Pipeline::turn`]); finished
//! trials go to the reporters as events in a fixed order (model, scenario,
//! trial) whatever order they finish in, so seeded runs write identical
//! files. `merge` replays shards' trials through the same reporters;
//! `run_file` is run.json.

mod budget;
pub mod merge;
mod models;
pub mod run_file;
mod settings;
mod setup;
mod setup_error;
mod shard;
mod task;
mod transcript;
mod trial;

use std::sync::Arc;

use futures_util::{FutureExt, StreamExt, stream};

use crate::metrics::TrialOutcome;
use crate::model::Model;
use crate::pipeline::{ExecOptions, FeedbackStyle};
use crate::report::{
    FinishedTrial, ModelInfo, Notice, Reporters, RunEvent, RunInfo, ScenarioInfo, Thresholds,
};
use crate::scenario::{Scenario, Task};

pub use budget::{Admission, Budget, BudgetLimits, Spent};
pub use settings::{RunRequest, Settings};
pub use setup::{Notes, PreparedRun, RunEnding};
pub use setup_error::{ForeignTrial, SetupError};
pub use shard::{Shard, ShardError};
pub use trial::Notices;

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

/// Everything a run needs, validated.
#[derive(Debug)]
pub struct RunPlan {
    pub scenarios: Vec<Scenario>,
    pub models: Vec<Arc<dyn Model>>,
    pub trials: u32,
    pub seed: u64,
    pub concurrency: usize,
    pub clock: Clock,
    /// How calls run and how their errors are worded.
    pub exec: ExecOptions,
    /// By model: the feedback style its file names, over `exec`'s.
    pub model_feedback: Vec<Option<FeedbackStyle>>,
    /// By model: it takes images (its `api.images`), which tools' results
    /// then carry as image parts.
    pub model_images: Vec<bool>,
    pub shard: Option<Shard>,
    /// Record every turn of every trial (session.jsonl).
    pub session_log: bool,
    /// By scenario: the live model that plays its simulated user, when a
    /// model does (none given: none does).
    pub users: Vec<Option<Arc<crate::model::live::LiveModel>>>,
    /// `--max-cost`, `--max-tokens`: what the models' requests may spend.
    pub budget: Option<Arc<Budget>>,
    /// `--batch`: the ledger of the batches sent, told when the run ends.
    pub batches: Option<Arc<crate::batch::Ledger>>,
}

/// A job: one trial of one model on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Job {
    pub model: usize,
    pub scenario: usize,
    pub trial: u32,
}

impl RunPlan {
    /// `trials` trials of each of `models` on each of `scenarios`: seed 1,
    /// 64 at once, the virtual clock, calls in parallel worded
    /// pointer-list, no session log, no shard, no budget; each field set
    /// apart with `RunPlan { field, ..RunPlan::new(..) }`.
    pub fn new(scenarios: Vec<Scenario>, models: Vec<Arc<dyn Model>>, trials: u32) -> RunPlan {
        RunPlan {
            scenarios,
            models,
            trials,
            seed: 1,
            concurrency: 64,
            clock: Clock::Virtual,
            exec: ExecOptions::default(),
            model_feedback: Vec::new(),
            model_images: Vec::new(),
            shard: None,
            session_log: false,
            users: Vec::new(),
            budget: None,
            batches: None,
        }
    }

    /// How `model`'s calls run and how its errors are worded.
    pub fn exec_of(&self, model: usize) -> ExecOptions {
        ExecOptions {
            feedback: self.feedback_of(model),
            images: self.model_images.get(model).copied().unwrap_or(false),
            ..self.exec
        }
    }

    /// The run's feedback style, with each model that has its own:
    /// `pointer-list (qwen-bare: bare)`.
    fn feedback_text(&self) -> String {
        let own: Vec<String> = (0..self.models.len())
            .filter(|&m| self.model_feedback.get(m).copied().flatten().is_some())
            .map(|m| {
                format!(
                    "{}: {}",
                    self.models[m].name(),
                    file_name(&self.feedback_of(m))
                )
            })
            .collect();
        let default = file_name(&self.exec.feedback);
        match own.len() {
            0 => default,
            n if n == self.models.len() => own.join(", "),
            _ => format!("{default} ({})", own.join(", ")),
        }
    }

    /// `job`'s place among its model's jobs in the report order: a live
    /// model serves the trial it started first before starting another.
    pub fn order_of(&self, job: Job) -> u64 {
        job.scenario as u64 * u64::from(self.trials) + u64::from(job.trial)
    }

    fn feedback_of(&self, model: usize) -> FeedbackStyle {
        self.model_feedback
            .get(model)
            .copied()
            .flatten()
            .unwrap_or(self.exec.feedback)
    }

    /// Whether a trial waits on sockets or processes (a real tool, a
    /// simulated user played by a live model): the runtime then needs
    /// tokio's I/O driver.
    fn needs_io_driver(&self) -> bool {
        self.scenarios.iter().any(|s| s.registry.has_real_tools())
            || self.users.iter().any(Option::is_some)
    }

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

    /// The seed a live model sends for a trial where its `seed` is
    /// `"trial"`: the same in every model's arm (the run's seed, the
    /// scenario, the trial), so paired arms draw alike and differ by what
    /// they were shown.
    pub fn shared_seed(&self, job: Job) -> u64 {
        let mut hash = self.seed ^ 0x5eed_5eed_5eed_5eed;
        for byte in self.scenarios[job.scenario].name.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
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

    /// What reporters know of this run.
    pub fn info(&self, thresholds: Thresholds) -> RunInfo {
        RunInfo {
            models: self
                .models
                .iter()
                .map(|m| ModelInfo {
                    name: m.name().to_owned(),
                    prices: m.prices(),
                    max_attempts: m.max_attempts(),
                })
                .collect(),
            scenarios: scenario_infos(&self.scenarios),
            trials: self.trials,
            seed: self.seed,
            feedback: self.feedback_text(),
            clock: file_name(&self.clock),
            thresholds,
            batch: self.models.iter().any(|m| m.batched()),
        }
    }
}

/// What reporters know of each scenario.
pub fn scenario_infos(scenarios: &[Scenario]) -> Vec<ScenarioInfo> {
    scenarios
        .iter()
        .map(|s| ScenarioInfo {
            name: s.name.clone(),
            max_attempts: if s.task.is_some() { 1 } else { s.max_retries },
            task_milestones: s.task.as_ref().map(Task::all_milestones),
            task_user_turns: s
                .task
                .as_ref()
                .map(|t| t.user_turns() as u32)
                .filter(|n| *n > 1),
            min_success: s.min_success,
            tags: s.tags.clone(),
        })
        .collect()
}

/// The name a setting has in files (`pointer-list`, `virtual`).
fn file_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Where already-finished trials come from when resuming: records in job
/// order, as an earlier run wrote them.
pub type Replay<'a> = Box<dyn Iterator<Item = TrialOutcome> + 'a>;

/// Why a run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A reporter could not write.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A replayed request the recording does not hold: the run stops.
    #[error(transparent)]
    NotRecorded(#[from] crate::model::NotRecorded),
    /// A batch could not be followed to its end: every finished trial was
    /// handed to the reporters first, and `--resume` follows the batch.
    #[error(transparent)]
    BatchUnfinished(crate::batch::Unfinished),
    /// Stopped on request (Ctrl-C): every finished trial was handed to the
    /// reporters first.
    #[error("interrupted after {finished} of {total} trial(s)")]
    Interrupted { finished: u64, total: u64 },
    /// The next request would have passed the budget: every finished
    /// trial was handed to the reporters first.
    #[error("the budget was spent after {finished} of {total} trial(s)")]
    BudgetSpent {
        finished: u64,
        total: u64,
        spent: Spent,
        /// What was spent on the trials it cut, and how many they are.
        cut: (Spent, usize),
    },
}

/// Run every job, sending each finished trial to the reporters in job
/// order, then the run's end.
pub fn run(
    plan: &RunPlan,
    reporters: &mut Reporters<'_>,
    replay: Option<Replay<'_>>,
) -> Result<(), RunError> {
    run_until(plan, reporters, replay, std::future::pending())
}

/// [`run`], stopping early when `stop` completes (e.g. on Ctrl-C): the
/// trials finished by then are all with the reporters, in job order, so a
/// `--resume` loses nothing. The run's end is not sent then.
pub fn run_until(
    plan: &RunPlan,
    reporters: &mut Reporters<'_>,
    mut replay: Option<Replay<'_>>,
    stop: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let runtime = runtime_for(plan)?;
    let total = plan.jobs().count() as u64;
    let mut pending_replay = replay.as_mut().and_then(|r| r.next());
    let mut done = 0;
    reporters.send(RunEvent::Started { trials: total })?;
    // What trials say as they go, heard between finished trials.
    let (notices, mut heard) = tokio::sync::mpsc::unbounded_channel::<Notice>();
    let notices = &notices;
    let admission = &trials_at_once(plan);
    runtime.block_on(async {
        let jobs = plan.jobs().map(|job| {
            // A trial already recorded is replayed, not run again.
            let replayed = replayed_trial(&mut pending_replay, &mut replay, job);
            job_run(plan, job, replayed, admission, notices)
        });
        let mut finished = stream::iter(jobs).buffered(plan.concurrency.max(1));
        let mut stop = std::pin::pin!(stop);
        let mut budget_ended = std::pin::pin!(budget_ended(plan));
        let mut waiting = plan
            .batches
            .as_ref()
            .map(|l| (l.watch_running(), Vec::new()));
        loop {
            let (outcome, session) = tokio::select! {
                // A stop wins over a trial that is ready too: deterministic.
                biased;
                () = &mut stop => {
                    reporters.checkpoint()?;
                    return Err(RunError::Interrupted { finished: done, total });
                }
                () = &mut budget_ended => {
                    // The turns it let go have run: their trials are kept.
                    while let Some(Some(trial)) = finished.next().now_or_never() {
                        let (outcome, session) = trial?;
                        hand_over(plan, reporters, &outcome, &session, &mut done)?;
                    }
                    reporters.checkpoint()?;
                    return Err(budget_spent(plan, done, total));
                }
                Some(notice) = heard.recv() => {
                    reporters.send(RunEvent::Notice(&notice))?;
                    continue;
                }
                changed = batches_changed(&mut waiting) => {
                    for notice in &changed {
                        reporters.send(RunEvent::Notice(notice))?;
                    }
                    continue;
                }
                next = finished.next() => match next {
                    Some(Ok(trial)) => trial,
                    Some(Err(error)) => {
                        // What finished before the fault is kept.
                        reporters.checkpoint()?;
                        return Err(error);
                    }
                    None => break,
                },
            };
            hand_over(plan, reporters, &outcome, &session, &mut done)?;
        }
        while let Ok(notice) = heard.try_recv() {
            reporters.send(RunEvent::Notice(&notice))?;
        }
        for batch in batches_sent(plan) {
            reporters.send(RunEvent::Notice(&Notice::Batch(batch)))?;
        }
        Ok::<(), RunError>(())
    })?;
    reporters.send(RunEvent::Finished)?;
    Ok(())
}

/// The batches the run's ledger holds (this run's and those of the runs
/// it resumes), as reports tell them.
fn batches_sent(plan: &RunPlan) -> Vec<crate::report::BatchRecord> {
    let Some(ledger) = &plan.batches else {
        return Vec::new();
    };
    batch_records(ledger.entries().unwrap_or_default())
}

/// A ledger's batches as reports tell them.
pub fn batch_records(entries: Vec<crate::batch::BatchEntry>) -> Vec<crate::report::BatchRecord> {
    entries
        .into_iter()
        .map(|b| crate::report::BatchRecord {
            model: b.model,
            id: b.id,
            requests: b.requests,
            ended: b.state,
            answered: b.answered,
            failed: b.failed,
        })
        .collect()
}

/// A job as the run's window takes it: a replayed trial handed back, or
/// its trial run once its model has a slot. What the model holds for a
/// coming trial is taken now, before any trial of the window asks: a
/// batched model's round waits for it.
fn job_run<'p>(
    plan: &'p RunPlan,
    job: Job,
    replayed: Option<TrialOutcome>,
    admission: &'p [Option<tokio::sync::Semaphore>],
    notices: &'p Notices,
) -> impl Future<Output = Result<(TrialOutcome, Vec<u8>), RunError>> + 'p {
    let coming = match replayed {
        None => plan.models[job.model].trial_coming(),
        Some(_) => None,
    };
    async move {
        let _coming = coming;
        match replayed {
            Some(outcome) => Ok((outcome, Vec::new())),
            None => {
                let _under_way = match &admission[job.model] {
                    Some(slots) => Some(slots.acquire().await.expect("never closed")),
                    None => None,
                };
                run_trial(plan, job, notices).await
            }
        }
    }
}

/// One trial: a task's agent loop, or attempts until success (see
/// [`trial`]). Gives the outcome and what Record logged. `Err` is a fault
/// that stops the run.
pub async fn run_trial(
    plan: &RunPlan,
    job: Job,
    notices: &Notices,
) -> Result<(TrialOutcome, Vec<u8>), RunError> {
    match &plan.scenarios[job.scenario].task {
        Some(task) => task::run_task(plan, job, task, notices).await,
        None => trial::run_attempts(plan, job, notices).await,
    }
}

/// Per model, the trials it may have under way (in job order: the
/// semaphore is fair and the jobs are polled in order).
fn trials_at_once(plan: &RunPlan) -> Vec<Option<tokio::sync::Semaphore>> {
    plan.models
        .iter()
        .map(|m| m.trials_at_once().map(tokio::sync::Semaphore::new))
        .collect()
}

/// A finished trial to the reporters, counted.
fn hand_over(
    plan: &RunPlan,
    reporters: &mut Reporters<'_>,
    outcome: &TrialOutcome,
    session: &[u8],
    done: &mut u64,
) -> Result<(), RunError> {
    reporters.send(RunEvent::TrialFinished(FinishedTrial { outcome, session }))?;
    // Kept: what it spent is in its rows.
    if let Some(budget) = &plan.budget {
        budget.kept((outcome.model, outcome.scenario, outcome.trial));
    }
    *done += 1;
    Ok(())
}

/// The batches a run waits on, as last told: what the ledger's polls
/// found, and what the run has said of it.
type Waiting = (
    tokio::sync::watch::Receiver<Vec<crate::batch::ledger::RunningBatch>>,
    Vec<crate::batch::ledger::RunningBatch>,
);

/// A notice for each batch whose state a poll found changed since last
/// told (never without batches).
async fn batches_changed(waiting: &mut Option<Waiting>) -> Vec<Notice> {
    let Some((watch, told)) = waiting else {
        return std::future::pending().await;
    };
    if watch.changed().await.is_err() {
        *waiting = None;
        return Vec::new();
    }
    let now = watch.borrow_and_update().clone();
    let changed = now
        .iter()
        .filter(|b| !told.contains(b))
        .map(|b| Notice::BatchWaiting {
            model: b.model.clone(),
            id: b.id.clone(),
            state: b.state.clone(),
        })
        .collect();
    *told = now;
    changed
}

/// How a run the budget ended says so: what it spent, and what of that
/// went to trials it cut.
fn budget_spent(plan: &RunPlan, finished: u64, total: u64) -> RunError {
    let budget = plan.budget.as_ref();
    RunError::BudgetSpent {
        finished,
        total,
        spent: budget.map(|b| b.spent()).unwrap_or_default(),
        cut: budget.map(|b| b.cut()).unwrap_or_default(),
    }
}

/// Completes when the run's budget has ended it (never without one).
async fn budget_ended(plan: &RunPlan) {
    match &plan.budget {
        Some(budget) => budget.ended().await,
        None => std::future::pending().await,
    }
}

/// The earlier run's outcome of `job`, if that run finished it: the
/// replay is read in job order, one outcome ahead.
fn replayed_trial(
    pending: &mut Option<TrialOutcome>,
    replay: &mut Option<Replay<'_>>,
    job: Job,
) -> Option<TrialOutcome> {
    let outcome = pending.as_ref()?;
    if (outcome.model, outcome.scenario, outcome.trial) != (job.model, job.scenario, job.trial) {
        return None;
    }
    let outcome = pending.take();
    *pending = replay.as_mut().and_then(|r| r.next());
    outcome
}

/// The runtime a run's trials run on: its clock's.
fn runtime_for(plan: &RunPlan) -> std::io::Result<tokio::runtime::Runtime> {
    match plan.clock {
        // Setup puts real tools and live models on the real clock, and
        // signals are watched on a thread of their own: with no I/O driver,
        // an idle moment advances the paused clock without a syscall (an
        // `epoll_wait` per wait of every trial, else).
        Clock::Virtual => {
            let mut builder = tokio::runtime::Builder::new_current_thread();
            if plan.needs_io_driver() {
                builder.enable_io();
            }
            builder.enable_time().start_paused(true).build()
        }
        // I/O for live models' HTTP.
        Clock::Real => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
}
