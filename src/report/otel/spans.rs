//! A finished trial as a tree of plain span records, in the GenAI
//! conventions' names: the trial an `invoke_agent` span, each attempt
//! (a task's model turn) a span under it, and under each attempt its
//! model request (`chat`), the calls it made (`execute_tool`), what the
//! simulated user said and called, and the probes toolgauge made. Times
//! come from the session log (a reply's entry is written when it came;
//! its request took the attempt's model time; a result's entry is
//! written when it came, after its `elapsedUs`); toolgauge's own
//! measures are `toolgauge.*` attributes. Message contents only when
//! asked (`content`), and never anything the log does not hold.

use std::borrow::Cow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::SpanKind;
use opentelemetry::{Array, KeyValue, StringValue, Value};

use super::Semconv;
use crate::metrics::{AttemptOutcome, TrialOutcome};
use crate::report::{FinishedTrial, RunInfo};

/// One span, its children under it.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub name: String,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<KeyValue>,
    /// Events on the span (v1.36.0's message contents): name, attributes.
    pub events: Vec<(String, Vec<KeyValue>)>,
    /// The span's error, for its status.
    pub error: Option<String>,
    pub children: Vec<SpanRecord>,
}

/// What a trial's spans need besides the trial.
#[derive(Debug, Clone, Copy)]
pub struct SpanContext<'a> {
    pub info: &'a RunInfo,
    /// The provider's name in the conventions (`openai`), by model.
    pub providers: &'a [String],
    pub semconv: Semconv,
    /// Message contents too (`--otlp-content`).
    pub content: bool,
    /// By scenario, what a request's content starts from (with `content`).
    pub scenarios: &'a [ScenarioContent],
}

/// A scenario as its model is first asked: the opening messages and the
/// tools it is given (the content of a `chat` span's input).
#[derive(Debug, Clone, Default)]
pub struct ScenarioContent {
    /// `{"role", "content"}` messages.
    pub prompt: Vec<serde_json::Value>,
    pub tools: Vec<crate::call::FunctionSpec>,
}

/// A session log entry, its fields read where spans need them; the
/// whole line is read as JSON, once, only for the content.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct LogEntry<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    attempt: u64,
    timestamp: u64,
    #[serde(borrow)]
    finish_reason: Cow<'a, str>,
    input_tokens: i64,
    output_tokens: i64,
    #[serde(borrow)]
    error: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(borrow)]
    call_id: Cow<'a, str>,
    is_error: bool,
    #[serde(borrow)]
    error_kind: Option<Cow<'a, str>>,
    elapsed_us: u64,
    #[serde(borrow)]
    who: Option<Cow<'a, str>>,
    passed: bool,
    /// The whole entry, with the content (`--otlp-content`) only.
    #[serde(skip)]
    whole: serde_json::Value,
}

impl LogEntry<'_> {
    /// The whole entry as JSON (null without the content).
    fn value(&self) -> &serde_json::Value {
        &self.whole
    }
}

