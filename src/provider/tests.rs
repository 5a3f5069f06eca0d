use std::time::Duration;

use serde_json::{Value, json};

use super::wire::{NESTING_LIMIT, sonic_reads_as_serde_json};
use super::*;
use crate::call::{ErrorKind, MalformedCall};
use crate::call::{ParsedCall, ToolCall, ToolResult};

fn body(value: Value) -> Vec<u8> {
    serde_json::to_vec(&value).unwrap()
}

fn ok(call: &ParsedCall) -> &ToolCall {
    match call {
        ParsedCall::Ok(call) => call,
        ParsedCall::Malformed(m) => panic!("expected a good call, got {m:?}"),
    }
}

fn malformed(call: &ParsedCall) -> &MalformedCall {
    match call {
        ParsedCall::Malformed(call) => call,
        ParsedCall::Ok(c) => panic!("expected a malformed call, got {c:?}"),
    }
}

#[test]
fn anthropic_yields_client_calls_and_text_only() {
    let response = body(json!({
        "type": "message", "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "x"},
            {"type": "text", "text": "Let me look."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"message": "hi"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "tool_use", "id": "toolu_2", "name": "math", "input": {"operation": "add", "a": 1, "b": 2}}
        ],
        "stop_reason": "tool_use"
    }));
    let parsed = Provider::Anthropic.parse_response(&response).unwrap();
    assert_eq!(parsed.text, "Let me look.");
    assert_eq!(parsed.calls.len(), 2);
    assert_eq!(ok(&parsed.calls[0]).id, "toolu_1");
    assert_eq!(
        ok(&parsed.calls[1]).arguments,
        json!({"operation": "add", "a": 1, "b": 2})
    );
}

#[test]
fn openai_broken_arguments_make_one_malformed_call_and_the_others_stay() {
    let response = body(json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{\"message\": \"hi\""}},
                {"id": "call_2", "type": "function", "function": {"name": "echo", "arguments": "{\"message\": \"ok\"}"}},
                {"id": "call_3", "type": "function", "function": {"arguments": "{}"}},
                {"id": "call_4", "type": "function", "function": {"name": "echo", "arguments": "[1, 2]"}},
                {"id": "call_5", "function": {"name": "list_dir"}},
                {"id": "", "type": "function", "function": {"name": "echo", "arguments": ""}},
                {"id": "ct_1", "type": "custom", "custom": {"name": "grammar", "input": "x"}}
            ]
        }}]
    }));
    let parsed = Provider::OpenAi.parse_response(&response).unwrap();
    assert_eq!(
        parsed.calls.len(),
        6,
        "the custom tool call is not a function call"
    );
    let broken = malformed(&parsed.calls[0]);
    assert_eq!(broken.name, "echo");
    assert_eq!(broken.raw_arguments, "{\"message\": \"hi\"");
    assert!(
        broken
            .problem
            .starts_with("the arguments are not valid JSON"),
        "{}",
        broken.problem
    );
    assert_eq!(ok(&parsed.calls[1]).arguments, json!({"message": "ok"}));
    assert_eq!(
        malformed(&parsed.calls[2]).problem,
        "the call has no tool name"
    );
    assert_eq!(
        malformed(&parsed.calls[3]).problem,
        "the arguments must be a JSON object, not an array"
    );
    // No `arguments` key, or an empty string: a call with no arguments.
    assert_eq!(ok(&parsed.calls[4]).arguments, json!({}));
    let generated = ok(&parsed.calls[5]);
    assert!(
        generated.id.starts_with(GENERATED_ID_PREFIX),
        "{}",
        generated.id
    );
    assert_eq!(generated.arguments, json!({}));
}

