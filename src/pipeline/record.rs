//! Record: the JSONL session log. Per reply, a `model_reply` entry (what
//! the model said: its text, why it stopped, its reasoning, its tokens,
//! or why the reply could not be read); then per call, a `tool_call`
//! entry and a `tool_result` entry whose `parentId` is the call entry's id
//! (a simulated user's own calls say `"who":"simulated_user"`). In a run,
//! every entry also carries its coordinates (`model`, `scenario`, `trial`,
//! `attempt`), and ids count within one trial. A batch is
//! serialized into memory first and written with one `write_all` and a
//! flush, so lines are whole even when calls ran in parallel and a process
//! killed between batches leaves only whole lines.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::Batch;
use crate::call::{Arguments, ParsedCall, StreamTiming, ToolResult};
use crate::json_writer::{write_str, write_u64, write_value};
use crate::provider::{ParsedResponse, ResponseError};

/// A JSONL session log over any writer (a file, or memory in tests).
#[derive(Debug)]
pub struct SessionLog<W: Write = File> {
    out: W,
    buffer: Vec<u8>,
    next_id: u64,
    last_id: Option<u64>,
    /// The coordinates members written at the start of every entry.
    context: Vec<u8>,
}

/// Where in a run the entries come from.
#[derive(Debug, Clone, Copy)]
pub struct Coordinates<'a> {
    pub model: &'a str,
    pub scenario: &'a str,
    pub trial: u32,
    pub attempt: u32,
}

impl SessionLog<File> {
    /// Create (or truncate) the log file.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create(path)?))
    }

    /// Open the log file to add to it (creating it if need be). Entry ids
    /// and the parent chain go on from its last whole line, so ids stay
    /// unique in the file; a line torn by a kill is closed first.
    pub fn append(path: &Path) -> io::Result<Self> {
        let existing = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        if existing.last().is_some_and(|b| *b != b'\n') {
            file.write_all(b"\n")?;
        }
        let mut log = Self::new(file);
        if let Some(last) = last_entry_id(&existing) {
            log.next_id = last + 1;
            log.last_id = Some(last);
        }
        Ok(log)
    }
}

/// The number of the last whole entry's id (`"e12"` is 12).
fn last_entry_id(log: &[u8]) -> Option<u64> {
    let whole = &log[..log.iter().rposition(|b| *b == b'\n')?];
    let line = whole.rsplit(|b| *b == b'\n').find(|l| !l.is_empty())?;
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        id: &'a str,
    }
    let entry: Entry<'_> = serde_json::from_slice(line).ok()?;
    entry.id.strip_prefix('e')?.parse().ok()
}

impl<W: Write> SessionLog<W> {
    pub fn new(out: W) -> Self {
        SessionLog {
            out,
            buffer: Vec::with_capacity(4096),
            next_id: 1,
            last_id: None,
            context: Vec::new(),
        }
    }

    /// Put these coordinates on every entry from now on.
    pub fn set_coordinates(&mut self, at: Coordinates<'_>) {
        let out = &mut self.context;
        out.clear();
        out.extend_from_slice(b"\"model\":");
        write_str(out, at.model);
        out.extend_from_slice(b",\"scenario\":");
        write_str(out, at.scenario);
        out.extend_from_slice(b",\"trial\":");
        write_u64(out, u64::from(at.trial));
        out.extend_from_slice(b",\"attempt\":");
        write_u64(out, u64::from(at.attempt));
        out.push(b',');
    }

    /// The writer, to take what was logged (a trial's log in memory).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Append one reply's entries, what the model said and then its calls
    /// and their results, and flush them.
    pub fn record_turn(
        &mut self,
        parsed: &Result<ParsedResponse, ResponseError>,
        body: &[u8],
        stream: Option<&StreamTiming>,
        batch: &Batch,
    ) -> io::Result<()> {
        let id = self.take_id();
        let at = millis(
            batch
                .started_at
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        );
        write_reply_entry(
            &mut self.buffer,
            &self.context,
            id,
            self.last_id,
            at,
            &Said {
                parsed,
                body,
                stream,
            },
        );
        self.last_id = Some(id);
        match parsed {
            Ok(response) if !response.calls.is_empty() => self.record(&response.calls, batch),
            _ => self.flush_buffer(),
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
            let result_id = self.take_id();
            let called_at = millis(base_ms + result.started);
            let answered_at = millis(base_ms + result.started + result.elapsed);
            let context = &self.context;
            write_call_entry(
                &mut self.buffer,
                context,
                call_id,
                self.last_id,
                called_at,
                call,
            );
            write_result_entry(
                &mut self.buffer,
                context,
                result_id,
                call_id,
                answered_at,
                result,
            );
            self.last_id = Some(result_id);
        }
        self.flush_buffer()
    }

