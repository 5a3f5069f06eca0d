//! Argument matchers: what counts as a correct value for one argument.
//! A plain JSON value must be equal; an object whose keys start with `$`
//! is a matcher (`$any_of`, `$approx` with `$tolerance`, `$regex`,
//! `$contains`, `$present`, `$absent`), with `$example` giving a correct
//! value where the matcher alone does not say one.

use regex::Regex;
use serde_json::{Map, Value};

/// One argument's expectation.
#[derive(Debug, Clone)]
pub enum Matcher {
    Exact(Value),
    AnyOf(Vec<Value>),
    Approx {
        value: f64,
        tolerance: f64,
    },
    Regex {
        regex: Regex,
        example: String,
    },
    /// A string holding this text (case-sensitive).
    Contains {
        text: String,
        example: String,
    },
    Present {
        example: Value,
    },
    Absent,
}

impl Matcher {
    /// Read a matcher from a scenario file value; `Err` is a message for the
    /// scenario's author.
    pub fn from_value(value: &Value) -> Result<Matcher, String> {
        let Some(object) = value
            .as_object()
            .filter(|o| o.keys().any(|k| k.starts_with('$')))
        else {
            return Ok(Matcher::Exact(value.clone()));
        };
        let example = object.get("$example");
        if let Some(options) = object.get("$any_of") {
            let options = options
                .as_array()
                .filter(|o| !o.is_empty())
                .ok_or("$any_of needs a non-empty array of values")?;
            return Ok(Matcher::AnyOf(options.clone()));
        }
        if let Some(target) = object.get("$approx") {
            let value = target.as_f64().ok_or("$approx needs a number")?;
            let tolerance = match object.get("$tolerance") {
                Some(t) => t
                    .as_f64()
                    .filter(|t| *t >= 0.0)
                    .ok_or("$tolerance must be a number >= 0")?,
                None => 1e-9,
            };
            return Ok(Matcher::Approx { value, tolerance });
        }
        if let Some(pattern) = object.get("$regex") {
            let pattern = pattern.as_str().ok_or("$regex needs a string")?;
            let regex = Regex::new(pattern).map_err(|e| format!("$regex does not compile: {e}"))?;
            let example = example
                .and_then(Value::as_str)
                .ok_or("$regex needs an $example string that matches it")?;
            if !regex.is_match(example) {
                return Err(format!(
                    "$example {example:?} does not match $regex {pattern:?}"
                ));
            }
            return Ok(Matcher::Regex {
                regex,
                example: example.to_owned(),
            });
        }
        if let Some(text) = object.get("$contains") {
            let text = text
                .as_str()
                .filter(|t| !t.is_empty())
                .ok_or("$contains needs a non-empty string")?;
            // Without an example, the text itself is one.
            let example = match example {
                Some(example) => example
                    .as_str()
                    .ok_or("$example must be a string that contains the text")?,
                None => text,
            };
            if !example.contains(text) {
                return Err(format!("$example {example:?} does not contain {text:?}"));
            }
            return Ok(Matcher::Contains {
                text: text.to_owned(),
                example: example.to_owned(),
            });
        }
        if object.get("$present") == Some(&Value::Bool(true)) {
            let example = example.ok_or("$present needs an $example value")?;
            return Ok(Matcher::Present {
                example: example.clone(),
            });
        }
        if object.get("$absent") == Some(&Value::Bool(true)) {
            return Ok(Matcher::Absent);
        }
        Err(
            "unknown matcher: use $any_of, $approx, $regex, $contains, $present or $absent"
                .to_owned(),
        )
    }

    /// Does the actual value (None when the argument is missing) match?
    pub fn matches(&self, actual: Option<&Value>) -> bool {
        match (self, actual) {
            (Matcher::Absent, actual) => actual.is_none(),
            (_, None) => false,
            (Matcher::Exact(expected), Some(actual)) => values_equal(expected, actual),
            (Matcher::AnyOf(options), Some(actual)) => {
                options.iter().any(|o| values_equal(o, actual))
            }
            (Matcher::Approx { value, tolerance }, Some(actual)) => actual
                .as_f64()
                .is_some_and(|a| (a - value).abs() <= *tolerance),
            (Matcher::Regex { regex, .. }, Some(actual)) => {
                actual.as_str().is_some_and(|s| regex.is_match(s))
            }
            (Matcher::Contains { text, .. }, Some(actual)) => {
                actual.as_str().is_some_and(|s| s.contains(text.as_str()))
            }
            (Matcher::Present { .. }, Some(_)) => true,
        }
    }

