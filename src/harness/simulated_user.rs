//! A conversation with a simulated user: it speaks first after the
//! agent's greeting (or answers the prompt's opening), after each answer
//! it speaks again until it says it is done, and a user that holds tools
//! of its own calls them on the way: its calls run through the pipeline
//! on its own view of the trial's tools, are recorded as its own, go into
//! the transcript, and their results go back to it, never to the model.
//! What goes wrong with the user is the user's, never the agent's.

use std::ops::ControlFlow;

use super::task::{Play, log_user};
use super::transcript::EndedBy;
use super::trial::TrialRun;
use super::{Job, RunError, RunPlan};
use crate::call::Failure;
use crate::metrics::Ending;
use crate::model::Model;
use crate::model::recording::Position;
use crate::model::user_sim::{Said, UserSim};
use crate::scenario::Task;
use crate::scenario::user::{AtMaxTurns, SimulatedUser, UserPlayer};

/// What the user said to open the conversation: the prompt's last user
/// message; `None` when the agent spoke last (a greeting), so that the
/// user speaks first.
fn opening_words(prompt: &[serde_json::Value]) -> Option<String> {
    let last = prompt
        .iter()
        .rev()
        .find(|m| m["role"] == "user" || m["role"] == "assistant")?;
    if last["role"] == "assistant" {
        return None;
    }
    Some(match &last["content"] {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// The agent's last words in the prompt (its greeting).
fn last_agent_words(prompt: &[serde_json::Value]) -> String {
    prompt
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The trial ended before its verdict: lost, and said so.
struct TrialEnded;

/// Rounds of calls a simulated user may make before it speaks again
/// (tau2 bounds the whole conversation by its steps; this bounds a user
/// that never stops calling).
const MAX_USER_CALL_ROUNDS: u32 = 30;

/// The simulated user's next words. A live user's request is admitted by
/// the run's budget as the model's are, and what it spends is counted.
/// `agent_said: None`: after the results of its own calls.
async fn user_next(
    run: &TrialRun<'_>,
    sim: &mut UserSim<'_>,
    agent_said: Option<&str>,
    prices: Option<crate::call::Prices>,
) -> Result<(Said, crate::call::Usage), crate::model::user_sim::UserFailed> {
    let admission = match sim.is_live() {
        true => run.admitted().await,
        false => None,
    };
    let said = match agent_said {
        Some(text) => sim.next(text).await,
        None => sim.after_calls().await,
    };
    if let (Some(admission), Ok((_, usage))) = (&admission, &said) {
        admission.spend(*usage, prices);
    }
    said
}

impl<'t> Play<'t> {
    /// A conversation with a simulated user: the scenario's, a live model
    /// given for it, or the words a replay recorded. Whether it passed.
    pub(super) async fn with_user(
        &mut self,
        plan: &RunPlan,
        job: Job,
        run: &mut TrialRun<'_>,
        task: &'t Task,
        user: &SimulatedUser,
    ) -> Result<bool, RunError> {
        let scenario = &plan.scenarios[job.scenario];
        let model = plan.users.get(job.scenario).cloned().flatten();
        let position = Position {
            model: run.model.name().to_owned(),
            scenario: scenario.name.clone(),
            trial: job.trial,
            attempt: 0,
            order: plan.order_of(job),
            trial_seed: plan.shared_seed(job),
        };
        let opening = opening_words(&scenario.prompt);
        // A replay's recorded user speaks in place of the scenario's.
        let recorded = run
            .model
            .recorded_user(&scenario.name, job.trial)
            .map(|lines| SimulatedUser {
                player: UserPlayer::Script(lines),
                ..user.clone()
            });
        let (user, model) = match &recorded {
            Some(recorded) => (recorded, None),
            None => (user, model),
        };
        // The user's own tools: all it is shown, and all it may call.
        let registry = &scenario.registry;
        let held = |name: &str| user.tools.iter().any(|t| t == name);
        let specs = registry
            .definitions()
            .filter(|d| held(&d.name))
            .map(|d| d.spec())
            .collect();
        self.user_view = registry
            .names()
            .filter(|n| !held(n))
            .map(str::to_owned)
            .collect();
        let mut sim = UserSim::new(user, opening.as_deref(), model.as_deref(), position, specs);
        let prices = model.as_ref().and_then(|m| m.terms().prices);
        self.simulated(run, task, user, &mut sim, prices).await
    }

    /// A simulated user speaks after each answer until it says it is
    /// done; the task's checks are judged then. A user that never says
    /// so within its turns, or fails otherwise, loses the trial (not the
    /// agent's doing). Whether the conversation passed.
    async fn simulated(
        &mut self,
        run: &mut TrialRun<'_>,
        task: &'t Task,
        user: &SimulatedUser,
        sim: &mut UserSim<'_>,
        prices: Option<crate::call::Prices>,
    ) -> Result<bool, RunError> {
        let mut spoken = 0;
        let mut answer = match opening_words(&run.scenario.prompt) {
            Some(_) => self.user_turn(run, task, 1).await?,
            // The agent greeted: the user speaks first.
            None => match self.user_opens(run, task, sim, prices).await? {
                ControlFlow::Continue(answer) => {
                    spoken += 1;
                    answer
                }
                ControlFlow::Break(passed) => return Ok(passed),
            },
        };
        loop {
            if matches!(self.ending, Ending::ForbiddenCall | Ending::Lost) {
                return Ok(false);
            }
            // No answer within the turn's budget: the user has nothing to
            // answer, and the conversation is judged as it stands.
            let Some(agent_said) = answer.as_deref() else {
                break;
            };
            // The user's stop word ends it from the agent's side too (as
            // tau2's agent ends one).
            if agent_said.contains(crate::scenario::user::STOP) {
                self.ended_by = Some(EndedBy::AgentStop);
                break;
            }
            let Ok((said, usage)) = self.user_speaks(run, sim, agent_said, prices).await else {
                return Ok(false);
            };
            let last = self.turns.last_mut().expect("the model has spoken");
            last.user.usage += usage;
            last.user.cost += prices.map_or(0.0, |p| p.cost(usage));
            let text = match said {
                Said::Message(text) => text,
                Said::Stop(text) => {
                    log_user(run, "simulated_user", &text, Some(usage));
                    if let Some(transcript) = &mut self.transcript {
                        transcript.user(&text);
                    }
                    self.ended_by = Some(EndedBy::UserStop);
                    break;
                }
                // A recording cut where it ends: its turns used up.
                Said::ScriptEnded if user.at_max_turns == AtMaxTurns::Judge => {
                    self.ended_by = Some(EndedBy::MaxSteps);
                    break;
                }
                Said::ScriptEnded => return Ok(self.user_failed(run, "said nothing")),
                Said::Calls(_) => unreachable!("user_speaks runs the user's calls"),
            };
            if spoken == user.max_turns {
                if user.at_max_turns == AtMaxTurns::Judge {
                    // Judged as it stands, the user's last words unsaid.
                    self.ended_by = Some(EndedBy::MaxSteps);
                    break;
                }
                let why = format!("never said it was done in its {} turn(s)", user.max_turns);
                return Ok(self.user_failed(run, &why));
            }
            spoken += 1;
            self.user_said(run, &text, Some(usage));
            answer = self.user_turn(run, task, spoken + 1).await?;
        }
        let passed = self.judge_user_turn(run, task, answer.as_deref()).await;
        Ok(passed)
    }

    /// The user's first words, after the agent's greeting, and the
    /// model's answer to them; `Break` with the verdict when the user
    /// cannot open.
    async fn user_opens(
        &mut self,
        run: &mut TrialRun<'_>,
        task: &'t Task,
        sim: &mut UserSim<'_>,
        prices: Option<crate::call::Prices>,
    ) -> Result<ControlFlow<bool, Option<String>>, RunError> {
        let greeting = last_agent_words(&run.scenario.prompt);
        let Ok((said, usage)) = self.user_speaks(run, sim, &greeting, prices).await else {
            return Ok(ControlFlow::Break(false));
        };
        let text = match said {
            Said::Message(text) => text,
            Said::Stop(text) => {
                let why = format!("ended the conversation before it began ({text:?})");
                return Ok(ControlFlow::Break(self.user_failed(run, &why)));
            }
            Said::ScriptEnded => {
                return Ok(ControlFlow::Break(self.user_failed(run, "said nothing")));
            }
            Said::Calls(_) => unreachable!("user_speaks runs the user's calls"),
        };
        self.user_said(run, &text, Some(usage));
        let answer = self.user_turn(run, task, 1).await?;
        // Its tokens go on the turn that answered it.
        if let Some(first) = self.turns.first_mut() {
            first.user.usage += usage;
            first.user.cost += prices.map_or(0.0, |p| p.cost(usage));
        }
        Ok(ControlFlow::Continue(answer))
    }

    /// What the simulated user says after `agent_said`, the calls it makes
    /// with its own tools on the way run (never `Said::Calls`), with the
    /// tokens it took. `Err`: the trial is lost (and said so), to the
    /// user or to the tools its calls could not reach.
    async fn user_speaks(
        &mut self,
        run: &mut TrialRun<'_>,
        sim: &mut UserSim<'_>,
        agent_said: &str,
        prices: Option<crate::call::Prices>,
    ) -> Result<(Said, crate::call::Usage), TrialEnded> {
        let mut said = user_next(run, sim, Some(agent_said), prices).await;
        let mut usage = crate::call::Usage::default();
        for _ in 0..=MAX_USER_CALL_ROUNDS {
            run.unrecorded(sim.take_unrecorded());
            let (now, spent) = match said {
                Ok(said) => said,
                Err(failed) => {
                    self.user_failed(run, &failed.0);
                    return Err(TrialEnded);
                }
            };
            usage += spent;
            let Said::Calls(calls) = now else {
                return Ok((now, usage));
            };
            if let Err((failure, why)) = self.user_calls(run, sim, &calls).await {
                self.lost(run, failure, &why);
                return Err(TrialEnded);
            }
            said = user_next(run, sim, None, prices).await;
        }
        let why = format!(
            "kept calling its tools: {MAX_USER_CALL_ROUNDS} rounds of calls without a word"
        );
        self.user_failed(run, &why);
        Err(TrialEnded)
    }

    /// The simulated user's own calls, through the pipeline as the agent's
    /// go (Validate, Execute, Return in its model's format, Record as the
    /// user's), on the user's view of the tools: its own alone. Their
    /// results go back to it, and into the transcript. A call that could
    /// not reach its tool loses the trial, to the tool.
    async fn user_calls(
        &mut self,
        run: &mut TrialRun<'_>,
        sim: &mut UserSim<'_>,
        calls: &[crate::call::ParsedCall],
    ) -> Result<(), (Failure, String)> {
        let agent_view = run.tools.swap_hidden(self.user_view.clone());
        let batch = run.pipeline.run_with(calls, &run.tools).await;
        run.tools.swap_hidden(agent_view);
        if let Some(log) = &mut run.log {
            // The log is in memory: writing cannot fail.
            let _ = log.record_user_calls(calls, &batch);
        }
        if let Some(transcript) = &mut self.transcript {
            transcript.user_calls(calls, &batch.results);
        }
        let mut returned = Vec::new();
        sim.provider().write_results(&batch.results, &mut returned);
        sim.heard(&returned);
        let unreached = batch.results.iter().find_map(|r| {
            let failure = Failure::from(r.error_kind?);
            failure.is_infrastructure().then_some((failure, r))
        });
        match unreached {
            Some((failure, result)) => Err((
                failure,
                format!(
                    "the simulated user's call {:?} could not run: {}",
                    result.name, result.content
                ),
            )),
            None => Ok(()),
        }
    }

    /// The simulated user said `text`: the model hears it, the log and the
    /// transcript keep it.
    fn user_said(&mut self, run: &mut TrialRun<'_>, text: &str, usage: Option<crate::call::Usage>) {
        run.model_trial.user_says(text, &[]);
        log_user(run, "simulated_user", text, usage);
        if let Some(transcript) = &mut self.transcript {
            transcript.user(text);
        }
    }

    /// The simulated user failed: the trial is lost to it.
    /// (What it said, if anything, is in the log already.)
    fn user_failed(&mut self, run: &TrialRun<'_>, why: &str) -> bool {
        self.lost(
            run,
            Failure::UserSimulator,
            &format!("the simulated user {why}"),
        );
        false
    }
}
