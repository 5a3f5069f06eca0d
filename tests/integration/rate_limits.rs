//! A server's rate limits, as OpenAI's answers state them: a 429 storm
//! with `retry-after-ms` slows the run and loses no trial, and a spent
//! request count (`x-ratelimit-remaining-requests: 0`) holds the next
//! request until its `x-ratelimit-reset-requests`.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{KEY, openai_weather_run, reply, rows, stderr, toolgauge};

/// Refuses the first `storm` requests with 429 and `retry-after-ms`, then
/// answers each with the right call and `headers`.
struct Limited {
    storm: usize,
    seen: AtomicUsize,
    headers: Vec<(&'static str, String)>,
}

impl Respond for Limited {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        if self.seen.fetch_add(1, Ordering::SeqCst) < self.storm {
            return ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "100")
                .insert_header("x-ratelimit-remaining-requests", "0")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
                );
        }
        let mut answer =
            ResponseTemplate::new(200).set_body_json(reply("openai", json!({"city": "Paris"})));
        for (name, value) in &self.headers {
            answer = answer.insert_header(*name, value.as_str());
        }
        answer
    }
}

async fn run(
    limited: Limited,
    trials: &str,
) -> (MockServer, Vec<toolgauge::report::TrialRow<'static>>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(limited)
        .mount(&server)
        .await;
    // Two tries a request, one request at a time.
    let run = openai_weather_run(
        &server,
        "What's the weather in Paris?",
        json!({"max_attempts": 2, "concurrency": 1}),
    );
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let args: Vec<String> = [
        "run",
        suite.to_str().unwrap(),
        "--models",
        model.to_str().unwrap(),
        "--trials",
        trials,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    (server, rows(&out))
}

#[tokio::test]
async fn a_429_storm_with_retry_after_loses_no_trial_and_waits_as_the_header_says() {
    let limited = Limited {
        storm: 6,
        seen: AtomicUsize::new(0),
        headers: Vec::new(),
    };
    let (server, rows) = run(limited, "3").await;
    // Six refusals, each waited out: more than the two tries a request
    // has, and no trial lost.
    assert_eq!(server.received_requests().await.unwrap().len(), 9);
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter()
            .all(|row| row.trial_success && row.failures.is_empty())
    );
    let retries: u32 = rows.iter().map(|row| row.retries).sum();
    assert_eq!(retries, 6);
    // Each refusal's wait is the header's 100 ms, at least.
    let waited: f64 = rows.iter().map(|row| row.retry_ms).sum();
    assert!(waited >= 600.0, "{waited} ms");
}

#[tokio::test]
async fn a_spent_request_count_holds_the_next_request_until_its_reset() {
    let limited = Limited {
        storm: 0,
        seen: AtomicUsize::new(0),
        headers: vec![
            ("x-ratelimit-remaining-requests", "0".to_owned()),
            ("x-ratelimit-reset-requests", "300ms".to_owned()),
        ],
    };
    let (_, rows) = run(limited, "2").await;
    assert!(rows.iter().all(|row| row.trial_success));
    // One request at a time: the second waited for the count to reset.
    let mut queued: Vec<f64> = rows.iter().map(|row| row.queue_ms).collect();
    queued.sort_by(f64::total_cmp);
    assert!(queued[1] >= 300.0, "{queued:?}");
    assert!(queued[0] < 300.0, "{queued:?}");
}
