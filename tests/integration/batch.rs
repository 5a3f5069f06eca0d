//! `run --batch` against servers that emulate each provider's batch API
//! as documented: OpenAI's file upload (multipart, `purpose=batch`), the
//! batch made of it and its states (`validating`, `in_progress`,
//! `finalizing`, `completed`), its output file in any order; Anthropic's
//! Message Batches (custom ids of 1-64 letters, digits, `-` and `_`,
//! `processing_status`, results at `results_url`); Gemini's batch mode
//! (inlined requests, an operation polled until `done`, responses in
//! request order without their keys). Each refuses what the real one
//! refuses. Every request is answered from one recording, so a suite run
//! live and the same suite run as batches must give the same trials.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{KEY, base_url, model_file, reply, rows, run_args, stderr, toolgauge};

/// What the model answers to a request: the recording both runs share.
type Recording = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// A provider's API, live and batched, on one mock server.
struct Emulation {
    provider: &'static str,
    recording: Recording,
    uri: String,
    state: Mutex<State>,
    /// Polls answer 503 while set (the server down after a submit).
    polls_fail: AtomicBool,
    /// A create makes its batch, then answers 500 (the answer lost).
    creates_lose_answer: AtomicBool,
    /// An output file answers its first request twice.
    answers_twice: AtomicBool,
    /// Results and polls answer with a redirect to this origin.
    redirect_to: Mutex<Option<String>>,
    batches_made: AtomicUsize,
    live_requests: AtomicUsize,
    /// Where Anthropic's results are said to be (another origin, in the
    /// hostile test).
    results_origin: Option<String>,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Vec<u8>>,
    batches: HashMap<String, Batch>,
}

struct Batch {
    requests: Vec<(String, Value)>,
    polls: u32,
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "error": {"message": message, "type": "invalid_request_error"}
    }))
}

impl Emulation {
    fn authorized(&self, request: &Request) -> bool {
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        match self.provider {
            "openai" => header("authorization") == Some(format!("Bearer {KEY}")),
            "anthropic" => {
                header("x-api-key").as_deref() == Some(KEY) && header("anthropic-version").is_some()
            }
            _ => header("x-goog-api-key").as_deref() == Some(KEY),
        }
    }

    fn new_batch(&self, requests: Vec<(String, Value)>) -> String {
        let n = self.batches_made.fetch_add(1, Ordering::SeqCst);
        let id = match self.provider {
            "openai" => format!("batch_{n:04}"),
            "anthropic" => format!("msgbatch_{n:04}"),
            _ => format!("batches/{n:04}"),
        };
        let batch = Batch { requests, polls: 0 };
        self.state.lock().unwrap().batches.insert(id.clone(), batch);
        id
    }

    /// Requests sent in batches, all batches together.
    fn batched_requests(&self) -> usize {
        let state = self.state.lock().unwrap();
        state.batches.values().map(|b| b.requests.len()).sum()
    }

    /// A poll: the batch's polls counted, and whether it has ended (the
    /// third poll on).
    fn polled(&self, id: &str) -> Option<(bool, Vec<(String, Value)>)> {
        let mut state = self.state.lock().unwrap();
        let batch = state.batches.get_mut(id)?;
        batch.polls += 1;
        let answers = batch
            .requests
            .iter()
            .map(|(custom_id, body)| (custom_id.clone(), (self.recording)(body)))
            .collect();
        Some((batch.polls >= 3, answers))
    }
}

impl Respond for Emulation {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if !self.authorized(request) {
            return error(401, "invalid x-api-key");
        }
        let path = request.url.path().to_owned();
        let get = request.method.as_str() == "GET";
        let is_poll = get && !path.ends_with("/content") && !path.ends_with("/results");
        if is_poll && self.polls_fail.load(Ordering::SeqCst) {
            return error(503, "The server is overloaded.");
        }
        if let Some(origin) = self.redirect_to.lock().unwrap().as_deref()
            && get
        {
            let elsewhere = format!("{origin}{path}");
            return ResponseTemplate::new(307).insert_header("location", elsewhere.as_str());
        }
        let response = match self.provider {
            "openai" => self.openai(request, &path),
            "anthropic" => self.anthropic(request, &path),
            _ => self.gemini(request, &path),
        };
        let create = request.method.as_str() == "POST"
            && (path.ends_with("/batches") || path.ends_with(":batchGenerateContent"));
        if create && self.creates_lose_answer.load(Ordering::SeqCst) {
            return error(
                500,
                "The server had an error while processing your request.",
            );
        }
        response
    }
}

