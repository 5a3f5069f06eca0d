//! The shipped suites agree with themselves: no prompt is graded two
//! ways. Two scenarios that give a model the same messages and the same
//! tools must each accept the calls the other names as correct, or a
//! model is right in one and wrong in the other for the same reply.

use std::collections::BTreeMap;

use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::scenario::{Expectation, Scenario, load_suites};
use toolgauge::tool::mcp::ToolServers;

const SHIPPED: [&str; 5] = [
    "scenarios/starter",
    "scenarios/agent",
    "scenarios/real",
    "scenarios/mcp",
    "scenarios/bfcl",
];

/// What a model is shown: the messages and each tool's name and schema.
fn shown(scenario: &Scenario) -> String {
    let tools: Vec<(String, String)> = scenario
        .registry
        .definitions()
        .map(|d| (d.name.clone(), d.parameters.to_string()))
        .collect();
    format!("{:?}|{tools:?}", scenario.prompt)
}

/// The calls a scenario names as correct (its examples).
fn correct_calls(expectation: &Expectation) -> Vec<ParsedCall> {
    expectation
        .expected_calls()
        .iter()
        .map(|call| {
            ParsedCall::Ok(ToolCall {
                id: "c".into(),
                name: call.name.clone(),
                arguments: serde_json::Value::Object(call.arguments.example())
                    .try_into()
                    .expect("an object"),
            })
        })
        .collect()
}

#[test]
fn no_prompt_of_the_shipped_suites_is_graded_two_ways() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let sandboxes = tempfile::tempdir().unwrap();
    let servers = ToolServers::new();
    let suites: Vec<_> = SHIPPED.iter().map(|s| root.join(s)).collect();
    let suite = load_suites(&suites, sandboxes.path(), &servers)
        .unwrap_or_else(|e| panic!("the shipped suites load: {e:?}"));
    let mut by_shown: BTreeMap<String, Vec<&Scenario>> = BTreeMap::new();
    for scenario in &suite.scenarios {
        // A task or BFCL's rules judge otherwise; a turn's calls only here.
        if scenario.task.is_none() && !matches!(scenario.expectation, Expectation::Bfcl(_)) {
            by_shown.entry(shown(scenario)).or_default().push(scenario);
        }
    }
    let mut contradictions = Vec::new();
    let mut compared = 0;
    for group in by_shown.values().filter(|g| g.len() > 1) {
        for a in group {
            let calls = correct_calls(&a.expectation);
            for b in group.iter().filter(|b| b.name != a.name) {
                compared += 1;
                let verdict = b.expectation.verdict(&calls);
                if verdict.failure().is_some() {
                    contradictions.push(format!(
                        "{}'s correct calls are {verdict:?} in {}",
                        a.name, b.name
                    ));
                }
            }
        }
    }
    assert!(
        compared > 0,
        "no two scenarios share a prompt: the check checked nothing"
    );
    assert!(contradictions.is_empty(), "{contradictions:#?}");
}

/// Every `pattern` under `schema`, with its JSON pointer.
fn patterns(schema: &serde_json::Value, at: String, found: &mut Vec<(String, String)>) {
    match schema {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                if key == "pattern"
                    && let Some(pattern) = value.as_str()
                {
                    found.push((format!("{at}/pattern"), pattern.to_owned()));
                }
                patterns(value, format!("{at}/{key}"), found);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                patterns(item, format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn the_suites_run_on_a_local_server_have_only_anchored_patterns() {
    // llama.cpp's server turns the tools' schemas into a grammar and
    // refuses the request (HTTP 400, "Pattern must start with '^' and end
    // with '$'") when a pattern is not anchored at both ends: every trial
    // of such a scenario was lost to it.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let sandboxes = tempfile::tempdir().unwrap();
    let servers = ToolServers::new();
    let suites = [root.join("scenarios/agent"), root.join("scenarios/real")];
    let suite = load_suites(&suites, sandboxes.path(), &servers).unwrap();
    let mut loose = Vec::new();
    for scenario in &suite.scenarios {
        for tool in scenario.registry.definitions() {
            let mut found = Vec::new();
            patterns(&tool.parameters, String::new(), &mut found);
            for (pointer, pattern) in found {
                if !(pattern.starts_with('^') && pattern.ends_with('$')) {
                    loose.push(format!(
                        "{} {}{pointer}: {pattern}",
                        scenario.name, tool.name
                    ));
                }
            }
        }
    }
    assert!(loose.is_empty(), "{loose:#?}");
}
