//! A published BFCL run's results, read back as calls: a result file is
//! JSON Lines of `{"id", "result": [{"fn_name": "<json arguments>"},
//! ...]}` (function calling) or call syntax text (prompting, decoded as
//! BFCL decodes it); a result of any other shape is one malformed call,
//! as BFCL's decoder failing would be. Each entry's recorded `latency`
//! (seconds) and token counts come with it. The `bfcl-results` model
//! (`model::bfcl_replay`) answers with them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::call::{Arguments, MalformedCall, ParsedCall, ToolCall, Usage};
use crate::tool::Registry;

/// A result file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// A line of the file, and what is wrong with it.
    #[error("{}:{line}: {problem}", path.display())]
    Line {
        path: std::path::PathBuf,
        line: usize,
        problem: String,
    },
}

/// How a BFCL run's model answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultsFormat {
    /// Function calling: `[{"fn_name": "<json arguments>"}, ...]`.
    #[default]
    Fc,
    /// Prompting: call syntax text, `[f(x=1), g(y="a")]`.
    Prompt,
}

impl ResultsFormat {
    pub fn is_fc(&self) -> bool {
        *self == ResultsFormat::Fc
    }
}

/// One step of a published multi-turn run, as BFCL's checker reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedStep {
    /// Calls to run, every one decoded.
    Calls(Vec<ParsedCall>),
    /// A call does not decode (its arguments are not a JSON object):
    /// BFCL's checker skips the whole step, running none of its calls.
    Skipped,
    /// The turn ends here.
    End,
    /// An agentic entry's text (BFCL's checker reads the last one as the
    /// answer; its calls are never judged).
    Text(String),
}

/// Whether an entry id is of an agentic category (web search, memory, a
/// memory prerequisite): its texts are steps of their own, the last one
/// the answer.
pub fn is_agentic(id: &str) -> bool {
    super::web_search::category_of(id).is_some() || super::memory::category_of(id).is_some()
}

/// Recorded results by entry id.
#[derive(Debug, Default)]
pub struct BfclResults {
    results: FxHashMap<String, Recorded>,
    format: ResultsFormat,
}

/// One entry as the run recorded it.
#[derive(Debug)]
struct Recorded {
    result: Value,
    /// A prompt-mode output decoded at load (see [`decode_all`]), shared
    /// by the entries with the same text.
    decoded: Option<Arc<Decoded>>,
    /// How long the model took; zero when not recorded.
    latency: Duration,
    usage: Usage,
}

/// A result file's entries with their line numbers (1-based), each a JSON
/// object with a string `"id"`; `Err` names the line at fault.
pub(super) fn read_entries(path: &Path) -> Result<Vec<(usize, Value)>, ResultsError> {
    let text = crate::source::read_input_text(path).map_err(|source| ResultsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut entries = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fail = |problem: String| ResultsError::Line {
            path: path.to_owned(),
            line: i + 1,
            problem,
        };
        let entry: Value = serde_json::from_str(line)
            .map_err(|e| fail(format!("{}: {e} (result files are JSON Lines)", e.column())))?;
        if !entry["id"].is_string() {
            return Err(fail("an entry needs a string \"id\"".to_owned()));
        }
        entries.push((i + 1, entry));
    }
    Ok(entries)
}

/// A result file's entries into `results`; an id already there is
/// refused, naming its line.
fn read_file(path: &Path, results: &mut FxHashMap<String, Recorded>) -> Result<(), ResultsError> {
    let fail = |line: usize, problem: String| ResultsError::Line {
        path: path.to_owned(),
        line,
        problem,
    };
    for (line, entry) in read_entries(path)? {
        let id = entry["id"].as_str().expect("read_entries checks the id");
        let result = entry
            .get("result")
            .ok_or_else(|| fail(line, format!("entry {id:?} has no \"result\"")))?;
        let latency = match entry.get("latency") {
            None | Some(Value::Null) => Duration::ZERO,
            Some(seconds) => total(seconds)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    fail(
                        line,
                        format!(
                            "entry {id:?}: \"latency\" must be seconds, a number of at least 0 (or, for a multi-turn entry, lists of them per turn and step)"
                        ),
                    )
                })?,
        };
        let tokens = |field: &str| {
            match entry.get(field) {
            None | Some(Value::Null) => Ok(0),
            Some(count) => total(count).filter(|n| n.fract() == 0.0 && *n >= 0.0).map(|n| n as u64).ok_or_else(|| {
                fail(
                    line,
                    format!("entry {id:?}: \"{field}\" must be a count, a whole number of at least 0"),
                )
            }),
        }
        };
        let usage = Usage {
            input_tokens: tokens("input_token_count")?,
            output_tokens: tokens("output_token_count")?,
            ..Usage::default()
        };
        if results.contains_key(id) {
            return Err(fail(
                line,
                format!("entry {id:?} is in another result file too"),
            ));
        }
        results.insert(
            id.to_owned(),
            Recorded {
                result: result.clone(),
                decoded: None,
                latency,
                usage,
            },
        );
    }
    Ok(())
}

