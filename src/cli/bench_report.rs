//! `toolgauge bench-report`

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::CliError;
use crate::report::bench;
use crate::source;

#[derive(Debug, Args)]
pub struct BenchReportArgs {
    /// criterion's output folder.
    #[arg(long, default_value = "target/criterion", value_name = "DIR")]
    pub criterion: PathBuf,
    /// The Node anchor's results (OUTFILE of ../shared/anchors/bench.js).
    #[arg(long, value_name = "RESULTS.json")]
    pub node: Option<PathBuf>,
    /// Where bench.csv and bench.md go.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// A description of the machine; default: CPU model and core count.
    #[arg(long)]
    pub machine: Option<String>,
}

pub fn run(args: &BenchReportArgs) -> Result<ExitCode, CliError> {
    let measured = bench::read_criterion(&args.criterion)?;
    let node: Option<bench::NodeResults> =
        args.node.as_deref().map(source::read_json).transpose()?;
    let rows = bench::rows(&measured, node.as_ref());
    let machine = args.machine.clone().unwrap_or_else(machine);
    bench::write(&rows, &machine, &args.out)?;
    eprintln!(
        "{} bench(es) written to {}",
        rows.len(),
        args.out.join("bench.csv").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}
