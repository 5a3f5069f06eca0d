//! toolgauge's MCP client under the official conformance suite
//! (`@modelcontextprotocol/conformance` 0.1.10, installed by
//! `npm ci --prefix tests/mcp-conformance`): the suite starts each client
//! scenario's server, runs a toolgauge command with its URL, and judges
//! what the client did. The OAuth scenarios (`auth/...`) are not run:
//! toolgauge has no OAuth client (docs/real-tools.md says why).

use std::path::PathBuf;
use std::process::Command;

/// The command each scenario runs, the server's URL appended.
const SCENARIOS: &[(&str, &str)] = &[
    ("initialize", "tools list"),
    ("tools_call", "tools check --all --calls 1"),
    (
        "elicitation-sep1034-client-defaults",
        "tools check --all --calls 1 --elicit accept",
    ),
    ("sse-retry", "tools check --all --calls 1"),
];

fn suite() -> Result<PathBuf, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !crate::mcp::node_runs() {
        return Err("no node".into());
    }
    if !script.exists() {
        return Err(
            "tests/mcp-conformance/node_modules has no conformance suite (npm ci --prefix tests/mcp-conformance)"
                .into(),
        );
    }
    Ok(script)
}

#[test]
#[ignore = "needs Node and the MCP conformance suite: npm ci --prefix tests/mcp-conformance (.ci/run does, and runs this with --ignored)"]
fn the_official_conformance_suites_client_scenarios_pass_but_oauth() {
    let script = match suite() {
        Ok(script) => script,
        Err(why) => {
            panic!(
                "missing: the_official_conformance_suites_client_scenarios_pass_but_oauth: {why}"
            )
        }
    };
    // Every client scenario of the suite is either run here or OAuth's.
    let listed = Command::new("node")
        .arg(&script)
        .arg("list")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let client: Vec<&str> = listed
        .split("Client scenarios")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .collect();
    let ours: Vec<&str> = SCENARIOS.iter().map(|(s, _)| *s).collect();
    let unrun: Vec<&&str> = client
        .iter()
        .filter(|s| !s.starts_with("auth/") && !ours.contains(s))
        .collect();
    assert!(unrun.is_empty(), "client scenarios not run: {unrun:?}");
    assert!(client.len() > ours.len(), "{listed}");

    let results = tempfile::tempdir().unwrap();
    let toolgauge = env!("CARGO_BIN_EXE_toolgauge");
    for (scenario, command) in SCENARIOS {
        let output = Command::new("node")
            .arg(&script)
            .args(["client", "--scenario", scenario, "--command"])
            .arg(format!("{toolgauge} {command}"))
            .current_dir(results.path())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && said.contains("OVERALL: PASSED"),
            "{scenario}: {said}"
        );
        let passed = said
            .lines()
            .find(|l| l.starts_with("Passed: "))
            .unwrap_or_default();
        eprintln!("conformance {scenario}: {passed}");
    }
}
