//! BFCL entries as toolgauge scenario files: function docs become tools
//! (see `dialect`), the question becomes the opening messages, possible
//! answers become BFCL-rules expectations, and irrelevance entries expect
//! no call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::answer::ground_truth_calls;
use super::dialect::{Values, to_tool};
use super::multi_turn::{self, FunctionDocs, MULTI_TURN_CATEGORIES};
use super::{AnswerEntry, BfclError, Entry, Language, category_of, read_jsonl};
use super::{memory, web_search};
use crate::tool::{Effect, Latency, LatencyDistribution, Simulate};

/// Categories whose entries expect no call, and the one where any call is right.
const NO_CALL: [&str; 2] = ["irrelevance", "live_irrelevance"];
const ANY_CALL: &str = "live_relevance";

/// What an import wrote.
#[derive(Debug, Default)]
pub struct Imported {
    pub written: usize,
    pub by_category: BTreeMap<String, usize>,
    /// Categories not imported, and why (a memory backend the bridge
    /// cannot run here).
    pub skipped: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Bfcl(#[from] BfclError),
    #[error("{id}: {message}")]
    Entry { id: String, message: String },
    #[error(
        "{}: BFCL category {category:?} is not supported: import takes the single-turn \
         categories ({}), the multi-turn ones ({}), web_search and memory",
        path.display(),
        super::SINGLE_TURN_CATEGORIES.join(", "),
        MULTI_TURN_CATEGORIES.join(", ")
    )]
    UnsupportedCategory { path: PathBuf, category: String },
    #[error(
        "{}: BFCL runs format_sensitivity on prompting (non-FC) models only, each entry \
         under 26 system prompts of its own format (return format, tool-call tag, function \
         docs); toolgauge sends tools through each API's function calling, so it does not \
         import them",
        path.display()
    )]
    PromptModeOnly { path: PathBuf },
    #[error(
        "{}: multi-turn, web search and memory entries run on BFCL's own classes: give --bridge with the command \
         that starts scripts/bfcl_bridge/bridge.py (e.g. --bridge \"VENV/bin/python \
         scripts/bfcl_bridge/bridge.py\")",
        path.display()
    )]
    NoBridge { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The category BFCL generates only in prompt mode, under its own prompt
/// formats (`bfcl_eval.utils.get_all_format_sensitivity_configs`), and
/// skips for function-calling models.
const PROMPT_MODE_ONLY: &str = "format_sensitivity";

/// The possible-answer file BFCL keeps beside a question file:
/// `possible_answer/<same name>`.
pub fn default_answers(questions: &Path) -> PathBuf {
    let name = questions.file_name().unwrap_or_default();
    questions
        .parent()
        .unwrap_or(Path::new("."))
        .join("possible_answer")
        .join(name)
}

/// Convert every entry of `questions` into a scenario file in `out`,
/// named by its BFCL id; multi-turn entries need the `bridge` command.
pub fn import(
    questions: &Path,
    answers: Option<&Path>,
    out: &Path,
    bridge: Option<&[String]>,
) -> Result<Imported, ImportError> {
    if let Some(category) = unsupported_category(questions) {
        if category == PROMPT_MODE_ONLY {
            return Err(ImportError::PromptModeOnly {
                path: questions.to_owned(),
            });
        }
        if category == "memory" {
            let bridge = bridge.ok_or_else(|| ImportError::NoBridge {
                path: questions.to_owned(),
            })?;
            let answers = answers.map_or_else(|| default_answers(questions), Path::to_owned);
            return import_memory(questions, &answers, out, bridge);
        }
        if category == "web_search" {
            let bridge = bridge.ok_or_else(|| ImportError::NoBridge {
                path: questions.to_owned(),
            })?;
            let answers = answers.map_or_else(|| default_answers(questions), Path::to_owned);
            return import_web_search(questions, &answers, out, bridge);
        }
        if !MULTI_TURN_CATEGORIES.contains(&category.as_str()) {
            return Err(ImportError::UnsupportedCategory {
                path: questions.to_owned(),
                category,
            });
        }
        let bridge = bridge.ok_or_else(|| ImportError::NoBridge {
            path: questions.to_owned(),
        })?;
        let answers = answers.map_or_else(|| default_answers(questions), Path::to_owned);
        return import_multi_turn(questions, &answers, out, bridge);
    }
    let entries: Vec<Entry> = read_jsonl(questions)?;
    let answers: BTreeMap<String, AnswerEntry> = match answers {
        Some(path) => read_jsonl::<AnswerEntry>(path)?
            .into_iter()
            .map(|a| (a.id.clone(), a))
            .collect(),
        None => BTreeMap::new(),
    };
    let mut imported = Imported::default();
    for entry in &entries {
        let scenario = scenario(entry, answers.get(&entry.id))?;
        let category = category_of(&entry.id).unwrap_or("other");
        imported.write(out, &entry.id, category, &scenario)?;
    }
    Ok(imported)
}

impl Imported {
    /// Write one scenario file, `out/<id>.json`, and count it.
    fn write(
        &mut self,
        out: &Path,
        id: &str,
        category: &str,
        scenario: &Value,
    ) -> Result<(), ImportError> {
        if self.written == 0 {
            crate::whole_file::make_folder(out).map_err(|source| ImportError::Write {
                path: out.to_owned(),
                source,
            })?;
        }
        let path = out.join(format!("{id}.json"));
        let text = serde_json::to_string_pretty(scenario).expect("a scenario serializes") + "\n";
        std::fs::write(&path, text).map_err(|source| ImportError::Write { path, source })?;
        self.written += 1;
        *self.by_category.entry(category.to_owned()).or_default() += 1;
        Ok(())
    }
}

/// Multi-turn entries as conversation tasks on BFCL's own classes.
fn import_multi_turn(
    questions: &Path,
    answers: &Path,
    out: &Path,
    bridge: &[String],
) -> Result<Imported, ImportError> {
    let docs = FunctionDocs::beside(questions)?;
    let mut imported = Imported::default();
    for (entry, answer) in multi_turn::entries(questions, answers)? {
        let fail = |message: String| ImportError::Entry {
            id: entry.id.clone(),
            message,
        };
        let answer =
            answer.ok_or_else(|| fail(format!("no ground truth in {}", answers.display())))?;
        let scenario = multi_turn::scenario(&entry, &answer, &docs, bridge)
            .map_err(|e| fail(e.to_string()))?;
        let category = multi_turn::category_of(&entry.id).unwrap_or("other");
        imported.write(out, &entry.id, category, &scenario)?;
    }
    Ok(imported)
}

/// Web search questions as tasks on BFCL's own class, each in both of
/// its categories.
fn import_web_search(
    questions: &Path,
    answers: &Path,
    out: &Path,
    bridge: &[String],
) -> Result<Imported, ImportError> {
    let prompt = web_search::agentic_prompt(bridge).map_err(|e| ImportError::Entry {
        id: questions.display().to_string(),
        message: e.to_string(),
    })?;
    let mut imported = Imported::default();
    for (entry, answer) in web_search::entries(questions, answers)? {
        for category in web_search::CATEGORIES {
            let scenario = web_search::scenario(&entry, &answer, category, bridge, &prompt)
                .map_err(|e| ImportError::Entry {
                    id: entry.id.clone(),
                    message: e.to_string(),
                })?;
            let id = scenario["name"].as_str().expect("a name").to_owned();
            imported.write(out, &id, category, &scenario)?;
        }
    }
    Ok(imported)
}

/// Memory entries as tasks on BFCL's own memory classes, for each
/// backend the bridge can run; the others are passed over with the
/// bridge's reason.
fn import_memory(
    questions: &Path,
    answers: &Path,
    out: &Path,
    bridge: &[String],
) -> Result<Imported, ImportError> {
    let bridge_failed = |e: super::BridgeError| ImportError::Entry {
        id: questions.display().to_string(),
        message: e.to_string(),
    };
    let runs_here = memory::backends(bridge).map_err(bridge_failed)?;
    let files = memory::MemoryFiles::read(questions, answers)?;
    let mut imported = Imported::default();
    for backend in memory::BACKENDS {
        let category = format!("memory_{backend}");
        let why_not = match runs_here.get(backend) {
            Some(None) => None,
            Some(Some(why)) => Some(why.clone()),
            None => Some("the bridge does not know this backend".to_owned()),
        };
        if let Some(why) = why_not {
            imported.skipped.push((category, why));
            continue;
        }
        let tasks =
            memory::scenarios(&files, backend, bridge).map_err(|(id, e)| ImportError::Entry {
                id,
                message: e.to_string(),
            })?;
        for task in tasks {
            let id = task["name"].as_str().expect("a name").to_owned();
            let counted = match memory::category_of(&id) {
                Some((_, true)) => format!("{category}_prereq"),
                _ => category.clone(),
            };
            imported.write(out, &id, &counted, &task)?;
        }
    }
    Ok(imported)
}

/// The category of a question file that import does not take, by the
/// file's BFCL name (`BFCL_v4_multi_turn_base.json`) or else by its first
/// entry's id; such files do not have the single-turn shape, so without
/// this their first line would fail with a puzzling parse error.
fn unsupported_category(questions: &Path) -> Option<String> {
    let stem = questions.file_stem()?.to_str()?;
    let by_name = stem.strip_prefix("BFCL_v").and_then(|rest| {
        let (version, category) = rest.split_once('_')?;
        version
            .chars()
            .all(|c| c.is_ascii_digit())
            .then_some(category)
    });
    if let Some(category) = by_name {
        return (!super::SINGLE_TURN_CATEGORIES.contains(&category)).then(|| category.to_owned());
    }
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    // The first entry is enough: read no further than its line.
    let file = std::io::BufReader::new(crate::source::open_input(questions).ok()?);
    let line = std::io::BufRead::lines(file)
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty())?;
    let first: Id = serde_json::from_str(&line).ok()?;
    if category_of(&first.id).is_some() {
        return None;
    }
    // `multi_turn_base_0` and `memory_0-customer-0` name `multi_turn_base` and `memory`.
    let end = first
        .id
        .match_indices('_')
        .find(|(at, _)| first.id[at + 1..].starts_with(|c: char| c.is_ascii_digit()))
        .map_or(first.id.len(), |(at, _)| at);
    Some(first.id[..end].to_owned())
}

