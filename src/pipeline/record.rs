//! Record: the JSONL session log. Per call, a `tool_call` entry and then a
//! `tool_result` entry whose `parentId` is the call entry's id. A batch is
//! serialized into memory first and written with one `write_all` and a
//! flush, so lines are whole even when calls ran in parallel and a process
//! killed between batches leaves only whole lines.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::Batch;
use crate::call::{ErrorKind, ParsedCall};

/// A JSONL session log over any writer (a file, or memory in tests).
#[derive(Debug)]
pub struct SessionLog<W: Write = File> {
    out: W,
    buffer: Vec<u8>,
    next_id: u64,
    last_id: Option<u64>,
}

impl SessionLog<File> {
    /// Create (or truncate) the log file.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create(path)?))
    }
}

impl<W: Write> SessionLog<W> {
    pub fn new(out: W) -> Self {
        SessionLog {
            out,
            buffer: Vec::with_capacity(4096),
            next_id: 1,
            last_id: None,
        }
    }

    /// Append the entries of one batch and flush them.
    pub fn record(&mut self, calls: &[ParsedCall], batch: &Batch) -> io::Result<()> {
        let base_ms = batch
            .started_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        for (call, result) in calls.iter().zip(&batch.results) {
            let call_id = self.take_id();
            let call_entry = CallEntry {
                id: EntryId(call_id),
                parent_id: self.last_id.map(EntryId),
                timestamp: millis(base_ms + result.started),
                kind: "tool_call",
                call_id: call.id(),
                tool: call.name(),
                arguments: match call {
                    ParsedCall::Ok(call) => Arguments::Parsed(&call.arguments),
                    ParsedCall::Malformed(call) => Arguments::Raw(&call.raw_arguments),
                },
            };
            serde_json::to_writer(&mut self.buffer, &call_entry)?;
            self.buffer.push(b'\n');

            let result_id = self.take_id();
            let result_entry = ResultEntry {
                id: EntryId(result_id),
                parent_id: EntryId(call_id),
                timestamp: millis(base_ms + result.started + result.elapsed),
                kind: "tool_result",
                call_id: &result.call_id,
                tool: &result.name,
                content: &result.content,
                is_error: result.is_error(),
                error_kind: result.error_kind,
                elapsed_us: result.elapsed.as_micros() as u64,
            };
            serde_json::to_writer(&mut self.buffer, &result_entry)?;
            self.buffer.push(b'\n');
            self.last_id = Some(result_id);
        }
        let written = self
            .out
            .write_all(&self.buffer)
            .and_then(|()| self.out.flush());
        self.buffer.clear();
        written
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

fn millis(since_epoch: Duration) -> u64 {
    since_epoch.as_millis() as u64
}

/// Entry ids are `e1`, `e2`, ... within a log; written without allocating.
#[derive(Debug, Clone, Copy)]
struct EntryId(u64);

impl Serialize for EntryId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut buffer = itoa::Buffer::new();
        let digits = buffer.format(self.0);
        let mut text = [0u8; 21];
        text[0] = b'e';
        text[1..=digits.len()].copy_from_slice(digits.as_bytes());
        // Only ASCII was written.
        serializer.serialize_str(std::str::from_utf8(&text[..=digits.len()]).unwrap_or("e?"))
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Arguments<'a> {
    Parsed(&'a Value),
    /// A malformed call's arguments exactly as the model sent them.
    Raw(&'a str),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallEntry<'a> {
    id: EntryId,
    parent_id: Option<EntryId>,
    timestamp: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    tool: &'a str,
    arguments: Arguments<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultEntry<'a> {
    id: EntryId,
    parent_id: EntryId,
    timestamp: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    tool: &'a str,
    content: &'a str,
    is_error: bool,
    error_kind: Option<ErrorKind>,
    elapsed_us: u64,
}
