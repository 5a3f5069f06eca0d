//! session.jsonl: what Record logged for every trial, written in job order
//! as trials finish (before the trial's trials.csv rows, so that a kill
//! never leaves a finished trial without its log), each entry with its
//! coordinates (model, scenario, trial, attempt). A resumed run keeps the
//! entries of the trials it keeps, and adds the rest. The log is the
//! largest file of a run: a thread of its own writes it, so the runner
//! never waits on the disk but at checkpoints.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::{FinishedTrial, Reporter, RunInfo};

/// Bytes handed to the writer thread at once.
const CHUNK: usize = 64 * 1024;

/// Chunks the writer hands back to be filled again, at most.
const RECYCLED: usize = 8;

/// A chunk a huge trial grew past this is freed, not filled again.
const RECYCLED_CAPACITY: usize = 4 * CHUNK;

pub struct SessionFile {
    /// Entries not yet handed to the writer.
    pending: Vec<u8>,
    to_writer: Option<SyncSender<Chunk>>,
    /// Chunks the writer has written and emptied: filled again, they cost
    /// no fresh memory (whose pages the kernel zeroes on first touch).
    emptied: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<()>>,
}

enum Chunk {
    Bytes(Vec<u8>),
    /// Answer once everything before is written (or say what failed).
    Written(SyncSender<io::Result<()>>),
}

/// The writer thread: chunks in order, the first error kept for the next
/// `Written`.
fn write_chunks(mut file: File, chunks: Receiver<Chunk>, emptied: SyncSender<Vec<u8>>) {
    let mut failed: Option<io::Error> = None;
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(mut bytes) => {
                // Whole entries: a key a server quoted back is replaced.
                if failed.is_none()
                    && let Err(error) = file.write_all(&crate::secret::redact_bytes(&bytes))
                {
                    failed = Some(error);
                }
                if bytes.capacity() <= RECYCLED_CAPACITY {
                    bytes.clear();
                    // Full (or gone): this one is freed instead.
                    let _ = emptied.try_send(bytes);
                }
            }
            Chunk::Written(answer) => {
                let _ = answer.send(failed.take().map_or(Ok(()), Err));
            }
        }
    }
}

fn writer_gone() -> io::Error {
    io::Error::other("the session log's writer thread stopped")
}

/// A trial's place in job order: model, scenario, trial.
pub type JobKey = (usize, usize, u32);

impl SessionFile {
    /// Start the log.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::over(File::create(path)?))
    }

    /// Continue the log of a run being resumed: keep the entries of the
    /// trials up to `last_kept` in job order (the trials the resume
    /// replays) and drop the rest, a torn last line included; the trials
    /// run again add theirs.
    pub fn resume(path: &Path, info: &RunInfo, last_kept: Option<JobKey>) -> io::Result<Self> {
        let kept = path.with_extension("jsonl.partial");
        {
            let mut out = io::BufWriter::new(File::create(&kept)?);
            let log = match crate::source::open_run_file(path) {
                Ok(file) => Some(file),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            if let (Some(last), Some(file)) = (last_kept, log) {
                let models: HashMap<&str, usize> = index(info.models.iter().map(|m| &m.name));
                let scenarios: HashMap<&str, usize> = index(info.scenarios.iter().map(|s| &s.name));
                for line in io::BufReader::new(file).split(b'\n') {
                    let line = line?;
                    match job_of(&line, &models, &scenarios) {
                        Some(job) if job <= last => {
                            out.write_all(&line)?;
                            out.write_all(b"\n")?;
                        }
                        // Job order: nothing after the first later entry is kept.
                        Some(_) => break,
                        // A torn line, the last one a kill leaves.
                        None => break,
                    }
                }
            }
            out.flush()?;
        }
        std::fs::rename(&kept, path)?;
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        Ok(Self::over(file))
    }

    fn over(file: File) -> Self {
        let (to_writer, chunks) = sync_channel(8);
        let (to_fill, emptied) = sync_channel(RECYCLED);
        let writer = std::thread::spawn(move || write_chunks(file, chunks, to_fill));
        SessionFile {
            pending: Vec::with_capacity(CHUNK),
            to_writer: Some(to_writer),
            emptied,
            writer: Some(writer),
        }
    }

    /// A finished trial's entries, after those before.
    fn add(&mut self, session: &[u8]) -> io::Result<()> {
        // Handed over before it would outgrow its capacity: growing would
        // copy the whole chunk into fresh memory.
        if !self.pending.is_empty() && self.pending.len() + session.len() > self.pending.capacity()
        {
            self.hand_over()?;
        }
        self.pending.extend_from_slice(session);
        if self.pending.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Hand the pending entries to the writer, and fill an emptied chunk next.
    fn hand_over(&mut self) -> io::Result<()> {
        let next = self
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.pending, next);
        self.send(Chunk::Bytes(full))
    }

    fn send(&self, chunk: Chunk) -> io::Result<()> {
        self.to_writer
            .as_ref()
            .ok_or_else(writer_gone)?
            .send(chunk)
            .map_err(|_| writer_gone())
    }
}

impl Drop for SessionFile {
    fn drop(&mut self) {
        // Whatever is pending still goes to the file.
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let _ = self.send(Chunk::Bytes(rest));
        }
        self.to_writer = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

pub(super) fn index<'a>(names: impl Iterator<Item = &'a String>) -> HashMap<&'a str, usize> {
    names.enumerate().map(|(i, n)| (n.as_str(), i)).collect()
}

