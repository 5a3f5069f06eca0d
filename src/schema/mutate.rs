//! Mutation operators: one per JSON Schema keyword. Each takes a valid
//! instance and breaks the one constraint its keyword states, at the
//! top level or at any nested path, and says which pointer it broke.

use crate::pointer::Pointer;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::required_names;

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
    pub pointer: Pointer,
    edit: Edit,
}

/// What a site does to the value at its pointer.
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    Replace(Value),
    Remove,
    /// Add a property of this name to the object (cloned only when built).
    AddProperty(String),
}

impl Site {
    /// The mutant of `instance` (the instance the site was found in).
    pub fn apply(&self, instance: &Value) -> Mutant {
        Mutant {
            mutation: self.mutation,
            pointer: self.pointer.clone(),
            instance: apply_edit(instance, &self.pointer, &self.edit),
        }
    }
}

/// Every mutation site the schema allows for this valid instance, at every path.
pub fn sites(schema: &Value, instance: &Value) -> Vec<Site> {
    let mut found = vec![];
    for not_object in [json!([]), json!("arguments"), json!(1)] {
        found.push(Site {
            mutation: Mutation::NotAnObject,
            pointer: Pointer::root(),
            edit: Edit::Replace(not_object),
        });
    }
    walk(
        schema,
        instance,
        &Pointer::root(),
        &mut |mutation, pointer, edit| {
            found.push(Site {
                mutation,
                pointer: pointer.clone(),
                edit,
            });
        },
    );
    found
}

/// Every mutant the schema allows for this valid instance, at every path.
pub fn mutants(schema: &Value, instance: &Value) -> Vec<Mutant> {
    sites(schema, instance)
        .iter()
        .map(|site| site.apply(instance))
        .collect()
}

fn apply_edit(instance: &Value, at: &Pointer, edit: &Edit) -> Value {
    let pointer = at.as_str();
    if at.is_root()
        && let Edit::Replace(value) = edit
    {
        return value.clone();
    }
    let mut copy = instance.clone();
    match edit {
        Edit::Replace(value) => {
            if let Some(slot) = copy.pointer_mut(pointer) {
                *slot = value.clone();
            }
        }
        Edit::Remove => {
            let key = at.last().unwrap_or_default();
            if let Some(Value::Object(map)) = copy.pointer_mut(at.parent().as_str()) {
                map.remove(&key);
            }
        }
        Edit::AddProperty(name) => {
            if let Some(Value::Object(map)) = copy.pointer_mut(pointer) {
                map.insert(name.clone(), json!(true));
            }
        }
    }
    copy
}

type Emit<'e> = dyn FnMut(Mutation, &Pointer, Edit) + 'e;

/// Every mutant of `value` (valid for `schema`) and of what it holds, one
/// keyword broken at a time, in a fixed order: a case's index names the
/// same mutant for good.
fn walk(schema: &Value, value: &Value, pointer: &Pointer, emit: &mut Emit<'_>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    let integer = schema.get("type").and_then(Value::as_str) == Some("integer");
    type_and_value(schema, value, pointer, integer, emit);
    bounds(schema, value, pointer, integer, emit);
    strings(schema, value, pointer, emit);
    if let Some(items) = value.as_array() {
        arrays(schema, items, pointer, emit);
    }
    if let Some(object) = value.as_object() {
        objects(schema, object, pointer, emit);
    }
}

