//! No panics on hostile input: the three providers' parsers, the scenario
//! loader, the tool-definition checker and the pipeline, on arbitrary
//! bytes, arbitrary JSON and the shapes that break parsers (deep nesting,
//! huge numbers, invalid UTF-8, lone surrogates, 10 MB strings).

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use toolgauge::call::{Arguments, MalformedCall, ParsedCall, ToolCall};
use toolgauge::pipeline::{ExecOptions, Pipeline};
use toolgauge::provider::Provider;
use toolgauge::tool::{Registry, Sandbox, ToolDef, ToolEnv, check_definitions};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("type"),
            Just("object"),
            Just("tool_use"),
            Just("function"),
            Just("name"),
            Just("input")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("content".to_owned()),
                    Just("choices".to_owned()),
                    Just("message".to_owned()),
                    Just("tool_calls".to_owned()),
                    Just("function".to_owned()),
                    Just("arguments".to_owned()),
                    Just("candidates".to_owned()),
                    Just("parts".to_owned()),
                    Just("functionCall".to_owned()),
                    Just("args".to_owned()),
                    Just("name".to_owned()),
                    Just("id".to_owned()),
                    Just("input".to_owned()),
                    Just("properties".to_owned()),
                    Just("required".to_owned()),
                    Just("items".to_owned()),
                    Just("parameters".to_owned()),
                    ".{0,6}",
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A position a stream names: in range, far, negative, of another type.
fn position() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!("0")),
        Just(Value::Null),
    ]
}

/// What an event carries: a well-formed item, block or call, or anything.
fn carried() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(
            json!({"type": "function_call", "id": "i", "call_id": "c", "name": "a", "arguments": ""})
        ),
        Just(json!({"type": "message", "id": "i", "content": []})),
        Just(json!({"type": "tool_use", "id": "t", "name": "a", "input": {}})),
        Just(json!({"type": "text", "text": ""})),
        json_value(),
    ]
}

/// One event of a Responses or Anthropic stream, its fields hostile.
fn stream_event() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        Just("response.created"),
        Just("response.output_item.added"),
        Just("response.output_item.done"),
        Just("response.function_call_arguments.delta"),
        Just("response.function_call_arguments.done"),
        Just("response.output_text.delta"),
        Just("response.completed"),
        Just("message_start"),
        Just("content_block_start"),
        Just("content_block_delta"),
        Just("content_block_stop"),
        Just("message_delta"),
        Just("message_stop"),
    ];
    let delta_kind = prop_oneof![
        Just("input_json_delta"),
        Just("text_delta"),
        Just("thinking_delta"),
        Just("signature_delta"),
        Just("citations_delta"),
    ];
    let piece = prop_oneof![Just(json!("{\"a\": ")), Just(json!("1}")), json_value()];
    (
        kind,
        position(),
        position(),
        carried(),
        delta_kind,
        piece,
        any::<bool>(),
    )
        .prop_map(
            |(kind, index, output_index, carried, delta_kind, piece, object_delta)| {
                let delta = match object_delta {
                    true => json!({"type": delta_kind, "partial_json": piece, "text": piece,
                               "thinking": piece, "signature": piece, "stop_reason": piece}),
                    false => piece,
                };
                json!({"type": kind, "index": index, "output_index": output_index, "item_id": "i",
                   "item": carried, "content_block": carried, "message": carried,
                   "response": carried, "delta": delta, "arguments": carried, "usage": carried})
            },
        )
}

