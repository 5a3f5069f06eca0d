//! Matching by the Berkeley Function Calling Leaderboard's rules: each
//! parameter has a list of acceptable values (`""` among them: it may be
//! omitted), strings compare after BFCL's normalisation, an int is accepted
//! where a number is expected, lists and nested dicts compare element by
//! element. A failed match carries a reason named like BFCL's error types.

use serde_json::{Map, Value};

use crate::tool::required_names;

/// Why a turn's calls do not match, in BFCL's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    WrongCount,
    WrongFuncName,
    MissingRequired,
    UnexpectedParam,
    MissingOptional,
    TypeError,
    ValueString,
    ValueList,
    ValueDict,
    ValueOthers,
    CannotFindMatch,
    /// A call whose arguments could not be read at all.
    DecoderFailed,
}

impl Reason {
    pub const ALL: [Reason; 12] = [
        Reason::WrongCount,
        Reason::WrongFuncName,
        Reason::MissingRequired,
        Reason::UnexpectedParam,
        Reason::MissingOptional,
        Reason::TypeError,
        Reason::ValueString,
        Reason::ValueList,
        Reason::ValueDict,
        Reason::ValueOthers,
        Reason::CannotFindMatch,
        Reason::DecoderFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::WrongCount => "wrong_count",
            Reason::WrongFuncName => "wrong_func_name",
            Reason::MissingRequired => "missing_required",
            Reason::UnexpectedParam => "unexpected_param",
            Reason::MissingOptional => "missing_optional",
            Reason::TypeError => "type_error",
            Reason::ValueString => "value_error:string",
            Reason::ValueList => "value_error:list",
            Reason::ValueDict => "value_error:dict",
            Reason::ValueOthers => "value_error:others",
            Reason::CannotFindMatch => "cannot_find_match",
            Reason::DecoderFailed => "decoder_failed",
        }
    }

    pub fn parse(text: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// One expected call under BFCL's rules.
#[derive(Debug, Clone)]
pub struct BfclCall {
    pub name: String,
    /// Parameter -> acceptable values, as in BFCL's possible answers.
    pub params: Map<String, Value>,
    /// From the tool's schema.
    pub required: Vec<String>,
    /// Parameter -> JSON Schema type name; absent: any type.
    pub types: Map<String, Value>,
    /// Java and JavaScript: values are source text, compared as strings.
    pub source_text: bool,
}

impl BfclCall {
    /// Build from a tool schema (already in JSON Schema) and the answer's
    /// parameters; `Err` names a parameter that is not a list of values.
    pub fn new(
        name: &str,
        params: &Map<String, Value>,
        schema: &Value,
        source_text: bool,
    ) -> Result<BfclCall, String> {
        if let Some((key, _)) = params.iter().find(|(_, v)| !v.is_array()) {
            return Err(format!(
                "{key}: BFCL rules need a list of acceptable values"
            ));
        }
        let required = schema
            .as_object()
            .map(|schema| required_names(schema).map(str::to_owned).collect())
            .unwrap_or_default();
        let types = schema["properties"]
            .as_object()
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| v.get("type").map(|t| (k.clone(), t.clone())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(BfclCall {
            name: name.to_owned(),
            params: params.clone(),
            required,
            types,
            source_text,
        })
    }

    /// Judge one call (name and arguments).
    pub fn check(&self, name: &str, arguments: &Value) -> Result<(), Reason> {
        if name != self.name {
            return Err(Reason::WrongFuncName);
        }
        let Some(arguments) = arguments.as_object() else {
            return Err(Reason::TypeError);
        };
        if self.required.iter().any(|r| !arguments.contains_key(r)) {
            return Err(Reason::MissingRequired);
        }
        for (key, value) in arguments {
            let Some(options) = self.params.get(key).and_then(Value::as_array) else {
                return Err(Reason::UnexpectedParam);
            };
            if self.source_text {
                if !value.is_string() {
                    return Err(Reason::TypeError);
                }
            } else if !has_type(value, self.types.get(key)) {
                return Err(Reason::TypeError);
            }
            let accepted = options.iter().filter(|o| !is_omission(o)).any(|option| {
                if self.source_text {
                    same_string(
                        &source_text(&resolve(option)),
                        value.as_str().unwrap_or_default(),
                    )
                } else {
                    same_value(option, value)
                }
            });
            if !accepted {
                return Err(value_reason(value));
            }
        }
        for (key, options) in &self.params {
            let may_omit = options
                .as_array()
                .is_some_and(|o| o.iter().any(is_omission));
            if !arguments.contains_key(key) && !may_omit {
                return Err(Reason::MissingOptional);
            }
        }
        Ok(())
    }

    /// The first acceptable value of each parameter, as a model would send
    /// it (`""` first: left out).
    pub fn example(&self) -> Map<String, Value> {
        self.params
            .iter()
            .filter_map(|(key, options)| {
                let value = first_acceptable(options)?;
                let value = if self.source_text {
                    Value::String(source_text(&value))
                } else {
                    value
                };
                Some((key.clone(), value))
            })
            .collect()
    }
}

/// `""` in a list of acceptable values means "may be omitted".
fn is_omission(value: &Value) -> bool {
    value.as_str() == Some("")
}

/// The first of a list of acceptable values, with nested dicts resolved
/// the same way; `None` means "omit it".
pub fn first_acceptable(options: &Value) -> Option<Value> {
    let first = options.as_array()?.first()?;
    if is_omission(first) {
        return None;
    }
    Some(resolve(first))
}

/// A nested dict of acceptable values becomes one concrete dict.
fn resolve(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| {
                    if v.is_array() {
                        first_acceptable(v).map(|v| (k.clone(), v))
                    } else {
                        Some((k.clone(), v.clone()))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(resolve).collect()),
        other => other.clone(),
    }
}

/// How a value is written as source text (Java and JavaScript entries).
fn source_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn has_type(value: &Value, declared: Option<&Value>) -> bool {
    let Some(declared) = declared else {
        return true;
    };
    let fits = |t: &str| match t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        // An int is accepted where a float is expected.
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    };
    match declared {
        Value::String(t) => fits(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(fits),
        _ => true,
    }
}

fn value_reason(value: &Value) -> Reason {
    match value {
        Value::String(_) => Reason::ValueString,
        Value::Array(_) => Reason::ValueList,
        Value::Object(_) => Reason::ValueDict,
        _ => Reason::ValueOthers,
    }
}

/// BFCL's string normalisation: drop spaces and `,./-_*^`, lowercase, and
/// treat single and double quotes alike.
fn normalise(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

fn same_string(expected: &str, actual: &str) -> bool {
    expected == actual || normalise(expected) == normalise(actual)
}

/// One acceptable value against the model's value.
fn same_value(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => same_string(e, a),
        (Value::Number(e), Value::Number(a)) => e == a || e.as_f64() == a.as_f64(),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| same_value(e, a))
        }
        (Value::Object(e), Value::Object(a)) => same_dict(e, a),
        _ => expected == actual,
    }
}

