//! `toolgauge tools list SOURCE`: a source's tool definitions in any
//! provider's format, with the definition checks run on them.
//! `toolgauge tools check SOURCE`: each tool called with valid generated
//! arguments, its results held to its own `outputSchema`.

use std::process::ExitCode;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};

use super::CliError;
use crate::provider::Provider;
use crate::tool::mcp::ToolServers;

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    pub command: ToolsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Print a source's tool definitions and check them (exit 1 on problems).
    List(ListArgs),
    /// Call each tool with arguments generated from its input schema and
    /// count what it answers: results, error results, results that break
    /// its own outputSchema, calls unanswered in time (exit 1 on the last
    /// two). Only read-only tools are called unless --allow names others.
    Check(super::tools_check::CheckArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// A JSON array of tool definitions; `builtin`, toolgauge's own tools
    /// (their names, descriptions and argument schemas, as a scenario's
    /// `"tools": ["store_put"]` gets them); or an MCP server:
    /// `mcp:COMMAND ARGS...` (over stdio) or `mcp:http://HOST:PORT/mcp`.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The format to print: toolgauge's own definitions, or a provider's
    /// `tools` value.
    #[arg(long, value_name = "FORMAT", default_value = OWN_FORMAT, value_parser = formats())]
    pub format: Format,
}

/// What `tools list` prints.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    Toolgauge,
    /// A wire format's `tools` value.
    Wire(Provider),
}

/// `--format`'s value for toolgauge's own definitions.
const OWN_FORMAT: &str = "toolgauge";

/// `toolgauge`, or a wire format by `Provider`'s own name, each named
/// with its API in `--help`.
fn formats() -> impl TypedValueParser<Value = Format> {
    let own = PossibleValue::new(OWN_FORMAT).help("toolgauge's own definitions");
    let wire = Provider::all().map(|p| PossibleValue::new(p.as_str()).help(p.api_name()));
    PossibleValuesParser::new(std::iter::once(own).chain(wire)).map(|name| match name.as_str() {
        OWN_FORMAT => Format::Toolgauge,
        wire => Format::Wire(wire.parse().expect("a possible value is a Provider's name")),
    })
}

pub fn run(args: &ToolsArgs) -> Result<ExitCode, CliError> {
    let args = match &args.command {
        ToolsCommand::List(args) => args,
        ToolsCommand::Check(args) => return super::tools_check::run(args),
    };
    // The server (for mcp:SERVER) is stopped once its tools are read.
    let tools = super::tool_source::load(&args.source, &ToolServers::new())?;
    let specs: Vec<_> = tools.defs.iter().map(|d| d.spec()).collect();
    let printed = match args.format {
        Format::Toolgauge => serde_json::to_value(&tools.defs)?,
        Format::Wire(provider) => provider.format_tools(&specs),
    };
    println!("{}", serde_json::to_string_pretty(&printed)?);
    for problem in &tools.problems {
        eprintln!("{problem}");
    }
    Ok(tools.verdict())
}
