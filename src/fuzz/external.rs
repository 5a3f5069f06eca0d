//! Validators outside toolgauge, so users can fuzz their own tool servers:
//! a command (one JSON instance on stdin, exit 0 means valid) or an HTTP
//! endpoint (the instance as a POST body, 2xx means valid). Each case has a
//! bounded time; a validator that does not answer is an error, not a verdict.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The default time one case may take.
pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(5);

/// Header (HTTP) and environment variable (command) naming the tool.
pub const TOOL_HEADER: &str = "x-toolgauge-tool";
pub const TOOL_ENV: &str = "TOOLGAUGE_TOOL";

#[derive(Debug)]
pub enum ExternalValidator {
    /// Run through `sh -c`.
    Command { program: String, timeout: Duration },
    Http {
        url: String,
        client: reqwest::blocking::Client,
        timeout: Duration,
    },
}

/// A validator that could not give a verdict.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// `sh` could not run the program: 127 not found, 126 not executable.
    #[error("cannot run {program:?}: {}", if *code == 127 { "no such program (the shell's exit code 127)" } else { "not executable (the shell's exit code 126)" })]
    NotRunnable { program: String, code: i32 },
    #[error("{what} did not answer within {} ms on {instance}", timeout.as_millis())]
    Hung {
        what: String,
        timeout: Duration,
        instance: String,
    },
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ExternalValidator {
    /// `cmd:PROGRAM` or an `http://` / `https://` URL; `None` otherwise.
    pub fn parse(spec: &str, timeout: Duration) -> Option<Result<ExternalValidator, String>> {
        if let Some(program) = spec.strip_prefix("cmd:") {
            return Some(if program.trim().is_empty() {
                Err("cmd: needs a program, e.g. cmd:./validate.sh".to_owned())
            } else {
                Ok(ExternalValidator::Command {
                    program: program.to_owned(),
                    timeout,
                })
            });
        }
        if spec.starts_with("http://") || spec.starts_with("https://") {
            return Some(
                reqwest::blocking::Client::builder()
                    .timeout(timeout)
                    .build()
                    .map(|client| ExternalValidator::Http {
                        url: spec.to_owned(),
                        client,
                        timeout,
                    })
                    .map_err(|e| format!("cannot make an HTTP client: {e}")),
            );
        }
        None
    }

    /// Does the validator accept `instance` as arguments of `tool`?
    pub fn accepts(&self, tool: &str, instance: &Value) -> Result<bool, ExternalError> {
        match self {
            ExternalValidator::Command { program, timeout } => {
                run_command(program, *timeout, tool, instance)
            }
            ExternalValidator::Http {
                url,
                client,
                timeout,
            } => {
                let response = client
                    .post(url)
                    .header(TOOL_HEADER, tool)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(instance.to_string())
                    .send()
                    .map_err(|e| {
                        if e.is_timeout() {
                            ExternalError::Hung {
                                what: url.clone(),
                                timeout: *timeout,
                                instance: crate::excerpt::json_excerpt(instance),
                            }
                        } else {
                            ExternalError::Http {
                                url: url.clone(),
                                message: crate::transport::error_chain(&e),
                            }
                        }
                    })?;
                Ok(response.status().is_success())
            }
        }
    }
}

fn run_command(
    program: &str,
    timeout: Duration,
    tool: &str,
    instance: &Value,
) -> Result<bool, ExternalError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(program)
        .env(TOOL_ENV, tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| ExternalError::Spawn {
            program: program.to_owned(),
            source,
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A validator that exits without reading is allowed.
        let _ = stdin.write_all(instance.to_string().as_bytes());
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait()? {
            // The shell's own codes for a program it could not run: a
            // verdict of "invalid" here would be a false kill.
            Some(status) if matches!(status.code(), Some(126 | 127)) => {
                return Err(ExternalError::NotRunnable {
                    program: program.to_owned(),
                    code: status.code().unwrap_or_default(),
                });
            }
            Some(status) => return Ok(status.success()),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ExternalError::Hung {
                    what: program.to_owned(),
                    timeout,
                    instance: crate::excerpt::json_excerpt(instance),
                });
            }
            // Polling a child process: there is no async runtime here.
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}
