//! BFCL's value comparison, as its `ast_checker.py` does it once a value
//! has the right type: the checker is chosen by the parameter's declared
//! type (a string, a list, a dict, a list of dicts, anything else), each
//! normalises strings at its own depth only, and the rest compares with
//! Python's `==` (an int equals a float, `True` equals 1).

use serde_json::{Map, Value};

use super::reason::Reason;
use super::source::Kind;

/// Which of BFCL's checkers judges a parameter's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checker {
    /// `string_checker`: normalised, against the string answers.
    String,
    /// `list_checker`: string items normalised, the rest as Python compares.
    List,
    /// `dict_checker`: each key's value against that key's answers.
    Dict,
    /// `list_dict_checker`: as many dicts as an answer, each by `dict_checker`.
    ListOfDicts,
    /// `value in possible_answer`.
    Plain,
}

impl Checker {
    /// By the declared type and its items' type (BFCL's converted types).
    pub fn of(expected: Option<Kind>, items: Option<Kind>) -> Checker {
        match (expected, items) {
            (Some(Kind::Dict), _) => Checker::Dict,
            (Some(Kind::List), Some(Kind::Dict)) => Checker::ListOfDicts,
            (Some(Kind::String), _) => Checker::String,
            (Some(Kind::List), _) => Checker::List,
            _ => Checker::Plain,
        }
    }

    /// Judge `value` against the acceptable values, in BFCL's words.
    pub fn check(self, value: &Value, options: &[Value]) -> Result<(), Reason> {
        let ok = match self {
            Checker::String => value.as_str().is_some_and(|text| {
                let text = normalise(text);
                options
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|o| normalise(o) == text)
            }),
            Checker::List => list_matches(value, options),
            Checker::Dict => return dict_check(value, options),
            Checker::ListOfDicts => return list_of_dicts_check(value, options),
            Checker::Plain => options.iter().any(|o| python_eq(o, value)),
        };
        if ok {
            return Ok(());
        }
        Err(match self {
            Checker::String => Reason::ValueString,
            Checker::List => Reason::ValueList,
            _ => Reason::ValueOthers,
        })
    }
}

/// BFCL's string normalisation: drop spaces and `,./-_*^`, lowercase, and
/// treat single and double quotes alike.
pub fn normalise(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

/// A string normalised, anything else as it is.
fn normalised(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(normalise(text)),
        other => other.clone(),
    }
}

/// `list_checker`: the model's string items normalised, against each
/// answer's items normalised the same way. An answer that is text is read
/// as Python iterates it, character by character: so `""` (may be left
/// out) also accepts an empty list.
fn list_matches(value: &Value, options: &[Value]) -> bool {
    let Some(items) = value.as_array() else {
        return false;
    };
    let items: Vec<Value> = items.iter().map(normalised).collect();
    options.iter().any(|option| {
        let answer: Vec<Value> = match option {
            Value::Array(answer) => answer.iter().map(normalised).collect(),
            Value::String(text) => text
                .chars()
                .map(|c| Value::String(normalise(&c.to_string())))
                .collect(),
            _ => return false,
        };
        answer.len() == items.len() && answer.iter().zip(&items).all(|(a, v)| python_eq(a, v))
    })
}

/// `dict_checker`: the first answer (other than `""`) whose keys and values
/// all fit; the reason is the last answer's.
fn dict_check(value: &Value, options: &[Value]) -> Result<(), Reason> {
    let Some(dict) = value.as_object() else {
        return Err(Reason::ValueDict);
    };
    let mut last = Err(Reason::ValueDict);
    for option in options.iter().filter(|o| o.as_str() != Some("")) {
        last = dict_fits(dict, option);
        if last.is_ok() {
            return last;
        }
    }
    last
}

