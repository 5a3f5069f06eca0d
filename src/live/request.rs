//! One request per provider: the URL, the headers (the key among them) and
//! the body holding the conversation, the tools in the provider's format,
//! and the model file's options.

use serde_json::{Map, Value, json};

use super::conversation::Conversation;
use super::settings::{ApiSettings, ToolChoice};
use crate::provider::Provider;
use crate::tool::ToolDef;

pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Headers whose values are secrets: never recorded, logged or shown.
pub const SECRET_HEADERS: [&str; 3] = ["authorization", "x-api-key", "x-goog-api-key"];

/// A request ready to send.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
}

pub fn default_base_url(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "https://api.openai.com/v1",
        Provider::Anthropic => "https://api.anthropic.com/v1",
        Provider::Gemini => "https://generativelanguage.googleapis.com/v1beta",
    }
}

pub fn build(
    provider: Provider,
    settings: &ApiSettings,
    key: Option<&str>,
    conversation: &Conversation,
    tools: &[&ToolDef],
) -> ApiRequest {
    let base = settings
        .base_url
        .as_deref()
        .unwrap_or(default_base_url(provider))
        .trim_end_matches('/');
    let mut headers = vec![("content-type", "application/json".to_owned())];
    let mut body = Map::new();
    let url = match provider {
        Provider::OpenAi => {
            if let Some(key) = key {
                headers.push(("authorization", format!("Bearer {key}")));
            }
            body.insert("model".into(), json!(settings.model));
            body.insert("messages".into(), json!(conversation.messages));
            if !tools.is_empty() {
                body.insert("tools".into(), provider.format_tools(tools.iter().copied()));
                if let Some(choice) = settings.tool_choice {
                    body.insert("tool_choice".into(), json!(choice_name(choice)));
                }
                if let Some(parallel) = settings.parallel_tool_calls {
                    body.insert("parallel_tool_calls".into(), json!(parallel));
                }
            }
            if let Some(t) = settings.temperature {
                body.insert("temperature".into(), json!(t));
            }
            if let Some(n) = settings.max_tokens {
                body.insert("max_tokens".into(), json!(n));
            }
            if let Some(seed) = settings.seed {
                body.insert("seed".into(), json!(seed));
            }
            format!("{base}/chat/completions")
        }
        Provider::Anthropic => {
            if let Some(key) = key {
                headers.push(("x-api-key", key.to_owned()));
            }
            headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
            body.insert("model".into(), json!(settings.model));
            // Required by the Messages API.
            body.insert(
                "max_tokens".into(),
                json!(settings.max_tokens.unwrap_or(1024)),
            );
            if !conversation.system.is_empty() {
                body.insert("system".into(), json!(conversation.system.join("\n\n")));
            }
            body.insert("messages".into(), json!(conversation.messages));
            if !tools.is_empty() {
                body.insert("tools".into(), provider.format_tools(tools.iter().copied()));
                let mut choice = json!({"type": match settings.tool_choice {
                    Some(ToolChoice::Required) => "any",
                    Some(ToolChoice::None) => "none",
                    _ => "auto",
                }});
                if settings.parallel_tool_calls == Some(false) {
                    choice["disable_parallel_tool_use"] = json!(true);
                }
                if settings.tool_choice.is_some() || settings.parallel_tool_calls.is_some() {
                    body.insert("tool_choice".into(), choice);
                }
            }
            if let Some(t) = settings.temperature {
                body.insert("temperature".into(), json!(t));
            }
            format!("{base}/messages")
        }
        Provider::Gemini => {
            if let Some(key) = key {
                headers.push(("x-goog-api-key", key.to_owned()));
            }
            body.insert("contents".into(), json!(conversation.messages));
            if !conversation.system.is_empty() {
                body.insert(
                    "systemInstruction".into(),
                    json!({"parts": [{"text": conversation.system.join("\n\n")}]}),
                );
            }
            if !tools.is_empty() {
                body.insert("tools".into(), provider.format_tools(tools.iter().copied()));
                if let Some(choice) = settings.tool_choice {
                    let mode = match choice {
                        ToolChoice::Auto => "AUTO",
                        ToolChoice::Required => "ANY",
                        ToolChoice::None => "NONE",
                    };
                    body.insert(
                        "toolConfig".into(),
                        json!({"functionCallingConfig": {"mode": mode}}),
                    );
                }
            }
            let mut generation = Map::new();
            if let Some(t) = settings.temperature {
                generation.insert("temperature".into(), json!(t));
            }
            if let Some(n) = settings.max_tokens {
                generation.insert("maxOutputTokens".into(), json!(n));
            }
            if let Some(seed) = settings.seed {
                generation.insert("seed".into(), json!(seed));
            }
            if !generation.is_empty() {
                body.insert("generationConfig".into(), Value::Object(generation));
            }
            format!("{base}/models/{}:generateContent", settings.model)
        }
    };
    ApiRequest {
        url,
        headers,
        body: Value::Object(body),
    }
}

fn choice_name(choice: ToolChoice) -> &'static str {
    match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::Required => "required",
        ToolChoice::None => "none",
    }
}

/// A URL with any `key=` query value hidden (Gemini accepts the key there).
pub fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _))
                if name.eq_ignore_ascii_case("key") || name.eq_ignore_ascii_case("api_key") =>
            {
                format!("{name}=[REDACTED]")
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}
