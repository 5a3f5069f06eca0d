//! Recovery: what a model did after the first error it was told in a
//! trial. The next attempt fixed it (Repair@1: its calls ran without an
//! error), made the same failed call again, answered in text instead, or
//! erred otherwise; and, when the next attempt did not fix it, whether a
//! later one did. Counted per kind of that first error, schema errors
//! (arguments refused as invalid, by the declared schema or a server's
//! own stricter check; a call not read; an unknown tool) apart from state
//! and runtime errors (the call was valid, the world refused it).

use std::collections::BTreeMap;

use super::AttemptOutcome;
use crate::call::Failure;

/// What the attempt after the first told error did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum NextMove {
    /// Its calls all ran without an error.
    Fixed,
    /// It repeated a call that had just failed, name and arguments alike,
    /// and erred again.
    SameCall,
    /// It made no call: text only.
    Text,
    /// It changed its calls and erred again.
    OtherError,
    /// The trial had no next attempt (out of attempts, or lost).
    NoNext,
}

impl NextMove {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A class of errors, for keeping schema errors apart from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorClass {
    /// The call's form was refused: unreadable, an unknown tool,
    /// arguments invalid by the declared schema or the server's own.
    Schema,
    /// The call was valid; the tool or the world refused it: a runtime
    /// error, not found, permission denied, a timeout, a path outside the
    /// sandbox.
    State,
}

impl ErrorClass {
    pub fn of(failure: Failure) -> ErrorClass {
        match failure {
            Failure::Parse | Failure::UnknownTool | Failure::Validation => ErrorClass::Schema,
            _ => ErrorClass::State,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Does a Python exception's text say Python refused the call itself, as
/// a `TypeError` of its arguments (one the function does not take, a
/// required one left out, too many)? What a harness that calls tools as
/// Python functions (BFCL, tau2) raises for a schema error.
pub fn python_refused_the_call(exception: &str) -> bool {
    [
        "unexpected keyword argument",
        "required positional argument",
        "required keyword-only argument",
        "positional argument but",
        "positional arguments but",
    ]
    .iter()
    .any(|s| exception.contains(s))
}

/// One trial's recovery from its first told error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// The first told error's kind (the first failed call's of the first
    /// attempt that had one).
    pub first: Failure,
    pub next: NextMove,
    /// Not fixed at the next attempt, but a later attempt's calls all ran
    /// without an error.
    pub later: bool,
}

/// The recovery of a trial whose attempts (a task's turns) are
/// `attempts`; `None` when no attempt was told an error.
pub fn of_attempts(attempts: &[AttemptOutcome]) -> Option<Recovery> {
    let told = |a: &AttemptOutcome| a.failures.iter().copied().find(|f| f.is_told());
    let clean = |a: &AttemptOutcome| a.calls > 0 && told(a).is_none();
    let at = attempts.iter().position(|a| told(a).is_some())?;
    let first = told(&attempts[at])?;
    let lost = |a: &AttemptOutcome| a.failures.iter().any(|f| f.is_infrastructure());
    let next = match attempts.get(at + 1) {
        None => NextMove::NoNext,
        Some(a) if lost(a) => NextMove::NoNext,
        Some(a) if a.calls == 0 => NextMove::Text,
        Some(a) if clean(a) => NextMove::Fixed,
        Some(a) if a.repeated_failed_call => NextMove::SameCall,
        Some(_) => NextMove::OtherError,
    };
    let later = next != NextMove::Fixed && attempts.iter().skip(at + 2).any(clean);
    Some(Recovery { first, next, later })
}

/// Recoveries counted: of the trials whose first told error was of one
/// kind, what the next attempt did and how many recovered later.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoveryCounts {
    pub first_errors: u64,
    pub fixed_next: u64,
    pub same_call: u64,
    pub text_instead: u64,
    pub other_error: u64,
    pub no_next: u64,
    pub recovered_later: u64,
}

impl RecoveryCounts {
    pub fn add(&mut self, recovery: &Recovery) {
        self.first_errors += 1;
        *match recovery.next {
            NextMove::Fixed => &mut self.fixed_next,
            NextMove::SameCall => &mut self.same_call,
            NextMove::Text => &mut self.text_instead,
            NextMove::OtherError => &mut self.other_error,
            NextMove::NoNext => &mut self.no_next,
        } += 1;
        self.recovered_later += u64::from(recovery.later);
    }

