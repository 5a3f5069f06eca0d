//! Validators outside toolgauge, so users can fuzz their own tool servers:
//! a long-lived process speaking JSON Lines (`lines:`: one request per line
//! on its stdin, one verdict per line on its stdout), a command run once
//! per case (`cmd:`: the instance on stdin, exit 0 means valid), or an
//! HTTP endpoint (the instance as a POST body, 2xx means valid). Each case
//! has a bounded time; a validator that does not answer is an error, not a
//! verdict.

use std::io::{BufRead, BufWriter, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::transport::{Transport, TransportError, TransportSettings};

/// The default time one case may take.
pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(5);

/// Header (HTTP) and environment variable (command) naming the tool.
pub const TOOL_HEADER: &str = "x-toolgauge-tool";
pub const TOOL_ENV: &str = "TOOLGAUGE_TOOL";

pub enum ExternalValidator {
    /// One process for every case, through `sh -c`, speaking JSON Lines.
    Lines(Mutex<LineValidator>),
    /// Run through `sh -c`, once per case.
    Command { program: String, timeout: Duration },
    /// POSTed through the shared HTTP transport: rate limits and failing
    /// servers (429, 5xx) are retried, so they never read as a verdict.
    Http(Box<HttpValidator>),
}

/// An endpoint, and the transport and runtime its cases are sent with.
pub struct HttpValidator {
    url: String,
    transport: Transport,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
}

impl std::fmt::Debug for ExternalValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExternalValidator::Command { program, .. } => {
                f.debug_tuple("Command").field(program).finish()
            }
            ExternalValidator::Lines(lines) => {
                let program = lines.lock().map(|l| l.program.clone()).unwrap_or_default();
                f.debug_tuple("Lines").field(&program).finish()
            }
            ExternalValidator::Http(http) => f.debug_tuple("Http").field(&http.url).finish(),
        }
    }
}

