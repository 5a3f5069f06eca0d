//! BFCL's multi-turn entries as conversation tasks, run on BFCL's own
//! API classes: the tools are those of the entry's classes, served by the
//! bridge (`scripts/bfcl_bridge/bridge.py`, an MCP server started per
//! trial with the entry's id); each user turn is one of the entry's, held
//! out functions are added at their turn with BFCL's own words, and each
//! turn is judged by the bridge's probe (`bfcl_check_turn`: BFCL's
//! checker on that turn). The ground truth becomes each turn's reference
//! calls, which mock models play and nothing judges.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::prompt::decode_ground_truth_call;
use super::{BfclError, read_jsonl};

/// The multi-turn categories that import as conversation tasks.
pub const MULTI_TURN_CATEGORIES: [&str; 4] = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
];

/// The bridge's probe: BFCL's verdict on one user turn.
pub const CHECK_TURN: &str = "bfcl_check_turn";

/// BFCL's user message at a turn that adds held-out functions
/// (`DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`).
pub const ADDED_FUNCTIONS_PROMPT: &str =
    "I have updated some more functions you can choose from. What about now?";

/// BFCL forces a turn to quit after more than 20 steps
/// (`MAXIMUM_STEP_LIMIT`): the 21st reply that calls ends the entry.
pub const MAX_STEPS: u32 = 21;

/// Where each class's function docs are, beside the question files
/// (`MULTI_TURN_FUNC_DOC_FILE_MAPPING`).
const FUNCTION_DOCS: [(&str, &str); 8] = [
    ("GorillaFileSystem", "gorilla_file_system.json"),
    ("MathAPI", "math_api.json"),
    ("MessageAPI", "message_api.json"),
    ("TwitterAPI", "posting_api.json"),
    ("TicketAPI", "ticket_api.json"),
    ("TradingBot", "trading_bot.json"),
    ("TravelAPI", "travel_booking.json"),
    ("VehicleControlAPI", "vehicle_control.json"),
];

/// Why an entry cannot become a task, in words for the person importing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotImportable(String);

impl From<String> for NotImportable {
    fn from(message: String) -> Self {
        NotImportable(message)
    }
}

impl From<&str> for NotImportable {
    fn from(message: &str) -> Self {
        NotImportable(message.to_owned())
    }
}

/// The multi-turn category of an entry id: `multi_turn_miss_func_3`.
pub fn category_of(id: &str) -> Option<&'static str> {
    MULTI_TURN_CATEGORIES.iter().copied().find(|c| {
        id.strip_prefix(c)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|ch| ch.is_ascii_digit()))
    })
}

/// One multi-turn question entry.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub id: String,
    /// The user's messages, turn by turn (a held-out turn has none).
    pub question: Vec<Vec<Value>>,
    pub involved_classes: Vec<String>,
    /// Turn index to the functions given only from that turn on.
    #[serde(default)]
    pub missed_function: BTreeMap<String, Vec<String>>,
}

/// Its ground truth: each turn's calls as Python source.
#[derive(Debug, Clone, Deserialize)]
pub struct Answer {
    pub id: String,
    pub ground_truth: Vec<Vec<String>>,
}

/// The function docs of every class: class name to its functions' docs.
#[derive(Debug, Default)]
pub struct FunctionDocs {
    by_class: BTreeMap<String, Vec<Value>>,
}

impl FunctionDocs {
    /// Read the docs from `multi_turn_func_doc/` beside the question file.
    pub fn beside(questions: &Path) -> Result<FunctionDocs, BfclError> {
        let folder = questions
            .parent()
            .unwrap_or(Path::new("."))
            .join("multi_turn_func_doc");
        let mut by_class = BTreeMap::new();
        for (class, file) in FUNCTION_DOCS {
            by_class.insert(class.to_owned(), read_jsonl(&folder.join(file))?);
        }
        Ok(FunctionDocs { by_class })
    }

    fn functions<'d>(&'d self, classes: &[String]) -> impl Iterator<Item = &'d Value> {
        classes
            .iter()
            .filter_map(|c| self.by_class.get(c))
            .flatten()
    }

    /// A function's parameter names in the doc's order (how a positional
    /// value is bound).
    fn parameters<'d>(&'d self, classes: &[String], name: &str) -> Option<Vec<&'d str>> {
        let doc = self.functions(classes).find(|f| f["name"] == name)?;
        let properties = doc["parameters"]["properties"].as_object()?;
        Some(properties.keys().map(String::as_str).collect())
    }
}

