//! A fuzz run: the validators under test (the built-in one, an external
//! one, or the tools' own server), each tool's cases judged by every
//! validator, disagreements between them minimised, and `--replay`'s case
//! by index.

use std::time::Duration;

use serde_json::Value;

use super::differential::{self, Disagreement, Found};
use super::external::ExternalValidator;
use super::{CaseBlocks, Cases, ToolFuzz};
use crate::call::Arguments;
use crate::tool::{Registry, ToolDef};

/// A `--validator` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BadValidator {
    #[error("--validator server judges with the tools' own server: give --tools mcp:SERVER")]
    NoServer,
    #[error("--validator {spec:?}: {source}")]
    Spec {
        spec: String,
        source: super::external::ValidatorSpecError,
    },
    #[error("--validator {0:?}: use builtin, lines:PROGRAM, cmd:PROGRAM or an http:// URL")]
    Unknown(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// Why judging stopped short.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    /// The validator gave no verdict (a program that hung or died, an
    /// endpoint that refused): the run stops.
    #[error("validator {spec} for tool {tool:?}: {error}")]
    Validator {
        spec: String,
        tool: String,
        error: super::external::ExternalError,
    },
    /// A served tool gave no answer in time: that tool's fuzzing stops,
    /// charged to the tool, and the run goes on to the next.
    #[error(transparent)]
    Tool(ToolFault),
}

/// A served tool that could not judge a case: the tool's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFault {
    #[error("no tool {0:?}")]
    NoSuchTool(String),
    #[error("tool {tool:?} did not answer within {} ms", waited.as_millis())]
    Silent { tool: String, waited: Duration },
}

/// Checks spent minimising one disagreement.
const MINIMISE_BUDGET: usize = 300;

pub enum Validator {
    Builtin,
    External(ExternalValidator),
    /// The tool source itself: an MCP server's `tools/call`.
    Server(ServerJudge),
}

/// Calls a served tool to judge an instance: accepted when the call
/// succeeds, refused when it comes back an error.
pub struct ServerJudge {
    pub registry: std::sync::Arc<crate::tool::Registry>,
    pub runtime: tokio::runtime::Runtime,
    pub timeout: Duration,
    pub concurrency: usize,
}

impl ServerJudge {
    fn judge(&self, tool: &str, instances: &[Value]) -> (Vec<bool>, Option<ToolFault>) {
        use futures_util::StreamExt;
        let Some(id) = self.registry.lookup(tool) else {
            return (Vec::new(), Some(ToolFault::NoSuchTool(tool.to_owned())));
        };
        let calls = futures_util::stream::iter(instances.iter().map(|instance| async move {
            // `tools/call` carries only an object: another value cannot
            // reach the server, so the tool never accepts it.
            let Ok(arguments) = Arguments::try_from(instance.clone()) else {
                return Ok(false);
            };
            // A fresh trial per case: a server that crashed is started
            // again for the next.
            let state = self.registry.new_state();
            tokio::time::timeout(self.timeout, self.registry.execute(id, &arguments, &state))
                .await
                // Output that breaks its outputSchema: the arguments were
                // taken and the tool ran.
                .map(|outcome| match outcome {
                    Ok(_) => true,
                    Err(failure) => failure.kind == crate::tool::ToolFailureKind::BadOutput,
                })
                .map_err(|_| ToolFault::Silent {
                    tool: tool.to_owned(),
                    waited: self.timeout,
                })
        }))
        .buffered(self.concurrency.max(1));
        self.runtime.block_on(super::external::until_fault(calls))
    }
}

/// A validator and how the user named it.
pub struct Named {
    pub spec: String,
    pub validator: Validator,
}

impl Named {
    /// `server`: how to make the judge of a served tool source, when the
    /// tools come from one.
    pub fn parse(
        spec: &str,
        timeout: Duration,
        server: Option<&dyn Fn() -> Result<ServerJudge, BadValidator>>,
    ) -> Result<Named, BadValidator> {
        let validator = match spec {
            "builtin" => Validator::Builtin,
            "server" => match server {
                Some(open) => Validator::Server(open()?),
                None => return Err(BadValidator::NoServer),
            },
            other => match ExternalValidator::parse(other, timeout) {
                Some(Ok(external)) => Validator::External(external),
                Some(Err(source)) => {
                    return Err(BadValidator::Spec {
                        spec: other.to_owned(),
                        source,
                    });
                }
                None => return Err(BadValidator::Unknown(other.to_owned())),
            },
        };
        Ok(Named {
            spec: spec.to_owned(),
            validator,
        })
    }