/// One chunk of a Gemini stream: a call whole or in Vertex's pieces, at
/// any path, or anything.
fn gemini_chunk() -> impl Strategy<Value = Value> {
    let path = prop_oneof![
        Just("$.a"),
        Just("$.a[0]"),
        Just("$.a[18446744073709551615]"),
        Just("$['a b'][3].c"),
        Just("$[2]"),
        Just("$..a"),
        Just(""),
    ];
    let call = (
        prop_oneof![Just(json!("f")), Just(Value::Null), json_value()],
        prop_oneof![Just(json!({})), json_value()],
        path,
        json_value(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, args, path, value, more, piece_more)| {
            json!({"name": name, "args": args, "willContinue": more, "partialArgs": [
                {"jsonPath": path, "stringValue": value, "willContinue": piece_more}]})
        });
    let part = prop_oneof![
        call.prop_map(|call| json!({"functionCall": call})),
        json_value().prop_map(|call| json!({"functionCall": call})),
        Just(json!({"text": "x"})),
        json_value(),
    ];
    (prop::collection::vec(part, 0..3), prop_oneof![Just(Value::Null), Just(json!("STOP"))])
        .prop_map(|(parts, finish)| json!({"candidates": [{"content": {"parts": parts}, "finishReason": finish}]}))
}

/// Replay `events` as `provider`'s stream, every call handed over early.
fn replay_hostile(provider: Provider, events: &[Value]) {
    let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let received = toolgauge::provider::stream::replay(
        provider,
        text.as_bytes(),
        std::time::Duration::ZERO,
        &[],
        |assembly, complete| {
            for k in complete {
                let _ = assembly.call(k);
            }
        },
    );
    let _ = received.assembled.map(|a| a.parsed);
}

proptest! {
    // One folder of regressions for the repository, the library's beside.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/tests/robustness.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn parsers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for provider in Provider::all() {
            let _ = provider.parse_response(&bytes);
        }
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_json(value in json_value()) {
        let body = serde_json::to_vec(&value).unwrap();
        for provider in Provider::all() {
            let _ = provider.parse_response(&body);
            let _ = provider.parse_tools(&value);
        }
    }

    #[test]
    fn streams_of_hostile_events_never_panic(
        events in prop::collection::vec(stream_event(), 0..12),
        chunks in prop::collection::vec(gemini_chunk(), 0..6),
    ) {
        replay_hostile(Provider::OpenAiResponses, &events);
        replay_hostile(Provider::Anthropic, &events);
        replay_hostile(Provider::Gemini, &chunks);
    }

    #[test]
    fn the_definition_checker_never_panics(value in json_value(), parameters in json_value()) {
        let candidates = [value.clone(), json!({"name": "t", "description": "d", "parameters": parameters})];
        for candidate in candidates {
            if let Ok(def) = serde_json::from_value::<ToolDef>(candidate) {
                let _ = check_definitions(&[def.clone(), def]);
            }
        }
    }

    #[test]
    fn the_scenario_loader_never_panics(value in json_value()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        let _ = toolgauge::scenario::load_scenario(&path, &dir.path().join("sandbox"), &toolgauge::tool::mcp::ToolServers::new());
    }

    #[test]
    fn the_pipeline_never_panics_on_any_call(
        calls in prop::collection::vec(
            (prop_oneof![Just("echo"), Just("math"), Just("sleep"), Just("read_file"), Just("write_file"), Just("list_dir"), Just("nope"), Just("")], json_value(), any::<bool>()),
            0..6,
        )
    ) {
        let dir = tempfile::tempdir().unwrap();
        let env = ToolEnv {
            sandbox: Some(Sandbox::new(dir.path()).unwrap()),
            ..ToolEnv::default()
        };
        let registry = Registry::builtins(&["echo", "math", "sleep", "read_file", "write_file", "list_dir"], env).unwrap();
        let pipeline = Pipeline::new(Arc::new(registry), ExecOptions::default());
        let calls: Vec<ParsedCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments, malformed))| {
                // Arguments that are not an object are a malformed call,
                // as Parse makes them.
                match Arguments::try_from(arguments) {
                    Ok(arguments) if !malformed => ParsedCall::Ok(ToolCall { id: format!("c{i}"), name: name.to_owned(), arguments }),
                    Ok(arguments) => ParsedCall::Malformed(MalformedCall { id: format!("c{i}"), name: name.to_owned(), raw_arguments: arguments.to_string(), problem: "broken".into() }),
                    Err(other) => ParsedCall::Malformed(MalformedCall { id: format!("c{i}"), name: name.to_owned(), raw_arguments: other.to_string(), problem: "not an object".into() }),
                }
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let batch = runtime.block_on(pipeline.run(&calls));
        prop_assert_eq!(batch.results.len(), calls.len());
        prop_assert!(batch.results.iter().all(|r| !r.content.is_empty()));
    }
}

