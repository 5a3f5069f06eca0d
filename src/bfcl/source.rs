//! Java and JavaScript arguments as BFCL reads them. In those categories
//! the model writes every parameter as source text (`"42L"`, `"new
//! int[]{1, 2}"`, `"{key: 'v'}"`); BFCL's checker converts the text by the
//! parameter's declared type (its `java_type_converter` and
//! `js_type_converter`) and compares typed values. Text that does not have
//! the shape of its type stays a string, as in BFCL.

use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The language of an entry's source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceLanguage {
    Java,
    JavaScript,
}

/// A type as BFCL's checker sees a converted value: Python's types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    List,
    Dict,
}

/// A value's type, as Python tells them apart.
pub fn kind(value: &Value) -> Kind {
    match value {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_f64() => Kind::Float,
        Value::Number(_) => Kind::Int,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Dict,
    }
}

impl SourceLanguage {
    /// `java` or `javascript`, as the importer records it.
    pub fn parse(text: &str) -> Option<SourceLanguage> {
        match text {
            "java" => Some(SourceLanguage::Java),
            "javascript" => Some(SourceLanguage::JavaScript),
            _ => None,
        }
    }

    /// The type a converted value of `declared` must have
    /// (`JAVA_TYPE_CONVERSION`, `JS_TYPE_CONVERSION`).
    pub fn kind_of(self, declared: &str) -> Option<Kind> {
        Some(match (self, declared) {
            (SourceLanguage::Java, "byte" | "short" | "integer" | "long") => Kind::Int,
            (SourceLanguage::Java, "float" | "double") => Kind::Float,
            (SourceLanguage::Java, "boolean") => Kind::Bool,
            (SourceLanguage::Java, "char" | "String" | "any") => Kind::String,
            (SourceLanguage::Java, "Array" | "ArrayList" | "Queue" | "Stack") => Kind::List,
            (SourceLanguage::Java, "HashMap" | "Hashtable") => Kind::Dict,
            (SourceLanguage::JavaScript, "String" | "any") => Kind::String,
            (SourceLanguage::JavaScript, "integer" | "Bigint") => Kind::Int,
            (SourceLanguage::JavaScript, "float") => Kind::Float,
            (SourceLanguage::JavaScript, "Boolean") => Kind::Bool,
            (SourceLanguage::JavaScript, "dict") => Kind::Dict,
            (SourceLanguage::JavaScript, "array") => Kind::List,
            _ => return None,
        })
    }

    /// Whether BFCL checks the items of `declared` one level deep.
    pub fn has_items(self, declared: &str) -> bool {
        matches!(declared, "Array" | "ArrayList" | "array")
    }

