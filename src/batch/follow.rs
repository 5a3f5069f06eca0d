//! A batch submitted and followed to its end, through the provider's own
//! batch API: each provider's file says how, this one which.

use super::{
    BatchClient, BatchItem, Ended, FollowError, MAX_POLL_INTERVAL, Polled, SubmitError, Unfinished,
    anthropic, gemini, openai,
};
use crate::provider::Provider;
use crate::transport::ApiRequest;

impl BatchClient {
    /// Submit `items` (requests to one endpoint, with one key) as one
    /// batch; its id.
    pub async fn submit(&self, items: &[&BatchItem]) -> Result<String, SubmitError> {
        match self.provider {
            Provider::OpenAi | Provider::OpenAiResponses => openai::submit(self, items).await,
            Provider::Anthropic => anthropic::submit(self, items).await,
            Provider::Gemini => gemini::submit(self, items).await,
        }
    }

    /// Poll batch `id` until it ends, then read its answers. `like` is a
    /// request of the round (its endpoint and key); `order` the batch's
    /// custom ids as submitted (Gemini answers by place); `running` hears
    /// the provider's word for where the batch is, after each poll.
    pub async fn wait(
        &self,
        id: &str,
        like: &ApiRequest,
        order: &[String],
        running: &(dyn Fn(&str) + Sync),
    ) -> Result<Ended, Unfinished> {
        let unfinished = |problem: FollowError| Unfinished {
            id: id.to_owned(),
            problem,
        };
        let mut wait = self.first_poll;
        loop {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_POLL_INTERVAL.max(self.first_poll));
            let polled = match self.provider {
                Provider::OpenAi | Provider::OpenAiResponses => openai::poll(self, id, like).await,
                Provider::Anthropic => anthropic::poll(self, id, like).await,
                Provider::Gemini => gemini::poll(self, id, like, order).await,
            };
            match polled {
                Ok(Polled::Ended(ended)) => return Ok(ended),
                Ok(Polled::Running(state)) => running(&state),
                Err(problem) => return Err(unfinished(problem)),
            }
        }
    }
}
