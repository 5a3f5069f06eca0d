//! One trial: the self-correction loop (the model replies, the pipeline
//! runs the turn, the model gets what Return produced, until success or
//! out of attempts), each turn a [`Step`] through every stage, what a
//! trial says as it goes, and the turn's measures.

use std::sync::Arc;

use tokio::time::Instant;

use super::{Admission, Budget, Job, RunError, RunPlan, splitmix};
use crate::call::Failure;
use crate::metrics::{AttemptOutcome, AttemptTime, StreamTimes, TrialOutcome};
use crate::model::{Model, ModelTrial, Reply, ReplyError, TrialStart};
use crate::pipeline::{Coordinates, EarlyRun, Pipeline, SessionLog, Streamed, Turn};
use crate::report::Notice;
use crate::scenario::Scenario;
use crate::tool::{Sandbox, ToolState};

/// One trial: the model replies, the pipeline runs the turn, the model
/// gets what Return produced, until success or out of attempts. Gives
/// the outcome and what Record logged. `Err` is a fault that stops the
/// run.
pub(super) async fn run_attempts(
    plan: &RunPlan,
    job: Job,
    notices: &Notices,
) -> Result<(TrialOutcome, Vec<u8>), RunError> {
    let scenario = &plan.scenarios[job.scenario];
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
pub(super) struct TrialRun<'p> {
    pub(super) model: &'p dyn Model,
    pub(super) scenario: &'p Scenario,
    pub(super) trial: u32,
    /// The trial as the budget counts its spend: (model, scenario, trial).
    pub(super) key: super::budget::TrialKey,
    pub(super) budget: Option<&'p Budget>,
    /// The model's prices, which its requests spend from the budget at.
    prices: Option<crate::call::Prices>,
    pub(super) model_trial: Box<dyn ModelTrial + 'p>,
    pub(super) tools: ToolState,
    pub(super) pipeline: Pipeline,
    pub(super) log: Option<SessionLog<Vec<u8>>>,
    pub(super) notices: &'p Notices,
    /// The last turn's failed calls, name and arguments as sent: a call
    /// made again of these is the same call again.
    failed_before: Vec<(String, String)>,
}

/// Where a trial's notices go: to the run's reporters, between trials.
pub type Notices = tokio::sync::mpsc::UnboundedSender<Notice>;

/// One reply, through the pipeline.
pub(super) enum Step {
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
    pub(super) fn start(
        plan: &'p RunPlan,
        job: Job,
        sandbox: Option<Sandbox>,
        notices: &'p Notices,
    ) -> Self {
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
            .new_trial_state(splitmix(seed ^ 0x746f_6f6c), plan.chains.folder(job));
        if let Some(sandbox) = sandbox {
            tools = tools.with_sandbox(sandbox);
        }
        let mut run = TrialRun {
            model,
            scenario,
            trial: job.trial,
            key: (job.model, job.scenario, job.trial),
            budget: plan.budget.as_deref(),
            prices: model.terms().prices,
            model_trial,
            tools,
            pipeline: Pipeline::new(scenario.registry.clone(), plan.exec_of(job.model)),
            log: (!plan.settings.no_session).then(|| SessionLog::new(Vec::new())),
            notices,
            failed_before: Vec::new(),
        };
        // A simulated user's opening words, before the first reply, are
        // heard by the first attempt: logged with its coordinates.
        run.log_attempt(1);
        run
    }

    /// `reply`, its exchange not recorded said.
    pub(super) fn recorded(&self, reply: Reply) -> Reply {
        self.unrecorded(reply.unrecorded.clone());
        reply
    }

    /// Say that `--record` could not keep an exchange (the model's or its
    /// simulated user's).
    pub(super) fn unrecorded(&self, error: Option<Arc<crate::model::RecordingError>>) {
        if let Some(error) = error {
            self.notify(Notice::NotRecorded {
                error: error.to_string(),
            });
        }
    }

    /// Say `notice` to the run's reporters (a run that has ended hears
    /// nothing more).
    pub(super) fn notify(&self, notice: Notice) {
        let _ = self.notices.send(notice);
    }

