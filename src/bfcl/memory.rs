//! BFCL's memory entries (`BFCL_v4_memory.json`) as tasks on BFCL's own
//! memory classes, served by the bridge, one category per backend
//! (`memory_kv`, `memory_rec_sum`, `memory_vector`), as BFCL runs them.
//!
//! Before its questions, each of the file's scenarios (customer, student,
//! ...) has prerequisite conversations (`memory_prereq_conversation/`) in
//! which the model is told what to remember. Each becomes a conversation
//! task, `memory_kv_prereq_N-customer-K`, that runs `after` the one
//! before it; each question, `memory_kv_N-customer-K`, runs after the
//! last. The chain of one model's trials with one number shares a folder
//! (`{chain_dir}`) where BFCL's classes keep their snapshots, as BFCL's
//! result folder holds them: the prerequisites are played once per model
//! and trial, not once per question. Every entry opens with the system
//! message BFCL writes from the memory it starts with (the bridge's
//! `bfcl_memory_prompt`); a question is judged on its final answer by
//! BFCL's agentic checker (`bfcl_check_answer`). BFCL does not score the
//! prerequisites: here they pass when the model answered every turn, and
//! `report bfcl` leaves them out. Mock models answer a question with its
//! first possible answer.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::agentic::CHECK_ANSWER;
use super::bridge_ask::BridgeError;
use super::multi_turn::{MAX_STEPS, NotImportable, user_words};
use super::web_search::Answer;
use super::{BfclError, read_jsonl};

/// The backends, in BFCL's order: each is a category `memory_<backend>`.
pub const BACKENDS: [&str; 3] = ["kv", "rec_sum", "vector"];

/// The bridge's probe: the entry's opening system message.
pub const MEMORY_PROMPT: &str = "bfcl_memory_prompt";

/// BFCL's scenarios (`MEMORY_SCENARIO_NAME`), each with its prerequisite
/// file `memory_prereq_conversation/memory_<scenario>.json`.
const SCENARIOS: [&str; 5] = ["student", "customer", "finance", "healthcare", "notetaker"];

/// One memory question or prerequisite conversation, as BFCL's files
/// hold it (ids with `memory`, not yet the backend's category).
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub id: String,
    pub question: Vec<Vec<Value>>,
    pub scenario: String,
}

/// A memory file and what lies beside it.
#[derive(Debug)]
pub struct MemoryFiles {
    pub questions: Vec<Entry>,
    pub answers: BTreeMap<String, Answer>,
    /// By scenario, its prerequisite conversations in order.
    pub prerequisites: Vec<(String, Vec<Entry>)>,
    /// By backend, its functions' names.
    pub functions: BTreeMap<String, Vec<String>>,
}

impl MemoryFiles {
    /// The questions, their answers, and beside them the prerequisite
    /// conversations and the backends' function docs.
    pub fn read(questions: &Path, answers: &Path) -> Result<MemoryFiles, BfclError> {
        let folder = questions.parent().unwrap_or(Path::new("."));
        let mut prerequisites = Vec::new();
        for scenario in SCENARIOS {
            let path = folder
                .join("memory_prereq_conversation")
                .join(format!("memory_{scenario}.json"));
            prerequisites.push((scenario.to_owned(), read_jsonl(&path)?));
        }
        let mut functions = BTreeMap::new();
        for backend in BACKENDS {
            let path = folder
                .join("multi_turn_func_doc")
                .join(format!("memory_{backend}.json"));
            let docs: Vec<Value> = read_jsonl(&path)?;
            let names = docs
                .iter()
                .filter_map(|d| d["name"].as_str().map(str::to_owned))
                .collect();
            functions.insert(backend.to_owned(), names);
        }
        Ok(MemoryFiles {
            questions: read_jsonl(questions)?,
            answers: read_jsonl::<Answer>(answers)?
                .into_iter()
                .map(|a| (a.id.clone(), a))
                .collect(),
            prerequisites,
            functions,
        })
    }
}

/// Which backends the bridge can run: backend to `None`, or why not (the
/// vector backend needs `sentence-transformers`, `faiss` and its encoder).
pub fn backends(bridge: &[String]) -> Result<BTreeMap<String, Option<String>>, BridgeError> {
    let text = super::bridge_ask::ask(bridge, "--memory-backends")?;
    serde_json::from_str(&text).map_err(|e| BridgeError {
        command: bridge.join(" "),
        flag: "--memory-backends".to_owned(),
        problem: format!("not a JSON object of backends: {e}"),
    })
}

