//! `toolgauge doctor MODEL_FILE`: probe a live endpoint before trusting a
//! run against it; print what each probe found, with its evidence.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::{CliError, EXIT_FAILED};
use crate::doctor::{Diagnosis, diagnose};
use crate::model::ModelFile;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A live model file (kind openai, anthropic or gemini).
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
    let diagnosis = probe(&file)?;
    print!("{}", diagnosis.table());
    if let Some(path) = &args.json {
        save(&diagnosis, path)?;
    }
    Ok(if diagnosis.missing().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// Probe one model on a runtime of its own.
pub fn probe(file: &ModelFile) -> Result<Diagnosis, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the probes: {e}")))?;
    runtime
        .block_on(diagnose(file))
        .map_err(|e| CliError::Usage(e.to_string()))
}

pub fn save(diagnosis: &Diagnosis, path: &Path) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(diagnosis).map_err(CliError::new)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| CliError::Usage(format!("{}: cannot write: {e}", path.display())))
}

/// The diagnosis of `file` for a run in `out`: the one cached there
/// (`doctor-<model>.json`), or with `probe` a new probe, cached. Warns
/// when a self-correction run against it would not measure what it claims.
pub fn before_run(file: &ModelFile, out: &Path, probe_now: bool) -> Result<(), CliError> {
    let cached = out.join(format!("doctor-{}.json", file.name));
    let diagnosis: Diagnosis = match std::fs::read(&cached) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            CliError::Usage(format!("{}: not a doctor result: {e}", cached.display()))
        })?,
        Err(_) if probe_now => {
            let diagnosis = probe(file)?;
            save(&diagnosis, &cached)?;
            diagnosis
        }
        Err(_) => return Ok(()),
    };
    for finding in diagnosis.missing() {
        eprintln!(
            "warning: model {:?}: doctor says {}: {} ({}); its self-correction figures are not feedback the model saw",
            file.name,
            finding.probe,
            finding.verdict.as_str(),
            finding.evidence
        );
    }
    Ok(())
}
