//! `toolgauge fuzz`: generated valid and invalid arguments for each tool,
//! against the built-in validator or the user's own.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::{CliError, EXIT_FAILED};
use crate::fuzz::ToolFuzz;
use crate::fuzz::external::DEFAULT_CASE_TIMEOUT;
use crate::fuzz::report::{write_disagreements, write_fuzz_csv};
use crate::fuzz::session::{
    BadValidator, Fuzzed, Named, ServerJudge, Validator, fuzz_tools, replay,
};
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
        return Err(CliError::new(
            "--cases must be at least 1 (instances per tool and operator)",
        ));
    }
    let tools = super::tool_source::load(&args.tools, servers)?.usable()?;
    let registry = std::sync::Arc::new(tools.registry(ToolEnv::default())?);
    if let Some(spec) = &args.replay {
        return replay_case(&registry, args.cases, spec, tools.served);
    }
    let validators = validators(args, &registry, tools.served)?;
    // A server's tools are called only where allowed: named, or read-only.
    let calls_server = validators
        .iter()
        .any(|v| matches!(v.validator, Validator::Server(_)));
    if let Some(unknown) = args.allow.iter().find(|n| registry.lookup(n).is_none()) {
        return Err(CliError::Usage(format!(
            "--allow {unknown:?}: {} has no such tool (it has {})",
            tools.label,
            registry.names().collect::<Vec<_>>().join(", ")
        )));
    }
    let allowed = |def: &crate::tool::ToolDef| {
        !calls_server
            || args.allow.contains(&def.name)
            || (args.allow.is_empty() && def.effect == crate::tool::Effect::Read)
    };
    let skipped: Vec<&str> = registry
        .definitions()
        .filter(|d| !allowed(d))
        .map(|d| d.name.as_str())
        .collect();
    if !skipped.is_empty() {
        eprintln!(
            "not called, so not fuzzed (not read-only; --allow NAME to fuzz one): {}",
            skipped.join(", ")
        );
    }

    // A signal stops the fuzzing between blocks; what was judged is kept.
    let listening = super::signals::listen();
    let mut progress = FuzzProgress::new();
    let fuzzed = fuzz_tools(
        &registry,
        &validators,
        args.cases,
        args.seed,
        tools.served,
        &allowed,
        &mut |judged| {
            progress.show(judged.tool, judged.cases);
            super::signals::received().is_none()
        },
    );
    drop(listening);
    progress.finish();
    write_out(args, &validators, fuzzed)
}

/// fuzz.csv (and disagreements.csv) of what was judged, and the exit code:
/// 1 where a validator fell short or a served tool did not answer, 128 + n
/// when a signal stopped it.
fn write_out(args: &FuzzArgs, validators: &[Named], fuzzed: Fuzzed) -> Result<ExitCode, CliError> {
    let (results, failure, tool_faults) = (fuzzed.results, fuzzed.failure, fuzzed.tool_faults);
    let judged: u64 = results
        .iter()
        .flat_map(|r| r.reports.first())
        .map(ToolFuzz::judged)
        .sum();
    let stopped = fuzzed.stopped.then(super::signals::received).flatten();

    // A validator that never answered measured nothing: no file that
    // could be read as a kill rate.
    if let Some(failure) = &failure
        && !results
            .iter()
            .any(|r| r.reports.iter().any(ToolFuzz::measured))
    {
        return Err(CliError::Usage(failure.clone()));
    }
    crate::whole_file::make_folder(&args.out)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.out.display())))?;
    let written = |e: std::io::Error| CliError::Usage(format!("{}: {e}", args.out.display()));
    let (mut out, mut notes) = (std::io::stdout().lock(), std::io::stderr().lock());
    let (dir, seed) = (args.out.as_path(), args.seed);
    let mut failed =
        write_fuzz_csv(dir, seed, validators, &results, &mut out, &mut notes).map_err(written)?;
    if validators.len() > 1 {
        failed |= write_disagreements(dir, seed, validators, &results, &mut out, &mut notes)
            .map_err(written)?;
    }
    if let Some((signal, code)) = stopped {
        eprintln!(
            "{signal}: stopped while fuzzing; {} holds the {judged} case(s) judged before",
            args.out.join("fuzz.csv").display()
        );
        return Ok(ExitCode::from(code));
    }
    if let Some(failure) = failure {
        return Err(CliError::Usage(format!(
            "{failure}; fuzz.csv holds what was measured before"
        )));
    }
    // The tool's fault, not the user's: the others were fuzzed on.
    for fault in &tool_faults {
        eprintln!("{fault}: its fuzzing stopped there (fuzz.csv holds its cases before)");
    }
    Ok(if failed || !tool_faults.is_empty() {
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

/// The `--validator`s, each ready to judge (default: the tools' own
/// server for an MCP server's tools, the built-in validator otherwise).
fn validators(
    args: &FuzzArgs,
    registry: &std::sync::Arc<Registry>,
    served: bool,
) -> Result<Vec<Named>, CliError> {
    let timeout = Duration::from_millis(args.case_timeout_ms);
    let open_server = || -> Result<ServerJudge, BadValidator> {
        Ok(ServerJudge {
            registry: registry.clone(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(BadValidator::Runtime)?,
            timeout,
            concurrency: args.concurrency,
        })
    };
    let specs: Vec<String> = if args.validators.is_empty() {
        vec![if served { "server" } else { "builtin" }.to_owned()]
    } else {
        args.validators.clone()
    };
    specs
        .iter()
        .map(|spec| Named::parse(spec, timeout, served.then_some(&open_server as _)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::new)
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
