//! What an MCP tool sends back, held to its own `outputSchema`: a result
//! that breaks it loses the trial as the tool's fault (`bad_output`),
//! never the model's, and is counted per server and per cell.

use serde_json::{Value, json};

use crate::conversation::{mcp_test_server, scripted_run};
use crate::csv_rows;
use crate::live::stderr;

fn weather_scenario(name: &str, tool: &str) -> Value {
    json!({
        "name": name,
        "tools": [{"mcp": {"command": [mcp_test_server().to_str().unwrap()]}, "only": [tool]}],
        "prompt": "What is the weather in Paris?",
        "expect": {"calls": [{"name": tool, "arguments": {"city": "Paris"}}]}
    })
}

#[test]
fn a_result_that_breaks_its_output_schema_is_the_tools_fault_and_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    for (name, tool) in [("kept", "weather"), ("broken", "weather_broken")] {
        std::fs::write(
            suite.join(format!("{name}.json")),
            weather_scenario(name, tool).to_string(),
        )
        .unwrap();
    }
    let out = dir.path().join("out");
    let output = scripted_run(suite.to_str().unwrap(), 2, &out);
    // Lost trials fail the run: the broken tool measured nothing.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("lost (bad_output)") && err.contains("weather_broken broke its output schema"),
        "{err}"
    );
    assert!(err.contains("/temp_c"), "the violation is located: {err}");

    let summary = csv_rows(&out.join("summary.csv"));
    let cell = |name: &str| {
        summary
            .iter()
            .find(|r| r["scenario"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(cell("kept")["final_success"], "1.0");
    assert_eq!(cell("broken")["bad_outputs"], "2");
    assert_eq!(cell("broken")["trials"], "0", "never the model's");
    assert_eq!(cell("broken")["failures_runtime"], "0");
    let sources = csv_rows(&out.join("tool_sources.csv"));
    let bad: u64 = sources
        .iter()
        .map(|s| s["bad_outputs"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(bad, 2);
    let log = std::fs::read_to_string(out.join("session.jsonl")).unwrap();
    assert!(log.contains("\"errorKind\":\"bad_output\""), "{log}");
}

/// `tools check`'s row for `tool`: calls, results, error results, bad
/// outputs, timeouts.
fn checked_row(table: &str, tool: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.starts_with(&format!("| {tool} |")))
        .unwrap_or_else(|| panic!("no row for {tool}: {table}"))
        .split('|')
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn tools_check_calls_each_read_only_tool_and_finds_the_broken_output() {
    let server = mcp_test_server();
    let output = crate::toolgauge(&[
        "tools",
        "check",
        &format!("mcp:{}", server.display()),
        "--calls",
        "3",
    ]);
    let table = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{table}{}", stderr(&output));
    // calls, results, error results, bad outputs, server failures, timeouts
    assert_eq!(
        checked_row(&table, "weather")[1..7],
        ["3", "3", "0", "0", "0", "0"]
    );
    let broken = checked_row(&table, "weather_broken");
    assert_eq!(broken[1..7], ["3", "0", "0", "3", "0", "0"]);
    assert!(broken[7].contains("/temp_c"), "{broken:?}");
    // Writes are not called unless allowed.
    assert!(!table.contains("| delete_everything |"), "{table}");
    assert!(stderr(&output).contains("delete_everything"));
}

/// A server that crashes on every call was counted as the tool's own
/// error results, exit 0: a false green. Its failures are the server's
/// now, counted apart, and fail the check.
#[test]
fn tools_check_fails_on_a_server_that_crashes_on_every_call() {
    let server = mcp_test_server();
    let output = crate::toolgauge(&[
        "tools",
        "check",
        &format!("mcp:{}", server.display()),
        "--calls",
        "2",
        "--only",
        "crash",
        "--allow",
        "crash",
    ]);
    let table = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{table}{}", stderr(&output));
    let row = checked_row(&table, "crash");
    assert_eq!(row[1..7], ["2", "0", "0", "0", "2", "0"], "{table}");
    assert!(stderr(&output).contains("had their server fail"));
}

#[test]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
fn the_reference_servers_structured_content_matches_its_output_schema() {
    let script = match crate::mcp::server_everything() {
        Ok(script) => script,
        Err(why) => {
            panic!(
                "missing: the_reference_servers_structured_content_matches_its_output_schema: {why}"
            )
        }
    };
    let output = crate::toolgauge(&[
        "tools",
        "check",
        &format!("mcp:node {} stdio", script.display()),
        "--calls",
        "3",
        "--only",
        "get-structured-content",
    ]);
    let table = String::from_utf8_lossy(&output.stdout).into_owned();
    // get-structured-content declares an outputSchema and keeps to it.
    let row = checked_row(&table, "get-structured-content");
    assert_eq!(
        row[1..7],
        ["3", "3", "0", "0", "0", "0"],
        "{table}{}",
        stderr(&output)
    );
}

#[test]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
fn images_resources_and_links_reach_the_model_as_lines_it_can_read() {
    let script = match crate::mcp::server_everything() {
        Ok(script) => script,
        Err(why) => {
            panic!(
                "missing: images_resources_and_links_reach_the_model_as_lines_it_can_read: {why}"
            )
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let calls = [
        ("get-tiny-image", json!({})),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
        ),
        (
            "get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 2}),
        ),
        ("get-resource-links", json!({"count": 2})),
    ];
    let scenario = json!({
        "name": "content_kinds",
        "tools": [{
            "mcp": {"command": ["node", script.to_str().unwrap(), "stdio"]},
            "only": ["get-tiny-image", "get-resource-reference", "get-resource-links"]
        }],
        "prompt": "Fetch them all.",
        "expect": {"calls": calls.iter().map(|(name, arguments)| json!({"name": name, "arguments": arguments})).collect::<Vec<_>>()}
    });
    let path = dir.path().join("content_kinds.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = scripted_run(path.to_str().unwrap(), 1, &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results: Vec<String> = std::fs::read_to_string(out.join("session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["content"].as_str().unwrap().to_owned())
        .collect();
    let all = results.join("\n");
    assert!(all.contains("[image: image/png, "), "{all}");
    // An embedded text resource as its text; a binary one as what it is.
    assert!(
        all.contains("[resource demo://resource/dynamic/text/1]\nResource 1: "),
        "{all}"
    );
    assert!(
        all.contains("[resource demo://resource/dynamic/blob/2: text/plain, "),
        "{all}"
    );
    assert!(all.contains("[resource link: "), "{all}");
    // No base64 reaches the model: the tiny image's data starts so.
    assert!(!all.contains("iVBORw0KGgo"), "{all}");
}

#[test]
fn check_tools_names_an_output_schema_that_does_not_compile() {
    let server = mcp_test_server();
    let output = crate::toolgauge(&[
        "check-tools",
        &format!("mcp:{} --bad-output-schema", server.display()),
    ]);
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("weather_unchecked: /metadata/mcp_output_schema:")
            && err.contains("outputSchema does not compile (\"(\" is not a \"regex\")"),
        "{err}"
    );
    assert!(err.contains("1 problem(s)"), "only that tool: {err}");
}

/// The second request a live model (Anthropic's format, on a mock
/// server) sends after calling server-everything's `get-tiny-image`, its
/// model file given `api_extra`.
async fn request_after_the_image(script: &std::path::Path, api_extra: Value) -> Value {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let provider = "anthropic";
    let server = MockServer::start().await;
    let mut call = crate::live::reply(provider, json!({}));
    call["content"][1]["name"] = json!("get-tiny-image");
    for body in [call, crate::live::text_reply(provider, "A tiny image.")] {
        Mock::given(method("POST"))
            .and(path(crate::live::endpoint(provider)))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = crate::live::base_url(provider, &server);
    let model = crate::live::model_file(dir.path(), provider, &base, api_extra);
    let suite = dir.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    let scenario = json!({
        "name": "tiny_image",
        "tools": [{"mcp": {"command": ["node", script.to_str().unwrap(), "stdio"]},
                   "only": ["get-tiny-image"], "read": ["get-tiny-image"]}],
        "prompt": "Show me the tiny image.",
        "task": {"max_turns": 3, "milestones": [{"name": "get-tiny-image", "arguments": {}}]}
    });
    std::fs::write(suite.join("tiny_image.json"), scenario.to_string()).unwrap();
    let out = dir.path().join("out");
    let args = crate::live::run_args(&suite, &model, &out, &[]);
    let output = crate::live::toolgauge(args, Some(crate::live::KEY)).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    serde_json::from_slice(&requests[1].body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Node and server-everything: npm ci --prefix tests/mcp (.ci/run does, and runs this with --ignored)"]
async fn a_tools_image_reaches_a_model_that_takes_images_as_an_image_part() {
    let script = match crate::mcp::server_everything() {
        Ok(script) => script,
        Err(why) => {
            panic!(
                "missing: a_tools_image_reaches_a_model_that_takes_images_as_an_image_part: {why}"
            )
        }
    };
    let result = |request: &Value| {
        let messages = request["messages"].as_array().unwrap();
        messages.last().unwrap()["content"][0]["content"].clone()
    };
    let taking = request_after_the_image(&script, json!({"images": true})).await;
    let content = result(&taking);
    let shown = crate::excerpt(&content.to_string());
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .contains("[image: image/png, "),
        "{shown}"
    );
    assert_eq!(content[1]["type"], "image", "{shown}");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert!(
        content[1]["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo"),
        "the server's PNG, whole: {shown}"
    );
    // A model not said to take images reads the line only.
    let text_only = request_after_the_image(&script, json!({})).await;
    let content = result(&text_only);
    let text = content.as_str().expect("a text result, no parts");
    assert!(
        text.contains("[image: image/png, ") && !text.contains("iVBORw0KGgo"),
        "{}",
        crate::excerpt(text)
    );
}
