//! A server's resources and prompts as a scenario uses them: its
//! resources read through one more tool the scenario names (for the
//! model to read, and for a probe to check as a task checks a file), and
//! a prompt's messages as the scenario's opening.

use std::collections::BTreeMap;

use rmcp::model::{GetPromptResult, ReadResourceRequestParams, ResourceContents, Role};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use super::connection::Connection;
use crate::tool::{Effect, ToolDef, ToolFailure};

/// MCP's "resource not found".
const RESOURCE_NOT_FOUND: i32 = -32002;

/// Resources named in the resource tool's description, at most.
const NAMED: usize = 20;

/// `resources/read` of `uri`: a single text as it is (a probe matches
/// it, as JSON when it is JSON); several contents, or binary ones, as
/// the model reads embedded resources.
pub(super) async fn read(
    label: &str,
    connection: &Connection,
    uri: &str,
) -> Result<String, ToolFailure> {
    let read = connection
        .service
        .read_resource(ReadResourceRequestParams::new(uri))
        .await;
    match read {
        Ok(result) => Ok(match result.contents.as_slice() {
            [ResourceContents::TextResourceContents { text, .. }] => text.clone(),
            contents => contents
                .iter()
                .map(super::content::resource_text)
                .collect::<Vec<_>>()
                .join("\n"),
        }),
        // Not found (-32002) or refused: the URI asked for.
        Err(ServiceError::McpError(error)) => Err(super::output::rpc_failure(
            &error,
            &[RESOURCE_NOT_FOUND, super::output::INVALID_PARAMS],
        )),
        Err(other) => Err(ToolFailure::unavailable(format!(
            "the MCP server {label} did not answer resources/read: {other}"
        ))),
    }
}

/// The tool named `name` that reads the server's resources by URI: its
/// description names the first of them (`resources/list`).
pub(super) fn resource_tool_def(
    name: &str,
    label: &str,
    listed: &[rmcp::model::Resource],
) -> ToolDef {
    let mut named: Vec<String> = listed
        .iter()
        .take(NAMED)
        .map(|r| match &r.description {
            Some(about) => format!("{} ({}: {about})", r.uri, r.name),
            None => format!("{} ({})", r.uri, r.name),
        })
        .collect();
    if listed.len() > NAMED {
        named.push(format!("and {} more", listed.len() - NAMED));
    }
    let mut other = BTreeMap::new();
    other.insert("mcp_server".to_owned(), Value::from(label));
    other.insert("mcp_resources".to_owned(), Value::Bool(true));
    super::served_definition(
        name.to_owned(),
        format!(
            "Read a resource of the server by its URI. It has: {}.",
            if named.is_empty() {
                "none listed".to_owned()
            } else {
                named.join("; ")
            }
        ),
        json!({
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
            "required": ["uri"],
            "additionalProperties": false
        }),
        Effect::Read,
        other,
    )
}

/// A prompt's messages as a conversation's opening (`{"role",
/// "content"}`, content as the model reads a tool's); none when it has
/// no message.
pub(super) fn opening(got: &GetPromptResult) -> Option<Vec<Value>> {
    let messages: Vec<Value> = got
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::Assistant => "assistant",
                _ => "user",
            };
            json!({"role": role, "content": super::content::block_text(&m.content)})
        })
        .collect();
    (!messages.is_empty()).then_some(messages)
}
