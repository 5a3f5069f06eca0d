//! Simulated results computed from the call. In a `simulate.result`, a
//! string may hold placeholders: `{{args.order}}` is an argument (nested
//! ones by dots: `{{args.customer.id}}`), `{{store.orders}}` a collection
//! of the trial's store, `{{store.orders.o-1}}` one record. A string that
//! is a placeholder and nothing else takes the value itself, with its JSON
//! type; inside other text a value is written as text (a string as is,
//! anything else as JSON). What is absent renders as `null`.

use serde_json::{Map, Value};

use super::store::Store;

/// Does `template` hold any placeholder?
pub fn has_placeholders(template: &Value) -> bool {
    match template {
        Value::String(text) => text.contains("{{"),
        Value::Array(items) => items.iter().any(has_placeholders),
        Value::Object(members) => members.values().any(has_placeholders),
        _ => false,
    }
}

/// `template` with every placeholder filled from `args` and `store`.
pub fn render(template: &Value, args: &Map<String, Value>, store: &Store) -> Value {
    match template {
        Value::String(text) => render_text(text, args, store),
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, args, store)).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), render(v, args, store)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` with every placeholder filled, as text.
pub fn fill_text(text: &str, args: &Map<String, Value>, store: &Store) -> String {
    match render_text(text, args, store) {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

fn render_text(text: &str, args: &Map<String, Value>, store: &Store) -> Value {
    let trimmed = text.trim();
    if let Some(path) = trimmed
        .strip_prefix("{{")
        .and_then(|rest| rest.strip_suffix("}}"))
        .filter(|path| !path.contains("{{"))
    {
        return lookup(path.trim(), args, store);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(length) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        match lookup(rest[start + 2..start + length].trim(), args, store) {
            Value::String(value) => out.push_str(&value),
            value => out.push_str(&value.to_string()),
        }
        rest = &rest[start + length + 2..];
    }
    out.push_str(rest);
    Value::String(out)
}

fn lookup(path: &str, args: &Map<String, Value>, store: &Store) -> Value {
    if let Some(keys) = path.strip_prefix("args.") {
        let mut value = args.get(keys.split('.').next().unwrap_or_default());
        for key in keys.split('.').skip(1) {
            value = value.and_then(|v| match v {
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                other => other.get(key),
            });
        }
        return value.cloned().unwrap_or(Value::Null);
    }
    if let Some(rest) = path.strip_prefix("store.") {
        return match rest.split_once('.') {
            Some((collection, id)) => store.record(collection, id),
            None => store.collection_value(rest),
        }
        .unwrap_or(Value::Null);
    }
    Value::Null
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_take_arguments_and_store_records() {
        let state = json!({"orders": [{"id": "o-1", "total": 40}]});
        let store = Store::seeded(state.as_object().unwrap()).unwrap();
        let args = json!({"order": "o-1", "amount": 12.5, "customer": {"id": "c-7"}});
        let args = args.as_object().unwrap();
        let template = json!({
            "refund_for": "{{args.order}}",
            "amount": "{{ args.amount }}",
            "note": "refunded {{args.amount}} on {{args.order}} for {{args.customer.id}}",
            "order": "{{store.orders.o-1}}",
            "all": "{{store.orders}}",
            "missing": "{{args.nope}}",
            "fixed": [1, "plain"]
        });
        assert!(has_placeholders(&template));
        assert!(!has_placeholders(&json!({"a": [1, "b"]})));
        assert_eq!(
            render(&template, args, &store),
            json!({
                "refund_for": "o-1",
                "amount": 12.5,
                "note": "refunded 12.5 on o-1 for c-7",
                "order": {"id": "o-1", "total": 40},
                "all": [{"id": "o-1", "total": 40}],
                "missing": null,
                "fixed": [1, "plain"]
            })
        );
    }
}
