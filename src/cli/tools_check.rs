//! `toolgauge tools check SOURCE`: each tool called with valid generated
//! arguments (`fuzz::calls`), a table of what each answered, and exit 1
//! when a tool broke its own `outputSchema`, its server failed (crashed,
//! answered over the size limit or with no tool result) or it gave
//! nothing in time.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::CliError;
use crate::fuzz::calls::{CallCheck, check_calls};
use crate::markup::{Align::Left, Align::Right, Table};
use crate::tool::mcp::{Action, Answers, ElicitationAnswer, ToolServers};
use crate::tool::{Effect, ToolEnv};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// An MCP server (`mcp:COMMAND ARGS...`, `mcp:http://HOST:PORT/mcp` or
    /// the bare URL) or a JSON array of tool definitions.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// Calls per tool, each with its own generated arguments.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub calls: u32,
    /// Seed of the generated arguments.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long one call may take.
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    pub timeout_ms: u64,
    /// Tools to call although not read-only (a write may change the
    /// server's data).
    #[arg(long, value_name = "TOOL")]
    pub allow: Vec<String>,
    /// Call every tool, writes too (for a server of no value: a test
    /// server, a sandbox).
    #[arg(long, conflicts_with = "allow")]
    pub all: bool,
    /// Check only these tools (default: every tool that may be called).
    #[arg(long, value_name = "TOOL")]
    pub only: Vec<String>,
    /// How to answer a server that asks the user for input
    /// (`elicitation/create`): accept (each field its schema's default),
    /// decline or cancel. Without it, toolgauge does not offer to answer.
    #[arg(long, value_enum, value_name = "ANSWER")]
    pub elicit: Option<Elicit>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Elicit {
    Accept,
    Decline,
    Cancel,
}

impl Elicit {
    fn answers(self) -> Answers {
        let action = match self {
            Elicit::Accept => Action::Accept,
            Elicit::Decline => Action::Decline,
            Elicit::Cancel => Action::Cancel,
        };
        Answers {
            elicitation: vec![ElicitationAnswer {
                action,
                content: serde_json::Map::new(),
            }],
            sampling: Vec::new(),
        }
    }
}

pub fn run(args: &CheckArgs) -> Result<ExitCode, CliError> {
    // Every server started is stopped when `servers` goes.
    let servers = ToolServers::new();
    let answers = args.elicit.map(Elicit::answers).unwrap_or_default();
    let tools = super::tool_source::load_answering(&args.source, &servers, &answers)?.usable()?;
    let registry = tools.registry(ToolEnv::default())?;
    for (flag, names) in [("--allow", &args.allow), ("--only", &args.only)] {
        if let Some(unknown) = names.iter().find(|n| registry.lookup(n).is_none()) {
            return Err(CliError::Usage(format!(
                "{flag} {unknown:?}: {} has no such tool (it has {})",
                tools.label,
                registry.names().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let (called, skipped): (Vec<_>, Vec<_>) = registry
        .definitions()
        .filter(|d| args.only.is_empty() || args.only.contains(&d.name))
        .partition(|d| args.all || d.effect == Effect::Read || args.allow.contains(&d.name));
    if !skipped.is_empty() {
        let names: Vec<&str> = skipped.iter().map(|d| d.name.as_str()).collect();
        eprintln!(
            "not called (not read-only; --allow NAME to call one, --all for all): {}",
            names.join(", ")
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let checks: Vec<CallCheck> = called
        .iter()
        .map(|def| {
            runtime.block_on(check_calls(
                &registry,
                def,
                args.calls as usize,
                args.seed,
                timeout,
            ))
        })
        .collect();
    println!("{}", table(&checks));
    for source in servers.stats() {
        eprintln!(
            "MCP server {} spoke protocol {}; it asked for input {} time(s)",
            source.source, source.protocol, source.elicitations
        );
    }
    let failed = checks.iter().filter(|c| c.failed()).count();
    if checks.iter().all(|c| c.calls == 0) {
        eprintln!("nothing was called: no tool to check");
        return Ok(ExitCode::from(1));
    }
    if failed > 0 {
        eprintln!(
            "{failed} tool(s) broke their outputSchema, had their server fail, or did not answer in time"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn table(checks: &[CallCheck]) -> String {
    let mut t = Table::new(&[
        ("tool", Left),
        ("calls", Right),
        ("results", Right),
        ("error results", Right),
        ("bad outputs", Right),
        ("server failures", Right),
        ("timeouts", Right),
        ("first problem", Left),
    ]);
    for c in checks {
        t.row(vec![
            c.tool.clone(),
            c.calls.to_string(),
            c.results.to_string(),
            c.error_results.to_string(),
            c.bad_outputs.to_string(),
            c.server_failures.to_string(),
            c.timeouts.to_string(),
            c.first_problem
                .as_deref()
                .map(|p| crate::excerpt::cut(p, 120).into_owned())
                .unwrap_or_default(),
        ]);
    }
    t.render()
}
