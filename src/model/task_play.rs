//! How mock models play a task: turn by turn from its steps (its
//! reference calls, or else its milestones). A step
//! is made once the steps it follows are done, with `$result` arguments
//! filled from the results the mock actually received (read back from
//! what Return sent, so a pipeline that loses results makes it fail, as it
//! would a real model). When every step is done it answers. Going wrong
//! uses the per-call operators on the turn's calls and the task operators
//! (skip a step, repeat a call, answer early, make a forbidden call,
//! invent an id, do a step before the one it depends on).
//!
//! A reference step by the user (`by: "user"`) is the user's to make:
//! when only such steps are due, the mock asks for them and answers,
//! and goes on after the user's reply.
//!
//! The mock reads a result as an error like a hasty reader would: JSON
//! with an `error` key, or a text opening with the words errors open with
//! (`Error`, `Validation failed`, `Unknown tool`, `no record`, ...). Under
//! `--feedback bare` an error reads as an empty success, as it would to a
//! model. A step whose right call errs is sent again (a transient failure
//! passes); erring a third time, the error is its answer and the step is
//! done (a reference that errs as its author's did: tau2's gold actions
//! hold such calls).

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use super::operators::{self, Operator};
use crate::call::{Arguments, ParsedCall, ToolCall};
use crate::scenario::StepBy;
use crate::scenario::Task;
use crate::scenario::matcher::{INVENTED_ID, RecentResults};
use crate::tool::Registry;

/// How often a step's right call may err before the error is taken as
/// its answer.
const ERRS_BEFORE_DONE: u8 = 3;

/// The model a task is played for: how it reads results, how likely it
/// is to get a turn right, and how it goes wrong.
pub(super) trait Player {
    /// The result texts a returned message holds.
    fn result_texts(&self, returned: &[u8]) -> Vec<String>;
    /// The chance of a right turn after `streak` wrong ones, given the
    /// last clue and what the results said.
    fn chance(&self, streak: u32, last_clue: &Option<Option<String>>, texts: &[String]) -> f64;
    /// Each operator's weight.
    fn weights(&self) -> &[(Operator, f64)];
}

/// What a mock keeps between the turns of one task.
pub(super) struct TaskPlay<'a> {
    /// The whole task, and the user turn being played (`task`).
    whole: &'a Task,
    user_turn: usize,
    task: &'a Task,
    registry: &'a Registry,
    /// Milestones it believes done.
    done: Vec<bool>,
    /// Per milestone, how often its right call erred.
    erred: Vec<u8>,
    /// The results it read, for `$result` arguments.
    recent: RecentResults,
    /// Last turn's calls in order: the milestone each was meant to do
    /// (`None`: not one, or sent wrong), and the call if readable.
    pending: Vec<(Option<usize>, Option<ToolCall>)>,
    /// Its last call that succeeded, to repeat.
    last_ok: Option<ToolCall>,
    /// Wrong turns in a row (which `p_fix` applies).
    streak: u32,
    /// The clue of the last wrong turn (see `operators::Mutation`).
    last_clue: Option<Option<String>>,
}

/// One turn of the mock: its text and calls.
type Play = (String, Vec<ParsedCall>);

impl<'a> TaskPlay<'a> {
    pub(super) fn new(task: &'a Task, registry: &'a Registry) -> Self {
        TaskPlay {
            whole: task,
            user_turn: 0,
            task,
            registry,
            done: vec![false; task.steps().len()],
            erred: vec![0; task.steps().len()],
            recent: RecentResults::default(),
            pending: Vec::new(),
            last_ok: None,
            streak: 0,
            last_clue: None,
        }
    }

    /// The user speaks again: play the next user turn's steps, with what
    /// was read so far (for `$result`) kept.
    pub(super) fn next_user_turn(&mut self) {
        if let Some(task) = self.whole.user_turn(self.user_turn + 1) {
            self.user_turn += 1;
            self.task = task;
            self.done = vec![false; task.steps().len()];
            self.erred = vec![0; task.steps().len()];
            self.pending.clear();
            self.streak = 0;
            self.last_clue = None;
        }
    }

    pub(super) fn turn(
        &mut self,
        number: u32,
        returned: Option<&[u8]>,
        model: &dyn Player,
        rng: &mut StdRng,
    ) -> Play {
        let texts = returned.map(|r| model.result_texts(r)).unwrap_or_default();
        self.absorb(&texts);
        let ready = self.ready();
        let correct: Vec<ToolCall> = ready
            .iter()
            .enumerate()
            .map(|(i, &m)| self.call(number, i, m, &self.recent))
            .collect();

        let chance = model.chance(self.streak, &self.last_clue, &texts);
        // Always draw, so that a run's random sequence does not depend on p.
        let roll: f64 = rng.random();
        if roll >= chance {
            let mut candidates = model.weights().to_vec();
            while let Some(operator) = operators::draw(&mut candidates, rng) {
                if let Some(play) = self.go_wrong(operator, number, &ready, &correct, rng) {
                    return play;
                }
            }
        }
        self.play(ready, correct)
    }

