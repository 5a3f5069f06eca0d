//! A call as a scenario file writes it: a tool's name and what its
//! arguments must match (an expected call, a forbidden one).

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCallFile {
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
}
