//! Argument matchers: what counts as a correct value for one argument.
//! A plain JSON value must be equal; an object whose keys start with `$`
//! is a matcher (`$any_of`, `$approx` with `$tolerance`, `$regex`,
//! `$contains`, `$present`, `$absent`, the bounds `$gt`, `$gte`, `$lt`,
//! `$lte`), with `$example` giving a correct value where the matcher alone
//! does not say one, and `"$optional": true` letting the argument be left
//! out (a value the user did not give, which a model may or may not send).
//! In a task, `{"$result": "tool", "pointer": "/id"}` is
//! the value at that pointer of the most recent successful result of that
//! tool ([`RecentResults`]): only a model that reads results can match it.

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

use crate::call::Arguments;
use crate::pointer::{Located, Pointer};

/// What a trial's tools answered so far: the most recent successful result
/// of each tool, as JSON (a result that is not JSON is a string).
#[derive(Debug, Clone, Default)]
pub struct RecentResults(HashMap<String, Value>);

impl RecentResults {
    /// Remember `content`, the successful result of a call to `tool`.
    pub fn record(&mut self, tool: &str, content: &str) {
        let value =
            serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_owned()));
        self.0.insert(tool.to_owned(), value);
    }

    /// The value at `pointer` of `tool`'s most recent result.
    pub fn value(&self, tool: &str, pointer: &str) -> Option<&Value> {
        self.0.get(tool)?.pointer(pointer)
    }
}

/// The id a model that did not read a result makes up.
pub const INVENTED_ID: &str = "id-0000";

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
    /// A number within bounds; `true` means the bound itself is allowed.
    Range {
        low: Option<(f64, bool)>,
        high: Option<(f64, bool)>,
        example: f64,
    },
    /// The value at `pointer` of the most recent successful result of
    /// `tool` in the same trial (tasks only).
    Result {
        tool: String,
        pointer: Pointer,
    },
    /// An object holding matchers deeper down: the same keys, each
    /// matching (`{"where": {"customer": {"$result": ...}}}`).
    Fields(ArgumentMatchers),
    /// `"$optional": true` beside another matcher: absent, or matching it.
    Optional(Box<Matcher>),
}

impl Matcher {
    /// Read a matcher from a scenario file value; `Err` says where in the
    /// value (the root for the matcher itself) and what is wrong, for the
    /// scenario's author.
    pub fn from_value(value: &Value) -> Result<Matcher, Located> {
        let Some(object) = value
            .as_object()
            .filter(|o| o.keys().any(|k| k.starts_with('$')))
        else {
            if let Some(object) = value.as_object().filter(|o| o.values().any(holds_matcher)) {
                return ArgumentMatchers::from_map(object).map(Matcher::Fields);
            }
            return Ok(Matcher::Exact(value.clone()));
        };
        if object.get("$optional") == Some(&Value::Bool(true)) {
            let mut inner = object.clone();
            inner.remove("$optional");
            if !inner.keys().any(|k| k.starts_with('$')) {
                return Err(Located::here(
                    "$optional goes beside another matcher ($any_of, $regex, ...): say what the value is when it is given",
                ));
            }
            return Matcher::from_value(&Value::Object(inner))
                .map(|inner| Matcher::Optional(Box::new(inner)));
        }
        let example = object.get("$example");
        let special: [(&str, Special); 5] = [
            ("$any_of", any_of),
            ("$approx", approx),
            ("$regex", regex),
            ("$contains", contains),
            ("$result", result),
        ];
        if let Some((_, read)) = special.iter().find(|(key, _)| object.contains_key(*key)) {
            return read(object, example).map_err(|e| Located::here(e.to_string()));
        }
        if object.get("$present") == Some(&Value::Bool(true)) {
            let example =
                example.ok_or_else(|| Located::here("$present needs an $example value"))?;
            return Ok(Matcher::Present {
                example: example.clone(),
            });
        }
        if object.get("$absent") == Some(&Value::Bool(true)) {
            return Ok(Matcher::Absent);
        }
        if ["$gt", "$gte", "$lt", "$lte"]
            .iter()
            .any(|k| object.contains_key(*k))
        {
            return range(object, example).map_err(|e| Located::here(e.to_string()));
        }
        Err(Located::here(
            "unknown matcher: use $any_of, $approx, $regex, $contains, $present, $absent, \
             $gt, $gte, $lt, $lte or $result (each may be $optional)",
        ))
    }

