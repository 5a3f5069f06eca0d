//! `toolgauge doctor MODEL_FILE`: probe a live endpoint before trusting a
//! run against it; print what each probe found, with its evidence.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{CliError, EXIT_FAILED};
use crate::doctor::diagnose_blocking;
use crate::model::ModelFile;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A live model file (kind openai, openai-responses, anthropic or gemini).
    #[arg(value_name = "MODEL_FILE")]
    pub model: PathBuf,
    /// Also write the findings as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Exit 1 when the endpoint cannot support a meaningful self-correction
/// run: no tool call, or results or errors not shown to the model.
pub fn run(args: &DoctorArgs) -> Result<ExitCode, CliError> {
    let file = ModelFile::load(&args.model)?;
    let diagnosis = diagnose_blocking(&file)?;
    print!("{}", diagnosis.table());
    if let Some(path) = &args.json {
        diagnosis.save(path)?;
    }
    Ok(if diagnosis.missing().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}
