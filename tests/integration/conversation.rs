//! Conversations: tasks whose user speaks again. The example conversation
//! on the mock models (the scripted one passes every user turn, the
//! others fail some, reported per user turn and as turns survived), and
//! on a live model whose server checks, at each user turn, that the user's
//! new message follows the model's answer to the last one.

use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::live::{KEY, model_file, stderr, toolgauge};

const CONVERSATION: &str = "scenarios/agent/conversation_order_support.json";

/// trials.csv's rows of one model: (user_turn, user_turn_passed).
fn user_turns(out: &Path, model: &str) -> Vec<(String, String)> {
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    reader
        .deserialize::<toolgauge::report::TrialRow>()
        .map(Result::unwrap)
        .filter(|r| r.model == model)
        .map(|r| {
            (
                r.user_turn.map(|n| n.to_string()).unwrap_or_default(),
                r.user_turn_passed.into_owned(),
            )
        })
        .collect()
}

/// summary.csv's row of `model` as column -> value.
fn summary(out: &Path, model: &str) -> std::collections::BTreeMap<String, String> {
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let row = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == model)
        .unwrap();
    headers
        .iter()
        .zip(row.iter())
        .map(|(h, v)| (h.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn a_conversation_on_the_mocks_is_judged_per_user_turn() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = crate::toolgauge(&[
        "run",
        CONVERSATION,
        "--trials",
        "12",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        crate::live::stderr(&output)
    );
    // The scripted model: each user turn's steps, then its answer.
    let scripted = user_turns(&out, "scripted");
    let first_trial: Vec<(&str, &str)> = scripted[..7]
        .iter()
        .map(|(t, p)| (t.as_str(), p.as_str()))
        .collect();
    assert_eq!(
        first_trial,
        [
            ("1", ""),
            ("1", ""),
            ("1", "yes"),
            ("2", ""),
            ("2", "yes"),
            ("3", ""),
            ("3", "yes")
        ]
    );
    let row = summary(&out, "scripted");
    assert_eq!(row["user_turn_success"], "1.0");
    assert_eq!(row["turns_survived_mean"], "3.0");
    // The careless model fails some user turns; survived counts only
    // those before the first failure.
    let careless = summary(&out, "careless");
    let passed: f64 = careless["user_turn_success"].parse().unwrap();
    let survived: f64 = careless["turns_survived_mean"].parse().unwrap();
    assert!(passed < 1.0 && survived < 3.0, "{careless:?}");
    assert!(survived <= passed * 3.0 + 1e-9, "{careless:?}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| turns survived (mean) |"), "{md}");
}

/// The model's side of the conversation, turn by turn: a call or an
/// answer per request; a request at a user turn must end with the model's
/// answer and then what the user said, else 400.
struct ConversationServer {
    requests: Mutex<usize>,
}

fn call(name: &str, arguments: Value) -> Value {
    call_with_id(&format!("call_{name}"), name, arguments)
}

/// A Chat assistant message making one call, `id`.
pub(crate) fn call_with_id(id: &str, name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": id, "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}}]})
}

/// A Chat assistant message saying `text`.
pub(crate) fn says(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

impl Respond for ConversationServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let mut requests = self.requests.lock().unwrap();
        *requests += 1;
        // The refund tool is given from the second user turn on.
        let refund_given = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "refund_order");
        if refund_given != (*requests >= 4) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": format!("request {requests}: refund_order given: {refund_given}"),
                "type": "invalid_request_error"}}));
        }
        let user_turn = |answer: &str, user: &str| {
            let n = messages.len();
            n >= 2
                && messages[n - 2]["content"] == answer
                && messages[n - 1]["role"] == "user"
                && messages[n - 1]["content"] == user
        };
        let (message, ok) = match *requests {
            1 => (
                call(
                    "store_find",
                    json!({"collection": "customers", "where": {"email": "ada@example.com"}}),
                ),
                true,
            ),
            2 => (
                call("store_get", json!({"collection": "orders", "id": "o-9d21"})),
                true,
            ),
            3 => (says("Her order o-9d21 was delivered."), true),
            4 => (
                call(
                    "refund_order",
                    json!({"order_id": "o-9d21", "amount": 84.5}),
                ),
                user_turn(
                    "Her order o-9d21 was delivered.",
                    "She would like it refunded in full, please. Tell me the refund id.",
                ),
            ),
            5 => (says("Refunded: r-o-9d21."), true),
            6 => (
                call(
                    "store_put",
                    json!({"collection": "customers", "record": {"id": "c-7f3a",
                        "email": "ada.l@example.com", "name": "Ada Lovelace", "orders": ["o-9d21"]}}),
                ),
                user_turn(
                    "Refunded: r-o-9d21.",
                    "Her email is now ada.l@example.com. Update her customer record, keeping everything else.",
                ),
            ),
            _ => (says("Her email is now ada.l@example.com."), true),
        };
        if !ok {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": format!("request {requests}: the user's new message does not follow the answer"),
                "type": "invalid_request_error"}}));
        }
        completion(message)
    }
}