/// A `--validator` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ValidatorSpecError {
    #[error("cmd: and lines: need a program, e.g. lines:./validate.py")]
    NoProgram,
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Client(#[from] crate::transport::ClientError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
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
    /// A `lines:` validator's process ended (or closed its stdout).
    #[error("{program:?} exited after answering {answered} instance(s)")]
    Died { program: String, answered: u64 },
    /// A `lines:` validator answered with something that is not a verdict.
    #[error(
        "{program:?} answered {line:?}: a verdict line is true, false or {{\"valid\": true|false, ...}}"
    )]
    NotAVerdict { program: String, line: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ExternalValidator {
    /// `cmd:PROGRAM` or an `http://` / `https://` URL; `None` otherwise.
    pub fn parse(
        spec: &str,
        timeout: Duration,
    ) -> Option<Result<ExternalValidator, ValidatorSpecError>> {
        if let Some(program) = spec.strip_prefix("lines:") {
            return Some(
                LineValidator::start(program, timeout)
                    .map(|v| ExternalValidator::Lines(Mutex::new(v))),
            );
        }
        if let Some(program) = spec.strip_prefix("cmd:") {
            return Some(if program.trim().is_empty() {
                Err(ValidatorSpecError::NoProgram)
            } else {
                Ok(ExternalValidator::Command {
                    program: program.to_owned(),
                    timeout,
                })
            });
        }
        if spec.starts_with("http://") || spec.starts_with("https://") {
            return Some(http_validator(spec, timeout));
        }
        None
    }

    /// Verdicts on `instances` as arguments of `tool`, in order: all of
    /// them, or those before a fault and the fault. A `lines:` process and
    /// an HTTP endpoint get many at once; a command, one after the other.
    pub fn accepts_all(
        &self,
        tool: &str,
        instances: &[Value],
    ) -> (Vec<bool>, Option<ExternalError>) {
        match self {
            ExternalValidator::Lines(lines) => match lines.lock() {
                Ok(mut lines) => lines.accepts_all(tool, instances),
                Err(_) => (
                    Vec::new(),
                    Some(std::io::Error::other("the validator's lock is poisoned").into()),
                ),
            },
            ExternalValidator::Http(http) => http.accepts_all(tool, instances),
            ExternalValidator::Command { program, timeout } => {
                let mut verdicts = Vec::with_capacity(instances.len());
                for instance in instances {
                    match run_command(program, *timeout, tool, instance) {
                        Ok(valid) => verdicts.push(valid),
                        Err(error) => return (verdicts, Some(error)),
                    }
                }
                (verdicts, None)
            }
        }
    }
}

/// What an HTTP validator's answer says of `instance`.
fn http_verdict<T>(
    url: &str,
    timeout: Duration,
    instance: &Value,
    sent: Result<T, TransportError>,
) -> Result<bool, ExternalError> {
    match sent {
        Ok(_) => Ok(true),
        // The server answered and refused the instance.
        Err(error) if error.status().is_some_and(|s| (400..500).contains(&s)) => Ok(false),
        Err(TransportError::Network {
            timed_out: true, ..
        }) => Err(ExternalError::Hung {
            what: url.to_owned(),
            timeout,
            instance: crate::excerpt::json_excerpt(instance),
        }),
        Err(error) => Err(ExternalError::Http {
            url: url.to_owned(),
            message: error.to_string(),
        }),
    }
}

/// Requests an HTTP validator has in flight at once.
pub const HTTP_CONCURRENCY: usize = 16;

impl HttpValidator {
    /// Verdicts on every instance, [`HTTP_CONCURRENCY`] requests in
    /// flight over kept-alive connections, in order; on a fault, the
    /// verdicts before it and the error.
    pub fn accepts_all(
        &self,
        tool: &str,
        instances: &[Value],
    ) -> (Vec<bool>, Option<ExternalError>) {
        use futures_util::StreamExt;
        let answers = futures_util::stream::iter(instances.iter().map(|instance| async move {
            let headers = [(TOOL_HEADER, tool.to_owned())];
            let body = super::wire::to_string(instance);
            let sent = self
                .transport
                .send_body(&self.url, &headers, body.as_bytes())
                .await;
            http_verdict(&self.url, self.timeout, instance, sent)
        }))
        .buffered(HTTP_CONCURRENCY);
        self.runtime.block_on(until_fault(answers))
    }
}

/// Verdicts in order until the first fault: those before it, and it.
pub async fn until_fault<E>(
    answers: impl futures_util::Stream<Item = Result<bool, E>>,
) -> (Vec<bool>, Option<E>) {
    use futures_util::StreamExt;
    let mut answers = std::pin::pin!(answers);
    let mut verdicts = Vec::new();
    while let Some(answer) = answers.next().await {
        match answer {
            Ok(valid) => verdicts.push(valid),
            Err(error) => return (verdicts, Some(error)),
        }
    }
    (verdicts, None)
}

/// An HTTP validator: one try per case within `timeout` (a hung server is
/// an error, soon), with rate limits and server errors retried.
fn http_validator(url: &str, timeout: Duration) -> Result<ExternalValidator, ValidatorSpecError> {
    let transport = Transport::new(&TransportSettings {
        timeout,
        max_attempts: 3,
        retry_base: Duration::from_millis(100),
        concurrency: HTTP_CONCURRENCY,
        requests_per_minute: None,
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ValidatorSpecError::Runtime)?;
    Ok(ExternalValidator::Http(Box::new(HttpValidator {
        url: url.to_owned(),
        transport,
        runtime,
        timeout,
    })))
}

fn run_command(
    program: &str,
    timeout: Duration,
    tool: &str,
    instance: &Value,
) -> Result<bool, ExternalError> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(program)
        .env(TOOL_ENV, tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own group: a timeout ends the shell and what it ran.
    let mut child =
        crate::child::own(&mut command)
            .spawn()
            .map_err(|source| ExternalError::Spawn {
                program: program.to_owned(),
                source,
            })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A validator that exits without reading is allowed.
        let _ = stdin.write_all(super::wire::to_string(instance).as_bytes());
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
                crate::child::kill_group(child.id());
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

/// A validator process kept alive over the whole run. Protocol: toolgauge
/// writes one line per case, `{"tool": NAME, "instance": VALUE}`; the
/// process answers one line per case, in order: `true` (valid), `false`,
/// or an object with a boolean `valid` (other fields are ignored).
pub struct LineValidator {
    program: String,
    child: Child,
    stdin: BufWriter<ChildStdin>,
    /// Lines the process wrote, read on their own thread so that a case
    /// can time out; the channel closes when its stdout ends or fails.
    lines: Receiver<String>,
    timeout: Duration,
    answered: u64,
}

impl LineValidator {
    fn start(program: &str, timeout: Duration) -> Result<LineValidator, ValidatorSpecError> {
        if program.trim().is_empty() {
            return Err(ValidatorSpecError::NoProgram);
        }
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = crate::child::own(&mut command).spawn().map_err(|source| {
            ValidatorSpecError::Spawn {
                program: program.to_owned(),
                source,
            }
        })?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped"));
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(LineValidator {
            program: program.to_owned(),
            child,
            stdin,
            lines,
            timeout,
            answered: 0,
        })
    }

    /// Verdicts on every instance, pipelined: a thread writes the requests
    /// while this one reads the answers. On a fault, the verdicts so far
    /// and the error; the process is stopped then.
    pub fn accepts_all(
        &mut self,
        tool: &str,
        instances: &[Value],
    ) -> (Vec<bool>, Option<ExternalError>) {
        let mut verdicts = Vec::with_capacity(instances.len());
        let LineValidator {
            stdin,
            lines,
            child,
            program,
            timeout,
            answered,
        } = self;
        let fault = std::thread::scope(|scope| {
            scope.spawn(|| {
                for instance in instances {
                    let request = serde_json::json!({"tool": tool, "instance": instance});
                    let written = super::wire::write(&mut *stdin, &request)
                        .and_then(|()| stdin.write_all(b"\n"));
                    if written.is_err() {
                        return;
                    }
                }
                let _ = stdin.flush();
            });
            for instance in instances {
                match verdict(lines, *timeout, program, instance) {
                    Ok(valid) => {
                        *answered += 1;
                        verdicts.push(valid);
                    }
                    Err(error) => {
                        // Unblocks the writer, whatever the process was doing.
                        crate::child::kill_group(child.id());
                        return Some(match error {
                            ExternalError::Died { program, .. } => ExternalError::Died {
                                program,
                                answered: *answered,
                            },
                            other => other,
                        });
                    }
                }
            }
            None
        });
        (verdicts, fault)
    }
}

/// The next verdict line of a `lines:` validator.
fn verdict(
    lines: &Receiver<String>,
    timeout: Duration,
    program: &str,
    instance: &Value,
) -> Result<bool, ExternalError> {
    let line = match lines.recv_timeout(timeout) {
        Ok(line) => line,
        Err(RecvTimeoutError::Disconnected) => {
            return Err(ExternalError::Died {
                program: program.to_owned(),
                answered: 0,
            });
        }
        Err(RecvTimeoutError::Timeout) => {
            return Err(ExternalError::Hung {
                what: program.to_owned(),
                timeout,
                instance: crate::excerpt::json_excerpt(instance),
            });
        }
    };
    let valid = match serde_json::from_str::<Value>(line.trim()) {
        Ok(Value::Bool(valid)) => Some(valid),
        Ok(Value::Object(object)) => object.get("valid").and_then(Value::as_bool),
        _ => None,
    };
    valid.ok_or_else(|| ExternalError::NotAVerdict {
        program: program.to_owned(),
        line: crate::excerpt::excerpt(&line).into_owned(),
    })
}

impl Drop for LineValidator {
    fn drop(&mut self) {
        crate::child::kill_group(self.child.id());
        let _ = self.child.wait();
    }
}
