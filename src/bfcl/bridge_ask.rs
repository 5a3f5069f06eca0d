//! What the bridge says when asked at import (`--agentic-prompt`,
//! `--memory-backends`): a short run of it, under a deadline, its output
//! the answer.

use std::process::Command;
use std::time::Duration;

/// How long the bridge may take to answer (it imports BFCL).
const DEADLINE: Duration = Duration::from_secs(120);

/// Why the bridge gave no answer.
#[derive(Debug, thiserror::Error)]
#[error("the bridge {command:?} did not answer {flag}: {problem}")]
pub struct BridgeError {
    pub command: String,
    pub flag: String,
    pub problem: String,
}

/// The bridge's output when started with `flag`.
pub fn ask(bridge: &[String], flag: &str) -> Result<String, BridgeError> {
    let fail = |problem: String| BridgeError {
        command: bridge.join(" "),
        flag: flag.to_owned(),
        problem,
    };
    let mut command = Command::new(&bridge[0]);
    command.args(&bridge[1..]).arg(flag);
    let output = crate::child::output_within(&mut command, DEADLINE)
        .map_err(|e| fail(e.to_string()))?
        .ok_or_else(|| fail(format!("still running after {} s", DEADLINE.as_secs())))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() || text.trim().is_empty() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail = stderr.lines().last().unwrap_or_default();
        return Err(fail(format!("{} {tail}", output.status)));
    }
    Ok(text)
}
