//! BFCL's data files: an entry, its possible answer, its language and
//! category, read as JSON Lines.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The language an entry's functions are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Language {
    Python,
    Java,
    JavaScript,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// BFCL names the language in the category: `simple_java_3`.
    pub fn of_id(id: &str) -> Language {
        if id.starts_with("simple_javascript") {
            Language::JavaScript
        } else if id.starts_with("simple_java") {
            Language::Java
        } else {
            Language::Python
        }
    }
}

/// The single-turn categories that import as scenarios.
pub const SINGLE_TURN_CATEGORIES: [&str; 13] = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
];

/// The category of an entry id: `live_simple_0-0-0` -> `live_simple`.
pub fn category_of(id: &str) -> Option<&'static str> {
    SINGLE_TURN_CATEGORIES
        .iter()
        .copied()
        .filter(|c| {
            id.strip_prefix(c)
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|n| n.starts_with(|ch: char| ch.is_ascii_digit()))
        })
        .max_by_key(|c| c.len())
}

/// One question entry.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub id: String,
    /// Turns of chat messages; single-turn entries have one.
    pub question: Vec<Vec<Value>>,
    pub function: Vec<Value>,
}

/// One possible-answer entry: a list of calls, each `{name: {param: [alternatives]}}`.
#[derive(Debug, Clone, Deserialize)]
pub struct AnswerEntry {
    pub id: String,
    pub ground_truth: Vec<Value>,
}

/// A BFCL file that cannot be used, with the line at fault.
#[derive(Debug, thiserror::Error)]
pub enum BfclError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message} (BFCL files are JSON Lines: one entry per line)")]
    Line {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// Every entry of a JSON Lines file, typed; blank lines are skipped.
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, BfclError> {
    let text = crate::source::read_input_text(path).map_err(|source| BfclError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| BfclError::Line {
                path: path.to_owned(),
                line: i + 1,
                column: e.column(),
                message: e.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_and_languages_come_from_ids() {
        assert_eq!(category_of("simple_java_3"), Some("simple_java"));
        assert_eq!(
            category_of("simple_javascript_3"),
            Some("simple_javascript")
        );
        assert_eq!(
            category_of("live_parallel_multiple_0-1-2"),
            Some("live_parallel_multiple")
        );
        assert_eq!(
            category_of("parallel_multiple_9"),
            Some("parallel_multiple")
        );
        assert_eq!(category_of("multi_turn_base_1"), None);
        assert_eq!(Language::of_id("simple_javascript_0"), Language::JavaScript);
        assert_eq!(Language::of_id("simple_java_0"), Language::Java);
        assert_eq!(Language::of_id("live_simple_0-0-0"), Language::Python);
    }

    #[test]
    fn a_file_that_is_one_json_document_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.json");
        std::fs::write(&path, "[\n{\"id\": 1}\n]").unwrap();
        let error = read_jsonl::<Entry>(&path).unwrap_err().to_string();
        assert!(error.contains("q.json:1:"), "{error}");
        assert!(error.contains("JSON Lines"), "{error}");
    }
}
