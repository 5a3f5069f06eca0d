//! A `tools/call` result as a tool's output: its content as the model
//! reads it, and its structured content held to the tool's own
//! `outputSchema` (a result that breaks it is a bad output, the tool's
//! fault).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use crate::call::Image;
use crate::tool::{ToolFailure, ToolFailureKind, ToolOutput};

/// JSON-RPC's "invalid params", which MCP servers answer for arguments
/// that break a tool's schema.
pub(super) const INVALID_PARAMS: i32 = -32602;

/// A server's JSON-RPC error answer as a tool's failure: a refusal of
/// what was asked when its code is one of `refusals`, a runtime failure
/// otherwise.
pub(super) fn rpc_failure(error: &rmcp::model::ErrorData, refusals: &[i32]) -> ToolFailure {
    let kind = if refusals.contains(&error.code.0) {
        ToolFailureKind::Invalid
    } else {
        ToolFailureKind::Runtime
    };
    ToolFailure::new(
        kind,
        format!("MCP error {}: {}", error.code.0, error.message),
    )
}

/// A `tools/call` result as a tool's output: its blocks as the model
/// reads them (`content::block_text`), or its structured content when it
/// has none. An
/// `isError` result is a failure with that text; one that says "MCP error
/// -32602" (servers built on the TypeScript SDK word schema failures so)
/// is a refusal of the arguments. A tool with an `outputSchema` (`output`)
/// must give structured content that it accepts, else the result is a
/// bad output: the tool's fault. Its images go with the text (each also
/// named in it), for a model that takes them.
pub(super) fn result_output(
    result: CallToolResult,
    output: Option<&crate::schema::Compiled>,
) -> Result<ToolOutput, ToolFailure> {
    if let Some(output) = output
        && result.is_error != Some(true)
    {
        check_output(result.structured_content.as_ref(), output)?;
    }
    let mut text = String::new();
    for block in &result.content {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&super::content::block_text(block));
    }
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    if result.is_error != Some(true) {
        let images = result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Image(image) => Some(Image {
                    mime_type: image.mime_type.clone(),
                    data: image.data.as_str().into(),
                }),
                _ => None,
            })
            .collect();
        return Ok(ToolOutput { text, images });
    }
    let kind = if text.starts_with("MCP error -32602") {
        ToolFailureKind::Invalid
    } else {
        ToolFailureKind::Runtime
    };
    Err(ToolFailure::new(kind, text))
}

/// Where a served tool's definition keeps its server's `outputSchema`.
pub const OUTPUT_SCHEMA_KEY: &str = "mcp_output_schema";

/// A tool's `outputSchema` compiled as arguments' schemas are; `None`
/// without one, or when it does not compile (nothing to hold results to).
pub(super) fn validator(
    schema: Option<&Map<String, Value>>,
) -> Option<Arc<crate::schema::Compiled>> {
    crate::schema::Compiled::new(&Value::Object(schema?.clone()))
        .ok()
        .map(Arc::new)
}

/// Structured content against the tool's `outputSchema`: every
/// violation, by pointer, as one bad-output failure.
fn check_output(
    structured: Option<&Value>,
    output: &crate::schema::Compiled,
) -> Result<(), ToolFailure> {
    let Some(structured) = structured else {
        return Err(ToolFailure::new(
            ToolFailureKind::BadOutput,
            "it declares an outputSchema but gave no structuredContent",
        ));
    };
    let violations = output.errors(structured);
    if violations.is_empty() {
        return Ok(());
    }
    let lines: Vec<&str> = violations.iter().map(|v| v.line()).collect();
    Err(ToolFailure::new(
        ToolFailureKind::BadOutput,
        format!(
            "its structuredContent breaks its outputSchema: {}",
            lines.join("; ")
        ),
    ))
}
