//! A quick yes/no check for the tool schemas most agents use: `type`,
//! `properties`, `required`, `additionalProperties`, `enum`, `const`,
//! numeric bounds, string lengths and `items`, plus annotations. Such a
//! schema compiles to a small tree that answers "valid?" in a fraction of
//! the general validator's time; a schema with any other keyword does not
//! compile, and the general validator alone decides. The answers are the
//! same as jsonschema's, and so are the errors of an invalid instance
//! (the same pointer and message lines, in an order of its own): tested
//! against jsonschema on every BFCL schema and the JSON Schema Test Suite.

use std::cmp::Ordering;

use super::Draft;
use rustc_hash::FxHashMap;
use serde_json::{Map, Number, Value};

use super::errors::{ArgumentError, Violation, word};
use crate::call::Arguments;

/// Up to this many properties a linear scan beats hashing the name.
const LINEAR_PROPERTIES: usize = 8;

/// Keywords that only annotate: they never change validity.
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// A compiled schema of the supported subset.
#[derive(Debug, Clone)]
pub struct FastSchema {
    root: Node,
}

/// JSON types as bits; `integer` is its own bit, and `number` covers it.
mod types {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const INTEGER: u8 = 4;
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
}

#[derive(Debug, Clone, Default)]
struct Node {
    /// Allowed types; `None` allows any.
    types: Option<u8>,
    /// The `enum` array as written, and its values.
    enumeration: Option<Box<Value>>,
    /// The `enum`'s message, worded once: it lists every option.
    enum_message: Option<Box<str>>,
    /// The `type`'s message, worded once.
    type_message: Box<str>,
    constant: Option<Box<Value>>,
    /// Numeric bounds as written (numbers).
    minimum: Option<Box<Value>>,
    maximum: Option<Box<Value>>,
    exclusive_minimum: Option<Box<Value>>,
    exclusive_maximum: Option<Box<Value>>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    items: Option<Box<Node>>,
    properties: Vec<Property>,
    /// Positions in `properties` by name, when there are many of them.
    by_name: Option<FxHashMap<String, usize>>,
    /// `required`, as written (strings).
    required: Vec<Value>,
    /// How many distinct properties are required.
    required_properties: usize,
    /// The `enum` when every option is a string: compared as strings.
    string_options: Option<Vec<String>>,
    /// Whether any numeric bound is set (most numbers have none).
    number_bounds: bool,
    /// Whether a length bound is set (most strings have none).
    length_bounds: bool,
    /// Whether an `enum` or a `const` is set (most values have neither).
    value_checks: bool,
    /// Whether a required name has no entry in `properties`.
    required_elsewhere: bool,
    additional: Additional,
}

#[derive(Debug, Clone)]
struct Property {
    name: String,
    schema: Node,
    required: bool,
}

#[derive(Debug, Clone, Default)]
enum Additional {
    #[default]
    Allowed,
    Forbidden,
    Schema(Box<Node>),
}

impl FastSchema {
    /// The quick form of `schema` under `draft`, or `None` when the schema
    /// uses anything outside the supported subset (or an older draft,
    /// whose numbers and bounds read differently).
    pub fn compile(schema: &Value, draft: Draft) -> Option<FastSchema> {
        if !matches!(
            draft,
            Draft::Draft6 | Draft::Draft7 | Draft::Draft201909 | Draft::Draft202012
        ) {
            return None;
        }
        let root = match schema {
            // `$schema` names the draft, at the root only.
            Value::Object(object) => compile_object(object, true)?,
            other => compile(other)?,
        };
        Some(FastSchema { root })
    }

    pub fn is_valid(&self, instance: &Value) -> bool {
        self.root.is_valid(instance)
    }

    /// [`FastSchema::is_valid`] for a call's arguments, read as they
    /// arrived (no `serde_json::Value` of the whole is made).
    pub fn arguments_are_valid(&self, arguments: &Arguments) -> bool {
        if self.root.checks_members_only() {
            self.root.object_is_valid(arguments)
        } else {
            self.root.is_valid(arguments.as_value())
        }
    }

