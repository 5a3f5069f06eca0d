//! Prompt caching against a server that caches as Anthropic's does: a
//! prompt is read in order (tools, system, messages), a block marked with
//! `cache_control` ends a prefix it caches (at most four marks a request,
//! more refused), a later request reads the longest cached prefix that
//! ends on one of its blocks at or before its last mark, and the usage
//! block counts reads and writes apart from the rest of the input.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{
    KEY, base_url, make_suite, model_file, reply, rows, run_args, stderr, toolgauge,
};

/// Anthropic's prompt cache, token counts at four bytes a token.
struct CachingServer {
    cached: Mutex<HashSet<String>>,
    requests: AtomicUsize,
    sent: Mutex<Vec<Value>>,
}

/// The prompt's blocks in the order the model reads them, each without
/// its mark, and whether it was marked.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut blocks = Vec::new();
    let mut push = |block: &Value| {
        let mut block = block.clone();
        let marked = block
            .as_object_mut()
            .and_then(|b| b.remove("cache_control"))
            .is_some();
        blocks.push((block.to_string(), marked));
    };
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .for_each(&mut push);
    match &body["system"] {
        Value::Array(system) => system.iter().for_each(&mut push),
        Value::String(text) => push(&json!({"type": "text", "text": text})),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::Array(content) => content.iter().for_each(&mut push),
            text => push(&json!({"type": "text", "text": text})),
        }
    }
    blocks
}

impl Respond for CachingServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        self.sent.lock().unwrap().push(body.clone());
        let blocks = blocks(&body);
        let marks = blocks.iter().filter(|(_, marked)| *marked).count();
        if marks > 4 {
            return ResponseTemplate::new(400).set_body_json(json!({
                "type": "error",
                "error": {"type": "invalid_request_error", "message": format!(
                    "A maximum of 4 blocks with cache_control may be provided. Found {marks}.")}
            }));
        }
        let prefixes: Vec<String> = blocks
            .iter()
            .scan(String::new(), |prefix, (block, _)| {
                prefix.push_str(block);
                Some(prefix.clone())
            })
            .collect();
        let tokens = |text: &str| text.len() as u64 / 4;
        let total = prefixes.last().map_or(0, |p| tokens(p));
        let mut cached = self.cached.lock().unwrap();
        let last_mark = blocks.iter().rposition(|(_, marked)| *marked);
        let (read, written) = match last_mark {
            None => (0, 0),
            Some(last) => {
                let read = (0..=last)
                    .rev()
                    .find(|&i| cached.contains(&prefixes[i]))
                    .map_or(0, |i| tokens(&prefixes[i]));
                let written = tokens(&prefixes[last]) - read;
                for (i, (_, marked)) in blocks.iter().enumerate() {
                    if *marked {
                        cached.insert(prefixes[i].clone());
                    }
                }
                (read, written)
            }
        };
        // The first reply breaks the call; the second is right.
        let n = self.requests.fetch_add(1, Ordering::SeqCst);
        let args = if n == 0 {
            json!({"city": "Paris", "units": "kelvin"})
        } else {
            json!({"city": "Paris"})
        };
        let mut reply = reply("anthropic", args);
        reply["usage"] = json!({
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 20
        });
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

/// The marks a request carried, by where they were.
fn marks(body: &Value) -> Vec<String> {
    let mut at = Vec::new();
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if tool.get("cache_control").is_some() {
            at.push(format!("tools/{i}"));
        }
    }
    for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
        if block.get("cache_control").is_some() {
            at.push(format!("system/{i}"));
        }
    }
    for (m, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (i, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block.get("cache_control").is_some() {
                at.push(format!("messages/{m}/content/{i}"));
            }
        }
    }
    at
}

/// A server that caches as Anthropic does, and what it was sent.
async fn caching_server() -> (MockServer, std::sync::Arc<CachingServer>) {
    let server = MockServer::start().await;
    let caching = std::sync::Arc::new(CachingServer {
        cached: Mutex::new(HashSet::new()),
        requests: AtomicUsize::new(0),
        sent: Mutex::new(Vec::new()),
    });
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(SharedResponder(caching.clone()))
        .mount(&server)
        .await;
    (server, caching)
}