#[test]
fn gemini_ids_are_made_stable_and_thoughts_are_not_text() {
    let response = body(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "thinking...", "thought": true},
            {"text": "Calling two tools."},
            {"functionCall": {"name": "echo", "args": {"message": "a"}}},
            {"functionCall": {"name": "echo", "args": {"message": "b"}}},
            {"functionCall": {"id": "fc_given", "name": "math", "args": {"operation": "add", "a": 1, "b": 1}}}
        ]}, "finishReason": "STOP"}]
    }));
    let first = Provider::Gemini.parse_response(&response).unwrap();
    let again = Provider::Gemini.parse_response(&response).unwrap();
    assert_eq!(first, again, "the same body gives the same ids");
    assert_eq!(first.text, "Calling two tools.");
    let ids: Vec<&str> = first.calls.iter().map(ParsedCall::id).collect();
    assert_ne!(ids[0], ids[1]);
    assert!(ids[0].starts_with(GENERATED_ID_PREFIX));
    assert_eq!(ids[2], "fc_given");
}

#[test]
fn a_name_of_the_wrong_type_is_one_malformed_call() {
    let response = body(json!({"content": [
        {"type": "tool_use", "id": "t1", "name": 42, "input": {}},
        {"type": "tool_use", "id": "t2", "name": "echo", "input": null},
        {"type": "tool_use", "id": "t3", "name": "echo", "input": {"message": "fine"}}
    ]}));
    let parsed = Provider::Anthropic.parse_response(&response).unwrap();
    assert_eq!(
        malformed(&parsed.calls[0]).problem,
        "the call has no tool name"
    );
    assert_eq!(
        malformed(&parsed.calls[1]).problem,
        "the arguments must be a JSON object, not null"
    );
    assert_eq!(ok(&parsed.calls[2]).arguments, json!({"message": "fine"}));
}

#[test]
fn bodies_that_are_not_responses_are_one_clear_error() {
    for provider in Provider::all() {
        let not_json = provider.parse_response(b"{\"choices\": [").unwrap_err();
        assert!(
            matches!(not_json, ResponseError::NotJson { line: 1, .. }),
            "{not_json}"
        );
        let wrong = provider.parse_response(b"{\"hello\": 1}").unwrap_err();
        assert!(
            matches!(wrong, ResponseError::NotAResponse { .. }),
            "{wrong}"
        );
        let array = provider.parse_response(b"[1, 2]").unwrap_err();
        assert!(
            matches!(array, ResponseError::NotAResponse { .. }),
            "{array}"
        );
    }
    let api = Provider::Anthropic
        .parse_response(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
    assert_eq!(
        api.to_string(),
        "the Anthropic Messages API answered with an error: Overloaded"
    );
    let api = Provider::OpenAi
        .parse_response(
            br#"{"error":{"message":"Invalid API key","type":"invalid_request_error"}}"#,
        )
        .unwrap_err();
    assert_eq!(
        api.to_string(),
        "the OpenAI Chat Completions API answered with an error: Invalid API key"
    );
}

fn results() -> Vec<ToolResult> {
    vec![
        ToolResult {
            call_id: "id_1".into(),
            name: "echo".into(),
            content: String::new(),
            error_kind: None,
            started: Duration::ZERO,
            elapsed: Duration::ZERO,
            images: Vec::new(),
        },
        ToolResult {
            call_id: "id_2".into(),
            name: "math".into(),
            content: "Validation failed:\n- /a: must be number".into(),
            error_kind: Some(ErrorKind::Validation),
            started: Duration::ZERO,
            elapsed: Duration::ZERO,
            images: Vec::new(),
        },
    ]
}

#[test]
fn openai_results_are_tool_messages() {
    let messages = Provider::OpenAi.format_results(&results());
    assert_eq!(
        messages,
        [
            json!({"role": "tool", "tool_call_id": "id_1", "content": EMPTY_RESULT_PLACEHOLDER}),
            json!({"role": "tool", "tool_call_id": "id_2", "content": "Validation failed:\n- /a: must be number"}),
        ]
    );
}

#[test]
fn anthropic_results_are_one_user_message_with_is_error() {
    let messages = Provider::Anthropic.format_results(&results());
    assert_eq!(
        messages,
        [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "id_1", "content": EMPTY_RESULT_PLACEHOLDER, "is_error": false},
            {"type": "tool_result", "tool_use_id": "id_2", "content": "Validation failed:\n- /a: must be number", "is_error": true}
        ]})]
    );
}

