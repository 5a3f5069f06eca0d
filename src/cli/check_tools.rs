//! `toolgauge check-tools SOURCE`: every problem of a source's tool
//! definitions (a file, or an MCP server's `tools/list`).

use std::process::ExitCode;

use clap::Args;

use super::CliError;
use crate::tool::mcp::ToolServers;

#[derive(Debug, Args)]
pub struct CheckToolsArgs {
    /// A JSON array of tool definitions, or an MCP server (`mcp:COMMAND
    /// ARGS...`, `mcp:http://HOST:PORT/mcp`).
    #[arg(value_name = "TOOLS.json|mcp:SERVER")]
    pub tools: String,
}

pub fn run(args: &CheckToolsArgs) -> Result<ExitCode, CliError> {
    // The server (for mcp:SERVER) is stopped once its tools are read.
    let tools = super::tool_source::load(&args.tools, &ToolServers::new())?;
    for problem in &tools.problems {
        println!("{problem}");
    }
    Ok(tools.verdict())
}