fn number(schema: &Map<String, Value>, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

/// `type`, `enum` and `const`.
fn type_and_value(
    schema: &Map<String, Value>,
    value: &Value,
    pointer: &Pointer,
    integer: bool,
    emit: &mut Emit<'_>,
) {
    if schema.contains_key("type") {
        emit(Mutation::Type, pointer, Edit::Replace(other_type(value)));
    }
    // An integer's other type may also be a number: 1.5 where 1 or 2 is
    // expected (inward of any bound, so only the type is broken).
    if integer && let Some(n) = value.as_f64() {
        let inward = if number(schema, "maximum").is_some_and(|max| n + 0.5 > max) {
            n - 0.5
        } else {
            n + 0.5
        };
        emit(Mutation::Type, pointer, Edit::Replace(json!(inward)));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let mut candidate = json!("not_an_allowed_value");
        while options.contains(&candidate) {
            candidate = json!(format!("{}_", candidate.as_str().unwrap_or_default()));
        }
        emit(Mutation::Enum, pointer, Edit::Replace(candidate));
    }
    if let Some(expected) = schema.get("const") {
        emit(
            Mutation::Const,
            pointer,
            Edit::Replace(json!({"not": expected})),
        );
    }
}

/// Just outside each bound; for numbers also by a half, which a validator
/// that truncates to an integer lets through.
fn bounds(
    schema: &Map<String, Value>,
    value: &Value,
    pointer: &Pointer,
    integer: bool,
    emit: &mut Emit<'_>,
) {
    let as_number = |x: f64| {
        if integer && x.fract() == 0.0 {
            json!(x as i64)
        } else {
            json!(x)
        }
    };
    if let Some(min) = number(schema, "minimum") {
        emit(
            Mutation::Minimum,
            pointer,
            Edit::Replace(as_number(min - 1.0)),
        );
        if !integer {
            emit(Mutation::Minimum, pointer, Edit::Replace(json!(min - 0.5)));
        }
    }
    if let Some(max) = number(schema, "maximum") {
        emit(
            Mutation::Maximum,
            pointer,
            Edit::Replace(as_number(max + 1.0)),
        );
        if !integer {
            emit(Mutation::Maximum, pointer, Edit::Replace(json!(max + 0.5)));
        }
    }
    if let Some(min) = number(schema, "exclusiveMinimum") {
        emit(
            Mutation::ExclusiveMinimum,
            pointer,
            Edit::Replace(as_number(min)),
        );
    }
    if let Some(max) = number(schema, "exclusiveMaximum") {
        emit(
            Mutation::ExclusiveMaximum,
            pointer,
            Edit::Replace(as_number(max)),
        );
    }
    if let (Some(step), Some(current)) = (number(schema, "multipleOf"), value.as_f64()) {
        emit(
            Mutation::MultipleOf,
            pointer,
            Edit::Replace(json!(current + step / 2.0)),
        );
    }
}

/// Lengths, `pattern` and `format`.
fn strings(schema: &Map<String, Value>, value: &Value, pointer: &Pointer, emit: &mut Emit<'_>) {
    // Lengths count code points: one short in characters beyond the
    // Basic Multilingual Plane looks long enough in UTF-16 units, and one
    // too many with combining marks looks short enough in graphemes.
    if let Some(min) = count(schema, "minLength").filter(|m| *m > 0) {
        let short = min as usize - 1;
        emit(
            Mutation::MinLength,
            pointer,
            Edit::Replace(json!("x".repeat(short))),
        );
        if short > 0 {
            emit(
                Mutation::MinLength,
                pointer,
                Edit::Replace(json!("\u{1F600}".repeat(short))),
            );
        }
    }
    if let Some(max) = count(schema, "maxLength") {
        let long = max as usize + 1;
        emit(
            Mutation::MaxLength,
            pointer,
            Edit::Replace(json!("x".repeat(long))),
        );
        if long > 1 {
            let marked: String = "e\u{301}".repeat(long / 2) + if long % 2 == 1 { "x" } else { "" };
            emit(Mutation::MaxLength, pointer, Edit::Replace(json!(marked)));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        emit(
            Mutation::Pattern,
            pointer,
            Edit::Replace(json!(" \u{7f}~no match~ ")),
        );
        // ECMA-262 patterns: `\d` is ASCII digits only, and `$` the very
        // end, where Python's `re` also takes other digits and a newline.
        if let Some(text) = value.as_str() {
            if pattern.contains("\\d") && text.bytes().any(|b| b.is_ascii_digit()) {
                let arabic_indic: String = text
                    .chars()
                    .map(|c| match c.to_digit(10) {
                        Some(d) => char::from_u32(0x0660 + d).unwrap_or(c),
                        None => c,
                    })
                    .collect();
                emit(
                    Mutation::Pattern,
                    pointer,
                    Edit::Replace(json!(arabic_indic)),
                );
            }
            if pattern.ends_with('$') && !pattern.ends_with("\\$") {
                emit(
                    Mutation::Pattern,
                    pointer,
                    Edit::Replace(json!(format!("{text}\n"))),
                );
            }
        }
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        // Dropped as dishonest when the validator only annotates formats.
        emit(
            Mutation::Format,
            pointer,
            Edit::Replace(json!(format!("[not a {format}"))),
        );
    }
}

fn arrays(schema: &Map<String, Value>, items: &[Value], pointer: &Pointer, emit: &mut Emit<'_>) {
    if let Some(min) = count(schema, "minItems").filter(|m| *m > 0) {
        emit(
            Mutation::MinItems,
            pointer,
            Edit::Replace(Value::Array(
                items.iter().take(min as usize - 1).cloned().collect(),
            )),
        );
    }
    if let Some(max) = count(schema, "maxItems") {
        let filler = items.first().cloned().unwrap_or(Value::Null);
        let mut longer = items.to_vec();
        longer.resize(max as usize + 1, filler);
        emit(
            Mutation::MaxItems,
            pointer,
            Edit::Replace(Value::Array(longer)),
        );
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true))
        && let Some(first) = items.first()
    {
        let mut doubled = items.to_vec();
        doubled.push(first.clone());
        emit(
            Mutation::UniqueItems,
            pointer,
            Edit::Replace(Value::Array(doubled)),
        );
    }
    if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
        for (i, item) in items.iter().enumerate() {
            walk(item_schema, item, &pointer.clone().index(i), emit);
        }
    }
}

fn objects(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    pointer: &Pointer,
    emit: &mut Emit<'_>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in required_names(schema) {
        if object.contains_key(name) {
            emit(Mutation::Required, &pointer.clone().key(name), Edit::Remove);
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let mut name = "unexpected_property".to_owned();
        while object.contains_key(&name) || properties.is_some_and(|p| p.contains_key(&name)) {
            name.push('_');
        }
        emit(
            Mutation::AdditionalProperties,
            pointer,
            Edit::AddProperty(name),
        );
    }
    if let Some(properties) = properties {
        for (name, property) in properties {
            if let Some(child) = object.get(name) {
                walk(property, child, &pointer.clone().key(name), emit);
            }
        }
    }
}

/// A value of another JSON type (shared with the mock models' wrong calls).
pub(crate) fn other_type(value: &Value) -> Value {
    match value {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("12345"),
        Value::Bool(_) => json!("true"),
        Value::Null => json!(0),
        Value::Array(_) => json!({"not": "an array"}),
        Value::Object(_) => json!(["not", "an object"]),
    }
}