#[test]
fn gemini_results_put_errors_in_response_error() {
    let mut results = results();
    results[0].call_id = format!("{GENERATED_ID_PREFIX}00_0");
    let messages = Provider::Gemini.format_results(&results);
    assert_eq!(
        messages,
        [json!({"role": "user", "parts": [
            {"functionResponse": {"name": "echo", "response": {"result": EMPTY_RESULT_PLACEHOLDER}}},
            {"functionResponse": {"id": "id_2", "name": "math", "response": {"error": "Validation failed:\n- /a: must be number"}}}
        ]})]
    );
}

#[test]
fn tool_definitions_round_trip_through_every_format() {
    let spec = |name: &str, parameters: Value| FunctionSpec {
        name: name.to_owned(),
        description: format!("The {name} tool."),
        parameters,
    };
    let expected = [
        spec(
            "echo",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        spec(
            "math",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        ),
        spec("write_file", json!({"type": "object"})),
    ];
    for provider in Provider::all() {
        let formatted = provider.format_tools(&expected);
        assert_eq!(
            provider.parse_tools(&formatted).unwrap(),
            expected,
            "{provider}"
        );
    }
    let openai = Provider::OpenAi.format_tools(&expected[..1]);
    assert_eq!(openai[0]["type"], "function");
    assert_eq!(openai[0]["function"]["name"], "echo");
    let anthropic = Provider::Anthropic.format_tools(&expected[..1]);
    assert_eq!(anthropic[0]["input_schema"]["type"], "object");
    let gemini = Provider::Gemini.format_tools(&expected[..1]);
    assert_eq!(gemini[0]["functionDeclarations"][0]["name"], "echo");
}

#[test]
fn responses_round_trip_through_every_format() {
    let calls = [
        ParsedCall::Ok(ToolCall {
            id: "call_a".into(),
            name: "echo".into(),
            arguments: json!({"message": "hi \"there\""}).try_into().unwrap(),
        }),
        ParsedCall::Ok(ToolCall {
            id: "call_b".into(),
            name: "math".into(),
            arguments: json!({"operation": "add", "a": 1.5, "b": -2})
                .try_into()
                .unwrap(),
        }),
    ];
    for provider in Provider::all() {
        // Text and calls, calls alone, text alone, nothing.
        for (text, calls) in [
            ("some text", &calls[..]),
            ("", &calls[..]),
            ("only \"text\"\n", &[][..]),
            ("", &[][..]),
        ] {
            let mut written = Vec::new();
            provider.write_response(text, calls, &mut written);
            let parsed = provider.parse_response(&written).unwrap();
            assert_eq!(parsed.text, text, "{provider}");
            assert_eq!(parsed.calls, calls, "{provider}");
        }
    }
}

#[test]
fn malformed_calls_stay_malformed_through_a_format_round_trip() {
    let calls = vec![ParsedCall::Malformed(MalformedCall {
        id: "call_x".into(),
        name: "echo".into(),
        raw_arguments: "{\"message\": ".into(),
        problem: String::new(),
    })];
    for provider in Provider::all() {
        let parsed = provider
            .parse_response(&body(provider.format_response("", &calls)))
            .unwrap();
        assert!(
            matches!(parsed.calls[0], ParsedCall::Malformed(_)),
            "{provider}"
        );
    }
}

#[test]
fn result_texts_read_back_what_return_wrote_in_every_format() {
    for provider in Provider::all() {
        let mut wire = Vec::new();
        provider.write_results(&results(), &mut wire);
        assert_eq!(
            provider.result_texts(&wire),
            [
                EMPTY_RESULT_PLACEHOLDER,
                "Validation failed:\n- /a: must be number"
            ],
            "{provider}"
        );
    }
    assert!(Provider::OpenAi.result_texts(b"[]").is_empty());
}

#[test]
fn reasoning_tokens_are_read_from_each_formats_usage_block() {
    let chat = Provider::OpenAi.usage(&serde_json::json!({"usage": {
        "prompt_tokens": 30, "completion_tokens": 12,
        "completion_tokens_details": {"reasoning_tokens": 8}}}));
    assert_eq!((chat.output_tokens, chat.reasoning_tokens), (12, 8));
    // Gemini counts thoughts apart from the reply; both are billed output.
    let gemini = Provider::Gemini.usage(&serde_json::json!({"usageMetadata": {
        "promptTokenCount": 30, "candidatesTokenCount": 4, "thoughtsTokenCount": 8}}));
    assert_eq!((gemini.output_tokens, gemini.reasoning_tokens), (12, 8));
    let anthropic = Provider::Anthropic.usage(&serde_json::json!({"usage": {
        "input_tokens": 30, "output_tokens": 12}}));
    assert_eq!(anthropic.reasoning_tokens, 0);
}

#[test]
fn cached_input_tokens_are_read_from_each_formats_usage_block() {
    use serde_json::json;
    let chat = Provider::OpenAi.usage(&json!({"usage": {
        "prompt_tokens": 30, "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 24}}}));
    let responses = Provider::OpenAiResponses.usage(&json!({"usage": {
        "input_tokens": 30, "output_tokens": 2,
        "input_tokens_details": {"cached_tokens": 24}}}));
    // Anthropic counts the cache apart from input_tokens; the input is all three.
    let anthropic = Provider::Anthropic.usage(&json!({"usage": {
        "input_tokens": 2, "cache_read_input_tokens": 24,
        "cache_creation_input_tokens": 4, "output_tokens": 2}}));
    let gemini = Provider::Gemini.usage(&json!({"usageMetadata": {
        "promptTokenCount": 30, "candidatesTokenCount": 2, "cachedContentTokenCount": 24}}));
    for usage in [chat, responses, anthropic, gemini] {
        assert_eq!(
            (usage.input_tokens, usage.cached_tokens),
            (30, 24),
            "{usage:?}"
        );
    }
    let prices = crate::call::Prices {
        input_per_mtok: 2.0,
        output_per_mtok: 8.0,
        cached_input_per_mtok: Some(0.5),
        cache_write_per_mtok: None,
    };
    // (6 x 2 + 24 x 0.5 + 2 x 8) / 1e6
    assert!((prices.cost(chat) - 40e-6).abs() < 1e-12);
    let no_cached_price = crate::call::Prices {
        cached_input_per_mtok: None,
        ..prices
    };
    assert!((no_cached_price.cost(chat) - 76e-6).abs() < 1e-12);
    // Anthropic's 4 written tokens at 1.25 x 2, unless a price is given:
    // (2 x 2 + 24 x 0.5 + 4 x 2.5 + 2 x 8) / 1e6
    assert_eq!(anthropic.cache_write_tokens, 4);
    assert!((prices.cost(anthropic) - 42e-6).abs() < 1e-12);
    let write_price = crate::call::Prices {
        cache_write_per_mtok: Some(4.0),
        ..prices
    };
    assert!((write_price.cost(anthropic) - 48e-6).abs() < 1e-12);
}

#[test]
fn a_usage_block_of_an_odd_shape_counts_nothing_and_rejects_nothing() {
    // Counts that are strings, negative, fractional or objects, details
    // that are not objects: each counts 0 and the rest of the block is read.
    let odd = [
        (
            Provider::OpenAi,
            json!({"choices": [{"message": {"content": "hi"}}],
            "usage": {"prompt_tokens": "30", "completion_tokens": 12,
                "completion_tokens_details": "none", "prompt_tokens_details": {"cached_tokens": -1}}}),
        ),
        (
            Provider::OpenAiResponses,
            json!({"output": [],
            "usage": {"input_tokens": 30.5, "output_tokens": 12,
                "output_tokens_details": [8], "input_tokens_details": null}}),
        ),
        (
            Provider::Anthropic,
            json!({"type": "message", "content": [],
            "usage": {"input_tokens": {"n": 3}, "output_tokens": 12, "cache_read_input_tokens": true}}),
        ),
        (
            Provider::Gemini,
            json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}}],
            "usageMetadata": {"promptTokenCount": [30], "candidatesTokenCount": 12}}),
        ),
    ];
    for (provider, reply) in odd {
        let parsed = provider.parse_response(&body(reply.clone())).unwrap();
        let expected = crate::call::Usage {
            output_tokens: 12,
            ..Default::default()
        };
        assert_eq!(parsed.usage, expected, "{provider}");
        // A reply kept as JSON is read by the same block.
        assert_eq!(provider.usage(&reply), expected, "{provider}");
    }
    // A usage block that is not an object at all.
    let parsed = Provider::Anthropic
        .parse_response(&body(
            json!({"type": "message", "content": [], "usage": "n/a"}),
        ))
        .unwrap();
    assert_eq!(parsed.usage, crate::call::Usage::default());
}

