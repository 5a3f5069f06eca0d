//! `toolgauge fuzz`: generated valid and invalid arguments for each tool,
//! against the built-in validator or the user's own.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::{CliError, EXIT_FAILED};
use crate::fuzz::differential::{Disagreement, disagreements};
use crate::fuzz::external::{DEFAULT_CASE_TIMEOUT, ExternalValidator};
use crate::fuzz::{Cases, Counts, ToolFuzz, wire};
use crate::tool::mcp::ToolServers;
use crate::tool::{Registry, ToolEnv};

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// A JSON array of tool definitions, or an MCP server (`mcp:COMMAND
    /// ARGS...` over stdio, `mcp:http://HOST:PORT/mcp`), whose own
    /// validation is fuzzed by default (`--validator server`).
    #[arg(long, value_name = "TOOLS.json|mcp:SERVER")]
    pub tools: String,
    /// Valid and invalid instances per tool (each).
    #[arg(long, default_value_t = 100)]
    pub cases: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `builtin`; `lines:PROGRAM` (one process for the whole run: a line
    /// `{"tool": ..., "instance": ...}` in per case, a line `true` or
    /// `false` out); `cmd:PROGRAM` (run once per case: one JSON instance on
    /// stdin, the tool's name in $TOOLGAUGE_TOOL; exit 0 means valid); or an
    /// `http://` URL (gets it as a POST body, the tool's name in the
    /// x-toolgauge-tool header; a 2xx answer means valid); or `server`, the
    /// MCP server of `--tools mcp:...` itself (its tools/call: an error
    /// result or a JSON-RPC error means refused). Given twice or more, the
    /// validators are compared: every case goes through each, and each
    /// case they disagree on is reported, minimised. Default: `server`
    /// for an MCP server's tools, `builtin` otherwise.
    #[arg(long = "validator", value_name = "VALIDATOR")]
    pub validators: Vec<String>,
    /// With `--validator server`: the tools that may be called (default:
    /// those the server annotates read-only; others are never called).
    #[arg(long, value_name = "NAME", num_args = 1..)]
    pub allow: Vec<String>,
    /// With `--validator server`: calls in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// How long an external validator may take for one case.
    #[arg(long, default_value_t = DEFAULT_CASE_TIMEOUT.as_millis() as u64, value_name = "MS")]
    pub case_timeout_ms: u64,
    /// Where fuzz.csv (and disagreements.csv) go.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Print case INDEX of the run with seed SEED (and the same --tools and
    /// --cases) as JSON, and stop: the instance a report named.
    #[arg(long, value_name = "SEED:INDEX")]
    pub replay: Option<String>,
}

/// fuzz.csv: one row per tool, validator and operator (`valid` for the
/// valid instances), each operator's followed by a row per path it broke.
#[derive(Debug, Serialize)]
struct FuzzRow<'a> {
    tool: &'a str,
    operator: &'a str,
    generated: u64,
    killed: u64,
    survived: u64,
    false_rejects: u64,
    kill_rate: Option<f64>,
    /// Where in the arguments (array items as `*`); empty on the valid
    /// row and on an operator's total row.
    path: &'a str,
    /// The `--validator` as given.
    validator: &'a str,
}

/// disagreements.csv: one row per tool and site the validators disagree
/// on, under these columns (written even when there is no row).
const DISAGREEMENT_COLUMNS: [&str; 8] = [
    "tool",
    "operator",
    "path",
    "cases",
    "verdicts",
    "instance",
    "minimised",
    "replay",
];

#[derive(Debug, Serialize)]
struct DisagreementRow<'a> {
    tool: &'a str,
    /// `valid`, or the keyword the cases break.
    operator: &'static str,
    path: &'a str,
    cases: u64,
    /// Each validator's verdict on `instance`: `builtin=invalid; ...`.
    verdicts: String,
    instance: String,
    /// The smallest instance with the same verdicts.
    minimised: String,
    replay: String,
}

/// Checks spent minimising one disagreement.
const MINIMISE_BUDGET: usize = 300;

enum Validator {
    Builtin,
    External(ExternalValidator),
    /// The tool source itself: an MCP server's `tools/call`.
    Server(ServerJudge),
}

/// Calls a served tool to judge an instance: accepted when the call
/// succeeds, refused when it comes back an error.
struct ServerJudge {
    registry: std::sync::Arc<crate::tool::Registry>,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
    concurrency: usize,
}

