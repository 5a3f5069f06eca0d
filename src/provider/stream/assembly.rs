//! A stream read whole: its frames, their assembly into the reply's body
//! and Parse's answer, each event timed, and how a stream failed.

use std::ops::Range;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{FutureExt, Stream, StreamExt};
use serde_json::Value;

use super::super::{ParsedResponse, Provider, ResponseError};
use super::assemble::Assembler;
use super::progress::{Progress, ValueFormat};
use super::{chat, ending, formats};
use crate::call::{ParsedCall, StreamTiming};

/// One server-sent event: its `event:` name, if it had one, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

/// A body that is not a stream of server-sent events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a stream of server-sent events: {0}")]
pub struct NotAStream(String);

/// The events of a stream that arrived in `chunks` (however it was cut).
pub fn frames<I>(chunks: I) -> Result<Vec<Frame>, NotAStream>
where
    I: IntoIterator<Item = Bytes>,
{
    let chunks: Vec<Result<Bytes, std::io::Error>> = chunks.into_iter().map(Ok).collect();
    let mut events = sse_stream::SseStream::from_bytes_stream(futures_util::stream::iter(chunks));
    let mut frames = Vec::new();
    // Every chunk is here already: each poll is ready at once.
    while let Some(Some(event)) = events.next().now_or_never() {
        let event = event.map_err(|e| NotAStream(e.to_string()))?;
        if let Some(data) = event.data {
            frames.push(Frame {
                event: event.event,
                data,
            });
        }
    }
    Ok(frames)
}

/// What Parse reads of a streamed reply read at once, no body written.
pub fn parse_whole(
    provider: Provider,
    streamed: &[u8],
) -> Result<Result<ParsedResponse, ResponseError>, NotAStream> {
    let assembly = read_all(provider, streamed)?;
    if assembly.is_empty() {
        return Err(NotAStream(NO_JSON_EVENT.to_owned()));
    }
    Ok(assembly.reader.into_parsed(provider))
}

const NO_JSON_EVENT: &str = "it holds no JSON event";

/// Every event of `streamed`, read; Err: none, or none of the format's.
fn read_all(provider: Provider, streamed: &[u8]) -> Result<Assembly, NotAStream> {
    let frames = frames([Bytes::copy_from_slice(streamed)])?;
    if frames.is_empty() {
        return Err(NotAStream("it holds no event".to_owned()));
    }
    let assembly = assembly_of(provider, &frames);
    if assembly.events() > 0 && assembly.recognised == 0 {
        return Err(NotAStream(ending::foreign(provider, assembly.events())));
    }
    Ok(assembly)
}

/// The reply `frames` stand for, read as they would be as they came;
/// `None`: no event is JSON.
pub fn assemble(provider: Provider, frames: &[Frame]) -> Option<Assembled> {
    assembly_of(provider, frames).finish(Duration::ZERO, Duration::ZERO)
}

fn assembly_of(provider: Provider, frames: &[Frame]) -> Assembly {
    let mut assembly = Assembly::new(provider);
    for frame in frames {
        assembly.push(frame, Duration::ZERO);
    }
    assembly
}

/// The body a streamed reply stands for, as bytes in `provider`'s format.
pub fn whole_body(provider: Provider, streamed: &[u8]) -> Result<Vec<u8>, NotAStream> {
    read_all(provider, streamed)?
        .finish(Duration::ZERO, Duration::ZERO)
        .map(|assembled| assembled.body)
        .ok_or_else(|| NotAStream(NO_JSON_EVENT.to_owned()))
}

impl Frame {
    /// The event's data as JSON; `None` for Chat's closing `[DONE]` (the
    /// other formats have none) or data that is not JSON.
    fn event(&self) -> Option<Value> {
        let data = self.data.trim();
        (data != "[DONE]")
            .then(|| serde_json::from_str::<Value>(data).ok())
            .flatten()
    }
}

/// A stream's events as they come, each with when it came: what it has
/// shown so far, and the body it stands for at the end.
#[derive(Debug)]
pub struct Assembly {
    provider: Provider,
    reader: Reader,
    arrivals: Vec<Duration>,
    first_token: Option<Duration>,
    calls: Vec<Duration>,
    /// The event that says the reply is whole came.
    ended: bool,
    /// An event said the server failed: its words.
    failed: Option<String>,
    /// Events read as JSON that are the format's own.
    recognised: usize,
}

