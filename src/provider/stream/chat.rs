//! OpenAI Chat streams read once: each `chat.completion.chunk` into a few
//! typed fields borrowed from its data (no JSON value per event), its
//! tool call deltas routed straight into each call's arguments text. A
//! call is handed over whole the moment the stream shows it complete
//! (the next call begins, or the choice finishes), with nothing before it
//! assembled again; at the end the reply is Parse's answer at once, and
//! its body is written once, for the log and the conversation.
//!
//! Deltas route by `index`, by `id` when calls share an index, and an id
//! that comes after the arguments joins them. A call with no id is named
//! from the stream's first event, so that the call handed over early,
//! the reply's and its body's are the same call.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::super::loose::{Loose, LooseCount, LooseStr};
use super::super::{GENERATED_ID_PREFIX, ParsedResponse, WireArguments, fnv1a, make_call, openai};
use super::ending::Signal;
use crate::call::ParsedCall;
use crate::json_writer::{write_str, write_value};

/// The fields of a chunk a stream is read by.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    #[serde(borrow, default)]
    model: LooseStr<'a>,
    #[serde(default)]
    created: Option<LooseCount>,
    #[serde(borrow, default)]
    choices: Option<Vec<Loose<Choice<'a>>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Loose<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: LooseStr<'a>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: LooseStr<'a>,
    #[serde(borrow, default)]
    reasoning_content: LooseStr<'a>,
    #[serde(borrow, default)]
    reasoning: LooseStr<'a>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Loose<Part<'a>>>>,
}

#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(default)]
    index: Option<LooseCount>,
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    #[serde(borrow, default)]
    function: Loose<FunctionDelta<'a>>,
}

#[derive(Deserialize, Default)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: LooseStr<'a>,
    #[serde(borrow, default)]
    arguments: LooseStr<'a>,
}

/// One call as its deltas come.
#[derive(Debug, Default)]
struct Call {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// What one event said, for the stream's reader.
pub(super) struct Read {
    pub signal: Signal,
    /// The event is a chunk of the format (or its error).
    pub recognised: bool,
}

/// A Chat reply as its chunks come.
#[derive(Debug, Default)]
pub(super) struct ChatReply {
    /// Events read as JSON.
    pub events: usize,
    token: bool,
    /// Calls complete, in call order: the first this many.
    complete: usize,
    text: String,
    reasoning: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<Value>,
    head: Head,
    /// Names a call the stream gave no id: the first event's hash.
    unnamed: Option<u64>,
}

/// The chunk fields the whole body keeps: the first of each.
#[derive(Debug, Default)]
struct Head {
    id: Option<String>,
    model: Option<String>,
    created: Option<u64>,
}

impl ChatReply {
    /// Read one event's data; `None`: it is not JSON of a chunk's shape.
    pub fn feed(&mut self, data: &str) -> Option<Read> {
        #[cfg(test)]
        tests::READS.with(|reads| reads.set(reads.get() + 1));
        let chunk: Chunk<'_> = serde_json::from_str(data).ok()?;
        self.events += 1;
        self.unnamed.get_or_insert_with(|| fnv1a(data.as_bytes()));
        let recognised = chunk.choices.is_some() || chunk.error.is_some();
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let words = super::ending::worded(&error);
            return Some(Read {
                signal: Signal::Failed(words),
                recognised,
            });
        }
        let head = &mut self.head;
        // Each chunk repeats them: only the first is kept (and copied).
        if head.id.is_none() {
            head.id = chunk.id.0.map(Cow::into_owned);
        }
        if head.model.is_none() {
            head.model = chunk.model.0.map(Cow::into_owned);
        }
        head.created = head.created.or(chunk.created.map(|c| c.0));
        if let Some(usage) = chunk.usage.filter(|u| !u.is_null()) {
            self.usage = Some(usage);
        }
        let mut signal = Signal::Goes;
        let choices = chunk.choices.unwrap_or_default();
        if choices.iter().any(|c| c.0.finish_reason.0.is_some()) {
            signal = Signal::Ends;
        }
        if let Some(Loose(choice)) = choices.into_iter().next() {
            self.choice(choice);
        }
        Some(Read { signal, recognised })
    }

