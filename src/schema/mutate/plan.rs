//! What a schema lets be broken, read once: each keyword a mutant breaks,
//! with the values that break it where they depend on the schema only,
//! so that finding the sites of many instances reads no schema again.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::site::{Edit, Site, SitePath};
use super::{Mutant, Mutation};
use crate::pointer::Pointer;
use crate::schema::required_names;

/// A schema's mutation sites, compiled.
#[derive(Debug, Clone)]
pub struct Plan {
    root: Node,
    /// Every site path a site of this schema can have, by [`SitePath`].
    paths: Vec<String>,
    /// The whole instance's place, and what stands for it when it is not
    /// an object.
    root_pointer: Arc<Pointer>,
    not_objects: [Arc<Value>; 3],
}

/// One schema object's keywords, as the operators use them.
#[derive(Debug, Clone, Default)]
struct Node {
    /// The site path of this node's sites.
    path: SitePath,
    typed: bool,
    integer: bool,
    /// The value outside `enum`, and `const`'s `{"not": ...}`.
    not_enum: Option<Arc<Value>>,
    not_const: Option<Arc<Value>>,
    /// Each bound's mutants, in the operators' order.
    bounds: Vec<(Mutation, Arc<Value>)>,
    maximum: Option<f64>,
    multiple_of: Option<f64>,
    /// `minLength` and `maxLength`'s mutants.
    lengths: Vec<(Mutation, Arc<Value>)>,
    pattern: Option<PatternPlan>,
    not_format: Option<Arc<Value>>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    items: Option<Box<Node>>,
    /// Each required name, with the site path of the property.
    required: Vec<(String, SitePath)>,
    closed: bool,
    properties: Vec<(String, Node)>,
}

#[derive(Debug, Clone)]
struct PatternPlan {
    /// The mutant that matches no pattern.
    no_match: Arc<Value>,
    /// `\d`: ASCII digits only, where other engines take any.
    digits: bool,
    /// Ends at `$`: the very end, where other engines allow a newline.
    anchored: bool,
}

impl Plan {
    pub fn new(schema: &Value) -> Plan {
        let mut paths = Paths::default();
        let root = Node::new(schema, &Pointer::root(), &mut paths);
        Plan {
            root,
            paths: paths.names,
            root_pointer: Arc::new(Pointer::root()),
            not_objects: [json!([]), json!("arguments"), json!(1)].map(Arc::new),
        }
    }

    /// A site path as reports write it (`/tags/*`, `/` for the whole).
    pub fn site_path(&self, path: SitePath) -> &str {
        &self.paths[path.0 as usize]
    }

    /// How many site paths this schema's sites can have.
    pub fn site_paths(&self) -> usize {
        self.paths.len()
    }

    /// Every mutation site for this valid instance, at every path, in a
    /// fixed order: a case's index names the same mutant for good.
    pub fn sites(&self, instance: &Value) -> Vec<Site> {
        let mut found = vec![];
        self.each_site(instance, &mut |site| found.push(site));
        found
    }

    /// [`Plan::sites`], each handed to `take` as it is found.
    pub fn each_site(&self, instance: &Value, take: &mut dyn FnMut(Site)) {
        let root = &self.root_pointer;
        for not_object in &self.not_objects {
            take(Site {
                mutation: Mutation::NotAnObject,
                pointer: root.clone(),
                path: self.root.path,
                edit: Edit::Planned(not_object.clone()),
            });
        }
        let mut emit = |mutation, pointer: &Arc<Pointer>, path, edit| {
            take(Site {
                mutation,
                pointer: pointer.clone(),
                path,
                edit,
            })
        };
        self.root.walk(instance, root, &mut emit);
    }
}

/// Every mutation site the schema allows for this valid instance, at
/// every path (see [`Plan`] to find the sites of many instances).
pub fn sites(schema: &Value, instance: &Value) -> Vec<Site> {
    Plan::new(schema).sites(instance)
}

/// Every mutant the schema allows for this valid instance, at every path.
pub fn mutants(schema: &Value, instance: &Value) -> Vec<Mutant> {
    sites(schema, instance)
        .iter()
        .map(|site| site.apply(instance))
        .collect()
}

