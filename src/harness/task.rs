//! The agent loop of a task: ask the model, run its calls, return every
//! result, ask again, until it answers without a call, makes a forbidden
//! call, or has used every turn; then judge the task. Each turn is one
//! attempt of the trial's outcome. File tools of a task that writes files
//! work in the trial's own copy of the sandbox, so trials never see each
//! other's writes, whatever the concurrency.

use std::io;
use std::path::Path;

use super::transcript::{EndedBy, Transcript};
use super::trial::{Step, TrialRun};
use super::{Job, RunError, RunPlan};
use crate::call::Failure;
use crate::metrics::{AttemptOutcome, Ending, JudgeUse, Score, TaskEnd, TrialOutcome};

use crate::report::Notice;
use crate::scenario::task::SystemFrom;
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
    let opening = match &task.system_from {
        None => None,
        Some(from) => match opening_system(&mut run, from).await {
            Ok(text) => Some(text),
            Err(failure) => {
                let why = format!(
                    "the call {:?} that opens the conversation could not run: {}",
                    from.tool, failure.message
                );
                let outcome =
                    lost_before_a_turn(plan, job, Failure::ToolUnavailable, &why, notices);
                return Ok((outcome, run.into_log()));
            }
        },
    };
    // Kept only for a probe that reads it.
    let transcript = (0..task.user_turns())
        .filter_map(|k| task.user_turn(k)?.final_probe.as_ref())
        .any(|probe| probe.transcript.is_some())
        .then(|| match &opening {
            Some(text) => Transcript::new(&SystemFrom::opening(&scenario.prompt, text)),
            None => Transcript::new(&scenario.prompt),
        });
    let mut play = Play {
        judge: TaskJudge::new(task),
        turns: Vec::new(),
        returned: None,
        ending: Ending::TurnLimit,
        ended_by: None,
        sandbox,
        transcript,
        user_view: Vec::new(),
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
            task.probe_tools()
                .chain(task.user_tools())
                .any(|t| t == name)
                || !registry
                    .lookup(name)
                    .is_some_and(|id| registry.takes_any_arguments(id))
        })
        .collect()
}

/// One task trial as it goes: the judge, the model turns so far (the
/// trial's attempts), what Return produced last, how the last user turn
/// ended.
pub(super) struct Play<'t> {
    pub(super) judge: TaskJudge<'t>,
    pub(super) turns: Vec<AttemptOutcome>,
    pub(super) returned: Option<Vec<u8>>,
    pub(super) ending: Ending,
    /// Who ended the conversation, where a stop word did.
    pub(super) ended_by: Option<EndedBy>,
    /// Where the final state's files are checked.
    pub(super) sandbox: Option<std::path::PathBuf>,
    /// The conversation so far, for a probe that reads it.
    pub(super) transcript: Option<Transcript>,
    /// The tools hidden from the simulated user: all but its own.
    pub(super) user_view: Vec<String>,
}

impl<'t> Play<'t> {
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

    /// Not the model's doing (`why`): the trial is lost, counted by
    /// `failure`, and the run goes on.
    pub(super) fn lost(&mut self, run: &TrialRun<'_>, failure: Failure, why: &str) {
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
    pub(super) async fn judge_user_turn(
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
    pub(super) async fn user_turn(
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

/// The opening system message `from` gives, logged as a probe and told
/// to the model before its first turn; why it could not be had.
async fn opening_system(run: &mut TrialRun<'_>, from: &SystemFrom) -> Result<String, ToolFailure> {
    let text = call_hidden(run, &from.tool, &from.arguments).await?;
    if let Some(log) = &mut run.log {
        let result = serde_json::Value::String(text.clone());
        // The log is in memory: writing cannot fail.
        let _ = log.record_probe(&from.tool, &from.arguments, &result, true);
    }
    run.model_trial.system_says(&text);
    Ok(text)
}

/// A trial lost before the model's first turn (`failure` says to whom,
/// `why` what happened): one attempt that carries the failure, so that
/// the trial counts as lost, never as the model's.
pub(super) fn lost_before_a_turn(
    plan: &RunPlan,
    job: Job,
    failure: Failure,
    why: &str,
    notices: &super::Notices,
) -> TrialOutcome {
    let scenario = &plan.scenarios[job.scenario];
    let _ = notices.send(Notice::TrialLost {
        model: plan.models[job.model].name().to_owned(),
        scenario: scenario.name.clone(),
        trial: job.trial,
        failure,
        why: why.to_owned(),
    });
    TrialOutcome {
        model: job.model,
        scenario: job.scenario,
        trial: job.trial,
        attempts: vec![AttemptOutcome {
            attempt: 1,
            failures: vec![failure],
            ..AttemptOutcome::default()
        }],
        task: scenario.task.as_ref().map(|task| TaskEnd {
            success: false,
            ending: Ending::Lost,
            milestones: task.all_milestones(),
            user_turns: task.user_turns() as u32,
        }),
    }
}

/// Call a hidden tool (a probe's, never the model's) under its timeout:
/// its result text.
async fn call_hidden(
    run: &TrialRun<'_>,
    tool: &str,
    arguments: &crate::call::Arguments,
) -> Result<String, ToolFailure> {
    let registry = &run.scenario.registry;
    let id = registry
        .lookup(tool)
        .ok_or_else(|| ToolFailure::unavailable("no such tool"))?;
    Ok(registry
        .execute_in_time(id, arguments, &run.tools)
        .await
        .map_err(|_| {
            let timeout = registry.definition(id).timeout();
            ToolFailure::unavailable(format!("no result within {} ms", timeout.as_millis()))
        })??
        .text)
}

/// Call a probe's tool, under its timeout, the conversation in its
/// transcript argument if it has one: its result as JSON when it is JSON,
/// else as text.
async fn call_probe(
    run: &TrialRun<'_>,
    probe: &Probe,
    transcript: Option<serde_json::Value>,
) -> Result<serde_json::Value, ToolFailure> {
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
    let output = call_hidden(run, &probe.tool, arguments).await?;
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
pub(super) fn log_user(
    run: &mut TrialRun<'_>,
    who: &str,
    text: &str,
    usage: Option<crate::call::Usage>,
) {
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