#[tokio::test]
async fn a_multi_turn_anthropic_run_with_cache_auto_reads_its_prefix_and_prices_both_ways() {
    let (server, caching) = caching_server().await;
    let dir = tempfile::tempdir().unwrap();
    let prices =
        json!({"input_per_mtok": 3.0, "output_per_mtok": 15.0, "cached_input_per_mtok": 0.3});
    let model = model_file(
        dir.path(),
        "anthropic",
        &base_url("anthropic", &server),
        json!({"cache": "auto", "prices": prices}),
    );
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // Three marks each time: the last tool, the system prompt, the
    // conversation's last block (the prompt first, then the tool result).
    let sent = caching.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        marks(&sent[0]),
        ["tools/0", "system/0", "messages/0/content/0"]
    );
    assert_eq!(
        marks(&sent[1]),
        ["tools/0", "system/0", "messages/2/content/0"]
    );
    assert_eq!(sent[0]["system"][0]["text"], "Answer with tools.");

    let trials = rows(&out);
    assert_eq!(trials.len(), 2);
    let (first, second) = (&trials[0], &trials[1]);
    assert!(
        first.cache_write_tokens > 0 && first.cached_tokens == 0,
        "{first:?}"
    );
    // The second request reads all the first one wrote, and writes the rest.
    assert_eq!(second.cached_tokens, first.cache_write_tokens);
    assert!(second.cache_write_tokens > 0, "{second:?}");
    for row in [first, second] {
        let plain = row.input_tokens - row.cached_tokens - row.cache_write_tokens;
        let expected = (plain as f64 * 3.0
            + row.cached_tokens as f64 * 0.3
            + row.cache_write_tokens as f64 * 3.75
            + row.output_tokens as f64 * 15.0)
            / 1e6;
        assert!(
            (row.cost_usd - expected).abs() < 1e-8,
            "{} vs {expected}",
            row.cost_usd
        );
    }

    // models.csv: the share of input read from the cache, and the cost
    // over both attempts at the same rates.
    let models: Vec<Value> = csv::Reader::from_path(out.join("models.csv"))
        .unwrap()
        .deserialize::<std::collections::BTreeMap<String, String>>()
        .map(|row| json!(row.unwrap()))
        .collect();
    let input = first.input_tokens + second.input_tokens;
    let share: f64 = models[0]["cached_input_share"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (share - second.cached_tokens as f64 / input as f64).abs() < 1e-3,
        "{share}"
    );
    let cost: f64 = models[0]["cost_usd"].as_str().unwrap().parse().unwrap();
    assert!(
        (cost - (first.cost_usd + second.cost_usd)).abs() < 1e-5,
        "{cost}"
    ); // summary.md says the share too, as a person reads it.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let said = format!(
        "Input read from the prompt cache: {} {:.1}%.",
        models[0]["model"].as_str().unwrap(),
        share * 100.0
    );
    assert!(summary.contains(&said), "{said} not in {summary}");
}

#[tokio::test]
async fn a_model_without_cache_sends_no_marks() {
    let (server, caching) = caching_server().await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(
        dir.path(),
        "anthropic",
        &base_url("anthropic", &server),
        json!({}),
    );
    let suite = make_suite(dir.path(), "What's the weather in Paris?");
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let sent = caching.sent.lock().unwrap().clone();
    assert!(sent.iter().all(|body| marks(body).is_empty()));
    assert_eq!(sent[0]["system"], "Answer with tools.");
    assert!(
        rows(&out)
            .iter()
            .all(|row| row.cached_tokens == 0 && row.cache_write_tokens == 0)
    );
}

/// The server, shared with the test that reads what it was sent.
struct SharedResponder(std::sync::Arc<CachingServer>);

impl Respond for SharedResponder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}
