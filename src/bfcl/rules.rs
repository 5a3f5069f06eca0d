//! Matching by the Berkeley Function Calling Leaderboard's rules: each
//! parameter has a list of acceptable values (`""` among them: it may be
//! omitted), strings compare after BFCL's normalisation, an int is accepted
//! where a number is expected, lists and nested dicts compare element by
//! element. A failed match carries a reason named like BFCL's error types.

use serde_json::{Map, Value};

pub use super::reason::{Mismatch, Reason};
use super::source::{Kind, SourceLanguage, kind};
use super::values::{Checker, python_eq};
use crate::schema::required_names;

/// Java and JavaScript entries: the language, and each parameter's
/// declared type and items' type.
#[derive(Debug, Clone)]
pub struct Source {
    pub language: SourceLanguage,
    pub params: std::collections::BTreeMap<String, (String, Option<String>)>,
}

impl Source {
    /// From an imported tool's `metadata.bfcl` (`language`, and the
    /// original `parameters`); `None` for Python entries.
    pub fn of(bfcl: &Value) -> Option<Source> {
        let language = SourceLanguage::parse(bfcl["language"].as_str()?)?;
        let params = bfcl["parameters"]["properties"]
            .as_object()?
            .iter()
            .map(|(name, p)| {
                (
                    name.clone(),
                    (
                        p["type"].as_str().unwrap_or("any").to_owned(),
                        p.pointer("/items/type")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    ),
                )
            })
            .collect();
        Some(Source { language, params })
    }