fn number(schema: &Map<String, Value>, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

type Emit<'e> = dyn FnMut(Mutation, &Arc<Pointer>, SitePath, Edit) + 'e;

/// The site paths met while compiling, each numbered once.
#[derive(Default)]
struct Paths {
    names: Vec<String>,
    numbers: std::collections::HashMap<String, SitePath>,
}

impl Paths {
    /// The number of the site path of `pointer`.
    fn of(&mut self, pointer: &Pointer) -> SitePath {
        let name = super::site_path(pointer.as_str());
        if let Some(number) = self.numbers.get(&name) {
            return *number;
        }
        let number = SitePath(self.names.len() as u32);
        self.names.push(name.clone());
        self.numbers.insert(name, number);
        number
    }
}

impl Node {
    /// `pointer`: where an instance's value for this node is (array
    /// items at index 0: their site path is the same at every index).
    fn new(schema: &Value, pointer: &Pointer, paths: &mut Paths) -> Node {
        let path = paths.of(pointer);
        let Some(schema) = schema.as_object() else {
            return Node {
                path,
                ..Node::default()
            };
        };
        let integer = schema.get("type").and_then(Value::as_str) == Some("integer");
        let properties = schema.get("properties").and_then(Value::as_object);
        Node {
            path,
            typed: schema.contains_key("type"),
            integer,
            not_enum: schema.get("enum").and_then(Value::as_array).map(|options| {
                let mut candidate = json!("not_an_allowed_value");
                while options.contains(&candidate) {
                    candidate = json!(format!("{}_", candidate.as_str().unwrap_or_default()));
                }
                Arc::new(candidate)
            }),
            not_const: schema
                .get("const")
                .map(|expected| Arc::new(json!({"not": expected}))),
            bounds: bounds(schema, integer),
            maximum: number(schema, "maximum"),
            multiple_of: number(schema, "multipleOf"),
            lengths: lengths(schema),
            pattern: schema
                .get("pattern")
                .and_then(Value::as_str)
                .map(|pattern| PatternPlan {
                    no_match: Arc::new(json!(" \u{7f}~no match~ ")),
                    digits: pattern.contains("\\d"),
                    anchored: pattern.ends_with('$') && !pattern.ends_with("\\$"),
                }),
            not_format: schema
                .get("format")
                .and_then(Value::as_str)
                .map(|format| Arc::new(json!(format!("[not a {format}")))),
            min_items: count(schema, "minItems").filter(|m| *m > 0),
            max_items: count(schema, "maxItems"),
            unique_items: schema.get("uniqueItems") == Some(&Value::Bool(true)),
            items: schema
                .get("items")
                .filter(|s| s.is_object())
                .map(|items| Box::new(Node::new(items, &pointer.clone().index(0), paths))),
            required: required_names(schema)
                .map(|name| (name.to_owned(), paths.of(&pointer.clone().key(name))))
                .collect(),
            closed: schema.get("additionalProperties") == Some(&Value::Bool(false)),
            properties: properties
                .into_iter()
                .flatten()
                .map(|(name, property)| {
                    let at = pointer.clone().key(name);
                    (name.clone(), Node::new(property, &at, paths))
                })
                .collect(),
        }
    }

    /// Every mutant of `value` (valid for this node's schema) and of
    /// what it holds, one keyword broken at a time.
    fn walk(&self, value: &Value, pointer: &Arc<Pointer>, emit: &mut Emit<'_>) {
        self.type_and_value(value, pointer, emit);
        for (mutation, broken) in &self.bounds {
            emit(*mutation, pointer, self.path, Edit::Planned(broken.clone()));
        }
        if let (Some(step), Some(current)) = (self.multiple_of, value.as_f64()) {
            emit(
                Mutation::MultipleOf,
                pointer,
                self.path,
                Edit::Replace(json!(current + step / 2.0)),
            );
        }
        self.strings(value, pointer, emit);
        if let Some(items) = value.as_array() {
            self.arrays(items, pointer, emit);
        }
        if let Some(object) = value.as_object() {
            self.objects(object, pointer, emit);
        }
    }

    /// `type`, `enum` and `const`.
    fn type_and_value(&self, value: &Value, pointer: &Arc<Pointer>, emit: &mut Emit<'_>) {
        if self.typed {
            emit(
                Mutation::Type,
                pointer,
                self.path,
                Edit::Replace(other_type(value)),
            );
        }
        // An integer's other type may also be a number: 1.5 where 1 or 2
        // is expected (inward of any bound, so only the type is broken).
        if self.integer
            && let Some(n) = value.as_f64()
        {
            let inward = if self.maximum.is_some_and(|max| n + 0.5 > max) {
                n - 0.5
            } else {
                n + 0.5
            };
            emit(
                Mutation::Type,
                pointer,
                self.path,
                Edit::Replace(json!(inward)),
            );
        }
        if let Some(candidate) = &self.not_enum {
            emit(
                Mutation::Enum,
                pointer,
                self.path,
                Edit::Planned(candidate.clone()),
            );
        }
        if let Some(broken) = &self.not_const {
            emit(
                Mutation::Const,
                pointer,
                self.path,
                Edit::Planned(broken.clone()),
            );
        }
    }

    /// Lengths, `pattern` and `format`.
    fn strings(&self, value: &Value, pointer: &Arc<Pointer>, emit: &mut Emit<'_>) {
        for (mutation, broken) in &self.lengths {
            emit(*mutation, pointer, self.path, Edit::Planned(broken.clone()));
        }
        if let Some(pattern) = &self.pattern {
            emit(
                Mutation::Pattern,
                pointer,
                self.path,
                Edit::Planned(pattern.no_match.clone()),
            );
            // ECMA-262 patterns: `\d` is ASCII digits only, and `$` the
            // very end, where Python's `re` also takes other digits and a
            // newline.
            if let Some(text) = value.as_str() {
                if pattern.digits && text.bytes().any(|b| b.is_ascii_digit()) {
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
                        self.path,
                        Edit::Replace(json!(arabic_indic)),
                    );
                }
                if pattern.anchored {
                    emit(
                        Mutation::Pattern,
                        pointer,
                        self.path,
                        Edit::Replace(json!(format!("{text}\n"))),
                    );
                }
            }
        }
        // Dropped as dishonest when the validator only annotates formats.
        if let Some(broken) = &self.not_format {
            emit(
                Mutation::Format,
                pointer,
                self.path,
                Edit::Planned(broken.clone()),
            );
        }
    }

    fn arrays(&self, items: &[Value], pointer: &Arc<Pointer>, emit: &mut Emit<'_>) {
        if let Some(min) = self.min_items {
            emit(
                Mutation::MinItems,
                pointer,
                self.path,
                Edit::Replace(Value::Array(
                    items.iter().take(min as usize - 1).cloned().collect(),
                )),
            );
        }
        if let Some(max) = self.max_items {
            let filler = items.first().cloned().unwrap_or(Value::Null);
            let mut longer = items.to_vec();
            longer.resize(max as usize + 1, filler);
            emit(
                Mutation::MaxItems,
                pointer,
                self.path,
                Edit::Replace(Value::Array(longer)),
            );
        }
        if self.unique_items
            && let Some(first) = items.first()
        {
            let mut doubled = items.to_vec();
            doubled.push(first.clone());
            emit(
                Mutation::UniqueItems,
                pointer,
                self.path,
                Edit::Replace(Value::Array(doubled)),
            );
        }
        if let Some(item) = &self.items {
            for (i, value) in items.iter().enumerate() {
                item.walk(value, &Arc::new(Pointer::clone(pointer).index(i)), emit);
            }
        }
    }

    fn objects(&self, object: &Map<String, Value>, pointer: &Arc<Pointer>, emit: &mut Emit<'_>) {
        for (name, path) in &self.required {
            if object.contains_key(name) {
                let at = Arc::new(Pointer::clone(pointer).key(name));
                emit(Mutation::Required, &at, *path, Edit::Remove);
            }
        }
        if self.closed {
            let mut name = "unexpected_property".to_owned();
            while object.contains_key(&name) || self.properties.iter().any(|(p, _)| *p == name) {
                name.push('_');
            }
            emit(
                Mutation::AdditionalProperties,
                pointer,
                self.path,
                Edit::AddProperty(name),
            );
        }
        for (name, property) in &self.properties {
            if let Some(child) = object.get(name) {
                property.walk(child, &Arc::new(Pointer::clone(pointer).key(name)), emit);
            }
        }
    }
}

