//! `toolgauge fuzz`: generated valid and invalid arguments for each tool,
//! against the built-in validator or the user's own.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::{CliError, EXIT_FAILED};
use crate::fuzz::external::{DEFAULT_CASE_TIMEOUT, ExternalValidator};
use crate::fuzz::{ToolFuzz, fuzz_schema, fuzz_schema_batched};
use crate::tool::{Registry, ToolEnv, ToolSource};

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// A JSON array of tool definitions.
    #[arg(long, value_name = "TOOLS.json")]
    pub tools: PathBuf,
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
    /// x-toolgauge-tool header; a 2xx answer means valid).
    #[arg(long, default_value = "builtin")]
    pub validator: String,
    /// How long an external validator may take for one case.
    #[arg(long, default_value_t = DEFAULT_CASE_TIMEOUT.as_millis() as u64, value_name = "MS")]
    pub case_timeout_ms: u64,
    /// Where fuzz.csv goes.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Print case INDEX of the run with seed SEED (and the same --tools and
    /// --cases) as JSON, and stop: the instance a report named.
    #[arg(long, value_name = "SEED:INDEX")]
    pub replay: Option<String>,
}

/// fuzz.csv: one row per tool and operator (`valid` for the valid
/// instances), each operator's followed by a row per path it broke.
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
}

enum Validator {
    Builtin,
    External(ExternalValidator),
}

pub fn run(args: &FuzzArgs) -> Result<ExitCode, CliError> {
    if args.cases == 0 {
        return Err(CliError::new(
            "--cases must be at least 1 (instances per tool and operator)",
        ));
    }
    let validator = match args.validator.as_str() {
        "builtin" => Validator::Builtin,
        other => match ExternalValidator::parse(other, Duration::from_millis(args.case_timeout_ms))
        {
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
    let defs = super::read_tool_definitions(&args.tools)?;
    let registry = Registry::new(
        defs.into_iter().map(ToolSource::Defined).collect(),
        ToolEnv::default(),
    )?;
    if let Some(spec) = &args.replay {
        return replay(&registry, args.cases, spec);
    }

    let mut reports: Vec<(String, ToolFuzz)> = Vec::new();
    // A validator that gives no verdict stops the run; what it measured
    // before is still written.
    let mut failure = None;
    for def in registry.definitions() {
        let reference = registry.validator(registry.lookup(&def.name).expect("registered"));
        let report = match &validator {
            Validator::Builtin => fuzz_schema(
                &def.parameters,
                reference,
                args.cases,
                args.seed,
                &mut |v| Some(reference.is_valid(v)),
            ),
            // Every case is made first; the validator judges them as fast
            // as it can (pipelined, concurrent), a fault stopping it.
            Validator::External(external) => fuzz_schema_batched(
                &def.parameters,
                reference,
                args.cases,
                args.seed,
                &mut |all| {
                    let (verdicts, fault) = external.accepts_all(&def.name, all);
                    if let Some(e) = fault {
                        failure = Some(format!("validator for tool {:?}: {e}", def.name));
                    }
                    verdicts
                },
            ),
        };
        reports.push((def.name.clone(), report));
        if failure.is_some() {
            break;
        }
    }

    // A validator that never answered measured nothing: no file that
    // could be read as a kill rate.
    let measured = |r: &ToolFuzz| r.valid > 0 || !r.by_mutation.is_empty();
    if let Some(failure) = &failure
        && !reports.iter().any(|(_, r)| measured(r))
    {
        return Err(CliError::Usage(failure.clone()));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.out.display())))?;
    let path = args.out.join("fuzz.csv");
    let mut writer = csv::Writer::from_path(&path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let mut failed = false;
    println!(
        "| tool | operator | generated | killed | survived | false rejects | kill rate |\n|---|---|---:|---:|---:|---:|---:|"
    );
    let mut offset = 0;
    for (tool, report) in &reports {
        let mut rows = vec![FuzzRow {
            tool,
            operator: "valid",
            generated: report.valid,
            killed: 0,
            survived: 0,
            false_rejects: report.false_rejects,
            kill_rate: None,
            path: "",
        }];
        let row = |operator: &'static str, path, counts: &crate::fuzz::Counts| FuzzRow {
            tool,
            operator,
            generated: counts.generated,
            killed: counts.killed,
            survived: counts.survived,
            false_rejects: 0,
            kill_rate: Some(counts.killed as f64 / counts.generated.max(1) as f64),
            path,
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
                if row.path.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", row.path)
                },
                row.generated,
                row.killed,
                row.survived,
                row.false_rejects,
                row.kill_rate
                    .map_or("-".to_owned(), |r| format!("{:.1}%", 100.0 * r))
            );
        }
        for (mutation, mutant) in &report.survivors {
            let index = offset + report.survivor_cases.get(mutation).copied().unwrap_or(0);
            eprintln!(
                "{tool}: a {} mutant at {} survived: {} (--replay {}:{index})",
                mutation.as_str(),
                if mutant.pointer.is_empty() {
                    "/"
                } else {
                    &mutant.pointer
                },
                mutant.instance,
                args.seed
            );
        }
        // Case indices run on over the tools, in order.
        offset += report.judged();
    }
    writer.flush().map_err(CliError::new)?;
    eprintln!("fuzz.csv written to {}", path.display());
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

/// `--replay SEED:INDEX`: the case, counted over the tools in order.
fn replay(registry: &Registry, cases: usize, spec: &str) -> Result<ExitCode, CliError> {
    let bad = || CliError::Usage(format!("--replay {spec:?}: use SEED:INDEX, e.g. 1:157"));
    let (seed, index) = spec.split_once(':').ok_or_else(bad)?;
    let seed: u64 = seed.trim().parse().map_err(|_| bad())?;
    let mut index: u64 = index.trim().parse().map_err(|_| bad())?;
    let mut total = 0;
    for def in registry.definitions() {
        let reference = registry.validator(registry.lookup(&def.name).expect("registered"));
        match crate::fuzz::case(&def.parameters, reference, cases, seed, index) {
            Ok(instance) => {
                println!(
                    "{}",
                    serde_json::json!({"tool": def.name, "instance": instance})
                );
                return Ok(ExitCode::SUCCESS);
            }
            Err(count) => {
                index -= count;
                total += count;
            }
        }
    }
    Err(CliError::Usage(format!(
        "--replay {spec}: the run has {total} case(s) with --cases {cases}"
    )))
}
