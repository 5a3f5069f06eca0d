//! `doctor`: probes a live endpoint the way a careful engineer would
//! before trusting a run against it, and says what it found with the
//! evidence. A self-correction run means something only when the model
//! can call a tool and is shown what its calls got back; many compatible
//! servers drop tool results from the prompt without a word. Where the
//! server reports usage, "shown" is read off the prompt tokens (a longer
//! result must cost more), which does not depend on how capable the
//! model is; a nonce the model repeats is further evidence.

mod before_run;
mod diagnosis;
mod probes;

pub use before_run::{before_run, diagnose_blocking};
pub use diagnosis::{Diagnosis, DoctorError, Finding, Probe, UnknownProbe, Verdict};
pub use probes::{diagnose, endpoint};
