//! `toolgauge import bfcl`: BFCL entries as scenario files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::CliError;
use crate::bfcl::import::{default_answers, import};

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
    let ImportSource::Bfcl(args) = &args.source;
    let answers = args.answers.clone().or_else(|| {
        let beside = default_answers(&args.questions);
        beside.exists().then_some(beside)
    });
    // The scenarios start the bridge from their own folder: paths that
    // exist here are written absolute.
    let bridge: Option<Vec<String>> = args.bridge.as_ref().map(|command| {
        command
            .split_whitespace()
            // Absolute, symlinks kept: a venv's python is a link that
            // must stay one.
            .map(|word| match std::path::absolute(word) {
                Ok(path) if word.contains('/') && path.exists() => {
                    path.to_string_lossy().into_owned()
                }
                _ => word.to_owned(),
            })
            .collect()
    });
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
    eprintln!(
        "{} scenario file(s) written to {}",
        imported.written,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
