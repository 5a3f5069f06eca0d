//! Tasks: multi-step scenarios where every result feeds the next call,
//! judged when the model answers on the milestones it reached, the calls
//! it must never make, what the stateful tools hold at the end and what
//! its answer says. [`TaskJudge`] follows one trial of a task turn by turn.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::ExpectedCallFile;
use super::matcher::{ArgumentMatchers, Matcher, RecentResults};
use crate::call::{Failure, ParsedCall, ToolResult};
use crate::pointer::{Located, Pointer};
use crate::tool::Registry;

/// Turns a task gets unless it says otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// A scenario's `task` block as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    #[serde(default)]
    pub milestones: Vec<MilestoneFile>,
    #[serde(default)]
    pub forbidden: Vec<ExpectedCallFile>,
    #[serde(default)]
    pub final_state: FinalStateFile,
    /// A matcher on the final text, or an array of them (all must hold).
    #[serde(default)]
    pub answer: Option<Value>,
}

fn default_max_turns() -> u32 {
    DEFAULT_MAX_TURNS
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MilestoneFile {
    /// What `after` calls it; `m1`, `m2`, ... by position when absent.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Reached whenever it happens, not in list order.
    #[serde(default)]
    pub unordered: bool,
    /// The id (or ids) of earlier milestones it must follow.
    #[serde(default)]
    pub after: After,
}

/// `"after": "read"` or `"after": ["read_a", "read_b"]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(untagged)]
pub enum After {
    #[default]
    Nothing,
    One(String),
    Many(Vec<String>),
}

impl After {
    fn ids(&self) -> &[String] {
        match self {
            After::Nothing => &[],
            After::One(id) => std::slice::from_ref(id),
            After::Many(ids) => ids,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalStateFile {
    /// Sandbox path to its content (a string) or a matcher
    /// (`{"$absent": true}`: the file must not exist).
    #[serde(default)]
    pub files: BTreeMap<String, Value>,
    /// Collection to record id to the fields the record must have, or
    /// `null` when the record must be gone.
    #[serde(default)]
    pub store: BTreeMap<String, BTreeMap<String, Value>>,
}

/// A loaded task.
#[derive(Debug, Clone)]
pub struct Task {
    pub max_turns: u32,
    pub milestones: Vec<Milestone>,
    pub forbidden: Vec<Forbidden>,
    pub final_files: Vec<(String, Matcher)>,
    pub final_store: Vec<StoreEntry>,
    pub answer: Vec<Matcher>,
    /// The scenario's tools that change the world (`effect: write`).
    pub writes: HashSet<String>,
}

/// A call that must happen.
#[derive(Debug, Clone)]
pub struct Milestone {
    pub id: String,
    pub name: String,
    pub arguments: ArgumentMatchers,
    /// Milestones (by index) that must be reached before this one.
    pub requires: Vec<usize>,
}

/// A call that must never happen: the listed arguments match (others may
/// be there too).
#[derive(Debug, Clone)]
pub struct Forbidden {
    pub name: String,
    pub arguments: ArgumentMatchers,
}

/// A record the store must (or must no longer) hold when the task ends.
#[derive(Debug, Clone)]
pub struct StoreEntry {
    pub collection: String,
    pub id: String,
    /// `None`: the record must be gone.
    pub fields: Option<ArgumentMatchers>,
}

/// Where the task block is in a scenario file.
fn task_at() -> Pointer {
    Pointer::root().key("task")
}

/// A tool the task names must be one of the scenario's.
fn known_tool(registry: &Registry, name: &str, at: Pointer) -> Result<(), Located> {
    match registry.lookup(name) {
        Some(_) => Ok(()),
        None => Err(Located::new(
            at,
            format!("no tool named {name:?} in this scenario's tools"),
        )),
    }
}

/// A call's argument matchers; `$result` must read a known tool.
fn call_matchers(
    registry: &Registry,
    arguments: &Map<String, Value>,
    here: &Pointer,
) -> Result<ArgumentMatchers, Located> {
    let at = here.clone().key("arguments");
    let matchers = ArgumentMatchers::from_map(arguments).map_err(|e| e.under(&at))?;
    for tool in matchers.result_tools() {
        known_tool(registry, tool, at.clone())?;
    }
    Ok(matchers)
}

impl Task {
    /// Check a task block against the scenario's tools. Problems are
    /// located from the scenario's root.
    pub fn compile(file: &TaskFile, registry: &Registry) -> Result<Task, Located> {
        if file.max_turns == 0 {
            return Err(Located::new(
                task_at().key("max_turns"),
                "a task needs at least 1 turn",
            ));
        }
        let milestones = compile_milestones(file, registry)?;
        let mut forbidden = Vec::with_capacity(file.forbidden.len());
        for (i, f) in file.forbidden.iter().enumerate() {
            let here = task_at().key("forbidden").index(i);
            known_tool(registry, &f.name, here.clone().key("name"))?;
            forbidden.push(Forbidden {
                name: f.name.clone(),
                arguments: call_matchers(registry, &f.arguments, &here)?,
            });
        }
        let final_files = compile_final_files(file)?;
        let final_store = compile_final_store(file, registry)?;
        let answer = compile_answer(file)?;
        if file.milestones.is_empty()
            && file.final_state.files.is_empty()
            && file.final_state.store.is_empty()
            && answer.is_empty()
        {
            return Err(Located::new(
                task_at(),
                "a task needs at least one check that can fail: \"milestones\", \"final_state\" or \"answer\"",
            ));
        }
        let writes = registry
            .definitions()
            .filter(|d| d.effect == crate::tool::Effect::Write)
            .map(|d| d.name.clone())
            .collect();
        Ok(Task {
            writes,
            max_turns: file.max_turns,
            milestones,
            forbidden,
            final_files,
            final_store,
            answer,
        })
    }

    /// A text that satisfies the answer matchers, for mock models.
    pub fn answer_example(&self) -> String {
        let parts: Vec<String> = self
            .answer
            .iter()
            .filter_map(|m| match m.example()? {
                Value::String(text) => Some(text),
                other => Some(other.to_string()),
            })
            .collect();
        if parts.is_empty() {
            "Done.".to_owned()
        } else {
            parts.join(" ")
        }
    }
}

fn compile_milestones(file: &TaskFile, registry: &Registry) -> Result<Vec<Milestone>, Located> {
    let mut milestones: Vec<Milestone> = Vec::with_capacity(file.milestones.len());
    let mut previous_ordered = None;
    for (i, m) in file.milestones.iter().enumerate() {
        let here = task_at().key("milestones").index(i);
        known_tool(registry, &m.name, here.clone().key("name"))?;
        let arguments = call_matchers(registry, &m.arguments, &here)?;
        check_example(registry, &m.name, &arguments, &here)?;
        let id = m.id.clone().unwrap_or_else(|| format!("m{}", i + 1));
        if milestones.iter().any(|earlier| earlier.id == id) {
            return Err(Located::new(
                here.key("id"),
                format!("the id {id:?} is used twice"),
            ));
        }
        let mut requires = Vec::new();
        if !m.unordered {
            requires.extend(previous_ordered);
            previous_ordered = Some(i);
        }
        for after in m.after.ids() {
            let earlier = milestones
                .iter()
                .position(|e| &e.id == after)
                .ok_or_else(|| {
                    Located::new(
                        here.clone().key("after"),
                        format!("no earlier milestone has the id {after:?}"),
                    )
                })?;
            if !requires.contains(&earlier) {
                requires.push(earlier);
            }
        }
        milestones.push(Milestone {
            id,
            name: m.name.clone(),
            arguments,
            requires,
        });
    }
    Ok(milestones)
}

fn compile_final_files(file: &TaskFile) -> Result<Vec<(String, Matcher)>, Located> {
    let mut final_files = Vec::with_capacity(file.final_state.files.len());
    for (path, expected) in &file.final_state.files {
        let here = task_at().key("final_state").key("files").key(path);
        // Checked against the trial's sandbox only: never a host file.
        let relative = crate::tool::sandbox_path(path)
            .map_err(|e| Located::new(here.clone(), e.to_string()))?;
        let matcher = Matcher::from_value(expected).map_err(|e| e.under(&here))?;
        final_files.push((relative.to_string_lossy().into_owned(), matcher));
    }
    Ok(final_files)
}

fn compile_final_store(file: &TaskFile, registry: &Registry) -> Result<Vec<StoreEntry>, Located> {
    let seeded = registry.seeded_store();
    let can_add = registry.lookup("store_put").is_some();
    let mut final_store = Vec::new();
    for (collection, records) in &file.final_state.store {
        let at = task_at().key("final_state").key("store").key(collection);
        if !seeded.collection_names().any(|c| c == collection) {
            let known: Vec<&str> = seeded.collection_names().collect();
            return Err(Located::new(
                at,
                format!(
                    "the scenario's state has no collection {collection:?} (it has {}), and no tool can make one",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        for (id, expected) in records {
            let here = at.clone().key(id);
            if expected.is_null() && !can_add && seeded.record(collection, id).is_none() {
                return Err(Located::new(
                    here,
                    format!(
                        "{collection:?} holds no record {id:?} and no tool can add one, so \"must be gone\" cannot fail"
                    ),
                ));
            }
            let fields = match expected {
                Value::Null => None,
                Value::Object(fields) => {
                    Some(ArgumentMatchers::from_map(fields).map_err(|e| e.under(&here))?)
                }
                _ => {
                    return Err(Located::new(
                        here,
                        "give the fields the record must have (an object), or null \
                         when it must be gone",
                    ));
                }
            };
            final_store.push(StoreEntry {
                collection: collection.clone(),
                id: id.clone(),
                fields,
            });
        }
    }
    Ok(final_store)
}

fn compile_answer(file: &TaskFile) -> Result<Vec<Matcher>, Located> {
    let at = task_at().key("answer");
    let answer: Vec<Matcher> = match &file.answer {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| Matcher::from_value(v).map_err(|e| e.under(&at.clone().index(i))))
            .collect::<Result<_, _>>()?,
        Some(one) => vec![Matcher::from_value(one).map_err(|e| e.under(&at))?],
    };
    if answer.iter().any(|m| matches!(m, Matcher::Result { .. })) {
        return Err(Located::new(
            at,
            "$result reads a tool's result and cannot judge the answer's text",
        ));
    }
    Ok(answer)
}

/// A correct milestone call must pass its tool's schema. Arguments read
/// from results are unknown until a trial runs: such calls are checked
/// when made.
fn check_example(
    registry: &Registry,
    name: &str,
    arguments: &ArgumentMatchers,
    here: &Pointer,
) -> Result<(), Located> {
    if arguments.result_tools().next().is_some() {
        return Ok(());
    }
    let Some(tool) = registry.lookup(name) else {
        return Ok(());
    };
    let example = Value::Object(arguments.example());
    match registry.validator(tool).iter_errors(&example).next() {
        Some(error) => Err(Located::new(
            here.clone().key("arguments"),
            format!(
                "the correct call must pass its tool's schema, but {}",
                crate::tool::argument_error(&error)
            ),
        )),
        None => Ok(()),
    }
}

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
                f.name == call.name && f.arguments.matches_listed(&call.arguments, &self.recent)
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
                            .matches_in(&call.arguments, &self.recent)
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
    ) -> Vec<Failure> {
        let task = self.task;
        let mut failures = Vec::new();
        if self.reached.iter().any(|r| !r) {
            failures.push(Failure::MilestoneMissed);
        }
        let file_holds = |(path, matcher): &(String, Matcher)| {
            let content = sandbox
                .and_then(|root| std::fs::read_to_string(root.join(path)).ok())
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
        if !task.final_files.iter().all(file_holds) || !task.final_store.iter().all(record_holds) {
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
            arguments,
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
        assert!(judge.verdict(Some("done"), None, |_, _| None).is_empty());
        assert_eq!(judge.verdict(None, None, |_, _| None), [Failure::TurnLimit]);
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
                .verdict(Some("refunded o-1"), None, store("refunded", false))
                .is_empty()
        );
        assert_eq!(
            judge.verdict(Some("refunded o-1"), None, store("paid", false)),
            [Failure::WrongFinalState]
        );
        assert_eq!(
            judge.verdict(Some("refunded o-1"), None, store("refunded", true)),
            [Failure::WrongFinalState]
        );
        assert_eq!(
            judge.verdict(Some("refunded o-2"), None, store("refunded", false)),
            [Failure::WrongAnswer]
        );
        assert_eq!(task.answer_example(), "o-1 refunded");
    }
}