impl ServerJudge {
    fn judge(&self, tool: &str, instances: &[Value]) -> (Vec<bool>, Option<String>) {
        use futures_util::StreamExt;
        let Some(id) = self.registry.lookup(tool) else {
            return (Vec::new(), Some(format!("no tool {tool:?}")));
        };
        let calls = futures_util::stream::iter(instances.iter().map(|instance| async move {
            // A fresh trial per case: a server that crashed is started
            // again for the next.
            let state = self.registry.new_state();
            tokio::time::timeout(self.timeout, self.registry.execute(id, instance, &state))
                .await
                .map(|outcome| outcome.is_ok())
                .map_err(|_| {
                    format!(
                        "tool {tool:?} did not answer within {} ms",
                        self.timeout.as_millis()
                    )
                })
        }))
        .buffered(self.concurrency.max(1));
        self.runtime
            .block_on(crate::fuzz::external::until_fault(calls))
    }
}

/// A validator and how the user named it.
struct Named {
    spec: String,
    validator: Validator,
}

impl Named {
    fn parse(
        spec: &str,
        timeout: Duration,
        server: Option<&dyn Fn() -> Result<ServerJudge, CliError>>,
    ) -> Result<Named, CliError> {
        let validator = match spec {
            "builtin" => Validator::Builtin,
            "server" => match server {
                Some(open) => Validator::Server(open()?),
                None => {
                    return Err(CliError::Usage(
                        "--validator server judges with the tools' own server: give --tools mcp:SERVER".into(),
                    ));
                }
            },
            other => match ExternalValidator::parse(other, timeout) {
                Some(Ok(external)) => Validator::External(external),
                Some(Err(message)) => {
                    return Err(CliError::Usage(format!("--validator {other:?}: {message}")));
                }
                None => {
                    return Err(CliError::Usage(format!(
                        "--validator {other:?}: use builtin, lines:PROGRAM, cmd:PROGRAM or an http:// URL"
                    )));
                }
            },
        };
        Ok(Named {
            spec: spec.to_owned(),
            validator,
        })
    }

    /// Verdicts on `instances` as `tool`'s arguments: all, or those
    /// before a fault and the fault, worded.
    fn judge(
        &self,
        tool: &str,
        reference: &jsonschema::Validator,
        instances: &[Value],
    ) -> (Vec<bool>, Option<String>) {
        match &self.validator {
            Validator::Builtin => (
                instances.iter().map(|v| reference.is_valid(v)).collect(),
                None,
            ),
            Validator::Server(server) => {
                let (verdicts, fault) = server.judge(tool, instances);
                (
                    verdicts,
                    fault.map(|e| format!("validator server for tool {tool:?}: {e}")),
                )
            }
            // Every case at once: the validator judges them as fast as it
            // can (pipelined, concurrent), a fault stopping it.
            Validator::External(external) => {
                let (verdicts, fault) = external.accepts_all(tool, instances);
                (
                    verdicts,
                    fault.map(|e| format!("validator {} for tool {tool:?}: {e}", self.spec)),
                )
            }
        }
    }
}

/// What fuzzing one tool found: a report per validator, and where they
/// disagree.
struct ToolResult {
    tool: String,
    reports: Vec<ToolFuzz>,
    disagreements: Vec<Disagreement>,
    /// The index of the tool's first case in the run.
    offset: u64,
}

pub fn run(args: &FuzzArgs) -> Result<ExitCode, CliError> {
    // Every MCP server started is stopped when `servers` goes, whatever
    // happened.
    let servers = ToolServers::new();
    fuzz(args, &servers)
}

