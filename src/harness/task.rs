//! The agent loop of a task: ask the model, run its calls, return every
//! result, ask again, until it answers without a call, makes a forbidden
//! call, or has used every turn; then judge the task. Each turn is one
//! attempt of the trial's outcome. File tools of a task that writes files
//! work in the trial's own copy of the sandbox, so trials never see each
//! other's writes, whatever the concurrency.

use std::io;
use std::ops::ControlFlow;
use std::path::Path;

use super::transcript::{EndedBy, Transcript};
use super::trial::{Step, TrialRun};
use super::{Job, RunError, RunPlan};
use crate::call::Failure;
use crate::metrics::{AttemptOutcome, Ending, JudgeUse, Score, TaskEnd, TrialOutcome};

use crate::model::Model;
use crate::model::recording::Position;
use crate::model::user_sim::{Said, UserSim};
use crate::report::Notice;
use crate::scenario::user::{AtMaxTurns, SimulatedUser, UserPlayer};
use crate::scenario::{Probe, ScoreFile, Task, TaskJudge};
use crate::tool::{Effect, Sandbox, ToolFailure, builtin_needs_sandbox};

pub(super) async fn run_task(
    plan: &RunPlan,
    job: Job,
    task: &Task,
    notices: &super::Notices,
) -> Result<(TrialOutcome, Vec<u8>), RunError> {
    let scenario = &plan.scenarios[job.scenario];
    // Removed when the trial ends (the guard drops). Tools that only read
    // share the scenario's sandbox.
    let writes_files = scenario
        .registry
        .definitions()
        .any(|d| d.effect == Effect::Write && builtin_needs_sandbox(&d.name));
    let copy = match &scenario.sandbox {
        Some(template) if writes_files => Some(trial_sandbox(template)?),
        _ => None,
    };
    let mut run = TrialRun::start(plan, job, copy.as_ref().map(|(_, s)| s.clone()), notices);
    scenario.registry.ready(&run.tools).await;
    run.tools
        .hide(&refused_until_given(task, &scenario.registry));
    let sandbox = copy
        .as_ref()
        .map(|(_, s)| s.root().to_path_buf())
        .or_else(|| scenario.sandbox.clone());
    // Kept only for a probe that reads it.
    let transcript = (0..task.user_turns())
        .filter_map(|k| task.user_turn(k)?.final_probe.as_ref())
        .any(|probe| probe.transcript.is_some())
        .then(|| Transcript::new(&scenario.prompt));
    let mut play = Play {
        judge: TaskJudge::new(task),
        turns: Vec::new(),
        returned: None,
        ending: Ending::TurnLimit,
        ended_by: None,
        sandbox,
        transcript,
    };
    let success = match &task.user {
        None => play.written_turns(&mut run, task).await?,
        Some(user) => play.with_user(plan, job, &mut run, task, user).await?,
    };
    mark_recovered(&mut play.turns);
    let outcome = TrialOutcome {
        model: job.model,
        scenario: job.scenario,
        trial: job.trial,
        attempts: play.turns,
        task: Some(TaskEnd {
            success,
            ending: play.ending,
            milestones: task.all_milestones(),
            user_turns: task.user_turns() as u32,
        }),
    };
    Ok((outcome, run.into_log()))
}

/// The tools a call to is refused until the model is given them (as a
/// call to an unknown tool): every tool hidden at the start, but one that
/// takes any arguments (BFCL's classes run whatever they are sent, a
/// held-out function too) unless a probe calls it (never the model's).
fn refused_until_given(task: &Task, registry: &crate::tool::Registry) -> Vec<String> {
    task.hidden_at_start()
        .into_iter()
        .filter(|name| {
            task.probe_tools().any(|probe| probe == name)
                || !registry
                    .lookup(name)
                    .is_some_and(|id| registry.takes_any_arguments(id))
        })
        .collect()
}

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

/// One task trial as it goes: the judge, the model turns so far (the
/// trial's attempts), what Return produced last, how the last user turn
/// ended.
struct Play<'t> {
    judge: TaskJudge<'t>,
    turns: Vec<AttemptOutcome>,
    returned: Option<Vec<u8>>,
    ending: Ending,
    /// Who ended the conversation, where a stop word did.
    ended_by: Option<EndedBy>,
    /// Where the final state's files are checked.
    sandbox: Option<std::path::PathBuf>,
    /// The conversation so far, for a probe that reads it.
    transcript: Option<Transcript>,
}

