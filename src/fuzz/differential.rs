//! Differential fuzzing: the same cases through several validators. A
//! case they do not all give the same verdict on is a disagreement;
//! disagreements are grouped by the site their cases break (valid
//! instances apart) and each group is shown by its smallest case,
//! minimised.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::pointer::Pointer;

use super::{CaseKind, Cases, Example, Mutation, shrink, site_path, smaller_than_kept};

/// Where validators disagree: one site, and its smallest case.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement {
    /// The keyword the cases break; `None` for valid instances.
    pub mutation: Option<Mutation>,
    /// The site's path (`/` for the whole, array items as `*`).
    pub path: String,
    /// Cases of this site the validators disagree on.
    pub cases: u64,
    /// The smallest of them.
    pub example: Example,
    /// Each validator's verdict on it (`true`: valid), in the order given.
    pub verdicts: Vec<bool>,
    /// The smallest instance found with the same verdicts.
    pub minimised: Value,
}

impl Disagreement {
    /// `valid`, or the keyword the cases break.
    pub fn keyword(&self) -> &'static str {
        self.mutation.map_or("valid", Mutation::as_str)
    }
}

/// Where validators disagree, by site.
pub type Found = BTreeMap<(Option<Mutation>, String), Disagreement>;

/// Disagreements among `verdicts` (one list per validator, each over the
/// cases in order; only the cases every list reaches count).
pub fn disagreements(cases: &Cases, verdicts: &[Vec<bool>]) -> Vec<Disagreement> {
    let mut found = Found::new();
    collect(&mut found, cases, verdicts);
    found.into_values().collect()
}

/// Add the disagreements among `verdicts` on one block of cases to
/// `found` (each site keeps its smallest case, the earlier of two).
pub fn collect(found: &mut Found, cases: &Cases, verdicts: &[Vec<bool>]) {
    let judged = verdicts.iter().map(Vec::len).min().unwrap_or(0);
    for index in 0..judged.min(cases.len()) {
        let first = verdicts[0][index];
        if verdicts.iter().all(|v| v[index] == first) {
            continue;
        }
        let instance = &cases.instances[index];
        let root = Pointer::root();
        let (mutation, pointer) = match &cases.kinds[index] {
            CaseKind::Valid => (None, &root),
            CaseKind::Mutant { mutation, pointer } => (Some(*mutation), pointer),
        };
        let example = || Example {
            case: cases.offset + index as u64,
            pointer: pointer.clone(),
            instance: instance.clone(),
        };
        let each = || verdicts.iter().map(|v| v[index]).collect::<Vec<bool>>();
        let key = (mutation, site_path(pointer.as_str()));
        match found.get_mut(&key) {
            Some(known) => {
                known.cases += 1;
                if smaller_than_kept(instance, Some(&known.example)) {
                    known.example = example();
                    known.verdicts = each();
                    known.minimised = instance.clone();
                }
            }
            None => {
                found.insert(
                    key.clone(),
                    Disagreement {
                        mutation,
                        path: key.1,
                        cases: 1,
                        example: example(),
                        verdicts: each(),
                        minimised: instance.clone(),
                    },
                );
            }
        }
    }
}

impl Disagreement {
    /// Minimise the example: the smallest instance on which `judge` (every
    /// validator's verdicts, `None` when one could not give one) still
    /// gives the same verdicts, within `budget` checks, and which the
    /// `reference` still judges for the same reason: valid, or broken at
    /// the same keyword and path only. So the minimised instance still
    /// shows what the site says.
    pub fn minimise(
        &mut self,
        reference: &crate::schema::Compiled,
        budget: usize,
        judge: &mut dyn FnMut(&Value) -> Option<Vec<bool>>,
    ) {
        let wanted = self.verdicts.clone();
        let (mutation, pointer) = (self.mutation, self.example.pointer.clone());
        self.minimised = shrink::shrink(&self.example.instance, budget, &mut |candidate| {
            same_reason(reference, mutation, &pointer, candidate)
                && judge(candidate).as_ref() == Some(&wanted)
        });
    }
}

/// Whether `reference` finds `candidate` valid (no `mutation`), or broken
/// by `mutation` at `pointer` and by nothing else.
fn same_reason(
    reference: &crate::schema::Compiled,
    mutation: Option<Mutation>,
    pointer: &Pointer,
    candidate: &Value,
) -> bool {
    let Some(mutation) = mutation else {
        return reference.full_is_valid(candidate);
    };
    reference.broken_only_by(
        candidate,
        mutation.schema_keyword(),
        &mutation.reported_at(pointer),
    )
}
