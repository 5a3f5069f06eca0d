//! OTLP JSON lines read into the `chat` spans of the GenAI conventions,
//! each with what its content attributes say (v1.41.0's
//! `gen_ai.input.messages`, `gen_ai.output.messages`,
//! `gen_ai.tool.definitions`) and the results its calls got (the
//! `execute_tool` spans' `gen_ai.tool.call.result`, by call id).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::Value;

/// A model request as its span records it.
#[derive(Debug, Clone)]
pub struct ChatSpan {
    /// The trace, in hex.
    pub trace: String,
    /// The span, in hex.
    pub span: String,
    pub start_ns: u64,
    /// The agent whose run it is (`gen_ai.agent.name` on an ancestor
    /// `invoke_agent` span), if one says.
    pub agent: Option<String>,
    pub model: Option<String>,
    /// Each attribute, as JSON (a string attribute that holds JSON, read).
    pub attributes: BTreeMap<String, Value>,
    /// The results of the calls made beside it (its parent's
    /// `execute_tool` spans), by call id.
    pub results: BTreeMap<String, Value>,
}

/// A file that is not OTLP JSON lines.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: not an OTLP JSON export request (resourceSpans): {problem}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        problem: String,
    },
}

/// Every `chat` span of the file, in the order they started.
pub fn read_chats(path: &Path) -> Result<Vec<ChatSpan>, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut spans: Vec<Span> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let request: ExportTraceServiceRequest =
            serde_json::from_str(line).map_err(|e| ReadError::Line {
                path: path.to_owned(),
                line: i + 1,
                problem: e.to_string(),
            })?;
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    let by_id: BTreeMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let mut results: BTreeMap<(Vec<u8>, String), Value> = BTreeMap::new();
    for span in spans
        .iter()
        .filter(|s| operation(s) == Some("execute_tool"))
    {
        let attributes = attributes(&span.attributes);
        if let (Some(Value::String(id)), Some(result)) = (
            attributes.get("gen_ai.tool.call.id"),
            attributes.get("gen_ai.tool.call.result"),
        ) {
            // Under the same parent as the request that made the call.
            results.insert((span.parent_span_id.clone(), id.clone()), result.clone());
        }
    }
    let mut chats: Vec<ChatSpan> = spans
        .iter()
        .filter(|s| operation(s) == Some("chat"))
        .map(|span| {
            let attributes = attributes(&span.attributes);
            let agent = ancestors(span, &by_id)
                .find(|a| operation(a) == Some("invoke_agent"))
                .and_then(|a| attributes_of(a).remove("gen_ai.agent.name"))
                .and_then(|v| v.as_str().map(str::to_owned));
            let mine = results
                .iter()
                .filter(|((parent, _), _)| *parent == span.parent_span_id)
                .map(|((_, id), r)| (id.clone(), r.clone()))
                .collect();
            ChatSpan {
                trace: hex(&span.trace_id),
                span: hex(&span.span_id),
                start_ns: span.start_time_unix_nano,
                agent,
                model: attributes
                    .get("gen_ai.request.model")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                attributes,
                results: mine,
            }
        })
        .collect();
    chats.sort_by_key(|c| (c.start_ns, c.span.clone()));
    Ok(chats)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The span's `gen_ai.operation.name`.
fn operation(span: &Span) -> Option<&str> {
    span.attributes
        .iter()
        .find(|kv| kv.key == "gen_ai.operation.name")
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}

fn attributes_of(span: &Span) -> BTreeMap<String, Value> {
    attributes(&span.attributes)
}

/// The spans above `span`, nearest first.
fn ancestors<'s>(
    span: &'s Span,
    by_id: &'s BTreeMap<Vec<u8>, &'s Span>,
) -> impl Iterator<Item = &'s Span> + 's {
    std::iter::successors(by_id.get(&span.parent_span_id).copied(), move |s| {
        by_id.get(&s.parent_span_id).copied()
    })
    .take(64)
}

/// Attributes as JSON: a string that holds a JSON array or object is read.
fn attributes(attributes: &[KeyValue]) -> BTreeMap<String, Value> {
    attributes
        .iter()
        .filter_map(|kv| Some((kv.key.clone(), json_of(kv.value.as_ref()?)?)))
        .collect()
}

fn json_of(value: &AnyValue) -> Option<Value> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => match s.trim_start().chars().next() {
            Some('[' | '{') => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
            _ => Value::String(s.clone()),
        },
        any_value::Value::BoolValue(b) => Value::Bool(*b),
        any_value::Value::IntValue(i) => Value::from(*i),
        any_value::Value::DoubleValue(d) => Value::from(*d),
        any_value::Value::ArrayValue(a) => {
            Value::Array(a.values.iter().filter_map(json_of).collect())
        }
        any_value::Value::KvlistValue(kv) => Value::Object(
            kv.values
                .iter()
                .filter_map(|kv| Some((kv.key.clone(), json_of(kv.value.as_ref()?)?)))
                .collect(),
        ),
        any_value::Value::BytesValue(b) => Value::String(hex(b)),
        _ => return None,
    })
}
