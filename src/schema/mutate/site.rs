//! A mutant and the site it is made at: where in an instance one
//! keyword is broken and how, built only when the fuzzer uses it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Mutation;
use crate::pointer::Pointer;

/// Where a site is, as reports group sites: its pointer with array
/// indices as `*` ([`site_path`]), numbered within its plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SitePath(pub u32);

/// An instance that breaks one constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutant {
    pub mutation: Mutation,
    /// Where the value that was broken is.
    pub pointer: Pointer,
    pub instance: Value,
}

/// Where and how one mutant breaks an instance, before it is built: the
/// fuzzer makes many sites and builds only the mutants it uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub mutation: Mutation,
    /// Shared by the sites at one place (one allocation, not one a site).
    pub pointer: Arc<Pointer>,
    /// The pointer's site path, in its plan's numbers.
    pub path: SitePath,
    pub(super) edit: Edit,
}

/// What a site does to the value at its pointer.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Edit {
    Replace(Value),
    /// A value that depends on the schema only, shared with its plan.
    Planned(Arc<Value>),
    Remove,
    /// Add a property of this name to the object (cloned only when built).
    AddProperty(String),
}

impl Site {
    /// The mutant of `instance` (the instance the site was found in).
    pub fn apply(&self, instance: &Value) -> Mutant {
        Mutant {
            mutation: self.mutation,
            pointer: Pointer::clone(&self.pointer),
            instance: apply_edit(instance, &self.pointer, &self.edit),
        }
    }
}

fn apply_edit(instance: &Value, at: &Pointer, edit: &Edit) -> Value {
    let replacement = match edit {
        Edit::Replace(value) => Some(value),
        Edit::Planned(value) => Some(value.as_ref()),
        _ => None,
    };
    if at.is_root()
        && let Some(value) = replacement
    {
        return value.clone();
    }
    let mut copy = instance.clone();
    match edit {
        Edit::Replace(_) | Edit::Planned(_) => {
            if let (Some(slot), Some(value)) = (value_at(&mut copy, at.as_str()), replacement) {
                *slot = value.clone();
            }
        }
        Edit::Remove => {
            let (parent, key) = at.as_str().rsplit_once('/').unwrap_or_default();
            if let Some(Value::Object(map)) = value_at(&mut copy, parent) {
                map.remove(crate::pointer::key_of(key).as_ref());
            }
        }
        Edit::AddProperty(name) => {
            if let Some(Value::Object(map)) = value_at(&mut copy, at.as_str()) {
                map.insert(name.clone(), json!(true));
            }
        }
    }
    copy
}

/// The value at `pointer` (one a [`Pointer`] wrote), its segments read
/// in place: a site's pointer is followed once for every mutant built.
fn value_at<'v>(value: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    let mut here = value;
    for segment in pointer.split('/').skip(1) {
        here = match here {
            Value::Object(map) => map.get_mut(crate::pointer::key_of(segment).as_ref())?,
            Value::Array(items) => items.get_mut(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(here)
}

/// Where a mutant breaks the arguments, as reports group it: its JSON
/// pointer with array indices as `*` (`/tags/*`), `/` for the whole.
pub fn site_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "/".to_owned();
    }
    if !pointer.contains(|c: char| c.is_ascii_digit()) {
        return pointer.to_owned();
    }
    pointer
        .split('/')
        .map(|segment| {
            if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}
