//! The agent loop of a task: ask the model, run its calls, return every
//! result, ask again, until it answers without a call, makes a forbidden
//! call, or has used every turn; then judge the task. Each turn is one
//! attempt of the trial's record. File tools of a task that writes files
//! work in the trial's own copy of the sandbox, so trials never see each
//! other's writes, whatever the concurrency.

use std::io;
use std::path::Path;

use super::{Job, RunError, RunPlan, Step, TrialRun};
use crate::call::Failure;
use crate::metrics::{AttemptRecord, Ending, TaskEnd, TrialRecord};
use crate::scenario::{Task, TaskJudge};
use crate::tool::{Effect, Sandbox, builtin_needs_sandbox};

pub(super) async fn run_task(
    plan: &RunPlan,
    job: Job,
    task: &Task,
) -> Result<(TrialRecord, Vec<u8>), RunError> {
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
    let mut run = TrialRun::start(plan, job, copy.as_ref().map(|(_, s)| s.clone()));
    let mut judge = TaskJudge::new(task);
    let mut turns: Vec<AttemptRecord> = Vec::new();
    let mut returned: Option<Vec<u8>> = None;
    let mut ending = Ending::TurnLimit;
    let mut answer = None;

    for number in 1..=task.max_turns {
        let (turn, mut record) = match run.step(number, returned.as_deref()).await? {
            Step::Turn(turn, record) => (turn, record),
            Step::Lost(record) => {
                turns.push(record);
                ending = Ending::Lost;
                break;
            }
        };
        let marks = judge.observe(turn.calls(), &turn.batch.results);
        record.milestones = marks.milestones;
        record.redundant = marks.redundant;
        record.failures.extend(std::iter::repeat_n(
            Failure::ForbiddenCall,
            marks.forbidden as usize,
        ));
        record.success = record.failures.is_empty();
        turns.push(record);
        if marks.forbidden > 0 {
            ending = Ending::ForbiddenCall;
            break;
        }
        if let Ok(parsed) = &turn.parsed
            && parsed.calls.is_empty()
        {
            ending = Ending::Answer;
            answer = Some(parsed.text.clone());
            break;
        }
        returned = Some(turn.returned);
    }
    mark_recovered(&mut turns);

    let success = match ending {
        // Already failed, or not the model's doing: nothing more to judge.
        Ending::ForbiddenCall | Ending::Lost => false,
        Ending::Answer | Ending::TurnLimit => {
            let sandbox = copy
                .as_ref()
                .map(|(_, s)| s.root())
                .or(scenario.sandbox.as_deref());
            let verdict = judge.verdict(answer.as_deref(), sandbox, |collection, id| {
                run.tools.store_record(collection, id)
            });
            let last = turns.last_mut().expect("a task has at least one turn");
            last.failures.extend(&verdict);
            last.success = last.failures.is_empty();
            ending == Ending::Answer && verdict.is_empty()
        }
    };
    let record = TrialRecord {
        model: job.model,
        scenario: job.scenario,
        trial: job.trial,
        attempts: turns,
        task: Some(TaskEnd {
            success,
            ending,
            milestones: task.milestones.len() as u32,
        }),
    };
    Ok((record, run.into_log()))
}

/// A call error is recovered when a later turn makes calls and all of them
/// succeed: the model got back on track.
fn mark_recovered(turns: &mut [AttemptRecord]) {
    let clean = |t: &AttemptRecord| t.calls > 0 && !t.failures.iter().any(|f| f.is_call_error());
    let mut clean_later = false;
    for turn in turns.iter_mut().rev() {
        if clean_later {
            turn.recovered = turn.failures.iter().filter(|f| f.is_call_error()).count() as u32;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(calls: u32, failures: &[Failure]) -> AttemptRecord {
        AttemptRecord {
            calls,
            failures: failures.to_vec(),
            ..AttemptRecord::default()
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
        let recovered: Vec<u32> = turns.iter().map(|t| t.recovered).collect();
        assert_eq!(recovered, [2, 1, 0, 0, 0]);
    }
}
