//! The store's operations as tools: `store_get` and `store_find` read,
//! `store_put` and `store_delete` write; their definitions and their
//! backend over the trial's store.

use serde_json::{Map, Value, json};

use super::{ToolBackend, ToolCallContext, ToolFuture};
use crate::tool::store::Store;
use crate::tool::{Effect, ToolFailure};

/// One of the store's operations, as a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tool) enum StoreTool {
    Get,
    Find,
    Put,
    Delete,
}

impl StoreTool {
    pub(in crate::tool) fn for_builtin(name: &str) -> Option<StoreTool> {
        Some(match name {
            "store_get" => StoreTool::Get,
            "store_find" => StoreTool::Find,
            "store_put" => StoreTool::Put,
            "store_delete" => StoreTool::Delete,
            _ => return None,
        })
    }

    pub(in crate::tool) fn run_on(
        self,
        store: &mut Store,
        args: &Map<String, Value>,
    ) -> Result<String, ToolFailure> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
        let object = |key: &str| args.get(key).and_then(Value::as_object);
        let collection = text("collection");
        match self {
            StoreTool::Get => store.get(collection, text("id")),
            StoreTool::Find => store.find(collection, object("where").unwrap_or(&Map::new())),
            StoreTool::Put => store.put(collection, object("record").unwrap_or(&Map::new())),
            StoreTool::Delete => store.delete(collection, text("id")),
        }
    }
}

impl ToolBackend for StoreTool {
    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        let outcome = match call.state.store.lock() {
            Ok(mut store) => self.run_on(&mut store, call.arguments.as_map()),
            Err(_) => Err(ToolFailure::runtime("the store is unavailable")),
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// The description, effect and parameters of a store tool.
pub(in crate::tool) fn definition(name: &str) -> Option<(&'static str, Effect, Value)> {
    let collection = json!({"type": "string", "description": "The collection's name"});
    let id = json!({"type": "string", "description": "The record's id"});
    let (description, effect, parameters) = match name {
        "store_get" => (
            "Read the record with this id from a collection of the store.",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"collection": collection, "id": id},
                "required": ["collection", "id"],
                "additionalProperties": false
            }),
        ),
        "store_find" => (
            "List the records of a collection whose fields equal every field of `where` (all records without it).",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"collection": collection, "where": {"type": "object"}},
                "required": ["collection"],
                "additionalProperties": false
            }),
        ),
        "store_put" => (
            "Insert a record into a collection of the store, or replace the record with its id.",
            Effect::Write,
            json!({
                "type": "object",
                "properties": {
                    "collection": collection,
                    "record": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}},
                        "required": ["id"]
                    }
                },
                "required": ["collection", "record"],
                "additionalProperties": false
            }),
        ),
        "store_delete" => (
            "Delete the record with this id from a collection of the store.",
            Effect::Write,
            json!({
                "type": "object",
                "properties": {"collection": collection, "id": id},
                "required": ["collection", "id"],
                "additionalProperties": false
            }),
        ),
        _ => return None,
    };
    Some((description, effect, parameters))
}
