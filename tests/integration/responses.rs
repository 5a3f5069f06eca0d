//! OpenAI's Responses API (`kind: openai-responses`) against a server that
//! checks the conversation turn by turn as the real API does: flat
//! function tools, nothing stored (`store: false`, reasoning sent back
//! encrypted), each turn's reasoning item resent with its function call,
//! one `function_call_output` per `call_id`; and call ids that repeat
//! across responses (`call_0` every time), as a real server sent them.

use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{KEY, model_file, run_args, stderr, toolgauge};

/// A task: look the order up, then refund it, then say so.
fn refund_suite(dir: &std::path::Path) -> std::path::PathBuf {
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let tool = |name: &str, effect: &str, result: Value| {
        json!({
            "name": name,
            "description": format!("{name} by id."),
            "effect": effect,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": false
            },
            "simulate": {"result": result}
        })
    };
    let scenario = json!({
        "name": "refund_order",
        "tools": [
            tool("lookup_order", "read", json!({"id": "o-7", "status": "delivered"})),
            tool("refund_order", "write", json!({"refunded": true}))
        ],
        "messages": [
            {"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Refund order o-7."}
        ],
        "task": {
            "milestones": [
                {"name": "lookup_order", "arguments": {"order_id": "o-7"}},
                {"name": "refund_order", "arguments": {"order_id": "o-7"}}
            ],
            "answer": {"$contains": "refunded"}
        }
    });
    std::fs::write(suite.join("refund_order.json"), scenario.to_string()).unwrap();
    suite
}

fn response(output: Value) -> Value {
    json!({
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "gpt-test", "output": output, "parallel_tool_calls": true,
        "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60,
                  "input_tokens_details": {"cached_tokens": 40},
                  "output_tokens_details": {"reasoning_tokens": 4}}
    })
}

fn reasoning(id: &str, secret: &str) -> Value {
    json!({"type": "reasoning", "id": id, "encrypted_content": secret,
           "summary": [{"type": "summary_text", "text": "Look it up first."}]})
}

fn call(item: &str, name: &str) -> Value {
    json!({"type": "function_call", "id": item, "call_id": "call_0", "name": name,
           "arguments": "{\"order_id\":\"o-7\"}", "status": "completed"})
}

/// What the real API answers 400 for, in its words, or `None`.
fn refused(body: &Value, turn: usize) -> Option<String> {
    if body["store"] != false || body["include"] != json!(["reasoning.encrypted_content"]) {
        return Some("this test's server expects store: false and encrypted reasoning".into());
    }
    if body["instructions"] != "Use the tools." {
        return Some("the system text goes in `instructions`".into());
    }
    let tools = body["tools"].as_array()?;
    if tools
        .iter()
        .any(|t| t.get("function").is_some() || t["name"].is_null())
    {
        return Some("Missing required parameter: 'tools[0].name'.".into());
    }
    let input = body["input"].as_array()?;
    if input.first() != Some(&json!({"role": "user", "content": "Refund order o-7."})) {
        return Some("the conversation starts with the user's message".into());
    }
    // Each earlier turn: its reasoning item whole, its call, the output.
    let mut at = 1;
    for earlier in 1..turn {
        let (id, secret, item, name) = if earlier == 1 {
            ("rs_1", "enc-1", "fc_1", "lookup_order")
        } else {
            ("rs_2", "enc-2", "fc_2", "refund_order")
        };
        let expected_reasoning = reasoning(id, secret);
        let got = input.get(at)?;
        if got["type"] != "reasoning"
            || got["encrypted_content"] != expected_reasoning["encrypted_content"]
        {
            return Some(format!(
                "Item '{item}' of type 'function_call' was provided without its required 'reasoning' item: '{id}'."
            ));
        }
        let sent_call = input.get(at + 1)?;
        if sent_call["call_id"] != "call_0"
            || sent_call["name"] != name
            || sent_call.get("status").is_some()
        {
            return Some(format!("input[{}]: not the function_call as sent", at + 1));
        }
        let output = input.get(at + 2)?;
        if output["type"] != "function_call_output" || output["call_id"] != "call_0" {
            return Some(format!(
                "No tool output found for function call call_0 (input[{}]).",
                at + 2
            ));
        }
        at += 3;
    }
    (input.len() != at).then(|| format!("input has {} items, expected {at}", input.len()))
}

