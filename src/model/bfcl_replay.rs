//! The `bfcl-results` model: answers each BFCL entry with the output a
//! published BFCL run recorded for it (`bfcl::results`), so that run can be
//! scored again by toolgauge, its latency and tokens replayed with it.

use super::{Model, ModelKind, ModelTerms, ModelTrial, Reply, ReplyFuture, TrialStart};
use crate::bfcl::multi_turn;
use crate::bfcl::results::{BfclResults, RecordedStep};
use crate::provider::Provider;
use crate::scenario::Scenario;

/// A model that answers each entry with its recorded result, once.
#[derive(Debug)]
pub struct BfclReplay {
    name: String,
    provider: Provider,
    results: BfclResults,
}

impl BfclReplay {
    pub fn new(name: &str, provider: Provider, results: BfclResults) -> BfclReplay {
        BfclReplay {
            name: name.to_owned(),
            provider,
            results,
        }
    }
}

impl Model for BfclReplay {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> Provider {
        self.provider
    }

    fn terms(&self) -> ModelTerms {
        ModelTerms {
            max_attempts: ModelKind::BfclResults.max_attempts(),
            ..ModelTerms::default()
        }
    }

    fn unanswerable<'s>(&self, scenarios: &'s [Scenario]) -> Vec<&'s str> {
        scenarios
            .iter()
            .map(|s| s.name.as_str())
            .filter(|name| !self.results.contains(name))
            .collect()
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        Box::new(ReplayTrial {
            model: self,
            scenario: start.scenario,
            // Agentic entries replay step by step too (web search's one
            // turn, a memory conversation's several).
            multi_turn: multi_turn::category_of(&start.scenario.name).is_some()
                || crate::bfcl::results::is_agentic(&start.scenario.name),
            turn: 0,
            step: 0,
            last_text: None,
        })
    }
}

struct ReplayTrial<'a> {
    model: &'a BfclReplay,
    scenario: &'a Scenario,
    /// A multi-turn entry replays step by step, user turn by user turn.
    multi_turn: bool,
    turn: usize,
    step: usize,
    /// An agentic entry's last text read so far: its answer, if no later
    /// one comes.
    last_text: Option<String>,
}

impl ModelTrial for ReplayTrial<'_> {
    fn user_says(&mut self, _text: &str, _add_tools: &[String]) {
        self.turn += 1;
        self.step = 0;
    }

    fn reply<'s>(&'s mut self, _attempt: u32, _returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let (calls, latency, usage, text) = if self.multi_turn {
            // Steps BFCL's checker cannot decode are skipped, as it skips
            // them: none of their calls runs, and the next step is read.
            // The tokens come with the first step read (`step` gives them
            // with the entry's first only).
            let mut next = || {
                let read = self.model.results.step(
                    &self.scenario.name,
                    self.turn,
                    self.step,
                    &self.scenario.registry,
                );
                self.step += 1;
                read
            };
            let (mut step, usage) = next();
            // An agentic entry's answer is its last text: an earlier one
            // is read past, as BFCL's checker reads past it.
            let mut answer = self.last_text.take();
            let calls = loop {
                match step {
                    RecordedStep::Calls(calls) => break calls,
                    RecordedStep::Skipped => step = next().0,
                    RecordedStep::Text(text) => {
                        answer = Some(text);
                        step = next().0;
                    }
                    RecordedStep::End => break Vec::new(),
                }
            };
            let text = if calls.is_empty() {
                answer.unwrap_or_default()
            } else {
                self.last_text = answer;
                String::new()
            };
            (calls, std::time::Duration::ZERO, usage, text)
        } else {
            let (calls, latency, usage) = self
                .model
                .results
                .reply(&self.scenario.name, &self.scenario.registry);
            (calls, latency, usage, String::new())
        };
        let mut body = Vec::with_capacity(256);
        // The body says the recorded tokens, as the log shows them.
        self.model
            .provider
            .write_response_with(&text, &calls, usage, &mut body);
        // As a mock's latency: exact and instant on the virtual clock.
        Box::pin(async move {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            Ok(Reply {
                body,
                usage,
                timing: None,
                stream: None,
                parsed: None,
                unrecorded: None,
            })
        })
    }
}
