//! The `toolgauge` binary: parse arguments, call the library, map the
//! outcome to an exit code (0 ok, 1 a check failed, 2 bad input or usage).

// The binary reports what stops it on stderr.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use mimalloc::MiMalloc;
use toolgauge::cli::Cli;

// The pipeline allocates many small values per call; mimalloc is markedly
// faster at that than the system allocator.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default), so that writing to a child
    // that closed its stdin is an EPIPE error where it happens, never the
    // death of the run. Our own output piped into `head` still ends
    // quietly, as for any Unix tool.
    end_quietly_on_a_closed_stdout();
    let cli = Cli::parse();
    match toolgauge::cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            // The last guard: no message echoes a huge value whole.
            let message = error.to_string();
            let message = toolgauge::excerpt::cut_quoted(&message);
            eprintln!("error: {}", toolgauge::cli::for_terminal(&message));
            ExitCode::from(error.exit_code())
        }
    }
}

/// `println!` panics when stdout is a closed pipe; that panic ends the
/// process as SIGPIPE would have, with no message. Any other panic is
/// reported as usual.
fn end_quietly_on_a_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let closed = message.starts_with("failed printing to std")
            && message.contains(&std::io::Error::from_raw_os_error(libc::EPIPE).to_string());
        if closed {
            // SAFETY: restoring SIGPIPE's default action and raising it
            // ends this process at once, as a closed pipe does elsewhere.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::raise(libc::SIGPIPE);
            }
        }
        default(info);
    }));
}