/// The spans of one finished trial.
pub fn trial_spans(context: SpanContext<'_>, trial: FinishedTrial<'_>) -> SpanRecord {
    let outcome = trial.outcome;
    let model = context.info.models[outcome.model].name.as_str();
    let scenario = context.info.scenarios[outcome.scenario].name.as_str();
    let entries: Vec<LogEntry<'_>> = trial
        .session
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| {
            // sonic-rs skips the fields not read (texts, arguments) in
            // about half of serde_json's time; the log is toolgauge's own.
            let entry: LogEntry<'_> = sonic_rs::from_slice(line).ok()?;
            let whole = if context.content {
                serde_json::from_slice(line).unwrap_or_default()
            } else {
                serde_json::Value::Null
            };
            Some(LogEntry { whole, ..entry })
        })
        .collect();
    let attempts: Vec<SpanRecord> = outcome
        .attempts
        .iter()
        .map(|attempt| attempt_span(context, model, outcome, attempt, &entries))
        .collect();
    let (start, end) = bounds(&attempts).unwrap_or((UNIX_EPOCH, UNIX_EPOCH));
    let provider = context
        .providers
        .get(outcome.model)
        .cloned()
        .unwrap_or_default();
    let lost = outcome.lost();
    let verdict = match (lost, outcome.success()) {
        (Some(_), _) => "lost",
        (None, true) => "pass",
        (None, false) => "fail",
    };
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.name", scenario.to_owned()),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
        KeyValue::new(context.semconv.provider_key(), provider),
        KeyValue::new("toolgauge.model", model.to_owned()),
        KeyValue::new("toolgauge.scenario", scenario.to_owned()),
        KeyValue::new("toolgauge.trial", i64::from(outcome.trial)),
        KeyValue::new("toolgauge.verdict", verdict),
        KeyValue::new("toolgauge.attempts", outcome.attempts.len() as i64),
        KeyValue::new("toolgauge.feedback_style", context.info.feedback.clone()),
    ];
    if let Some(failure) = lost {
        attributes.push(KeyValue::new("toolgauge.failure_kind", failure.as_str()));
        let party: &'static str = failure.party().into();
        attributes.push(KeyValue::new("toolgauge.charged_to", party));
    }
    // A failed or lost trial is an error to a viewer: the failures say why.
    let error = match (lost, verdict) {
        (Some(failure), _) => Some(format!("lost: {}", failure.as_str())),
        (None, "fail") => Some(format!(
            "fail: {}",
            outcome
                .attempts
                .last()
                .and_then(|a| a.failures.first())
                .map_or("the task's checks", |f| f.as_str())
        )),
        _ => None,
    };
    SpanRecord {
        name: format!("invoke_agent {scenario}"),
        kind: SpanKind::Internal,
        start,
        end,
        attributes,
        events: Vec::new(),
        error,
        children: attempts,
    }
}

/// One attempt's span and what happened in it.
fn attempt_span(
    context: SpanContext<'_>,
    model: &str,
    outcome: &TrialOutcome,
    attempt: &AttemptOutcome,
    entries: &[LogEntry<'_>],
) -> SpanRecord {
    let number = u64::from(attempt.attempt);
    let mine = entries.iter().filter(|e| e.attempt == number);
    let mut children = Vec::new();
    for (i, entry) in mine.clone().enumerate() {
        let span = match entry.kind.as_ref() {
            "model_reply" => {
                // The trial's entries before this reply: what it was asked.
                let at = entries
                    .iter()
                    .position(|e| std::ptr::eq(e, entry))
                    .unwrap_or(0);
                let later = mine.clone().skip(i + 1);
                Some(chat_span(
                    context,
                    model,
                    outcome,
                    attempt,
                    entry,
                    &entries[..at],
                    later,
                ))
            }
            "tool_result" => Some(tool_span(context, entry, mine.clone())),
            "user_message" => Some(user_span(context, entry)),
            "probe" => Some(probe_span(entry)),
            _ => None,
        };
        children.extend(span);
    }
    let (start, end) = bounds(&children).unwrap_or((UNIX_EPOCH, UNIX_EPOCH));
    let failures: Vec<StringValue> = attempt
        .failures
        .iter()
        .map(|f| StringValue::from(f.as_str()))
        .collect();
    let mut attributes = vec![
        KeyValue::new("toolgauge.attempt", i64::from(attempt.attempt)),
        KeyValue::new("toolgauge.success", attempt.success),
        KeyValue::new("toolgauge.calls", i64::from(attempt.calls)),
    ];
    if !failures.is_empty() {
        attributes.push(KeyValue::new(
            "toolgauge.failures",
            Value::Array(Array::String(failures)),
        ));
    }
    if let Some(user_turn) = (attempt.turn.user_turn > 0).then_some(attempt.turn.user_turn) {
        attributes.push(KeyValue::new("toolgauge.user_turn", i64::from(user_turn)));
    }
    SpanRecord {
        name: format!("attempt {}", attempt.attempt),
        kind: SpanKind::Internal,
        start,
        end,
        attributes,
        events: Vec::new(),
        error: attempt.failures.first().map(|f| f.as_str().to_owned()),
        children,
    }
}

/// When an entry was written.
fn at(entry: &LogEntry<'_>) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(entry.timestamp)
}

/// The model request whose reply is `entry`; `later`: the attempt's
/// entries after it (its calls, for the content).
fn chat_span<'e>(
    context: SpanContext<'_>,
    model: &str,
    outcome: &TrialOutcome,
    attempt: &AttemptOutcome,
    entry: &LogEntry<'_>,
    before: &[LogEntry<'_>],
    later: impl Iterator<Item = &'e LogEntry<'e>>,
) -> SpanRecord {
    let end = at(entry);
    // Never before what came before it (on the virtual clock a model's
    // time is simulated, not the wall's).
    let earliest = before.last().map_or(UNIX_EPOCH, at);
    let start = end
        .checked_sub(attempt.time.model)
        .unwrap_or(end)
        .max(earliest)
        .min(end);
    let finish = entry.finish_reason.to_string();
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.request.model", model.to_owned()),
        KeyValue::new(
            context.semconv.provider_key(),
            context
                .providers
                .get(outcome.model)
                .cloned()
                .unwrap_or_default(),
        ),
        KeyValue::new("gen_ai.usage.input_tokens", entry.input_tokens),
        KeyValue::new("gen_ai.usage.output_tokens", entry.output_tokens),
        KeyValue::new(
            "gen_ai.response.finish_reasons",
            Value::Array(Array::String(vec![StringValue::from(finish)])),
        ),
    ];
    let mut events = Vec::new();
    if context.content {
        let scenario = context.scenarios.get(outcome.scenario);
        chat_content(
            context,
            scenario,
            entry,
            before,
            later,
            &mut attributes,
            &mut events,
        );
    }
    SpanRecord {
        name: format!("chat {model}"),
        kind: SpanKind::Client,
        start,
        end,
        attributes,
        events,
        error: entry.error.as_deref().map(str::to_owned),
        children: Vec::new(),
    }
}

