//! Minimising an instance: the smallest instance, found greedily, that
//! still shows what the original showed (a disagreement between
//! validators, say). Each step removes a property or an item, shortens a
//! string or brings a number toward zero, anywhere in the instance; the
//! first step that still shows it is kept, until none does or the budget
//! of checks is spent.

use serde_json::{Map, Value};

/// The smallest instance reached from `instance` for which `still` holds,
/// calling `still` at most `budget` times. `instance` itself is assumed
/// to hold.
pub fn shrink(instance: &Value, budget: usize, still: &mut dyn FnMut(&Value) -> bool) -> Value {
    let mut current = instance.clone();
    let mut checks = 0;
    'smaller: while checks < budget {
        for candidate in one_step_smaller(&current) {
            if checks >= budget {
                break 'smaller;
            }
            checks += 1;
            if still(&candidate) {
                current = candidate;
                continue 'smaller;
            }
        }
        break;
    }
    current
}

/// Every instance one step smaller than `value`, whole: steps at the top
/// first, then inside each property and item.
fn one_step_smaller(value: &Value) -> Vec<Value> {
    let mut out = local_steps(value);
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                for smaller in one_step_smaller(child) {
                    let mut copy = map.clone();
                    copy.insert(key.clone(), smaller);
                    out.push(Value::Object(copy));
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                for smaller in one_step_smaller(child) {
                    let mut copy = items.clone();
                    copy[i] = smaller;
                    out.push(Value::Array(copy));
                }
            }
        }
        _ => {}
    }
    out
}

/// Strings longer than this shrink by halves only.
const CHAR_BY_CHAR: usize = 40;

/// Steps that change `value` itself. Each makes it strictly smaller (fewer
/// entries, fewer characters, a number nearer zero), so shrinking ends.
fn local_steps(value: &Value) -> Vec<Value> {
    match value {
        Value::Object(map) => map
            .keys()
            .map(|key| {
                let mut copy: Map<String, Value> = map.clone();
                copy.remove(key);
                Value::Object(copy)
            })
            .collect(),
        Value::Array(items) => {
            let mut out = Vec::new();
            if items.len() > 1 {
                out.push(Value::Array(Vec::new()));
            }
            out.extend((0..items.len()).map(|i| {
                let mut copy = items.clone();
                copy.remove(i);
                Value::Array(copy)
            }));
            out
        }
        Value::String(text) => shorter_strings(text),
        // Integers stay integers, floats floats: the spelling may be
        // what the validators disagree on.
        Value::Number(n) => nearer_zero(n),
        Value::Bool(_) | Value::Null => Vec::new(),
    }
}

/// `text` emptied, halved, or (when short) less one character.
fn shorter_strings(text: &str) -> Vec<Value> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    if chars.is_empty() {
        return out;
    }
    out.push(Value::String(String::new()));
    if chars.len() > 1 {
        let half = chars.len() / 2;
        out.push(Value::String(chars[..half].iter().collect()));
        out.push(Value::String(chars[half..].iter().collect()));
    }
    if chars.len() <= CHAR_BY_CHAR {
        out.extend((0..chars.len()).map(|skip| {
            Value::String(
                chars
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, c)| c)
                    .collect(),
            )
        }));
    }
    out
}

/// `n` as zero, halved, or split into its whole and fractional parts,
/// of the same kind (integer or float).
fn nearer_zero(n: &serde_json::Number) -> Vec<Value> {
    if let Some(i) = n.as_i64() {
        let mut out = Vec::new();
        if i != 0 {
            out.push(Value::from(0));
        }
        if i.abs() > 1 {
            out.push(Value::from(i / 2));
        }
        out
    } else if let Some(u) = n.as_u64() {
        vec![Value::from(0), Value::from(u / 2)]
    } else {
        let x = n.as_f64().unwrap_or_default();
        let mut out = Vec::new();
        if x != 0.0 {
            out.push(Value::from(0.0));
        }
        if x.fract() != 0.0 && x.trunc() != 0.0 {
            out.push(Value::from(x.trunc()));
            out.push(Value::from(x.fract()));
        } else if x.abs() > 1.0 {
            out.push(Value::from((x / 2.0).trunc()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shrinking_keeps_only_what_shows_the_property() {
        // "Shows it": some string anywhere holds an astral character.
        let astral = |v: &Value| v.to_string().chars().any(|c| c as u32 > 0xFFFF);
        let instance =
            json!({"city": "Paris 😀 centre", "days": 12, "tags": ["a", "b", {"x": [1, 2.5]}]});
        let shrunk = shrink(&instance, 10_000, &mut |v| astral(v));
        assert_eq!(shrunk, json!({"city": "😀"}));
        // A float keeps its fraction when that is what shows.
        let float = shrink(&json!({"n": 7.5}), 100, &mut |v| {
            v["n"].as_f64().is_some_and(|x| x.fract() != 0.0)
        });
        assert_eq!(float, json!({"n": 0.5}));
    }

    #[test]
    fn shrinking_stops_when_the_budget_is_spent() {
        let mut calls = 0;
        let instance = json!({"a": "long text here", "b": [1, 2, 3, 4]});
        shrink(&instance, 5, &mut |_| {
            calls += 1;
            false
        });
        assert_eq!(calls, 5);
    }
}