fn dict_fits(dict: &Map<String, Value>, answer: &Value) -> Result<(), Reason> {
    let Some(answer) = answer.as_object() else {
        return Err(Reason::ValueDict);
    };
    let values_of = |key: &str| -> Vec<Value> {
        match answer.get(key) {
            Some(Value::Array(values)) => values.iter().map(normalised).collect(),
            Some(other) => vec![normalised(other)],
            None => Vec::new(),
        }
    };
    for (key, value) in dict {
        if !answer.contains_key(key) {
            return Err(Reason::ValueDict);
        }
        let value = normalised(value);
        if !values_of(key).iter().any(|a| python_eq(a, &value)) {
            return Err(Reason::ValueDict);
        }
    }
    let may_omit = |values: &Value| match values {
        Value::Array(values) => values.iter().any(|v| v.as_str() == Some("")),
        other => other.as_str() == Some(""),
    };
    if answer
        .iter()
        .any(|(key, values)| !dict.contains_key(key) && !may_omit(values))
    {
        return Err(Reason::ValueDict);
    }
    Ok(())
}

/// `list_dict_checker`: an answer with as many dicts (`""` has none), each
/// fitting; a count that fits no answer is a list error.
fn list_of_dicts_check(value: &Value, options: &[Value]) -> Result<(), Reason> {
    let Some(dicts) = value.as_array() else {
        return Err(Reason::ValueList);
    };
    let mut last = Err(Reason::ValueList);
    for option in options {
        let answer: &[Value] = match option {
            Value::Array(answer) => answer,
            Value::String(text) if text.is_empty() => &[],
            _ => continue,
        };
        if answer.len() != dicts.len() {
            last = Err(Reason::ValueList);
            continue;
        }
        last = dicts.iter().zip(answer).try_for_each(|(dict, answer)| {
            let dict = dict.as_object().ok_or(Reason::ValueDict)?;
            dict_fits(dict, answer)
        });
        if last.is_ok() {
            return last;
        }
    }
    last
}

/// Python's `==` on JSON values: numbers by value (`1 == 1.0`), `True == 1`
/// and `False == 0`, lists item by item, dicts key by key.
pub fn python_eq(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    crate::json_eq::equal_by(a, b, &|a, b| match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            x.as_f64() == y.as_f64()
        }
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(_) | Value::Bool(_), Value::Number(_) | Value::Bool(_)) => {
            number(a) == number(b)
        }
        _ => a == b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(checker: Checker, value: Value, options: Value) -> Result<(), Reason> {
        checker.check(&value, options.as_array().unwrap())
    }

    #[test]
    fn strings_are_normalised_only_where_bfcls_checker_normalises_them() {
        // Top-level strings and list items: case, spaces, punctuation.
        assert_eq!(
            check(Checker::String, json!("New-York"), json!(["new york"])),
            Ok(())
        );
        assert_eq!(
            check(Checker::List, json!(["New York"]), json!([["new-york"]])),
            Ok(())
        );
        // Strings inside a list inside a dict are compared as written.
        let answer = json!([{"tags": [["applyMiddleware('m')"]]}]);
        assert_eq!(
            check(
                Checker::Dict,
                json!({"tags": ["applyMiddleware(\"m\")"]}),
                answer.clone()
            ),
            Err(Reason::ValueDict)
        );
        assert_eq!(
            check(
                Checker::Dict,
                json!({"tags": ["applyMiddleware('m')"]}),
                answer
            ),
            Ok(())
        );
    }

    #[test]
    fn an_empty_list_fits_an_answer_that_may_be_left_out() {
        // BFCL iterates "" as a list of no characters.
        assert_eq!(check(Checker::List, json!([]), json!([["a"], ""])), Ok(()));
        assert_eq!(check(Checker::ListOfDicts, json!([]), json!([""])), Ok(()));
        assert_eq!(
            check(
                Checker::ListOfDicts,
                json!([{"k": 1}]),
                json!([[{"k": [1]}, {"k": [2]}]])
            ),
            Err(Reason::ValueList)
        );
        assert_eq!(
            check(
                Checker::ListOfDicts,
                json!([{"k": 3}]),
                json!([[{"k": [1]}]])
            ),
            Err(Reason::ValueDict)
        );
    }

    #[test]
    fn other_values_compare_as_python_compares_them() {
        assert!(python_eq(&json!(1), &json!(1.0)));
        assert!(python_eq(&json!(true), &json!(1)));
        assert!(!python_eq(&json!(true), &json!("true")));
        assert!(python_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert_eq!(check(Checker::Plain, json!(5), json!([5.0, ""])), Ok(()));
        assert_eq!(
            check(Checker::Plain, json!(6), json!([5])),
            Err(Reason::ValueOthers)
        );
    }
}