/// A request's content (`--otlp-content`): what it was asked and the
/// tools it was given (v1.41.0), and what it answered.
fn chat_content<'e>(
    context: SpanContext<'_>,
    scenario: Option<&ScenarioContent>,
    entry: &LogEntry<'_>,
    before: &[LogEntry<'_>],
    later: impl Iterator<Item = &'e LogEntry<'e>>,
    attributes: &mut Vec<KeyValue>,
    events: &mut Vec<(String, Vec<KeyValue>)>,
) {
    if context.semconv == Semconv::Latest
        && let Some(scenario) = scenario
    {
        let input = input_messages(&scenario.prompt, before);
        attributes.push(KeyValue::new("gen_ai.input.messages", input.to_string()));
        let tools: Vec<serde_json::Value> = scenario
            .tools
            .iter()
            .map(|t| serde_json::json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        attributes.push(KeyValue::new(
            "gen_ai.tool.definitions",
            serde_json::Value::Array(tools).to_string(),
        ));
    }
    let calls: Vec<serde_json::Value> = later
        .filter(|e| e.kind == "tool_call" && e.who.is_none())
        .map(|e| serde_json::json!({"type": "tool_call", "id": e.call_id, "name": e.tool, "arguments": e.value()["arguments"]}))
        .collect();
    let mut parts = vec![serde_json::json!({"type": "text", "content": entry.value()["text"]})];
    parts.extend(calls);
    let output = serde_json::json!([{"role": "assistant", "parts": parts}]).to_string();
    match context.semconv {
        Semconv::Latest => attributes.push(KeyValue::new("gen_ai.output.messages", output)),
        Semconv::V1_36 => events.push((
            "gen_ai.choice".to_owned(),
            vec![KeyValue::new("message", output)],
        )),
    }
}

/// What a request was asked, in the conventions' message shape: the
/// scenario's opening messages, then the trial's replies, results and
/// user turns before it (the model's own: a simulated user's calls are
/// not in the model's conversation).
fn input_messages(prompt: &[serde_json::Value], before: &[LogEntry<'_>]) -> serde_json::Value {
    use serde_json::json;
    let text = |role: &str, content: &serde_json::Value| {
        let content = content
            .as_str()
            .map_or_else(|| content.to_string(), str::to_owned);
        json!({"role": role, "parts": [{"type": "text", "content": content}]})
    };
    let mut messages: Vec<serde_json::Value> = prompt
        .iter()
        .map(|m| text(m["role"].as_str().unwrap_or("user"), &m["content"]))
        .collect();
    let models = before
        .iter()
        .filter(|e| e.kind == "user_message" || e.who.is_none())
        .map(LogEntry::value);
    for entry in models {
        match entry["type"].as_str() {
            Some("model_reply") => {
                let mut parts = Vec::new();
                if entry["text"].as_str().is_some_and(|t| !t.is_empty()) {
                    parts.push(json!({"type": "text", "content": entry["text"]}));
                }
                messages.push(json!({"role": "assistant", "parts": parts}));
            }
            Some("tool_call") => {
                if let Some(last) = messages.last_mut().filter(|m| m["role"] == "assistant") {
                    let call = json!({"type": "tool_call", "id": entry["callId"], "name": entry["tool"], "arguments": entry["arguments"]});
                    if let Some(parts) = last["parts"].as_array_mut() {
                        parts.push(call);
                    }
                }
            }
            Some("tool_result") => messages.push(json!({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": entry["callId"], "response": entry["content"]}
            ]})),
            Some("user_message") => messages.push(text("user", &entry["text"])),
            _ => {}
        }
    }
    serde_json::Value::Array(messages)
}

/// The call whose result is `entry`, found among `attempt`'s entries.
fn tool_span<'e>(
    context: SpanContext<'_>,
    entry: &LogEntry<'_>,
    attempt: impl Iterator<Item = &'e LogEntry<'e>>,
) -> SpanRecord {
    let end = at(entry);
    let elapsed = Duration::from_micros(entry.elapsed_us);
    let tool = entry.tool.to_string();
    let who = entry.who.as_deref().unwrap_or("model");
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", tool.clone()),
        KeyValue::new("gen_ai.tool.call.id", entry.call_id.to_string()),
        KeyValue::new("gen_ai.tool.type", "function"),
        KeyValue::new("toolgauge.who", who.to_owned()),
    ];
    let error = entry.is_error.then(|| {
        entry
            .error_kind
            .as_deref()
            .unwrap_or("tool_error")
            .to_owned()
    });
    if let Some(kind) = &error {
        attributes.push(KeyValue::new("error.type", kind.clone()));
    }
    let mut events = Vec::new();
    if context.content {
        let call = attempt
            .filter(|e| e.kind == "tool_call" && e.call_id == entry.call_id)
            .last();
        let arguments = call
            .map(|c| c.value()["arguments"].to_string())
            .unwrap_or_default();
        let result = entry.value()["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match context.semconv {
            Semconv::Latest => {
                attributes.push(KeyValue::new("gen_ai.tool.call.arguments", arguments));
                attributes.push(KeyValue::new("gen_ai.tool.call.result", result));
            }
            Semconv::V1_36 => events.push((
                "gen_ai.tool.message".to_owned(),
                vec![
                    KeyValue::new("id", entry.call_id.to_string()),
                    KeyValue::new("content", result),
                ],
            )),
        }
    }
    SpanRecord {
        name: format!("execute_tool {tool}"),
        kind: SpanKind::Internal,
        start: end.checked_sub(elapsed).unwrap_or(end),
        end,
        attributes,
        events,
        error,
        children: Vec::new(),
    }
}

