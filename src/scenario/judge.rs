//! Judging a task as it runs: [`TaskJudge`] follows one trial turn by
//! turn (milestones reached, forbidden and redundant calls, what the tools
//! answered for `$result`), and at the end of each user turn says what is
//! wrong: milestones missed, the final state, the answer.

use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::checks::StoreEntry;
use super::matcher::{Matcher, RecentResults};
use super::task::Task;
use crate::call::{Failure, ParsedCall, ToolResult};

/// Does the answer text satisfy `matcher`? A number matcher (`$approx`,
/// `$gt`, ...) looks for a number in the text; a plain string must be the
/// whole text (trimmed); the others judge the text as a string.
pub fn answer_matches(matcher: &Matcher, text: &str) -> bool {
    static NUMBER: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"-?\d[\d,]*(?:\.\d+)?").expect("a valid regex"));
    match matcher {
        Matcher::Approx { .. } | Matcher::Range { .. } => NUMBER
            .find_iter(text)
            .filter_map(|m| m.as_str().replace(',', "").parse::<f64>().ok())
            .any(|n| matcher.matches(Some(&Value::from(n)))),
        Matcher::Exact(Value::String(expected)) => text.trim() == expected.trim(),
        other => other.matches(Some(&Value::String(text.to_owned()))),
    }
}

/// What one turn of a task did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnMarks {
    /// Milestones first reached in this turn.
    pub milestones: u32,
    /// Calls repeating an earlier successful call exactly, with no write
    /// between them that could have changed what a read returns, and
    /// reaching no milestone.
    pub redundant: u32,
    /// Calls the task forbids.
    pub forbidden: u32,
}

/// Follows one trial of a task: which milestones were reached, what the
/// tools answered (for `$result`), which calls were made.
#[derive(Debug)]
pub struct TaskJudge<'t> {
    task: &'t Task,
    reached: Vec<bool>,
    recent: RecentResults,
    /// Successful calls since the last write (and writes), as name and
    /// arguments.
    made: HashSet<(String, String)>,
}

impl<'t> TaskJudge<'t> {
    pub fn new(task: &'t Task) -> Self {
        TaskJudge {
            task,
            reached: vec![false; task.milestones.len()],
            recent: RecentResults::default(),
            made: HashSet::new(),
        }
    }

    /// Judge one turn's calls and their results (in call order). A call
    /// reaches a milestone when it succeeded, matches it (reading `$result`
    /// from what earlier turns returned) and follows what it must follow.
    pub fn observe(&mut self, calls: &[ParsedCall], results: &[ToolResult]) -> TurnMarks {
        let mut marks = TurnMarks::default();
        for (i, call) in calls.iter().enumerate() {
            let ParsedCall::Ok(call) = call else { continue };
            marks.forbidden += u32::from(self.task.forbidden.iter().any(|f| {
                f.name == call.name
                    && f.arguments
                        .matches_arguments_listed(&call.arguments, &self.recent)
            }));
            let succeeded = results.get(i).is_some_and(|r| !r.is_error());
            if !succeeded {
                continue;
            }
            let writes = self.task.writes.contains(&call.name);
            if writes {
                // What reads return may have changed.
                self.made
                    .retain(|(name, _)| self.task.writes.contains(name));
            }
            let repeated = !self
                .made
                .insert((call.name.clone(), call.arguments.to_string()));
            let reachable = self
                .task
                .milestones
                .iter()
                .enumerate()
                .position(|(m, milestone)| {
                    !self.reached[m]
                        && milestone.requires.iter().all(|r| self.reached[*r])
                        && milestone.name == call.name
                        && milestone
                            .arguments
                            .matches_arguments_in(&call.arguments, &self.recent)
                });
            match reachable {
                Some(m) => {
                    self.reached[m] = true;
                    marks.milestones += 1;
                }
                None => marks.redundant += u32::from(repeated),
            }
        }
        // Results are read in the next turn, not by calls made alongside.
        for (call, result) in calls.iter().zip(results) {
            if let ParsedCall::Ok(call) = call
                && !result.is_error()
            {
                self.recent.record(&call.name, &result.content);
            }
        }
        marks
    }

    /// The user speaks again: judge the next user turn on its checks,
    /// with what the tools answered so far kept (for `$result`).
    pub fn next_user_turn(&mut self, task: &'t Task) {
        self.task = task;
        self.reached = vec![false; task.milestones.len()];
    }

    /// Milestones reached so far.
    pub fn reached(&self) -> u32 {
        self.reached.iter().filter(|r| **r).count() as u32
    }