    /// [`FastSchema::errors`] for a call's arguments.
    pub fn argument_errors(&self, arguments: &Arguments) -> Vec<ArgumentError> {
        if !self.root.checks_members_only() {
            return self.errors(arguments.as_value());
        }
        let mut out = Vec::with_capacity(2);
        self.root.write_object_errors(arguments, None, &mut out);
        out
    }

    /// Every error of `instance` as a `(pointer, message)` pair, worded
    /// as the general validator's are.
    pub fn errors(&self, instance: &Value) -> Vec<ArgumentError> {
        // Most invalid calls break one or two things.
        let mut out = Vec::with_capacity(2);
        self.root.write_errors(instance, None, &mut out);
        out
    }
}

fn compile(schema: &Value) -> Option<Node> {
    match schema {
        Value::Bool(true) => Some(Node::default()),
        Value::Object(object) => compile_object(object, false),
        // `false` and anything else: the general validator.
        _ => None,
    }
}

fn compile_object(schema: &Map<String, Value>, root: bool) -> Option<Node> {
    let mut node = Node::default();
    for (keyword, value) in schema {
        match keyword.as_str() {
            "type" => node.types = Some(type_set(value)?),
            "enum" if value.is_array() => node.enumeration = Some(Box::new(value.clone())),
            "const" => node.constant = Some(Box::new(value.clone())),
            "minimum" => node.minimum = Some(number(value)?),
            "maximum" => node.maximum = Some(number(value)?),
            "exclusiveMinimum" => node.exclusive_minimum = Some(number(value)?),
            "exclusiveMaximum" => node.exclusive_maximum = Some(number(value)?),
            "minLength" => node.min_length = Some(count(value)?),
            "maxLength" => node.max_length = Some(count(value)?),
            "minItems" => node.min_items = Some(count(value)?),
            "maxItems" => node.max_items = Some(count(value)?),
            // The one-schema-for-every-item form only (not a tuple).
            "items" if value.is_object() || value.is_boolean() => {
                node.items = Some(Box::new(compile(value)?));
            }
            "properties" => {
                node.properties = value
                    .as_object()?
                    .iter()
                    .map(|(name, schema)| {
                        Some(Property {
                            name: name.clone(),
                            schema: compile(schema)?,
                            required: false,
                        })
                    })
                    .collect::<Option<_>>()?;
            }
            "required" => {
                let names = value.as_array()?;
                if !names.iter().all(Value::is_string) {
                    return None;
                }
                node.required = names.clone();
            }
            "additionalProperties" => {
                node.additional = match value {
                    Value::Bool(true) => Additional::Allowed,
                    Value::Bool(false) => Additional::Forbidden,
                    other => Additional::Schema(Box::new(compile(other)?)),
                };
            }
            "$schema" if root => {}
            annotation if ANNOTATIONS.contains(&annotation) => {}
            _ => return None,
        }
    }
    node.derive();
    Some(node)
}

impl Node {
    /// What the checks read ready-made, derived from the keywords once:
    /// which groups of checks apply, the lookup by name, the messages.
    fn derive(&mut self) {
        self.number_bounds = self.minimum.is_some()
            || self.maximum.is_some()
            || self.exclusive_minimum.is_some()
            || self.exclusive_maximum.is_some();
        self.length_bounds = self.min_length.is_some() || self.max_length.is_some();
        self.value_checks = self.enumeration.is_some() || self.constant.is_some();
        if self.properties.len() > LINEAR_PROPERTIES {
            self.by_name = Some(
                self.properties
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (p.name.clone(), i))
                    .collect(),
            );
        }
        if let Some(allowed) = self.types {
            let mut message = String::new();
            word(Violation::Type(allowed), &mut message);
            self.type_message = message.into_boxed_str();
        }
        self.enum_message = self.enumeration.as_ref().map(|options| {
            let mut message = String::new();
            word(Violation::Enum(options), &mut message);
            message.into_boxed_str()
        });
        self.string_options = self.enumeration.as_ref().and_then(|options| {
            options
                .as_array()?
                .iter()
                .map(|option| option.as_str().map(str::to_owned))
                .collect()
        });
        for name in self.required.iter().filter_map(Value::as_str) {
            match self.properties.iter_mut().find(|p| p.name == name) {
                Some(property) if !property.required => {
                    property.required = true;
                    self.required_properties += 1;
                }
                Some(_) => {}
                None => self.required_elsewhere = true,
            }
        }
    }
}