/// Just outside each bound; for numbers also by a half, which a validator
/// that truncates to an integer lets through.
fn bounds(schema: &Map<String, Value>, integer: bool) -> Vec<(Mutation, Arc<Value>)> {
    let as_number = |x: f64| {
        if integer && x.fract() == 0.0 {
            json!(x as i64)
        } else {
            json!(x)
        }
    };
    let mut out = Vec::new();
    if let Some(min) = number(schema, "minimum") {
        out.push((Mutation::Minimum, Arc::new(as_number(min - 1.0))));
        if !integer {
            out.push((Mutation::Minimum, Arc::new(json!(min - 0.5))));
        }
    }
    if let Some(max) = number(schema, "maximum") {
        out.push((Mutation::Maximum, Arc::new(as_number(max + 1.0))));
        if !integer {
            out.push((Mutation::Maximum, Arc::new(json!(max + 0.5))));
        }
    }
    if let Some(min) = number(schema, "exclusiveMinimum") {
        out.push((Mutation::ExclusiveMinimum, Arc::new(as_number(min))));
    }
    if let Some(max) = number(schema, "exclusiveMaximum") {
        out.push((Mutation::ExclusiveMaximum, Arc::new(as_number(max))));
    }
    out
}

/// Lengths count code points: one short in characters beyond the Basic
/// Multilingual Plane looks long enough in UTF-16 units, and one too many
/// with combining marks looks short enough in graphemes.
fn lengths(schema: &Map<String, Value>) -> Vec<(Mutation, Arc<Value>)> {
    let mut out = Vec::new();
    if let Some(min) = count(schema, "minLength").filter(|m| *m > 0) {
        let short = min as usize - 1;
        out.push((Mutation::MinLength, Arc::new(json!("x".repeat(short)))));
        if short > 0 {
            out.push((
                Mutation::MinLength,
                Arc::new(json!("\u{1F600}".repeat(short))),
            ));
        }
    }
    if let Some(max) = count(schema, "maxLength") {
        let long = max as usize + 1;
        out.push((Mutation::MaxLength, Arc::new(json!("x".repeat(long)))));
        if long > 1 {
            let marked: String = "e\u{301}".repeat(long / 2) + if long % 2 == 1 { "x" } else { "" };
            out.push((Mutation::MaxLength, Arc::new(json!(marked))));
        }
    }
    out
}

/// A value of another JSON type.
fn other_type(value: &Value) -> Value {
    match value {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("12345"),
        Value::Bool(_) => json!("true"),
        Value::Null => json!(0),
        Value::Array(_) => json!({"not": "an array"}),
        Value::Object(_) => json!(["not", "an object"]),
    }
}