/// The corpus's bodies, every one.
fn corpus_bodies() -> Vec<(std::path::PathBuf, Vec<u8>)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpora/provider-responses");
    let mut bodies = Vec::new();
    walk(&root, &mut bodies);
    bodies
}

#[test]
fn sonic_rs_reads_every_corpus_body_it_is_given_as_serde_json_does() {
    let mut read = 0;
    for (path, bytes) in corpus_bodies() {
        let Ok(expected) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if !sonic_reads_as_serde_json(&bytes) {
            continue;
        }
        let value: Value = sonic_rs::from_slice(&bytes).unwrap();
        // As text, so that the order of the members counts too.
        assert_eq!(
            value.to_string(),
            expected.to_string(),
            "{}",
            path.display()
        );
        read += 1;
    }
    // Of the 808 bodies, 37 hold a number that starts `-0` and 3 more than
    // 128 brackets: serde_json reads those.
    assert_eq!(read, 768, "sonic-rs read {read} corpus bodies");
}

#[test]
fn bodies_sonic_rs_would_read_otherwise_are_left_to_serde_json() {
    assert!(sonic_reads_as_serde_json(
        br#"{"a":[1,{"b":-1.5,"c":-10}]}"#
    ));
    assert!(!sonic_reads_as_serde_json(br#"{"a":-0}"#));
    assert!(!sonic_reads_as_serde_json(br#"{"a":[-0.0]}"#));
    assert!(!sonic_reads_as_serde_json(br#"{"a":-0e3}"#));
    assert!(!sonic_reads_as_serde_json(br#"{"a":-0"#));
    assert!(sonic_reads_as_serde_json(
        br#"{"model":"gpt-4o-2024-08-06"}"#
    ));
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(sonic_reads_as_serde_json(nested(NESTING_LIMIT).as_bytes()));
    assert!(!sonic_reads_as_serde_json(
        nested(NESTING_LIMIT + 1).as_bytes()
    ));
}

#[test]
fn a_negative_zero_argument_keeps_its_sign() {
    let arguments = r#"{"a":-0,"b":-0.0,"c":[-0.0]}"#;
    let body = format!(
        r#"{{"content":[{{"type":"tool_use","id":"t","name":"math","input":{arguments}}}]}}"#
    );
    let parsed = Provider::Anthropic.parse_response(body.as_bytes()).unwrap();
    let expected: Value = serde_json::from_str(arguments).unwrap();
    assert_eq!(
        ok(&parsed.calls[0]).arguments.to_string(),
        expected.to_string()
    );
    assert!(expected["b"].as_f64().unwrap().is_sign_negative());
}

#[test]
fn a_body_sonic_rs_refuses_is_worded_by_serde_json() {
    let error = Provider::Anthropic
        .parse_response(br#"{"content": [}"#)
        .unwrap_err();
    let ResponseError::NotJson {
        line,
        column,
        message,
    } = error
    else {
        panic!("not a JSON error: {error:?}")
    };
    assert_eq!((line, column), (1, 14));
    assert_eq!(message, "expected value");
}

#[test]
fn an_anthropic_block_that_names_a_field_twice_is_refused_by_either_reader() {
    let body = br#"{"content":[{"type":"tool_use","id":"a","id":"b","name":"echo","input":{}}]}"#;
    let error = Provider::Anthropic.parse_response(body).unwrap_err();
    assert!(
        error.to_string().contains("duplicate field `id`"),
        "{error}"
    );
    // A block of another type, or blocks of unknown fields, are read past.
    let body = br#"{"content":[{"type":"image","source":{"data":"x"}},{"type":"text","text":"hi","citations":[]},{"type":"tool_use","id":"c","name":"echo","input":{"m":1},"caller":{}}]}"#;
    let parsed = Provider::Anthropic.parse_response(body).unwrap();
    assert_eq!(parsed.text, "hi");
    assert_eq!(ok(&parsed.calls[0]).id, "c");
    assert_eq!(ok(&parsed.calls[0]).arguments, json!({"m": 1}));
}

#[test]
fn a_lone_surrogate_is_read_as_serde_json_reads_it() {
    for escape in [r"\ud800", r"\udc00", r"\ud800\u0041", r"\ud83d\ude00"] {
        let body = format!(
            r#"{{"content":[{{"type":"tool_use","id":"t","name":"echo","input":{{"message":"{escape}"}}}}]}}"#
        );
        let by_serde_json = serde_json::from_str::<Value>(&body).map(|v| v.to_string());
        let parsed = Provider::Anthropic.parse_response(body.as_bytes());
        match (by_serde_json, parsed) {
            (Ok(_), Ok(parsed)) => {
                let expected: Value =
                    serde_json::from_str(&format!(r#"{{"message":"{escape}"}}"#)).unwrap();
                assert_eq!(ok(&parsed.calls[0]).arguments, expected, "{escape}");
            }
            (Err(_), Err(error)) => {
                assert!(
                    matches!(error, ResponseError::NotJson { .. }),
                    "{escape}: {error}"
                )
            }
            (expected, parsed) => panic!("{escape}: serde_json {expected:?}, Parse {parsed:?}"),
        }
    }
}

/// `results()` with a tool's image on the first.
fn results_with_an_image() -> Vec<ToolResult> {
    let mut results = results();
    results[0].content = "[image: image/png, 3 bytes]".into();
    results[0].images = vec![crate::call::Image {
        mime_type: "image/png".into(),
        data: "AAAA".into(),
    }];
    results
}

#[test]
fn a_tools_image_goes_as_an_image_part_in_every_format() {
    let url = "data:image/png;base64,AAAA";
    let openai = Provider::OpenAi.format_results(&results_with_an_image());
    // A tool message holds text only: the image follows as the user's.
    assert_eq!(openai.len(), 3);
    assert_eq!(
        openai[2],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The images call id_1 returned:"},
            {"type": "image_url", "image_url": {"url": url}}
        ]})
    );
    let anthropic = Provider::Anthropic.format_results(&results_with_an_image());
    assert_eq!(
        anthropic[0]["content"][0]["content"],
        json!([
            {"type": "text", "text": "[image: image/png, 3 bytes]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
        ])
    );
    let responses = Provider::OpenAiResponses.format_results(&results_with_an_image());
    assert_eq!(
        responses[0]["output"],
        json!([
            {"type": "input_text", "text": "[image: image/png, 3 bytes]"},
            {"type": "input_image", "image_url": url}
        ])
    );
    let gemini = Provider::Gemini.format_results(&results_with_an_image());
    assert_eq!(
        gemini[0]["parts"][0]["functionResponse"]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}])
    );
    // What the model reads of each result is unchanged.
    for provider in Provider::all() {
        let mut wire = Vec::new();
        provider.write_results(&results_with_an_image(), &mut wire);
        assert_eq!(
            provider.result_texts(&wire),
            [
                "[image: image/png, 3 bytes]",
                "Validation failed:\n- /a: must be number"
            ],
            "{provider}"
        );
    }
}
