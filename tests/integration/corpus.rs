//! Every JSON response in the provider corpus parses without panic, and
//! those holding client tool calls yield exactly the calls they hold.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgauge::call::ParsedCall;
use toolgauge::provider::Provider;

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// (id, name, arguments) as the body holds them, read independently of the
/// parser under test.
type Expected = Vec<(String, String, Value)>;

fn expected_openai(body: &Value) -> Option<Expected> {
    let calls = body.pointer("/choices/0/message/tool_calls")?.as_array()?;
    Some(
        calls
            .iter()
            .filter(|c| c.get("type").is_none_or(|t| t == "function"))
            .map(|c| {
                let function = &c["function"];
                let arguments = match function.get("arguments") {
                    Some(Value::String(text)) if !text.trim().is_empty() => {
                        serde_json::from_str(text).unwrap()
                    }
                    _ => serde_json::json!({}),
                };
                (
                    c["id"].as_str().unwrap_or_default().to_owned(),
                    function["name"].as_str().unwrap().to_owned(),
                    arguments,
                )
            })
            .collect(),
    )
}

fn expected_anthropic(body: &Value) -> Option<Expected> {
    let blocks = body.get("content")?.as_array()?;
    Some(
        blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap().to_owned(),
                    b["name"].as_str().unwrap().to_owned(),
                    b["input"].clone(),
                )
            })
            .collect(),
    )
}

fn expected_gemini(body: &Value) -> Option<Expected> {
    let parts = body.pointer("/candidates/0/content/parts")?.as_array()?;
    Some(
        parts
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .map(|c| {
                (
                    c.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    c["name"].as_str().unwrap().to_owned(),
                    c.get("args")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({})),
                )
            })
            .collect(),
    )
}

fn expected_responses(body: &Value) -> Option<Expected> {
    let items = body.get("output")?.as_array()?;
    Some(
        items
            .iter()
            .filter(|item| item["type"] == "function_call")
            .map(|item| {
                let arguments = match item["arguments"].as_str() {
                    Some(text) if !text.trim().is_empty() => serde_json::from_str(text).unwrap(),
                    _ => serde_json::json!({}),
                };
                (
                    item["call_id"].as_str().unwrap().to_owned(),
                    item["name"].as_str().unwrap().to_owned(),
                    arguments,
                )
            })
            .collect(),
    )
}

fn check_folder(
    provider: Provider,
    dir: &Path,
    expected_of: fn(&Value) -> Option<Expected>,
) -> (usize, usize) {
    let (mut files, mut calls) = (0, 0);
    for path in json_files(dir) {
        let bytes = std::fs::read(&path).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let parsed = provider.parse_response(&bytes);
        files += 1;
        let Some(expected) = expected_of(&body) else {
            // Not this wire format (say, the Responses API): an error, not a panic.
            continue;
        };
        let parsed = parsed.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(parsed.calls.len(), expected.len(), "{}", path.display());
        for (call, (id, name, arguments)) in parsed.calls.iter().zip(&expected) {
            let ParsedCall::Ok(call) = call else {
                panic!("{}: malformed call {call:?}", path.display());
            };
            assert_eq!(&call.name, name, "{}", path.display());
            assert_eq!(&call.arguments, arguments, "{}", path.display());
            // As text too, so that the order of the members counts.
            assert_eq!(
                call.arguments.to_string(),
                arguments.to_string(),
                "{}",
                path.display()
            );
            if !id.is_empty() {
                assert_eq!(&call.id, id, "{}", path.display());
            } else {
                assert!(
                    !call.id.is_empty(),
                    "{}: a missing id must be generated",
                    path.display()
                );
            }
        }
        calls += expected.len();
    }
    (files, calls)
}

#[test]
fn every_corpus_response_parses_and_yields_the_calls_it_holds() {
    let root = crate::corpora().join("provider-responses");
    let (openai_files, openai_calls) =
        check_folder(Provider::OpenAi, &root.join("openai"), expected_openai);
    let (anthropic_files, anthropic_calls) = check_folder(
        Provider::Anthropic,
        &root.join("anthropic"),
        expected_anthropic,
    );
    let (gemini_files, gemini_calls) =
        check_folder(Provider::Gemini, &root.join("gemini"), expected_gemini);
    // The corpus README counts: 108 OpenAI-shaped tool calls in chat JSON,
    // 110 Anthropic tool_use blocks, 68 Gemini functionCall parts.
    assert_eq!(
        openai_calls, 108,
        "OpenAI tool calls in {openai_files} files"
    );
    assert_eq!(
        anthropic_calls, 110,
        "Anthropic tool_use blocks in {anthropic_files} files"
    );
    assert_eq!(
        gemini_calls, 68,
        "Gemini functionCall parts in {gemini_files} files"
    );
}

#[test]
fn every_recorded_responses_api_reply_yields_its_function_calls() {
    let root = crate::corpora().join("provider-responses/openai/responses");
    let (files, calls) = check_folder(Provider::OpenAiResponses, &root, expected_responses);
    // 77 function_call items in the 76 recorded Responses API bodies.
    assert_eq!((files, calls), (76, 77));
}

#[test]
fn no_corpus_body_makes_any_parser_panic() {
    let root = crate::corpora().join("provider-responses");
    let mut bodies = 0;
    for path in json_files(&root) {
        let bytes = std::fs::read(&path).unwrap();
        for provider in Provider::all() {
            let _ = provider.parse_response(&bytes);
            // Truncated bodies too: every prefix length class.
            let _ = provider.parse_response(&bytes[..bytes.len() / 2]);
        }
        bodies += 1;
    }
    assert!(bodies > 800, "read {bodies} bodies");
}
