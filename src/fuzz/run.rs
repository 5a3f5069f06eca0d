//! A fuzz run as a library value, as a run is: [`FuzzRun::prepare`]
//! takes the tools and a [`FuzzRequest`] (the flags, parsed) and makes the
//! validators ready, [`FuzzRun::execute`] fuzzes and writes fuzz.csv (and
//! disagreements.csv), its tables going to the writers the caller gives,
//! and says how it ended ([`FuzzEnding`]); the caller prints.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::ToolFuzz;
use super::report::{Findings, write_disagreements, write_fuzz_csv};
use super::session::{
    BadValidator, Fault, Judged, Named, ServerJudge, ToolFault, Validator, fuzz_tools,
};
use crate::tool::{Effect, Registry, ToolDef};

/// What to fuzz with, and where the files go.
#[derive(Debug, Clone)]
pub struct FuzzRequest {
    /// Valid and invalid instances per tool (each).
    pub cases: usize,
    pub seed: u64,
    /// As `--validator` names them; empty: the tools' own server for
    /// served tools, the built-in validator otherwise.
    pub validators: Vec<String>,
    /// With a server's validation: the tools that may be called (empty:
    /// those it annotates read-only).
    pub allow: Vec<String>,
    /// With a server's validation: calls in flight at once.
    pub concurrency: usize,
    /// How long an external validator may take for one case.
    pub case_timeout: Duration,
    pub out: PathBuf,
}

/// What stops a fuzz run before or as it writes.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error("--cases must be at least 1 (instances per tool and operator)")]
    NoCases,
    #[error(transparent)]
    Validator(#[from] BadValidator),
    #[error("--allow {name:?}: {source_label} has no such tool (it has {tools})")]
    UnknownTool {
        name: String,
        source_label: String,
        tools: String,
    },
    /// A validator gave no verdict before anything was measured: no file
    /// that could be read as a kill rate is written.
    #[error("{0}")]
    NothingMeasured(Fault),
    /// A validator stopped giving verdicts: fuzz.csv holds what was
    /// measured before.
    #[error("{0}; fuzz.csv holds what was measured before")]
    Stopped(Fault),
    #[error("{}: {source}", out.display())]
    Write {
        out: PathBuf,
        source: std::io::Error,
    },
}

/// A fuzz run made ready: its tools, validators, and which tools it may
/// call.
pub struct FuzzRun {
    registry: Arc<Registry>,
    served: bool,
    validators: Vec<Named>,
    /// Some validator is the server itself: its tools are called.
    calls_server: bool,
    request: FuzzRequest,
}

/// How a fuzz run ended, files written.
#[derive(Debug)]
pub struct FuzzEnding {
    /// Cases judged in all.
    pub judged: u64,
    /// A validator fell short of its checks (a false reject, a kill rate
    /// below 1, a disagreement).
    pub failed: bool,
    /// Served tools whose fuzzing stopped because they did not answer.
    pub tool_faults: Vec<ToolFault>,
    /// `after_block` said stop: the files hold the blocks judged.
    pub stopped: bool,
}

impl FuzzRun {
    /// `served`: the tools are a server's (its own validation is the
    /// default validator; only objects are sent).
    pub fn prepare(
        registry: Arc<Registry>,
        served: bool,
        label: &str,
        request: FuzzRequest,
    ) -> Result<FuzzRun, FuzzError> {
        if request.cases == 0 {
            return Err(FuzzError::NoCases);
        }
        let validators = validators(&request, &registry, served)?;
        if let Some(name) = request.allow.iter().find(|n| registry.lookup(n).is_none()) {
            return Err(FuzzError::UnknownTool {
                name: name.clone(),
                source_label: label.to_owned(),
                tools: registry.names().collect::<Vec<_>>().join(", "),
            });
        }
        let calls_server = validators
            .iter()
            .any(|v| matches!(v.validator, Validator::Server(_)));
        Ok(FuzzRun {
            registry,
            served,
            validators,
            calls_server,
            request,
        })
    }

    /// Whether a tool's cases are judged: a server's tools are called only
    /// where allowed (named, or read-only).
    fn allowed(&self, def: &ToolDef) -> bool {
        !self.calls_server
            || self.request.allow.contains(&def.name)
            || (self.request.allow.is_empty() && def.effect == Effect::Read)
    }

    /// The tools that will not be called, so not fuzzed.
    pub fn skipped(&self) -> Vec<&str> {
        self.registry
            .definitions()
            .filter(|d| !self.allowed(d))
            .map(|d| d.name.as_str())
            .collect()
    }

    /// Fuzz, then write fuzz.csv (and disagreements.csv) of what was
    /// judged, tables to `out` and notes to `notes`. After each block
    /// `after_block` hears where the run stands and says whether to go on.
    pub fn execute(
        self,
        after_block: &mut dyn FnMut(Judged<'_>) -> bool,
        out: &mut dyn Write,
        notes: &mut dyn Write,
    ) -> Result<FuzzEnding, FuzzError> {
        let request = &self.request;
        let mut fuzzed = fuzz_tools(
            &self.registry,
            &self.validators,
            request.cases,
            request.seed,
            self.served,
            &|def| self.allowed(def),
            after_block,
        );
        let judged: u64 = fuzzed
            .results
            .iter()
            .flat_map(|r| r.reports.first())
            .map(ToolFuzz::judged)
            .sum();
        let measured = fuzzed
            .results
            .iter()
            .any(|r| r.reports.iter().any(ToolFuzz::measured));
        if !measured && let Some(failure) = fuzzed.failure.take() {
            return Err(FuzzError::NothingMeasured(failure));
        }
        let written = |source| FuzzError::Write {
            out: request.out.clone(),
            source,
        };
        crate::whole_file::make_folder(&request.out).map_err(written)?;
        let found = Findings {
            dir: &request.out,
            seed: request.seed,
            validators: &self.validators,
            results: &fuzzed.results,
        };
        let mut failed = write_fuzz_csv(&found, out, notes).map_err(written)?;
        if found.validators.len() > 1 {
            failed |= write_disagreements(&found, out, notes).map_err(written)?;
        }
        // Stopped on request: what was judged is kept, and said.
        if let Some(failure) = fuzzed.failure
            && !fuzzed.stopped
        {
            return Err(FuzzError::Stopped(failure));
        }
        Ok(FuzzEnding {
            judged,
            failed,
            tool_faults: fuzzed.tool_faults,
            stopped: fuzzed.stopped,
        })
    }
}

/// The validators, each ready to judge (default: the tools' own server
/// for served tools, the built-in validator otherwise).
fn validators(
    request: &FuzzRequest,
    registry: &Arc<Registry>,
    served: bool,
) -> Result<Vec<Named>, BadValidator> {
    let timeout = request.case_timeout;
    let open_server = || -> Result<ServerJudge, BadValidator> {
        Ok(ServerJudge {
            registry: registry.clone(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(BadValidator::Runtime)?,
            timeout,
            concurrency: request.concurrency,
        })
    };
    let specs: Vec<String> = if request.validators.is_empty() {
        vec![if served { "server" } else { "builtin" }.to_owned()]
    } else {
        request.validators.clone()
    };
    specs
        .iter()
        .map(|spec| Named::parse(spec, timeout, served.then_some(&open_server as _)))
        .collect()
}