/// A Chat completion answering with `message`.
pub(crate) fn completion(message: Value) -> ResponseTemplate {
    let finish = if message["tool_calls"].is_null() {
        "stop"
    } else {
        "tool_calls"
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
    }))
}

/// The example conversation, one trial, on a live model behind `server`
/// (answering as `responder` does): the run's output and its folder.
async fn live_conversation(
    responder: impl Respond + 'static,
) -> (MockServer, std::process::Output, tempfile::TempDir) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_file(
        dir.path(),
        "openai",
        &format!("{}/v1", server.uri()),
        json!({}),
    );
    let out = dir.path().join("out");
    let args = [
        "run",
        CONVERSATION,
        "--models",
        model.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let output = toolgauge(args, Some(KEY)).await;
    (server, output, dir)
}

#[tokio::test]
async fn a_live_conversation_sends_each_user_turn_after_the_answer_and_passes_all_three() {
    let (server, output, dir) = live_conversation(ConversationServer {
        requests: Mutex::new(0),
    })
    .await;
    let out = dir.path().join("out");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.received_requests().await.unwrap().len(), 7);
    let turns = user_turns(&out, "openai-live");
    let passed: Vec<&str> = turns
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(t, p)| {
            assert_eq!(p, "yes", "user turn {t}: {turns:?}");
            t.as_str()
        })
        .collect();
    assert_eq!(passed, ["1", "2", "3"]);
    let row = summary(&out, "openai-live");
    assert_eq!(row["final_success"], "1.0");
    assert_eq!(row["turns_survived_mean"], "3.0");
}

#[test]
fn a_user_turn_that_cannot_fail_or_names_no_tool_is_refused_where_it_is() {
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(CONVERSATION).unwrap()).unwrap();
    let cases = [
        (
            json!({"user": "And?", "milestones": [{"name": "no_such_tool"}]}),
            "/task/turns/1/milestones/0/name",
            "no tool named \"no_such_tool\"",
        ),
        (
            json!({"user": "Thanks."}),
            "/task/turns/1",
            "a user turn needs at least one check that can fail",
        ),
        (
            json!({"user": " ", "answer": "ok"}),
            "/task/turns/1/user",
            "is empty",
        ),
    ];
    for (turn, at, says) in cases {
        let mut scenario = base.clone();
        scenario["task"]["turns"][1] = turn;
        assert_refused(&scenario, at, says);
    }
}

/// Running `scenario` stops at load (exit 2), naming `at` and saying `says`.
fn assert_refused(scenario: &Value, at: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversation.json");
    std::fs::write(&path, serde_json::to_string_pretty(scenario).unwrap()).unwrap();
    let out = dir.path().join("out");
    let output = crate::toolgauge(&[
        "run",
        path.to_str().unwrap(),
        "--trials",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = crate::live::stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(at) && stderr.contains(says),
        "{at}: {stderr}"
    );
}

/// A model that reaches for the refund tool before it is given: the call
/// fails as a call to an unknown tool, then it answers.
struct EagerServer {
    requests: Mutex<usize>,
}

impl Respond for EagerServer {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let mut requests = self.requests.lock().unwrap();
        *requests += 1;
        completion(match *requests {
            1 => call(
                "refund_order",
                json!({"order_id": "o-9d21", "amount": 84.5}),
            ),
            _ => says("I could not do it."),
        })
    }
}

