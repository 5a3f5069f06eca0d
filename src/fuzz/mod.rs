//! Validator fuzzing: valid instances generated from a tool's schema, and
//! invalid ones made by one mutation operator per keyword. A validator
//! must accept the first and reject the second; what it accepts of the
//! second survives, and the share it rejects is its kill rate.

pub mod calls;
mod cases;
pub mod differential;
pub mod external;
pub mod report;
pub mod run;
pub mod session;
pub mod shrink;
#[cfg(test)]
mod tests;
pub mod wire;

pub use crate::schema::mutate::{Mutant, Mutation, site_path};
pub(crate) use cases::smaller_than_kept;
pub use cases::{BLOCK, CaseBlocks, CaseKind, Cases, Counts, Example, ToolFuzz, fuzz_schema};
