//! A live model's `api` block: which endpoint, which key, which options.

use serde::{Deserialize, Serialize};

/// How a live model is reached and asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSettings {
    /// The provider's model id (`gpt-4o-2024-08-06`, `claude-sonnet-4-5`, ...).
    pub model: String,
    /// Default: the provider's public endpoint. Any OpenAI-compatible
    /// server works for kind `openai` (vLLM, llama.cpp, Ollama, OpenRouter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (never the key itself).
    /// Leave out for a local server that needs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `auto` (default), `required` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Per request.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Tries per request, the first included.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// The first retry's backoff; it doubles each time, with jitter.
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
    /// Requests in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// US dollars per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Prices {
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

fn default_timeout_ms() -> u64 {
    60_000
}
fn default_max_attempts() -> u32 {
    4
}
fn default_retry_base_ms() -> u64 {
    500
}
fn default_concurrency() -> usize {
    8
}

impl ApiSettings {
    /// Problems a person must fix before a run.
    pub fn check(&self) -> Result<(), String> {
        if self.model.trim().is_empty() {
            return Err("api.model is empty".to_owned());
        }
        if self.max_attempts == 0 {
            return Err("api.max_attempts must be at least 1".to_owned());
        }
        if self.concurrency == 0 {
            return Err("api.concurrency must be at least 1".to_owned());
        }
        if self.requests_per_minute == Some(0) {
            return Err("api.requests_per_minute must be at least 1".to_owned());
        }
        if let Some(url) = &self.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "api.base_url {url:?} must start with http:// or https://"
            ));
        }
        Ok(())
    }
}
