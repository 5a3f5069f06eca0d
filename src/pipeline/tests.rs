use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::call::{ErrorKind, MalformedCall, ParsedCall, ToolCall};
use crate::tool::{ToolDef, ToolEnv, ToolSource};

fn simulated(name: &str, effect: &str, latency_ms: u64) -> ToolSource {
    let def: ToolDef = serde_json::from_value(json!({
        "name": name,
        "description": "simulated",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "effect": effect,
        "simulate": {"result": format!("{name} done"), "latency_ms": latency_ms}
    }))
    .unwrap();
    ToolSource::Defined(def)
}

fn pipeline(sources: Vec<ToolSource>, mode: ExecMode) -> Pipeline {
    let registry = crate::tool::Registry::new(sources, ToolEnv::default()).unwrap();
    Pipeline::new(
        Arc::new(registry),
        ExecOptions {
            mode,
            ..ExecOptions::default()
        },
    )
}

fn call(id: &str, name: &str, arguments: Value) -> ParsedCall {
    ParsedCall::Ok(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.try_into().unwrap(),
    })
}

fn reads_and_write() -> Vec<ToolSource> {
    vec![
        simulated("fetch", "read", 100),
        simulated("save", "write", 100),
    ]
}

#[tokio::test(start_paused = true)]
async fn three_reads_run_together_and_serial_mode_runs_them_in_turn() {
    let calls: Vec<ParsedCall> = (0..3)
        .map(|i| call(&format!("c{i}"), "fetch", json!({})))
        .collect();

    let batch = pipeline(reads_and_write(), ExecMode::Parallel)
        .run(&calls)
        .await;
    assert_eq!(batch.makespan, Duration::from_millis(100));
    assert_eq!(batch.serial_makespan(), Duration::from_millis(300));

    let batch = pipeline(reads_and_write(), ExecMode::Serial)
        .run(&calls)
        .await;
    assert_eq!(batch.makespan, Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn the_ideal_makespan_is_a_property_of_the_calls_not_of_the_mode() {
    // Two reads, a write, a read: ideally 100 + 100 + 100 ms.
    let calls = vec![
        call("r1", "fetch", json!({})),
        call("r2", "fetch", json!({})),
        call("w", "save", json!({})),
        call("r3", "fetch", json!({})),
    ];
    for mode in [ExecMode::Parallel, ExecMode::Serial] {
        let batch = pipeline(reads_and_write(), mode).run(&calls).await;
        assert_eq!(batch.ideal_makespan, Duration::from_millis(300), "{mode:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_in_the_middle_is_a_barrier() {
    let calls = vec![
        call("r1", "fetch", json!({})),
        call("w", "save", json!({})),
        call("r2", "fetch", json!({})),
    ];
    let batch = pipeline(reads_and_write(), ExecMode::Parallel)
        .run(&calls)
        .await;
    assert_eq!(batch.makespan, Duration::from_millis(300));

    // Two reads, a write, then a read: reads before the barrier overlap.
    let calls = vec![
        call("r1", "fetch", json!({})),
        call("r2", "fetch", json!({})),
        call("w", "save", json!({})),
        call("r3", "fetch", json!({})),
    ];
    let batch = pipeline(reads_and_write(), ExecMode::Parallel)
        .run(&calls)
        .await;
    assert_eq!(batch.makespan, Duration::from_millis(300));
    let starts: Vec<u128> = batch
        .results
        .iter()
        .map(|r| r.started.as_millis())
        .collect();
    assert_eq!(starts, [0, 0, 100, 200]);
}

#[tokio::test(start_paused = true)]
async fn results_come_back_in_call_order_whatever_finishes_first() {
    let sources = vec![
        simulated("slow", "read", 300),
        simulated("medium", "read", 200),
        simulated("fast", "read", 100),
    ];
    let calls = vec![
        call("a", "slow", json!({})),
        call("b", "medium", json!({})),
        call("c", "fast", json!({})),
    ];
    let batch = pipeline(sources, ExecMode::Parallel).run(&calls).await;
    let ids: Vec<&str> = batch.results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let elapsed: Vec<u128> = batch
        .results
        .iter()
        .map(|r| r.elapsed.as_millis())
        .collect();
    assert_eq!(elapsed, [300, 200, 100]);
    assert_eq!(batch.makespan, Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_bounded() {
    let registry =
        crate::tool::Registry::new(vec![simulated("fetch", "read", 100)], ToolEnv::default())
            .unwrap();
    let pipeline = Pipeline::new(
        Arc::new(registry),
        ExecOptions {
            max_concurrency: 2,
            ..ExecOptions::default()
        },
    );
    let calls: Vec<ParsedCall> = (0..5)
        .map(|i| call(&format!("c{i}"), "fetch", json!({})))
        .collect();
    let batch = pipeline.run(&calls).await;
    assert_eq!(
        batch.makespan,
        Duration::from_millis(300),
        "5 calls, 2 at a time"
    );
}

#[tokio::test(start_paused = true)]
async fn every_kind_of_failure_is_a_result_and_the_rest_still_run() {
    let hang: ToolDef = serde_json::from_value(json!({
        "name": "hang", "description": "never answers", "effect": "read", "timeout_ms": 50,
        "parameters": {"type": "object"},
        "simulate": {"failure": {"first": 1, "kind": "timeout"}}
    }))
    .unwrap();
    let mut sources = reads_and_write();
    sources.push(ToolSource::Builtin("math".into()));
    sources.push(ToolSource::Defined(hang));
    let calls = vec![
        ParsedCall::Malformed(MalformedCall {
            id: "p".into(),
            name: "fetch".into(),
            raw_arguments: "{".into(),
            problem: "the arguments are not valid JSON".into(),
        }),
        call("u", "fecth", json!({})),
        call("v", "fetch", json!({"n": "one"})),
        call("r", "math", json!({"operation": "divide", "a": 1, "b": 0})),
        call("t", "hang", json!({})),
        call("ok", "math", json!({"operation": "add", "a": 1, "b": 2})),
    ];
    let batch = pipeline(sources, ExecMode::Parallel).run(&calls).await;
    let kinds: Vec<Option<ErrorKind>> = batch.results.iter().map(|r| r.error_kind).collect();
    assert_eq!(
        kinds,
        [
            Some(ErrorKind::Parse),
            Some(ErrorKind::UnknownTool),
            Some(ErrorKind::Validation),
            Some(ErrorKind::Runtime),
            Some(ErrorKind::Timeout),
            None,
        ]
    );
    assert_eq!(
        batch.results[1].content,
        "Unknown tool \"fecth\". Available tools: fetch, save, math, hang."
    );
    assert_eq!(
        batch.results[2].content,
        "Validation failed:\n- /n: must be integer"
    );
    assert_eq!(
        batch.results[3].content,
        "Error: division by zero: b must not be 0"
    );
    assert!(
        batch.results[4]
            .content
            .starts_with("Error: timed out after 50 ms")
    );
    assert_eq!(batch.results[4].elapsed, Duration::from_millis(50));
    assert_eq!(batch.results[5].content, "3");
    assert!(batch.results.iter().all(|r| !r.content.is_empty()));
}

#[tokio::test]
async fn an_empty_success_gets_a_placeholder_not_empty_content() {
    // Found by the no-panic property test: list_dir of an empty folder.
    let registry = crate::tool::Registry::builtins(&["echo"], ToolEnv::default()).unwrap();
    let pipeline = Pipeline::new(Arc::new(registry), ExecOptions::default());
    let batch = pipeline
        .run(&[call("e", "echo", json!({"message": ""}))])
        .await;
    assert_eq!(
        batch.results[0].content,
        crate::provider::EMPTY_RESULT_PLACEHOLDER
    );
    assert!(!batch.results[0].is_error());
}

#[tokio::test]
async fn long_output_is_truncated_with_a_marker() {
    let registry = crate::tool::Registry::builtins(&["echo"], ToolEnv::default()).unwrap();
    let pipeline = Pipeline::new(
        Arc::new(registry),
        ExecOptions {
            output_limit: 10,
            ..ExecOptions::default()
        },
    );
    let batch = pipeline
        .run(&[call("e", "echo", json!({"message": "x".repeat(25)}))])
        .await;
    assert_eq!(
        batch.results[0].content,
        format!("{}\n[output truncated: 15 of 25 bytes cut]", "x".repeat(10))
    );
}

#[tokio::test(start_paused = true)]
async fn the_log_holds_whole_lines_two_per_call_under_64_concurrent_calls() {
    let pipeline = pipeline(
        vec![
            simulated("fetch", "read", 10),
            ToolSource::Builtin("echo".into()),
        ],
        ExecMode::Parallel,
    );
    let registry_pipeline = Pipeline::new(
        Arc::new(
            crate::tool::Registry::new(vec![simulated("fetch", "read", 10)], ToolEnv::default())
                .unwrap(),
        ),
        ExecOptions {
            max_concurrency: 64,
            ..ExecOptions::default()
        },
    );
    let calls: Vec<ParsedCall> = (0..64)
        .map(|i| call(&format!("c{i}"), "fetch", json!({"n": i})))
        .collect();
    let mut log = SessionLog::new(Vec::new());
    for p in [&registry_pipeline, &pipeline] {
        let batch = p.run(&calls).await;
        log.record(&calls, &batch).unwrap();
    }
    let text = String::from_utf8(log.into_inner()).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is whole JSON"))
        .collect();
    assert!(text.ends_with('\n'));
    assert_eq!(entries.len(), 2 * 2 * 64);
    let mut previous_id: Option<&str> = None;
    for pair in entries.chunks(2) {
        let (call_entry, result_entry) = (&pair[0], &pair[1]);
        assert_eq!(call_entry["type"], "tool_call");
        assert_eq!(result_entry["type"], "tool_result");
        assert_eq!(result_entry["parentId"], call_entry["id"]);
        assert_eq!(result_entry["callId"], call_entry["callId"]);
        assert_eq!(call_entry["parentId"].as_str(), previous_id);
        previous_id = result_entry["id"].as_str();
    }
    let first_result = &entries[1];
    assert_eq!(first_result["tool"], "fetch");
    assert_eq!(first_result["isError"], false);
    assert_eq!(first_result["errorKind"], Value::Null);
    assert_eq!(first_result["elapsedUs"], 10_000);
}

#[tokio::test]
async fn the_log_records_error_kinds_and_raw_arguments_of_malformed_calls() {
    let pipeline = pipeline(vec![ToolSource::Builtin("echo".into())], ExecMode::Parallel);
    let calls = vec![
        ParsedCall::Malformed(MalformedCall {
            id: "p".into(),
            name: "echo".into(),
            raw_arguments: "{\"message\":".into(),
            problem: "broken".into(),
        }),
        call("v", "echo", json!({"message": 3})),
    ];
    let batch = pipeline.run(&calls).await;
    let mut log = SessionLog::new(Vec::new());
    log.record(&calls, &batch).unwrap();
    let text = String::from_utf8(log.into_inner()).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries[0]["arguments"], "{\"message\":");
    assert_eq!(entries[1]["errorKind"], "parse");
    assert_eq!(entries[2]["arguments"], json!({"message": 3}));
    assert_eq!(entries[3]["errorKind"], "validation");
    assert_eq!(entries[3]["isError"], true);
    assert_eq!(entries[0]["id"], "e1");
    assert!(entries[0]["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
}

/// Hand `calls` over one by one, each after its wait, then close.
async fn hand_over(
    sender: tokio::sync::mpsc::UnboundedSender<crate::call::EarlyCall>,
    calls: &[(u64, ParsedCall)],
    then_ms: u64,
) {
    for (k, (wait_ms, call)) in calls.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(*wait_ms)).await;
        sender.send((k, call.clone())).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(then_ms)).await;
}

#[tokio::test(start_paused = true)]
async fn calls_run_early_start_when_complete_and_a_write_waits_for_what_came_before() {
    let pipeline = pipeline(reads_and_write(), ExecMode::Parallel);
    let state = pipeline.registry().new_state();
    let calls = vec![
        call("r1", "fetch", json!({})),
        call("w", "save", json!({})),
        call("r2", "fetch", json!({})),
    ];
    // Complete at 50, 60 and 400 ms; the reply ends at 500 ms.
    let arriving = [
        (50, calls[0].clone()),
        (10, calls[1].clone()),
        (340, calls[2].clone()),
    ];
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut run = pipeline.early(&state);
    let handed = async move { hand_over(sender, &arriving, 100).await };
    futures_util::join!(handed, run.take(receiver));
    assert_eq!(run.ran(), 3);
    let batch = run.finish(&calls).await;
    let starts: Vec<u64> = batch
        .results
        .iter()
        .map(|r| r.started.as_millis() as u64)
        .collect();
    // r1 at once; the write after r1 ends; r2 the moment it is complete.
    assert_eq!(starts, [50, 150, 400]);
    assert!(batch.results.iter().all(|r| r.error_kind.is_none()));
    assert_eq!(batch.makespan, Duration::from_millis(450));
    let complete = [50, 60, 400].map(Duration::from_millis);
    assert_eq!(
        pipeline.ideal_early(&calls, &batch.results, &complete),
        Duration::from_millis(500)
    );
    // Waiting for the whole reply: 500 ms, then 300 ms of calls.
    assert_eq!(batch.ideal_makespan, Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn a_call_the_reply_changed_after_it_ran_early_runs_again_as_the_reply_says() {
    let pipeline = pipeline(reads_and_write(), ExecMode::Parallel);
    let state = pipeline.registry().new_state();
    let early = call("c1", "fetch", json!({"n": 1}));
    let own = call("c1", "fetch", json!({"n": 12}));
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut run = pipeline.early(&state);
    let handed = async move { hand_over(sender, &[(10, early)], 10).await };
    futures_util::join!(handed, run.take(receiver));
    let batch = run.finish(std::slice::from_ref(&own)).await;
    assert_eq!(batch.results.len(), 1);
    // Run again once the early run (10..110 ms) ended, as the reply says.
    assert_eq!(batch.results[0].started, Duration::from_millis(110));
    assert_eq!(batch.results[0].elapsed, Duration::from_millis(100));
}