/// The result files `path` names: itself, or every `*_result.json` under
/// it (sorted, links not followed); a folder with none is refused.
fn result_files(path: &Path) -> Result<Vec<std::path::PathBuf>, ResultsError> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
        let entry = entry.map_err(|e| ResultsError::Read {
            path: path.to_owned(),
            source: e.into(),
        })?;
        let name = entry.file_name().to_string_lossy();
        if entry.file_type().is_file() && name.ends_with("_result.json") {
            files.push(entry.into_path());
        }
    }
    if files.is_empty() {
        return Err(ResultsError::Read {
            path: path.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no BFCL result file (*_result.json) in this folder",
            ),
        });
    }
    Ok(files)
}

impl BfclResults {
    /// Read a result file, or every result file (`*_result.json`) under
    /// a folder (a run's `result/<model>`), one entry id once; `Err`
    /// names the line at fault.
    pub fn load(path: &Path, format: ResultsFormat) -> Result<BfclResults, ResultsError> {
        let mut results = FxHashMap::default();
        for file in result_files(path)? {
            read_file(&file, &mut results)?;
        }
        if format == ResultsFormat::Prompt {
            decode_all(&mut results);
        }
        Ok(BfclResults { results, format })
    }

    /// A multi-turn entry's step `step` of user turn `turn`, as BFCL's
    /// checker reads the run: its calls; skipped, where a call does not
    /// decode (BFCL's checker then runs none of the step's calls and reads
    /// the next step); or the end of the turn (no such step, or one with
    /// no calls, as BFCL's inference ends a turn). The entry's tokens
    /// come with its first step; its latency is not replayed: its tools
    /// run on the real clock, where waiting it out would cost the
    /// published run's time.
    pub fn step(
        &self,
        id: &str,
        turn: usize,
        step: usize,
        tools: &Registry,
    ) -> (RecordedStep, Usage) {
        let Some(recorded) = self.results.get(id) else {
            return (RecordedStep::End, Usage::default());
        };
        let usage = if (turn, step) == (0, 0) {
            recorded.usage
        } else {
            Usage::default()
        };
        let calls = match recorded.result.get(turn).and_then(|t| t.get(step)) {
            None | Some(Value::Null) => return (RecordedStep::End, usage),
            Some(Value::String(text)) if self.format == ResultsFormat::Prompt => {
                let decoded = super::prompt::decode(text, super::Language::of_id(id));
                prompt_calls(tools, text, &decoded)
            }
            // An agentic entry's text is a step of its own.
            Some(Value::String(text)) if is_agentic(id) => {
                return (RecordedStep::Text(text.clone()), usage);
            }
            // Text where calls were expected ends the turn.
            Some(Value::String(_)) => return (RecordedStep::End, usage),
            Some(result) => result_calls(result),
        };
        let step = if calls.is_empty() {
            RecordedStep::End
        } else if calls.iter().any(|c| matches!(c, ParsedCall::Malformed(_))) {
            RecordedStep::Skipped
        } else {
            RecordedStep::Calls(calls)
        };
        (step, usage)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.results.contains_key(id)
    }

    /// What the run recorded for entry `id`, whose tools are `tools`: its
    /// calls, how long the model took and the tokens it used (none and
    /// zero when not recorded).
    pub fn reply(&self, id: &str, tools: &Registry) -> (Vec<ParsedCall>, Duration, Usage) {
        let Some(recorded) = self.results.get(id) else {
            return Default::default();
        };
        let calls = match (&recorded.result, &recorded.decoded) {
            (Value::String(text), Some(decoded)) => prompt_calls(tools, text, decoded),
            (result, _) => result_calls(result),
        };
        (calls, recorded.latency, recorded.usage)
    }
}

/// A number, or the sum of nested lists of them (multi-turn entries record
/// one per turn and step).
fn total(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Array(items) => items.iter().map(total).sum(),
        _ => None,
    }
}

/// What BFCL's decoder makes of a prompt-mode output.
type Decoded = Result<Vec<super::prompt::PromptCall>, super::prompt::DecodeError>;

