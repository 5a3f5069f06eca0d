//! batches.jsonl in the run folder: every batch submitted (its model, id,
//! and each request's custom id with its body's digest), then how it
//! ended. Each line is written and synced as it happens, so a run that
//! stops leaves every batch it paid for on record; `--resume` reads them
//! and follows a batch whose request it would send again, unchanged,
//! instead of submitting it anew.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The file's name in the run folder.
pub const FILE_NAME: &str = "batches.jsonl";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    /// Written before the create is sent: a create that times out or is
    /// interrupted may still have made a paid batch, and the ledger says
    /// so even with no id to follow.
    Creating {
        model: String,
        requests: Vec<Request>,
    },
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
    /// The provider does not know the batch (404): a resume sends its
    /// requests again instead of following it.
    Dead {
        model: String,
        id: String,
        why: String,
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
    /// The batches this run waits on, each with the provider's word for
    /// where it is: heard by the run, which says it on the terminal.
    running: tokio::sync::watch::Sender<Vec<RunningBatch>>,
}

/// A batch the run waits on, as its last poll found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningBatch {
    pub model: String,
    pub id: String,
    pub state: String,
}

impl Ledger {
    /// `dir`'s ledger, with what earlier runs wrote.
    pub fn open(dir: &Path) -> std::io::Result<Ledger> {
        let path = dir.join(FILE_NAME);
        let (mut earlier, mut orders) = (HashMap::new(), HashMap::new());
        for line in read_lines(&path)? {
            match line {
                Line::Submitted {
                    model,
                    id,
                    requests,
                } => {
                    for r in &requests {
                        earlier.insert(
                            (model.clone(), r.custom_id.clone()),
                            (id.clone(), r.digest.clone()),
                        );
                    }
                    orders.insert(id, requests.into_iter().map(|r| r.custom_id).collect());
                }
                Line::Dead { id, .. } => earlier.retain(|_, (batch, _)| *batch != id),
                Line::Creating { .. } | Line::Ended { .. } => {}
            }
        }
        Ok(Ledger {
            path,
            file: Mutex::new(None),
            earlier,
            orders,
            running: tokio::sync::watch::Sender::new(Vec::new()),
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

    /// A batch of `requests` (custom id, digest) is about to be created.
    pub fn creating(&self, model: &str, requests: &[(String, String)]) -> std::io::Result<()> {
        self.write(&Line::Creating {
            model: model.to_owned(),
            requests: listed(requests),
        })
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
            requests: listed(requests),
        })
    }

    /// A poll found batch `id` not ended, `state` by the provider's word.
    pub fn running(&self, model: &str, id: &str, state: &str) {
        self.running.send_if_modified(|running| {
            let now = RunningBatch {
                model: model.to_owned(),
                id: id.to_owned(),
                state: state.to_owned(),
            };
            match running.iter_mut().find(|b| b.id == id) {
                Some(was) if *was == now => false,
                Some(was) => {
                    *was = now;
                    true
                }
                None => {
                    running.push(now);
                    true
                }
            }
        });
    }

    /// Hears each batch's state as polls find it changed.
    pub fn watch_running(&self) -> tokio::sync::watch::Receiver<Vec<RunningBatch>> {
        self.running.subscribe()
    }

    /// The provider does not know batch `id`: never followed again.
    pub fn dead(&self, model: &str, id: &str, why: &str) -> std::io::Result<()> {
        self.write(&Line::Dead {
            model: model.to_owned(),
            id: id.to_owned(),
            why: why.to_owned(),
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
            *file = Some(open_to_append(&self.path)?);
        }
        let file = file.as_mut().expect("opened above");
        file.write_all(&text)?;
        file.sync_data()
    }
}

fn listed(requests: &[(String, String)]) -> Vec<Request> {
    requests
        .iter()
        .map(|(custom_id, digest)| Request {
            custom_id: custom_id.clone(),
            digest: digest.clone(),
        })
        .collect()
}

/// The ledger opened to append, as a run folder's files are opened (a
/// regular file, no link at its name); a torn last line (a run killed
/// mid-write) ended first, so that it does not swallow the next line.
fn open_to_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::io::{Read, Seek, SeekFrom};
    let mut options = std::fs::OpenOptions::new();
    options.create(true).read(true).append(true);
    let mut file = crate::source::open_in_run_folder(&mut options, path)?;
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// `--force`: a run that replaces another starts a new ledger; the old
/// one's batches (paid for) are added to `batches.replaced.jsonl`.
pub fn set_aside(dir: &Path) -> std::io::Result<()> {
    // No folder there (yet, or a file in its place, which --out refuses
    // later by name): no ledger to set aside.
    if !dir.is_dir() {
        return Ok(());
    }
    let path = dir.join(FILE_NAME);
    let Some(old) = read_whole(&path)? else {
        return Ok(());
    };
    let mut kept = open_to_append(&dir.join(REPLACED_NAME))?;
    kept.write_all(&old)?;
    kept.sync_data()?;
    std::fs::remove_file(path)
}

/// Where `--force` keeps the ledgers of the runs it replaced.
pub const REPLACED_NAME: &str = "batches.replaced.jsonl";

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
    Ok(entries_of(read_lines(path)?))
}

/// Lines in order as the batches they tell of, each once.
fn entries_of(lines: Vec<Line>) -> Vec<BatchEntry> {
    let mut entries: Vec<BatchEntry> = Vec::new();
    for line in lines {
        match line {
            Line::Submitted {
                model,
                id,
                requests,
            } => {
                // The create it confirms, if it was recorded as begun.
                let begun = entries
                    .iter_mut()
                    .rev()
                    .find(|e| e.id.is_empty() && e.model == model && e.requests == requests.len());
                match begun {
                    Some(entry) => entry.id = id,
                    None => entries.push(BatchEntry {
                        model,
                        id,
                        requests: requests.len(),
                        state: None,
                        answered: 0,
                        failed: 0,
                    }),
                }
            }
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
            Line::Dead { id, why, .. } => {
                if let Some(entry) = entries.iter_mut().find(|e| e.id == id) {
                    entry.state = Some(format!("dead: {why}"));
                }
            }
            Line::Creating { model, requests } => entries.push(BatchEntry {
                model,
                id: String::new(),
                requests: requests.len(),
                state: None,
                answered: 0,
                failed: 0,
            }),
        }
    }
    entries
}

/// The ledger's lines; none when there is no ledger; a torn line (a run
/// killed mid-write) skipped.
fn read_lines(path: &Path) -> std::io::Result<Vec<Line>> {
    let Some(text) = read_whole(path)? else {
        return Ok(Vec::new());
    };
    Ok(split_lines(&text)
        .filter_map(|(_, _, line)| line.ok())
        .collect())
}

/// The ledger at `path`, whole (`None`: there is none), read as a run
/// folder's files are.
fn read_whole(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = match crate::source::open_run_file(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut text)?;
    Ok(Some(text))
}

/// Each non-blank line of a ledger's text: its number, its bytes and
/// what it reads as (a torn line is an error).
fn split_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8], serde_json::Result<Line>)> + '_ {
    text.split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .map(|(n, line)| (n + 1, line, serde_json::from_slice(line)))
}

