//! MCP overhead: one `tools/call` through toolgauge (the registry's MCP
//! backend: lookup, the call, result mapping, measures) against a raw
//! rmcp client loop, on the same test server, side by side.
//!
//! Needs the test server: `cargo build --release --example
//! mcp_test_server` (or the debug one `cargo test` builds).

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use mimalloc::MiMalloc;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolgauge::tool::mcp::{McpServerSpec, ToolServers};
use toolgauge::tool::{Registry, ToolEnv, ToolSource};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn test_server() -> Option<PathBuf> {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join("examples/mcp_test_server"))
        .find(|p| p.exists())
}

fn bench(c: &mut Criterion) {
    let Some(server) = test_server() else {
        eprintln!(
            "mcp: skipped: build the test server first (cargo build --release --example mcp_test_server)"
        );
        return;
    };
    eprintln!("mcp: test server {}", server.display());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let arguments = json!({"a": 20, "b": 22});
    let call_arguments: toolgauge::call::Arguments =
        arguments.clone().try_into().expect("an object");

    // Raw rmcp: a client of its own, a server process of its own.
    let raw = runtime.block_on(async {
        let command = tokio::process::Command::new(&server);
        ().serve(rmcp::transport::TokioChildProcess::new(command).unwrap())
            .await
            .unwrap()
    });
    let params =
        CallToolRequestParams::new("add").with_arguments(arguments.as_object().unwrap().clone());

    // Through toolgauge: the registry's backend, on another server process.
    let spec = McpServerSpec {
        command: vec![server.display().to_string(), "--bench".into()],
        ..McpServerSpec::default()
    };
    // Stopped when the bench ends.
    let servers = ToolServers::new();
    let tools = servers
        .open(&spec)
        .unwrap()
        .tools(Some(&["add".to_owned()]), &[], None, true)
        .unwrap();
    let registry = Registry::new(
        tools
            .into_iter()
            .map(|(def, backend)| ToolSource::Backend(def, backend))
            .collect(),
        ToolEnv::default(),
    )
    .unwrap();
    let add = registry.lookup("add").unwrap();
    let state = registry.new_state();
    assert_eq!(
        runtime
            .block_on(registry.execute(add, &call_arguments, &state))
            .unwrap()
            .text,
        "42"
    );

    let mut group = c.benchmark_group("mcp");
    group.bench_function("raw_rmcp_call", |b| {
        b.iter(|| black_box(runtime.block_on(raw.call_tool(params.clone())).unwrap()))
    });
    group.bench_function("toolgauge_call", |b| {
        b.iter(|| {
            black_box(
                runtime
                    .block_on(registry.execute(add, &call_arguments, &state))
                    .unwrap(),
            )
        })
    });
    group.finish();
    drop(runtime);
}

criterion_group!(benches, bench);
criterion_main!(benches);
