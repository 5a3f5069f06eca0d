//! A live model's `api` block: which endpoint, which key, which options.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::call::Prices;
use crate::pointer::Pointer;
use crate::transport::TransportSettings;

/// The longest first wait before a batch is polled: an hour (a larger
/// one would leave a run waiting for days, or overflow the clock).
pub const MAX_BATCH_POLL_MS: u64 = 3_600_000;

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
    /// A number sent with every request, or `"trial"`: each trial's own
    /// (from `--seed`, the scenario and the trial), so that repeated
    /// trials sampled above temperature 0 differ and still repeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<SeedChoice>,
    /// `auto` (default), `required` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The model takes images: those a tool returns (an MCP server's) go
    /// to it as image parts of the tool's result. Otherwise (and always
    /// for audio) a line names each, with its type and size.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub images: bool,
    /// Ask for the reply as a stream of server-sent events; it is
    /// assembled into the body it stands for before Parse reads it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// With `stream`: run each call the moment the stream shows it
    /// complete, while the rest of the reply is still coming.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub execute_early: bool,
    /// How hard a reasoning model thinks (`low`, `medium`, `high`), for the
    /// Responses API (`reasoning.effort`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
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
    /// Prompt caching: `"auto"` marks what repeats from request to
    /// request (the tools, the system prompt, the conversation so far)
    /// for the provider's cache where the format asks for marks
    /// (Anthropic's `cache_control`); OpenAI and Gemini cache without
    /// them. `"off"` (the default) marks nothing.
    #[serde(default, skip_serializing_if = "CacheMode::is_off")]
    pub cache: CacheMode,
    /// Under `run --batch`: how long after submitting a batch it is first
    /// polled (milliseconds; default 5 s); the wait doubles up to a
    /// minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_poll_ms: Option<u64>,
}

/// A live model's `cache`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    #[default]
    Off,
    Auto,
}

impl CacheMode {
    pub fn is_off(&self) -> bool {
        *self == CacheMode::Off
    }
}

/// The `seed` a live model sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a whole number, or \"trial\" for each trial's own seed"
)]
pub enum SeedChoice {
    Fixed(u64),
    PerTrial(PerTrial),
}

/// The word `"trial"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerTrial {
    Trial,
}

impl SeedChoice {
    /// The seed sent for a trial whose shared seed is `trial_seed`.
    /// Servers read seeds as 32-bit integers (llama.cpp, vLLM), so a
    /// trial's seed is sent as its low 31 bits.
    pub fn for_trial(self, trial_seed: u64) -> u64 {
        match self {
            SeedChoice::Fixed(seed) => seed,
            SeedChoice::PerTrial(PerTrial::Trial) => trial_seed & 0x7fff_ffff,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
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

/// A setting of the `api` block a person must fix before a run: the JSON
/// pointer of the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{pointer}: {problem}")]
pub struct ApiSettingsError {
    pub pointer: Pointer,
    pub problem: String,
}

impl ApiSettings {
    /// Problems a person must fix before a run.
    pub fn check(&self) -> Result<(), ApiSettingsError> {
        let api = Pointer::root().key("api");
        let fail = |pointer: Pointer, problem: &str| {
            Err(ApiSettingsError {
                pointer,
                problem: problem.to_owned(),
            })
        };
        if self.model.trim().is_empty() {
            return fail(api.clone().key("model"), "is empty");
        }
        if self.max_attempts == 0 {
            return fail(api.clone().key("max_attempts"), "must be at least 1");
        }
        if self.timeout_ms == 0 {
            return fail(
                api.clone().key("timeout_ms"),
                "must be at least 1 (milliseconds per request; 0 would time out every request)",
            );
        }
        if let Some(prices) = &self.prices {
            check_prices(prices, &api.clone().key("prices"))?;
        }
        if self.concurrency == 0 {
            return fail(api.clone().key("concurrency"), "must be at least 1");
        }
        if let Some(ms) = self.batch_poll_ms
            && !(1..=MAX_BATCH_POLL_MS).contains(&ms)
        {
            return fail(
                api.clone().key("batch_poll_ms"),
                &format!(
                    "{ms} is out of range: give milliseconds from 1 to {MAX_BATCH_POLL_MS} (an hour)"
                ),
            );
        }
        if self.requests_per_minute == Some(0) {
            return fail(api.clone().key("requests_per_minute"), "must be at least 1");
        }
        if self.execute_early && !self.stream {
            return fail(
                api.clone().key("execute_early"),
                "needs \"stream\": true (calls can only run early out of a stream)",
            );
        }
        if let Some(url) = &self.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return fail(
                api.clone().key("base_url"),
                &format!("{url:?} must start with http:// or https://"),
            );
        }
        Ok(())
    }

    /// How this model's requests are sent.
    pub fn transport(&self) -> TransportSettings {
        TransportSettings {
            timeout: Duration::from_millis(self.timeout_ms),
            max_attempts: self.max_attempts,
            retry_base: Duration::from_millis(self.retry_base_ms),
            concurrency: self.concurrency,
            requests_per_minute: self.requests_per_minute,
        }
    }
}

/// Each price given is a price: finite and 0 or more.
fn check_prices(prices: &Prices, at: &Pointer) -> Result<(), ApiSettingsError> {
    let given = [
        ("input_per_mtok", Some(prices.input_per_mtok)),
        ("output_per_mtok", Some(prices.output_per_mtok)),
        ("cached_input_per_mtok", prices.cached_input_per_mtok),
        ("cache_write_per_mtok", prices.cache_write_per_mtok),
    ];
    for (field, price) in given {
        if let Some(price) = price.filter(|p| !(p.is_finite() && *p >= 0.0)) {
            return Err(ApiSettingsError {
                pointer: at.clone().key(field),
                problem: format!(
                    "{price} is no price: give US dollars per million tokens, 0 or more"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_poll_ms_is_bounded_to_an_hour_naming_the_field_and_the_range() {
        let with = |ms: u64| -> ApiSettings {
            serde_json::from_value(serde_json::json!({"model": "m", "batch_poll_ms": ms})).unwrap()
        };
        assert!(with(1).check().is_ok());
        assert!(with(MAX_BATCH_POLL_MS).check().is_ok());
        for ms in [0, MAX_BATCH_POLL_MS + 1, u64::MAX] {
            let err = with(ms).check().unwrap_err().to_string();
            assert!(
                err.contains("batch_poll_ms") && err.contains("3600000"),
                "{err}"
            );
        }
    }
}
