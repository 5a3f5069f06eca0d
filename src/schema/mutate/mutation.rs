//! The mutation operators' names: one per JSON Schema keyword a mutant
//! breaks, and where a validator reports it.

use crate::pointer::Pointer;
use serde::Serialize;

/// The keyword a mutant breaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Mutation {
    Type,
    Required,
    Enum,
    Const,
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
    MultipleOf,
    MinLength,
    MaxLength,
    Pattern,
    Format,
    MinItems,
    MaxItems,
    UniqueItems,
    AdditionalProperties,
    NotAnObject,
}

impl Mutation {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Mutation {
    /// The JSON Schema keyword the mutant breaks, as a schema path ends.
    pub fn schema_keyword(self) -> &'static str {
        match self {
            Mutation::Type | Mutation::NotAnObject => "type",
            Mutation::Required => "required",
            Mutation::Enum => "enum",
            Mutation::Const => "const",
            Mutation::Minimum => "minimum",
            Mutation::Maximum => "maximum",
            Mutation::ExclusiveMinimum => "exclusiveMinimum",
            Mutation::ExclusiveMaximum => "exclusiveMaximum",
            Mutation::MultipleOf => "multipleOf",
            Mutation::MinLength => "minLength",
            Mutation::MaxLength => "maxLength",
            Mutation::Pattern => "pattern",
            Mutation::Format => "format",
            Mutation::MinItems => "minItems",
            Mutation::MaxItems => "maxItems",
            Mutation::UniqueItems => "uniqueItems",
            Mutation::AdditionalProperties => "additionalProperties",
        }
    }

    /// Where a validator reports the mutant broken at `pointer`: there,
    /// or for a missing property, at the object that lacks it.
    pub fn reported_at(self, pointer: &Pointer) -> Pointer {
        match self {
            Mutation::Required => pointer.parent(),
            _ => pointer.clone(),
        }
    }
}
