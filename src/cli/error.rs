//! Every error of the command line, whole by kind, and `exit_code`: the
//! one match from kind to exit code; `for_terminal`, what untrusted text
//! becomes before it is printed.

pub const EXIT_OK: u8 = 0;

pub const EXIT_FAILED: u8 = 1;

pub const EXIT_BAD_INPUT: u8 = 2;

/// 128 + SIGINT, as shells report a command stopped by Ctrl-C (143 for
/// SIGTERM).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Text as it may reach the terminal: no known key in it, and every
/// control sequence a server, a bridge or a model sent shown, not obeyed.
pub fn for_terminal(text: &str) -> String {
    crate::excerpt::terminal_safe(&crate::secret::redact(text)).into_owned()
}

/// What stops a command, worded for the person at the terminal: the
/// library's own typed errors, carried whole, or a problem with the
/// command line itself; [`CliError::exit_code`] maps each kind to its
/// exit code in one place. A failed check is an exit code, not an error.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag, a path or a combination of them, worded here.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    File(#[from] crate::source::FileError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error(transparent)]
    Recording(#[from] crate::model::RecordingError),
    #[error(transparent)]
    NotRecorded(#[from] crate::model::NotRecorded),
    #[error(transparent)]
    Tools(#[from] crate::tool::RegistryError),
    #[error(transparent)]
    Merge(#[from] crate::harness::merge::MergeError),
    #[error(transparent)]
    Compare(#[from] crate::report::CompareError),
    #[error(transparent)]
    Bench(#[from] crate::report::bench::BenchError),
    #[error(transparent)]
    Import(#[from] crate::bfcl::import::ImportError),
    #[error(transparent)]
    Tau2(#[from] crate::tau2::Tau2Error),
    #[error(transparent)]
    Traces(#[from] crate::traces::TracesError),
    #[error(transparent)]
    Doctor(#[from] crate::doctor::DoctorError),
    #[error(transparent)]
    Setup(Box<crate::harness::SetupError>),
    #[error(transparent)]
    Mcp(#[from] crate::tool::mcp::McpError),
    #[error(transparent)]
    JudgeState(#[from] crate::tool::mcp::judges::StateError),
    #[error(transparent)]
    Fuzz(#[from] crate::fuzz::run::FuzzError),
    #[error(transparent)]
    Validator(#[from] crate::fuzz::session::BadValidator),
    #[error(transparent)]
    Run(#[from] crate::harness::RunError),
    /// Tool definitions that could not be written out as JSON.
    #[error("cannot write the tools as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

impl From<crate::harness::SetupError> for CliError {
    fn from(error: crate::harness::SetupError) -> Self {
        CliError::Setup(Box::new(error))
    }
}

impl CliError {
    /// The documented exit code of each kind of error: an interrupted run
    /// says which signal stopped it; everything else is bad input or
    /// usage (a file, a flag, a server or a validator the user named that
    /// does not work as given).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Run(crate::harness::RunError::Interrupted { .. }) => EXIT_INTERRUPTED,
            // Not bad input: the run is not complete, and --resume goes on.
            CliError::Run(crate::harness::RunError::BatchUnfinished(_)) => EXIT_FAILED,
            CliError::Usage(_)
            | CliError::File(_)
            | CliError::Model(_)
            | CliError::Recording(_)
            | CliError::NotRecorded(_)
            | CliError::Tools(_)
            | CliError::Merge(_)
            | CliError::Compare(_)
            | CliError::Bench(_)
            | CliError::Import(_)
            | CliError::Tau2(_)
            | CliError::Traces(_)
            | CliError::Doctor(_)
            | CliError::Setup(_)
            | CliError::Mcp(_)
            | CliError::JudgeState(_)
            | CliError::Fuzz(_)
            | CliError::Validator(_)
            | CliError::Run(_)
            | CliError::Json(_)
            | CliError::Runtime(_) => EXIT_BAD_INPUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::RunError;

    #[test]
    fn each_error_keeps_its_kind_and_its_exit_code() {
        let interrupted = CliError::from(RunError::Interrupted {
            finished: 3,
            total: 10,
        });
        assert_eq!(interrupted.exit_code(), EXIT_INTERRUPTED);
        assert_eq!(
            interrupted.to_string(),
            "interrupted after 3 of 10 trial(s)"
        );
        let no_cases = CliError::from(crate::fuzz::run::FuzzError::NoCases);
        assert!(matches!(no_cases, CliError::Fuzz(_)));
        assert_eq!(no_cases.exit_code(), EXIT_BAD_INPUT);
        let unwritable = CliError::from(RunError::Io(std::io::Error::other("disk full")));
        assert_eq!(unwritable.exit_code(), EXIT_BAD_INPUT);
    }
}
