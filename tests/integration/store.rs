//! The built-in store through a scenario: seeded from `state`, one copy per
//! trial, located errors for a bad `state` block.

use std::path::Path;

use serde_json::{Value, json};
use toolgauge::pipeline::{ExecOptions, Pipeline, SessionLog};
use toolgauge::provider::Provider;
use toolgauge::scenario::load_scenario;

fn scenario_file(dir: &Path, state: Value) -> std::path::PathBuf {
    let path = dir.join("refund.json");
    let scenario = json!({
        "name": "refund",
        "tools": ["store_get", "store_find", "store_put", "store_delete"],
        "state": state,
        "prompt": "Refund order o-1.",
        "expect": {"calls": [{"name": "store_get", "arguments": {"collection": "orders", "id": "o-1"}}]}
    });
    std::fs::write(&path, serde_json::to_string_pretty(&scenario).unwrap()).unwrap();
    path
}

/// An OpenAI reply making `calls` (name, arguments).
fn reply(calls: &[(&str, Value)]) -> Vec<u8> {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id": format!("c{i}"), "type": "function",
                   "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    serde_json::to_vec(
        &json!({"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]}),
    )
    .unwrap()
}

#[tokio::test]
async fn every_trial_gets_its_own_copy_of_the_scenario_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_file(
        dir.path(),
        json!({"orders": [{"id": "o-1", "status": "paid", "total": 40}]}),
    );
    let scenario = load_scenario(
        &path,
        &dir.path().join("sandboxes"),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap();
    let pipeline = Pipeline::new(scenario.registry.clone(), ExecOptions::default());
    let first = scenario.registry.new_state_seeded(1);
    let refund = reply(&[
        ("store_get", json!({"collection": "orders", "id": "o-1"})),
        (
            "store_put",
            json!({"collection": "orders", "record": {"id": "o-1", "status": "refunded", "total": 40}}),
        ),
    ]);
    let turn = pipeline
        .turn(Provider::OpenAi, &refund, &first, None::<&mut SessionLog>)
        .await
        .unwrap();
    assert!(turn.failures().is_empty(), "{:?}", turn.batch.results);
    // The read ran before the write: the write is a barrier.
    let read: Value = serde_json::from_str(&turn.batch.results[0].content).unwrap();
    assert_eq!(read["status"], "paid");
    assert_eq!(
        first.store_snapshot(),
        json!({"orders": [{"id": "o-1", "status": "refunded", "total": 40}]})
    );
    // Another trial starts from the scenario's state.
    let second = scenario.registry.new_state_seeded(2);
    assert_eq!(
        second.store_snapshot(),
        json!({"orders": [{"id": "o-1", "status": "paid", "total": 40}]})
    );
    let missing = reply(&[("store_get", json!({"collection": "refunds", "id": "r-1"}))]);
    let turn = pipeline
        .turn(Provider::OpenAi, &missing, &second, None::<&mut SessionLog>)
        .await
        .unwrap();
    assert_eq!(
        turn.batch.results[0].content,
        "Error: no collection \"refunds\"; the collections are orders"
    );
}

#[test]
fn a_state_block_with_a_repeated_id_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_file(
        dir.path(),
        json!({"orders": [{"id": "o-1"}, {"id": "o-1"}]}),
    );
    let error = load_scenario(
        &path,
        &dir.path().join("sandboxes"),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.ends_with("/state/orders/1/id: the id \"o-1\" is used twice in \"orders\""),
        "{error}"
    );
    assert!(error.contains("refund.json:"), "{error}");
}

#[tokio::test]
async fn a_simulated_result_is_filled_from_the_arguments_and_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lookup.json");
    let scenario = json!({
        "name": "lookup",
        "tools": [{
            "name": "order_status",
            "description": "The status of an order.",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
            "simulate": {"result": {"order": "{{args.order}}", "line": "order {{args.order}} is {{store.orders.o-1}}"}}
        }],
        "state": {"orders": [{"id": "o-1", "status": "paid"}]},
        "prompt": "Status of o-1?",
        "expect": {"calls": [{"name": "order_status", "arguments": {"order": "o-1"}}]}
    });
    std::fs::write(&path, scenario.to_string()).unwrap();
    let scenario = load_scenario(
        &path,
        &dir.path().join("sandboxes"),
        &toolgauge::tool::mcp::ToolServers::new(),
    )
    .unwrap();
    let pipeline = Pipeline::new(scenario.registry.clone(), ExecOptions::default());
    let state = scenario.registry.new_state();
    let turn = pipeline
        .turn(
            Provider::OpenAi,
            &reply(&[("order_status", json!({"order": "o-1"}))]),
            &state,
            None::<&mut SessionLog>,
        )
        .await
        .unwrap();
    let result: Value = serde_json::from_str(&turn.batch.results[0].content).unwrap();
    assert_eq!(
        result,
        json!({"order": "o-1", "line": "order o-1 is {\"id\":\"o-1\",\"status\":\"paid\"}"})
    );
}
