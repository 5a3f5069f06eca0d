//! How BFCL's agentic categories, web search and memory, are judged: on
//! the conversation's last text, by BFCL's agentic checker through the
//! bridge's probe.

/// The bridge's probe: BFCL's agentic checker on the final answer.
pub const CHECK_ANSWER: &str = "bfcl_check_answer";

/// What an agentic question's task holds to judge it, as JSON: what mock
/// models answer (the first possible answer in BFCL's format; nothing
/// judges it) and the final state, BFCL's agentic checker on the
/// conversation through the bridge's probe.
pub fn answer_checks(first: &str) -> (String, serde_json::Value) {
    let reference = format!("{{'answer': '{first}', 'context': 'the possible answer'}}");
    let probe = serde_json::json!({"probe": {
        "tool": CHECK_ANSWER,
        "transcript": "transcript",
        "result": {"valid": true},
    }});
    (reference, probe)
}