/// How a format's events are read: Chat's typed, call by call as they
/// come; the other formats' as JSON values, into the body they stand for
/// as they come.
#[derive(Debug)]
enum Reader {
    Chat(chat::ChatReply),
    Values {
        assembler: Assembler,
        progress: Progress,
        /// The events read as JSON.
        events: usize,
        /// Names a call the stream gave no id: the first event's hash.
        unnamed: Option<u64>,
    },
}

impl Reader {
    fn new(provider: Provider) -> Reader {
        match ValueFormat::of(provider) {
            None => Reader::Chat(chat::ChatReply::default()),
            Some(format) => Reader::Values {
                assembler: Assembler::new(format),
                progress: Progress::new(format),
                events: 0,
                unnamed: None,
            },
        }
    }

    /// The stream ended: every call begun is complete.
    fn end(&mut self) {
        match self {
            Reader::Chat(reply) => reply.end(),
            Reader::Values { progress, .. } => progress.end(),
        }
    }

    fn has_token(&self) -> bool {
        match self {
            Reader::Chat(reply) => reply.has_token(),
            Reader::Values { progress, .. } => progress.has_token(),
        }
    }

    /// How many calls are complete, in call order.
    fn complete(&self) -> usize {
        match self {
            Reader::Chat(reply) => reply.complete(),
            Reader::Values { progress, .. } => progress.complete(),
        }
    }

    /// The events read as JSON.
    fn events(&self) -> usize {
        match self {
            Reader::Chat(reply) => reply.events,
            Reader::Values { events, .. } => *events,
        }
    }

    /// Call `k` (in call order) as the stream shows it now, read from
    /// its own deltas (Chat) or its own item, block or part alone.
    fn call(&self, provider: Provider, k: usize) -> Option<ParsedCall> {
        match self {
            Reader::Chat(reply) => reply.call(k),
            Reader::Values {
                assembler, unnamed, ..
            } => {
                let body = assembler.call_body(k)?;
                let parsed = provider.parse_response(body.to_string().as_bytes());
                let mut call = parsed.ok()?.calls.into_iter().next()?;
                name_unnamed(&mut call, *unnamed, k);
                Some(call)
            }
        }
    }

    /// What Parse reads of the whole reply (a Chat reply's body is not
    /// written for it).
    fn into_parsed(mut self, provider: Provider) -> Result<ParsedResponse, ResponseError> {
        match &mut self {
            Reader::Chat(reply) => {
                reply.end();
                Ok(reply.parsed())
            }
            Reader::Values { .. } => self.into_whole(provider).parsed,
        }
    }

    /// The whole reply: its body, as JSON where it was assembled as JSON,
    /// and what Parse reads of it.
    fn into_whole(mut self, provider: Provider) -> Whole {
        self.end();
        match self {
            Reader::Chat(reply) => Whole {
                body: reply.body(),
                json: None,
                parsed: Ok(reply.parsed()),
            },
            Reader::Values {
                assembler, unnamed, ..
            } => {
                let json = assembler.body();
                let body = json.to_string().into_bytes();
                let mut parsed = provider.parse_response(&body);
                for (k, call) in parsed
                    .iter_mut()
                    .flat_map(|p| p.calls.iter_mut())
                    .enumerate()
                {
                    name_unnamed(call, unnamed, k);
                }
                Whole {
                    body,
                    json: Some(json),
                    parsed,
                }
            }
        }
    }
}

/// A call the stream gave no id is named from the stream's first event
/// and its place (`k`), as Chat's are: the same early, when it is read
/// alone, as in the reply whole, or it would run twice.
fn name_unnamed(call: &mut ParsedCall, unnamed: Option<u64>, k: usize) {
    if call.id().starts_with(super::super::GENERATED_ID_PREFIX) {
        *call.id_mut() = format!(
            "{}{:016x}_{k}",
            super::super::GENERATED_ID_PREFIX,
            unnamed.unwrap_or_default()
        );
    }
}

/// A stream's reply whole: the parts of [`Assembled`] its reader makes.
struct Whole {
    body: Vec<u8>,
    json: Option<Value>,
    parsed: Result<ParsedResponse, ResponseError>,
}

/// A stream that did not end as its format ends: the server's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFailure {
    pub message: String,
    /// No event came before the deadline.
    pub timed_out: bool,
}

/// A stream read to its end (or as far as it went).
#[derive(Debug, Clone)]
pub struct Assembled {
    /// The body the stream stands for, in its format, written once.
    pub body: Vec<u8>,
    /// The body as JSON, where the stream was assembled as JSON.
    pub json: Option<Value>,
    /// What Parse reads of it.
    pub parsed: Result<ParsedResponse, ResponseError>,
    pub timing: StreamTiming,
    /// When each event came, from the request's send.
    pub arrivals: Vec<Duration>,
}