/// A nested dict of acceptable values (key -> list) against a concrete one.
fn same_dict(expected: &Map<String, Value>, actual: &Map<String, Value>) -> bool {
    if actual.keys().any(|k| !expected.contains_key(k)) {
        return false;
    }
    expected
        .iter()
        .all(|(key, options)| match (actual.get(key), options) {
            (None, Value::Array(o)) => o.iter().any(is_omission),
            (None, _) => false,
            (Some(value), Value::Array(o)) => o
                .iter()
                .filter(|o| !is_omission(o))
                .any(|o| same_value(o, value)),
            (Some(value), literal) => same_value(literal, value),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule() -> BfclCall {
        let schema = json!({
            "type": "object",
            "properties": {
                "base": {"type": "integer"},
                "height": {"type": "number"},
                "unit": {"type": "string"},
                "tags": {"type": "array"},
                "prefs": {"type": "object"}
            },
            "required": ["base", "height"]
        });
        let params = json!({
            "base": [10],
            "height": [5.0],
            "unit": ["units", ""],
            "tags": [["New York", "LA"], ""],
            "prefs": [{"size": ["large"], "milk": ["oat", ""]}, ""]
        });
        BfclCall::new("area", params.as_object().unwrap(), &schema, false).unwrap()
    }

    #[test]
    fn the_example_matches_and_each_kind_of_wrong_call_has_its_reason() {
        let rule = rule();
        let example = Value::Object(rule.example());
        assert_eq!(
            example,
            json!({"base": 10, "height": 5.0, "unit": "units", "tags": ["New York", "LA"], "prefs": {"size": "large", "milk": "oat"}})
        );
        assert_eq!(rule.check("area", &example), Ok(()));
        let cases = [
            (
                "volume",
                json!({"base": 10, "height": 5}),
                Reason::WrongFuncName,
            ),
            ("area", json!({"base": 10}), Reason::MissingRequired),
            (
                "area",
                json!({"base": 10, "height": 5, "x": 1}),
                Reason::UnexpectedParam,
            ),
            (
                "area",
                json!({"base": "10", "height": 5}),
                Reason::TypeError,
            ),
            (
                "area",
                json!({"base": 11, "height": 5}),
                Reason::ValueOthers,
            ),
            (
                "area",
                json!({"base": 10, "height": 5, "unit": "feet"}),
                Reason::ValueString,
            ),
            (
                "area",
                json!({"base": 10, "height": 5, "tags": ["Boston"]}),
                Reason::ValueList,
            ),
            (
                "area",
                json!({"base": 10, "height": 5, "prefs": {"size": "small"}}),
                Reason::ValueDict,
            ),
            ("area", json!([10, 5]), Reason::TypeError),
        ];
        for (name, arguments, reason) in cases {
            assert_eq!(rule.check(name, &arguments), Err(reason), "{arguments}");
        }
    }

    #[test]
    fn bfcl_leniency_ints_for_floats_string_normalisation_and_omissions() {
        let rule = rule();
        // An int where a float is expected; case and punctuation in strings.
        let ok = json!({"base": 10, "height": 5, "unit": "UNITS", "tags": ["new-york", "l.a."], "prefs": {"size": "Large"}});
        assert_eq!(rule.check("area", &ok), Ok(()));
        // A parameter without "" among its values must be given.
        let params = json!({"base": [10], "height": [5]});
        let strict = BfclCall::new("area", params.as_object().unwrap(), &json!({}), false).unwrap();
        assert_eq!(
            strict.check("area", &json!({"base": 10})),
            Err(Reason::MissingOptional)
        );
    }

    #[test]
    fn source_text_values_are_strings_compared_with_the_written_answer() {
        let params = json!({"flag": [true], "limit": [50], "name": ["mapController"]});
        let rule = BfclCall::new("f", params.as_object().unwrap(), &json!({}), true).unwrap();
        assert_eq!(
            Value::Object(rule.example()),
            json!({"flag": "true", "limit": "50", "name": "mapController"})
        );
        assert_eq!(rule.check("f", &Value::Object(rule.example())), Ok(()));
        assert_eq!(
            rule.check(
                "f",
                &json!({"flag": true, "limit": "50", "name": "mapController"})
            ),
            Err(Reason::TypeError)
        );
        assert_eq!(
            rule.check(
                "f",
                &json!({"flag": "false", "limit": "50", "name": "mapController"})
            ),
            Err(Reason::ValueString)
        );
    }

    #[test]
    fn non_list_answers_are_refused() {
        let params = json!({"base": 10});
        assert!(BfclCall::new("f", params.as_object().unwrap(), &json!({}), false).is_err());
    }
}
