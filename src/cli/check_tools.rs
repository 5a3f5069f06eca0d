//! `toolgauge check-tools TOOLS.json`

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{CliError, EXIT_FAILED};
use crate::tool::check_definitions_file;

#[derive(Debug, Args)]
pub struct CheckToolsArgs {
    /// A JSON array of tool definitions.
    #[arg(value_name = "TOOLS.json")]
    pub tools: PathBuf,
}

pub fn run(args: &CheckToolsArgs) -> Result<ExitCode, CliError> {
    let (defs, problems) = check_definitions_file(&args.tools)?;
    for problem in &problems {
        println!("{problem}");
    }
    if problems.is_empty() {
        eprintln!(
            "{}: {} tool(s), no problems",
            args.tools.display(),
            defs.len()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{}: {} problem(s)", args.tools.display(), problems.len());
        Ok(ExitCode::from(EXIT_FAILED))
    }
}