/// What merging ledgers gives: the batches, and the lines a kill tore.
pub type Merged = (Vec<BatchEntry>, Vec<(PathBuf, usize)>);

/// The ledgers of `shards`, one after the other, written to `out`'s: the
/// batches they hold, and the lines a kill tore (left out, by file and
/// line number).
pub fn merge(shards: &[PathBuf], out: &Path) -> std::io::Result<Merged> {
    let (mut kept, mut lines, mut torn) = (Vec::new(), Vec::new(), Vec::new());
    for shard in shards {
        let path = shard.join(FILE_NAME);
        let Some(text) = read_whole(&path)? else {
            continue;
        };
        for (n, raw, line) in split_lines(&text) {
            match line {
                Ok(line) => {
                    kept.extend_from_slice(raw);
                    kept.push(b'\n');
                    lines.push(line);
                }
                Err(_) => torn.push((path.clone(), n)),
            }
        }
    }
    if !kept.is_empty() {
        crate::whole_file::write(&out.join(FILE_NAME), kept)?;
    }
    Ok((entries_of(lines), torn))
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

    #[test]
    fn a_torn_last_line_does_not_swallow_the_next() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), br#"{"event":"submitted","mo"#).unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        ledger
            .submitted("m", "batch_2", &[("t0-a1".into(), "d".into())])
            .unwrap();
        let again = Ledger::open(dir.path()).unwrap();
        assert_eq!(again.earlier("m", "t0-a1", "d"), Some("batch_2"));
    }

    #[test]
    fn the_ledger_is_never_read_or_written_through_a_link_out_of_the_run_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "mine\n").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&outside, run.join(FILE_NAME)).unwrap();
        // Neither read (its lines would name batches to follow) nor written.
        let err = Ledger::open(&run).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = set_aside(&run).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
        std::fs::remove_file(run.join(FILE_NAME)).unwrap();
        let ledger = Ledger::open(&run).unwrap();
        std::os::unix::fs::symlink(&outside, run.join(FILE_NAME)).unwrap();
        let err = ledger
            .creating("m", &[("t0-a1".into(), "d".into())])
            .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
    }

    #[test]
    fn a_create_begun_and_confirmed_is_one_batch_and_one_unconfirmed_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        let sent = [("t0-a1".to_owned(), "d".to_owned())];
        ledger.creating("m", &sent).unwrap();
        ledger.submitted("m", "batch_1", &sent).unwrap();
        ledger.creating("m", &sent).unwrap();
        let entries = entries(dir.path()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id, "batch_1");
        assert_eq!(entries[1].id, "", "its create got no answer");
    }
}
