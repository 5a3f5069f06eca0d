//! BFCL's web search entries (`BFCL_v4_web_search.json`) as tasks on
//! BFCL's own `WebSearchAPI`, served by the bridge: each question twice,
//! `web_search_base_N` and `web_search_no_snippet_N` (the results' snippets
//! shown or not), as BFCL runs them. The model is told BFCL's answer
//! format (its agentic system prompt, which the bridge gives), may search
//! and fetch pages, and is judged on its final answer by the bridge's
//! probe, `bfcl_check_answer`: BFCL's `agentic_checker` against the
//! entry's possible answers. Mock models answer with the first of them.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::bridge_ask::BridgeError;
use super::multi_turn::{MAX_STEPS, NotImportable};
use super::{BfclError, read_jsonl};

/// The two categories of the one file.
pub const CATEGORIES: [&str; 2] = ["web_search_base", "web_search_no_snippet"];

use super::agentic::CHECK_ANSWER;

/// `WebSearchAPI`'s functions (`multi_turn_func_doc/web_search.json`).
const FUNCTIONS: [&str; 2] = ["search_engine_query", "fetch_url_content"];

/// One web search question.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub id: String,
    pub question: Vec<Vec<Value>>,
}

/// Its possible answers.
#[derive(Debug, Clone, Deserialize)]
pub struct Answer {
    pub id: String,
    pub ground_truth: Vec<String>,
}

/// The web search category of an entry id: `web_search_no_snippet_3`.
pub fn category_of(id: &str) -> Option<&'static str> {
    CATEGORIES.iter().copied().find(|c| {
        id.strip_prefix(c)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|ch| ch.is_ascii_digit()))
    })
}

/// BFCL's system prompt for agentic entries (its answer format), as the
/// bridge prints it from BFCL's package.
pub fn agentic_prompt(bridge: &[String]) -> Result<String, BridgeError> {
    super::bridge_ask::ask(bridge, "--agentic-prompt")
}

/// The file's questions with their possible answers.
pub fn entries(questions: &Path, answers: &Path) -> Result<Vec<(Entry, Answer)>, BfclError> {
    let entries: Vec<Entry> = read_jsonl(questions)?;
    let mut answers: std::collections::BTreeMap<String, Answer> = read_jsonl::<Answer>(answers)?
        .into_iter()
        .map(|a| (a.id.clone(), a))
        .collect();
    Ok(entries
        .into_iter()
        .filter_map(|e| {
            let answer = answers.remove(&e.id)?;
            Some((e, answer))
        })
        .collect())
}

/// One question in one category (`web_search_base`) as a task (JSON),
/// its tools served by `bridge`, BFCL's `prompt` first.
pub fn scenario(
    entry: &Entry,
    answer: &Answer,
    category: &str,
    bridge: &[String],
    prompt: &str,
) -> Result<Value, NotImportable> {
    let id = entry.id.replacen("web_search", category, 1);
    let mut messages = vec![json!({"role": "system", "content": prompt})];
    messages.extend(entry.question.first().into_iter().flatten().cloned());
    if messages.len() < 2 {
        return Err("the question has no messages".into());
    }
    let first = answer.ground_truth.first().ok_or("no possible answer")?;
    let mut only: Vec<&str> = FUNCTIONS.to_vec();
    only.push(CHECK_ANSWER);
    let snippets = if category == "web_search_base" {
        "with"
    } else {
        "without"
    };
    let (reference, final_state) = super::agentic::answer_checks(first);
    Ok(json!({
        "name": id,
        "description": format!(
            "BFCL {category} entry {id} (Berkeley Function Calling Leaderboard, Apache-2.0): a question to answer by searching the web, {snippets} the results' snippets, on BFCL's own WebSearchAPI and judged by its agentic checker"
        ),
        "tags": ["bfcl", category, "agentic"],
        "tools": [{
            "mcp": {"command": bridge, "forks": true},
            "only": only,
            "per_trial": true,
            "trial_args": ["--entry", id],
            // BFCL runs whatever the model sends.
            "validate": false,
        }],
        "messages": messages,
        "task": {
            "max_turns": MAX_STEPS,
            "reference_answer": reference,
            "final_state": final_state,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_becomes_two_tasks_told_bfcls_format_and_judged_on_the_answer() {
        let entry: Entry = serde_json::from_value(json!({
            "id": "web_search_7",
            "question": [[{"role": "user", "content": "Who won?"}]],
            "involved_classes": ["WebSearchAPI"]
        }))
        .unwrap();
        let answer = Answer {
            id: "web_search_7".into(),
            ground_truth: vec!["Ada".into(), "Ada Lovelace".into()],
        };
        let bridge = ["python".to_owned(), "bridge.py".to_owned()];
        let task = scenario(&entry, &answer, "web_search_no_snippet", &bridge, "FORMAT").unwrap();
        assert_eq!(task["name"], "web_search_no_snippet_7");
        assert_eq!(task["tags"][1], "web_search_no_snippet");
        assert_eq!(task["messages"][0]["content"], "FORMAT");
        assert_eq!(task["messages"][1]["content"], "Who won?");
        assert_eq!(task["tools"][0]["trial_args"][1], "web_search_no_snippet_7");
        assert_eq!(task["task"]["final_state"]["probe"]["tool"], CHECK_ANSWER);
        assert!(
            task["task"]["reference_answer"]
                .as_str()
                .unwrap()
                .contains("'Ada'")
        );
        assert_eq!(category_of("web_search_base_12"), Some("web_search_base"));
        assert_eq!(category_of("web_search_12"), None);
    }
}
