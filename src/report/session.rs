//! session.jsonl: what Record logged for every trial, written in job order
//! as trials finish, each entry with its coordinates (model, scenario,
//! trial, attempt). A resumed run adds to the log of the run it continues.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::{FinishedTrial, Reporter, RunInfo};

pub struct SessionFile {
    out: io::BufWriter<File>,
}

impl SessionFile {
    /// Start the log; `append` keeps what an earlier part of the run wrote.
    pub fn open(path: &Path, append: bool) -> io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(path)?;
        Ok(SessionFile {
            out: io::BufWriter::with_capacity(64 * 1024, file),
        })
    }
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