fn fuzz(args: &FuzzArgs, servers: &ToolServers) -> Result<ExitCode, CliError> {
    if args.cases == 0 {
        return Err(CliError::new(
            "--cases must be at least 1 (instances per tool and operator)",
        ));
    }
    let timeout = Duration::from_millis(args.case_timeout_ms);
    let tools = super::tool_source::load(&args.tools, servers)?.usable()?;
    let registry = std::sync::Arc::new(tools.registry(ToolEnv::default())?);
    if let Some(spec) = &args.replay {
        return replay(&registry, args.cases, spec, tools.served);
    }
    let open_server = || -> Result<ServerJudge, CliError> {
        Ok(ServerJudge {
            registry: registry.clone(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?,
            timeout,
            concurrency: args.concurrency,
        })
    };
    let specs: Vec<String> = if args.validators.is_empty() {
        vec![if tools.served { "server" } else { "builtin" }.to_owned()]
    } else {
        args.validators.clone()
    };
    let validators = specs
        .iter()
        .map(|spec| Named::parse(spec, timeout, tools.served.then_some(&open_server as _)))
        .collect::<Result<Vec<_>, _>>()?;
    // A server's tools are called only where allowed: named, or read-only.
    let calls_server = validators
        .iter()
        .any(|v| matches!(v.validator, Validator::Server(_)));
    if let Some(unknown) = args.allow.iter().find(|n| registry.lookup(n).is_none()) {
        return Err(CliError::Usage(format!(
            "--allow {unknown:?}: {} has no such tool (it has {})",
            tools.label,
            registry.names().collect::<Vec<_>>().join(", ")
        )));
    }
    let allowed = |def: &crate::tool::ToolDef| {
        !calls_server
            || args.allow.contains(&def.name)
            || (args.allow.is_empty() && def.effect == crate::tool::Effect::Read)
    };
    let skipped: Vec<&str> = registry
        .definitions()
        .filter(|d| !allowed(d))
        .map(|d| d.name.as_str())
        .collect();
    if !skipped.is_empty() {
        eprintln!(
            "not called, so not fuzzed (not read-only; --allow NAME to fuzz one): {}",
            skipped.join(", ")
        );
    }

    let mut results: Vec<ToolResult> = Vec::new();
    // A validator that gives no verdict stops the run; what it measured
    // before is still written.
    let mut failure = None;
    let mut offset = 0;
    for def in registry.definitions() {
        let reference = registry.validator(registry.lookup(&def.name).expect("registered"));
        let cases = Cases::generate(&def.parameters, reference, args.cases, args.seed);
        let cases = if tools.served {
            cases.objects_only()
        } else {
            cases
        };
        if !allowed(def) {
            // Case indices still count its cases, as --replay does.
            offset += cases.len() as u64;
            continue;
        }
        let mut verdicts = Vec::with_capacity(validators.len());
        for validator in &validators {
            let (judged, fault) = validator.judge(&def.name, reference, &cases.instances);
            verdicts.push(judged);
            if fault.is_some() {
                failure = fault;
                break;
            }
        }
        let reports = verdicts.iter().map(|v| cases.tally(v)).collect();
        let mut found = Vec::new();
        if validators.len() > 1 && failure.is_none() {
            found = disagreements(&cases, &verdicts);
            for disagreement in &mut found {
                disagreement.minimise(reference, MINIMISE_BUDGET, &mut |candidate| {
                    let one = std::slice::from_ref(candidate);
                    validators
                        .iter()
                        .map(|v| match v.judge(&def.name, reference, one) {
                            (verdicts, None) => verdicts.first().copied(),
                            (_, Some(_)) => None,
                        })
                        .collect()
                });
            }
        }
        results.push(ToolResult {
            tool: def.name.clone(),
            reports,
            disagreements: found,
            offset,
        });
        offset += cases.len() as u64;
        if failure.is_some() {
            break;
        }
    }

    // A validator that never answered measured nothing: no file that
    // could be read as a kill rate.
    if let Some(failure) = &failure
        && !results
            .iter()
            .any(|r| r.reports.iter().any(ToolFuzz::measured))
    {
        return Err(CliError::Usage(failure.clone()));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.out.display())))?;
    let mut failed = write_fuzz_csv(args, &validators, &results)?;
    if validators.len() > 1 {
        failed |= write_disagreements(args, &validators, &results)?;
    }
    if let Some(failure) = failure {
        return Err(CliError::Usage(format!(
            "{failure}; fuzz.csv holds what was measured before"
        )));
    }
    Ok(if failed {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// fuzz.csv and its table on the terminal; whether any validator let a
/// mutant through or rejected a valid instance.
fn write_fuzz_csv(
    args: &FuzzArgs,
    validators: &[Named],
    results: &[ToolResult],
) -> Result<bool, CliError> {
    let path = args.out.join("fuzz.csv");
    let mut writer = csv::Writer::from_path(&path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let mut failed = false;
    for (v, validator) in validators.iter().enumerate() {
        if validators.len() > 1 {
            println!("\nvalidator {}:\n", validator.spec);
        }
        println!(
            "| tool | operator | generated | killed | survived | false rejects | kill rate |\n|---|---|---:|---:|---:|---:|---:|"
        );
        for result in results {
            let Some(report) = result.reports.get(v) else {
                continue;
            };
            let tool = result.tool.as_str();
            let mut rows = vec![FuzzRow {
                tool,
                operator: "valid",
                generated: report.valid,
                killed: 0,
                survived: 0,
                false_rejects: report.false_rejects,
                kill_rate: None,
                path: "",
                validator: &validator.spec,
            }];
            let row = |operator: &'static str, path, counts: &Counts| FuzzRow {
                tool,
                operator,
                generated: counts.generated,
                killed: counts.killed,
                survived: counts.survived,
                false_rejects: 0,
                kill_rate: Some(counts.killed as f64 / counts.generated.max(1) as f64),
                path,
                validator: &validator.spec,
            };
            // On the terminal, an operator's paths only when it broke several.
            let mut shown = vec![true]; // the valid row
            for (mutation, counts) in &report.by_mutation {
                rows.push(row(mutation.as_str(), "", counts));
                shown.push(true);
                let sites: Vec<_> = report
                    .by_site
                    .iter()
                    .filter(|((m, _), _)| m == mutation)
                    .collect();
                for ((_, path), counts) in &sites {
                    rows.push(row(mutation.as_str(), path, counts));
                    shown.push(sites.len() > 1);
                }
            }
            for (row, shown) in rows.iter().zip(shown) {
                failed |= row.survived > 0 || row.false_rejects > 0;
                writer.serialize(row).map_err(CliError::new)?;
                if !shown {
                    continue;
                }
                println!(
                    "| {} | {}{} | {} | {} | {} | {} | {} |",
                    row.tool,
                    row.operator,
                    at(row.path),
                    row.generated,
                    row.killed,
                    row.survived,
                    row.false_rejects,
                    row.kill_rate
                        .map_or("-".to_owned(), |r| format!("{:.1}%", 100.0 * r))
                );
            }
            let by = if validators.len() > 1 {
                format!(" ({})", validator.spec)
            } else {
                String::new()
            };
            let replay = |case: u64| format!("(--replay {}:{})", args.seed, result.offset + case);
            if let Some(example) = &report.false_reject {
                eprintln!(
                    "{tool}: a valid instance was rejected{by}: {} {}",
                    wire::to_string(&example.instance),
                    replay(example.case)
                );
            }
            for (mutation, example) in &report.survivors {
                eprintln!(
                    "{tool}: a {} mutant at {} survived{by}: {} {}",
                    mutation.as_str(),
                    if example.pointer.is_empty() {
                        "/"
                    } else {
                        &example.pointer
                    },
                    wire::to_string(&example.instance),
                    replay(example.case)
                );
            }
        }
    }
    writer.flush().map_err(CliError::new)?;
    eprintln!("fuzz.csv written to {}", path.display());
    Ok(failed)
}

/// disagreements.csv and the disagreements on the terminal; whether
/// there were any.
fn write_disagreements(
    args: &FuzzArgs,
    validators: &[Named],
    results: &[ToolResult],
) -> Result<bool, CliError> {
    let path = args.out.join("disagreements.csv");
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    writer
        .write_record(DISAGREEMENT_COLUMNS)
        .map_err(CliError::new)?;
    let total: usize = results.iter().map(|r| r.disagreements.len()).sum();
    println!(
        "\n{} site(s) where the {} validators disagree",
        total,
        validators.len()
    );
    for result in results {
        for d in &result.disagreements {
            let verdicts = validators
                .iter()
                .zip(&d.verdicts)
                .map(|(v, valid)| {
                    format!("{}={}", v.spec, if *valid { "valid" } else { "invalid" })
                })
                .collect::<Vec<_>>()
                .join("; ");
            let row = DisagreementRow {
                tool: &result.tool,
                operator: d.keyword(),
                path: if d.mutation.is_some() { &d.path } else { "" },
                cases: d.cases,
                verdicts,
                instance: wire::to_string(&d.example.instance),
                minimised: wire::to_string(&d.minimised),
                replay: format!("{}:{}", args.seed, result.offset + d.example.case),
            };
            println!(
                "{}: {}{}, {} case(s): {}: {} (--replay {}; minimised from {})",
                row.tool,
                row.operator,
                at(row.path),
                row.cases,
                row.verdicts,
                row.minimised,
                row.replay,
                crate::excerpt::excerpt(&row.instance),
            );
            writer.serialize(&row).map_err(CliError::new)?;
        }
    }
    writer.flush().map_err(CliError::new)?;
    eprintln!("disagreements.csv written to {}", path.display());
    Ok(total > 0)
}

/// ` at PATH`, or nothing for no path.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

/// `--replay SEED:INDEX`: the case, counted over the tools in order.
fn replay(
    registry: &Registry,
    cases: usize,
    spec: &str,
    served: bool,
) -> Result<ExitCode, CliError> {
    let bad = || CliError::Usage(format!("--replay {spec:?}: use SEED:INDEX, e.g. 1:157"));
    let (seed, index) = spec.split_once(':').ok_or_else(bad)?;
    let seed: u64 = seed.trim().parse().map_err(|_| bad())?;
    let mut index: usize = index.trim().parse().map_err(|_| bad())?;
    let mut total = 0;
    for def in registry.definitions() {
        let reference = registry.validator(registry.lookup(&def.name).expect("registered"));
        let made = Cases::generate(&def.parameters, reference, cases, seed);
        let made = if served { made.objects_only() } else { made };
        if let Some(instance) = made.instances.get(index) {
            println!(
                "{{\"tool\":{},\"instance\":{}}}",
                wire::to_string(&Value::from(def.name.as_str())),
                wire::to_string(instance)
            );
            return Ok(ExitCode::SUCCESS);
        }
        index -= made.len();
        total += made.len();
    }
    Err(CliError::Usage(format!(
        "--replay {spec}: the run has {total} case(s) with --cases {cases}"
    )))
}