    /// A value that matches, for mock models; `None` for `$absent`.
    pub fn example(&self) -> Option<Value> {
        match self {
            Matcher::Exact(value) => Some(value.clone()),
            Matcher::AnyOf(options) => Some(options[0].clone()),
            Matcher::Approx { value, .. } => Some(Value::from(*value)),
            Matcher::Regex { example, .. } | Matcher::Contains { example, .. } => {
                Some(Value::String(example.clone()))
            }
            Matcher::Present { example } => Some(example.clone()),
            Matcher::Absent => None,
        }
    }
}

/// JSON equality where 2 and 2.0 are the same number.
fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

/// The matchers of one expected call's arguments.
#[derive(Debug, Clone, Default)]
pub struct ArgumentMatchers(pub Vec<(String, Matcher)>);

impl ArgumentMatchers {
    pub fn from_map(arguments: &Map<String, Value>) -> Result<Self, (String, String)> {
        arguments
            .iter()
            .map(|(key, value)| {
                Matcher::from_value(value)
                    .map(|m| (key.clone(), m))
                    .map_err(|message| (key.clone(), message))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ArgumentMatchers)
    }

    /// Every expected argument matches and no argument is unexpected.
    pub fn matches(&self, actual: &Value) -> bool {
        let Some(actual) = actual.as_object() else {
            return false;
        };
        self.0.iter().all(|(key, m)| m.matches(actual.get(key)))
            && actual
                .keys()
                .all(|key| self.0.iter().any(|(k, _)| k == key))
    }

    /// Arguments that match, for mock models.
    pub fn example(&self) -> Map<String, Value> {
        self.0
            .iter()
            .filter_map(|(key, m)| m.example().map(|v| (key.clone(), v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matcher(v: Value) -> Matcher {
        Matcher::from_value(&v).unwrap()
    }

    #[test]
    fn each_matcher_accepts_what_it_should_and_nothing_else() {
        assert!(matcher(json!("Lisbon")).matches(Some(&json!("Lisbon"))));
        assert!(!matcher(json!("Lisbon")).matches(Some(&json!("lisbon"))));
        assert!(matcher(json!(2)).matches(Some(&json!(2.0))));
        let any = matcher(json!({"$any_of": ["c", "celsius"]}));
        assert!(any.matches(Some(&json!("celsius"))) && !any.matches(Some(&json!("f"))));
        let approx = matcher(json!({"$approx": 2.5, "$tolerance": 0.01}));
        assert!(approx.matches(Some(&json!(2.505))) && !approx.matches(Some(&json!(2.6))));
        let regex = matcher(json!({"$regex": "^wea", "$example": "weather"}));
        assert!(regex.matches(Some(&json!("weak"))) && !regex.matches(Some(&json!("the weather"))));
        let contains = matcher(json!({"$contains": "refund"}));
        assert!(contains.matches(Some(&json!("please refund o-1"))));
        assert!(
            !contains.matches(Some(&json!("Refund o-1"))) && !contains.matches(Some(&json!(1)))
        );
        assert_eq!(contains.example(), Some(json!("refund")));
        let present = matcher(json!({"$present": true, "$example": 1}));
        assert!(present.matches(Some(&json!(null))) && !present.matches(None));
        let absent = matcher(json!({"$absent": true}));
        assert!(absent.matches(None) && !absent.matches(Some(&json!(1))));
    }

    #[test]
    fn bad_matchers_are_explained() {
        assert!(
            Matcher::from_value(&json!({"$regex": "("}))
                .unwrap_err()
                .contains("does not compile")
        );
        assert!(
            Matcher::from_value(&json!({"$regex": "^a", "$example": "b"}))
                .unwrap_err()
                .contains("does not match")
        );
        assert_eq!(
            Matcher::from_value(&json!({"$contains": "refund", "$example": "pay back"}))
                .unwrap_err(),
            "$example \"pay back\" does not contain \"refund\""
        );
        assert!(
            Matcher::from_value(&json!({"$nope": 1}))
                .unwrap_err()
                .starts_with("unknown matcher")
        );
    }

    #[test]
    fn unexpected_arguments_fail_and_examples_match() {
        let args =
            json!({"city": "Oslo", "units": {"$any_of": ["c", "f"]}, "debug": {"$absent": true}});
        let matchers = ArgumentMatchers::from_map(args.as_object().unwrap()).unwrap();
        let example = Value::Object(matchers.example());
        assert_eq!(example, json!({"city": "Oslo", "units": "c"}));
        assert!(matchers.matches(&example));
        assert!(!matchers.matches(&json!({"city": "Oslo", "units": "c", "extra": 1})));
        assert!(!matchers.matches(&json!({"city": "Oslo", "units": "c", "debug": true})));
    }
}
