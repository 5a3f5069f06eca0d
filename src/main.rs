//! The `toolgauge` binary: parse arguments, call the library, map the
//! outcome to an exit code (0 ok, 1 a check failed, 2 bad input or usage).

use std::process::ExitCode;

use clap::Parser;
use toolgauge::cli::{Cli, EXIT_BAD_INPUT};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match toolgauge::cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
