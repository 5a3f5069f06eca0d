//! `toolgauge exec`: one response through Parse, Validate, Execute, Return
//! and (optionally) Record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::CliError;
use crate::pipeline::{ExecMode, ExecOptions, Pipeline, SessionLog};
use crate::provider::Provider;
use crate::tool::mcp::ToolServers;
use crate::tool::{BUILTIN_NAMES, Registry, SHELL_TOOL, Sandbox, ToolEnv, ToolSource};

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The wire format of the response.
    #[arg(long, value_parser = parse_provider)]
    pub provider: Provider,
    /// A JSON array of tool definitions to register, or an MCP server's
    /// tools (`mcp:COMMAND ARGS...`, `mcp:http://HOST:PORT/mcp`).
    #[arg(long, value_name = "TOOLS.json|mcp:SERVER")]
    pub tools: Option<String>,
    /// Built-in tools to register (comma-separated, or `all`). Without
    /// --tools or --builtin: echo, math, sleep, and the file tools when
    /// --sandbox is given.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub builtin: Vec<String>,
    /// The directory the file tools are confined to.
    #[arg(long, value_name = "DIR")]
    pub sandbox: Option<PathBuf>,
    /// Append the JSONL session log to this file (created if need be; a log is never truncated).
    #[arg(long, value_name = "FILE")]
    pub session: Option<PathBuf>,
    /// Run every call alone, one after the other.
    #[arg(long)]
    pub serial: bool,
    /// How many reads may run at once.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_MAX_CONCURRENCY)]
    pub max_concurrency: usize,
    /// Truncate tool output beyond this many bytes.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_OUTPUT_LIMIT, value_name = "BYTES")]
    pub output_limit: usize,
    /// The response is a stream of server-sent events, as captured from a
    /// streamed request: it is assembled into the body it stands for.
    #[arg(long)]
    pub stream: bool,
    /// The response body, as the provider's API returned it.
    #[arg(value_name = "RESPONSE.json")]
    pub response: PathBuf,
}

fn parse_provider(text: &str) -> Result<Provider, crate::provider::UnknownProvider> {
    text.parse()
}

pub fn run(args: &ExecArgs) -> Result<ExitCode, CliError> {
    // Every MCP server started is stopped when `servers` goes, whatever
    // happened.
    let servers = ToolServers::new();
    exec(args, &servers)
}

fn exec(args: &ExecArgs, servers: &ToolServers) -> Result<ExitCode, CliError> {
    let registry = Arc::new(build_registry(args, servers)?);
    let body = crate::source::read_input(&args.response)
        .map_err(|e| CliError::Usage(format!("{}: cannot read: {e}", args.response.display())))?;
    let body = if args.stream {
        crate::provider::stream::whole_body(args.provider, &body)
            .map_err(|e| CliError::Usage(format!("{}: {e}", args.response.display())))?
    } else {
        body
    };
    // Checked before anything runs: a body that is not a response is bad input.
    args.provider
        .parse_response(&body)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.response.display())))?;
    let options = ExecOptions {
        mode: if args.serial {
            ExecMode::Serial
        } else {
            ExecMode::Parallel
        },
        max_concurrency: args.max_concurrency,
        output_limit: args.output_limit,
        ..ExecOptions::default()
    };
    let pipeline = Pipeline::new(registry, options);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?;
    let mut log = match &args.session {
        Some(path) => Some(
            SessionLog::append(path)
                .map_err(|e| CliError::Usage(format!("{}: cannot open: {e}", path.display())))?,
        ),
        None => None,
    };
    let state = pipeline.registry().new_state();
    let turn = runtime
        .block_on(pipeline.turn(args.provider, &body, &state, log.as_mut()))
        .map_err(|e| {
            let path = args.session.as_deref().unwrap_or(Path::new("session log"));
            CliError::Usage(format!("{}: cannot write: {e}", path.display()))
        })?;
    let batch = &turn.batch;

    // What Return produced, pretty-printed for a person.
    let messages: serde_json::Value =
        serde_json::from_slice(&turn.returned).expect("Return writes a JSON array");
    let text = serde_json::to_string_pretty(&messages).expect("result messages always serialize");
    println!("{text}");

    eprintln!("{}", batch_line(batch));
    Ok(ExitCode::SUCCESS)
}

/// `3 call(s): 2 ok, 1 failed (validation: 1); makespan 1.000 ms`.
fn batch_line(batch: &crate::pipeline::Batch) -> String {
    let mut errors: BTreeMap<&str, usize> = BTreeMap::new();
    for result in &batch.results {
        if let Some(kind) = result.error_kind {
            *errors.entry(kind.as_str()).or_default() += 1;
        }
    }
    let failed = batch.error_count();
    let detail: Vec<String> = errors.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    format!(
        "{} call(s): {} ok, {} failed{}; makespan {:.3} ms",
        batch.results.len(),
        batch.results.len() - failed,
        failed,
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        },
        batch.makespan.as_secs_f64() * 1e3
    )
}

fn build_registry(args: &ExecArgs, servers: &ToolServers) -> Result<Registry, CliError> {
    let sandbox = match &args.sandbox {
        Some(dir) => Some(
            Sandbox::new(dir)
                .map_err(|e| CliError::Usage(format!("--sandbox {}: {e}", dir.display())))?,
        ),
        None => None,
    };
    let mut sources = Vec::new();
    let builtins: Vec<String> = if args.builtin.iter().any(|b| b == "all") {
        BUILTIN_NAMES
            .iter()
            .filter(|b| **b != SHELL_TOOL)
            .map(|b| (*b).to_owned())
            .collect()
    } else if args.builtin.is_empty() && args.tools.is_none() {
        let mut names = vec!["echo", "math", "sleep"];
        if sandbox.is_some() {
            names.extend(["read_file", "write_file", "list_dir"]);
        }
        names.into_iter().map(str::to_owned).collect()
    } else {
        args.builtin.iter().map(|b| b.trim().to_owned()).collect()
    };
    sources.extend(builtins.into_iter().map(ToolSource::Builtin));
    let mut base_dir = None;
    if let Some(text) = &args.tools {
        let tools = super::tool_source::load(text, servers)?.usable()?;
        base_dir = tools.base_dir;
        sources.extend(tools.sources);
    }
    Registry::new(
        sources,
        ToolEnv {
            sandbox,
            base_dir,
            ..ToolEnv::default()
        },
    )
    .map_err(CliError::from)
}
