//! `toolgauge doctor MODEL_FILE`: probe a live endpoint before trusting a
//! run against it; print what each probe found, with its evidence.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{CliError, EXIT_FAILED};
use crate::doctor::{Diagnosis, diagnose_blocking};
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
/// run: no tool call, results or errors not shown to the model (or no
/// stream, for a model that streams), or no answer at all. Each finding
/// is printed as its probe ends.
pub fn run(args: &DoctorArgs) -> Result<ExitCode, CliError> {
    use std::io::Write as _;
    let file = ModelFile::load(&args.model)?;
    if let Some(endpoint) = crate::doctor::endpoint(&file) {
        print!("{}", Diagnosis::heading(&file.name, &endpoint));
    }
    let _ = std::io::stdout().flush();
    let diagnosis = diagnose_blocking(&file, &mut |finding| {
        // Evidence quotes the endpoint: shown, never obeyed.
        print!("{}", super::for_terminal(&finding.line()));
        let _ = std::io::stdout().flush();
    })?;
    print!("{}", diagnosis.conclusion());
    if let Some(path) = &args.json {
        diagnosis.save(path)?;
    }
    Ok(if diagnosis.missing().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}
