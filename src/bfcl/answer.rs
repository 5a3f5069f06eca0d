//! BFCL's possible answers: each ground-truth call is a one-key object
//! `{function_name: {param: [acceptable values]}}`.

use serde_json::{Map, Value};

use super::dialect::tool_name;
use crate::pointer::{Located, Pointer};

/// One expected call of a possible answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruthCall {
    /// The name as BFCL writes it (`math.factorial`).
    pub bfcl_name: String,
    /// Parameter -> acceptable values.
    pub params: Map<String, Value>,
}

impl GroundTruthCall {
    /// The name a function-calling model uses (`math_factorial`).
    pub fn tool_name(&self) -> String {
        tool_name(&self.bfcl_name)
    }
}

/// The calls of one answer; `Err` says which call is not in BFCL's shape.
pub fn ground_truth_calls(ground_truth: &[Value]) -> Result<Vec<GroundTruthCall>, Located> {
    ground_truth
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let at = Pointer::root().key("ground_truth").index(i);
            let one = call
                .as_object()
                .filter(|o| o.len() == 1)
                .ok_or_else(|| Located::new(at.clone(), "expected {name: {param: [values]}}"))?;
            let (name, params) = one.iter().next().expect("one key");
            let params = params.as_object().ok_or_else(|| {
                Located::new(at.clone().key(name), "parameters are not an object")
            })?;
            Ok(GroundTruthCall {
                bfcl_name: name.clone(),
                params: params.clone(),
            })
        })
        .collect()
}