/// A response as the Responses API streams it: created, each output item
/// added, its pieces (text or arguments in two deltas, then whole), done,
/// and the whole response completed.
fn streamed(response: &Value) -> String {
    let mut events = vec![json!({"type": "response.created",
        "response": {"id": response["id"], "object": "response", "status": "in_progress", "output": []}})];
    for (i, item) in response["output"].as_array().unwrap().iter().enumerate() {
        let mut added = item.clone();
        if item["type"] == "function_call" {
            added["arguments"] = json!("");
        }
        if item["type"] == "message" {
            added["content"] = json!([]);
        }
        events
            .push(json!({"type": "response.output_item.added", "output_index": i, "item": added}));
        let id = &item["id"];
        if item["type"] == "function_call" {
            let arguments = item["arguments"].as_str().unwrap();
            let (head, tail) = arguments.split_at(arguments.len() / 2);
            for delta in [head, tail] {
                events.push(json!({"type": "response.function_call_arguments.delta",
                    "item_id": id, "output_index": i, "delta": delta}));
            }
            events.push(json!({"type": "response.function_call_arguments.done",
                "item_id": id, "output_index": i, "arguments": arguments}));
        }
        if item["type"] == "message" {
            let text = item["content"][0]["text"].as_str().unwrap();
            events.push(json!({"type": "response.output_text.delta",
                "item_id": id, "output_index": i, "content_index": 0, "delta": text}));
        }
        events.push(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    events.push(json!({"type": "response.completed", "response": response}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Turn by turn: the lookup (with reasoning), the refund (with reasoning,
/// the same `call_0` id again), then the answer; streamed when asked.
struct ResponsesServer {
    turns: Mutex<usize>,
    streamed: bool,
}

impl Respond for ResponsesServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut turns = self.turns.lock().unwrap();
        *turns += 1;
        let refusal = if (body["stream"] == true) != self.streamed {
            Some("this test's server expects `stream` as its model file says".to_owned())
        } else {
            refused(&body, *turns)
        };
        if let Some(message) = refusal {
            return ResponseTemplate::new(400).set_body_json(
                json!({"error": {"message": message, "type": "invalid_request_error"}}),
            );
        }
        let output = match *turns {
            1 => json!([reasoning("rs_1", "enc-1"), call("fc_1", "lookup_order")]),
            2 => json!([reasoning("rs_2", "enc-2"), call("fc_2", "refund_order")]),
            _ => {
                json!([{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "Order o-7 is refunded.", "annotations": []}]}])
            }
        };
        if self.streamed {
            return ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(streamed(&response(output)));
        }
        ResponseTemplate::new(200).set_body_json(response(output))
    }
}

#[tokio::test]
async fn a_responses_api_task_runs_with_its_conversation_checked_turn_by_turn() {
    responses_task(false).await;
}

#[tokio::test]
async fn a_streamed_responses_api_task_runs_its_calls_early_with_the_conversation_checked() {
    let trials = responses_task(true).await;
    let mut reader = csv::Reader::from_reader(trials.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    // The lookup and the refund ran before their replies ended; the answer
    // has no call, and its first token is its text.
    let ran: Vec<&str> = rows.iter().map(|r| &r[at("ran_early")]).collect();
    assert_eq!(ran, ["1", "1", "0"], "{trials}");
    assert!(
        rows[..2].iter().all(|r| !r[at("first_call_ms")].is_empty()),
        "{trials}"
    );
    assert!(rows[2][at("first_call_ms")].is_empty(), "{trials}");
    assert!(
        rows.iter().all(|r| !r[at("first_token_ms")].is_empty()),
        "{trials}"
    );
}

/// The refund task against the Responses server, whole or streamed (then
/// running calls early); trials.csv.
async fn responses_task(streamed: bool) -> String {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponsesServer {
            turns: Mutex::new(0),
            streamed,
        })
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let prices =
        json!({"input_per_mtok": 1.0, "cached_input_per_mtok": 0.1, "output_per_mtok": 2.0});
    let model = model_file(
        dir.path(),
        "openai-responses",
        &base,
        json!({"seed": null, "prices": prices, "stream": streamed, "execute_early": streamed}),
    );
    let suite = refund_suite(dir.path());
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    let requests = server.received_requests().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(trials.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| {
        let at = headers.iter().position(|h| h == name).unwrap();
        rows.iter().map(move |row| row[at].to_owned())
    };
    // One row per turn: the lookup, the refund, the answer.
    assert_eq!(rows.len(), 3, "{trials}");
    assert!(column("trial_success").all(|s| s == "true"), "{trials}");
    let milestones: u32 = column("milestones")
        .map(|m| m.parse::<u32>().unwrap())
        .sum();
    assert_eq!(milestones, 2, "{trials}");
    // Reasoning tokens per attempt, apart from the output they are part of.
    assert!(column("reasoning_tokens").all(|r| r == "4"), "{trials}");
    assert!(column("output_tokens").all(|r| r == "10"), "{trials}");
    // 40 of the 50 input tokens from the cache, priced apart:
    // (10 x 1.0 + 40 x 0.1 + 10 x 2.0) / 1e6 dollars.
    assert!(column("cached_tokens").all(|r| r == "40"), "{trials}");
    assert!(column("cost_usd").all(|r| r == "0.000034"), "{trials}");
    // The reasoning summaries are in the log, never the encrypted text.
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    assert!(log.contains("Look it up first."), "{log}");
    assert!(log.contains("\"reasoningTokens\":4"), "{log}");
    assert!(!log.contains("enc-1"), "{log}");
    trials
}

#[tokio::test]
async fn a_reply_cut_at_max_output_tokens_is_truncated_not_the_models_mistake() {
    let server = MockServer::start().await;
    let cut = json!({
        "id": "resp_2", "object": "response", "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_0",
                    "name": "lookup_order", "arguments": "{\"order_id\":\"o-", "status": "incomplete"}],
        "usage": {"input_tokens": 50, "output_tokens": 256}
    });
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(cut))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let model = model_file(dir.path(), "openai-responses", &base, json!({"seed": null}));
    let suite = refund_suite(dir.path());
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &[]), Some(KEY)).await;
    let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(trials.as_bytes());
    let at = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "failures")
        .unwrap();
    let failures = reader.records().next().unwrap().unwrap()[at].to_owned();
    assert!(
        failures.contains("truncated"),
        "{trials}\n{}",
        stderr(&output)
    );
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    assert!(
        log.contains("\"truncated\":true"),
        "{log}\n{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn mocks_speaking_the_responses_api_get_the_same_verdicts_as_in_any_format() {
    // The same feedback-aware mock, once in Gemini's format and once in
    // the Responses API's: Parse, Return and the error texts the mock
    // reads must carry the same story, so every row is the same.
    let dir = tempfile::tempdir().unwrap();
    let mut tables = Vec::new();
    for provider in ["gemini", "openai-responses"] {
        let models = dir.path().join(provider);
        std::fs::create_dir_all(&models).unwrap();
        let model = json!({
            "name": "attentive", "kind": "feedback-aware", "provider": provider,
            "parameters": {"p_first": 0.5, "p_fix": [0.9, 0.7], "latency_ms": 100}
        });
        std::fs::write(models.join("attentive.json"), model.to_string()).unwrap();
        let out = dir.path().join(format!("out-{provider}"));
        let args = [
            "run",
            "scenarios/starter",
            "--models",
            models.to_str().unwrap(),
            "--trials",
            "4",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ];
        let output = toolgauge(args.map(str::to_owned).to_vec(), None).await;
        assert!(output.status.code().is_some(), "{}", stderr(&output));
        tables.push(std::fs::read_to_string(out.join("trials.csv")).unwrap());
    }
    assert!(tables[0].lines().count() > 40, "{}", tables[0]);
    assert_eq!(tables[0], tables[1]);
}