fn type_set(value: &Value) -> Option<u8> {
    let bit = |name: &Value| match name.as_str()? {
        "null" => Some(types::NULL),
        "boolean" => Some(types::BOOLEAN),
        "integer" => Some(types::INTEGER),
        "number" => Some(types::NUMBER),
        "string" => Some(types::STRING),
        "array" => Some(types::ARRAY),
        "object" => Some(types::OBJECT),
        _ => None,
    };
    match value {
        Value::Array(names) if !names.is_empty() => {
            names.iter().try_fold(0, |set, name| Some(set | bit(name)?))
        }
        Value::String(_) => bit(value),
        _ => None,
    }
}

/// Cold data of a node is boxed: a node stays small, and a scan over
/// properties touches few cache lines.
fn number(value: &Value) -> Option<Box<Value>> {
    value.is_number().then(|| Box::new(value.clone()))
}

/// A non-negative whole count (`minLength: 2`, `maxItems: 3.0`).
fn count(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    n.as_u64().or_else(|| {
        let x = n.as_f64()?;
        (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64)
    })
}

impl Node {
    /// Whether an object instance is checked by its members alone: its
    /// type allowed, and no `enum` or `const` comparing it whole.
    fn checks_members_only(&self) -> bool {
        self.types
            .is_none_or(|allowed| allowed & types::OBJECT != 0)
            && !self.value_checks
            && self.enum_message.is_none()
            && self.constant.is_none()
    }

    fn is_valid(&self, instance: &Value) -> bool {
        if let Some(allowed) = self.types
            && !type_allowed(allowed, instance)
        {
            return false;
        }
        if self.value_checks && !self.enum_and_const_hold(instance) {
            return false;
        }
        match instance {
            Value::Number(n) => !self.number_bounds || self.number_violations(n).next().is_none(),
            Value::String(text) => {
                !self.length_bounds || self.length_violations(text).next().is_none()
            }
            Value::Array(items) => {
                self.items_count_violations(items).next().is_none()
                    && self
                        .items
                        .as_ref()
                        .is_none_or(|schema| items.iter().all(|item| schema.is_valid(item)))
            }
            Value::Object(members) => self.object_is_valid(members),
            Value::Null | Value::Bool(_) => true,
        }
    }

    fn enum_and_const_hold(&self, instance: &Value) -> bool {
        self.enum_holds(instance)
            && self
                .constant
                .as_ref()
                .is_none_or(|constant| equal(constant, instance))
    }

    fn enum_holds(&self, instance: &Value) -> bool {
        if let Some(options) = &self.string_options {
            return instance.as_str().is_some_and(|text| {
                options
                    .iter()
                    .any(|option| crate::json_eq::str_eq(option, text))
            });
        }
        self.enumeration.as_ref().is_none_or(|options| {
            options
                .as_array()
                .is_some_and(|options| options.iter().any(|option| equal(option, instance)))
        })
    }

