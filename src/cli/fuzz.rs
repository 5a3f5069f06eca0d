//! `toolgauge fuzz`: generated valid and invalid arguments for each tool,
//! against the built-in validator or the user's own.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::{CliError, EXIT_FAILED};
use crate::fuzz::external::DEFAULT_CASE_TIMEOUT;
use crate::fuzz::run::{FuzzError, FuzzRequest, FuzzRun};
use crate::fuzz::session::replay;
use crate::fuzz::wire;
use crate::tool::mcp::ToolServers;
use crate::tool::{Registry, ToolEnv};

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// A JSON array of tool definitions, or an MCP server (`mcp:COMMAND
    /// ARGS...` over stdio, `mcp:http://HOST:PORT/mcp`), whose own
    /// validation is fuzzed by default (`--validator server`).
    #[arg(long, value_name = "TOOLS.json|mcp:SERVER")]
    pub tools: String,
    /// Valid and invalid instances per tool (each).
    #[arg(long, default_value_t = 100)]
    pub cases: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `builtin`; `lines:PROGRAM` (one process for the whole run: a line
    /// `{"tool": ..., "instance": ...}` in per case, a line `true` or
    /// `false` out); `cmd:PROGRAM` (run once per case: one JSON instance on
    /// stdin, the tool's name in $TOOLGAUGE_TOOL; exit 0 means valid); or an
    /// `http://` URL (gets it as a POST body, the tool's name in the
    /// x-toolgauge-tool header; a 2xx answer means valid); or `server`, the
    /// MCP server of `--tools mcp:...` itself (its tools/call: an error
    /// result or a JSON-RPC error means refused). Given twice or more, the
    /// validators are compared: every case goes through each, and each
    /// case they disagree on is reported, minimised. Default: `server`
    /// for an MCP server's tools, `builtin` otherwise.
    #[arg(long = "validator", value_name = "VALIDATOR")]
    pub validators: Vec<String>,
    /// With `--validator server`: the tools that may be called (default:
    /// those the server annotates read-only; others are never called).
    #[arg(long, value_name = "NAME", num_args = 1..)]
    pub allow: Vec<String>,
    /// With `--validator server`: calls in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// How long an external validator may take for one case.
    #[arg(long, default_value_t = DEFAULT_CASE_TIMEOUT.as_millis() as u64, value_name = "MS")]
    pub case_timeout_ms: u64,
    /// Where fuzz.csv (and disagreements.csv) go.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Print case INDEX of the run with seed SEED (and the same --tools and
    /// --cases) as JSON, and stop: the instance a report named.
    #[arg(long, value_name = "SEED:INDEX")]
    pub replay: Option<String>,
}

pub fn run(args: &FuzzArgs) -> Result<ExitCode, CliError> {
    // Every MCP server started is stopped when `servers` goes, whatever
    // happened.
    let servers = ToolServers::new();
    fuzz(args, &servers)
}

fn fuzz(args: &FuzzArgs, servers: &ToolServers) -> Result<ExitCode, CliError> {
    if args.cases == 0 {
        return Err(FuzzError::NoCases.into());
    }
    let tools = super::tool_source::load(&args.tools, servers)?.usable()?;
    let registry = std::sync::Arc::new(tools.registry(ToolEnv::default())?);
    if let Some(spec) = &args.replay {
        return replay_case(&registry, args.cases, spec, tools.served);
    }
    let request = FuzzRequest {
        cases: args.cases,
        seed: args.seed,
        validators: args.validators.clone(),
        allow: args.allow.clone(),
        concurrency: args.concurrency,
        case_timeout: Duration::from_millis(args.case_timeout_ms),
        out: args.out.clone(),
    };
    let run = FuzzRun::prepare(registry, tools.served, &tools.label, request)?;
    let skipped = run.skipped();
    if !skipped.is_empty() {
        eprintln!(
            "not called, so not fuzzed (not read-only; --allow NAME to fuzz one): {}",
            skipped.join(", ")
        );
    }

    // A signal stops the fuzzing between blocks; what was judged is kept.
    let listening = super::signals::listen();
    let mut progress = FuzzProgress::new();
    let (mut out, mut notes) = (std::io::stdout().lock(), std::io::stderr().lock());
    let ended = run.execute(
        &mut |judged| {
            progress.show(judged.tool, judged.cases);
            super::signals::received().is_none()
        },
        &mut out,
        &mut notes,
    );
    drop(listening);
    progress.finish();
    let ending = ended?;
    // The exit code: 128 + n when a signal stopped it, 1 where a
    // validator fell short or a served tool did not answer.
    if let Some((signal, code)) = ending.stopped.then(super::signals::received).flatten() {
        eprintln!(
            "{signal}: stopped while fuzzing; {} holds the {} case(s) judged before",
            args.out.join("fuzz.csv").display(),
            ending.judged
        );
        return Ok(ExitCode::from(code));
    }
    // The tool's fault, not the user's: the others were fuzzed on.
    for fault in &ending.tool_faults {
        eprintln!("{fault}: its fuzzing stopped there (fuzz.csv holds its cases before)");
    }
    Ok(if ending.failed || !ending.tool_faults.is_empty() {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Progress while fuzzing: a spinner on a terminal, otherwise a plain
/// line after the first block and every five seconds.
struct FuzzProgress {
    bar: Option<indicatif::ProgressBar>,
    last: Option<std::time::Instant>,
}

impl FuzzProgress {
    fn new() -> FuzzProgress {
        use std::io::IsTerminal as _;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        FuzzProgress { bar, last: None }
    }

    fn show(&mut self, tool: &str, cases: u64) {
        let line = format!("fuzz: {cases} case(s) judged (tool {tool})");
        match &self.bar {
            Some(bar) => bar.set_message(line),
            None if self
                .last
                .is_none_or(|last| last.elapsed() >= Duration::from_secs(5)) =>
            {
                self.last = Some(std::time::Instant::now());
                eprintln!("progress: {line}");
            }
            None => {}
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `--replay SEED:INDEX`: print the case, counted over the tools in order.
fn replay_case(
    registry: &Registry,
    cases: usize,
    spec: &str,
    served: bool,
) -> Result<ExitCode, CliError> {
    let bad = || CliError::Usage(format!("--replay {spec:?}: use SEED:INDEX, e.g. 1:157"));
    let (seed, index) = spec.split_once(':').ok_or_else(bad)?;
    let seed: u64 = seed.trim().parse().map_err(|_| bad())?;
    let index: usize = index.trim().parse().map_err(|_| bad())?;
    match replay(registry, cases, seed, index, served) {
        Ok((tool, instance)) => {
            println!(
                "{{\"tool\":{},\"instance\":{}}}",
                wire::to_string(&Value::from(tool)),
                wire::to_string(&instance)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(total) => Err(CliError::Usage(format!(
            "--replay {spec}: the run has {total} case(s) with --cases {cases}"
        ))),
    }
}
