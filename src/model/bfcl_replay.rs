//! The `bfcl-results` model: answers each BFCL entry with the output a
//! published BFCL run recorded for it (`bfcl::results`), so that run can be
//! scored again by toolgauge, its latency and tokens replayed with it.

use super::{Model, ModelKind, ModelTrial, Reply, ReplyFuture, TrialStart};
use crate::bfcl::results::BfclResults;
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

    fn max_attempts(&self) -> Option<u32> {
        ModelKind::BfclResults.max_attempts()
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
        })
    }
}

struct ReplayTrial<'a> {
    model: &'a BfclReplay,
    scenario: &'a Scenario,
}

impl ModelTrial for ReplayTrial<'_> {
    fn reply<'s>(&'s mut self, _attempt: u32, _returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let (calls, latency, usage) = self
            .model
            .results
            .reply(&self.scenario.name, &self.scenario.registry);
        let mut body = Vec::with_capacity(256);
        // The body says the recorded tokens, as the log shows them.
        self.model
            .provider
            .write_response_with("", &calls, usage, &mut body);
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
            })
        })
    }
}
