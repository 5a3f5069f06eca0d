//! The anchors' workload (../shared/anchors/gen_workload.js), shared by the
//! benches so that Rust and Node measure the same inputs. Included with
//! `#[path]` by each bench that needs it.

// A bench says on stderr what workload it could not find.
#![allow(clippy::print_stderr)]
// Each bench that includes this file uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One workload call as gen_workload.js writes it.
pub struct WorkloadCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub expect_valid: bool,
}

pub struct Workload {
    /// `{"echo": schema, "math": schema}`.
    pub schemas: Value,
    pub calls: Vec<WorkloadCall>,
    /// The Anthropic response with 3 tool_use blocks, as bytes.
    pub response: Vec<u8>,
}

/// Load the workload from $TOOLGAUGE_WORKLOAD_DIR, or generate it with Node
/// into target/anchor-workload. `None` (with a note) when neither works.
pub fn load() -> Option<Workload> {
    let dir = match std::env::var_os("TOOLGAUGE_WORKLOAD_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => generate()?,
    };
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    let (Some(schemas), Some(calls), Some(response)) = (
        read("schemas.json"),
        read("workload.json"),
        read("response.json"),
    ) else {
        eprintln!("workload files missing in {}", dir.display());
        return None;
    };
    let calls: Vec<Value> = serde_json::from_slice(&calls).ok()?;
    Some(Workload {
        schemas: serde_json::from_slice(&schemas).ok()?,
        calls: calls
            .into_iter()
            .map(|c| WorkloadCall {
                id: c["id"].as_str().unwrap_or_default().to_owned(),
                name: c["name"].as_str().unwrap_or_default().to_owned(),
                expect_valid: c["expect_valid"].as_bool().unwrap_or_default(),
                input: c["input"].clone(),
            })
            .collect(),
        response,
    })
}

fn generate() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("../shared/anchors/gen_workload.js");
    let out = root.join("target/anchor-workload");
    if out.join("workload.json").exists() {
        return Some(out);
    }
    std::fs::create_dir_all(&out).ok()?;
    let status = Command::new("node").arg(&script).current_dir(&out).status();
    match status {
        Ok(s) if s.success() => Some(out),
        _ => {
            eprintln!(
                "cannot generate the anchor workload (needs node and {}); set TOOLGAUGE_WORKLOAD_DIR",
                script.display()
            );
            None
        }
    }
}
