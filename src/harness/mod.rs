//! The runner: models x scenarios x trials, the self-correction loop,
//! the virtual or real clock, concurrency and sharding. Each turn of a
//! trial goes through the pipeline whole ([`Pipeline::turn`]); finished
//! trials go to the reporters as events in a fixed order (model, scenario,
//! trial) whatever order they finish in, so seeded runs write identical
//! files. `merge` replays shards' trials through the same reporters;
//! `run_file` is run.json.

pub mod merge;
mod models;
pub mod run_file;
mod settings;
mod setup;
mod setup_error;
mod shard;
mod task;
mod transcript;

use std::sync::Arc;

use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use crate::call::Failure;
use crate::metrics::{AttemptOutcome, StreamTimes, TrialOutcome};
use crate::model::{Model, ModelTrial, Reply, ReplyError, TrialStart};
use crate::pipeline::{
    Coordinates, EarlyRun, ExecOptions, FeedbackStyle, Pipeline, SessionLog, Streamed, Turn,
};
use crate::report::{
    FinishedTrial, ModelInfo, Notice, Reporters, RunEvent, RunInfo, ScenarioInfo, Thresholds,
};
use crate::scenario::{Scenario, Task};
use crate::tool::{Sandbox, ToolState};

pub use settings::{RunRequest, Settings};
pub use setup::{Notes, PreparedRun, RunEnding};
pub use setup_error::{ForeignTrial, SetupError};
pub use shard::{Shard, ShardError};

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
}

/// A job: one trial of one model on one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Job {
    pub model: usize,
    pub scenario: usize,
    pub trial: u32,
}