/// The id of a BFCL memory entry in one backend's category:
/// `memory_prereq_3-customer-3` in `memory_kv` is `memory_kv_prereq_3-customer-3`.
pub fn id_in(id: &str, category: &str) -> String {
    id.replacen("memory", category, 1)
}

/// The memory category of an entry id (a question's or a
/// prerequisite's), with whether it is a prerequisite.
pub fn category_of(id: &str) -> Option<(&'static str, bool)> {
    ["memory_kv", "memory_rec_sum", "memory_vector"]
        .into_iter()
        .find_map(|category| {
            let rest = id.strip_prefix(category)?.strip_prefix('_')?;
            let (rest, prerequisite) = match rest.strip_prefix("prereq_") {
                Some(rest) => (rest, true),
                None => (rest, false),
            };
            rest.starts_with(|c: char| c.is_ascii_digit())
                .then_some((category, prerequisite))
        })
}

/// Every task of one backend: each scenario's prerequisites, chained, then
/// its questions, each after the last prerequisite.
pub fn scenarios(
    files: &MemoryFiles,
    backend: &str,
    bridge: &[String],
) -> Result<Vec<Value>, (String, NotImportable)> {
    let category = format!("memory_{backend}");
    let functions = files.functions.get(backend).cloned().unwrap_or_default();
    let mut tasks = Vec::new();
    for (scenario, prerequisites) in &files.prerequisites {
        let mut last: Option<String> = None;
        for entry in prerequisites {
            let id = id_in(&entry.id, &category);
            let task = prerequisite(entry, &id, last.as_deref(), &functions, bridge)
                .map_err(|e| (id.clone(), e))?;
            tasks.push(task);
            last = Some(id);
        }
        for entry in files.questions.iter().filter(|q| &q.scenario == scenario) {
            let id = id_in(&entry.id, &category);
            let answer = files
                .answers
                .get(&entry.id)
                .ok_or_else(|| (id.clone(), NotImportable::from("no possible answer")))?;
            let task = question(entry, answer, &id, last.as_deref(), &functions, bridge)
                .map_err(|e| (id.clone(), e))?;
            tasks.push(task);
        }
    }
    Ok(tasks)
}

/// The tools of a memory entry: the backend's functions and the bridge's
/// probes, the entry's own server started with the chain's folder.
fn tools(id: &str, functions: &[String], probes: &[&str], bridge: &[String]) -> Value {
    let mut only: Vec<&str> = functions.iter().map(String::as_str).collect();
    only.extend(probes);
    // The backends' functions share names, not schemas: one server each.
    let backend = category_of(id).map_or("kv", |(c, _)| &c["memory_".len()..]);
    let mut command = bridge.to_vec();
    command.extend(["--memory-backend".to_owned(), backend.to_owned()]);
    json!([{
        "mcp": {"command": command, "forks": true},
        "only": only,
        "per_trial": true,
        "trial_args": ["--entry", id, "--memory-dir", "{chain_dir}"],
        // BFCL runs whatever the model sends.
        "validate": false,
    }])
}

/// A prerequisite conversation: its turns the user's, nothing judged.
fn prerequisite(
    entry: &Entry,
    id: &str,
    after: Option<&str>,
    functions: &[String],
    bridge: &[String],
) -> Result<Value, NotImportable> {
    let mut turns = entry.question.iter().map(|turn| user_words(turn));
    let first = turns
        .next()
        .flatten()
        .ok_or("the first turn has no user message")?;
    let later: Vec<Value> = turns
        .enumerate()
        .map(|(k, words)| {
            let words = words.ok_or(format!("turn {} has no user message", k + 1))?;
            Ok(json!({"user": words, "answer": answered()}))
        })
        .collect::<Result<_, NotImportable>>()?;
    let category = category_of(id).map_or("memory", |(c, _)| c);
    Ok(json!({
        "name": id,
        "description": format!(
            "BFCL {category} prerequisite conversation {id} (Berkeley Function Calling Leaderboard, Apache-2.0): the user tells what to remember, on BFCL's own memory class; judged only on answering each turn, as BFCL does not score it"
        ),
        "tags": ["bfcl", format!("{category}_prereq"), "agentic"],
        "after": after.into_iter().collect::<Vec<_>>(),
        "tools": tools(id, functions, &[MEMORY_PROMPT], bridge),
        "messages": [{"role": "user", "content": first}],
        "task": {
            "max_turns": MAX_STEPS,
            "system_from": {"tool": MEMORY_PROMPT},
            "answer": answered(),
            "turns": later,
        },
    }))
}

/// A prerequisite's only check, on each user turn: the model answered it
/// (within BFCL's step limit), so that the conversation was held.
fn answered() -> Value {
    json!({"$regex": "\\S", "$example": "Noted."})
}