/// One entry as a conversation task (JSON), its tools served by `bridge`
/// (a command line: program and arguments).
pub fn scenario(
    entry: &Entry,
    answer: &Answer,
    docs: &FunctionDocs,
    bridge: &[String],
) -> Result<Value, NotImportable> {
    let category = category_of(&entry.id).ok_or("not a multi-turn category")?;
    if answer.ground_truth.len() != entry.question.len() {
        return Err(format!(
            "the ground truth has {} turns and the question {}",
            answer.ground_truth.len(),
            entry.question.len()
        )
        .into());
    }
    let missing: Vec<&String> = entry
        .involved_classes
        .iter()
        .filter(|c| !docs.by_class.contains_key(*c))
        .collect();
    if let Some(class) = missing.first() {
        return Err(format!("no function docs for the class {class:?}").into());
    }
    let mut only: Vec<String> = docs
        .functions(&entry.involved_classes)
        .filter_map(|f| f["name"].as_str().map(str::to_owned))
        .collect();
    only.push(CHECK_TURN.to_owned());
    let mut turns = turns(entry, answer, docs)?;
    let first = turns.remove(0);
    let messages = entry.question.first().filter(|m| !m.is_empty());
    Ok(json!({
        "name": entry.id,
        "description": format!(
            "BFCL {category} entry {} (Berkeley Function Calling Leaderboard, Apache-2.0), run on BFCL's own classes and judged by its checker, turn by turn",
            entry.id
        ),
        "tags": ["bfcl", category, "multi_turn"],
        "tools": [{
            // BFCL is imported once; each trial's server is a fork.
            "mcp": {"command": bridge, "forks": true},
            "only": only,
            "per_trial": true,
            "trial_args": ["--entry", entry.id],
            // BFCL runs whatever the model sends: its errors, not a
            // schema check's, go back.
            "validate": false,
        }],
        "messages": messages.ok_or("the first turn has no messages")?,
        "task": {
            "max_turns": MAX_STEPS,
            "reference": first["reference"],
            "final_state": first["final_state"],
            "turns": turns,
        },
    }))
}

/// Each turn of `entry`: the user's words (or the added functions'
/// prompt), the reference calls and the probe that checks the turn.
fn turns(entry: &Entry, answer: &Answer, docs: &FunctionDocs) -> Result<Vec<Value>, NotImportable> {
    let mut turns = Vec::new();
    for (k, calls) in answer.ground_truth.iter().enumerate() {
        let reference = calls
            .iter()
            .map(|call| reference_call(call, &entry.involved_classes, docs))
            .collect::<Result<Vec<_>, _>>()?;
        let probe = json!({"probe": {
            "tool": CHECK_TURN,
            "arguments": {"turn": k},
            "result": {"valid": true},
        }});
        let added = entry.missed_function.get(&k.to_string());
        let user = match added {
            Some(_) => ADDED_FUNCTIONS_PROMPT.to_owned(),
            None => {
                user_words(&entry.question[k]).ok_or(format!("turn {k} has no user message"))?
            }
        };
        let mut turn = json!({"user": user, "reference": reference, "final_state": probe});
        if let Some(added) = added {
            turn["add_tools"] = json!(added);
        }
        turns.push(turn);
    }
    Ok(turns)
}

/// A turn's words: its user messages, joined.
pub(super) fn user_words(messages: &[Value]) -> Option<String> {
    let words: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    (!words.is_empty()).then(|| words.join("\n"))
}

/// A ground-truth call as a reference step: positional values named by
/// the function's parameters in order.
fn reference_call(
    call: &str,
    classes: &[String],
    docs: &FunctionDocs,
) -> Result<Value, NotImportable> {
    let (name, positional, keywords) =
        decode_ground_truth_call(call).map_err(|e| format!("ground truth {call:?}: {e}"))?;
    let parameters = docs.parameters(classes, &name).ok_or_else(|| {
        format!("ground truth {call:?}: no function {name:?} in the entry's classes")
    })?;
    let mut arguments = Map::new();
    for (i, value) in positional.into_iter().enumerate() {
        let parameter = parameters
            .get(i)
            .ok_or_else(|| format!("ground truth {call:?}: more values than parameters"))?;
        arguments.insert((*parameter).to_owned(), value);
    }
    arguments.extend(keywords);
    // All of a turn's calls in one reply, as BFCL's ground truth is one
    // step (run in order: the bridge's tools are writes).
    Ok(json!({"name": name, "arguments": arguments, "unordered": true}))
}

