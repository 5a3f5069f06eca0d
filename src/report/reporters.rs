//! Run events, the `Reporter` trait and its fan-out with checkpoints,
//! what a run is (`RunInfo`), thresholds and the gate.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{
    Gate, HtmlReport, JUnitXml, Markdown, Reporter, RunEvent, RunInfo, SessionFile, SummaryCsvs,
    TrialsCsv,
};
use crate::metrics::Aggregate;

/// The file that shows `dir` already holds a run's reports, if any: a
/// command writing reports there must not replace them by accident.
pub fn held_run(dir: &Path) -> Option<&'static str> {
    ["run.json", "trials.csv"]
        .into_iter()
        .find(|file| dir.join(file).exists())
}

/// Time between checkpoints, at most: what a killed run may have to run
/// again (a write per trial would cost more than a fast trial; live trials
/// are slow and cost money, so the bound is in time).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Trials between checkpoints, at most: bounds what waits in memory.
const CHECKPOINT_TRIALS: u32 = 16_384;

/// The fan-out: each event to every reporter, in order, with the run's
/// measures kept on the way, and checkpoints every few trials.
pub struct Reporters<'a> {
    info: &'a RunInfo,
    stats: Aggregate,
    reporters: Vec<&'a mut dyn Reporter>,
    since_checkpoint: u32,
    last_checkpoint: Instant,
}

impl<'a> Reporters<'a> {
    pub fn new(info: &'a RunInfo, reporters: Vec<&'a mut dyn Reporter>) -> Self {
        Reporters {
            info,
            stats: info.aggregate(),
            reporters,
            since_checkpoint: 0,
            last_checkpoint: Instant::now(),
        }
    }

    pub fn send(&mut self, event: RunEvent<'_>) -> io::Result<()> {
        match event {
            RunEvent::Started { trials } => {
                for reporter in &mut self.reporters {
                    reporter.run_started(self.info, trials)?;
                }
                self.checkpoint()
            }
            RunEvent::Notice(notice) => {
                for reporter in &mut self.reporters {
                    reporter.notice(self.info, notice)?;
                }
                Ok(())
            }
            RunEvent::TrialFinished(trial) => {
                self.stats.add(trial.outcome);
                for reporter in &mut self.reporters {
                    reporter.trial_finished(self.info, trial)?;
                }
                self.since_checkpoint += 1;
                if self.since_checkpoint >= CHECKPOINT_TRIALS
                    || self.last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL
                {
                    self.checkpoint()?;
                }
                Ok(())
            }
            RunEvent::Finished => {
                self.checkpoint()?;
                for reporter in &mut self.reporters {
                    reporter.run_finished(self.info, &self.stats)?;
                }
                Ok(())
            }
        }
    }

    /// Every reporter's checkpoint, in order (also when a run stops early).
    pub fn checkpoint(&mut self) -> io::Result<()> {
        for reporter in &mut self.reporters {
            reporter.checkpoint()?;
        }
        self.since_checkpoint = 0;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// The measures so far.
    pub fn stats(&self) -> &Aggregate {
        &self.stats
    }
}

/// The files of a run's report folder, each with its reporter: what `run`
/// and `report merge` both write.
pub struct RunFiles {
    pub session: Option<SessionFile>,
    pub trials: TrialsCsv,
    pub summaries: SummaryCsvs,
    pub markdown: Markdown,
    pub html: HtmlReport,
    pub junit: JUnitXml,
    pub gate: Gate,
}

impl RunFiles {
    /// Create the files in `out`, session.jsonl only when `session` holds
    /// its writer (a new log, or one resumed).
    pub fn create(out: &Path, session: Option<SessionFile>) -> io::Result<RunFiles> {
        Ok(RunFiles {
            session,
            trials: TrialsCsv::create(&out.join("trials.csv"))?,
            summaries: SummaryCsvs::new(out),
            markdown: Markdown::new(&out.join("summary.md")),
            html: HtmlReport::new(out),
            junit: JUnitXml::new(&out.join("junit.xml")),
            gate: Gate::default(),
        })
    }

    /// Every reporter, in the order they hear events: a trial's log is
    /// written before its rows.
    pub fn reporters(&mut self) -> Vec<&mut dyn Reporter> {
        let mut reporters: Vec<&mut dyn Reporter> = Vec::new();
        if let Some(session) = &mut self.session {
            reporters.push(session);
        }
        reporters.extend([
            &mut self.trials as &mut dyn Reporter,
            &mut self.summaries,
            &mut self.markdown,
            &mut self.html,
            &mut self.junit,
            &mut self.gate,
        ]);
        reporters
    }
}
