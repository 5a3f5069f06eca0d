//! Anthropic Messages: `content[]` blocks of `type: tool_use` in, one `user`
//! message of `tool_result` blocks out, tools as `{name, description,
//! input_schema}`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::loose::{LooseStr, present};
use super::{
    Arguments, FunctionSpec, IdMaker, ParsedResponse, Provider, ResponseError, api_error_message,
    make_call, non_empty, write_arguments,
};
use crate::call::{ParsedCall, ToolResult};
use crate::json_writer::{write_separated, write_str};
use crate::tool::ToolDef;

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LooseStr<'a>,
    #[serde(borrow, default)]
    content: Option<Vec<Block<'a>>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: LooseStr<'a>,
    #[serde(borrow, default)]
    id: LooseStr<'a>,
    #[serde(borrow, default)]
    name: LooseStr<'a>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    #[serde(borrow, default)]
    text: LooseStr<'a>,
}

pub(super) fn parse_response(body: &[u8]) -> Result<ParsedResponse, ResponseError> {
    let parsed: Body<'_> = super::from_body(Provider::Anthropic, body)?;
    if parsed.kind.is("error") || parsed.error.is_some() {
        return Err(ResponseError::Api {
            provider: Provider::Anthropic,
            message: parsed
                .error
                .as_ref()
                .map_or_else(|| "no details given".to_owned(), api_error_message),
        });
    }
    let blocks = parsed.content.ok_or_else(|| ResponseError::NotAResponse {
        provider: Provider::Anthropic,
        reason: "it has no `content` array".to_owned(),
    })?;
    let mut ids = IdMaker::new(body);
    let mut response = ParsedResponse::default();
    for block in blocks {
        match block.kind.as_deref() {
            Some("text") => {
                if let Some(text) = block.text.as_deref() {
                    if !response.text.is_empty() {
                        response.text.push('\n');
                    }
                    response.text.push_str(text);
                }
            }
            // Server tools (`server_tool_use`, `mcp_tool_use`) run at the
            // provider, thinking is not for us: only client calls count.
            Some("tool_use") => {
                let index = response.calls.len();
                let id = ids.id_for(block.id.as_deref(), index);
                let arguments = match block.input {
                    Some(value) => Arguments::Value(value),
                    None => Arguments::Missing,
                };
                response
                    .calls
                    .push(make_call(id, block.name.as_deref(), arguments));
            }
            _ => {}
        }
    }
    Ok(response)
}

/// `[{"role":"user","content":[{"type":"tool_result","tool_use_id":..,"content":..,"is_error":..}, ...]}]`
pub(super) fn write_results(results: &[ToolResult], out: &mut Vec<u8>) {
    out.extend_from_slice(b"[{\"role\":\"user\",\"content\":[");
    write_separated(out, results, |out, result| {
        out.extend_from_slice(b"{\"type\":\"tool_result\",\"tool_use_id\":");
        write_str(out, &result.call_id);
        out.extend_from_slice(b",\"content\":");
        write_str(out, non_empty(&result.content));
        out.extend_from_slice(if result.is_error() {
            b",\"is_error\":true}"
        } else {
            b",\"is_error\":false}"
        });
    });
    out.extend_from_slice(b"]}]");
}

pub(super) fn format_tools(tools: &[&ToolDef]) -> Value {
    tools
        .iter()
        .map(|def| {
            json!({
                "name": def.name,
                "description": def.description,
                "input_schema": def.parameters,
            })
        })
        .collect()
}

pub(super) fn parse_tools(tools: &Value) -> Result<Vec<FunctionSpec>, String> {
    let items = tools.as_array().ok_or("tools must be an array")?;
    items
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            Ok(FunctionSpec {
                name: str_field(tool, "name").ok_or(format!("tools[{i}] has no name"))?,
                description: str_field(tool, "description").unwrap_or_default(),
                parameters: tool
                    .get("input_schema")
                    .cloned()
                    .ok_or(format!("tools[{i}] has no input_schema"))?,
            })
        })
        .collect()
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A message as the API sends it, written straight into `out`.
pub(super) fn write_response(text: &str, calls: &[ParsedCall], out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"{\"id\":\"msg_toolgauge\",\"type\":\"message\",\"role\":\"assistant\",\
          \"model\":\"toolgauge-mock\",\"content\":[",
    );
    if !text.is_empty() {
        out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
        write_str(out, text);
        out.push(b'}');
        if !calls.is_empty() {
            out.push(b',');
        }
    }
    write_separated(out, calls, |out, call| {
        out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
        write_str(out, call.id());
        if !call.name().is_empty() {
            out.extend_from_slice(b",\"name\":");
            write_str(out, call.name());
        }
        out.extend_from_slice(b",\"input\":");
        write_arguments(call, out);
        out.push(b'}');
    });
    out.extend_from_slice(b"],\"stop_reason\":");
    out.extend_from_slice(if calls.is_empty() {
        b"\"end_turn\""
    } else {
        b"\"tool_use\""
    });
    out.extend_from_slice(
        b",\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}",
    );
}
