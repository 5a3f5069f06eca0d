//! session.jsonl: what Record logged for every trial, written in job order
//! as trials finish (before the trial's trials.csv rows, so that a kill
//! never leaves a finished trial without its log), each entry with its
//! coordinates (model, scenario, trial, attempt). A resumed run keeps the
//! entries of the trials it keeps, and adds the rest.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::path::Path;

use super::{FinishedTrial, Reporter, RunInfo};

pub struct SessionFile {
    out: io::BufWriter<File>,
}

/// A trial's place in job order: model, scenario, trial.
pub type JobKey = (usize, usize, u32);

impl SessionFile {
    /// Start the log.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::over(File::create(path)?))
    }

    /// Continue the log of a run being resumed: keep the entries of the
    /// trials up to `last_kept` in job order (the trials the resume
    /// replays) and drop the rest, a torn last line included; the trials
    /// run again add theirs.
    pub fn resume(path: &Path, info: &RunInfo, last_kept: Option<JobKey>) -> io::Result<Self> {
        let kept = path.with_extension("jsonl.partial");
        {
            let mut out = io::BufWriter::new(File::create(&kept)?);
            if let (Some(last), Ok(file)) = (last_kept, File::open(path)) {
                let models: HashMap<&str, usize> = index(info.models.iter().map(|m| &m.name));
                let scenarios: HashMap<&str, usize> = index(info.scenarios.iter().map(|s| &s.name));
                for line in io::BufReader::new(file).split(b'\n') {
                    let line = line?;
                    match job_of(&line, &models, &scenarios) {
                        Some(job) if job <= last => {
                            out.write_all(&line)?;
                            out.write_all(b"\n")?;
                        }
                        // Job order: nothing after the first later entry is kept.
                        Some(_) => break,
                        // A torn line, the last one a kill leaves.
                        None => break,
                    }
                }
            }
            out.flush()?;
        }
        std::fs::rename(&kept, path)?;
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        Ok(Self::over(file))
    }

    fn over(file: File) -> Self {
        SessionFile {
            out: io::BufWriter::with_capacity(64 * 1024, file),
        }
    }
}

fn index<'a>(names: impl Iterator<Item = &'a String>) -> HashMap<&'a str, usize> {
    names.enumerate().map(|(i, n)| (n.as_str(), i)).collect()
}

/// The job an entry belongs to, if the line is a whole entry of this run.
fn job_of(
    line: &[u8],
    models: &HashMap<&str, usize>,
    scenarios: &HashMap<&str, usize>,
) -> Option<JobKey> {
    #[derive(serde::Deserialize)]
    struct Coordinates<'a> {
        model: &'a str,
        scenario: &'a str,
        trial: u32,
    }
    let entry: Coordinates<'_> = serde_json::from_slice(line).ok()?;
    Some((
        *models.get(entry.model)?,
        *scenarios.get(entry.scenario)?,
        entry.trial,
    ))
}

impl Reporter for SessionFile {
    fn trial_finished(&mut self, _info: &RunInfo, trial: FinishedTrial<'_>) -> io::Result<()> {
        // Whole trials reach the file together with their trials.csv rows.
        self.out.write_all(trial.session)?;
        self.out.flush()
    }

    fn run_finished(
        &mut self,
        _info: &RunInfo,
        _stats: &crate::metrics::Aggregate,
    ) -> io::Result<()> {
        self.out.flush()
    }
}