#[tokio::test]
async fn a_tool_added_at_a_later_user_turn_is_unknown_before_it_and_not_named_in_the_error() {
    let (_server, output, dir) = live_conversation(EagerServer {
        requests: Mutex::new(0),
    })
    .await;
    let out = dir.path().join("out");
    // No threshold: a failed conversation is a measure, not a failed run.
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows[0].failures, "unknown_tool");
    assert!(!rows[0].trial_success);
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let result = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("Unknown tool \"refund_order\""), "{text}");
    assert!(text.contains("store_find"), "{text}");
    assert!(!text.contains(", refund_order"), "{text}");
    // The user's written turns are in the log and in the failed trial's
    // conversation in report.html.
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(CONVERSATION).unwrap()).unwrap();
    let said = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "user_message")
        .collect::<Vec<_>>();
    let written = scenario["task"]["turns"][0]["user"].as_str().unwrap();
    assert!(
        said.iter()
            .any(|e| e["who"] == "scenario" && e["text"] == written),
        "{said:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("the user said"),
        "no user message in report.html"
    );
}

#[test]
fn added_tools_must_be_the_scenarios_and_no_milestone_may_need_a_tool_the_model_lacks() {
    let base: Value =
        serde_json::from_str(&std::fs::read_to_string(CONVERSATION).unwrap()).unwrap();
    let mut unknown = base.clone();
    unknown["task"]["turns"][0]["add_tools"] = json!(["refund_everything"]);
    let mut too_early = base.clone();
    too_early["task"]["turns"][1]["add_tools"] = json!(["store_put", "refund_order"]);
    too_early["task"]["turns"][0]["add_tools"] = json!([]);
    // A probe on the tool the first milestone needs: the model never
    // gets that tool, so no model could pass.
    let mut probed = base.clone();
    probed["task"]["final_state"] = json!({"probe": {"tool": "store_find",
        "arguments": {"collection": "customers"}, "result": {"$contains": "ada"}}});
    let cases = [
        (
            probed,
            "/task/milestones/0/name",
            "\"store_find\" is a probe's tool, which the model is never given",
        ),
        (
            unknown,
            "/task/turns/0/add_tools/0",
            "no tool named \"refund_everything\"",
        ),
        (
            too_early,
            "/task/turns/0/milestones/0/name",
            "\"refund_order\" is given to the model only from user turn 3 on",
        ),
    ];
    for (scenario, at, says) in cases {
        assert_refused(&scenario, at, says);
    }
}

const SIMULATED: &str = "scenarios/agent/conversation_simulated_user.json";

/// `scenario` on the scripted mock, `trials` trials, reports in `out`.
pub(crate) fn scripted_run(scenario: &str, trials: u32, out: &Path) -> std::process::Output {
    crate::toolgauge(&[
        "run",
        scenario,
        "--models",
        "scenarios/models/scripted.json",
        "--trials",
        &trials.to_string(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_scripted_user_drives_the_task_to_its_stop_and_the_checks_are_judged_then() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(SIMULATED, 3, &out);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        crate::live::stderr(&output)
    );
    let turns = user_turns(&out, "scripted");
    // The opening request done in four model turns, then one answer to
    // the user's question; judged when the user stopped.
    let first: Vec<(&str, &str)> = turns[..5]
        .iter()
        .map(|(t, p)| (t.as_str(), p.as_str()))
        .collect();
    assert_eq!(
        first,
        [("1", ""), ("1", ""), ("1", ""), ("1", ""), ("2", "yes")]
    );
    let row = summary(&out, "scripted");
    assert_eq!(row["final_success"], "1.0");
    assert_eq!(row["user_simulator_failures"], "0");
}

#[test]
fn a_user_that_never_stops_leaks_or_says_nothing_loses_the_trial_not_the_agent() {
    let base: Value = serde_json::from_str(&std::fs::read_to_string(SIMULATED).unwrap()).unwrap();
    let cases = [
        (
            json!(["And?", "And?", "And?"]),
            "never said it was done in its 2 turn(s)",
        ),
        (
            json!(["You want your last order refunded in full, and you want the refund id."]),
            "repeated its instructions to the agent",
        ),
        (json!(["  "]), "said nothing"),
    ];
    for (script, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut scenario = base.clone();
        scenario["task"]["user"]["script"] = script;
        scenario["task"]["user"]["max_turns"] = json!(2);
        let path = dir.path().join("simulated.json");
        std::fs::write(&path, scenario.to_string()).unwrap();
        let out = dir.path().join("out");
        let output = scripted_run(path.to_str().unwrap(), 2, &out);
        let stderr = crate::live::stderr(&output);
        // Lost to the user, so the run fails, and the agent is charged
        // with nothing.
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("lost (user_simulator): the simulated user {says}")),
            "{says}: {stderr}"
        );
        let row = summary(&out, "scripted");
        assert_eq!(row["user_simulator_failures"], "2", "{says}: {row:?}");
        assert_eq!(row["lost_trials"], "2", "{row:?}");
        assert_eq!(row["trials"], "0", "{row:?}");
    }
}