    /// The budget's leave to send the next request (`None`: the run has
    /// no budget). Refused, the trial waits for the run to end: it is
    /// left unfinished and unwritten, charged to no one.
    pub(super) async fn admitted(&self) -> Option<Admission<'p>> {
        let budget = self.budget?;
        match budget.admit(self.key).await {
            Some(admission) => Some(admission),
            None => std::future::pending().await,
        }
    }

    /// Ask for the reply of `attempt` (a task's turn), given what Return
    /// produced last, and run it through every stage.
    pub(super) async fn step(
        &mut self,
        attempt: u32,
        returned: Option<&[u8]>,
    ) -> Result<Step, RunError> {
        self.log_attempt(attempt);
        let admission = self.admitted().await;
        let asked = Instant::now();
        let (answered, early) = ask(
            &mut *self.model_trial,
            &self.pipeline,
            &self.tools,
            attempt,
            returned,
        )
        .await;
        let mut reply = match answered {
            Ok(reply) => {
                if let Some(admission) = &admission {
                    admission.spend(reply.usage, self.prices);
                }
                self.recorded(reply)
            }
            Err(ReplyError::NotRecorded(missing)) => return Err(RunError::NotRecorded(missing)),
            Err(ReplyError::BatchUnfinished(batch)) => {
                return Err(RunError::BatchUnfinished(batch));
            }
            Err(ReplyError::Transport(error)) => {
                return Ok(self.request_failed(attempt, &error, asked));
            }
        };
        let timing = reply.timing.unwrap_or(crate::transport::Timing {
            request: asked.elapsed(),
            ..Default::default()
        });
        let ran_early = early.as_ref().map_or(0, |run| run.ran() as u32);
        let provider = self.model.provider();
        let turn = self
            .pipeline
            .turn_parsed(
                provider,
                reply.parse(provider),
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
        let stream = reply
            .stream
            .map(|timing| self.stream_times(&turn, timing, measured, ran_early));
        let mut outcome = attempt_outcome(attempt, &turn, timing, reply.usage, stream);
        outcome.repeated_failed_call = self.repeats_a_failed_call(&turn);
        if outcome.failures.iter().any(|f| f.is_infrastructure()) {
            return Ok(Step::Lost(self.lost(&turn, outcome)));
        }
        Ok(Step::Turn(Box::new(turn), outcome))
    }

    /// A streamed reply's times, and what running its calls early bought.
    fn stream_times(
        &self,
        turn: &Turn,
        timing: crate::call::StreamTiming,
        measured: Option<std::time::Duration>,
        ran_early: u32,
    ) -> StreamTimes {
        StreamTimes {
            early_ideal: self.pipeline.ideal_early(
                turn.calls(),
                &turn.batch.results,
                &timing.calls,
            ),
            turn: measured.unwrap_or_default(),
            ran_early,
            timing,
        }
    }

    /// The session log's next lines are `attempt`'s.
    fn log_attempt(&mut self, attempt: u32) {
        if let Some(log) = &mut self.log {
            log.set_coordinates(Coordinates {
                model: self.model.name(),
                scenario: &self.scenario.name,
                trial: self.trial,
                attempt,
            });
        }
    }

    /// Does `turn` make again a call that failed in the turn before? Its
    /// own failed calls are remembered for the next.
    fn repeats_a_failed_call(&mut self, turn: &Turn) -> bool {
        let calls = turn.calls();
        let repeated = calls.iter().any(|call| {
            self.failed_before
                .iter()
                .any(|(name, arguments)| name == call.name() && *arguments == call.arguments_text())
        });
        self.failed_before = calls
            .iter()
            .zip(&turn.batch.results)
            .filter(|(_, result)| result.is_error())
            .map(|(call, _)| (call.name().to_owned(), call.arguments_text()))
            .collect();
        repeated
    }

    /// The request failed after its retries: the server's failure, said,
    /// and the trial lost.
    fn request_failed(
        &self,
        attempt: u32,
        error: &crate::transport::TransportError,
        asked: Instant,
    ) -> Step {
        self.notify(Notice::RequestFailed {
            model: self.model.name().to_owned(),
            scenario: self.scenario.name.clone(),
            error: error.to_string(),
        });
        Step::Lost(AttemptOutcome {
            attempt,
            failures: vec![Failure::TransportError],
            time: AttemptTime {
                model: asked.elapsed(),
                ..AttemptTime::default()
            },
            ..AttemptOutcome::default()
        })
    }

    /// An attempt lost to infrastructure (the reply was not the format's,
    /// a tool could not run): a notice, and only that failure kept,
    /// since the rest measured nothing.
    pub(super) fn lost(&self, turn: &Turn, mut outcome: AttemptOutcome) -> AttemptOutcome {
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
    pub(super) fn into_log(self) -> Vec<u8> {
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
        time: AttemptTime {
            model: timing.request,
            queue: timing.queued,
            retries: timing.retries,
            retry: timing.retrying,
            tool: turn.batch.makespan,
            serial: turn.batch.serial_makespan(),
            ideal: turn.batch.ideal_makespan,
        },
        usage,
        stream,
        ..AttemptOutcome::default()
    }
}
