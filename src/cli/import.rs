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
    /// A BFCL question file of a single-turn category, e.g. BFCL_v4_simple_python.json.
    #[arg(value_name = "QUESTIONS.json")]
    pub questions: PathBuf,
    /// Its possible answers. Default: possible_answer/<same name> beside it,
    /// when that exists (irrelevance categories have none).
    #[arg(long, value_name = "POSSIBLE_ANSWER.json")]
    pub answers: Option<PathBuf>,
    /// Where the scenario files go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: &ImportArgs) -> Result<ExitCode, CliError> {
    let ImportSource::Bfcl(args) = &args.source;
    let answers = args.answers.clone().or_else(|| {
        let beside = default_answers(&args.questions);
        beside.exists().then_some(beside)
    });
    let imported = import(&args.questions, answers.as_deref(), &args.out)?;
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