    /// Does the actual value (None when the argument is missing) match?
    /// `$result` never matches here: it needs [`Matcher::matches_in`].
    pub fn matches(&self, actual: Option<&Value>) -> bool {
        self.matches_in(actual, &RecentResults::default())
    }

    /// [`Matcher::matches`], with `$result` read from `recent`.
    pub fn matches_in(&self, actual: Option<&Value>, recent: &RecentResults) -> bool {
        match (self, actual) {
            (Matcher::Absent, actual) => actual.is_none(),
            (Matcher::Optional(_), None) => true,
            (Matcher::Optional(inner), actual) => inner.matches_in(actual, recent),
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
            (Matcher::Range { low, high, .. }, Some(actual)) => {
                actual.as_f64().is_some_and(|x| within(x, *low, *high))
            }
            (Matcher::Result { tool, pointer }, Some(actual)) => recent
                .value(tool, pointer.as_str())
                .is_some_and(|expected| values_equal(expected, actual)),
            (Matcher::Fields(fields), Some(actual)) => fields.matches_in(actual, recent),
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
            Matcher::Range { example, .. } => Some(Value::from(*example)),
            Matcher::Fields(fields) => Some(Value::Object(fields.example())),
            Matcher::Optional(inner) => inner.example(),
            Matcher::Absent | Matcher::Result { .. } => None,
        }
    }

    /// [`Matcher::example`], with `$result` read from `recent`, or made up
    /// when the tool has given nothing there.
    pub fn example_in(&self, recent: &RecentResults) -> Option<Value> {
        match self {
            Matcher::Result { tool, pointer } => Some(
                recent
                    .value(tool, pointer.as_str())
                    .cloned()
                    .unwrap_or_else(|| Value::String(INVENTED_ID.to_owned())),
            ),
            Matcher::Fields(fields) => Some(Value::Object(fields.example_in(recent))),
            other => other.example(),
        }
    }
}

/// Is there a matcher (an object with `$` keys) in `value`, at any depth?
fn holds_matcher(value: &Value) -> bool {
    match value {
        Value::Object(o) => o.keys().any(|k| k.starts_with('$')) || o.values().any(holds_matcher),
        _ => false,
    }
}

fn within(x: f64, low: Option<(f64, bool)>, high: Option<(f64, bool)>) -> bool {
    let above = low.is_none_or(|(l, inclusive)| if inclusive { x >= l } else { x > l });
    let below = high.is_none_or(|(h, inclusive)| if inclusive { x <= h } else { x < h });
    above && below
}

/// `$gt`, `$gte`, `$lt`, `$lte`: a number within bounds; the example is
/// `$example`, or a number the bounds allow.
/// Why a matcher's keys do not make a matcher, for its author.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadMatcher(String);

impl From<&str> for BadMatcher {
    fn from(message: &str) -> Self {
        BadMatcher(message.to_owned())
    }
}

/// Reads one kind of matcher from its object and `$example`.
type Special = fn(&Map<String, Value>, Option<&Value>) -> Result<Matcher, BadMatcher>;

fn any_of(object: &Map<String, Value>, _: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let options = object["$any_of"]
        .as_array()
        .filter(|o| !o.is_empty())
        .ok_or("$any_of needs a non-empty array of values")?;
    Ok(Matcher::AnyOf(options.clone()))
}

fn approx(object: &Map<String, Value>, _: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let value = object["$approx"].as_f64().ok_or("$approx needs a number")?;
    let tolerance = match object.get("$tolerance") {
        Some(t) => t
            .as_f64()
            .filter(|t| *t >= 0.0)
            .ok_or("$tolerance must be a number >= 0")?,
        None => 1e-9,
    };
    Ok(Matcher::Approx { value, tolerance })
}

fn regex(object: &Map<String, Value>, example: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let pattern = object["$regex"].as_str().ok_or("$regex needs a string")?;
    let regex =
        Regex::new(pattern).map_err(|e| BadMatcher(format!("$regex does not compile: {e}")))?;
    let example = example
        .and_then(Value::as_str)
        .ok_or("$regex needs an $example string that matches it")?;
    if !regex.is_match(example) {
        return Err(BadMatcher(format!(
            "$example {example:?} does not match $regex {pattern:?}"
        )));
    }
    Ok(Matcher::Regex {
        regex,
        example: example.to_owned(),
    })
}