/// A multipart form's fields: name -> (file name, content).
fn form_fields(request: &Request) -> HashMap<String, (Option<String>, Vec<u8>)> {
    let content_type = request.headers["content-type"].to_str().unwrap();
    let boundary = content_type.split("boundary=").nth(1).unwrap();
    let delimiter = format!("--{boundary}");
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let mut fields = HashMap::new();
    for part in body.split(&delimiter) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let attribute = |key: &str| {
            head.split(&format!("{key}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(str::to_owned)
        };
        let Some(name) = attribute(" name") else {
            continue;
        };
        let content = content.strip_suffix("\r\n").unwrap_or(content);
        fields.insert(name, (attribute("filename"), content.as_bytes().to_vec()));
    }
    fields
}

impl Emulation {
    fn openai(&self, request: &Request, path: &str) -> ResponseTemplate {
        let method = request.method.as_str();
        match (method, path) {
            ("POST", "/v1/chat/completions") => self.live(request),
            ("POST", "/v1/files") => {
                let fields = form_fields(request);
                if fields.get("purpose").map(|(_, v)| v.as_slice()) != Some(b"batch") {
                    return error(400, "'purpose' must be 'batch'");
                }
                let Some((Some(_), file)) = fields.get("file") else {
                    return error(400, "'file' is a required property");
                };
                let mut state = self.state.lock().unwrap();
                let id = format!("file-{}", state.files.len());
                state.files.insert(id.clone(), file.clone());
                ResponseTemplate::new(200).set_body_json(json!({
                    "id": id, "object": "file", "bytes": file.len(), "purpose": "batch",
                    "filename": "batch.jsonl", "status": "processed"
                }))
            }
            ("POST", "/v1/batches") => self.openai_create(request),
            ("GET", _) if path.starts_with("/v1/files/") => {
                let id = path
                    .trim_start_matches("/v1/files/")
                    .trim_end_matches("/content");
                match self.state.lock().unwrap().files.get(id) {
                    Some(content) => ResponseTemplate::new(200).set_body_bytes(content.clone()),
                    None => error(404, "No such File object"),
                }
            }
            ("GET", _) if path.starts_with("/v1/batches/") => {
                let id = path.trim_start_matches("/v1/batches/");
                let Some((ended, answers)) = self.polled(id) else {
                    return error(404, "No batch found");
                };
                let status = if ended { "completed" } else { "in_progress" };
                let mut batch = json!({"id": id, "object": "batch", "status": status,
                    "endpoint": "/v1/chat/completions", "completion_window": "24h",
                    "output_file_id": null, "error_file_id": null});
                if ended {
                    // The output file, in an order of its own.
                    let mut lines = Vec::new();
                    for (n, (custom_id, body)) in answers.iter().rev().enumerate() {
                        let line = json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                            "response": {"status_code": 200, "request_id": format!("req_{n}"), "body": body},
                            "error": null});
                        lines.push(line.to_string());
                    }
                    if self.answers_twice.load(Ordering::SeqCst) {
                        lines.push(lines[0].clone());
                    }
                    let mut state = self.state.lock().unwrap();
                    let file = format!("file-out-{id}");
                    state
                        .files
                        .insert(file.clone(), lines.join("\n").into_bytes());
                    batch["output_file_id"] = json!(file);
                }
                ResponseTemplate::new(200).set_body_json(batch)
            }
            _ => error(404, "Invalid URL"),
        }
    }

    fn openai_create(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["endpoint"] != "/v1/chat/completions" || body["completion_window"] != "24h" {
            return error(400, "endpoint or completion_window not supported");
        }
        let file = {
            let state = self.state.lock().unwrap();
            let id = body["input_file_id"].as_str().unwrap_or_default();
            state.files.get(id).cloned()
        };
        let Some(file) = file else {
            return error(400, "input_file_id: no such file");
        };
        let mut requests = Vec::new();
        for line in String::from_utf8(file).unwrap().lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            if line["method"] != "POST" || line["url"] != "/v1/chat/completions" {
                return error(
                    400,
                    "each line's method and url must match the batch's endpoint",
                );
            }
            let custom_id = line["custom_id"].as_str().unwrap().to_owned();
            if requests.iter().any(|(id, _)| *id == custom_id) {
                return error(400, "custom_id values must be unique within a batch");
            }
            requests.push((custom_id, line["body"].clone()));
        }
        let id = self.new_batch(requests);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": id, "object": "batch", "status": "validating", "endpoint": "/v1/chat/completions",
            "input_file_id": body["input_file_id"], "completion_window": "24h"
        }))
    }

    fn anthropic(&self, request: &Request, path: &str) -> ResponseTemplate {
        match (request.method.as_str(), path) {
            ("POST", "/v1/messages") => self.live(request),
            ("POST", "/v1/messages/batches") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let mut requests: Vec<(String, Value)> = Vec::new();
                for r in body["requests"].as_array().unwrap() {
                    let custom_id = r["custom_id"].as_str().unwrap_or_default().to_owned();
                    let valid = (1..=64).contains(&custom_id.len())
                        && custom_id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                    if !valid || requests.iter().any(|(id, _)| *id == custom_id) {
                        return error(400, "requests.custom_id: invalid or repeated");
                    }
                    let params = &r["params"];
                    if params["max_tokens"].is_null() || params.get("stream").is_some() {
                        return error(400, "params: max_tokens required, stream not allowed");
                    }
                    requests.push((custom_id, params.clone()));
                }
                let id = self.new_batch(requests);
                ResponseTemplate::new(200).set_body_json(json!({
                    "id": id, "type": "message_batch", "processing_status": "in_progress",
                    "results_url": null
                }))
            }
            ("GET", _) if path.ends_with("/results") => {
                let id = path
                    .trim_start_matches("/v1/messages/batches/")
                    .trim_end_matches("/results");
                let Some((_, answers)) = self.polled(id) else {
                    return error(404, "not found");
                };
                let lines: Vec<String> = answers
                    .iter()
                    .rev()
                    .map(|(custom_id, message)| {
                        json!({"custom_id": custom_id,
                            "result": {"type": "succeeded", "message": message}})
                        .to_string()
                    })
                    .collect();
                ResponseTemplate::new(200).set_body_string(lines.join("\n"))
            }
            ("GET", _) if path.starts_with("/v1/messages/batches/") => {
                let id = path.trim_start_matches("/v1/messages/batches/");
                let Some((ended, _)) = self.polled(id) else {
                    return error(404, "not found");
                };
                let origin = self.results_origin.as_deref().unwrap_or(&self.uri);
                ResponseTemplate::new(200).set_body_json(json!({
                    "id": id, "type": "message_batch",
                    "processing_status": if ended { "ended" } else { "in_progress" },
                    "results_url": ended.then(|| format!("{origin}/v1/messages/batches/{id}/results")),
                }))
            }
            _ => error(404, "not found"),
        }
    }

    fn gemini(&self, request: &Request, path: &str) -> ResponseTemplate {
        match (request.method.as_str(), path) {
            ("POST", "/v1beta/models/gemini-test-model:generateContent") => self.live(request),
            ("POST", "/v1beta/models/gemini-test-model:batchGenerateContent") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let batch = &body["batch"];
                if batch["displayName"].as_str().is_none_or(str::is_empty) {
                    return error(400, "batch.display_name is required");
                }
                let Some(inlined) = batch["inputConfig"]["requests"]["requests"].as_array() else {
                    return error(400, "batch.input_config is required");
                };
                let requests = inlined
                    .iter()
                    .map(|r| {
                        let key = r["metadata"]["key"].as_str().unwrap_or_default();
                        (key.to_owned(), r["request"].clone())
                    })
                    .collect();
                let name = self.new_batch(requests);
                ResponseTemplate::new(200).set_body_json(json!({
                    "name": name,
                    "metadata": {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                        "model": "models/gemini-test-model", "name": name, "state": "BATCH_STATE_PENDING"}
                }))
            }
            ("GET", _) if path.starts_with("/v1beta/batches/") => {
                let name = path.trim_start_matches("/v1beta/");
                let Some((ended, answers)) = self.polled(name) else {
                    return error(404, "not found");
                };
                let state = if ended {
                    "BATCH_STATE_SUCCEEDED"
                } else {
                    "BATCH_STATE_RUNNING"
                };
                let mut operation =
                    json!({"name": name, "metadata": {"name": name, "state": state}});
                if ended {
                    // In request order, and without their keys.
                    let responses: Vec<Value> = answers
                        .iter()
                        .map(|(_, r)| json!({"response": r}))
                        .collect();
                    operation["done"] = json!(true);
                    operation["response"] = json!({
                        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                        "inlinedResponses": {"inlinedResponses": responses}
                    });
                }
                ResponseTemplate::new(200).set_body_json(operation)
            }
            _ => error(404, "not found"),
        }
    }

    fn live(&self, request: &Request) -> ResponseTemplate {
        self.live_requests.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        ResponseTemplate::new(200).set_body_json((self.recording)(&body))
    }
}