/// One entry as a scenario file (JSON).
pub fn scenario(entry: &Entry, answer: Option<&AnswerEntry>) -> Result<Value, ImportError> {
    let fail = |message: String| ImportError::Entry {
        id: entry.id.clone(),
        message,
    };
    let category = category_of(&entry.id).ok_or_else(|| {
        fail(format!(
            "not a single-turn category (those are {})",
            super::SINGLE_TURN_CATEGORIES.join(", ")
        ))
    })?;
    let language = Language::of_id(&entry.id);
    let values = Values::of(language);
    let tools: Vec<Value> = entry
        .function
        .iter()
        .map(|function| {
            let mut tool = to_tool(function, language, values);
            // Imported tools are simulated: nothing changes, so calls may
            // run in parallel, and each takes a plausible time.
            tool.effect = Effect::Read;
            tool.simulate = Some(Simulate {
                result: json!({"status": "ok"}),
                latency_ms: Latency::Drawn(LatencyDistribution::Uniform([50, 150])),
                failure: None,
                refuse: Vec::new(),
            });
            serde_json::to_value(tool).expect("a tool serializes")
        })
        .collect();
    let messages = entry
        .question
        .first()
        .filter(|turn| !turn.is_empty())
        .ok_or_else(|| fail("the question has no messages".to_owned()))?;
    let expect = if NO_CALL.contains(&category) {
        json!({"no_call": true, "rules": "bfcl"})
    } else if category == ANY_CALL {
        json!({"any_call": true, "rules": "bfcl"})
    } else {
        let answer = answer.ok_or_else(|| {
            fail("no possible answer for this entry (give --answers FILE)".to_owned())
        })?;
        let calls = ground_truth_calls(&answer.ground_truth).map_err(|e| fail(e.to_string()))?;
        let calls: Vec<Value> = calls
            .iter()
            .map(|call| json!({"name": call.tool_name(), "arguments": call.params}))
            .collect();
        json!({"rules": "bfcl", "order": "any", "calls": calls})
    };
    Ok(json!({
        "name": entry.id,
        "description": format!("BFCL {category} entry {} (Berkeley Function Calling Leaderboard, Apache-2.0)", entry.id),
        "tags": ["bfcl", category, language.as_str()],
        "tools": tools,
        "messages": messages,
        "expect": expect,
    }))
}