    pub fn merge(&mut self, other: &RecoveryCounts) {
        self.first_errors += other.first_errors;
        self.fixed_next += other.fixed_next;
        self.same_call += other.same_call;
        self.text_instead += other.text_instead;
        self.other_error += other.other_error;
        self.no_next += other.no_next;
        self.recovered_later += other.recovered_later;
    }

    /// The denominator of every share: first errors that had a next
    /// attempt.
    pub fn with_next(&self) -> u64 {
        self.first_errors - self.no_next
    }
}

/// Counts per first-error kind.
pub type RecoveryByKind = BTreeMap<Failure, RecoveryCounts>;

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(calls: u32, failures: &[Failure], repeated: bool) -> AttemptOutcome {
        AttemptOutcome {
            calls,
            failures: failures.to_vec(),
            repeated_failed_call: repeated,
            ..AttemptOutcome::default()
        }
    }

    #[test]
    fn the_next_move_is_read_from_the_attempt_after_the_first_told_error() {
        let runtime = attempt(1, &[Failure::Runtime], false);
        let cases = [
            (attempt(1, &[], false), NextMove::Fixed),
            // A wrong call with no error is still a fixed error.
            (attempt(1, &[Failure::WrongCall], false), NextMove::Fixed),
            (attempt(1, &[Failure::Runtime], true), NextMove::SameCall),
            (attempt(0, &[Failure::MissingCall], false), NextMove::Text),
            (
                attempt(1, &[Failure::Validation], false),
                NextMove::OtherError,
            ),
            (
                attempt(1, &[Failure::TransportError], false),
                NextMove::NoNext,
            ),
        ];
        for (next, expected) in cases {
            let recovery = of_attempts(&[runtime.clone(), next]).unwrap();
            assert_eq!(recovery.next, expected);
            assert_eq!(recovery.first, Failure::Runtime);
        }
        assert_eq!(of_attempts(&[runtime]).unwrap().next, NextMove::NoNext);
    }

    #[test]
    fn a_later_fix_counts_only_when_the_next_attempt_did_not_fix_it() {
        let wrong_at_once = attempt(1, &[Failure::WrongCall], false);
        let invalid = attempt(1, &[Failure::Validation], false);
        let same = attempt(1, &[Failure::Validation], true);
        let clean = attempt(1, &[], false);
        // A verdict on calls that ran is not a told error.
        assert_eq!(of_attempts(std::slice::from_ref(&wrong_at_once)), None);
        let recovery = of_attempts(&[wrong_at_once, invalid.clone(), same, clean.clone()]).unwrap();
        assert_eq!(recovery.first, Failure::Validation);
        assert_eq!(recovery.next, NextMove::SameCall);
        assert!(recovery.later);
        let fixed = of_attempts(&[invalid, clean.clone(), clean]).unwrap();
        assert_eq!(fixed.next, NextMove::Fixed);
        assert!(!fixed.later);
    }

    #[test]
    fn counts_keep_their_denominator_to_trials_with_a_next_attempt() {
        let mut counts = RecoveryCounts::default();
        for next in [NextMove::Fixed, NextMove::Text, NextMove::NoNext] {
            counts.add(&Recovery {
                first: Failure::Runtime,
                next,
                later: false,
            });
        }
        assert_eq!(counts.first_errors, 3);
        assert_eq!(counts.with_next(), 2);
        assert_eq!((counts.fixed_next, counts.text_instead), (1, 1));
        assert_eq!(ErrorClass::of(Failure::Validation), ErrorClass::Schema);
        assert_eq!(ErrorClass::of(Failure::Runtime), ErrorClass::State);
    }
}