    /// Verdicts on `instances` as `tool`'s arguments: all, or those
    /// before a fault and the fault, worded.
    pub fn judge(
        &self,
        tool: &str,
        reference: &crate::schema::Compiled,
        instances: &[Value],
    ) -> (Vec<bool>, Option<Fault>) {
        match &self.validator {
            Validator::Builtin => (
                instances
                    .iter()
                    .map(|v| reference.full_is_valid(v))
                    .collect(),
                None,
            ),
            // A tool that does not answer is the tool's fault.
            Validator::Server(server) => {
                let (verdicts, fault) = server.judge(tool, instances);
                (verdicts, fault.map(Fault::Tool))
            }
            // Every case at once: the validator judges them as fast as it
            // can (pipelined, concurrent), a fault stopping it.
            Validator::External(external) => {
                let (verdicts, fault) = external.accepts_all(tool, instances);
                (
                    verdicts,
                    fault.map(|error| Fault::Validator {
                        spec: self.spec.clone(),
                        tool: tool.to_owned(),
                        error,
                    }),
                )
            }
        }
    }
}

/// What fuzzing one tool found: a report per validator, and where they
/// disagree.
pub struct ToolResult {
    pub tool: String,
    pub reports: Vec<ToolFuzz>,
    pub disagreements: Vec<Disagreement>,
    /// The index of the tool's first case in the run.
    pub offset: u64,
}

/// Where a fuzz run stands after a block: the tool, and the cases judged
/// so far in the run.
#[derive(Debug, Clone, Copy)]
pub struct Judged<'a> {
    pub tool: &'a str,
    pub cases: u64,
}

/// What a fuzz run gave: the results of the tools judged, why a
/// validator stopped it (if one did), and whether it was asked to stop.
pub struct Fuzzed {
    pub results: Vec<ToolResult>,
    /// The validator that gave no verdict, which stopped the run.
    pub failure: Option<Fault>,
    /// Served tools whose fuzzing stopped because they did not answer in
    /// time; the results hold their cases before.
    pub tool_faults: Vec<ToolFault>,
    /// `after_block` said stop: the results hold the blocks judged.
    pub stopped: bool,
}

/// One tool's fuzzing so far: one report per validator that judged, the
/// disagreements found, the cases judged, and what stopped it.
#[derive(Default)]
struct ToolRun {
    reports: Vec<ToolFuzz>,
    found: Found,
    cases: u64,
    tool_fault: Option<ToolFault>,
    failed: Option<Fault>,
}

impl ToolRun {
    /// Judge one block (one in memory at a time); whether to go on.
    fn judge(
        &mut self,
        validators: &[Named],
        tool: &str,
        reference: &crate::schema::Compiled,
        block: &Cases,
    ) -> bool {
        let (verdicts, fault) = judge_block(validators, tool, reference, &block.instances);
        match fault {
            Some(Fault::Tool(why)) => self.tool_fault = Some(why),
            Some(validator) => self.failed = Some(validator),
            None => {}
        }
        tally(&mut self.reports, block, &verdicts);
        let short = self.failed.is_some() || self.tool_fault.is_some();
        if validators.len() > 1 && !short {
            differential::collect(&mut self.found, block, &verdicts);
        }
        self.cases += block.len() as u64;
        !short
    }
}