/// The job an entry belongs to, if the line is a whole entry of this run.
pub(super) fn job_of(
    line: &[u8],
    models: &HashMap<&str, usize>,
    scenarios: &HashMap<&str, usize>,
) -> Option<JobKey> {
    // Names with escapes (a quote, a backslash) cannot be borrowed.
    #[derive(serde::Deserialize)]
    struct Coordinates<'a> {
        #[serde(borrow)]
        model: Cow<'a, str>,
        #[serde(borrow)]
        scenario: Cow<'a, str>,
        trial: u32,
    }
    let entry: Coordinates<'_> = serde_json::from_slice(line).ok()?;
    Some((
        *models.get(entry.model.as_ref())?,
        *scenarios.get(entry.scenario.as_ref())?,
        entry.trial,
    ))
}

/// The job of an entry, read off the coordinates the session log writes
/// first, without reading (or checking) the rest of the line: to find a
/// few trials' entries in a large log, each then read whole. A line in
/// another shape is read as [`job_of`] reads it.
pub(super) fn job_at_start(
    line: &[u8],
    models: &HashMap<&str, usize>,
    scenarios: &HashMap<&str, usize>,
) -> Option<JobKey> {
    match leading_coordinates(line) {
        Some((model, scenario, trial)) => {
            Some((*models.get(model)?, *scenarios.get(scenario)?, trial))
        }
        None => job_of(line, models, scenarios),
    }
}

/// The coordinates of an entry as the session log writes them, first
/// (`{"model":…,"scenario":…,"trial":N,…`), read without parsing the rest
/// of the line (a run's log is mostly what the report does not show).
/// `None` for a line in any other shape.
fn leading_coordinates(line: &[u8]) -> Option<(&str, &str, u32)> {
    fn string<'l>(rest: &'l [u8], key: &[u8]) -> Option<(&'l str, &'l [u8])> {
        let rest = rest.strip_prefix(key)?;
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<&str>();
        let value = values.next()?.ok()?;
        Some((value, &rest[values.byte_offset()..]))
    }
    let (model, rest) = string(line, b"{\"model\":")?;
    let (scenario, rest) = string(rest, b",\"scenario\":")?;
    let rest = rest.strip_prefix(b",\"trial\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if rest.get(digits) != Some(&b',') {
        return None;
    }
    let trial = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    Some((model, scenario, trial))
}

impl Reporter for SessionFile {
    fn trial_finished(&mut self, _info: &RunInfo, trial: FinishedTrial<'_>) -> io::Result<()> {
        self.add(trial.session)
    }

    /// Waits until every entry so far is in the file.
    fn checkpoint(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.hand_over()?;
        }
        let (answer, written) = sync_channel(1);
        self.send(Chunk::Written(answer))?;
        written.recv().map_err(|_| writer_gone())?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_handed_over_before_it_would_grow_and_every_byte_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.jsonl");
        let mut log = SessionFile::create(&path).unwrap();
        let mut expected = Vec::new();
        for trial in 0..300u32 {
            let line = format!("{{\"trial\":{trial:>4},\"pad\":\"{}\"}}\n", "x".repeat(970));
            log.add(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
            // Never grown, which copied the whole chunk into fresh memory.
            assert_eq!(log.pending.capacity(), CHUNK, "after trial {trial}");
        }
        // A trial larger than a chunk goes whole, in its place.
        let big = format!("{{\"big\":\"{}\"}}\n", "y".repeat(3 * CHUNK));
        log.add(big.as_bytes()).unwrap();
        expected.extend_from_slice(big.as_bytes());
        log.add(b"{\"last\":1}\n").unwrap();
        expected.extend_from_slice(b"{\"last\":1}\n");
        log.checkpoint().unwrap();
        drop(log);
        assert!(
            std::fs::read(&path).unwrap() == expected,
            "the file differs"
        );
    }

    #[test]
    fn an_entry_of_a_model_whose_name_has_a_quote_keeps_its_job() {
        let models = HashMap::from([("m\"1", 0)]);
        let scenarios = HashMap::from([("s\\2", 0)]);
        let line = br#"{"model":"m\"1","scenario":"s\\2","trial":3,"attempt":1}"#;
        assert_eq!(job_of(line, &models, &scenarios), Some((0, 0, 3)));
    }

    #[test]
    fn the_job_read_off_the_start_of_a_line_is_the_job_of_the_whole_entry() {
        let models = HashMap::from([("m\"1", 0), ("m2", 1)]);
        let scenarios = HashMap::from([("s", 0)]);
        let lines: [&[u8]; 5] = [
            br#"{"model":"m2","scenario":"s","trial":7,"attempt":1,"id":"e1"}"#,
            // Escaped names are read whole.
            br#"{"model":"m\"1","scenario":"s","trial":3,"attempt":1}"#,
            // Another order of members is read whole.
            br#"{"trial":4,"model":"m2","scenario":"s"}"#,
            // Not of this run.
            br#"{"model":"other","scenario":"s","trial":1,"attempt":1}"#,
            b"not json",
        ];
        for line in lines {
            assert_eq!(
                job_at_start(line, &models, &scenarios),
                job_of(line, &models, &scenarios),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(job_at_start(lines[0], &models, &scenarios), Some((1, 0, 7)));
        assert_eq!(job_at_start(lines[1], &models, &scenarios), Some((0, 0, 3)));
        // A torn line is no whole entry; its start still names its job.
        let torn = br#"{"model":"m2","scenario":"s","trial":7,"attempt":1,"cont"#;
        assert_eq!(job_of(torn, &models, &scenarios), None);
        assert_eq!(job_at_start(torn, &models, &scenarios), Some((1, 0, 7)));
    }
}