/// The agent and the simulated user are both models behind this server:
/// the user (asked with the simulator's instructions) asks once more,
/// then stops; the agent finds, reads, refunds and answers.
struct AgentAndUser {
    agent: Mutex<usize>,
    user: Mutex<usize>,
}

impl Respond for AgentAndUser {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("You are playing a user") {
            // The simulator never sees tools, and never the agent's own
            // system text; its instructions are in its system message.
            assert!(body["tools"].is_null(), "{body}");
            assert!(system.contains("You are Ada Lovelace"), "{system}");
            let mut user = self.user.lock().unwrap();
            *user += 1;
            return completion(says(if *user == 1 {
                "Thanks. What is the refund id, please?"
            } else {
                "###STOP###"
            }));
        }
        // The agent never sees the user's instructions.
        assert!(
            !body.to_string().contains("You do not know your order id"),
            "{body}"
        );
        let mut agent = self.agent.lock().unwrap();
        *agent += 1;
        completion(match *agent {
            1 => call(
                "store_find",
                json!({"collection": "customers", "where": {"email": "ada@example.com"}}),
            ),
            2 => call("store_get", json!({"collection": "orders", "id": "o-9d21"})),
            3 => call(
                "refund_order",
                json!({"order_id": "o-9d21", "amount": 84.5}),
            ),
            4 => says("Your order is refunded."),
            _ => says("The refund id is r-o-9d21."),
        })
    }
}

/// `server` set to play the agent and the user, and the arguments of a
/// run of the simulated scenario whose user is a live model on it, into
/// `out`, with `extra` flags.
async fn live_user_run(server: &MockServer, dir: &Path, out: &Path, extra: &[&str]) -> Vec<String> {
    // A fresh responder: a run on the same server asks the same requests.
    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(AgentAndUser {
            agent: Mutex::new(0),
            user: Mutex::new(0),
        })
        .mount(server)
        .await;
    let base = format!("{}/v1", server.uri());
    let agent = model_file(dir, "openai", &base, json!({}));
    let user_dir = dir.join("users");
    std::fs::create_dir_all(&user_dir).unwrap();
    let user = model_file(
        &user_dir,
        "openai",
        &base,
        json!({"prices": {"input_per_mtok": 10.0, "output_per_mtok": 10.0}}),
    );
    let mut scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(SIMULATED).unwrap()).unwrap();
    // The user's model carries a key: it is the user's to give, on the
    // command line, and the scenario names it by its name.
    let mut user_file: Value =
        serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    user_file["name"] = json!("ada-user");
    std::fs::write(&user, user_file.to_string()).unwrap();
    let user_spec = &mut scenario["task"]["user"];
    user_spec.as_object_mut().unwrap().remove("script");
    user_spec["model"] = json!("ada-user");
    let path = dir.join("simulated.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    [
        "run",
        path.to_str().unwrap(),
        "--models",
        agent.to_str().unwrap(),
        "--user-model",
        user.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .chain(extra)
    .map(|a| (*a).to_owned())
    .collect()
}

