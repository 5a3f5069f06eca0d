//! The doctor's entry points: an endpoint probed on a runtime of its own,
//! and a run folder's cached diagnosis, probed again only when missing.

use super::{Diagnosis, DoctorError, Finding, diagnose};
use crate::model::ModelFile;

/// Probe the endpoint of a live model file on a runtime of its own.
pub fn diagnose_blocking(
    file: &ModelFile,
    on_finding: &mut dyn FnMut(&Finding),
) -> Result<Diagnosis, DoctorError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DoctorError::Setup {
            model: file.name.clone(),
            problem: format!("cannot start the probes: {e}"),
        })?;
    runtime.block_on(diagnose(file, on_finding))
}

/// The diagnosis of `file` for a run in `out`: the one cached there
/// (`doctor-<model>.json`), or with `probe_now` a new probe, cached; none
/// when there is none and no probe was asked for.
pub fn before_run(
    file: &ModelFile,
    out: &std::path::Path,
    probe_now: bool,
) -> Result<Option<Diagnosis>, DoctorError> {
    let cached = out.join(format!("doctor-{}.json", file.name));
    let diagnosis: Diagnosis = match std::fs::read(&cached) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|source| DoctorError::NotADiagnosis {
                path: cached.clone(),
                source,
            })?
        }
        Err(_) if probe_now => {
            let diagnosis = diagnose_blocking(file, &mut |_| {})?;
            diagnosis.save(&cached)?;
            diagnosis
        }
        Err(_) => return Ok(None),
    };
    Ok(Some(diagnosis))
}