/// Fuzz every tool of `registry` that `allowed` lets be called, with
/// `cases` cases from `seed` (objects only for a served source), through
/// each validator; disagreements between validators are minimised. A
/// validator that gives no verdict stops the run: the results so far,
/// and why. A served tool that does not answer in time stops only its
/// own fuzzing (`tool_faults`). After each block `after_block` hears
/// where the run stands, and says whether to go on (an interrupted run
/// keeps what it judged).
pub fn fuzz_tools(
    registry: &Registry,
    validators: &[Named],
    count: usize,
    seed: u64,
    served: bool,
    allowed: &dyn Fn(&ToolDef) -> bool,
    after_block: &mut dyn FnMut(Judged<'_>) -> bool,
) -> Fuzzed {
    let mut results: Vec<ToolResult> = Vec::new();
    // A validator that gives no verdict stops the run; what it measured
    // before is still written.
    let mut failure = None;
    let mut tool_faults = Vec::new();
    let mut stopped = false;
    let mut offset = 0;
    let mut judged = 0;
    for def in registry.definitions() {
        let reference = registry.schema(registry.lookup(&def.name).expect("registered"));
        let blocks = CaseBlocks::new(&def.parameters, reference, count, seed, served);
        if !allowed(def) {
            // Case indices still count its cases, as --replay does.
            offset += blocks.map(|block| block.len() as u64).sum::<u64>();
            continue;
        }
        let mut tool = ToolRun::default();
        for block in blocks {
            let go_on = tool.judge(validators, &def.name, reference, &block);
            judged += block.len() as u64;
            if !go_on {
                break;
            }
            if !after_block(Judged {
                tool: &def.name,
                cases: judged,
            }) {
                stopped = true;
                break;
            }
        }
        let ToolRun {
            reports,
            found,
            cases: tool_cases,
            tool_fault,
            failed,
        } = tool;
        if failed.is_some() {
            failure = failed;
        }
        results.push(ToolResult {
            tool: def.name.clone(),
            reports,
            disagreements: minimised(found, validators, &def.name, reference),
            offset,
        });
        offset += tool_cases;
        tool_faults.extend(tool_fault);
        if failure.is_some() || stopped {
            break;
        }
    }
    Fuzzed {
        results,
        failure,
        tool_faults,
        stopped,
    }
}

/// A block's verdicts added to each validator's report, one report per
/// validator that judged.
fn tally(reports: &mut Vec<ToolFuzz>, block: &super::Cases, verdicts: &[Vec<bool>]) {
    if reports.len() < verdicts.len() {
        reports.resize_with(verdicts.len(), ToolFuzz::default);
    }
    for (report, verdicts) in reports.iter_mut().zip(verdicts) {
        report.absorb(block.tally(verdicts));
    }
}

/// Each validator's verdicts on one block, in order, up to the first that
/// gives none (its fault).
fn judge_block(
    validators: &[Named],
    tool: &str,
    reference: &crate::schema::Compiled,
    instances: &[Value],
) -> (Vec<Vec<bool>>, Option<Fault>) {
    let mut verdicts = Vec::with_capacity(validators.len());
    for validator in validators {
        let (judged, fault) = validator.judge(tool, reference, instances);
        verdicts.push(judged);
        if fault.is_some() {
            return (verdicts, fault);
        }
    }
    (verdicts, None)
}

/// The disagreements found on `tool`, each shrunk to a small instance on
/// which the validators still disagree the same way.
fn minimised(
    found: Found,
    validators: &[Named],
    tool: &str,
    reference: &crate::schema::Compiled,
) -> Vec<Disagreement> {
    let mut found: Vec<Disagreement> = found.into_values().collect();
    for disagreement in &mut found {
        disagreement.minimise(reference, MINIMISE_BUDGET, &mut |candidate| {
            let one = std::slice::from_ref(candidate);
            validators
                .iter()
                .map(|v| match v.judge(tool, reference, one) {
                    (verdicts, None) => verdicts.first().copied(),
                    (_, Some(_)) => None,
                })
                .collect()
        });
    }
    found
}

/// Case `index` of the run with `seed` (and `cases` per tool), counted
/// over the tools in order: the tool's name and the instance, or the
/// number of cases the run has.
pub fn replay(
    registry: &Registry,
    cases: usize,
    seed: u64,
    mut index: usize,
    served: bool,
) -> Result<(String, Value), usize> {
    let mut total = 0;
    for def in registry.definitions() {
        let reference = registry.schema(registry.lookup(&def.name).expect("registered"));
        for block in CaseBlocks::new(&def.parameters, reference, cases, seed, served) {
            if let Some(instance) = block.instances.get(index) {
                return Ok((def.name.clone(), instance.clone()));
            }
            index -= block.len();
            total += block.len();
        }
    }
    Err(total)
}