#[tokio::test]
async fn a_live_model_plays_the_user_to_its_stop_and_its_tokens_are_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let server = MockServer::start().await;
    let args = live_user_run(&server, dir.path(), &out, &[]).await;
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut reader = csv::Reader::from_path(out.join("trials.csv")).unwrap();
    let rows: Vec<toolgauge::report::TrialRow> = reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert!(rows.iter().all(|r| r.trial_success));
    // The user spoke after the agent's answers (rows 4 and 5): its tokens
    // there, apart from the agent's, and priced at its own prices.
    let user_tokens: Vec<u64> = rows.iter().map(|r| r.user_input_tokens).collect();
    assert_eq!(user_tokens, [0, 0, 0, 30, 30]);
    assert!(rows[3].user_cost_usd > 0.0);
    assert!(rows.iter().all(|r| r.input_tokens == 30));
    // Both sides are in the log: each thing the user said, with its tokens.
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let said: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "user_message")
        .collect();
    assert_eq!(said.len(), 2, "{log}");
    assert_eq!(said[0]["who"], "simulated_user");
    assert_eq!(said[0]["text"], "Thanks. What is the refund id, please?");
    assert_eq!(said[1]["text"], "###STOP###");
    assert!(
        said.iter().all(|e| e["inputTokens"].as_u64() > Some(0)),
        "{said:?}"
    );
}

/// The MCP test server example, built by `cargo test`.
pub(crate) fn mcp_test_server() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp_test_server")
}

#[test]
fn a_user_who_speaks_first_after_a_greeting_ends_it_and_the_probe_reads_the_whole_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({
        "name": "greeted",
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "simulate": {"result": {"temp_c": 18}}
            },
            // lenient_echo answers its arguments: the probe's result is
            // the transcript it was given.
            {"mcp": {"command": [mcp_test_server().to_str().unwrap()]}, "only": ["lenient_echo"]}
        ],
        "messages": [
            {"role": "system", "content": "You are a weather agent."},
            {"role": "assistant", "content": "Hi! How can I help you today?"}
        ],
        "task": {
            "max_turns": 4,
            "reference": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "reference_answer": "It is 18 C in Paris.",
            "user": {
                "instructions": "You want the weather in Paris.",
                "system": "Play a user. <scenario>You want the weather in Paris.</scenario>",
                "max_turns": 3,
                // tau2's transfer word ends the conversation as its stop does.
                "script": ["What is the weather in Paris?", "###TRANSFER###"]
            },
            "final_state": {"probe": {
                "tool": "lenient_echo",
                "transcript": "transcript",
                "result": {"transcript": {"ended_by": "user_stop", "messages": {"$present": true, "$example": []}}}
            }}
        }
    });
    let path = dir.path().join("greeted.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(path.to_str().unwrap(), 1, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(summary(&out, "scripted")["final_success"], "1.0");

    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    let probe: Value = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "probe")
        .expect("the probe is logged");
    let transcript = &probe["result"]["transcript"];
    let said: Vec<(&str, &str)> = transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("assistant", "Hi! How can I help you today?"),
            ("user", "What is the weather in Paris?"),
            ("assistant", ""),
            ("tool", "{\"temp_c\":18}"),
            ("assistant", "It is 18 C in Paris."),
            ("user", "###TRANSFER###"),
        ]
    );
    let call = &transcript["messages"][2]["calls"][0];
    assert_eq!(
        (&call["name"], &call["arguments"]),
        (&json!("get_weather"), &json!({"city": "Paris"}))
    );
    assert_eq!(transcript["messages"][3]["call_id"], call["id"]);
    // The log keeps the probe's own arguments, not a second transcript.
    assert_eq!(probe["arguments"], json!({}));
}