impl<'t> Play<'t> {
    /// A conversation with a simulated user: the scenario's, a live model
    /// given for it, or the words a replay recorded. Whether it passed.
    async fn with_user(
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
            .map(|words| SimulatedUser {
                player: UserPlayer::Script(words),
                ..user.clone()
            });
        let (user, model) = match &recorded {
            Some(recorded) => (recorded, None),
            None => (user, model),
        };
        let mut sim = UserSim::new(user, opening.as_deref(), model.as_deref(), position);
        let prices = model.as_ref().and_then(|m| m.terms().prices);
        self.simulated(run, task, user, &mut sim, prices).await
    }

    /// The user turns as written (the opening one, then `task.then`),
    /// each judged on its own checks when the model answers it. Whether
    /// every one passed.
    async fn written_turns(
        &mut self,
        run: &mut TrialRun<'_>,
        task: &'t Task,
    ) -> Result<bool, RunError> {
        let mut success = true;
        for k in 0..task.user_turns() {
            let checked = task.user_turn(k).expect("k < user_turns");
            if k > 0 {
                // The user speaks again, after the answer (or the last
                // results); the tools this turn gives are the model's now.
                let turn = &task.then[k - 1];
                run.tools.show(&turn.add_tools);
                run.model_trial.user_says(&turn.user, &turn.add_tools);
                log_user(run, "scenario", &turn.user, None);
                if let Some(transcript) = &mut self.transcript {
                    transcript.user(&turn.user);
                }
                self.judge.next_user_turn(checked);
            }
            let answer = self.user_turn(run, checked, k as u32 + 1).await?;
            success &= self.judge_user_turn(run, checked, answer.as_deref()).await;
            if matches!(self.ending, Ending::ForbiddenCall | Ending::Lost) {
                break;
            }
        }
        Ok(success)
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
            let said = user_next(run, sim, agent_said, prices).await;
            run.unrecorded(sim.take_unrecorded());
            let last = self.turns.last_mut().expect("the model has spoken");
            let (said, usage) = match said {
                Ok(said) => said,
                Err(failed) => return Ok(self.user_failed(run, &failed.0)),
            };
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
        let said = user_next(run, sim, &greeting, prices).await;
        run.unrecorded(sim.take_unrecorded());
        let (said, usage) = match said {
            Ok(said) => said,
            Err(failed) => return Ok(ControlFlow::Break(self.user_failed(run, &failed.0))),
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

    /// Not the model's doing (`why`): the trial is lost, counted by
    /// `failure`, and the run goes on.
    fn lost(&mut self, run: &TrialRun<'_>, failure: Failure, why: &str) {
        run.notify(Notice::TrialLost {
            model: run.model.name().to_owned(),
            scenario: run.scenario.name.clone(),
            trial: run.trial,
            failure,
            why: why.to_owned(),
        });
        if let Some(last) = self.turns.last_mut() {
            last.failures = vec![failure];
            last.success = false;
        }
        self.ending = Ending::Lost;
    }

    /// Judge the user turn that just ended (`checked`) on the checks the
    /// judge holds, its probe called first: the verdict goes on its last
    /// model turn. Whether it passed.
    async fn judge_user_turn(
        &mut self,
        run: &mut TrialRun<'_>,
        checked: &Task,
        answer: Option<&str>,
    ) -> bool {
        let ended_by = match self.ending {
            Ending::TurnLimit => EndedBy::MaxSteps,
            _ => self.ended_by.unwrap_or(EndedBy::Answer),
        };
        let transcript = self.transcript.as_ref().map(|t| t.value(ended_by));
        let probed = match (&self.ending, &checked.final_probe) {
            (Ending::Answer | Ending::TurnLimit, Some(probe)) => {
                match call_probe(run, probe, transcript).await {
                    Ok(result) => {
                        if let Some(log) = &mut run.log {
                            let passed = probe.result.matches(Some(&result));
                            // The log is in memory: writing cannot fail.
                            let _ =
                                log.record_probe(&probe.tool, &probe.arguments, &result, passed);
                        }
                        if let (Some(file), Some(last)) = (&probe.score, self.turns.last_mut()) {
                            last.score = read_score(file, &result);
                        }
                        let failed = probe.score.as_ref().and_then(|f| judge_failure(f, &result));
                        if let Some(error) = failed {
                            // Its reward unknown: the judge's failure.
                            let why = format!("the judge failed: {error}");
                            self.lost(run, Failure::Judge, &why);
                        }
                        Some(result)
                    }
                    Err(why) => {
                        // The state is unseen: not the model's failure.
                        let why =
                            format!("the probe {:?} could not run: {}", probe.tool, why.message);
                        self.lost(run, Failure::ToolUnavailable, &why);
                        None
                    }
                }
            }
            _ => None,
        };
        let passed = match self.ending {
            // Already failed, or not the model's doing: nothing to judge.
            Ending::ForbiddenCall | Ending::Lost => false,
            Ending::Answer | Ending::TurnLimit => {
                let verdict = self.judge.verdict(
                    answer,
                    self.sandbox.as_deref(),
                    |collection, id| run.tools.store_record(collection, id),
                    probed.as_ref(),
                );
                let last = self.turns.last_mut().expect("a user turn has a model turn");
                last.failures.extend(&verdict);
                last.success = last.failures.is_empty();
                self.ending == Ending::Answer && verdict.is_empty()
            }
        };
        if let Some(last) = self.turns.last_mut() {
            last.turn.user_turn_passed = Some(passed);
        }
        passed
    }

    /// The agent loop of one user turn (numbered from 1), until the model
    /// answers it, makes a forbidden call, is lost, or has used the
    /// turn's budget. Gives the answer, if it answered.
    async fn user_turn(
        &mut self,
        run: &mut TrialRun<'_>,
        task: &'t Task,
        user_turn: u32,
    ) -> Result<Option<String>, RunError> {
        self.ending = Ending::TurnLimit;
        for _ in 0..task.max_turns {
            let number = self.turns.len() as u32 + 1;
            let (turn, mut record) = match run.step(number, self.returned.as_deref()).await? {
                Step::Turn(turn, record) => (turn, record),
                Step::Lost(mut record) => {
                    record.turn.user_turn = user_turn;
                    self.turns.push(record);
                    self.ending = Ending::Lost;
                    return Ok(None);
                }
            };
            if let Some(transcript) = &mut self.transcript {
                transcript.turn(&turn);
            }
            let marks = self.judge.observe(turn.calls(), &turn.batch.results);
            record.turn.user_turn = user_turn;
            record.turn.milestones = marks.milestones;
            record.turn.redundant = marks.redundant;
            record.failures.extend(std::iter::repeat_n(
                Failure::ForbiddenCall,
                marks.forbidden as usize,
            ));
            record.success = record.failures.is_empty();
            self.turns.push(record);
            if marks.forbidden > 0 {
                self.ending = Ending::ForbiddenCall;
                return Ok(None);
            }
            if let Ok(parsed) = &turn.parsed
                && parsed.calls.is_empty()
            {
                self.ending = Ending::Answer;
                self.returned = None;
                return Ok(Some(parsed.text.clone()));
            }
            self.returned = Some(turn.returned);
        }
        Ok(None)
    }
}

/// Call a probe's tool, under its timeout, the conversation in its
/// transcript argument if it has one: its result as JSON when it is JSON,
/// else as text.
async fn call_probe(
    run: &TrialRun<'_>,
    probe: &Probe,
    transcript: Option<serde_json::Value>,
) -> Result<serde_json::Value, ToolFailure> {
    let registry = &run.scenario.registry;
    let tool = registry
        .lookup(&probe.tool)
        .ok_or_else(|| ToolFailure::unavailable("no such tool"))?;
    let filled;
    let arguments = match (&probe.transcript, transcript) {
        (Some(name), Some(transcript)) => {
            let mut members = probe
                .arguments
                .as_value()
                .as_object()
                .cloned()
                .unwrap_or_default();
            members.insert(name.clone(), transcript);
            filled = crate::call::Arguments::from_map(members);
            &filled
        }
        _ => &probe.arguments,
    };
    let output = registry
        .execute_in_time(tool, arguments, &run.tools)
        .await
        .map_err(|_| {
            let timeout = registry.definition(tool).timeout();
            ToolFailure::unavailable(format!("no result within {} ms", timeout.as_millis()))
        })??
        .text;
    Ok(serde_json::from_str(&output).unwrap_or(serde_json::Value::String(output)))
}

/// A call error is recovered when a later turn makes calls and all of them
/// succeed: the model got back on track.
fn mark_recovered(turns: &mut [AttemptOutcome]) {
    let clean = |t: &AttemptOutcome| t.calls > 0 && !t.failures.iter().any(|f| f.is_call_error());
    let mut clean_later = false;
    for turn in turns.iter_mut().rev() {
        if clean_later {
            turn.turn.recovered = turn.failures.iter().filter(|f| f.is_call_error()).count() as u32;
        }
        clean_later |= clean(turn);
    }
}

/// A fresh copy of the scenario's sandbox for one trial, next to it.
fn trial_sandbox(template: &Path) -> io::Result<(tempfile::TempDir, Sandbox)> {
    let parent = template.parent().unwrap_or(template);
    let dir = tempfile::Builder::new()
        .prefix(".trial-")
        .tempdir_in(parent)?;
    for entry in walkdir::WalkDir::new(template).min_depth(1) {
        let entry = entry.map_err(io::Error::other)?;
        let relative = entry
            .path()
            .strip_prefix(template)
            .map_err(io::Error::other)?;
        let target = dir.path().join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    let sandbox = Sandbox::new(dir.path())?;
    Ok((dir, sandbox))
}

/// A user message into the trial's session log (kept in memory until the
/// trial ends, so writing cannot fail).
/// The simulated user's next words. A live user's request is admitted by
/// the run's budget as the model's are, and what it spends is counted.
async fn user_next(
    run: &TrialRun<'_>,
    sim: &mut UserSim<'_>,
    agent_said: &str,
    prices: Option<crate::call::Prices>,
) -> Result<(Said, crate::call::Usage), crate::model::user_sim::UserFailed> {
    let admission = match sim.is_live() {
        true => run.admitted().await,
        false => None,
    };
    let said = sim.next(agent_said).await;
    if let (Some(admission), Ok((_, usage))) = (&admission, &said) {
        admission.spend(*usage, prices);
    }
    said
}

fn log_user(run: &mut TrialRun<'_>, who: &str, text: &str, usage: Option<crate::call::Usage>) {
    if let Some(log) = &mut run.log {
        let _ = log.record_user(who, text, usage);
    }
}

/// Why the judging model failed, where the score's `judge` object says
/// so (its `error`).
fn judge_failure(file: &ScoreFile, result: &serde_json::Value) -> Option<String> {
    let judge = result.pointer(file.judge.as_deref()?)?;
    judge.get("error")?.as_str().map(str::to_owned)
}

/// The score in a probe's result, where `file` says it is; `None` when
/// the result has no number at the reward's pointer (a probe that did
/// not judge).
fn read_score(file: &ScoreFile, result: &serde_json::Value) -> Option<Score> {
    // Unknown when the judge failed; no number otherwise: not judged.
    let reward = match result.pointer(&file.reward).and_then(|r| r.as_f64()) {
        Some(reward) => Some(reward),
        None if judge_failure(file, result).is_some() => None,
        None => return None,
    };
    let components = file
        .components
        .as_deref()
        .and_then(|at| result.pointer(at)?.as_object())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|(name, v)| Some((name.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    let reason = file
        .reason
        .as_deref()
        .and_then(|at| result.pointer(at)?.as_str())
        .map(str::to_owned);
    let checks = file
        .checks
        .as_deref()
        .and_then(|at| result.pointer(at)?.as_object())
        .map(|checks| {
            checks
                .iter()
                .filter(|(_, v)| v.is_boolean() || v.is_null())
                .map(|(name, v)| (name.clone(), v.as_bool()))
                .collect()
        })
        .unwrap_or_default();
    // A judge's use needs its verdicts: without them there is none (as
    // trials.csv reads it back).
    let judge = file
        .judge
        .as_deref()
        .and_then(|at| result.pointer(at))
        .filter(|judge| {
            judge
                .get("rewards")
                .and_then(|r| r.as_array())
                .is_some_and(|r| !r.is_empty())
        })
        .map(|judge| {
            let count = |name: &str| judge.get(name).and_then(|v| v.as_u64()).unwrap_or(0);
            JudgeUse {
                verdicts: judge
                    .get("rewards")
                    .and_then(|v| v.as_array())
                    .map(|rewards| rewards.iter().filter_map(|r| r.as_f64()).collect())
                    .unwrap_or_default(),
                input_tokens: count("input_tokens"),
                output_tokens: count("output_tokens"),
                cost_usd: judge
                    .get("cost_usd")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0),
            }
        });
    Some(Score {
        reward,
        components,
        reason,
        checks,
        judge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(calls: u32, failures: &[Failure]) -> AttemptOutcome {
        AttemptOutcome {
            calls,
            failures: failures.to_vec(),
            ..AttemptOutcome::default()
        }
    }

    #[test]
    fn errors_count_as_recovered_only_before_a_clean_turn_with_calls() {
        let mut turns = vec![
            turn(2, &[Failure::Validation, Failure::Runtime]),
            turn(1, &[Failure::Validation]),
            turn(1, &[]),
            turn(1, &[Failure::UnknownTool]),
            turn(0, &[]),
        ];
        mark_recovered(&mut turns);
        let recovered: Vec<u32> = turns.iter().map(|t| t.turn.recovered).collect();
        assert_eq!(recovered, [2, 1, 0, 0, 0]);
    }
}