fn contains(object: &Map<String, Value>, example: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let text = object["$contains"]
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
        return Err(BadMatcher(format!(
            "$example {example:?} does not contain {text:?}"
        )));
    }
    Ok(Matcher::Contains {
        text: text.to_owned(),
        example: example.to_owned(),
    })
}

fn result(object: &Map<String, Value>, _: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let tool = object["$result"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("$result needs the name of a tool")?;
    let pointer = match object.get("pointer") {
        Some(p) => p
            .as_str()
            .filter(|p| p.is_empty() || p.starts_with('/'))
            .ok_or("pointer must be a JSON pointer such as \"/id\"")?,
        None => "",
    };
    Ok(Matcher::Result {
        tool: tool.to_owned(),
        pointer: Pointer::at(pointer),
    })
}

fn range(object: &Map<String, Value>, example: Option<&Value>) -> Result<Matcher, BadMatcher> {
    let bound = |key: &str| {
        object
            .get(key)
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| BadMatcher(format!("{key} needs a number")))
            })
            .transpose()
    };
    let low = match (bound("$gt")?, bound("$gte")?) {
        (Some(_), Some(_)) => return Err("give $gt or $gte, not both".into()),
        (Some(x), None) => Some((x, false)),
        (None, Some(x)) => Some((x, true)),
        (None, None) => None,
    };
    let high = match (bound("$lt")?, bound("$lte")?) {
        (Some(_), Some(_)) => return Err("give $lt or $lte, not both".into()),
        (Some(x), None) => Some((x, false)),
        (None, Some(x)) => Some((x, true)),
        (None, None) => None,
    };
    let example = match (example, low, high) {
        (Some(e), ..) => e.as_f64().ok_or("$example must be a number")?,
        (None, Some((l, _)), Some((h, _))) => (l + h) / 2.0,
        (None, Some((l, _)), None) => l + 1.0,
        (None, None, Some((h, _))) => h - 1.0,
        (None, None, None) => unreachable!("a bound is present"),
    };
    if !within(example, low, high) {
        return Err(BadMatcher(format!(
            "$example {example} is outside the bounds"
        )));
    }
    Ok(Matcher::Range { low, high, example })
}

/// JSON equality where 2 and 2.0 are the same number.
fn values_equal(a: &Value, b: &Value) -> bool {
    crate::json_eq::equal_by(a, b, &|a, b| match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    })
}

/// The matchers of one expected call's arguments.
#[derive(Debug, Clone, Default)]
pub struct ArgumentMatchers(pub Vec<(String, Matcher)>);