async fn emulate(provider: &'static str, recording: Recording) -> (MockServer, Arc<Emulation>) {
    emulate_with(provider, recording, None).await
}

async fn emulate_with(
    provider: &'static str,
    recording: Recording,
    results_origin: Option<String>,
) -> (MockServer, Arc<Emulation>) {
    let server = MockServer::start().await;
    let emulation = Arc::new(Emulation {
        provider,
        recording,
        uri: server.uri(),
        state: Mutex::default(),
        polls_fail: AtomicBool::new(false),
        creates_lose_answer: AtomicBool::new(false),
        answers_twice: AtomicBool::new(false),
        redirect_to: Mutex::new(None),
        batches_made: AtomicUsize::new(0),
        live_requests: AtomicUsize::new(0),
        results_origin,
    });
    Mock::given(wiremock::matchers::any())
        .respond_with(SharedResponder(Arc::clone(&emulation)))
        .mount(&server)
        .await;
    (server, emulation)
}

struct SharedResponder(Arc<Emulation>);

impl Respond for SharedResponder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}

/// A reply of `provider` making `calls` (name, arguments).
fn calls_reply(provider: &str, calls: &[(String, Value)]) -> Value {
    let mut body = reply(provider, json!({}));
    match provider {
        "openai" => {
            body["choices"][0]["message"]["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(k, (name, args))| {
                    json!({"id": format!("call_{k}"), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
        }
        "anthropic" => {
            body["content"] = calls
                .iter()
                .enumerate()
                .map(|(k, (name, args))| {
                    json!({"type": "tool_use", "id": format!("toolu_{k}"), "name": name, "input": args})
                })
                .collect();
        }
        _ => {
            body["candidates"][0]["content"]["parts"] = calls
                .iter()
                .map(|(name, args)| json!({"functionCall": {"name": name, "args": args}}))
                .collect();
        }
    }
    body
}

/// The BFCL outputs of the oracle's data used as the recording, a
/// different variant entry by entry (right, wrong value, int for float,
/// extra parameter, wrong name, optional left out), so that the suite's
/// verdicts differ; with the entries' prompts, to know each request by.
fn bfcl_recording(provider: &'static str, suite: &Path) -> Recording {
    let variants = [
        "truth",
        "wrong_value",
        "int_for_float",
        "extra_param",
        "wrong_name",
        "drop_optional",
    ];
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bfcl_oracle");
    let outputs: Vec<HashMap<String, Value>> = variants
        .iter()
        .map(|v| {
            std::fs::read_to_string(fixtures.join(format!("{v}.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .map(|l| (l["id"].as_str().unwrap().to_owned(), l["result"].clone()))
                .collect()
        })
        .collect();
    let mut answers: Vec<(String, Value)> = Vec::new();
    for (n, entry) in sorted_files(suite).iter().enumerate() {
        let scenario: Value = serde_json::from_slice(&std::fs::read(entry).unwrap()).unwrap();
        let id = scenario["name"].as_str().unwrap();
        let prompt = scenario["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .clone();
        // The prompt as it appears inside any request body's JSON text.
        let quoted = prompt.to_string();
        let result = &outputs[n % variants.len()][id];
        let calls: Vec<(String, Value)> = result
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|call| call.as_object().unwrap().clone())
            .map(|(name, args)| (name, serde_json::from_str(args.as_str().unwrap()).unwrap()))
            .collect();
        answers.push((quoted, calls_reply(provider, &calls)));
    }
    Arc::new(move |body: &Value| {
        let text = body.to_string();
        answers
            .iter()
            .filter(|(prompt, _)| text.contains(prompt.as_str()))
            .max_by_key(|(prompt, _)| prompt.len())
            .map(|(_, reply)| reply.clone())
            .expect("every request is of an entry of the suite")
    })
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// The first `n` entries of BFCL's simple_python, as a suite of its own.
fn bfcl_suite(dir: &Path, n: usize) -> PathBuf {
    let suite = dir.join("simple_python");
    std::fs::create_dir_all(&suite).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bfcl/simple_python");
    for k in 0..n {
        let name = format!("simple_python_{k}.json");
        std::fs::copy(source.join(&name), suite.join(&name)).unwrap();
    }
    suite
}

/// A trial's row without what a batch changes by design: times, retries
/// and cost (at the batch rate: half).
fn measured(out: &Path) -> Vec<String> {
    rows(out)
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {} {} {} {} {} {} {} {} {} {} {} {}",
                r.model,
                r.scenario,
                r.trial,
                r.attempt,
                r.attempt_success,
                r.trial_success,
                r.failures,
                r.reason,
                r.calls,
                r.input_tokens,
                r.output_tokens,
                r.schema_errors,
                r.reason_parameter,
                r.cached_tokens
            )
        })
        .collect()
}

fn total_cost(out: &Path) -> f64 {
    rows(out).iter().map(|r| r.cost_usd).sum()
}

/// The first `entries` of simple_python, `provider` emulated answering
/// from their recording, and a model file on it with `api` added.
struct Setup {
    dir: tempfile::TempDir,
    suite: PathBuf,
    _server: MockServer,
    emulation: Arc<Emulation>,
    model: PathBuf,
}

impl Setup {
    /// `run --batch` of the suite into `batched/`, `extra` flags after:
    /// the command's output and its folder.
    async fn run_batched(&self, extra: &[&str]) -> (std::process::Output, PathBuf) {
        let out = self.dir.path().join("batched");
        let mut flags = vec!["--batch"];
        flags.extend(extra);
        let output = toolgauge(run_args(&self.suite, &self.model, &out, &flags), Some(KEY)).await;
        (output, out)
    }
}

async fn bfcl_setup(provider: &'static str, entries: usize, api: Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let suite = bfcl_suite(dir.path(), entries);
    let (server, emulation) = emulate(provider, bfcl_recording(provider, &suite)).await;
    let model = model_file(dir.path(), provider, &base_url(provider, &server), api);
    Setup {
        dir,
        suite,
        _server: server,
        emulation,
        model,
    }
}

/// A run that measured: exit 0, or 1 for cells below threshold.
fn assert_ran(output: &std::process::Output) {
    assert!(
        output.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(output)
    );
}

/// BFCL simple_python (24 entries) through `provider`'s batch API gives
/// the trials the same suite gives live, at half the cost.
async fn bfcl_batched_as_live(provider: &'static str) {
    let setup = bfcl_setup(provider, 24, json!({"batch_poll_ms": 1})).await;
    let (suite, model, emulation) = (&setup.suite, &setup.model, &setup.emulation);
    let dir = &setup.dir;
    let (live, batched) = (dir.path().join("live"), dir.path().join("batched"));
    let output = toolgauge(run_args(suite, model, &live, &[]), Some(KEY)).await;
    assert_ran(&output);
    let asked_live = emulation.live_requests.load(Ordering::SeqCst);
    let output = toolgauge(run_args(suite, model, &batched, &["--batch"]), Some(KEY)).await;
    assert_ran(&output);
    let (live_rows, batched_rows) = (measured(&live), measured(&batched));
    assert_eq!(batched_rows, live_rows);
    // Not one request went live; each attempt was one request of the
    // batch of its round (the first attempts, then the retries).
    assert_eq!(emulation.live_requests.load(Ordering::SeqCst), asked_live);
    assert_eq!(asked_live, live_rows.len());
    assert_eq!(emulation.batched_requests(), live_rows.len());
    let rounds = rows(&batched).iter().map(|r| r.attempt).max().unwrap();
    assert_eq!(
        emulation.batches_made.load(Ordering::SeqCst),
        rounds as usize
    );
    let passed = rows(&batched).iter().filter(|r| r.trial_success).count();
    assert!(
        (1..24).contains(&passed),
        "the verdicts differ: {passed} of 24"
    );
    let (live_cost, batch_cost) = (total_cost(&live), total_cost(&batched));
    assert!(
        live_cost > 0.0 && (batch_cost - live_cost / 2.0).abs() < 1e-9,
        "{batch_cost} is not half of {live_cost}"
    );
    let said = stderr(&output);
    let id = if provider == "gemini" {
        "batches/0000"
    } else if provider == "anthropic" {
        "msgbatch_0000"
    } else {
        "batch_0000"
    };
    assert!(
        said.contains(&format!("batch {id} ({provider}-live): 24 request(s)")),
        "{said}"
    );
    let ledger = std::fs::read_to_string(batched.join("batches.jsonl")).unwrap();
    assert!(ledger.contains(id), "{ledger}");
    let summary = std::fs::read_to_string(batched.join("summary.md")).unwrap();
    assert!(summary.contains("the batch rate"), "{summary}");
    assert!(
        summary.contains(&format!("| {provider}-live | {id} | 24 ")),
        "{summary}"
    );
}

#[tokio::test]
async fn bfcl_through_openai_batches_gives_the_live_trials_at_half_price() {
    bfcl_batched_as_live("openai").await;
}

#[tokio::test]
async fn bfcl_through_anthropic_message_batches_gives_the_live_trials_at_half_price() {
    bfcl_batched_as_live("anthropic").await;
}

#[tokio::test]
async fn bfcl_through_gemini_batch_mode_gives_the_live_trials_at_half_price() {
    bfcl_batched_as_live("gemini").await;
}

/// The weather scenario's replies: a wrong first call (units the schema
/// refuses), then the right one once the error came back.
fn self_correcting(provider: &'static str) -> Recording {
    Arc::new(move |body: &Value| {
        let text = body.to_string();
        // The error went back: the second attempt gets it right.
        if text.contains("kelvin") {
            calls_reply(
                provider,
                &[("get_weather".into(), json!({"city": "Paris"}))],
            )
        } else {
            calls_reply(
                provider,
                &[(
                    "get_weather".into(),
                    json!({"city": "Paris", "units": "kelvin"}),
                )],
            )
        }
    })
}

/// Self-correction as batch rounds: every trial's first attempt in one
/// batch, every second attempt (after the error went back) in the next,
/// and the trials those of the live run.
#[tokio::test]
async fn each_attempt_of_a_multi_turn_trial_is_a_batch_round() {
    let provider = "anthropic";
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::live::make_suite(dir.path(), "Weather in Paris?");
    let (server, emulation) = emulate(provider, self_correcting(provider)).await;
    let model = model_file(
        dir.path(),
        provider,
        &base_url(provider, &server),
        json!({"batch_poll_ms": 1}),
    );
    let (live, batched) = (dir.path().join("live"), dir.path().join("batched"));
    let three = |args: Vec<String>| {
        let at = args.iter().position(|a| a == "--trials").unwrap();
        let mut args = args;
        args[at + 1] = "3".to_owned();
        args
    };
    let output = toolgauge(three(run_args(&suite, &model, &live, &[])), Some(KEY)).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let output = toolgauge(
        three(run_args(&suite, &model, &batched, &["--batch"])),
        Some(KEY),
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(measured(&batched), measured(&live));
    assert_eq!(
        rows(&batched).len(),
        6,
        "two attempts per trial: {:#?}",
        measured(&batched)
    );
    assert_eq!(emulation.batches_made.load(Ordering::SeqCst), 2);
    let state = emulation.state.lock().unwrap();
    let sizes: Vec<usize> = ["msgbatch_0000", "msgbatch_0001"]
        .iter()
        .map(|id| state.batches[*id].requests.len())
        .collect();
    assert_eq!(sizes, [3, 3]);
}

/// A batch the run could not follow (its server down after the submit)
/// stops the run, exit 1, naming the batch; `--resume` follows that batch
/// (never submitting it again) and finishes the run as the live one.
#[tokio::test]
async fn resume_follows_a_submitted_batch_instead_of_paying_twice() {
    let api = json!({"batch_poll_ms": 1, "max_attempts": 2});
    let setup = bfcl_setup("openai", 6, api).await;
    let (suite, model, emulation) = (&setup.suite, &setup.model, &setup.emulation);
    let dir = &setup.dir;
    let (live, batched) = (dir.path().join("live"), dir.path().join("batched"));
    let output = toolgauge(run_args(suite, model, &live, &[]), Some(KEY)).await;
    assert_ran(&output);
    emulation.polls_fail.store(true, Ordering::SeqCst);
    let output = toolgauge(run_args(suite, model, &batched, &["--batch"]), Some(KEY)).await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("batch batch_0000 could not be followed"),
        "{said}"
    );
    assert!(said.contains("--resume"), "{said}");
    assert!(rows(&batched).is_empty());
    emulation.polls_fail.store(false, Ordering::SeqCst);
    let resume = [
        "run",
        "--resume",
        batched.to_str().unwrap(),
        "--models",
        model.to_str().unwrap(),
        "--quiet",
    ]
    .map(str::to_owned)
    .to_vec();
    let output = toolgauge(resume, Some(KEY)).await;
    assert_ran(&output);
    // The first round's batch followed, not sent again: each attempt is
    // in one batch only.
    assert_eq!(emulation.batched_requests(), rows(&live).len());
    assert_eq!(measured(&batched), measured(&live));
}

/// An Anthropic batch whose `results_url` is on another host: the key is
/// not sent there, and the run stops saying why.
#[tokio::test]
async fn a_results_address_off_the_models_endpoint_gets_no_key() {
    let provider = "anthropic";
    let dir = tempfile::tempdir().unwrap();
    let suite = bfcl_suite(dir.path(), 2);
    let elsewhere = MockServer::start().await;
    let (server, _emulation) = emulate_with(
        provider,
        bfcl_recording(provider, &suite),
        Some(elsewhere.uri()),
    )
    .await;
    let model = model_file(
        dir.path(),
        provider,
        &base_url(provider, &server),
        json!({"batch_poll_ms": 1}),
    );
    let out = dir.path().join("out");
    let output = toolgauge(run_args(&suite, &model, &out, &["--batch"]), Some(KEY)).await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("not on the model's endpoint"), "{said}");
    assert!(elsewhere.received_requests().await.unwrap().is_empty());
}

/// Flags `--batch` cannot keep: a budget (a batch's cost is known only at
/// its end) and a replay; and a run of mocks only, where it does nothing.
#[tokio::test]
async fn batch_refuses_a_budget_a_replay_and_a_run_without_live_models() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::live::make_suite(dir.path(), "Weather in Paris?");
    let model = model_file(dir.path(), "openai", "http://127.0.0.1:9/v1", json!({}));
    let out = dir.path().join("out");
    for (extra, said) in [
        (
            &["--batch", "--max-tokens", "100"][..],
            "--batch cannot go with --max-cost or --max-tokens",
        ),
        (
            &["--batch", "--replay", "nowhere"][..],
            "--batch cannot go with --replay",
        ),
    ] {
        let output = toolgauge(run_args(&suite, &model, &out, extra), Some(KEY)).await;
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(said), "{}", stderr(&output));
    }
    let mock = dir.path().join("mock.json");
    std::fs::write(&mock, r#"{"name": "m", "kind": "scripted"}"#).unwrap();
    let output = toolgauge(run_args(&suite, &mock, &out, &["--batch"]), None).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--batch sends live models' requests as batches"));
}

/// A batched run's exchanges can be recorded like live ones, and the
/// recording replayed (no provider, no key) gives the same trials.
#[tokio::test]
async fn a_batched_run_recorded_replays_to_the_same_trials() {
    let setup = bfcl_setup("gemini", 6, json!({"batch_poll_ms": 1})).await;
    let (suite, model, dir) = (&setup.suite, &setup.model, &setup.dir);
    let (batched, replayed) = (dir.path().join("batched"), dir.path().join("replayed"));
    let recording = dir.path().join("recording");
    let record = ["--batch", "--record", recording.to_str().unwrap()];
    let output = toolgauge(run_args(suite, model, &batched, &record), Some(KEY)).await;
    assert_ran(&output);
    let replay = ["--replay", recording.to_str().unwrap()];
    let output = toolgauge(run_args(suite, model, &replayed, &replay), None).await;
    assert_ran(&output);
    assert_eq!(measured(&replayed), measured(&batched));
}

/// A create whose answer was lost (the batch made, a 500 back) was tried
/// again, up to three paid batches, none of them in batches.jsonl. Now it
/// is sent once, recorded before it was sent, and the run stops saying so.
#[tokio::test]
async fn a_batch_create_that_gets_no_answer_is_sent_once_and_stays_on_record() {
    for provider in ["openai", "anthropic", "gemini"] {
        let api = json!({"batch_poll_ms": 1, "max_attempts": 3});
        let setup = bfcl_setup(provider, 2, api).await;
        let emulation = &setup.emulation;
        emulation.creates_lose_answer.store(true, Ordering::SeqCst);
        let (output, out) = setup.run_batched(&[]).await;
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{provider}: {said}");
        assert_eq!(
            emulation.batches_made.load(Ordering::SeqCst),
            1,
            "{provider}: {said}"
        );
        assert!(said.contains("provider's batch list"), "{provider}: {said}");
        let ledger = std::fs::read_to_string(out.join("batches.jsonl")).unwrap();
        assert!(ledger.contains("\"event\":\"creating\""), "{ledger}");
    }
}

/// A batch the provider no longer knows (404) left the run unresumable,
/// the advice looping on --resume. Now it is marked dead and its requests
/// are sent again, once, in a new batch.
#[tokio::test]
async fn a_batch_the_provider_does_not_know_is_marked_dead_and_sent_again_once() {
    let api = json!({"batch_poll_ms": 1, "max_attempts": 2});
    let setup = bfcl_setup("openai", 3, api).await;
    let (suite, model, emulation) = (&setup.suite, &setup.model, &setup.emulation);
    // What a whole run makes, undisturbed.
    let clean = setup.dir.path().join("clean");
    let output = toolgauge(run_args(suite, model, &clean, &["--batch"]), Some(KEY)).await;
    assert_ran(&output);
    let whole_run = emulation.batches_made.load(Ordering::SeqCst);
    let out = setup.dir.path().join("batched");
    emulation.polls_fail.store(true, Ordering::SeqCst);
    let output = toolgauge(run_args(suite, model, &out, &["--batch"]), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    emulation.polls_fail.store(false, Ordering::SeqCst);
    // The provider forgets every batch it had.
    emulation.state.lock().unwrap().batches.clear();
    let resume = [
        "run",
        "--resume",
        out.to_str().unwrap(),
        "--models",
        model.to_str().unwrap(),
        "--quiet",
    ];
    let output = toolgauge(resume.map(str::to_owned).to_vec(), Some(KEY)).await;
    assert_ran(&output);
    // The dead batch, then a whole run's again: its first round sent once more.
    let made = emulation.batches_made.load(Ordering::SeqCst);
    assert_eq!(made, whole_run + 1 + whole_run, "{}", stderr(&output));
    assert_eq!(measured(&out), measured(&clean));
    let ledger = std::fs::read_to_string(out.join("batches.jsonl")).unwrap();
    assert!(ledger.contains("\"event\":\"dead\""), "{ledger}");
}

/// An output file that answers a request twice was taken silently. Now
/// the request's trial is lost to the server, which is named.
#[tokio::test]
async fn an_answer_given_twice_in_batch_results_is_the_servers_failure() {
    let setup = bfcl_setup("openai", 2, json!({"batch_poll_ms": 1})).await;
    setup.emulation.answers_twice.store(true, Ordering::SeqCst);
    let (output, _) = setup.run_batched(&[]).await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("more than once"), "{said}");
}

/// `--out DIR --force` replayed the replaced run's batch answers instead
/// of asking the model. Now it starts a new ledger, and keeps the old
/// one's paid batches on record beside it.
#[tokio::test]
async fn force_starts_a_new_batch_ledger_and_keeps_the_old_one_on_record() {
    let setup = bfcl_setup("anthropic", 2, json!({"batch_poll_ms": 1})).await;
    let mut made = Vec::new();
    let mut out = PathBuf::new();
    for _ in 0..2 {
        let (output, batched) = setup.run_batched(&["--force"]).await;
        assert_ran(&output);
        out = batched;
        made.push(setup.emulation.batches_made.load(Ordering::SeqCst));
    }
    // The second run asked the model again: as many batches as the first.
    assert_eq!(made[1], 2 * made[0]);
    let replaced = std::fs::read_to_string(out.join("batches.replaced.jsonl")).unwrap();
    assert!(replaced.contains("msgbatch_0000"), "{replaced}");
    let ledger = std::fs::read_to_string(out.join("batches.jsonl")).unwrap();
    assert!(!ledger.contains("msgbatch_0000"), "{ledger}");
}

/// While a batch ran, the terminal said nothing. Now each change of its
/// state, as a poll finds it, is said.
#[tokio::test]
async fn a_waiting_batch_says_its_state_as_polls_find_it() {
    for (provider, state) in [
        ("openai", "in_progress"),
        ("anthropic", "in_progress"),
        ("gemini", "BATCH_STATE_RUNNING"),
    ] {
        let setup = bfcl_setup(provider, 2, json!({"batch_poll_ms": 1})).await;
        let (output, _) = setup.run_batched(&[]).await;
        assert_ran(&output);
        let said = stderr(&output);
        let line = format!("({provider}-live): {state}; waiting for it to end");
        assert!(said.contains(&line), "{provider}: {said}");
    }
}

/// A poll or a results address that redirects to another origin: the
/// key is not sent there (reqwest keeps x-api-key and x-goog-api-key on
/// such a hop), and the batch is left to --resume, named.
#[tokio::test]
async fn a_batch_poll_that_redirects_to_another_origin_gets_no_key() {
    for provider in ["anthropic", "gemini"] {
        let setup = bfcl_setup(provider, 2, json!({"batch_poll_ms": 1})).await;
        let elsewhere = MockServer::start().await;
        *setup.emulation.redirect_to.lock().unwrap() = Some(elsewhere.uri());
        let (output, _) = setup.run_batched(&[]).await;
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{provider}: {said}");
        assert!(said.contains("another origin"), "{provider}: {said}");
        assert!(
            elsewhere.received_requests().await.unwrap().is_empty(),
            "{provider}: the redirect was followed"
        );
    }
}