#[test]
fn a_greeting_with_no_simulated_user_to_answer_it_is_refused_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({
        "name": "greeted_alone",
        "tools": ["store_find"],
        "messages": [{"role": "assistant", "content": "Hi!"}],
        "task": {"answer": {"$contains": "x"}}
    });
    let path = dir.path().join("greeted_alone.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let output = scripted_run(path.to_str().unwrap(), 1, &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("/messages: ends with the agent's words"),
        "{}",
        stderr(&output)
    );
}

/// Answers as tau2's two sides would: the user (known by its system
/// prompt) speaks first and leaves with tau2's out-of-scope word; every
/// request is kept.
struct GreetedPair {
    requests: Mutex<Vec<Value>>,
}

const TAU2_STYLE_USER: &str =
    "PLAY THE CUSTOMER. <scenario>You want the weather in Paris.</scenario>";

impl Respond for GreetedPair {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut requests = self.requests.lock().unwrap();
        requests.push(body.clone());
        let from_user = body["messages"][0]["content"] == TAU2_STYLE_USER;
        let asked = requests
            .iter()
            .filter(|b| (b["messages"][0]["content"] == TAU2_STYLE_USER) == from_user)
            .count();
        completion(match (from_user, asked) {
            (true, 1) => says("Weather in Paris, please."),
            (true, _) => says("###OUT-OF-SCOPE###"),
            (false, 1) => call("get_weather", json!({"city": "Paris"})),
            (false, _) => says("It is 18 C in Paris."),
        })
    }
}

