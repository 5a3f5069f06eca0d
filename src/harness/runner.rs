//! The runner: a plan's jobs in order, trials at once under the run's
//! concurrency, and the events the reporters hear.

use futures_util::{FutureExt, StreamExt, stream};

use super::{Clock, Job, Notices, RunError, RunPlan, task, trial};
use crate::metrics::TrialOutcome;
use crate::report::{FinishedTrial, Notice, Reporters, RunEvent};

/// Where already-finished trials come from when resuming: records in job
/// order, as an earlier run wrote them.
pub type Replay<'a> = Box<dyn Iterator<Item = TrialOutcome> + 'a>;

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
        let mut finished = stream::iter(jobs).buffered(plan.settings.concurrency.max(1));
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
    // A trial that waits for others takes what its model holds only once
    // they have ended: a batched round must not wait for it meanwhile.
    let waits = replayed.is_none() && plan.chains.waits(job);
    let coming = match replayed {
        None if !waits => plan.models[job.model].trial_coming(),
        _ => None,
    };
    async move {
        let _coming = coming;
        let ran = match replayed {
            Some(outcome) => Ok((outcome, Vec::new())),
            None => run_in_turn(plan, job, waits, admission, notices).await,
        };
        if let Ok((outcome, _)) = &ran {
            plan.chains.ended(job, outcome.lost());
        }
        ran
    }
}

/// A trial run in its turn: once the trials it follows have ended (lost
/// with them when one was lost, charged alike), then once its model has
/// a slot.
async fn run_in_turn(
    plan: &RunPlan,
    job: Job,
    waits: bool,
    admission: &[Option<tokio::sync::Semaphore>],
    notices: &Notices,
) -> Result<(TrialOutcome, Vec<u8>), RunError> {
    let _coming = if waits {
        if let Some((before, failure)) = plan.chains.prerequisites_ended(job).await {
            let why = format!(
                "the trial it runs after ({}) was lost",
                plan.scenarios[before].name
            );
            let outcome = task::lost_before_a_turn(plan, job, failure, &why, notices);
            return Ok((outcome, Vec::new()));
        }
        plan.models[job.model].trial_coming()
    } else {
        None
    };
    let _under_way = match &admission[job.model] {
        Some(slots) => Some(slots.acquire().await.expect("never closed")),
        None => None,
    };
    run_trial(plan, job, notices).await
}

/// One trial: a task's agent loop, or attempts until success (see
/// `trial`). Gives the outcome and what Record logged. `Err` is a fault
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
        .map(|m| m.terms().trials_at_once.map(tokio::sync::Semaphore::new))
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
    match plan.settings.clock {
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
