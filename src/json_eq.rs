//! Deep equality of JSON values, shared by the places that compare them
//! (argument matchers, the quick schema check, BFCL's checker): arrays
//! item by item, objects key by key in any order, and every other pair by
//! the caller's rule, which is where they differ (how numbers compare).

use serde_json::Value;

/// `a` equals `b`, containers compared through to their scalars, which
/// `scalars_equal` compares.
pub fn equal_by(a: &Value, b: &Value, scalars_equal: &impl Fn(&Value, &Value) -> bool) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal_by(x, y, scalars_equal))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(key, value)| {
                    y.get(key)
                        .is_some_and(|other| equal_by(value, other, scalars_equal))
                })
        }
        _ => scalars_equal(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_compare_through_to_the_callers_rule_for_scalars() {
        let by_f64 = |a: &Value, b: &Value| match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            _ => a == b,
        };
        assert!(equal_by(
            &json!({"a": [1, {"b": 2}], "c": "x"}),
            &json!({"c": "x", "a": [1.0, {"b": 2.0}]}),
            &by_f64
        ));
        assert!(!equal_by(&json!([1, 2]), &json!([1, 2, 3]), &by_f64));
        assert!(!equal_by(
            &json!({"a": 1}),
            &json!({"a": 1, "b": 1}),
            &by_f64
        ));
        assert!(!equal_by(&json!({"a": 1}), &json!({"b": 1}), &by_f64));
        assert!(!equal_by(&json!([1]), &json!({"0": 1}), &by_f64));
        // Exact equality for scalars: 1 and 1.0 differ.
        assert!(!equal_by(&json!([1]), &json!([1.0]), &|a, b| a == b));
    }
}