/// Decode every prompt-mode output of a file, each distinct text (in its
/// entry's language) once, spread over the machine's cores: tree-sitter's
/// parse is most of a re-scoring's time, the rest of a run one thread.
fn decode_all(results: &mut FxHashMap<String, Recorded>) {
    let mut distinct: FxHashMap<(&str, super::Language), usize> = FxHashMap::default();
    let mut texts = Vec::new();
    // The distinct text of each prompt-mode entry, in the map's order.
    let mut text_of = Vec::new();
    for (id, recorded) in results.iter() {
        if let Value::String(text) = &recorded.result {
            let key = (text.as_str(), super::Language::of_id(id));
            let next = texts.len();
            text_of.push(*distinct.entry(key).or_insert_with(|| {
                texts.push(key);
                next
            }));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = texts.len().div_ceil(threads).max(1);
    let decoded: Vec<Arc<Decoded>> = std::thread::scope(|scope| {
        let workers: Vec<_> = texts
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(text, language)| Arc::new(super::prompt::decode(text, *language)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a decoder thread does not panic"))
            .collect()
    });
    // The same entries in the same order: the map has not changed.
    let prompted = results
        .values_mut()
        .filter(|recorded| recorded.result.is_string());
    for (recorded, index) in prompted.zip(text_of) {
        recorded.decoded = Some(Arc::clone(&decoded[index]));
    }
}

/// A prompt-mode output as calls, or, when BFCL would fail to decode it,
/// one malformed call (no call, for relevance).
fn prompt_calls(tools: &Registry, text: &str, decoded: &Decoded) -> Vec<ParsedCall> {
    let not_calls = |problem: String| {
        vec![ParsedCall::Malformed(MalformedCall {
            id: "bfcl_0".to_owned(),
            name: String::new(),
            raw_arguments: text.to_owned(),
            problem,
        })]
    };
    match decoded {
        Ok(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                ParsedCall::Ok(ToolCall {
                    id: format!("bfcl_{i}"),
                    name: prompt_tool_name(tools, name),
                    arguments: Arguments::from_map(arguments.clone()),
                })
            })
            .collect(),
        Err(problem) => not_calls(format!("not call syntax BFCL decodes: {problem}")),
    }
}

/// The tool a prompting model's call names. BFCL compares such names as
/// written, dots and all: only a function's own name reaches its tool.
/// Another name stays as written; where it is some tool's name all the
/// same (`a_b` for the function `a.b`), it is marked so that it reaches
/// no tool, as it matches no function in BFCL.
fn prompt_tool_name(tools: &Registry, written: &str) -> String {
    let bfcl_name = |def: &crate::tool::ToolDef| {
        def.metadata
            .as_ref()
            .and_then(|m| m.other.get("bfcl"))
            .and_then(|b| b["name"].as_str())
            .map(str::to_owned)
    };
    let mut collides = None;
    for def in tools.definitions() {
        match bfcl_name(def) {
            Some(name) if name == written => return def.name.clone(),
            Some(name) if def.name == written => collides = Some(name),
            // Not imported from BFCL: its names are the tools' names.
            None if def.name == super::dialect::tool_name(written) => {
                return def.name.clone();
            }
            _ => {}
        }
    }
    match collides {
        Some(function) => format!("{written} (as written; the function is {function})"),
        // `'f'(x=1)`: BFCL reads a call of no name.
        None if written.is_empty() => "(no name)".to_owned(),
        None => written.to_owned(),
    }
}

/// `[{"fn_name": "<json arguments>"}, ...]` as calls.
fn result_calls(result: &Value) -> Vec<ParsedCall> {
    let not_calls = |raw: &Value| {
        vec![ParsedCall::Malformed(MalformedCall {
            id: "bfcl_0".to_owned(),
            name: String::new(),
            raw_arguments: raw.to_string(),
            problem: "the recorded result is not a list of {function: arguments} calls".to_owned(),
        })]
    };
    let Some(items) = result.as_array() else {
        return not_calls(result);
    };
    let mut calls = Vec::new();
    for item in items {
        let Some(object) = item.as_object() else {
            return not_calls(result);
        };
        for (name, arguments) in object {
            let id = format!("bfcl_{}", calls.len());
            let parsed = match arguments {
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(members)) => Ok(Arguments::from_map(members)),
                    Ok(_) => Err((text.clone(), "the arguments are not a JSON object")),
                    Err(_) => Err((text.clone(), "the arguments are not valid JSON")),
                },
                Value::Object(members) => Ok(Arguments::from_map(members.clone())),
                other => Err((other.to_string(), "the arguments are not a JSON object")),
            };
            calls.push(match parsed {
                Ok(arguments) => ParsedCall::Ok(ToolCall {
                    id,
                    name: name.clone(),
                    arguments,
                }),
                Err((raw, problem)) => ParsedCall::Malformed(MalformedCall {
                    id,
                    name: name.clone(),
                    raw_arguments: raw,
                    problem: problem.to_owned(),
                }),
            });
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recorded_calls_and_shapes_that_are_not_calls() {
        let calls = result_calls(&json!([{"math_factorial": "{\"number\": 5}"}, {"f": {"x": 1}}]));
        assert_eq!(calls.len(), 2);
        assert!(
            matches!(&calls[0], ParsedCall::Ok(c) if c.name == "math_factorial" && c.arguments == json!({"number": 5}))
        );
        assert!(matches!(&calls[1], ParsedCall::Ok(c) if c.arguments == json!({"x": 1})));
        assert!(
            matches!(&result_calls(&json!([{"f": "{broken"}]))[0], ParsedCall::Malformed(m) if m.name == "f")
        );
        assert!(
            matches!(&result_calls(&json!("I cannot help with that"))[0], ParsedCall::Malformed(m) if m.name.is_empty())
        );
        assert!(result_calls(&json!([])).is_empty());
    }

    #[test]
    fn a_run_folder_reads_every_result_file_under_it_and_an_id_once() {
        let dir = tempfile::tempdir().unwrap();
        let line = |id: &str| json!({"id": id, "result": [{"f": "{}"}]}).to_string() + "\n";
        std::fs::create_dir_all(dir.path().join("live")).unwrap();
        std::fs::write(
            dir.path().join("BFCL_v4_simple_python_result.json"),
            line("simple_python_0"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("live/BFCL_v4_live_simple_result.json"),
            line("live_simple_0-0-0"),
        )
        .unwrap();
        // Not a result file: left alone.
        std::fs::write(dir.path().join("notes.json"), "not JSON Lines").unwrap();
        let results = BfclResults::load(dir.path(), ResultsFormat::Fc).unwrap();
        assert!(results.contains("simple_python_0") && results.contains("live_simple_0-0-0"));

        std::fs::write(
            dir.path().join("live/BFCL_v4_live_multiple_result.json"),
            line("simple_python_0"),
        )
        .unwrap();
        let error = BfclResults::load(dir.path(), ResultsFormat::Fc)
            .unwrap_err()
            .to_string();
        assert!(error.contains("in another result file too"), "{error}");

        let empty = tempfile::tempdir().unwrap();
        let error = BfclResults::load(empty.path(), ResultsFormat::Fc)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no BFCL result file"), "{error}");
    }

    #[test]
    fn a_multi_turn_result_replays_step_by_step_its_tokens_with_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let entry = json!({
            "id": "multi_turn_base_0",
            "result": [
                [[{"cd": "{\"folder\": \"docs\"}"}], "Moved."],
                [[], "nothing"],
                [[{"echo<|channel|>": "We need to write it."}, {"touch": "{\"file_name\": \"a\"}"}]],
            ],
            "latency": [[0.5, 0.25], [1.0, 0.25]],
            "input_token_count": [[10, 20], [30, 40]],
        });
        std::fs::write(&path, format!("{entry}\n")).unwrap();
        let results = BfclResults::load(&path, ResultsFormat::Fc).unwrap();
        let tools = Registry::builtins(&[], crate::tool::ToolEnv::default()).unwrap();
        let (step, usage) = results.step("multi_turn_base_0", 0, 0, &tools);
        let RecordedStep::Calls(calls) = step else {
            panic!("{step:?}")
        };
        assert!(
            matches!(&calls[0], ParsedCall::Ok(c) if c.name == "cd" && c.arguments == json!({"folder": "docs"}))
        );
        assert_eq!(usage.input_tokens, 100);
        // Text, an empty step and a step never recorded end the turn.
        for (turn, step) in [(0, 1), (1, 0), (1, 5), (3, 0)] {
            let (recorded, usage) = results.step("multi_turn_base_0", turn, step, &tools);
            assert_eq!(recorded, RecordedStep::End, "turn {turn} step {step}");
            assert_eq!(usage.input_tokens, 0);
        }
        // A call that does not decode takes its whole step with it, the
        // good call beside it too, as BFCL's checker skips such a step.
        let (recorded, _) = results.step("multi_turn_base_0", 2, 0, &tools);
        assert_eq!(recorded, RecordedStep::Skipped);
    }

    #[test]
    fn a_recorded_latency_or_token_count_that_is_not_one_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        for (bad, field) in [
            (r#""latency": -1"#, "latency"),
            (r#""latency": "1.2""#, "latency"),
            (r#""input_token_count": 2.5"#, "input_token_count"),
            (r#""output_token_count": -3"#, "output_token_count"),
        ] {
            let text = format!(
                "{{\"id\": \"a\", \"result\": [], \"latency\": 0.5}}\n{{\"id\": \"b\", \"result\": [], {bad}}}\n"
            );
            std::fs::write(&path, text).unwrap();
            let error = BfclResults::load(&path, ResultsFormat::Fc).unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(error, ResultsError::Line { line: 2, .. }),
                "{message}"
            );
            assert!(
                message.contains(&format!("entry \"b\": \"{field}\" must be")),
                "{message}"
            );
        }
    }
}
