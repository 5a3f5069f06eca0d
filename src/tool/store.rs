//! The built-in store: named collections of JSON records, each an object
//! with a string `id`, seeded per trial from a scenario's `state` block and
//! isolated per trial. Its operations are tools: `store_get` and
//! `store_find` read (they run in parallel), `store_put` and
//! `store_delete` write (barriers). Enough for lookup-then-act tasks (find
//! a customer, read an order, refund it) without any server.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{ToolFailure, ToolFailureKind};

use crate::pointer::Pointer;

/// The store's tools, in the order `--builtin all` registers them.
pub const STORE_TOOLS: [&str; 4] = ["store_get", "store_find", "store_put", "store_delete"];

/// Collections by name; records by id, in id order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    collections: BTreeMap<String, BTreeMap<String, Map<String, Value>>>,
}

/// A `state` block that is not collections of records with ids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {problem}")]
pub struct StateError {
    /// Where in the `state` block, below it.
    pub pointer: Pointer,
    pub problem: String,
}

impl Store {
    /// The store a `state` block describes: `{"collection": [record, ...]}`.
    pub fn seeded(state: &Map<String, Value>) -> Result<Store, StateError> {
        let mut store = Store::default();
        for (name, records) in state {
            let at = |i: usize| Pointer::root().key(name).index(i);
            let Some(records) = records.as_array() else {
                return Err(StateError {
                    pointer: Pointer::root().key(name),
                    problem: "a collection must be an array of records".to_owned(),
                });
            };
            let collection = store.collections.entry(name.clone()).or_default();
            for (i, record) in records.iter().enumerate() {
                let record = record.as_object().ok_or_else(|| StateError {
                    pointer: at(i),
                    problem: "a record must be an object".to_owned(),
                })?;
                let id = record_id(record).ok_or_else(|| StateError {
                    pointer: at(i),
                    problem: "a record needs a string \"id\"".to_owned(),
                })?;
                if collection.insert(id.to_owned(), record.clone()).is_some() {
                    return Err(StateError {
                        pointer: at(i).key("id"),
                        problem: format!("the id {id:?} is used twice in {name:?}"),
                    });
                }
            }
        }
        Ok(store)
    }

    /// Every collection as `{"collection": [records in id order]}`.
    pub fn snapshot(&self) -> Value {
        self.collections
            .iter()
            .map(|(name, records)| {
                let records: Vec<Value> = records.values().cloned().map(Value::Object).collect();
                (name.clone(), Value::Array(records))
            })
            .collect::<Map<String, Value>>()
            .into()
    }

    /// One collection's records, in id order.
    pub fn collection_value(&self, name: &str) -> Option<Value> {
        let records = self.collections.get(name)?;
        Some(Value::Array(
            records.values().cloned().map(Value::Object).collect(),
        ))
    }

    /// The collections' names, in order.
    pub fn collection_names(&self) -> impl Iterator<Item = &str> {
        self.collections.keys().map(String::as_str)
    }

    /// One record.
    pub fn record(&self, name: &str, id: &str) -> Option<Value> {
        let record = self.collections.get(name)?.get(id)?;
        Some(Value::Object(record.clone()))
    }

    fn collection(&self, name: &str) -> Result<&BTreeMap<String, Map<String, Value>>, ToolFailure> {
        self.collections
            .get(name)
            .ok_or_else(|| self.no_collection(name))
    }

    fn no_collection(&self, name: &str) -> ToolFailure {
        let names: Vec<&str> = self.collections.keys().map(String::as_str).collect();
        ToolFailure::new(
            ToolFailureKind::NotFound,
            if names.is_empty() {
                format!("no collection {name:?}: the store is empty")
            } else {
                format!(
                    "no collection {name:?}; the collections are {}",
                    names.join(", ")
                )
            },
        )
    }

    pub(super) fn get(&self, name: &str, id: &str) -> Result<String, ToolFailure> {
        let record = self.collection(name)?.get(id).ok_or_else(|| {
            ToolFailure::new(
                ToolFailureKind::NotFound,
                format!("no record with id {id:?} in {name:?}"),
            )
        })?;
        Ok(Value::Object(record.clone()).to_string())
    }

    /// The records whose fields equal every field of `filter`, in id order.
    pub(super) fn find(
        &self,
        name: &str,
        filter: &Map<String, Value>,
    ) -> Result<String, ToolFailure> {
        let found: Vec<Value> = self
            .collection(name)?
            .values()
            .filter(|record| filter.iter().all(|(k, v)| record.get(k) == Some(v)))
            .cloned()
            .map(Value::Object)
            .collect();
        Ok(Value::Array(found).to_string())
    }