/// Every entry of a multi-turn question file with its answer.
pub fn entries(
    questions: &Path,
    answers: &Path,
) -> Result<Vec<(Entry, Option<Answer>)>, BfclError> {
    let entries: Vec<Entry> = read_jsonl(questions)?;
    let mut answers: BTreeMap<String, Answer> = read_jsonl::<Answer>(answers)?
        .into_iter()
        .map(|a| (a.id.clone(), a))
        .collect();
    Ok(entries
        .into_iter()
        .map(|e| {
            let answer = answers.remove(&e.id);
            (e, answer)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> FunctionDocs {
        let doc = |name: &str, parameters: Value| json!({"name": name, "parameters": {"type": "dict", "properties": parameters}});
        let mut by_class = BTreeMap::new();
        by_class.insert(
            "GorillaFileSystem".to_owned(),
            vec![
                doc("cd", json!({"folder": {"type": "string"}})),
                doc("sort", json!({"file_name": {"type": "string"}})),
                doc(
                    "tail",
                    json!({"file_name": {"type": "string"}, "lines": {"type": "integer"}}),
                ),
            ],
        );
        FunctionDocs { by_class }
    }

    #[test]
    fn an_entry_becomes_a_conversation_judged_turn_by_turn_by_the_bridge() {
        let entry: Entry = serde_json::from_value(json!({
            "id": "multi_turn_miss_func_7",
            "question": [
                [{"role": "user", "content": "Go to docs."}],
                [],
                [{"role": "user", "content": "Show the end of notes."}]
            ],
            "involved_classes": ["GorillaFileSystem"],
            "missed_function": {"1": ["sort"]}
        }))
        .unwrap();
        let answer = Answer {
            id: entry.id.clone(),
            ground_truth: vec![
                vec!["cd('docs')".to_owned()],
                vec!["sort(file_name='notes')".to_owned()],
                vec!["tail('notes', lines=5)".to_owned()],
            ],
        };
        let bridge = ["python3".to_owned(), "bridge.py".to_owned()];
        let scenario = scenario(&entry, &answer, &docs(), &bridge).unwrap();
        let tools = &scenario["tools"][0];
        assert_eq!(
            tools["trial_args"],
            json!(["--entry", "multi_turn_miss_func_7"])
        );
        assert_eq!(tools["validate"], false);
        assert_eq!(tools["only"], json!(["cd", "sort", "tail", CHECK_TURN]));
        let task = &scenario["task"];
        assert_eq!(task["max_turns"], MAX_STEPS);
        // Positional values are named by the doc's parameters, in order.
        assert_eq!(task["reference"][0]["arguments"], json!({"folder": "docs"}));
        assert_eq!(
            task["turns"][1]["reference"][0]["arguments"],
            json!({"file_name": "notes", "lines": 5})
        );
        // Each turn judged by the probe on its own index.
        assert_eq!(
            task["final_state"]["probe"]["arguments"],
            json!({"turn": 0})
        );
        assert_eq!(
            task["turns"][1]["final_state"]["probe"]["arguments"],
            json!({"turn": 2})
        );
        // The held-out turn adds its functions with BFCL's words.
        assert_eq!(task["turns"][0]["user"], ADDED_FUNCTIONS_PROMPT);
        assert_eq!(task["turns"][0]["add_tools"], json!(["sort"]));
        assert!(task["turns"][1].get("add_tools").is_none());
    }

    #[test]
    fn a_ground_truth_that_does_not_fit_the_entry_is_refused_saying_why() {
        let entry: Entry = serde_json::from_value(json!({
            "id": "multi_turn_base_1",
            "question": [[{"role": "user", "content": "Go."}]],
            "involved_classes": ["GorillaFileSystem"]
        }))
        .unwrap();
        let bridge = ["bridge".to_owned()];
        let answer = |calls: &[&str]| Answer {
            id: entry.id.clone(),
            ground_truth: vec![calls.iter().map(|c| (*c).to_owned()).collect()],
        };
        for (calls, expected) in [
            (vec!["rm('x')"], "no function \"rm\""),
            (vec!["cd('a', 'b')"], "more values than parameters"),
            (vec!["cd(folder="], "ground truth"),
        ] {
            let error = scenario(&entry, &answer(&calls), &docs(), &bridge)
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
        }
        let two_turns = Answer {
            id: entry.id.clone(),
            ground_truth: vec![vec![], vec![]],
        };
        let error = scenario(&entry, &two_turns, &docs(), &bridge)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2 turns and the question 1"), "{error}");
    }

    #[test]
    fn multi_turn_categories_come_from_ids() {
        assert_eq!(category_of("multi_turn_base_0"), Some("multi_turn_base"));
        assert_eq!(
            category_of("multi_turn_long_context_12"),
            Some("multi_turn_long_context")
        );
        assert_eq!(category_of("multi_turn_base"), None);
        assert_eq!(category_of("simple_python_0"), None);
    }
}
