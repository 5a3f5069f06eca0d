//! Valid instances of a JSON Schema, as proptest strategies (so that
//! failures shrink). Every instance is checked against the schema before
//! use: a generator that guesses wrong produces fewer cases, never a false
//! "valid" one.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Just, Union};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

use crate::tool::required_names;

/// How far past a lower bound generated sizes and numbers go.
const SPREAD: u64 = 6;

/// A strategy for values of `schema` (best effort; see the module doc).
pub fn strategy(schema: &Value) -> BoxedStrategy<Value> {
    let Some(s) = schema.as_object() else {
        return Just(Value::Null).boxed();
    };
    if let Some(value) = s.get("const") {
        return Just(value.clone()).boxed();
    }
    if let Some(options) = s
        .get("enum")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
    {
        return prop::sample::select(options.clone()).boxed();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = s
            .get(key)
            .and_then(Value::as_array)
            .filter(|o| !o.is_empty())
        {
            return Union::new(options.iter().map(strategy)).boxed();
        }
    }
    if let Some(parts) = s.get("allOf").and_then(Value::as_array) {
        let mut merged = s.clone();
        merged.remove("allOf");
        for part in parts.iter().filter_map(Value::as_object) {
            for (key, value) in part {
                match (merged.get_mut(key), value) {
                    (Some(Value::Object(mine)), Value::Object(theirs)) => {
                        mine.extend(theirs.clone())
                    }
                    (Some(Value::Array(mine)), Value::Array(theirs)) => mine.extend(theirs.clone()),
                    (None, _) => {
                        merged.insert(key.clone(), value.clone());
                    }
                    _ => {}
                }
            }
        }
        return strategy(&Value::Object(merged));
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if s.contains_key("properties") => vec!["object"],
        _ => vec!["string", "integer", "boolean"],
    };
    Union::new(types.into_iter().map(|t| typed(s, t))).boxed()
}

fn typed(s: &Map<String, Value>, ty: &str) -> BoxedStrategy<Value> {
    let number = |key: &str| s.get(key).and_then(Value::as_f64);
    let count = |key: &str| s.get(key).and_then(Value::as_u64);
    match ty {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" | "number" => {
            let low = number("minimum")
                .or(number("exclusiveMinimum").map(|m| m + 1.0))
                .unwrap_or(-1000.0);
            let high = number("maximum")
                .or(number("exclusiveMaximum").map(|m| m - 1.0))
                .unwrap_or(low.max(0.0) + 1000.0)
                .max(low);
            let (low, high) = (low.ceil() as i64, high.floor() as i64);
            if let Some(step) = number("multipleOf").filter(|m| *m > 0.0) {
                let (first, last) = (
                    (low as f64 / step).ceil() as i64,
                    (high as f64 / step).floor() as i64,
                );
                let integer = ty == "integer";
                return (first..=last.max(first))
                    .prop_map(move |k| {
                        if integer {
                            json!((k as f64 * step) as i64)
                        } else {
                            json!(k as f64 * step)
                        }
                    })
                    .boxed();
            }
            if ty == "integer" {
                (low..=high.max(low)).prop_map(|n| json!(n)).boxed()
            } else {
                (low..=high.max(low), 0u8..4)
                    .prop_map(|(n, q)| json!(n as f64 + f64::from(q) * 0.25))
                    .boxed()
            }
        }
        "string" => {
            let min = count("minLength").unwrap_or(0);
            let max = count("maxLength").unwrap_or(min + SPREAD * 2).max(min);
            match s.get("format").and_then(Value::as_str) {
                Some("date") => return Just(json!("2026-11-22")).boxed(),
                Some("date-time") => return Just(json!("2026-11-22T10:00:00Z")).boxed(),
                Some("email") => return Just(json!("ada@example.com")).boxed(),
                Some("uri" | "iri" | "uri-reference" | "iri-reference") => {
                    return Just(json!("https://example.com/x")).boxed();
                }
                Some("time") => return Just(json!("10:00:00Z")).boxed(),
                Some("uuid") => return Just(json!("0b5e3a1c-7d2f-4c1e-9a3b-2f6d8e4c1a70")).boxed(),
                Some("ipv4") => return Just(json!("192.0.2.7")).boxed(),
                Some("ipv6") => return Just(json!("2001:db8::7")).boxed(),
                Some("hostname" | "idn-hostname") => return Just(json!("example.com")).boxed(),
                Some("duration") => return Just(json!("P1DT2H")).boxed(),
                Some("json-pointer") => return Just(json!("/a/0")).boxed(),
                _ => {}
            }
            if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
                && let Ok(strategy) = proptest::string::string_regex(&ecma_classes(
                    pattern.trim_start_matches('^').trim_end_matches('$'),
                ))
            {
                return strategy.prop_map(Value::String).boxed();
            }
            proptest::string::string_regex(&format!(
                "[a-z ]{{{min},{}}}",
                max.min(min + SPREAD * 4)
            ))
            .expect("a valid regex")
            .prop_map(Value::String)
            .boxed()
        }
        "array" => {
            let items = s
                .get("items")
                .map_or_else(|| Just(Value::Null).boxed(), strategy);
            let min = count("minItems").unwrap_or(0) as usize;
            let max = (count("maxItems").unwrap_or(min as u64 + 3) as usize)
                .max(min)
                .min(min + SPREAD as usize);
            prop::collection::vec(items, min..=max)
                .prop_map(Value::Array)
                .boxed()
        }
        _ => {
            let required: Vec<String> = required_names(s).map(str::to_owned).collect();
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = s
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(name, property)| {
                    let name = name.clone();
                    let value = strategy(property);
                    if required.contains(&name) {
                        value.prop_map(move |v| Some((name.clone(), v))).boxed()
                    } else {
                        prop::option::of(value.prop_map(move |v| (name.clone(), v))).boxed()
                    }
                })
                .collect();
            fields
                .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
                .boxed()
        }
    }
}

/// JSON Schema patterns are ECMA-262 regexes, where `\d` and `\w` are
/// ASCII; Rust's regex syntax makes them Unicode, and most Unicode digits
/// drawn would then fail the pattern and be thrown away.
fn ecma_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('w') => out.push_str("[A-Za-z0-9_]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Up to `n` distinct-draw valid instances, deterministic from `seed`.
pub fn valid_instances(
    schema: &Value,
    validator: &jsonschema::Validator,
    n: usize,
    seed: u64,
) -> Vec<Value> {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = strategy(schema);
    let mut found = Vec::with_capacity(n);
    for _ in 0..n * 10 {
        if found.len() == n {
            break;
        }
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            break;
        };
        let value = proptest::strategy::ValueTree::current(&tree);
        if validator.is_valid(&value) {
            found.push(value);
        }
    }
    found
}
