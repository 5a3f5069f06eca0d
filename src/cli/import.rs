//! `toolgauge import bfcl|tau2|otel`: a benchmark's entries, or an
//! agent's traces, as scenario files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::CliError;
use crate::bfcl::import::{default_answers, import};
use crate::tool::mcp::McpServerSpec;

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub source: ImportSource,
}

#[derive(Debug, Subcommand)]
pub enum ImportSource {
    /// Berkeley Function Calling Leaderboard questions (JSON Lines), one
    /// scenario file per entry, named by its BFCL id.
    Bfcl(BfclArgs),
    /// tau2-bench tasks (airline, retail), one scenario file per task,
    /// run on tau2's own environment through its bridge and judged by
    /// tau2's evaluator.
    Tau2(Tau2Args),
    /// An agent's recorded OpenTelemetry GenAI spans (OTLP JSON lines, as
    /// Phoenix, a collector's file exporter or `run --otlp-file` write
    /// them): each model request that made calls becomes a scenario that
    /// expects them; requests that lack what one needs are listed.
    Otel(OtelArgs),
}

#[derive(Debug, Args)]
pub struct OtelArgs {
    /// The traces: OTLP JSON lines.
    #[arg(value_name = "TRACES.jsonl")]
    pub traces: PathBuf,
    /// Where the scenario files go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct Tau2Args {
    /// airline or retail.
    #[arg(long)]
    pub domain: String,
    /// A split of the domain's tasks (test, train, base). Default: every task.
    #[arg(long)]
    pub split: Option<String>,
    /// The command that starts scripts/tau2_bridge/bridge.py, e.g.
    /// "VENV/bin/python scripts/tau2_bridge/bridge.py" (see
    /// docs/tau2.md). Paths in it are written into the scenarios made
    /// absolute.
    #[arg(long, value_name = "COMMAND")]
    pub bridge: String,
    /// The name of the live model (given at run time with --user-model)
    /// that plays each task's user. Default: a script for mock models
    /// (the reason for the call, then ###STOP###).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Where the scenario files go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct BfclArgs {
    /// A BFCL question file, e.g. BFCL_v4_simple_python.json or
    /// BFCL_v4_multi_turn_base.json.
    #[arg(value_name = "QUESTIONS.json")]
    pub questions: PathBuf,
    /// Its possible answers. Default: possible_answer/<same name> beside it,
    /// when that exists (irrelevance categories have none).
    #[arg(long, value_name = "POSSIBLE_ANSWER.json")]
    pub answers: Option<PathBuf>,
    /// Where the scenario files go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// For the multi-turn categories: the command that starts BFCL's
    /// classes as an MCP server, e.g. "VENV/bin/python
    /// scripts/bfcl_bridge/bridge.py" (see scripts/bfcl_bridge). Paths in
    /// it are written into the scenarios made absolute.
    #[arg(long, value_name = "COMMAND")]
    pub bridge: Option<String>,
}

pub fn run(args: &ImportArgs) -> Result<ExitCode, CliError> {
    match &args.source {
        ImportSource::Bfcl(args) => bfcl(args),
        ImportSource::Tau2(args) => tau2(args),
        ImportSource::Otel(args) => otel(args),
    }
}

fn otel(args: &OtelArgs) -> Result<ExitCode, CliError> {
    let imported = crate::traces::import(&args.traces, &args.out)?;
    for lack in &imported.passed_over {
        eprintln!("passed over: {lack}");
    }
    eprintln!(
        "{} scenario file(s) written to {}; {} request(s) without calls, {} passed over",
        imported.written.len(),
        args.out.display(),
        imported.without_calls,
        imported.passed_over.len()
    );
    if imported.written.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no model request with calls and the content a scenario needs (see above)",
            args.traces.display()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn tau2(args: &Tau2Args) -> Result<ExitCode, CliError> {
    let bridge = absolute_words(&args.bridge);
    if bridge.is_empty() {
        return Err(CliError::Usage(
            "--bridge is empty: give the command that starts scripts/tau2_bridge/bridge.py".into(),
        ));
    }
    let user = match &args.user {
        Some(name) => crate::tau2::UserPlay::Model(name.clone()),
        None => crate::tau2::UserPlay::Script,
    };
    let imported = crate::tau2::import(
        &bridge,
        &args.domain,
        args.split.as_deref(),
        &user,
        &args.out,
    )?;
    remember_judging(&imported.judging)?;
    if imported.nl_judged > 0 {
        eprintln!(
            "{} task(s) weigh NL assertions, which need a judge model: their trials are lost as not judged, never passed",
            imported.nl_judged
        );
    }
    eprintln!(
        "{} scenario file(s) written to {}",
        imported.written,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The judging servers just written may take the judge a run names
/// (`run --judge-model`): remembered outside the suite, which anyone can
/// write, so that a suite marking its own server a judge gets nothing.
fn remember_judging(judging: &[serde_json::Value]) -> Result<(), CliError> {
    if judging.is_empty() {
        return Ok(());
    }
    let specs = judging
        .iter()
        .map(|server| serde_json::from_value::<McpServerSpec>(server.clone()))
        .collect::<Result<Vec<_>, _>>()
        .expect("import writes servers in the scenario format");
    let kept = crate::tool::mcp::judges::remember_imported(&specs)?;
    eprintln!(
        "{} judging server(s) may take the judge a run names with --judge-model (kept in {})",
        specs.len(),
        kept.display()
    );
    Ok(())
}

/// A command line's words, those that are paths here made absolute (the
/// scenarios start it from their own folder), symlinks kept: a venv's
/// python is a link that must stay one.
fn absolute_words(command: &str) -> Vec<String> {
    command
        .split_whitespace()
        .map(|word| match std::path::absolute(word) {
            Ok(path) if word.contains('/') && path.exists() => path.to_string_lossy().into_owned(),
            _ => word.to_owned(),
        })
        .collect()
}

fn bfcl(args: &BfclArgs) -> Result<ExitCode, CliError> {
    let answers = args.answers.clone().or_else(|| {
        let beside = default_answers(&args.questions);
        beside.exists().then_some(beside)
    });
    // The scenarios start the bridge from their own folder: paths that
    // exist here are written absolute.
    let bridge: Option<Vec<String>> = args.bridge.as_deref().map(absolute_words);
    if bridge.as_ref().is_some_and(Vec::is_empty) {
        return Err(CliError::Usage(
            "--bridge is empty: give the command that starts scripts/bfcl_bridge/bridge.py".into(),
        ));
    }
    let imported = import(
        &args.questions,
        answers.as_deref(),
        &args.out,
        bridge.as_deref(),
    )?;
    for (category, count) in &imported.by_category {
        eprintln!("{category}: {count} scenario(s)");
    }
    for (category, why) in &imported.skipped {
        eprintln!("{category}: skipped, not imported: the bridge cannot run it here ({why})");
    }
    eprintln!(
        "{} scenario file(s) written to {}",
        imported.written,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