impl ArgumentMatchers {
    /// Problems are located from the arguments object.
    pub fn from_map(arguments: &Map<String, Value>) -> Result<Self, Located> {
        arguments
            .iter()
            .map(|(key, value)| {
                Matcher::from_value(value)
                    .map(|m| (key.clone(), m))
                    .map_err(|e| e.under(&Pointer::root().key(key)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ArgumentMatchers)
    }

    /// Every expected argument matches and no argument is unexpected.
    pub fn matches(&self, actual: &Value) -> bool {
        self.matches_in(actual, &RecentResults::default())
    }

    /// [`ArgumentMatchers::matches`], with `$result` read from `recent`.
    pub fn matches_in(&self, actual: &Value, recent: &RecentResults) -> bool {
        actual.as_object().is_some_and(|object| {
            self.listed_match(|key| object.get(key), recent)
                && self.lists_all(object.keys().map(String::as_str))
        })
    }

    /// Every listed argument matches; others may be there too.
    pub fn matches_listed(&self, actual: &Value, recent: &RecentResults) -> bool {
        actual
            .as_object()
            .is_some_and(|object| self.listed_match(|key| object.get(key), recent))
    }

    /// [`ArgumentMatchers::matches`] for a call's arguments, read as they
    /// arrived.
    pub fn matches_arguments(&self, actual: &Arguments) -> bool {
        self.matches_arguments_in(actual, &RecentResults::default())
    }

    /// [`ArgumentMatchers::matches_in`] for a call's arguments.
    pub fn matches_arguments_in(&self, actual: &Arguments, recent: &RecentResults) -> bool {
        self.listed_match(|key| actual.get(key), recent)
            && self.lists_all(actual.members().map(|(key, _)| key))
    }

    /// [`ArgumentMatchers::matches_listed`] for a call's arguments.
    pub fn matches_arguments_listed(&self, actual: &Arguments, recent: &RecentResults) -> bool {
        self.listed_match(|key| actual.get(key), recent)
    }

    fn listed_match<'v>(
        &self,
        member: impl Fn(&str) -> Option<&'v Value>,
        recent: &RecentResults,
    ) -> bool {
        self.0
            .iter()
            .all(|(key, m)| m.matches_in(member(key), recent))
    }

    fn lists_all<'k>(&self, mut keys: impl Iterator<Item = &'k str>) -> bool {
        keys.all(|key| self.0.iter().any(|(k, _)| k == key))
    }

    /// The `$result` matchers, at any depth: (tool, pointer).
    pub fn result_reads(&self) -> Vec<(&str, &str)> {
        let mut reads = Vec::new();
        for (_, m) in &self.0 {
            match m {
                Matcher::Result { tool, pointer } => reads.push((tool.as_str(), pointer.as_str())),
                Matcher::Fields(fields) => reads.extend(fields.result_reads()),
                _ => {}
            }
        }
        reads
    }

    /// The tools whose results `$result` matchers read.
    pub fn result_tools(&self) -> impl Iterator<Item = &str> {
        self.result_reads().into_iter().map(|(tool, _)| tool)
    }

    /// Arguments that match given what `recent` holds (made-up values
    /// where it holds nothing), for mock models.
    pub fn example_in(&self, recent: &RecentResults) -> Map<String, Value> {
        self.0
            .iter()
            .filter_map(|(key, m)| m.example_in(recent).map(|v| (key.clone(), v)))
            .collect()
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
        // Left out, or one of the values: a value the user never gave.
        let optional = matcher(json!({"$any_of": ["c", "f"], "$optional": true}));
        assert!(optional.matches(None) && optional.matches(Some(&json!("f"))));
        assert!(!optional.matches(Some(&json!("kelvin"))));
        assert_eq!(optional.example(), Some(json!("c")));
        assert!(Matcher::from_value(&json!({"$optional": true})).is_err());
    }

    #[test]
    fn bad_matchers_are_explained() {
        assert!(
            Matcher::from_value(&json!({"$regex": "("}))
                .unwrap_err()
                .message
                .contains("does not compile")
        );
        assert!(
            Matcher::from_value(&json!({"$regex": "^a", "$example": "b"}))
                .unwrap_err()
                .message
                .contains("does not match")
        );
        assert_eq!(
            Matcher::from_value(&json!({"$contains": "refund", "$example": "pay back"}))
                .unwrap_err()
                .message,
            "$example \"pay back\" does not contain \"refund\""
        );
        assert!(
            Matcher::from_value(&json!({"$nope": 1}))
                .unwrap_err()
                .message
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

    #[test]
    fn arguments_are_matched_as_their_whole_object_is() {
        let matchers = ArgumentMatchers::from_map(
            json!({"city": "Paris", "days": {"$gte": 1, "$lte": 7}})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        let recent = RecentResults::default();
        for arguments in [
            json!({"city": "Paris", "days": 3}),
            json!({"days": 3, "city": "Paris"}),
            json!({"city": "Paris", "days": 3, "units": "metric"}),
            json!({"city": "Paris", "days": 9}),
            json!({"city": "Paris"}),
            json!({}),
        ] {
            let call_arguments = Arguments::try_from(arguments.clone()).unwrap();
            assert_eq!(
                matchers.matches_arguments_in(&call_arguments, &recent),
                matchers.matches_in(&arguments, &recent),
                "{arguments}"
            );
            assert_eq!(
                matchers.matches_arguments_listed(&call_arguments, &recent),
                matchers.matches_listed(&arguments, &recent),
                "{arguments}"
            );
        }
        assert!(
            matchers.matches_arguments(
                &Arguments::try_from(json!({"days": 2, "city": "Paris"})).unwrap()
            )
        );
    }
}
