//! A call that does not match, in BFCL's words: its error type (a
//! [`Reason`], one of the outcome names every report shares) and the
//! parameter a mismatch is about.

pub use crate::call::Reason;

/// A call that does not match: BFCL's reason, and the parameter it is
/// about (the first wrong one in the order the model wrote them, as BFCL
/// reports it), when it is about one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub reason: Reason,
    pub parameter: Option<String>,
}

impl From<Reason> for Mismatch {
    fn from(reason: Reason) -> Mismatch {
        Mismatch {
            reason,
            parameter: None,
        }
    }
}