    /// Every numeric bound `n` breaks, in the order jsonschema checks them.
    fn number_violations(&self, n: &Number) -> impl Iterator<Item = Violation<'_>> {
        let n = n.clone();
        let bounds = [
            (&self.minimum, Ordering::is_ge as fn(Ordering) -> bool),
            (&self.maximum, Ordering::is_le),
            (&self.exclusive_minimum, Ordering::is_gt),
            (&self.exclusive_maximum, Ordering::is_lt),
        ];
        bounds
            .into_iter()
            .enumerate()
            .filter_map(move |(which, (limit, allowed))| {
                let limit = limit.as_ref()?;
                let holds = limit
                    .as_number()
                    .and_then(|limit| compare(&n, limit))
                    .is_some_and(allowed);
                (!holds).then_some(match which {
                    0 => Violation::Minimum(limit),
                    1 => Violation::Maximum(limit),
                    2 => Violation::ExclusiveMinimum(limit),
                    _ => Violation::ExclusiveMaximum(limit),
                })
            })
    }

    fn length_violations(&self, text: &str) -> impl Iterator<Item = Violation<'_>> {
        // Lengths count characters (code points), not bytes; count only
        // when a bound asks.
        let length = (self.min_length.is_some() || self.max_length.is_some())
            .then(|| text.chars().count() as u64);
        let short = self
            .min_length
            .filter(|min| length.is_some_and(|l| l < *min))
            .map(Violation::MinLength);
        let long = self
            .max_length
            .filter(|max| length.is_some_and(|l| l > *max))
            .map(Violation::MaxLength);
        short.into_iter().chain(long)
    }

    fn items_count_violations(&self, items: &[Value]) -> impl Iterator<Item = Violation<'_>> {
        let length = items.len() as u64;
        let few = self
            .min_items
            .filter(|min| length < *min)
            .map(Violation::MinItems);
        let many = self
            .max_items
            .filter(|max| length > *max)
            .map(Violation::MaxItems);
        few.into_iter().chain(many)
    }

    /// One pass over the instance's members, each looked up among the
    /// (few) declared properties; required ones are counted on the way.
    fn object_is_valid(&self, members: &(impl Object + ?Sized)) -> bool {
        let mut required_seen = 0;
        for (position, (key, member)) in members.each().enumerate() {
            match self.property(key, position) {
                Some(property) => {
                    if !property.schema.is_valid(member) {
                        return false;
                    }
                    required_seen += usize::from(property.required);
                }
                None => match &self.additional {
                    Additional::Allowed => {}
                    Additional::Forbidden => return false,
                    Additional::Schema(schema) => {
                        if !schema.is_valid(member) {
                            return false;
                        }
                    }
                },
            }
        }
        required_seen == self.required_properties
            && (!self.required_elsewhere
                || self
                    .required
                    .iter()
                    .filter_map(Value::as_str)
                    .all(|name| members.has(name)))
    }

    /// The declared property `name`, the member at `position` of the
    /// instance: models mostly write arguments in the schema's order, so
    /// the property at the same position is tried first.
    #[inline]
    fn property(&self, name: &str, position: usize) -> Option<&Property> {
        if let Some(property) = self.properties.get(position)
            && crate::json_eq::str_eq(&property.name, name)
        {
            return Some(property);
        }
        match &self.by_name {
            Some(index) => index.get(name).map(|&i| &self.properties[i]),
            None => self
                .properties
                .iter()
                .find(|p| crate::json_eq::str_eq(&p.name, name)),
        }
    }

    fn write_errors(&self, instance: &Value, path: Path<'_>, out: &mut Vec<ArgumentError>) {
        if let Some(allowed) = self.types
            && !type_allowed(allowed, instance)
        {
            line(path, Violation::Worded(&self.type_message), out);
        }
        if let Some(message) = &self.enum_message
            && !self.enum_holds(instance)
        {
            line(path, Violation::Worded(message), out);
        }
        if let Some(constant) = &self.constant
            && !equal(constant, instance)
        {
            line(path, Violation::Const(constant), out);
        }
        match instance {
            Value::Number(n) if self.number_bounds => {
                for violation in self.number_violations(n) {
                    line(path, violation, out);
                }
            }
            Value::String(text) => {
                for violation in self.length_violations(text) {
                    line(path, violation, out);
                }
            }
            Value::Array(items) => {
                for violation in self.items_count_violations(items) {
                    line(path, violation, out);
                }
                if let Some(schema) = &self.items {
                    for (index, item) in items.iter().enumerate() {
                        let here = Segment {
                            parent: path,
                            step: Step::Index(index),
                        };
                        schema.write_errors(item, Some(&here), out);
                    }
                }
            }
            Value::Object(members) => self.write_object_errors(members, path, out),
            Value::Number(_) | Value::Null | Value::Bool(_) => {}
        }
    }

    fn write_object_errors(
        &self,
        members: &(impl Object + ?Sized),
        path: Path<'_>,
        out: &mut Vec<ArgumentError>,
    ) {
        let mut required_seen = 0;
        let mut unexpected = Vec::new();
        for (position, (key, member)) in members.each().enumerate() {
            let schema = match (self.property(key, position), &self.additional) {
                (Some(property), _) => {
                    required_seen += usize::from(property.required);
                    &property.schema
                }
                (None, Additional::Schema(schema)) => schema,
                (None, Additional::Allowed) => continue,
                (None, Additional::Forbidden) => {
                    unexpected.push(key);
                    continue;
                }
            };
            let here = Segment {
                parent: path,
                step: Step::Key(key),
            };
            schema.write_errors(member, Some(&here), out);
        }
        // Look names up only when the count says one is missing.
        if required_seen != self.required_properties || self.required_elsewhere {
            for name in &self.required {
                if !name.as_str().is_some_and(|name| members.has(name)) {
                    line(path, Violation::Required(name), out);
                }
            }
        }
        if !unexpected.is_empty() {
            line(path, Violation::AdditionalProperties(&unexpected), out);
        }
    }
}

