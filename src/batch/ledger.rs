//! batches.jsonl in the run folder: every batch submitted (its model, id,
//! and each request's custom id with its body's digest), then how it
//! ended. Each line is written and synced as it happens, so a run that
//! stops leaves every batch it paid for on record; `--resume` reads them
//! and follows a batch whose request it would send again, unchanged,
//! instead of submitting it anew.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The file's name in the run folder.
pub const FILE_NAME: &str = "batches.jsonl";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    Submitted {
        model: String,
        id: String,
        requests: Vec<Request>,
    },
    Ended {
        model: String,
        id: String,
        state: String,
        answered: usize,
        failed: usize,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Request {
    custom_id: String,
    digest: String,
}

/// A batch of the run, as the report tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchEntry {
    pub model: String,
    pub id: String,
    pub requests: usize,
    /// How it ended (`None`: not followed to its end).
    pub state: Option<String>,
    pub answered: usize,
    pub failed: usize,
}

/// The run's batches: those of earlier runs of the folder, and this one's
/// as they are submitted and end.
#[derive(Debug)]
pub struct Ledger {
    path: PathBuf,
    /// Made at the first batch: a run that submits none leaves no file.
    file: Mutex<Option<std::fs::File>>,
    /// (model, custom id) -> (batch id, digest), from earlier runs.
    earlier: HashMap<(String, String), (String, String)>,
    /// Batch id -> its custom ids in the order submitted.
    orders: HashMap<String, Vec<String>>,
}

impl Ledger {
    /// `dir`'s ledger, with what earlier runs wrote.
    pub fn open(dir: &Path) -> std::io::Result<Ledger> {
        let path = dir.join(FILE_NAME);
        let (mut earlier, mut orders) = (HashMap::new(), HashMap::new());
        for line in read_lines(&path)? {
            if let Line::Submitted {
                model,
                id,
                requests,
            } = line
            {
                for r in &requests {
                    earlier.insert(
                        (model.clone(), r.custom_id.clone()),
                        (id.clone(), r.digest.clone()),
                    );
                }
                orders.insert(id, requests.into_iter().map(|r| r.custom_id).collect());
            }
        }
        Ok(Ledger {
            path,
            file: Mutex::new(None),
            earlier,
            orders,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The batches this ledger holds, as [`entries`] reads them.
    pub fn entries(&self) -> std::io::Result<Vec<BatchEntry>> {
        entries_at(&self.path)
    }

    /// The batch an earlier run submitted this very request in.
    pub fn earlier(&self, model: &str, custom_id: &str, digest: &str) -> Option<&str> {
        let (id, was) = self
            .earlier
            .get(&(model.to_owned(), custom_id.to_owned()))?;
        (was == digest).then_some(id.as_str())
    }

    /// An earlier batch's custom ids in the order it was submitted.
    pub fn order_of(&self, id: &str) -> Option<&[String]> {
        self.orders.get(id).map(Vec::as_slice)
    }

    pub fn submitted(
        &self,
        model: &str,
        id: &str,
        requests: &[(String, String)],
    ) -> std::io::Result<()> {
        self.write(&Line::Submitted {
            model: model.to_owned(),
            id: id.to_owned(),
            requests: requests
                .iter()
                .map(|(custom_id, digest)| Request {
                    custom_id: custom_id.clone(),
                    digest: digest.clone(),
                })
                .collect(),
        })
    }

    pub fn ended(
        &self,
        model: &str,
        id: &str,
        state: &str,
        (answered, failed): (usize, usize),
    ) -> std::io::Result<()> {
        self.write(&Line::Ended {
            model: model.to_owned(),
            id: id.to_owned(),
            state: state.to_owned(),
            answered,
            failed,
        })
    }

    fn write(&self, line: &Line) -> std::io::Result<()> {
        let mut text = serde_json::to_vec(line).expect("a ledger line serializes");
        text.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            *file = Some(opened);
        }
        let file = file.as_mut().expect("opened above");
        file.write_all(&text)?;
        file.sync_data()
    }
}

/// The digest a request is known by: the SHA-256 of its body's JSON
/// text, in hex.
pub fn digest(body: &[u8]) -> String {
    sha2::Sha256::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The batches a run folder's ledger holds, each once, in the order
/// submitted, with how each ended (the last word on it).
pub fn entries(dir: &Path) -> std::io::Result<Vec<BatchEntry>> {
    entries_at(&dir.join(FILE_NAME))
}

fn entries_at(path: &Path) -> std::io::Result<Vec<BatchEntry>> {
    let mut entries: Vec<BatchEntry> = Vec::new();
    for line in read_lines(path)? {
        match line {
            Line::Submitted {
                model,
                id,
                requests,
            } => entries.push(BatchEntry {
                model,
                id,
                requests: requests.len(),
                state: None,
                answered: 0,
                failed: 0,
            }),
            Line::Ended {
                id,
                state,
                answered,
                failed,
                ..
            } => {
                if let Some(entry) = entries.iter_mut().find(|e| e.id == id) {
                    entry.state = Some(state);
                    entry.answered = answered;
                    entry.failed = failed;
                }
            }
        }
    }
    Ok(entries)
}

/// The ledger's lines; none when there is no ledger; a torn last line
/// (a run killed mid-write) skipped.
fn read_lines(path: &Path) -> std::io::Result<Vec<Line>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut lines = Vec::new();
    for text in std::io::BufReader::new(file).lines() {
        if let Ok(line) = serde_json::from_str(&text?) {
            lines.push(line);
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_run_finds_a_request_only_when_its_body_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let body = br#"{"model":"m","messages":[]}"#;
        let ledger = Ledger::open(dir.path()).unwrap();
        let sent = [("t0-a1".to_owned(), digest(body))];
        ledger.submitted("m", "batch_1", &sent).unwrap();
        ledger.ended("m", "batch_1", "completed", (1, 0)).unwrap();
        drop(ledger);
        let again = Ledger::open(dir.path()).unwrap();
        assert_eq!(again.earlier("m", "t0-a1", &digest(body)), Some("batch_1"));
        let changed = br#"{"model":"m","messages":[1]}"#;
        assert_eq!(again.earlier("m", "t0-a1", &digest(changed)), None);
        assert_eq!(again.earlier("other", "t0-a1", &digest(body)), None);
        assert_eq!(again.order_of("batch_1").unwrap(), ["t0-a1"]);
        let entries = entries(dir.path()).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].state.as_deref(), Some("completed"));
    }
}