    /// Append the entries of a batch of the simulated user's own calls
    /// (its tools, never the model's): each entry says `"who":
    /// "simulated_user"`, as its messages do.
    pub fn record_user_calls(&mut self, calls: &[ParsedCall], batch: &Batch) -> io::Result<()> {
        let kept = self.context.len();
        self.context
            .extend_from_slice(b"\"who\":\"simulated_user\",");
        let written = self.record(calls, batch);
        self.context.truncate(kept);
        written
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        let written = self
            .out
            .write_all(&self.buffer)
            .and_then(|()| self.out.flush());
        self.buffer.clear();
        written
    }

    /// Append the entry of a probe: the tool toolgauge called when a user
    /// turn ended (never the model), its arguments, what it answered and
    /// whether that matched; and flush it.
    pub fn record_probe(
        &mut self,
        tool: &str,
        arguments: &Arguments,
        result: &serde_json::Value,
        passed: bool,
    ) -> io::Result<()> {
        let id = self.begin_now();
        let out = &mut self.buffer;
        out.extend_from_slice(b",\"type\":\"probe\",\"tool\":");
        write_str(out, tool);
        out.extend_from_slice(b",\"arguments\":");
        arguments.write_json(out);
        out.extend_from_slice(b",\"result\":");
        write_value(out, result);
        out.extend_from_slice(if passed {
            b",\"passed\":true}\n"
        } else {
            b",\"passed\":false}\n"
        });
        self.last_id = Some(id);
        self.flush_buffer()
    }