    /// A parameter's declared type and items' type (`any` if unknown).
    fn declared(&self, key: &str) -> (&str, Option<&str>) {
        self.params
            .get(key)
            .map_or(("any", None), |(d, i)| (d.as_str(), i.as_deref()))
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
    /// Parameter -> its items' type name, for arrays.
    pub item_types: Map<String, Value>,
    /// The parameters the function declares: another is unexpected, even
    /// where the answers list it.
    pub declared: Vec<String>,
    /// Java and JavaScript: values are source text, read by their
    /// declared types.
    pub source: Option<Source>,
}

impl BfclCall {
    /// Build from a tool schema (already in JSON Schema) and the answer's
    /// parameters; `Err` is at a parameter that is not a list of values.
    pub fn new(
        name: &str,
        params: &Map<String, Value>,
        schema: &Value,
        source: Option<Source>,
    ) -> Result<BfclCall, crate::pointer::Located> {
        if let Some((key, _)) = params.iter().find(|(_, v)| !v.is_array()) {
            return Err(crate::pointer::Located::new(
                crate::pointer::Pointer::root().key(key),
                format!("{key}: BFCL rules need a list of acceptable values"),
            ));
        }
        let required = schema
            .as_object()
            .map(|schema| required_names(schema).map(str::to_owned).collect())
            .unwrap_or_default();
        let properties = schema["properties"].as_object();
        let types = properties
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| v.get("type").map(|t| (k.clone(), t.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let item_types = properties
            .map(|p| {
                p.iter()
                    .filter_map(|(k, v)| v.pointer("/items/type").map(|t| (k.clone(), t.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let declared = properties
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_else(|| params.keys().cloned().collect());
        Ok(BfclCall {
            name: name.to_owned(),
            params: params.clone(),
            required,
            types,
            item_types,
            declared,
            source,
        })
    }

    /// Parameters the imported function declares `any` (its
    /// `metadata.bfcl`) are strings to BFCL's Python checker, whatever the
    /// schema lets through (`PYTHON_TYPE_MAPPING`).
    pub fn read_any_as_string(&mut self, bfcl: &Value) {
        let Some(properties) = bfcl
            .pointer("/parameters/properties")
            .and_then(Value::as_object)
        else {
            return;
        };
        for (key, declared) in properties {
            if declared["type"] == "any" {
                self.types.insert(key.clone(), Value::from("string"));
            }
            if declared.pointer("/items/type").is_some_and(|t| t == "any") {
                self.item_types.insert(key.clone(), Value::from("string"));
            }
        }
    }

    /// Judge one call (name and arguments), in BFCL's order: the name,
    /// required parameters, each argument as the model wrote them, then
    /// parameters that may not be left out.
    pub fn check(&self, name: &str, arguments: &Value) -> Result<(), Mismatch> {
        let about = |reason: Reason, key: &str| Mismatch {
            reason,
            parameter: Some(key.to_owned()),
        };
        if name != self.name {
            return Err(Reason::WrongFuncName.into());
        }
        let Some(arguments) = arguments.as_object() else {
            return Err(Reason::TypeError.into());
        };
        if let Some(missing) = self.required.iter().find(|r| !arguments.contains_key(*r)) {
            return Err(about(Reason::MissingRequired, missing));
        }
        for (key, value) in arguments {
            self.check_argument(key, value)
                .map_err(|reason| about(reason, key))?;
        }
        for (key, options) in &self.params {
            let may_omit = options
                .as_array()
                .is_some_and(|o| o.iter().any(is_omission));
            if !arguments.contains_key(key) && !may_omit {
                return Err(about(Reason::MissingOptional, key));
            }
        }
        Ok(())
    }

    /// Judge one argument against the acceptable values of its parameter.
    fn check_argument(&self, key: &str, value: &Value) -> Result<(), Reason> {
        let Some(options) = self
            .params
            .get(key)
            .and_then(Value::as_array)
            .filter(|_| self.declared.iter().any(|d| d == key))
        else {
            return Err(Reason::UnexpectedParam);
        };
        // Java and JavaScript: source text, read by its declared type.
        let (value, fits, is_variable, items_ok, checker) = match &self.source {
            Some(source) => {
                let Some(text) = value.as_str() else {
                    return Err(Reason::TypeError);
                };
                let (declared, items) = source.declared(key);
                let typed = source.language.convert(text, declared, items);
                let expected = source.language.kind_of(declared);
                let answer_type = answer_type(options);
                let item_kind = items.and_then(|i| source.language.kind_of(i));
                let items_ok = !source.language.has_items(declared)
                    || items_fit(
                        &typed,
                        &|item| item_kind.is_none_or(|k| kind(item) == k),
                        options,
                    );
                let item_kind = item_kind.filter(|_| source.language.has_items(declared));
                (
                    std::borrow::Cow::Owned(typed.clone()),
                    expected.is_none_or(|k| kind(&typed) == k),
                    answer_type.is_some_and(|t| expected.is_some_and(|k| t != k)),
                    items_ok,
                    Checker::of(expected.or(Some(kind(&typed))), item_kind),
                )
            }
            None => {
                let declared = self.types.get(key);
                let answer_type = answer_type(options);
                let item_type = self.item_types.get(key);
                // Without a declared type, the value's own picks the checker.
                let expected = schema_kind(declared).unwrap_or_else(|| kind(value));
                (
                    std::borrow::Cow::Borrowed(value),
                    has_type(value, declared),
                    answer_type.is_some_and(|t| !has_type(&kind_example(t), declared)),
                    items_fit(value, &|item| exact_type(item, item_type), options),
                    Checker::of(Some(expected), schema_kind(item_type)),
                )
            }
        };
        let value = value.as_ref();
        // BFCL's "variable" rule: answers of another type than the
        // declared one (a name, "dontcare", null) are compared as they
        // are, and a value of their type is not a type error. A wrong one
        // is `value_error:others` whatever its type, as in BFCL.
        let type_error = if fits {
            !items_ok
        } else {
            answer_type(options) != Some(kind(value))
        };
        if type_error {
            return Err(Reason::TypeError);
        }
        if !fits || is_variable {
            let listed = options.iter().any(|o| python_eq(o, value));
            return if listed {
                Ok(())
            } else {
                Err(Reason::ValueOthers)
            };
        }
        // `""` among the values is also a value the model may send.
        checker.check(value, options)
    }

    /// The first acceptable value of each parameter, as a model would send
    /// it (`""` first: left out).
    pub fn example(&self) -> Map<String, Value> {
        self.params
            .iter()
            // An answer's parameter the function does not declare is
            // unexpected to BFCL: left out where it may be.
            .filter(|(key, options)| {
                self.declared.contains(key)
                    || !options
                        .as_array()
                        .is_some_and(|o| o.iter().any(is_omission))
            })
            .filter_map(|(key, options)| {
                // A required parameter is sent even where the answer lists
                // `""` first (BFCL's data has such entries: its checker
                // then wants the parameter all the same).
                let value = if self.required.iter().any(|r| r == key) {
                    first_given(options)?
                } else {
                    first_acceptable(options)?
                };
                let value = match &self.source {
                    Some(source) => {
                        let (declared, items) = source.declared(key);
                        Value::String(source.language.write(&value, declared, items))
                    }
                    None => value,
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

/// The first acceptable value that is not an omission.
fn first_given(options: &Value) -> Option<Value> {
    let given = options.as_array()?.iter().find(|o| !is_omission(o))?;
    Some(resolve(given))
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

/// The type of the first value that is not an omission.
fn answer_type(options: &[Value]) -> Option<Kind> {
    options.iter().find(|o| !is_omission(o)).map(kind)
}

/// A JSON Schema type as the kind BFCL's checker expects; `None` for no
/// type or several.
fn schema_kind(declared: Option<&Value>) -> Option<Kind> {
    Some(match declared?.as_str()? {
        "string" => Kind::String,
        "integer" => Kind::Int,
        "number" => Kind::Float,
        "boolean" => Kind::Bool,
        "array" => Kind::List,
        "object" => Kind::Dict,
        "null" => Kind::Null,
        _ => return None,
    })
}

/// A value of that kind, to ask `has_type` about it.
fn kind_example(kind: Kind) -> Value {
    match kind {
        Kind::Null => Value::Null,
        Kind::Bool => Value::Bool(false),
        Kind::Int => Value::from(0),
        Kind::Float => Value::from(0.5),
        Kind::String => Value::String(String::new()),
        Kind::List => Value::Array(Vec::new()),
        Kind::Dict => Value::Object(Map::new()),
    }
}

/// An item of a Python array against its declared JSON Schema type,
/// exactly: inside an array, an int is not a float.
fn exact_type(item: &Value, declared: Option<&Value>) -> bool {
    match declared.and_then(Value::as_str) {
        Some("number") => kind(item) == Kind::Float,
        Some("integer") => kind(item) == Kind::Int,
        Some("string") => item.is_string(),
        Some("boolean") => item.is_boolean(),
        Some("array") => item.is_array(),
        Some("object") => item.is_object(),
        _ => true,
    }
}

/// BFCL's one-level check of an array's items: for some acceptable value
/// that is a list, every item has the declared item type (`exact`) or the
/// type of that list's first item; an acceptable value that is not a list
/// lets any items through.
fn items_fit(value: &Value, exact: &dyn Fn(&Value) -> bool, options: &[Value]) -> bool {
    let Some(items) = value.as_array() else {
        return true;
    };
    options.iter().any(|option| match option.as_array() {
        Some(answer) => {
            let answer_type = answer_type(answer);
            items
                .iter()
                .all(|item| exact(item) || answer_type == Some(kind(item)))
        }
        None => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The reason alone.
    fn check(rule: &BfclCall, name: &str, arguments: &Value) -> Result<(), Reason> {
        rule.check(name, arguments).map_err(|m| m.reason)
    }

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
        BfclCall::new("area", params.as_object().unwrap(), &schema, None).unwrap()
    }

    #[test]
    fn the_example_matches_and_each_kind_of_wrong_call_has_its_reason() {
        let rule = rule();
        let example = Value::Object(rule.example());
        assert_eq!(
            example,
            json!({"base": 10, "height": 5.0, "unit": "units", "tags": ["New York", "LA"], "prefs": {"size": "large", "milk": "oat"}})
        );
        assert_eq!(check(&rule, "area", &example), Ok(()));
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
            assert_eq!(check(&rule, name, &arguments), Err(reason), "{arguments}");
        }
    }

    #[test]
    fn the_reason_names_the_first_wrong_parameter_in_the_models_order() {
        let rule = rule();
        // Two wrong values: BFCL reports the first the model wrote.
        let unit_first: Value =
            serde_json::from_str(r#"{"unit": "feet", "base": 11, "height": 5}"#).unwrap();
        let base_first: Value =
            serde_json::from_str(r#"{"base": 11, "unit": "feet", "height": 5}"#).unwrap();
        let about = |reason, parameter: &str| {
            Err(Mismatch {
                reason,
                parameter: Some(parameter.to_owned()),
            })
        };
        assert_eq!(
            rule.check("area", &unit_first),
            about(Reason::ValueString, "unit")
        );
        assert_eq!(
            rule.check("area", &base_first),
            about(Reason::ValueOthers, "base")
        );
        // Required parameters in the function's order; then the answers'.
        assert_eq!(
            rule.check("area", &json!({"unit": "units"})),
            about(Reason::MissingRequired, "base")
        );
        let params: Value = serde_json::from_str(r#"{"height": [5], "base": [10]}"#).unwrap();
        let strict = BfclCall::new("area", params.as_object().unwrap(), &json!({}), None).unwrap();
        assert_eq!(
            strict.check("area", &json!({})),
            about(Reason::MissingOptional, "height")
        );
    }

    #[test]
    fn bfcl_leniency_ints_for_floats_string_normalisation_and_omissions() {
        let rule = rule();
        // An int where a float is expected; case and punctuation in strings.
        let ok = json!({"base": 10, "height": 5, "unit": "UNITS", "tags": ["new-york", "l.a."], "prefs": {"size": "Large"}});
        assert_eq!(check(&rule, "area", &ok), Ok(()));
        // A parameter without "" among its values must be given.
        let params = json!({"base": [10], "height": [5]});
        let strict = BfclCall::new("area", params.as_object().unwrap(), &json!({}), None).unwrap();
        assert_eq!(
            check(&strict, "area", &json!({"base": 10})),
            Err(Reason::MissingOptional)
        );
    }

    #[test]
    fn source_text_is_read_by_its_declared_type_before_it_is_compared() {
        let bfcl = json!({
            "language": "java",
            "parameters": {"properties": {
                "flag": {"type": "boolean"},
                "limit": {"type": "long"},
                "name": {"type": "String"},
                "ids": {"type": "ArrayList", "items": {"type": "integer"}}
            }}
        });
        let params =
            json!({"flag": [true], "limit": [50], "name": ["mapController"], "ids": [[1, 2]]});
        let rule = BfclCall::new(
            "f",
            params.as_object().unwrap(),
            &json!({}),
            Source::of(&bfcl),
        )
        .unwrap();
        // The example is written as Java, and reads back right.
        let example = Value::Object(rule.example());
        assert_eq!(
            example,
            json!({"flag": "true", "limit": "50L", "name": "mapController", "ids": "new ArrayList<>(Arrays.asList(1, 2))"})
        );
        assert_eq!(check(&rule, "f", &example), Ok(()));
        let with = |key: &str, value: Value| {
            let mut call = example.clone();
            call[key] = value;
            check(&rule, "f", &call)
        };
        // Not text at all; a long without its L (text, not a number).
        assert_eq!(with("flag", json!(true)), Err(Reason::TypeError));
        assert_eq!(with("limit", json!("50")), Err(Reason::TypeError));
        assert_eq!(with("flag", json!("false")), Err(Reason::ValueOthers));
        assert_eq!(
            with("ids", json!("new int[]{1, 2}")),
            Err(Reason::TypeError)
        );
        assert_eq!(
            with(
                "ids",
                json!("new ArrayList<Integer>() {{ add(1); add(2); }}")
            ),
            Ok(())
        );
    }

    #[test]
    fn bfcl_variables_nested_types_and_sent_empty_strings() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x": {"type": "array", "items": {"type": "number"}},
                "ratio": {"type": "number"},
                "note": {"type": "string"},
                "count": {"type": "integer"}
            }
        });
        let params = json!({"x": ["data['sales']"], "ratio": [0.5, ""], "note": ["hi", ""], "count": [3, ""]});
        let rule = BfclCall::new("f", params.as_object().unwrap(), &schema, None).unwrap();
        // A variable's name where an array is declared: compared as written.
        assert_eq!(check(&rule, "f", &json!({"x": "data['sales']"})), Ok(()));
        assert_eq!(
            check(&rule, "f", &json!({"x": "data['other']"})),
            Err(Reason::ValueOthers)
        );
        // "" may be sent for a string, not for an integer.
        assert_eq!(
            check(&rule, "f", &json!({"x": "data['sales']", "note": ""})),
            Ok(())
        );
        assert_eq!(
            check(&rule, "f", &json!({"x": "data['sales']", "count": ""})),
            Err(Reason::TypeError)
        );
        // An int for a float, but not inside an array of floats.
        let floats = json!({"x": [[1.0, 2.0]]});
        let rule = BfclCall::new("f", floats.as_object().unwrap(), &schema, None).unwrap();
        assert_eq!(check(&rule, "f", &json!({"x": [1.0, 2.0]})), Ok(()));
        assert_eq!(
            check(&rule, "f", &json!({"x": [1, 2]})),
            Err(Reason::TypeError)
        );
        // A parameter the function does not declare is unexpected, even
        // where the answers list it.
        let params = json!({"x": [[1.0]], "type": ["credit", ""]});
        let rule = BfclCall::new("f", params.as_object().unwrap(), &schema, None).unwrap();
        assert_eq!(
            check(&rule, "f", &json!({"x": [1.0], "type": "credit"})),
            Err(Reason::UnexpectedParam)
        );
    }

    #[test]
    fn a_parameter_bfcl_declares_any_is_a_string_to_its_checker() {
        // The schema lets any type through; BFCL's checker reads `any` as str.
        let schema = json!({"type": "object", "properties": {
            "function": {"type": ["string", "number", "integer", "boolean", "object", "array", "null"]},
            "default_value": {"type": ["string", "number", "integer", "boolean", "object", "array", "null"]}
        }});
        let bfcl = json!({"language": "python", "parameters": {"type": "dict", "properties": {
            "function": {"type": "any"}, "default_value": {"type": "any"}
        }}});
        let params = json!({"function": ["lambda x: x**2"], "default_value": [5, ""]});
        let mut rule = BfclCall::new("f", params.as_object().unwrap(), &schema, None).unwrap();
        let lenient = rule.clone();
        rule.read_any_as_string(&bfcl);
        let list = json!({"function": ["lambda x: x**2"]});
        assert_eq!(check(&lenient, "f", &list), Err(Reason::ValueList));
        assert_eq!(check(&rule, "f", &list), Err(Reason::TypeError));
        // Answers of another type are BFCL's variables: compared as they
        // are, so a float is no int there.
        let float = json!({"function": "lambda x: x**2", "default_value": 5.0});
        assert_eq!(check(&lenient, "f", &float), Ok(()));
        assert_eq!(check(&rule, "f", &float), Err(Reason::TypeError));
        let int = json!({"function": "lambda x: x**2", "default_value": 5});
        assert_eq!(check(&rule, "f", &int), Ok(()));
    }

    #[test]
    fn non_list_answers_are_refused() {
        let params = json!({"base": 10});
        assert!(BfclCall::new("f", params.as_object().unwrap(), &json!({}), None).is_err());
    }
}
