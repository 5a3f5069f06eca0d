//! Deep equality of JSON values, shared by the places that compare them
//! (argument matchers, the quick schema check, BFCL's checker): arrays
//! item by item, objects key by key in any order, and every other pair by
//! the caller's rule, which is where they differ (how numbers compare);
//! and the equality of the short strings that name tools and properties,
//! which every validated call compares.

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

/// `a == b`, without a call to `memcmp` for the short strings tool and
/// property names are: up to 16 bytes compare as two (overlapping) words.
#[inline]
pub fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        8..=16 => {
            let word = |s: &[u8], at: usize| {
                u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
            };
            word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
        }
        4..=7 => {
            let word = |s: &[u8], at: usize| {
                u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"))
            };
            word(a, 0) == word(b, 0) && word(a, n - 4) == word(b, n - 4)
        }
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        #[test]
        fn short_strings_compare_as_str_does(a in "[a-c_é]{0,20}", b in "[a-c_é]{0,20}") {
            proptest::prop_assert_eq!(str_eq(&a, &b), a == b);
            proptest::prop_assert!(str_eq(&a, &a.clone()));
        }
    }

    #[test]
    fn a_difference_in_any_byte_of_a_short_string_is_seen() {
        for n in 0..=24 {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                assert!(!str_eq(&a, std::str::from_utf8(&b).unwrap()), "{n} {at}");
            }
            assert!(str_eq(&a, &a.clone()));
        }
    }

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