impl RunPlan {
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
    /// Stopped on request (Ctrl-C): every finished trial was handed to the
    /// reporters first.
    #[error("interrupted after {finished} of {total} trial(s)")]
    Interrupted { finished: u64, total: u64 },
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
    // Per model, the trials it may have under way (in job order: the
    // semaphore is fair and the jobs are polled in order).
    let admission: Vec<Option<tokio::sync::Semaphore>> = plan
        .models
        .iter()
        .map(|m| m.trials_at_once().map(tokio::sync::Semaphore::new))
        .collect();
    let admission = &admission;
    runtime.block_on(async {
        let jobs = plan.jobs().map(|job| {
            // A trial already recorded is replayed, not run again.
            let replayed = replayed_trial(&mut pending_replay, &mut replay, job);
            async move {
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
        });
        let mut finished = stream::iter(jobs).buffered(plan.concurrency.max(1));
        let mut stop = std::pin::pin!(stop);
        loop {
            let (outcome, session) = tokio::select! {
                // A stop wins over a trial that is ready too: deterministic.
                biased;
                () = &mut stop => {
                    reporters.checkpoint()?;
                    return Err(RunError::Interrupted { finished: done, total });
                }
                Some(notice) = heard.recv() => {
                    reporters.send(RunEvent::Notice(&notice))?;
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
            reporters.send(RunEvent::TrialFinished(FinishedTrial {
                outcome: &outcome,
                session: &session,
            }))?;
            done += 1;
        }
        while let Ok(notice) = heard.try_recv() {
            reporters.send(RunEvent::Notice(&notice))?;
        }
        Ok::<(), RunError>(())
    })?;
    reporters.send(RunEvent::Finished)?;
    Ok(())
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

/// One trial: the model replies, the pipeline runs the turn, the model
/// gets what Return produced, until success or out of attempts (a task:
/// until the model answers, see [`task`]). Gives the outcome and what
/// Record logged. `Err` is a fault that stops the run.
pub async fn run_trial(
    plan: &RunPlan,
    job: Job,
    notices: &Notices,
) -> Result<(TrialOutcome, Vec<u8>), RunError> {
    let scenario = &plan.scenarios[job.scenario];
    if let Some(task) = &scenario.task {
        return task::run_task(plan, job, task, notices).await;
    }
    let mut run = TrialRun::start(plan, job, None, notices);
    run.scenario.registry.ready(&run.tools).await;
    let max_attempts = plan.max_attempts(job.model, job.scenario);
    let mut attempts = Vec::with_capacity(max_attempts as usize);
    let mut returned: Option<Vec<u8>> = None;

    for attempt in 1..=max_attempts {
        let (turn, mut outcome) = match run.step(attempt, returned.as_deref()).await? {
            Step::Turn(turn, outcome) => (turn, outcome),
            Step::Lost(outcome) => {
                attempts.push(outcome);
                break;
            }
        };
        if let Ok(parsed) = &turn.parsed
            && let Some(mismatch) = scenario
                .expectation
                .judge(&parsed.calls, &mut outcome.failures)
        {
            outcome.reason = Some(mismatch.reason);
            outcome.reason_parameter = mismatch.parameter;
        }
        outcome.success = outcome.failures.is_empty();
        let success = outcome.success;
        attempts.push(outcome);
        returned = Some(turn.returned);
        if success {
            break;
        }
    }
    let outcome = TrialOutcome {
        model: job.model,
        scenario: job.scenario,
        trial: job.trial,
        attempts,
        task: None,
    };
    Ok((outcome, run.into_log()))
}

/// Ask for a reply; when the model streams and runs calls early, they
/// run (against `tools`) while the rest of the reply still comes.
async fn ask<'p>(
    model_trial: &mut (dyn ModelTrial + '_),
    pipeline: &'p Pipeline,
    tools: &'p ToolState,
    attempt: u32,
    returned: Option<&[u8]>,
) -> (Result<Reply, ReplyError>, Option<EarlyRun<'p>>) {
    let Some(calls) = model_trial.early_calls() else {
        return (model_trial.reply(attempt, returned).await, None);
    };
    let mut run = pipeline.early(tools);
    let reply = model_trial.reply(attempt, returned);
    let (reply, ()) = futures_util::join!(reply, run.take(calls));
    (reply, Some(run))
}

/// What one trial runs with: the model's side of it, the tools' state, the
/// pipeline and the session log.
struct TrialRun<'p> {
    model: &'p dyn Model,
    scenario: &'p Scenario,
    trial: u32,
    model_trial: Box<dyn ModelTrial + 'p>,
    tools: ToolState,
    pipeline: Pipeline,
    log: Option<SessionLog<Vec<u8>>>,
    notices: &'p Notices,
}

/// Where a trial's notices go: to the run's reporters, between trials.
pub type Notices = tokio::sync::mpsc::UnboundedSender<Notice>;

/// One reply, through the pipeline.
enum Step {
    /// The turn, and its outcome: the calls' failures, counts and times.
    Turn(Box<Turn>, AttemptOutcome),
    /// Lost to infrastructure (the request failed after its retries, the
    /// reply is not the format's, a tool could not run): not the model's
    /// failure; the trial ends here and is counted apart, and the run
    /// goes on.
    Lost(AttemptOutcome),
}

impl<'p> TrialRun<'p> {
    /// Start `job`'s trial; file tools work in `sandbox` when given.
    fn start(plan: &'p RunPlan, job: Job, sandbox: Option<Sandbox>, notices: &'p Notices) -> Self {
        let scenario = &plan.scenarios[job.scenario];
        let model = &*plan.models[job.model];
        let seed = plan.trial_seed(job);
        let model_trial = model.start_trial(TrialStart {
            scenario,
            trial: job.trial,
            seed,
            shared_seed: plan.shared_seed(job),
            order: plan.order_of(job),
        });
        let mut tools = scenario
            .registry
            .new_state_seeded(splitmix(seed ^ 0x746f_6f6c));
        if let Some(sandbox) = sandbox {
            tools = tools.with_sandbox(sandbox);
        }
        TrialRun {
            model,
            scenario,
            trial: job.trial,
            model_trial,
            tools,
            pipeline: Pipeline::new(scenario.registry.clone(), plan.exec_of(job.model)),
            log: plan.session_log.then(|| SessionLog::new(Vec::new())),
            notices,
        }
    }

    /// `reply`, its exchange not recorded said.
    fn recorded(&self, reply: Reply) -> Reply {
        self.unrecorded(reply.unrecorded.clone());
        reply
    }

    /// Say that `--record` could not keep an exchange (the model's or its
    /// simulated user's).
    fn unrecorded(&self, error: Option<Arc<crate::model::RecordingError>>) {
        if let Some(error) = error {
            self.notify(Notice::NotRecorded {
                error: error.to_string(),
            });
        }
    }

    /// Say `notice` to the run's reporters (a run that has ended hears
    /// nothing more).
    fn notify(&self, notice: Notice) {
        let _ = self.notices.send(notice);
    }

    /// Ask for the reply of `attempt` (a task's turn), given what Return
    /// produced last, and run it through every stage.
    async fn step(&mut self, attempt: u32, returned: Option<&[u8]>) -> Result<Step, RunError> {
        let asked = Instant::now();
        let (answered, early) = ask(
            &mut *self.model_trial,
            &self.pipeline,
            &self.tools,
            attempt,
            returned,
        )
        .await;
        let reply = match answered {
            Ok(reply) => self.recorded(reply),
            Err(ReplyError::NotRecorded(missing)) => return Err(RunError::NotRecorded(missing)),
            Err(ReplyError::Transport(error)) => {
                self.notify(Notice::RequestFailed {
                    model: self.model.name().to_owned(),
                    scenario: self.scenario.name.clone(),
                    error: error.to_string(),
                });
                return Ok(Step::Lost(AttemptOutcome {
                    attempt,
                    failures: vec![Failure::TransportError],
                    model_time: asked.elapsed(),
                    ..AttemptOutcome::default()
                }));
            }
        };
        let timing = reply.timing.unwrap_or(crate::transport::Timing {
            request: asked.elapsed(),
            ..Default::default()
        });
        if let Some(log) = &mut self.log {
            log.set_coordinates(Coordinates {
                model: self.model.name(),
                scenario: &self.scenario.name,
                trial: self.trial,
                attempt,
            });
        }
        let ran_early = early.as_ref().map_or(0, |run| run.ran() as u32);
        let turn = self
            .pipeline
            .turn_streamed(
                self.model.provider(),
                &reply.body,
                &self.tools,
                self.log.as_mut(),
                Streamed {
                    timing: reply.stream.as_ref(),
                    early,
                },
            )
            .await?;
        // Measured only where the request was: a replay's times are the
        // recording's.
        let measured = reply
            .timing
            .map(|t| asked.elapsed().saturating_sub(t.queued + t.retrying));
        let stream = reply.stream.map(|timing| StreamTimes {
            early_ideal: self.pipeline.ideal_early(
                turn.calls(),
                &turn.batch.results,
                &timing.calls,
            ),
            turn: measured.unwrap_or_default(),
            ran_early,
            timing,
        });
        let outcome = attempt_outcome(attempt, &turn, timing, reply.usage, stream);
        if outcome.failures.iter().any(|f| f.is_infrastructure()) {
            return Ok(Step::Lost(self.lost(&turn, outcome)));
        }
        Ok(Step::Turn(Box::new(turn), outcome))
    }

    /// An attempt lost to infrastructure (the reply was not the format's,
    /// a tool could not run): a notice, and only that failure kept,
    /// since the rest measured nothing.
    fn lost(&self, turn: &Turn, mut outcome: AttemptOutcome) -> AttemptOutcome {
        let lost = outcome
            .failures
            .iter()
            .copied()
            .find(|f| f.is_infrastructure())
            .expect("a lost attempt");
        let why = match &turn.parsed {
            Err(error) => error.to_string(),
            Ok(_) => turn
                .batch
                .results
                .iter()
                .find(|r| {
                    r.error_kind
                        .is_some_and(|kind| crate::call::Failure::from(kind).is_infrastructure())
                })
                .map_or_else(String::new, |r| match r.error_kind {
                    Some(crate::call::ErrorKind::BadOutput) => {
                        format!("tool {} broke its output schema: {}", r.name, r.content)
                    }
                    _ => format!("tool {} could not run: {}", r.name, r.content),
                }),
        };
        self.notify(Notice::TrialLost {
            model: self.model.name().to_owned(),
            scenario: self.scenario.name.clone(),
            trial: self.trial,
            failure: lost,
            why,
        });
        // Only the infrastructure failure: the rest measured nothing.
        outcome.failures = vec![lost];
        outcome.success = false;
        outcome
    }

    /// What Record logged over the trial.
    fn into_log(self) -> Vec<u8> {
        self.log.map(SessionLog::into_inner).unwrap_or_default()
    }
}

/// What one turn measured: its failures, counts and times.
fn attempt_outcome(
    attempt: u32,
    turn: &Turn,
    timing: crate::transport::Timing,
    usage: crate::call::Usage,
    stream: Option<StreamTimes>,
) -> AttemptOutcome {
    let failures = turn.failures();
    let schema_errors = failures
        .iter()
        .filter(|f| **f == Failure::Validation)
        .count() as u32;
    AttemptOutcome {
        attempt,
        success: failures.is_empty(),
        schema_errors,
        failures,
        reason: turn
            .call_written_as_text()
            .then_some(crate::call::Reason::CallAsText),
        calls: turn.calls().len() as u32,
        model_time: timing.request,
        queue_time: timing.queued,
        retries: timing.retries,
        retry_time: timing.retrying,
        tool_time: turn.batch.makespan,
        serial_time: turn.batch.serial_makespan(),
        ideal_time: turn.batch.ideal_makespan,
        usage,
        stream,
        ..AttemptOutcome::default()
    }
}