    /// Read the results of the last turn's calls. A call whose result
    /// never came back is taken as done: there is nothing to read from it.
    fn absorb(&mut self, texts: &[String]) {
        for (i, (milestone, call)) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            let Some(call) = call else { continue };
            let Some(text) = texts.get(i) else {
                if let Some(m) = milestone {
                    self.done[m] = true;
                }
                continue;
            };
            if reads_as_error(text) {
                if let Some(m) = milestone {
                    self.erred[m] += 1;
                    self.done[m] = self.erred[m] >= ERRS_BEFORE_DONE;
                }
                continue;
            }
            self.recent.record(&call.name, text);
            if let Some(m) = milestone
                && self.gave_what_is_needed(m, &call.name)
            {
                self.done[m] = true;
            }
            self.last_ok = Some(call);
        }
    }

    /// Does what `tool` answered for `milestone` hold every value the
    /// steps that follow it read from that tool?
    fn gave_what_is_needed(&self, milestone: usize, tool: &str) -> bool {
        self.task
            .steps()
            .iter()
            .filter(|next| next.requires.contains(&milestone))
            .flat_map(|next| next.arguments.result_reads())
            .filter(|(t, _)| *t == tool)
            .all(|(t, pointer)| self.recent.value(t, pointer).is_some())
    }

    /// The agent's steps to do now: not done, and what they follow is.
    fn ready(&self) -> Vec<usize> {
        self.ready_by(StepBy::Agent)
    }

    fn ready_by(&self, by: StepBy) -> Vec<usize> {
        (0..self.done.len())
            .filter(|&m| {
                let step = &self.task.steps()[m];
                !self.done[m] && step.by == by && step.requires.iter().all(|r| self.done[*r])
            })
            .collect()
    }

    /// The user's steps due now, handed over: the agent asks for them and
    /// takes them as done (the user's script makes the calls). `None`
    /// when none is due.
    fn hand_over(&mut self) -> Option<String> {
        // The user's steps in a row, each after the one before.
        let mut due = Vec::new();
        loop {
            let now = self.ready_by(StepBy::User);
            if now.is_empty() {
                break;
            }
            for &m in &now {
                self.done[m] = true;
            }
            due.extend(now);
        }
        if due.is_empty() {
            return None;
        }
        let names: Vec<&str> = due
            .iter()
            .map(|&m| self.task.steps()[m].name.as_str())
            .collect();
        Some(format!(
            "Please do this on your side: {}.",
            names.join(", ")
        ))
    }

    fn call(&self, number: u32, i: usize, milestone: usize, recent: &RecentResults) -> ToolCall {
        let m = &self.task.steps()[milestone];
        ToolCall {
            id: format!("call_{number}_{i}"),
            name: m.name.clone(),
            arguments: Arguments::from_map(m.arguments.example_in(recent)),
        }
    }

    /// The right turn: the ready steps, or the answer when none is left.
    fn play(&mut self, ready: Vec<usize>, correct: Vec<ToolCall>) -> Play {
        self.streak = 0;
        self.last_clue = None;
        if correct.is_empty() {
            let said = self
                .hand_over()
                .unwrap_or_else(|| self.task.answer_example());
            return (said, Vec::new());
        }
        let calls = correct.iter().cloned().map(ParsedCall::Ok).collect();
        self.pending = ready
            .into_iter()
            .map(Some)
            .zip(correct.into_iter().map(Some))
            .collect();
        (String::new(), calls)
    }

    /// A wrong turn by `operator`, or `None` when it does not apply.
    fn go_wrong(
        &mut self,
        operator: Operator,
        number: u32,
        ready: &[usize],
        correct: &[ToolCall],
        rng: &mut StdRng,
    ) -> Option<Play> {
        match operator {
            Operator::SkipMilestone => self.skip_milestone(number, ready, rng),
            Operator::RepeatCall => self.repeat_call(number, ready, correct),
            Operator::AnswerEarly => {
                if self.done.iter().all(|d| *d) {
                    return None;
                }
                self.went_wrong(None);
                Some((self.task.answer_example(), Vec::new()))
            }
            Operator::ForbiddenCall => self.forbidden_call(number, rng),
            Operator::InventedId => self.invented_id(number, ready, correct),
            Operator::WriteBeforeRead => self.write_before_read(number, ready),
            call_operator => self.mutated(call_operator, ready, correct, rng),
        }
    }

    /// A wrong turn: the streak of wrong ones grows, and what the model
    /// may be told about it is kept.
    fn went_wrong(&mut self, clue: Option<String>) {
        self.streak += 1;
        self.last_clue = Some(clue);
    }

    /// It believes a step done: no error will tell it otherwise.
    fn skip_milestone(&mut self, number: u32, ready: &[usize], rng: &mut StdRng) -> Option<Play> {
        if ready.is_empty() {
            return None;
        }
        let k = rng.random_range(0..ready.len());
        self.done[ready[k]] = true;
        let ready = self.ready();
        let correct = ready
            .iter()
            .enumerate()
            .map(|(i, &m)| self.call(number, i, m, &self.recent))
            .collect();
        Some(self.play(ready, correct))
    }

    fn repeat_call(&mut self, number: u32, ready: &[usize], correct: &[ToolCall]) -> Option<Play> {
        let repeat = self.last_ok.clone().filter(|_| !correct.is_empty())?;
        let (text, mut calls) = self.play(ready.to_vec(), correct.to_vec());
        let repeat = ToolCall {
            id: format!("call_{number}_repeat"),
            ..repeat
        };
        self.pending.push((None, Some(repeat.clone())));
        calls.push(ParsedCall::Ok(repeat));
        Some((text, calls))
    }

    fn forbidden_call(&mut self, number: u32, rng: &mut StdRng) -> Option<Play> {
        if self.task.forbidden.is_empty() {
            return None;
        }
        let f = &self.task.forbidden[rng.random_range(0..self.task.forbidden.len())];
        let call = ToolCall {
            id: format!("call_{number}_0"),
            name: f.name.clone(),
            arguments: Arguments::from_map(f.arguments.example_in(&self.recent)),
        };
        self.went_wrong(None);
        self.pending = vec![(None, Some(call.clone()))];
        Some((String::new(), vec![ParsedCall::Ok(call)]))
    }

    /// A step that reads an earlier result gets an id made up instead.
    fn invented_id(&mut self, number: u32, ready: &[usize], correct: &[ToolCall]) -> Option<Play> {
        let k = ready.iter().position(|&m| {
            self.task.steps()[m]
                .arguments
                .result_tools()
                .next()
                .is_some()
        })?;
        let invented = self.call(number, k, ready[k], &RecentResults::default());
        let mut calls: Vec<ParsedCall> = correct.iter().cloned().map(ParsedCall::Ok).collect();
        calls[k] = ParsedCall::Ok(invented.clone());
        self.pending = ready
            .iter()
            .zip(correct)
            .enumerate()
            .map(|(i, (&m, c))| {
                if i == k {
                    (None, Some(invented.clone()))
                } else {
                    (Some(m), Some(c.clone()))
                }
            })
            .collect();
        self.went_wrong(Some(INVENTED_ID.to_owned()));
        Some((String::new(), calls))
    }

    fn write_before_read(&mut self, number: u32, ready: &[usize]) -> Option<Play> {
        let early = (0..self.done.len()).find(|&m| {
            !self.done[m] && !ready.contains(&m) && self.task.steps()[m].by == StepBy::Agent
        })?;
        let call = self.call(number, 0, early, &self.recent);
        let reads_results = self.task.steps()[early]
            .arguments
            .result_tools()
            .next()
            .is_some();
        self.went_wrong(reads_results.then(|| INVENTED_ID.to_owned()));
        self.pending = vec![(None, Some(call.clone()))];
        Some((String::new(), vec![ParsedCall::Ok(call)]))
    }

    /// The right calls, broken by a call operator.
    fn mutated(
        &mut self,
        operator: Operator,
        ready: &[usize],
        correct: &[ToolCall],
        rng: &mut StdRng,
    ) -> Option<Play> {
        let mutation = operators::apply(operator, correct, self.registry, rng)?;
        self.pending = mutation
            .calls
            .iter()
            .map(|sent| match sent {
                ParsedCall::Ok(sent) => {
                    // A call sent as it should be still does its step.
                    let step = correct.iter().position(|c| c == sent).map(|i| ready[i]);
                    (step, Some(sent.clone()))
                }
                ParsedCall::Malformed(_) => (None, None),
            })
            .collect();
        self.went_wrong(mutation.clue);
        Some((String::new(), mutation.calls))
    }
}

/// Does a result read as an error to a hasty reader?
fn reads_as_error(text: &str) -> bool {
    const OPENINGS: [&str; 9] = [
        "Error",
        "error",
        "Validation failed",
        "Unknown tool",
        "Could not read",
        "no record",
        "no collection",
        "not found",
        "path blocked",
    ];
    OPENINGS.iter().any(|o| text.starts_with(o))
        || (text.starts_with('{')
            && serde_json::from_str::<Value>(text).is_ok_and(|v| v.get("error").is_some()))
}