/// A question on what the prerequisites told, judged on its answer.
fn question(
    entry: &Entry,
    answer: &Answer,
    id: &str,
    after: Option<&str>,
    functions: &[String],
    bridge: &[String],
) -> Result<Value, NotImportable> {
    let words = entry
        .question
        .first()
        .and_then(|turn| user_words(turn))
        .ok_or("the question has no user message")?;
    let first = answer.ground_truth.first().ok_or("no possible answer")?;
    let category = category_of(id).map_or("memory", |(c, _)| c);
    let (reference, final_state) = super::agentic::answer_checks(first);
    Ok(json!({
        "name": id,
        "description": format!(
            "BFCL {category} entry {id} (Berkeley Function Calling Leaderboard, Apache-2.0): a question on what earlier conversations told, answered from BFCL's own memory class and judged by its agentic checker"
        ),
        "tags": ["bfcl", category, "agentic"],
        "after": after.into_iter().collect::<Vec<_>>(),
        "tools": tools(id, functions, &[MEMORY_PROMPT, CHECK_ANSWER], bridge),
        "messages": [{"role": "user", "content": words}],
        "task": {
            "max_turns": MAX_STEPS,
            "system_from": {"tool": MEMORY_PROMPT},
            "reference_answer": reference,
            "final_state": final_state,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, turns: &[&str]) -> Entry {
        Entry {
            id: id.to_owned(),
            question: turns
                .iter()
                .map(|t| vec![json!({"role": "user", "content": t})])
                .collect(),
            scenario: "customer".to_owned(),
        }
    }

    #[test]
    fn prerequisites_chain_and_questions_follow_the_last_on_the_chains_folder() {
        let files = MemoryFiles {
            questions: vec![entry("memory_0-customer-0", &["What is my name?"])],
            answers: [(
                "memory_0-customer-0".to_owned(),
                Answer {
                    id: "memory_0-customer-0".to_owned(),
                    ground_truth: vec!["Michael".to_owned()],
                },
            )]
            .into(),
            prerequisites: vec![(
                "customer".to_owned(),
                vec![
                    entry(
                        "memory_prereq_0-customer-0",
                        &["Hi, I am Michael.", "I live in Seattle."],
                    ),
                    entry("memory_prereq_1-customer-1", &["I am 35."]),
                ],
            )],
            functions: [("kv".to_owned(), vec!["core_memory_add".to_owned()])].into(),
        };
        let bridge = ["python".to_owned(), "bridge.py".to_owned()];
        let tasks = scenarios(&files, "kv", &bridge).unwrap();
        let names: Vec<&str> = tasks.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "memory_kv_prereq_0-customer-0",
                "memory_kv_prereq_1-customer-1",
                "memory_kv_0-customer-0"
            ]
        );
        assert_eq!(tasks[0]["after"], json!([]));
        assert_eq!(tasks[1]["after"], json!(["memory_kv_prereq_0-customer-0"]));
        assert_eq!(tasks[2]["after"], json!(["memory_kv_prereq_1-customer-1"]));
        // The second turn of a conversation is the user's next words.
        assert_eq!(tasks[0]["task"]["turns"][0]["user"], "I live in Seattle.");
        assert!(tasks[0]["task"].get("final_state").is_none());
        assert_eq!(tasks[0]["task"]["turns"][0]["answer"], answered());
        let tools = &tasks[2]["tools"][0];
        assert_eq!(
            tools["trial_args"],
            json!([
                "--entry",
                "memory_kv_0-customer-0",
                "--memory-dir",
                "{chain_dir}"
            ])
        );
        assert_eq!(
            tools["only"],
            json!(["core_memory_add", MEMORY_PROMPT, CHECK_ANSWER])
        );
        assert_eq!(tasks[2]["task"]["system_from"]["tool"], MEMORY_PROMPT);
        assert_eq!(
            tasks[2]["task"]["final_state"]["probe"]["tool"],
            CHECK_ANSWER
        );
        assert_eq!(tasks[1]["tags"][1], "memory_kv_prereq");
        assert_eq!(tasks[2]["tags"][1], "memory_kv");
    }

    #[test]
    fn memory_categories_come_from_ids() {
        assert_eq!(
            category_of("memory_kv_3-customer-3"),
            Some(("memory_kv", false))
        );
        assert_eq!(
            category_of("memory_rec_sum_prereq_0-student-0"),
            Some(("memory_rec_sum", true))
        );
        assert_eq!(category_of("memory_3-customer-3"), None);
        assert_eq!(category_of("memory_kv"), None);
    }
}