    /// What the task's end says is wrong: milestones not reached, the
    /// final state, and the answer (`None` when the model never answered).
    /// `store` reads a record of the trial's store.
    pub fn verdict(
        &self,
        answer: Option<&str>,
        sandbox: Option<&Path>,
        store: impl Fn(&str, &str) -> Option<Value>,
        probed: Option<&Value>,
    ) -> Vec<Failure> {
        let task = self.task;
        let mut failures = Vec::new();
        if self.reached.iter().any(|r| !r) {
            failures.push(Failure::MilestoneMissed);
        }
        let file_holds = |(path, matcher): &(String, Matcher)| {
            let content = sandbox
                // Opened as the file tools open: a link the model made
                // that leads out is no file of the sandbox's.
                .and_then(|root| {
                    let relative = crate::tool::sandbox_path(path).ok()?;
                    String::from_utf8(crate::tool::read_beneath(root, &relative).ok()?).ok()
                })
                .map(Value::String);
            match (matcher, &content) {
                (Matcher::Exact(Value::String(expected)), Some(Value::String(actual))) => {
                    expected == actual
                }
                _ => matcher.matches(content.as_ref()),
            }
        };
        let record_holds =
            |entry: &StoreEntry| match (&entry.fields, store(&entry.collection, &entry.id)) {
                (None, record) => record.is_none(),
                (Some(fields), Some(record)) => fields.matches_listed(&record, &self.recent),
                (Some(_), None) => false,
            };
        let probe_holds = task
            .final_probe
            .as_ref()
            .is_none_or(|probe| probe.result.matches(probed));
        if !task.final_files.iter().all(file_holds)
            || !task.final_store.iter().all(record_holds)
            || !probe_holds
        {
            failures.push(Failure::WrongFinalState);
        }
        match answer {
            Some(text) if !task.answer.iter().all(|m| answer_matches(m, text)) => {
                failures.push(Failure::WrongAnswer);
            }
            Some(_) => {}
            None => failures.push(Failure::TurnLimit),
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Registry;
    use serde_json::json;

    #[test]
    fn answers_are_judged_as_text_with_numbers_found_in_it() {
        let approx = Matcher::from_value(&json!({"$approx": 1250.5, "$tolerance": 0.01})).unwrap();
        assert!(answer_matches(&approx, "The total is 1,250.50 EUR."));
        assert!(!answer_matches(&approx, "The total is 1,260 EUR."));
        let any = Matcher::from_value(&json!({"$any_of": ["yes", "Yes."]})).unwrap();
        assert!(answer_matches(&any, "yes") && !answer_matches(&any, "no"));
        let regex = Matcher::from_value(&json!({"$regex": "o-\\d+", "$example": "o-7"})).unwrap();
        assert!(answer_matches(&regex, "refunded o-17"));
        assert!(answer_matches(&Matcher::Exact(json!("done")), " done\n"));
    }

    fn call(name: &str, arguments: Value) -> ParsedCall {
        ParsedCall::Ok(crate::call::ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.try_into().unwrap(),
        })
    }

    fn result(content: &str, error: bool) -> ToolResult {
        ToolResult {
            call_id: "c".into(),
            name: String::new(),
            content: content.into(),
            error_kind: error.then_some(crate::call::ErrorKind::Runtime),
            started: Default::default(),
            elapsed: Default::default(),
            images: Vec::new(),
        }
    }

    fn task(block: Value) -> Task {
        let state = json!({"orders": [{"id": "o-1", "status": "paid"}, {"id": "o-2"}]});
        let env = crate::tool::ToolEnv {
            store: crate::tool::Store::seeded(state.as_object().unwrap()).unwrap(),
            ..crate::tool::ToolEnv::default()
        };
        let registry = Registry::builtins(&["store_find", "store_get", "store_put"], env).unwrap();
        Task::compile(&serde_json::from_value(block).unwrap(), &registry).unwrap()
    }

    #[test]
    fn milestones_follow_their_order_and_read_ids_from_earlier_results() {
        let task = task(json!({
            "milestones": [
                {"id": "find", "name": "store_find", "arguments": {"collection": "users"}},
                {"id": "get", "name": "store_get", "arguments": {"collection": "users", "id": {"$result": "store_find", "pointer": "/0/id"}}},
                {"id": "note", "name": "store_put", "unordered": true, "after": "find", "arguments": {"collection": "notes", "record": {"$present": true, "$example": {"id": "n"}}}}
            ],
            "forbidden": [{"name": "store_put", "arguments": {"collection": "users"}}]
        }));
        let mut judge = TaskJudge::new(&task);
        // The get before the find reaches nothing, whatever its id.
        let get = call("store_get", json!({"collection": "users", "id": "u-9"}));
        let marks = judge.observe(std::slice::from_ref(&get), &[result("{}", false)]);
        assert_eq!(marks.milestones, 0);
        // A failed find reaches nothing either.
        let find = call("store_find", json!({"collection": "users"}));
        let marks = judge.observe(std::slice::from_ref(&find), &[result("Error", true)]);
        assert_eq!((marks.milestones, marks.redundant), (0, 0));
        let marks = judge.observe(
            std::slice::from_ref(&find),
            &[result(r#"[{"id": "u-9"}]"#, false)],
        );
        assert_eq!(marks.milestones, 1);
        // An id no result held is not the milestone; the one read is.
        let invented = call("store_get", json!({"collection": "users", "id": "u-1"}));
        let marks = judge.observe(&[invented], &[result("{}", false)]);
        assert_eq!(marks.milestones, 0);
        let marks = judge.observe(
            &[get.clone(), get.clone()],
            &[result("{}", false), result("{}", false)],
        );
        // The first reaches it (made before, it reached nothing then); the
        // same call again is redundant.
        assert_eq!((marks.milestones, marks.redundant), (1, 1));
        let forbidden = call(
            "store_put",
            json!({"collection": "users", "record": {"id": "u-9"}}),
        );
        let note = call(
            "store_put",
            json!({"collection": "notes", "record": {"id": "n"}}),
        );
        let marks = judge.observe(
            &[forbidden, note],
            &[result("{}", false), result("{}", false)],
        );
        assert_eq!((marks.milestones, marks.forbidden), (1, 1));
        // After a write, reading again is not redundant: the data may differ.
        let marks = judge.observe(std::slice::from_ref(&get), &[result("{}", false)]);
        assert_eq!(marks.redundant, 0);
        assert_eq!(judge.reached(), 3);
        assert!(
            judge
                .verdict(Some("done"), None, |_, _| None, None)
                .is_empty()
        );
        assert_eq!(
            judge.verdict(None, None, |_, _| None, None),
            [Failure::TurnLimit]
        );
    }

    #[test]
    fn a_probe_must_answer_what_it_must_and_its_tool_is_hidden_from_the_start() {
        let task = task(json!({
            "final_state": {"probe": {"tool": "store_get", "arguments": {"collection": "orders", "id": "o-1"}, "result": {"status": "refunded"}}},
            "answer": {"$contains": "done"}
        }));
        assert_eq!(task.hidden_at_start(), ["store_get"]);
        let judge = TaskJudge::new(&task);
        let verdict =
            |probed: Option<Value>| judge.verdict(Some("done"), None, |_, _| None, probed.as_ref());
        assert!(verdict(Some(json!({"status": "refunded"}))).is_empty());
        assert_eq!(
            verdict(Some(json!({"status": "paid"}))),
            [Failure::WrongFinalState]
        );
        // A text where JSON was wanted, or no answer at all, is not it.
        assert_eq!(verdict(Some(json!("refunded"))), [Failure::WrongFinalState]);
        assert_eq!(verdict(None), [Failure::WrongFinalState]);
    }

    #[test]
    fn the_final_store_is_checked_record_by_record() {
        let task = task(json!({
            "final_state": {"store": {"orders": {"o-1": {"status": "refunded"}, "o-2": null}}},
            "answer": [{"$contains": "o-1"}, {"$regex": "refund(ed)?", "$example": "refunded"}]
        }));
        let judge = TaskJudge::new(&task);
        let store = |status: &'static str, o2: bool| {
            move |collection: &str, id: &str| match (collection, id) {
                ("orders", "o-1") => Some(json!({"id": "o-1", "status": status, "total": 3})),
                ("orders", "o-2") if o2 => Some(json!({"id": "o-2"})),
                _ => None,
            }
        };
        assert!(
            judge
                .verdict(Some("refunded o-1"), None, store("refunded", false), None)
                .is_empty()
        );
        assert_eq!(
            judge.verdict(Some("refunded o-1"), None, store("paid", false), None),
            [Failure::WrongFinalState]
        );
        assert_eq!(
            judge.verdict(Some("refunded o-1"), None, store("refunded", true), None),
            [Failure::WrongFinalState]
        );
        assert_eq!(
            judge.verdict(Some("refunded o-2"), None, store("refunded", false), None),
            [Failure::WrongAnswer]
        );
        assert_eq!(task.answer_example(), "o-1 refunded");
    }
}
