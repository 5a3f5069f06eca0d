//! The `tau2-results` model: replays the conversations a tau2 Results JSON
//! recorded (`tau2::results`), each task's trial k its k-th simulation:
//! the recorded agent messages as its replies, the recorded user's words
//! as the user's, every call run again through the scenario's tools (tau2's
//! environment, behind the bridge), so that toolgauge's verdict on the run
//! can be set beside the reward tau2 recorded.

use super::{Model, ModelTrial, Reply, ReplyFuture, TrialStart};
use crate::call::{Arguments, ParsedCall, ToolCall, Usage};
use crate::provider::Provider;
use crate::scenario::Scenario;
use crate::scenario::user::ScriptLine;
use crate::tau2::results::{RecordedMessage, Tau2Results};

/// A model that answers each tau2 task as a recorded conversation did.
#[derive(Debug)]
pub struct Tau2Replay {
    name: String,
    provider: Provider,
    results: Tau2Results,
}

impl Tau2Replay {
    pub fn new(name: &str, provider: Provider, results: Tau2Results) -> Tau2Replay {
        Tau2Replay {
            name: name.to_owned(),
            provider,
            results,
        }
    }
}

impl Model for Tau2Replay {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    fn unanswerable<'s>(&self, scenarios: &'s [Scenario]) -> Vec<&'s str> {
        scenarios
            .iter()
            .map(|s| s.name.as_str())
            .filter(|name| !self.results.contains(name))
            .collect()
    }

    fn recorded_user(&self, scenario: &str, trial: u32) -> Option<Vec<ScriptLine>> {
        self.results
            .simulation(scenario, trial)
            .map(|simulation| simulation.user_lines())
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        let replies = self
            .results
            .simulation(&start.scenario.name, start.trial)
            .map(|simulation| simulation.agent_replies())
            .unwrap_or_default();
        Box::new(ReplayTrial {
            provider: self.provider,
            replies,
            next: 0,
        })
    }
}

struct ReplayTrial<'a> {
    provider: Provider,
    replies: Vec<&'a RecordedMessage>,
    next: usize,
}

impl ModelTrial for ReplayTrial<'_> {
    fn reply<'s>(&'s mut self, _attempt: u32, _returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        // Past the recording: an empty answer (the user's script is over too).
        let message = self.replies.get(self.next);
        self.next += 1;
        let text = message.and_then(|m| m.content.clone()).unwrap_or_default();
        let calls: Vec<ParsedCall> = message
            .and_then(|m| m.tool_calls.as_ref())
            .into_iter()
            .flatten()
            .map(|call| {
                ParsedCall::Ok(ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: Arguments::from_map(call.arguments.clone()),
                })
            })
            .collect();
        let mut body = Vec::with_capacity(256);
        self.provider
            .write_response_with(&text, &calls, Usage::default(), &mut body);
        Box::pin(async move {
            Ok(Reply {
                body,
                usage: Usage::default(),
                timing: None,
                stream: None,
                parsed: None,
                unrecorded: None,
            })
        })
    }
}
