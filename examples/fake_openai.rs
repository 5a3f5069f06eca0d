//! A fake OpenAI Chat Completions server for `scripts/overhead.sh`:
//! every request is answered after a fixed delay (tokio's timer, through
//! wiremock) with one call of the request's first tool, so that a run's
//! wall time beyond the delays is toolgauge's own. Prints its base URL,
//! then serves until killed.
//!
//! Usage: fake_openai DELAY_MS

// A program of its own: its URL goes to stdout.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

struct Answer {
    delay: Duration,
}

impl Respond for Answer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let tool = body["tools"][0]["function"]["name"]
            .as_str()
            .unwrap_or("tool");
        ResponseTemplate::new(200)
            .set_delay(self.delay)
            .set_body_json(json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {
                        "name": tool, "arguments": "{\"city\": \"Paris\"}"}}]}}],
                "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
            }))
    }
}

#[tokio::main]
async fn main() {
    let delay_ms: u64 = std::env::args()
        .nth(1)
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(50);
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(Answer {
            delay: Duration::from_millis(delay_ms),
        })
        .mount(&server)
        .await;
    println!("{}/v1", server.uri());
    std::future::pending::<()>().await;
}
