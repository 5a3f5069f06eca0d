//! One integration-test binary; each module is a topic.

// Benches, tests and examples say what they measured, skipped or served.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod architecture;
mod batch;
mod bfcl;
mod bfcl_import;
mod bfcl_memory;
mod bfcl_multi_turn;
mod bfcl_oracle;
mod bfcl_published;
mod bfcl_tables;
mod bfcl_web;
mod browser;
mod budget;
mod chains;
mod cli;
mod conformance;
mod conversation;
mod corpus;
mod credentials;
mod docs;
mod file_graph;
mod harness;
mod hostile;
mod live;
mod mcp;
mod mcp_asks;
mod mcp_conformance;
mod mcp_output;
mod mcp_resources;
mod mock_executor;
mod otlp;
mod phoenix;
mod processes;
mod prompt_cache;
mod rate_limits;
mod real_model;
mod real_servers;
mod responses;
mod robustness;
mod run;
mod sandbox;
mod scores;
mod self_correction;
mod shard_examples;
mod snapshots;
mod store;
mod stream_timing;
mod streams;
mod suites;
mod tau2;
mod tau2_judge;
mod tau2_telecom;
mod user_tools;

use std::path::PathBuf;
use std::process::{Command, Output};

/// Run the `toolgauge` binary from the repository root.
pub fn toolgauge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// A CSV report's rows, each by column name.
pub fn csv_rows(path: &std::path::Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|record| {
            let record = record.unwrap();
            headers
                .iter()
                .zip(record.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

/// Fail, showing the command's stderr, unless it exited with 0.
#[track_caller]
pub fn assert_success(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The shared corpora beside the repository (`../shared/corpora`).
pub fn corpora() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora");
    assert!(
        dir.is_dir(),
        "{} is missing: these tests read the public corpora from ../shared/corpora",
        dir.display()
    );
    dir
}

/// The start of `text`, for a failure message that would hold megabytes.
pub(crate) fn excerpt(text: &str) -> String {
    text.chars().take(400).collect()
}
