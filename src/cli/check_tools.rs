//! `toolgauge check-tools SOURCE`: every problem of a source's tool
//! definitions (a file, or an MCP server's `tools/list`).

use std::process::ExitCode;

use clap::Args;

use super::CliError;

#[derive(Debug, Args)]
pub struct CheckToolsArgs {
    /// A JSON array of tool definitions, or an MCP server (`mcp:COMMAND
    /// ARGS...`, `mcp:http://HOST:PORT/mcp`).
    #[arg(value_name = "TOOLS.json|mcp:SERVER")]
    pub tools: String,
}

pub fn run(args: &CheckToolsArgs) -> Result<ExitCode, CliError> {
    let tools = super::tool_source::load(&args.tools);
    crate::tool::mcp::shutdown_all();
    let tools = tools?;
    for problem in &tools.problems {
        println!("{problem}");
    }
    Ok(tools.verdict())
}
