//! toolgauge as an MCP client: what it says of itself at `initialize`
//! (its name and version, the protocol revision it offers, the requests
//! it answers), which revisions it accepts back, and how it answers a
//! server's own requests (`elicitation/create`, `sampling/createMessage`)
//! with the answers a scenario scripted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
    SamplingCapability,
};
// Sampling is in every revision toolgauge speaks (to 2025-11-25); rmcp
// deprecates it for the 2026 one, which drops it.
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage};
use rmcp::service::{RequestContext, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The revision offered at `initialize`: the newest that still has the
/// handshake. A server that speaks an older one answers with it, and that
/// is what the session speaks.
pub const OFFERED: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

/// Whether a server's answer to `initialize` names a revision toolgauge
/// speaks: a known one with the handshake, not newer than offered.
pub(super) fn speaks(answered: &ProtocolVersion) -> bool {
    ProtocolVersion::KNOWN_VERSIONS.contains(answered)
        && answered.has_initialize()
        && answered.as_str() <= OFFERED.as_str()
}

/// The revisions toolgauge speaks, for messages: `2024-11-05 to 2025-11-25`.
pub(super) fn spoken() -> String {
    let known: Vec<&str> = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .filter(|v| speaks(v))
        .map(ProtocolVersion::as_str)
        .collect();
    format!(
        "{} to {}",
        known.first().unwrap_or(&""),
        known.last().unwrap_or(&"")
    )
}

/// What the scenario answers when its server asks: the n-th request of a
/// kind on a connection gets the n-th answer, the last one again once
/// they run out. (A server shared by trials that run at once is asked in
/// no fixed order: a sequence is for `per_trial` servers.) With none
/// scripted, toolgauge does not offer to answer: an elicitation is
/// declined, a sampling refused, if a server asks anyway.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elicitation: Vec<ElicitationAnswer>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sampling: Vec<SamplingAnswer>,
}

impl Answers {
    pub fn is_empty(&self) -> bool {
        self.elicitation.is_empty() && self.sampling.is_empty()
    }
}

/// An answer to `elicitation/create`, as a user would give it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElicitationAnswer {
    pub action: Action,
    /// With `accept`: the fields given. Fields left out take the default
    /// the request's schema gives them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub content: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

/// An answer to `sampling/createMessage`: the assistant's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingAnswer {
    pub text: String,
    /// The model the answer says it came from [default: "scripted"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// How often a server asked, by kind.
#[derive(Debug, Default)]
pub(super) struct Asked {
    pub(super) elicitations: AtomicU64,
    pub(super) samplings: AtomicU64,
}

/// The client side of one connection.
#[derive(Debug, Clone)]
pub(super) struct Client {
    answers: Answers,
    /// Requests on this connection: which answer is next.
    here: Arc<Asked>,
    /// Requests on every connection to the server: its measures.
    total: Arc<Asked>,
}

impl Client {
    pub(super) fn new(answers: Answers, total: Arc<Asked>) -> Client {
        Client {
            answers,
            here: Arc::default(),
            total,
        }
    }

    /// Count an elicitation (`sampling`: a sampling): its number on this
    /// connection, from 0.
    fn count(&self, sampling: bool) -> u64 {
        let of = |asked: &Asked| {
            if sampling {
                asked.samplings.fetch_add(1, Ordering::SeqCst)
            } else {
                asked.elicitations.fetch_add(1, Ordering::SeqCst)
            }
        };
        of(&self.total);
        of(&self.here)
    }
}

/// The n-th of `answers`, the last once they run out.
fn nth<T>(answers: &[T], n: u64) -> Option<&T> {
    let at = usize::try_from(n).unwrap_or(usize::MAX);
    answers.get(at).or(answers.last())
}

/// `given` over the defaults `requested` (a JSON Schema object) names:
/// what a form filled in with its defaults and then the user's fields
/// sends back.
fn with_defaults(requested: &Value, given: &Map<String, Value>) -> Map<String, Value> {
    let mut content: Map<String, Value> = requested
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    content.extend(given.clone());
    content
}

impl rmcp::ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.answers.elicitation.is_empty() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if !self.answers.sampling.is_empty() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("toolgauge", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(OFFERED)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let n = self.count(false);
        let Some(answer) = nth(&self.answers.elicitation, n) else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        Ok(match answer.action {
            Action::Decline => ElicitResult::new(ElicitationAction::Decline),
            Action::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Action::Accept => {
                let requested = match &request {
                    ElicitRequestParams::FormElicitationParams {
                        requested_schema, ..
                    } => serde_json::to_value(requested_schema).unwrap_or_default(),
                    _ => Value::Null,
                };
                ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(with_defaults(&requested, &answer.content)))
            }
        })
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let n = self.count(true);
        let Some(answer) = nth(&self.answers.sampling, n) else {
            return Err(ErrorData::invalid_request(
                "toolgauge answers no sampling request: the scenario scripts none (\"answers\": {\"sampling\": [...]})",
                None,
            ));
        };
        let model = answer
            .model
            .clone()
            .unwrap_or_else(|| "scripted".to_owned());
        Ok(
            CreateMessageResult::new(SamplingMessage::assistant_text(answer.text.clone()), model)
                .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_elicitation_sends_the_schemas_defaults_under_the_scripted_fields() {
        let requested = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        let given = json!({"name": "Ada"}).as_object().cloned().unwrap();
        assert_eq!(
            Value::Object(with_defaults(&requested, &given)),
            json!({"name": "Ada", "age": 30})
        );
    }

    #[test]
    fn the_last_scripted_answer_answers_every_later_request() {
        let answers = ["first", "last"];
        assert_eq!(nth(&answers, 0), Some(&"first"));
        assert_eq!(nth(&answers, 1), Some(&"last"));
        assert_eq!(nth(&answers, 7), Some(&"last"));
        assert_eq!(nth::<&str>(&[], 0), None);
    }

    #[test]
    fn toolgauge_speaks_the_handshake_revisions_up_to_what_it_offers() {
        assert!(speaks(&ProtocolVersion::V_2024_11_05));
        assert!(speaks(&OFFERED));
        assert!(!speaks(&ProtocolVersion::V_2026_07_28));
        assert_eq!(spoken(), "2024-11-05 to 2025-11-25");
    }
}
