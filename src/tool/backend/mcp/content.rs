//! What each kind of MCP content reads as in a tool's output, which goes
//! back to the model as text: text as it is; an image, an audio clip or
//! a binary resource as one line saying what it is and its size (never
//! its base64, which would fill the model's context with noise); an
//! embedded text resource as its text under its URI; a resource link as
//! its URI, name and type.

use rmcp::model::{ContentBlock, ResourceContents};

/// `block` as the model reads it.
pub(super) fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[image: {}, {}]", image.mime_type, size(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {}]", audio.mime_type, size(&audio.data))
        }
        ContentBlock::Resource(embedded) => resource_text(&embedded.resource),
        ContentBlock::ResourceLink(link) => {
            let kind = link
                .mime_type
                .as_deref()
                .map(|m| format!(", {m}"))
                .unwrap_or_default();
            format!("[resource link: {} ({}{kind})]", link.uri, link.name)
        }
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// A resource's contents as the model reads them: a text one as its
/// text under its URI, a binary one as what it is and its size.
pub(super) fn resource_text(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource {uri}: {}, {}]",
            mime_type.as_deref().unwrap_or("binary"),
            size(blob)
        ),
        // A kind rmcp adds later: as JSON, whole.
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The size of base64 data once decoded, in words.
fn size(base64: &str) -> String {
    let bytes = base64.trim_end_matches('=').len() * 3 / 4;
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block(value: serde_json::Value) -> ContentBlock {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_image_reads_as_its_type_and_size_never_its_base64() {
        // 8 bytes, base64 "AAECAwQFBgc=".
        let image =
            block(json!({"type": "image", "data": "AAECAwQFBgc=", "mimeType": "image/png"}));
        assert_eq!(block_text(&image), "[image: image/png, 8 bytes]");
        let audio = block(json!({"type": "audio", "data": "AAECAw==", "mimeType": "audio/wav"}));
        assert_eq!(block_text(&audio), "[audio: audio/wav, 4 bytes]");
    }

    #[test]
    fn resources_read_as_their_text_or_what_they_are() {
        let text =
            block(json!({"type": "resource", "resource": {"uri": "test://a", "text": "hello"}}));
        assert_eq!(block_text(&text), "[resource test://a]\nhello");
        let blob = block(
            json!({"type": "resource", "resource": {"uri": "test://b", "blob": "AAEC", "mimeType": "application/pdf"}}),
        );
        assert_eq!(
            block_text(&blob),
            "[resource test://b: application/pdf, 3 bytes]"
        );
        let link = block(
            json!({"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt", "mimeType": "text/plain"}),
        );
        assert_eq!(
            block_text(&link),
            "[resource link: file:///x.txt (x.txt, text/plain)]"
        );
    }
}