impl Assembly {
    pub fn new(provider: Provider) -> Assembly {
        Assembly {
            provider,
            reader: Reader::new(provider),
            arrivals: Vec::new(),
            first_token: None,
            calls: Vec::new(),
            ended: false,
            failed: None,
            recognised: 0,
        }
    }

    /// Take one event that came `at` after the request was sent: the
    /// calls (in call order) it completed.
    pub fn push(&mut self, frame: &Frame, at: Duration) -> Range<usize> {
        self.arrivals.push(at);
        let (signal, recognised) = match &mut self.reader {
            Reader::Chat(reply) => match reply.feed(frame.data.trim()) {
                Some(read) => (read.signal, read.recognised),
                None => (
                    ending::done(&frame.data).unwrap_or(ending::Signal::Goes),
                    false,
                ),
            },
            Reader::Values {
                assembler,
                progress,
                events,
                unnamed,
            } => {
                let data = frame.data.trim();
                let read = if assembler.take_piece(frame.event.as_deref(), data) {
                    // A piece of the reply: of the format, a token, no end.
                    progress.saw_token();
                    (ending::Signal::Goes, true)
                } else {
                    let event = frame.event();
                    let signal = formats::signal(progress.format, &frame.data, event.as_ref());
                    let Some(event) = event else {
                        self.take(signal);
                        return 0..0;
                    };
                    let recognised = formats::of_the_format(progress.format, &event);
                    progress.feed(&event);
                    assembler.feed(event);
                    (signal, recognised)
                };
                *events += 1;
                unnamed.get_or_insert_with(|| super::super::fnv1a(data.as_bytes()));
                read
            }
        };
        self.take(signal);
        self.recognised += usize::from(recognised);
        if self.reader.has_token() && self.first_token.is_none() {
            self.first_token = Some(at);
        }
        self.mark_complete(at)
    }

    fn take(&mut self, signal: ending::Signal) {
        match signal {
            ending::Signal::Goes => {}
            // The reply is whole: every call begun is complete.
            ending::Signal::Ends => {
                self.ended = true;
                self.reader.end();
            }
            ending::Signal::Failed(words) => {
                self.failed.get_or_insert(words);
            }
        }
    }

    /// The events read as JSON.
    fn events(&self) -> usize {
        self.reader.events()
    }

    fn mark_complete(&mut self, at: Duration) -> Range<usize> {
        let complete = self.reader.complete();
        let before = self.calls.len();
        self.calls.resize(complete.max(before), at);
        before..self.calls.len()
    }

    /// Call `k` (in call order) as the stream shows it now.
    pub fn call(&self, k: usize) -> Option<ParsedCall> {
        self.reader.call(self.provider, k)
    }

    /// The events held no event of the stream's format.
    pub fn is_empty(&self) -> bool {
        self.events() == 0
    }

    /// How the stream failed, if it did, given that it stopped (`broke`:
    /// why the connection or the framing broke): an error event, a break,
    /// or an end before its last event.
    fn failure(&self, broke: Option<String>) -> Option<StreamFailure> {
        let message = if !self.is_empty() && self.recognised == 0 {
            ending::foreign(self.provider, self.events())
        } else if let Some(words) = &self.failed {
            format!("the server sent an error in the stream: {words}")
        } else if let Some(why) = broke {
            format!("the stream broke off: {why}")
        } else if self.ended {
            return None;
        } else if self.arrivals.is_empty() {
            "the stream ended before its first event".to_owned()
        } else {
            format!(
                "the stream ended before its last event ({} event(s) came, none saying the reply was whole)",
                self.arrivals.len()
            )
        };
        Some(StreamFailure {
            message,
            timed_out: false,
        })
    }

    /// The stream ended (or broke off) `end` after the request was sent,
    /// its first byte having come at `first_byte`: every call begun is
    /// complete; the body and the timings. `None`: no event came.
    pub fn finish(mut self, first_byte: Duration, end: Duration) -> Option<Assembled> {
        if self.is_empty() {
            return None;
        }
        self.reader.end();
        self.mark_complete(end);
        let Whole { body, json, parsed } = self.reader.into_whole(self.provider);
        Some(Assembled {
            body,
            json,
            parsed,
            timing: StreamTiming {
                first_byte,
                first_token: self.first_token,
                calls: self.calls,
                end,
            },
            arrivals: self.arrivals,
        })
    }
}