    /// Insert or replace a record; a new collection is made as needed.
    pub(super) fn put(
        &mut self,
        name: &str,
        record: &Map<String, Value>,
    ) -> Result<String, ToolFailure> {
        let id = record_id(record)
            .ok_or_else(|| ToolFailure::runtime("the record needs a string \"id\""))?;
        let replaced = self
            .collections
            .entry(name.to_owned())
            .or_default()
            .insert(id.to_owned(), record.clone())
            .is_some();
        Ok(json!({"id": id, "replaced": replaced}).to_string())
    }

    pub(super) fn delete(&mut self, name: &str, id: &str) -> Result<String, ToolFailure> {
        let collection = self.collections.get_mut(name).ok_or_else(|| {
            ToolFailure::new(ToolFailureKind::NotFound, format!("no collection {name:?}"))
        })?;
        collection.remove(id).ok_or_else(|| {
            ToolFailure::new(
                ToolFailureKind::NotFound,
                format!("no record with id {id:?} in {name:?}"),
            )
        })?;
        Ok(json!({"deleted": id}).to_string())
    }
}

fn record_id(record: &Map<String, Value>) -> Option<&str> {
    record.get("id").and_then(Value::as_str)
}

/// A name as a JSON pointer segment (RFC 6901).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::backend::store_tools::StoreTool;

    fn store() -> Store {
        let state = json!({
            "customers": [
                {"id": "c-7", "name": "Ada", "tier": "gold"},
                {"id": "c-2", "name": "Bo", "tier": "basic"}
            ],
            "orders": [{"id": "o-1", "customer": "c-7", "total": 40}]
        });
        Store::seeded(state.as_object().unwrap()).unwrap()
    }

    fn run(store: &mut Store, tool: StoreTool, args: Value) -> Result<Value, String> {
        tool.run_on(store, args.as_object().unwrap())
            .map(|text| serde_json::from_str(&text).unwrap())
            .map_err(|failure| failure.message)
    }

    #[test]
    fn records_are_read_found_written_and_deleted_by_id() {
        let mut s = store();
        let got = run(
            &mut s,
            StoreTool::Get,
            json!({"collection": "customers", "id": "c-7"}),
        );
        assert_eq!(got.unwrap()["name"], "Ada");
        let found = run(
            &mut s,
            StoreTool::Find,
            json!({"collection": "customers", "where": {"tier": "basic"}}),
        );
        assert_eq!(
            found.unwrap(),
            json!([{"id": "c-2", "name": "Bo", "tier": "basic"}])
        );
        let all = run(&mut s, StoreTool::Find, json!({"collection": "customers"})).unwrap();
        assert_eq!(all.as_array().unwrap().len(), 2);
        let put = run(
            &mut s,
            StoreTool::Put,
            json!({"collection": "orders", "record": {"id": "o-1", "customer": "c-7", "total": 0}}),
        );
        assert_eq!(put.unwrap(), json!({"id": "o-1", "replaced": true}));
        let deleted = run(
            &mut s,
            StoreTool::Delete,
            json!({"collection": "customers", "id": "c-2"}),
        );
        assert!(deleted.is_ok());
        assert_eq!(
            s.snapshot(),
            json!({
                "customers": [{"id": "c-7", "name": "Ada", "tier": "gold"}],
                "orders": [{"id": "o-1", "customer": "c-7", "total": 0}]
            })
        );
    }

    #[test]
    fn misses_say_what_exists() {
        let mut s = store();
        let error = run(
            &mut s,
            StoreTool::Get,
            json!({"collection": "customers", "id": "c-9"}),
        );
        assert_eq!(
            error.unwrap_err(),
            "no record with id \"c-9\" in \"customers\""
        );
        let error = run(&mut s, StoreTool::Find, json!({"collection": "refunds"}));
        assert_eq!(
            error.unwrap_err(),
            "no collection \"refunds\"; the collections are customers, orders"
        );
    }

    #[test]
    fn a_state_block_that_is_not_records_with_ids_is_located() {
        let bad = |state: Value| {
            Store::seeded(state.as_object().unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            bad(json!({"customers": {"id": "c-1"}})),
            "/customers: a collection must be an array of records"
        );
        assert_eq!(
            bad(json!({"customers": [{"id": "c-1"}, {"name": "no id"}]})),
            "/customers/1: a record needs a string \"id\""
        );
        assert_eq!(
            bad(json!({"a/b": [{"id": "x"}, {"id": "x"}]})),
            "/a~1b/1/id: the id \"x\" is used twice in \"a/b\""
        );
    }
}
