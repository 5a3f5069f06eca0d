//! Mutation operators: one per JSON Schema keyword. Each takes a valid
//! instance and breaks the one constraint its keyword states, at the
//! top level or at any nested path, and says which pointer it broke.

mod mutation;
mod plan;
mod site;

pub use mutation::Mutation;
pub use plan::{Plan, mutants, sites};
pub use site::{Mutant, Site, SitePath, site_path};