/// An object instance as the quick check reads it: a nested value's map,
/// or a call's arguments as they arrived.
trait Object {
    /// The members, in order.
    fn each(&self) -> impl Iterator<Item = (&str, &Value)>;
    /// Whether there is a member called `name`.
    fn has(&self, name: &str) -> bool;
}

impl Object for Map<String, Value> {
    fn each(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.iter().map(|(key, member)| (key.as_str(), member))
    }

    /// The few members of tool arguments compare faster one by one than
    /// the name is hashed.
    fn has(&self, name: &str) -> bool {
        if self.len() <= LINEAR_PROPERTIES {
            self.keys().any(|key| crate::json_eq::str_eq(key, name))
        } else {
            self.contains_key(name)
        }
    }
}

impl Object for Arguments {
    fn each(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.members()
    }

    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// Where an error is: a chain of steps on the stack, written out as a
/// JSON pointer only when an error needs it (valid parts cost nothing).
type Path<'a> = Option<&'a Segment<'a>>;

struct Segment<'a> {
    parent: Path<'a>,
    step: Step<'a>,
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// One error, its pointer written out only now.
fn line(path: Path<'_>, violation: Violation<'_>, out: &mut Vec<ArgumentError>) {
    out.push(ArgumentError::worded(
        |pointer| match path {
            None => pointer.push('/'),
            Some(segment) => write_pointer(segment, pointer),
        },
        violation,
    ));
}

fn write_pointer(segment: &Segment<'_>, out: &mut String) {
    if let Some(parent) = segment.parent {
        write_pointer(parent, out);
    }
    out.push('/');
    match segment.step {
        // A key as a JSON pointer segment (RFC 6901).
        Step::Key(key) => out.push_str(&crate::pointer::segment(key)),
        Step::Index(index) => out.push_str(itoa::Buffer::new().format(index)),
    }
}

fn type_allowed(allowed: u8, instance: &Value) -> bool {
    let bit = match instance {
        Value::Null => types::NULL,
        Value::Bool(_) => types::BOOLEAN,
        // A whole number is an integer, whatever its spelling (1, 1.0);
        // worth asking only when `number` does not already allow it.
        Value::Number(n) => {
            return allowed & types::NUMBER != 0
                || (allowed & types::INTEGER != 0 && is_integer(n));
        }
        Value::String(_) => types::STRING,
        Value::Array(_) => types::ARRAY,
        Value::Object(_) => types::OBJECT,
    };
    allowed & bit != 0
}

fn is_integer(n: &Number) -> bool {
    n.is_u64() || n.is_i64() || n.as_f64().is_some_and(|x| x.fract() == 0.0)
}

/// Numbers compare by value, exactly for integers of either sign.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let whole = |n: &Number| {
        n.as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from))
    };
    match (whole(a), whole(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// JSON equality, where numbers are equal by value (1 and 1.0).
fn equal(a: &Value, b: &Value) -> bool {
    crate::json_eq::equal_by(a, b, &|a, b| match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        _ => a == b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quick(schema: Value) -> FastSchema {
        FastSchema::compile(&schema, Draft::Draft202012).expect("in the subset")
    }

    #[test]
    fn the_workload_schemas_compile_and_decide() {
        let math = quick(json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["add", "multiply"]},
                "a": {"type": "number"}, "b": {"type": "number"}
            },
            "required": ["operation", "a", "b"]
        }));
        assert!(math.is_valid(&json!({"operation": "add", "a": 1, "b": 2.5})));
        assert!(!math.is_valid(&json!({"operation": "pow", "a": 1, "b": 2})));
        assert!(!math.is_valid(&json!({"operation": "add", "a": "1", "b": 2})));
        assert!(!math.is_valid(&json!({"operation": "add", "a": 1})));
    }

    #[test]
    fn numbers_read_as_json_schema_reads_them() {
        let schema = quick(json!({"type": "integer", "minimum": 1, "exclusiveMaximum": 10}));
        assert!(schema.is_valid(&json!(1.0)));
        assert!(!schema.is_valid(&json!(1.5)));
        assert!(!schema.is_valid(&json!(10)));
        assert!(!schema.is_valid(&json!(0)));
        let exact = quick(json!({"maximum": u64::MAX - 1}));
        assert!(!exact.is_valid(&json!(u64::MAX)));
        assert!(quick(json!({"enum": [1]})).is_valid(&json!(1.0)));
        assert!(quick(json!({"const": {"a": [1]}})).is_valid(&json!({"a": [1.0]})));
    }

    #[test]
    fn objects_with_many_properties_are_checked_through_the_name_index() {
        let properties: Map<String, Value> = (0..20)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect();
        let schema = quick(json!({
            "type": "object", "properties": properties,
            "required": ["p3", "p17"], "additionalProperties": false
        }));
        assert!(schema.root.by_name.is_some());
        assert!(schema.is_valid(&json!({"p3": 1, "p17": 2, "p9": 3})));
        assert!(!schema.is_valid(&json!({"p3": 1, "p17": "x"})));
        assert!(!schema.is_valid(&json!({"p3": 1})));
        assert!(!schema.is_valid(&json!({"p3": 1, "p17": 2, "p20": 0})));
        let errors: Vec<String> = schema
            .errors(&json!({"p3": "x", "p99": 0}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "/p3: must be integer",
                "/: must have required property 'p17'",
                "/: must NOT have additional properties: 'p99'"
            ]
        );
    }

    #[test]
    fn anything_outside_the_subset_is_left_to_the_general_validator() {
        for schema in [
            json!({"type": "string", "pattern": "^a"}),
            json!({"type": "string", "format": "date"}),
            json!({"anyOf": [{"type": "string"}]}),
            json!({"$ref": "#/$defs/x", "$defs": {"x": {}}}),
            json!({"properties": {"a": false}}),
            json!({"items": [{"type": "string"}]}),
            json!({"type": "strnig"}),
            json!({"x-custom": 1}),
        ] {
            assert!(
                FastSchema::compile(&schema, Draft::Draft202012).is_none(),
                "{schema}"
            );
        }
        assert!(FastSchema::compile(&json!({"type": "object"}), Draft::Draft4).is_none());
    }
}
