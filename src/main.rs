//! The `toolgauge` binary: parse arguments, call the library, map the
//! outcome to an exit code (0 ok, 1 a check failed, 2 bad input or usage).

use std::process::ExitCode;

use clap::Parser;
use mimalloc::MiMalloc;
use toolgauge::cli::Cli;

// The pipeline allocates many small values per call; mimalloc is markedly
// faster at that than the system allocator.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn main() -> ExitCode {
    // Output piped into `head` ends quietly, as for any Unix tool, instead
    // of a panic on the closed pipe.
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match toolgauge::cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            // The last guard: no message echoes a huge value whole.
            let message = error.to_string();
            eprintln!("error: {}", toolgauge::excerpt::cut_quoted(&message));
            ExitCode::from(error.exit_code())
        }
    }
}