#[tokio::test]
async fn a_live_user_on_its_own_system_prompt_answers_the_greeting_first() {
    let server = MockServer::start().await;
    let pair = std::sync::Arc::new(GreetedPair {
        requests: Mutex::new(Vec::new()),
    });
    Mock::given(method("POST"))
        .respond_with(ArcResponder(pair.clone()))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.uri());
    let agent = model_file(dir.path(), "openai", &base, json!({}));
    let users = dir.path().join("users");
    std::fs::create_dir_all(&users).unwrap();
    let user = model_file(&users, "openai", &base, json!({}));
    let mut user_file: Value =
        serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    user_file["name"] = json!("tau2-user");
    std::fs::write(&user, user_file.to_string()).unwrap();
    let scenario = json!({
        "name": "greeted_live",
        "tools": [{
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "simulate": {"result": {"temp_c": 18}}
        }],
        "messages": [
            {"role": "system", "content": "You are a weather agent."},
            {"role": "assistant", "content": "Hi! How can I help you today?"}
        ],
        "task": {
            "max_turns": 4,
            "answer": {"$contains": "18"},
            "user": {
                "instructions": "You want the weather in Paris.",
                "system": TAU2_STYLE_USER,
                "max_turns": 3,
                "model": "tau2-user"
            }
        }
    });
    let path = dir.path().join("greeted_live.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--models",
        agent.to_str().unwrap(),
        "--user-model",
        user.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let requests = pair.requests.lock().unwrap();
    let roles = |body: &Value| -> Vec<(String, String)> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let text = m["content"].as_str().unwrap_or_default().to_owned();
                (m["role"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    };
    // First the user, on its own prompt verbatim, answering the greeting.
    assert_eq!(
        roles(&requests[0]),
        [
            ("system".to_owned(), TAU2_STYLE_USER.to_owned()),
            (
                "user".to_owned(),
                "Hi! How can I help you today?".to_owned()
            )
        ]
    );
    // Then the agent: its prompt, its greeting, the user's first words.
    let agent_first = roles(&requests[1]);
    assert_eq!(
        agent_first[1..],
        [
            (
                "assistant".to_owned(),
                "Hi! How can I help you today?".to_owned()
            ),
            ("user".to_owned(), "Weather in Paris, please.".to_owned())
        ]
    );
    // Then the user again, its own words as its side, the answer as the
    // other's: it leaves with tau2's out-of-scope word.
    assert_eq!(requests.len(), 4, "{requests:?}");
    assert_eq!(
        roles(&requests[3])[2..],
        [
            (
                "assistant".to_owned(),
                "Weather in Paris, please.".to_owned()
            ),
            ("user".to_owned(), "It is 18 C in Paris.".to_owned())
        ]
    );
    assert_eq!(summary(&out, "openai-live")["final_success"], "1.0");
}

/// A shared responder (wiremock takes its responder by value).
struct ArcResponder<R>(std::sync::Arc<R>);

impl<R: Respond> Respond for ArcResponder<R> {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}

#[test]
fn a_user_whose_turns_or_script_run_out_is_judged_as_it_stands_when_told_to_judge() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |at_max_turns: &str| {
        json!({
            "name": format!("bounded_{at_max_turns}"),
            "tools": [
                {"mcp": {"command": [mcp_test_server().to_str().unwrap()]}, "only": ["lenient_echo"]}
            ],
            "messages": [{"role": "assistant", "content": "Hi! How can I help you today?"}],
            "task": {
                "max_turns": 2,
                "reference": [],
                "reference_answer": "Could you say more?",
                "user": {
                    "instructions": "You never finish.",
                    "max_turns": 1,
                    "at_max_turns": at_max_turns,
                    "script": ["I need help.", "Still here.", "And again."]
                },
                "final_state": {"probe": {
                    "tool": "lenient_echo",
                    "transcript": "transcript",
                    "result": {"transcript": {"ended_by": "max_steps", "messages": {"$present": true, "$example": []}}}
                }}
            }
        })
    };
    for at_max_turns in ["judge", "lose"] {
        std::fs::write(
            dir.path().join(format!("{at_max_turns}.json")),
            scenario(at_max_turns).to_string(),
        )
        .unwrap();
    }
    // A recording (a script) that runs out before its turns do: cut there.
    let mut recording = scenario("judge");
    recording["name"] = json!("bounded_recording");
    recording["task"]["user"]["max_turns"] = json!(5);
    recording["task"]["user"]["script"] = json!(["I need help."]);
    std::fs::write(dir.path().join("recording.json"), recording.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(dir.path().to_str().unwrap(), 1, &out);
    let err = stderr(&output);
    // "lose": the user never said it was done, the trial is lost to it.
    assert!(
        err.contains("bounded_lose trial 0: lost (user_simulator)"),
        "{err}"
    );
    assert!(!err.contains("bounded_judge trial 0: lost"), "{err}");
    // "judge": judged as it stands, ended by max_steps.
    assert_eq!(summary_of(&out, "bounded_judge")["final_success"], "1.0");
    assert_eq!(
        summary_of(&out, "bounded_recording")["final_success"],
        "1.0"
    );
}

fn summary_of(out: &Path, scenario: &str) -> std::collections::BTreeMap<String, String> {
    crate::csv_rows(&out.join("summary.csv"))
        .into_iter()
        .find(|row| row["scenario"] == scenario)
        .unwrap()
}

#[tokio::test]
async fn an_exchange_of_the_simulated_user_that_cannot_be_recorded_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("recording");
    let record = ["--record", recording.to_str().unwrap()];
    let first = dir.path().join("first");
    let server = MockServer::start().await;
    let args = live_user_run(&server, dir.path(), &first, &record).await;
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Every recorded file spoiled: no exchange of the next run can be kept.
    for entry in std::fs::read_dir(&recording).unwrap() {
        std::fs::write(entry.unwrap().path(), "not json").unwrap();
    }
    let second = dir.path().join("second");
    let args = live_user_run(&server, dir.path(), &second, &record).await;
    let output = toolgauge(args, Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Five agent turns and the user's two: each loss said, none swallowed.
    let said = stderr(&output).matches("--record: ").count();
    assert_eq!(said, 7, "{}", stderr(&output));
}

/// A live simulated user's requests spend the run's budget as the
/// agent's do: 35 tokens a request, four agent turns and the user's first
/// words fit in 200 (175), the agent's fifth turn would not; without the
/// user's two requests counted, the whole trial (five agent requests,
/// 175) would have fit.
#[tokio::test]
async fn a_simulated_users_requests_count_against_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let server = MockServer::start().await;
    let args = live_user_run(&server, dir.path(), &out, &["--max-tokens", "200"]).await;
    let output = toolgauge(args, Some(KEY)).await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("budget spent (175 of --max-tokens 200 tokens, over 5 request(s))"),
        "{said}"
    );
}