/// What the user said (a written turn or a simulated user).
fn user_span(context: SpanContext<'_>, entry: &LogEntry<'_>) -> SpanRecord {
    let who = entry.who.as_deref().unwrap_or("scenario").to_owned();
    let mut attributes = vec![
        KeyValue::new("toolgauge.who", who.clone()),
        KeyValue::new("gen_ai.usage.input_tokens", entry.input_tokens),
        KeyValue::new("gen_ai.usage.output_tokens", entry.output_tokens),
    ];
    if context.content {
        attributes.push(KeyValue::new(
            "toolgauge.user.text",
            entry.value()["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        ));
    }
    SpanRecord {
        name: format!("user_turn {who}"),
        kind: SpanKind::Internal,
        start: at(entry),
        end: at(entry),
        attributes,
        events: Vec::new(),
        error: None,
        children: Vec::new(),
    }
}

/// A call toolgauge made (never the model): what it found.
fn probe_span(entry: &LogEntry<'_>) -> SpanRecord {
    let tool = entry.tool.to_string();
    let passed = entry.passed;
    SpanRecord {
        name: format!("probe {tool}"),
        kind: SpanKind::Internal,
        start: at(entry),
        end: at(entry),
        attributes: vec![
            KeyValue::new("toolgauge.probe.tool", tool),
            KeyValue::new("toolgauge.probe.passed", passed),
        ],
        events: Vec::new(),
        error: None,
        children: Vec::new(),
    }
}

/// The earliest start and latest end of `spans`.
fn bounds(spans: &[SpanRecord]) -> Option<(SystemTime, SystemTime)> {
    let start = spans.iter().map(|s| s.start).min()?;
    let end = spans.iter().map(|s| s.end).max()?;
    Some((start, end))
}
