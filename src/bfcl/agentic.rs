//! BFCL's agentic categories, web search and memory, told apart from the
//! others by their ids: their texts are steps of their own, the last one
//! the answer BFCL's agentic checker reads.

/// Whether an entry id is of an agentic category (web search, memory, a
/// memory prerequisite).
pub fn is_agentic(id: &str) -> bool {
    super::web_search::category_of(id).is_some() || super::memory::category_of(id).is_some()
}

/// What an agentic question's task holds to judge it, as JSON: what mock
/// models answer (the first possible answer in BFCL's format; nothing
/// judges it) and the final state, BFCL's agentic checker on the
/// conversation through the bridge's probe.
pub fn answer_checks(first: &str) -> (String, serde_json::Value) {
    let reference = format!("{{'answer': '{first}', 'context': 'the possible answer'}}");
    let probe = serde_json::json!({"probe": {
        "tool": super::web_search::CHECK_ANSWER,
        "transcript": "transcript",
        "result": {"valid": true},
    }});
    (reference, probe)
}