impl Assembled {
    /// The stream held events but no output (no text, reasoning or call)
    /// and no output token counted: nothing of a model's reply, as when a
    /// proxy turns a server's failure into an empty stream that says
    /// `stop` (the input tokens a proxy may count itself, so they say
    /// nothing of the model).
    pub fn said_nothing(&self) -> bool {
        let output_tokens = self.parsed.as_ref().map_or(0, |p| p.usage.output_tokens);
        self.timing.first_token.is_none() && output_tokens == 0
    }
}

/// A stream as received: the bytes (what a recording keeps), the body
/// and timings when it held events, and how it failed, if it did.
#[derive(Debug)]
pub struct Received {
    pub raw: Vec<u8>,
    pub assembled: Option<Assembled>,
    /// The stream stalled, broke off, was cut before its last event or
    /// carried an error event.
    pub failure: Option<StreamFailure>,
}

impl Received {
    /// The stream failed after its events began. (Nothing at all, or
    /// bytes that are no stream such as a JSON error body, are left for
    /// Parse to name: an empty reply, a body not of the format.)
    pub fn failed_as_a_stream(&self) -> Option<&StreamFailure> {
        self.failure.as_ref().filter(|_| self.assembled.is_some())
    }
}

/// Read a stream as it comes, each event timed from `sent`, until
/// `deadline` (`None`: as long as it goes); `on_calls` hears of the calls
/// each event completes, as it comes.
pub async fn read<S, E>(
    provider: Provider,
    chunks: S,
    sent: tokio::time::Instant,
    deadline: Option<tokio::time::Instant>,
    mut on_calls: impl FnMut(&Assembly, Range<usize>),
) -> Received
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let received = std::sync::Mutex::new((Vec::new(), None));
    let chunks = chunks.inspect(|chunk| {
        if let Ok(bytes) = chunk {
            let mut received = received.lock().expect("never poisoned");
            received.1.get_or_insert_with(|| sent.elapsed());
            received.0.extend_from_slice(bytes);
        }
    });
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(chunks));
    let mut assembly = Assembly::new(provider);
    let mut broke_off = None;
    let mut timed_out = false;
    loop {
        let next = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    timed_out = true;
                    break;
                }
            },
            None => events.next().await,
        };
        let Some(event) = next else { break };
        match event {
            Ok(sse_stream::Sse {
                data: Some(data),
                event,
                ..
            }) => {
                let completed = assembly.push(&Frame { event, data }, sent.elapsed());
                if !completed.is_empty() {
                    on_calls(&assembly, completed);
                }
            }
            Ok(_) => {}
            Err(error) => {
                broke_off = Some(crate::transport::error_chain(&error));
                break;
            }
        }
    }
    // The end is the last event (what came after it says nothing).
    let end = assembly
        .arrivals
        .last()
        .copied()
        .unwrap_or_else(|| sent.elapsed());
    let (raw, first_byte) = std::mem::take(&mut *received.lock().expect("never poisoned"));
    let failure = if timed_out {
        Some(StreamFailure {
            message: format!(
                "the stream stalled: it had not ended {} ms after the request (timeout_ms), {} event(s) in",
                deadline.map_or(0, |d| d.duration_since(sent).as_millis()),
                assembly.arrivals.len()
            ),
            timed_out: true,
        })
    } else {
        assembly.failure(broke_off)
    };
    Received {
        raw,
        assembled: assembly.finish(first_byte.unwrap_or(end), end),
        failure,
    }
}

/// A recorded stream read again, event by event, each at the time it
/// was recorded to have come (`arrivals`, one per event; none: at once),
/// its first byte at `first_byte`.
pub fn replay(
    provider: Provider,
    raw: &[u8],
    first_byte: Duration,
    arrivals: &[Duration],
    mut on_calls: impl FnMut(&Assembly, Range<usize>),
) -> Received {
    let mut assembly = Assembly::new(provider);
    let (frames, broke_off) = match frames([Bytes::copy_from_slice(raw)]) {
        Ok(frames) => (frames, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    for (i, frame) in frames.iter().enumerate() {
        let at = arrivals.get(i).copied().unwrap_or_default();
        let completed = assembly.push(frame, at);
        if !completed.is_empty() {
            on_calls(&assembly, completed);
        }
    }
    let end = arrivals.last().copied().unwrap_or_default();
    let failure = assembly.failure(broke_off);
    Received {
        raw: raw.to_vec(),
        assembled: assembly.finish(first_byte, end),
        failure,
    }
}