#[test]
fn hostile_shapes_are_errors_not_panics() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!("{}1{}", "{\"content\":".repeat(50_000), "}".repeat(50_000));
    let huge_number = format!(
        "{{\"content\": [{{\"type\": \"tool_use\", \"id\": \"t\", \"name\": \"math\", \"input\": {{\"a\": 1{}}}}}]}}",
        "0".repeat(5000)
    );
    let lone_surrogate = r#"{"content": [{"type": "tool_use", "id": "t", "name": "echo", "input": {"message": "\ud800"}}]}"#;
    let mut invalid_utf8 = br#"{"content": [{"type": "text", "text": ""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, b'"', b'}', b']', b'}']);
    let big = format!(
        "{{\"content\": [{{\"type\": \"tool_use\", \"id\": \"t\", \"name\": \"echo\", \"input\": {{\"message\": \"{}\"}}}}]}}",
        "x".repeat(10 * 1024 * 1024)
    );
    for body in [
        deep.as_bytes(),
        deep_object.as_bytes(),
        huge_number.as_bytes(),
        lone_surrogate.as_bytes(),
        &invalid_utf8,
        big.as_bytes(),
    ] {
        for provider in Provider::all() {
            let _ = provider.parse_response(body);
        }
    }
    // The 10 MB string is a good call and comes through whole.
    let parsed = Provider::Anthropic.parse_response(big.as_bytes()).unwrap();
    let ParsedCall::Ok(call) = &parsed.calls[0] else {
        panic!("a good call")
    };
    assert_eq!(
        call.arguments.as_value()["message"].as_str().unwrap().len(),
        10 * 1024 * 1024
    );
    // Too deep is a clear error.
    assert!(Provider::OpenAi.parse_response(deep.as_bytes()).is_err());

    let dir = tempfile::tempdir().unwrap();
    for (i, text) in [deep.as_bytes(), deep_object.as_bytes(), &invalid_utf8]
        .iter()
        .enumerate()
    {
        let path = dir.path().join(format!("s{i}.json"));
        std::fs::write(&path, text).unwrap();
        assert!(
            toolgauge::scenario::load_scenario(
                &path,
                dir.path(),
                &toolgauge::tool::mcp::ToolServers::new()
            )
            .is_err()
        );
    }
}

/// A bad value of megabytes is named by an excerpt and its length, never
/// echoed whole (a 50 MB scenario once put 52 MB on stderr).
#[test]
fn messages_never_echo_a_huge_bad_value() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "v".repeat(5_000_000);
    let cases = [
        // A wrong type inside an inline tool (serde quotes the value).
        format!(
            r#"{{"name": "x", "prompt": "p", "expect": {{"no_call": true}},
"tools": [{{"name": "t", "description": "d", "parameters": {{"type": "object"}}, "timeout_ms": "{huge}"}}]}}"#
        ),
        // A scenario field of the wrong type (the schema quotes it).
        format!(
            r#"{{"name": "x", "prompt": "p", "expect": {{"no_call": true}}, "tools": [], "max_retries": "{huge}"}}"#
        ),
        // A built-in that does not exist.
        format!(
            r#"{{"name": "x", "prompt": "p", "expect": {{"no_call": true}}, "tools": ["{huge}"]}}"#
        ),
    ];
    for (i, text) in cases.iter().enumerate() {
        let path = dir.path().join(format!("s{i}.json"));
        std::fs::write(&path, text).unwrap();
        let output = crate::toolgauge(&[
            "run",
            path.to_str().unwrap(),
            "--out",
            dir.path().join(format!("out{i}")).to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "case {i}: {}",
            &stderr[..stderr.len().min(500)]
        );
        assert!(
            stderr.len() < 1_000,
            "case {i}: {} bytes on stderr",
            stderr.len()
        );
        assert!(stderr.contains("(5000000 bytes)"), "case {i}: {stderr}");
    }
}