    fn choice(&mut self, choice: Choice<'_>) {
        let delta = choice.delta.0;
        for said in [&delta.content, &delta.reasoning_content, &delta.reasoning] {
            if said.as_deref().is_some_and(|s| !s.is_empty()) {
                self.token = true;
            }
        }
        self.text
            .push_str(delta.content.as_deref().unwrap_or_default());
        for said in [&delta.reasoning_content, &delta.reasoning] {
            self.reasoning.push_str(said.as_deref().unwrap_or_default());
        }
        for Loose(part) in delta.tool_calls.into_iter().flatten() {
            self.token = true;
            self.route(part);
        }
        if let Some(reason) = choice.finish_reason.0 {
            self.finish = Some(reason.into_owned());
            self.complete = self.calls.len();
        }
    }

    /// Route a tool call delta: by its `id` when it has one (several
    /// calls can share index 0, and an id can come after the arguments),
    /// else to the last call with its index. A delta that begins a call
    /// completes every call before it.
    fn route(&mut self, part: Part<'_>) {
        let index = part.index.map(|i| i.0);
        let id = part.id.as_deref().filter(|id| !id.is_empty());
        let calls = &mut self.calls;
        let same_index = |c: &Call| index.is_none() || c.index == index;
        let at = match id {
            Some(id) => calls.iter().position(|c| c.id == id).or_else(|| {
                // Arguments came first, under this index, with no id yet.
                calls.iter().rposition(|c| same_index(c) && c.id.is_empty())
            }),
            None => calls.iter().rposition(same_index),
        };
        let call = match at {
            Some(at) => &mut calls[at],
            None => {
                self.complete = calls.len();
                calls.push(Call {
                    index,
                    ..Call::default()
                });
                calls.last_mut().expect("just pushed")
            }
        };
        if let Some(id) = id {
            call.id = id.to_owned();
        }
        let function = part.function.0;
        if let Some(name) = function.name.as_deref().filter(|n| !n.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        call.arguments
            .push_str(function.arguments.as_deref().unwrap_or_default());
    }

    /// A token of output has come.
    pub fn has_token(&self) -> bool {
        self.token
    }

    /// How many calls are complete, in call order.
    pub fn complete(&self) -> usize {
        self.complete
    }

    /// The stream ended: every call begun is complete.
    pub fn end(&mut self) {
        self.complete = self.calls.len();
    }

    /// Call `k` as the stream shows it now.
    pub fn call(&self, k: usize) -> Option<ParsedCall> {
        let call = self.calls.get(k)?;
        let arguments = WireArguments::Text(&call.arguments);
        Some(make_call(self.id_of(k), Some(&call.name), arguments))
    }

    fn id_of(&self, k: usize) -> String {
        match &self.calls[k].id {
            id if !id.is_empty() => id.clone(),
            _ => format!(
                "{GENERATED_ID_PREFIX}{:016x}_{k}",
                self.unnamed.unwrap_or_default()
            ),
        }
    }

    /// What Parse reads of the reply: its text, calls, stop and tokens.
    pub fn parsed(&self) -> ParsedResponse {
        let mut parsed = ParsedResponse {
            text: self.text.clone(),
            reasoning: self.reasoning.clone(),
            calls: (0..self.calls.len()).filter_map(|k| self.call(k)).collect(),
            usage: self
                .usage
                .as_ref()
                .map(openai::usage_block)
                .unwrap_or_default(),
            ..ParsedResponse::default()
        };
        parsed.stopped(self.finish.as_deref(), "length");
        parsed
    }

    /// The whole body the stream stands for, as the API would have sent
    /// it unstreamed, written once.
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.text.len() + 128 * self.calls.len());
        out.push(b'{');
        let head = &self.head;
        for (key, value) in [("id", &head.id), ("model", &head.model)] {
            if let Some(value) = value {
                out.extend_from_slice(format!("\"{key}\":").as_bytes());
                write_str(&mut out, value);
                out.push(b',');
            }
        }
        if let Some(created) = head.created {
            out.extend_from_slice(format!("\"created\":{created},").as_bytes());
        }
        out.extend_from_slice(br#""object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"#);
        match self.text.is_empty() {
            true => out.extend_from_slice(b"null"),
            false => write_str(&mut out, &self.text),
        }
        if !self.reasoning.is_empty() {
            out.extend_from_slice(br#","reasoning_content":"#);
            write_str(&mut out, &self.reasoning);
        }
        if !self.calls.is_empty() {
            out.extend_from_slice(br#","tool_calls":["#);
            for (k, call) in self.calls.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"id":"#);
                write_str(&mut out, &self.id_of(k));
                out.extend_from_slice(br#","type":"function","function":{"name":"#);
                write_str(&mut out, &call.name);
                out.extend_from_slice(br#","arguments":"#);
                write_str(&mut out, &call.arguments);
                out.extend_from_slice(b"}}");
            }
            out.push(b']');
        }
        out.extend_from_slice(br#"},"finish_reason":"#);
        match &self.finish {
            Some(reason) => write_str(&mut out, reason),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(br#"}],"usage":"#);
        write_value(&mut out, self.usage.as_ref().unwrap_or(&Value::Null));
        out.push(b'}');
        out
    }
}

/// Chat asks with `stream: true`, and for the usage in the last chunk.
pub(super) fn ask_for_stream(request: &mut crate::transport::ApiRequest) {
    request.body["stream"] = serde_json::json!(true);
    request.body["stream_options"] = serde_json::json!({"include_usage": true});
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use serde_json::json;

    use crate::call::ParsedCall;
    use crate::provider::Provider;
    use crate::provider::stream::replay;

    thread_local! {
        /// Events this thread's Chat readers have read.
        pub(super) static READS: Cell<usize> = const { Cell::new(0) };
    }

    /// A Chat stream of `n` calls, each in three deltas; the first call
    /// has no id when `unnamed`.
    fn stream(n: usize, unnamed: bool) -> String {
        let mut text = String::new();
        for i in 0..n {
            let pieces = [r#"{"city": "#, r#""Oslo \"Sentrum\"""#, "}"];
            for (k, piece) in pieces.iter().enumerate() {
                let mut part = json!({"index": i, "function": {"arguments": piece}});
                if k == 0 {
                    part["function"]["name"] = json!("get_weather");
                    if !(unnamed && i == 0) {
                        part["id"] = json!(format!("call_{i}"));
                    }
                }
                let chunk = json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]});
                text.push_str(&format!("data: {chunk}\n\n"));
            }
        }
        let last = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                          "usage": {"prompt_tokens": 50, "completion_tokens": 9}});
        text + &format!("data: {last}\n\ndata: [DONE]\n\n")
    }

    /// The calls handed over as they completed, and the reply read.
    fn handed_over(text: &str) -> (Vec<ParsedCall>, super::super::Received) {
        let mut handed = Vec::new();
        let received = replay(
            Provider::OpenAi,
            text.as_bytes(),
            Duration::ZERO,
            &[],
            |assembly, complete| handed.extend(complete.filter_map(|k| assembly.call(k))),
        );
        (handed, received)
    }

    #[test]
    fn early_execution_reads_each_event_once() {
        let text = stream(12, false);
        let events = text.matches("data: ").count();
        READS.with(|reads| reads.set(0));
        let (handed, received) = handed_over(&text);
        assert_eq!(handed.len(), 12);
        assert_eq!(READS.with(Cell::get), events, "an event was read again");
        let parsed = received.assembled.unwrap().parsed.unwrap();
        assert_eq!(parsed.calls, handed);
    }

    #[test]
    fn a_call_with_no_id_is_the_same_call_early_in_the_reply_and_in_its_body() {
        let (handed, received) = handed_over(&stream(2, true));
        let assembled = received.assembled.unwrap();
        let parsed = assembled.parsed.unwrap();
        let from_body = Provider::OpenAi.parse_response(&assembled.body).unwrap();
        assert!(
            handed[0]
                .id()
                .starts_with(crate::provider::GENERATED_ID_PREFIX)
        );
        assert_eq!(handed, parsed.calls);
        assert_eq!(from_body.calls, parsed.calls);
        assert_eq!(from_body.usage, parsed.usage);
        assert_eq!(parsed.usage.input_tokens, 50);
        assert_eq!(parsed.finish_reason.as_deref(), Some("tool_calls"));
        let ParsedCall::Ok(call) = &parsed.calls[1] else {
            panic!("a call: {:?}", parsed.calls[1])
        };
        assert_eq!(call.arguments.to_string(), r#"{"city":"Oslo \"Sentrum\""}"#);
    }
}