    /// Append the entry of a user message: who said it (`scenario`, a
    /// turn written in the scenario; `simulated_user`, the user a model or
    /// a script plays), its text and the tokens it took (a live simulated
    /// user's); and flush it. A conversation is audited from both sides.
    pub fn record_user(
        &mut self,
        who: &str,
        text: &str,
        usage: Option<crate::call::Usage>,
    ) -> io::Result<()> {
        let id = self.begin_now();
        let out = &mut self.buffer;
        out.extend_from_slice(b",\"type\":\"user_message\",\"who\":");
        write_str(out, who);
        out.extend_from_slice(b",\"text\":");
        write_str(out, text);
        if let Some(usage) = usage {
            out.extend_from_slice(b",\"inputTokens\":");
            write_u64(out, usage.input_tokens);
            out.extend_from_slice(b",\"outputTokens\":");
            write_u64(out, usage.output_tokens);
        }
        out.extend_from_slice(b"}\n");
        self.last_id = Some(id);
        self.flush_buffer()
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// Begin an entry stamped now, after the last one: its id.
    fn begin_now(&mut self) -> u64 {
        let id = self.take_id();
        let at = millis(
            std::time::SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        );
        write_head(&mut self.buffer, &self.context, id, self.last_id, at);
        id
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

// Both entry shapes are fixed: keys are constant bytes, and only values
// need work (escaping every key again cost a measurable share of the
// per-call time).

/// How much of a body that is not a response the log keeps.
const BODY_EXCERPT: usize = 2048;

/// `{"id":"e1","parentId":..,"timestamp":..,"type":"model_reply","text":..,"finishReason":..,"truncated":..,"reasoning":..,"calls":..,"inputTokens":..,"outputTokens":..}`,
/// or for a body that is not a response, `"error"` and an excerpt of the `"body"`.
fn write_reply_entry(
    out: &mut Vec<u8>,
    context: &[u8],
    id: u64,
    parent: Option<u64>,
    timestamp: u64,
    said: &Said<'_>,
) {
    write_head(out, context, id, parent, timestamp);
    out.extend_from_slice(b",\"type\":\"model_reply\"");
    if let Some(stream) = said.stream {
        write_stream(out, stream);
    }
    match said.parsed {
        Ok(response) => {
            out.extend_from_slice(b",\"text\":");
            write_str(out, &response.text);
            out.extend_from_slice(b",\"finishReason\":");
            match &response.finish_reason {
                Some(reason) => write_str(out, reason),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(if response.truncated {
                b",\"truncated\":true"
            } else {
                b",\"truncated\":false"
            });
            if !response.reasoning.is_empty() {
                out.extend_from_slice(b",\"reasoning\":");
                write_str(out, &response.reasoning);
            }
            out.extend_from_slice(b",\"calls\":");
            write_u64(out, response.calls.len() as u64);
            out.extend_from_slice(b",\"inputTokens\":");
            write_u64(out, response.usage.input_tokens);
            out.extend_from_slice(b",\"outputTokens\":");
            write_u64(out, response.usage.output_tokens);
            if response.usage.reasoning_tokens > 0 {
                out.extend_from_slice(b",\"reasoningTokens\":");
                write_u64(out, response.usage.reasoning_tokens);
            }
        }
        Err(error) => {
            out.extend_from_slice(b",\"error\":");
            write_str(out, &error.to_string());
            out.extend_from_slice(b",\"body\":");
            let text = String::from_utf8_lossy(said.body);
            write_str(out, &crate::excerpt::cut(&text, BODY_EXCERPT));
        }
    }
    out.extend_from_slice(b"}\n");
}

/// What one reply said, and when its parts came if it streamed.
struct Said<'a> {
    parsed: &'a Result<ParsedResponse, ResponseError>,
    body: &'a [u8],
    stream: Option<&'a StreamTiming>,
}

/// `,"stream":{"firstByteMs":..,"firstTokenMs":..,"callsMs":[..],"endMs":..}`,
/// milliseconds from the request's send (`firstTokenMs` null: none came).
fn write_stream(out: &mut Vec<u8>, stream: &StreamTiming) {
    let ms = |out: &mut Vec<u8>, d: Duration| {
        out.extend_from_slice(format!("{}", (d.as_secs_f64() * 1e6).round() / 1e3).as_bytes());
    };
    out.extend_from_slice(b",\"stream\":{\"firstByteMs\":");
    ms(out, stream.first_byte);
    out.extend_from_slice(b",\"firstTokenMs\":");
    match stream.first_token {
        Some(at) => ms(out, at),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"callsMs\":[");
    for (i, at) in stream.calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        ms(out, *at);
    }
    out.extend_from_slice(b"],\"endMs\":");
    ms(out, stream.end);
    out.push(b'}');
}

/// `{"id":"e1","parentId":null,"timestamp":..,"type":"tool_call","callId":..,"tool":..,"arguments":..}`
fn write_call_entry(
    out: &mut Vec<u8>,
    context: &[u8],
    id: u64,
    parent: Option<u64>,
    timestamp: u64,
    call: &ParsedCall,
) {
    write_head(out, context, id, parent, timestamp);
    out.extend_from_slice(b",\"type\":\"tool_call\",\"callId\":");
    write_str(out, call.id());
    out.extend_from_slice(b",\"tool\":");
    write_str(out, call.name());
    out.extend_from_slice(b",\"arguments\":");
    match call {
        ParsedCall::Ok(call) => call.arguments.write_json(out),
        // A malformed call's arguments exactly as the model sent them.
        ParsedCall::Malformed(call) => write_str(out, &call.raw_arguments),
    }
    out.extend_from_slice(b"}\n");
}

/// `{"id":"e2","parentId":"e1","timestamp":..,"type":"tool_result","callId":..,"tool":..,"content":..,"isError":..,"errorKind":..,"elapsedUs":..}`
fn write_result_entry(
    out: &mut Vec<u8>,
    context: &[u8],
    id: u64,
    parent: u64,
    timestamp: u64,
    result: &ToolResult,
) {
    write_head(out, context, id, Some(parent), timestamp);
    out.extend_from_slice(b",\"type\":\"tool_result\",\"callId\":");
    write_str(out, &result.call_id);
    out.extend_from_slice(b",\"tool\":");
    write_str(out, &result.name);
    out.extend_from_slice(b",\"content\":");
    write_str(out, &result.content);
    match result.error_kind {
        Some(kind) => {
            out.extend_from_slice(b",\"isError\":true,\"errorKind\":\"");
            // Error kind names are plain ASCII words.
            out.extend_from_slice(kind.as_str().as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b",\"isError\":false,\"errorKind\":null"),
    }
    out.extend_from_slice(b",\"elapsedUs\":");
    write_u64(out, result.elapsed.as_micros() as u64);
    out.extend_from_slice(b"}\n");
}

/// What every entry starts with: `{` and its coordinates, `id`,
/// `parentId` and `timestamp` (the caller goes on with `,"type":...`).
fn write_head(out: &mut Vec<u8>, context: &[u8], id: u64, parent: Option<u64>, timestamp: u64) {
    out.push(b'{');
    out.extend_from_slice(context);
    out.extend_from_slice(b"\"id\":");
    write_id(out, id);
    out.extend_from_slice(b",\"parentId\":");
    match parent {
        Some(parent) => write_id(out, parent),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"timestamp\":");
    write_u64(out, timestamp);
}

/// Entry ids are `"e1"`, `"e2"`, ... within a log.
fn write_id(out: &mut Vec<u8>, id: u64) {
    out.extend_from_slice(b"\"e");
    write_u64(out, id);
    out.push(b'"');
}