    /// How a programmer writes `value` as a `declared` parameter: text
    /// that [`SourceLanguage::convert`] reads back as `value`.
    pub fn write(self, value: &Value, declared: &str, items: Option<&str>) -> String {
        let item = |v: &Value| match (self, items) {
            (SourceLanguage::Java, Some("String" | "char"))
            | (SourceLanguage::JavaScript, Some("String")) => {
                format!(
                    "\"{}\"",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            }
            (_, Some(items)) => self.write(v, items, None),
            (SourceLanguage::Java, None) => match v {
                Value::String(s) => format!("\"{s}\""),
                other => other.to_string(),
            },
            (SourceLanguage::JavaScript, None) => v.to_string(),
        };
        match (self, declared, value) {
            (_, _, Value::String(s)) => s.clone(),
            (SourceLanguage::Java, "long", Value::Number(n)) => format!("{n}L"),
            (SourceLanguage::Java, "float", Value::Number(n)) => format!("{}f", float_text(n)),
            (SourceLanguage::Java, "double", Value::Number(n))
            | (SourceLanguage::JavaScript, "float", Value::Number(n)) => float_text(n),
            (SourceLanguage::JavaScript, "Bigint", Value::Number(n)) => format!("{n}n"),
            // BFCL reads a `new T[]{...}`'s String items as written,
            // quotes and all: so they are written bare.
            (SourceLanguage::Java, "Array", Value::Array(values)) => format!(
                "new {}[]{{{}}}",
                match items {
                    Some("integer") | None => "int",
                    Some(other) => other,
                },
                values
                    .iter()
                    .map(|v| match (items, v) {
                        (Some("String" | "char"), Value::String(s)) => s.clone(),
                        _ => item(v),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (SourceLanguage::Java, "ArrayList", Value::Array(values)) => format!(
                "new ArrayList<>(Arrays.asList({}))",
                values.iter().map(item).collect::<Vec<_>>().join(", ")
            ),
            (SourceLanguage::Java, "HashMap", Value::Object(map)) => format!(
                "new HashMap<String, Object>() {{{{ {} }}}}",
                map.iter()
                    .map(|(k, v)| format!("put(\"{k}\", {});", item(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            (SourceLanguage::JavaScript, "array", Value::Array(values)) => format!(
                "[{}]",
                values.iter().map(item).collect::<Vec<_>>().join(", ")
            ),
            (SourceLanguage::JavaScript, "dict", Value::Object(map)) => format!(
                "{{{}}}",
                map.iter()
                    .map(|(k, v)| format!("{k}: {}", item(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (_, _, other) => other.to_string(),
        }
    }

    /// `text` converted by `declared` (and, for arrays, the items' type).
    pub fn convert(self, text: &str, declared: &str, items: Option<&str>) -> Value {
        match self {
            SourceLanguage::Java => java(text, declared, items),
            SourceLanguage::JavaScript => js(text, declared, items),
        }
    }
}

/// A float as source text: always with a fraction (`5.0`, not `5`).
fn float_text(n: &serde_json::Number) -> String {
    let x = n.as_f64().unwrap_or_default();
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        x.to_string()
    }
}

fn re(cell: &'static OnceLock<regex::Regex>, pattern: &str) -> &'static regex::Regex {
    cell.get_or_init(|| regex::Regex::new(pattern).expect("a valid pattern"))
}

macro_rules! pattern {
    ($name:ident, $pattern:expr) => {
        fn $name() -> &'static regex::Regex {
            static CELL: OnceLock<regex::Regex> = OnceLock::new();
            re(&CELL, $pattern)
        }
    };
}

pattern!(int_text, r"^-?\d+$");
pattern!(java_float_text, r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$");
pattern!(double_text, r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$");
pattern!(long_text, r"^-?\d+[lL]$");
pattern!(
    array_list_as_list,
    r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)"
);
pattern!(
    array_list_adds,
    r"(?s)new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}"
);
pattern!(add_call, r"add\((.+?)\)");
pattern!(array_list_empty, r"new\s+ArrayList<\w*>\(\)");
pattern!(java_array, r"new\s+\w+\[\]\s*\{(.*?)\}");
pattern!(
    hash_map,
    r"(?s)new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}"
);
pattern!(put_call, r#"put\("(.*?)",\s*(.*?)\)"#);
pattern!(hash_map_empty, r"new\s+HashMap<.*?>\s*\(\)");
pattern!(js_float_text, r"^-?\d+(\.\d+)?$");
pattern!(bigint_text, r"^-?\d+n$");
pattern!(
    js_array_2d,
    r"^(?:\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\))"
);
pattern!(bracketed, r"\[(.*?)\]");
pattern!(js_array, r"^(?:\[(.*?)\]|\bnew\s+Array\((.*?)\))");
pattern!(js_dict, r"^\{(.*?)\}");

fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

/// Python's `int(text)`, for the texts models write.
fn python_int(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    trimmed
        .replace('_', "")
        .parse::<i64>()
        .ok()
        .map(Value::from)
}

/// Python's `float(text)`.
fn python_float(text: &str) -> Option<Value> {
    let number: f64 = text.trim().parse().ok()?;
    serde_json::Number::from_f64(number).map(Value::Number)
}

fn strip_ends(text: &str) -> String {
    let mut chars = text.chars();
    chars.next();
    chars.next_back();
    chars.as_str().to_owned()
}

fn java(value: &str, declared: &str, items: Option<&str>) -> Value {
    match declared {
        "byte" | "short" | "integer" if int_text().is_match(value) => {
            python_int(value).unwrap_or_else(|| text(value))
        }
        "float" if java_float_text().is_match(value) => {
            python_float(&value[..value.len() - 1]).unwrap_or_else(|| text(value))
        }
        "double" if double_text().is_match(value) => {
            python_float(value).unwrap_or_else(|| text(value))
        }
        "long" if long_text().is_match(value) => {
            python_int(&value[..value.len() - 1]).unwrap_or_else(|| text(value))
        }
        "boolean" if value == "true" || value == "false" => Value::Bool(value == "true"),
        "ArrayList" => java_array_list(value, items),
        "Array" => java_plain_array(value, items),
        "HashMap" => java_hash_map(value),
        _ => text(value),
    }
}

fn java_element(element: &str, items: Option<&str>) -> Value {
    match items {
        Some("char" | "String") => Value::String(strip_ends(element)),
        Some(items) => java(element, items, None),
        None => java_value(element),
    }
}

fn java_array_list(value: &str, items: Option<&str>) -> Value {
    if let Some(found) = array_list_as_list().captures(value) {
        return Value::Array(
            found[1]
                .split(',')
                .map(|e| java_element(e.trim(), items))
                .collect(),
        );
    }
    if let Some(found) = array_list_adds().captures(value) {
        return Value::Array(
            add_call()
                .captures_iter(&found[1])
                .map(|c| java_element(c[1].trim(), items))
                .collect(),
        );
    }
    if array_list_empty().is_match(value) {
        return Value::Array(Vec::new());
    }
    text(value)
}

fn java_plain_array(value: &str, items: Option<&str>) -> Value {
    let Some(found) = java_array().captures(value) else {
        return text(value);
    };
    Value::Array(
        found[1]
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| match items {
                Some(items) => java(x, items, None),
                None => java_value(x),
            })
            .collect(),
    )
}

fn java_hash_map(value: &str) -> Value {
    if let Some(found) = hash_map().captures(value) {
        let mut map = Map::new();
        if !found[1].trim().is_empty() {
            for put in put_call().captures_iter(&found[1]) {
                map.insert(put[1].to_owned(), java_value(put[2].trim()));
            }
        }
        return Value::Object(map);
    }
    if hash_map_empty().is_match(value) {
        return Value::Object(Map::new());
    }
    text(value)
}

/// BFCL's `parse_java_value`: a value written without its type.
fn java_value(value: &str) -> Value {
    if value == "true" || value == "false" {
        return Value::Bool(value == "true");
    }
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        return Value::String(strip_ends(value));
    }
    if long_text().is_match(value) {
        return python_int(&value[..value.len() - 1]).unwrap_or_else(|| text(value));
    }
    if java_float_text().is_match(value) {
        return python_float(&value[..value.len() - 1]).unwrap_or_else(|| text(value));
    }
    python_int(value)
        .or_else(|| python_float(value))
        .unwrap_or_else(|| text(value))
}

fn quoted(value: &str) -> bool {
    value.len() >= 2
        && ((value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\'')))
}

fn js(value: &str, declared: &str, items: Option<&str>) -> Value {
    match declared {
        "String" if quoted(value) => Value::String(strip_ends(value)),
        "integer" if int_text().is_match(value) => python_int(value).unwrap_or_else(|| text(value)),
        "float" if js_float_text().is_match(value) => {
            python_float(value).unwrap_or_else(|| text(value))
        }
        "Bigint" if bigint_text().is_match(value) => {
            python_int(&value[..value.len() - 1]).unwrap_or_else(|| text(value))
        }
        "Boolean" if value == "true" || value == "false" => Value::Bool(value == "true"),
        "dict" => js_dict_value(value.trim()).unwrap_or_else(|| text(value.trim())),
        "array" => js_array_value(value.trim(), items).unwrap_or_else(|| text(value.trim())),
        _ => text(value),
    }
}

/// A JS array; `None` where BFCL keeps the text.
fn js_array_value(code: &str, items: Option<&str>) -> Option<Value> {
    if let Some(found) = js_array_2d().find(code) {
        let mut rows = Vec::new();
        for (i, inner) in bracketed().captures_iter(found.as_str()).enumerate() {
            let mut inner = inner[1].trim();
            if i == 0 && inner.starts_with('[') {
                inner = &inner[1..];
            }
            rows.push(Value::Array(
                inner.split(',').map(|e| js_value(e.trim())).collect(),
            ));
        }
        return Some(Value::Array(rows));
    }
    let found = js_array().captures(code)?;
    let inside = found
        .get(1)
        .or_else(|| found.get(2))
        .map_or("", |m| m.as_str())
        .trim();
    let elements: Vec<&str> = if inside.is_empty() {
        Vec::new()
    } else {
        inside.split(',').collect()
    };
    let mut out = Vec::with_capacity(elements.len());
    for element in elements {
        let element = element.trim();
        out.push(match items {
            // A type BFCL cannot convert makes it keep the whole text.
            Some(items) => {
                SourceLanguage::JavaScript.kind_of(items)?;
                js(element, items, None)
            }
            None => js_value(element),
        });
    }
    Some(Value::Array(out))
}

/// A JS object literal; `None` where BFCL keeps the text.
fn js_dict_value(code: &str) -> Option<Value> {
    if code == "{}" {
        return Some(Value::Object(Map::new()));
    }
    let content = js_dict().captures(code)?.get(1)?.as_str().to_owned();
    let mut map = Map::new();
    for (key, value) in js_pairs(&content) {
        let key = key.trim().trim_matches(['\'', '"']).to_owned();
        let value = value.trim();
        let parsed = if value.starts_with('[') && value.ends_with(']') {
            js_array_value(value, None).unwrap_or_else(|| text(value))
        } else if value.starts_with('{') && value.ends_with('}') {
            js_dict_value(value).unwrap_or_else(|| text(value))
        } else {
            js_value(value.trim_matches(['\'', '"']))
        };
        map.insert(key, parsed);
    }
    Some(Value::Object(map))
}

/// BFCL's `([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)` over an object's inside:
/// key and value pairs, a value running to the comma before the next
/// `key:` (or the end).
fn js_pairs(content: &str) -> Vec<(String, String)> {
    static PAIRS: OnceLock<fancy_regex::Regex> = OnceLock::new();
    let pairs = PAIRS.get_or_init(|| {
        fancy_regex::Regex::new(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)").expect("a valid pattern")
    });
    pairs
        .captures_iter(content)
        .filter_map(Result::ok)
        .map(|c| {
            (
                c.get(1).map_or("", |m| m.as_str()).to_owned(),
                c.get(2).map_or("", |m| m.as_str()).to_owned(),
            )
        })
        .collect()
}

/// BFCL's `parse_js_value`.
fn js_value(value: &str) -> Value {
    let value = value.trim();
    if value == "true" || value == "false" {
        return Value::Bool(value == "true");
    }
    if quoted(value) {
        return Value::String(strip_ends(value));
    }
    python_int(value)
        .or_else(|| python_float(value))
        .unwrap_or_else(|| text(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn java_text_converts_by_its_declared_type_as_bfcl_does() {
        let java = |t: &str, d: &str, i: Option<&str>| SourceLanguage::Java.convert(t, d, i);
        assert_eq!(java("42", "integer", None), json!(42));
        assert_eq!(java("42L", "long", None), json!(42));
        // A long without its L stays text: a type error in BFCL.
        assert_eq!(java("42", "long", None), json!("42"));
        assert_eq!(java("3.5f", "float", None), json!(3.5));
        assert_eq!(java("3.5", "double", None), json!(3.5));
        assert_eq!(java("true", "boolean", None), json!(true));
        assert_eq!(
            java("new int[]{1, 2, 3}", "Array", Some("integer")),
            json!([1, 2, 3])
        );
        assert_eq!(
            java(
                "new ArrayList<>(Arrays.asList(\"a\", \"b\"))",
                "ArrayList",
                Some("String")
            ),
            json!(["a", "b"])
        );
        assert_eq!(
            java(
                "new ArrayList<Double>() {{ add(1.0); add(2.0); }}",
                "ArrayList",
                Some("double")
            ),
            json!([1.0, 2.0])
        );
        assert_eq!(java("new ArrayList<>()", "ArrayList", None), json!([]));
        assert_eq!(
            java(
                r#"new HashMap<String, Object>() {{ put("k1", 1); put("k2", "v"); put("k3", true); }}"#,
                "HashMap",
                None
            ),
            json!({"k1": 1, "k2": "v", "k3": true})
        );
        assert_eq!(java("new HashMap<>()", "HashMap", None), json!({}));
        assert_eq!(java("mapController", "any", None), json!("mapController"));
    }

    #[test]
    fn javascript_text_converts_by_its_declared_type_as_bfcl_does() {
        let js = |t: &str, d: &str, i: Option<&str>| SourceLanguage::JavaScript.convert(t, d, i);
        assert_eq!(js("4", "integer", None), json!(4));
        assert_eq!(js("4", "float", None), json!(4.0));
        assert_eq!(js("12n", "Bigint", None), json!(12));
        assert_eq!(js("'abc'", "String", None), json!("abc"));
        assert_eq!(js("abc", "String", None), json!("abc"));
        assert_eq!(js("[1, 2, 3]", "array", None), json!([1, 2, 3]));
        assert_eq!(js("new Array(1, 2, 3)", "array", None), json!([1, 2, 3]));
        assert_eq!(
            js("[\"a\", \"b\"]", "array", Some("String")),
            json!(["a", "b"])
        );
        assert_eq!(
            js("[[1, 2], [3, 4]]", "array", Some("array")),
            json!([[1, 2], [3, 4]])
        );
        assert_eq!(
            js("{'key': 'value'}", "dict", None),
            json!({"key": "value"})
        );
        assert_eq!(
            js(
                "{'key1': 123, 'key2': 'value', 'key3': false}",
                "dict",
                None
            ),
            json!({"key1": 123, "key2": "value", "key3": false})
        );
        assert_eq!(
            js(
                r#"{"initialState": initialStateObject, "middlewares": ["loggerMiddleware"]}"#,
                "dict",
                None
            ),
            json!({"initialState": "initialStateObject", "middlewares": ["loggerMiddleware"]})
        );
        assert_eq!(js("{}", "dict", None), json!({}));
    }
}
