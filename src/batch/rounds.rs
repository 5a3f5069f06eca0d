//! A model's trials gathered into rounds: each trial the run takes into
//! its window holds an [`OpenTrial`] (taken before any trial of the
//! window asks, so a round never goes with a part of them); a request
//! waits until every open trial has asked (or ended), and the round goes as one batch (split where the
//! provider's limits say). A single-turn suite is one round per window
//! of trials; a multi-turn trial asks once per round. A request an
//! earlier run of the folder submitted, unchanged, is not sent again: its
//! batch is followed.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::{
    BatchClient, BatchItem, FollowError, ItemAnswer, Ledger, SubmitError, Unfinished, ledger,
};
use crate::provider::Provider;
use crate::transport::TransportError;

/// Why a request of a round has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RoundError {
    /// The provider refused the batch: nothing of it runs.
    #[error(transparent)]
    Refused(TransportError),
    /// The batch runs on at the provider, unfollowed: the run stops, and
    /// `--resume` follows it.
    #[error(transparent)]
    Unfinished(Unfinished),
}

/// One model's rounds.
pub struct Rounds {
    model: String,
    provider: Provider,
    client: BatchClient,
    ledger: Arc<Ledger>,
    gathering: Mutex<Gathering>,
}

#[derive(Default)]
struct Gathering {
    open: usize,
    waiting: Vec<Waiting>,
}

struct Waiting {
    item: BatchItem,
    digest: String,
    /// Its body's size as JSON text: what it adds to a batch.
    bytes: usize,
    answer: oneshot::Sender<Result<ItemAnswer, RoundError>>,
}

/// A trial under way: while it is held, a round waits for its request.
pub struct OpenTrial(Arc<Rounds>);

impl Drop for OpenTrial {
    fn drop(&mut self) {
        let mut gathering = self.0.lock();
        gathering.open -= 1;
        self.0.go_if_all_asked(&mut gathering);
    }
}

impl Rounds {
    pub fn new(
        model: &str,
        provider: Provider,
        client: BatchClient,
        ledger: Arc<Ledger>,
    ) -> Rounds {
        Rounds {
            model: model.to_owned(),
            provider,
            client,
            ledger,
            gathering: Mutex::new(Gathering::default()),
        }
    }

    /// A trial is coming: rounds wait for it until this is dropped.
    pub fn open_trial(self: &Arc<Self>) -> OpenTrial {
        self.lock().open += 1;
        OpenTrial(Arc::clone(self))
    }

    /// `item`'s answer, once its round has gone and its batch ended.
    pub async fn ask(self: &Arc<Self>, item: BatchItem) -> Result<ItemAnswer, RoundError> {
        let (answer, answered) = oneshot::channel();
        // Written once: for its digest and its size.
        let body = serde_json::to_vec(&item.request.body).expect("a request body serializes");
        {
            let mut gathering = self.lock();
            gathering.waiting.push(Waiting {
                digest: ledger::digest(&body),
                bytes: body.len(),
                item,
                answer,
            });
            self.go_if_all_asked(&mut gathering);
        }
        answered.await.unwrap_or_else(|_| {
            Err(RoundError::Unfinished(Unfinished {
                id: String::new(),
                problem: FollowError::RunEnded,
            }))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Gathering> {
        self.gathering.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send the round when every open trial waits on it.
    fn go_if_all_asked(self: &Arc<Self>, gathering: &mut Gathering) {
        if gathering.waiting.is_empty() || gathering.waiting.len() < gathering.open {
            return;
        }
        let round = std::mem::take(&mut gathering.waiting);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(Arc::clone(self).go(round));
        }
    }

    /// A round: requests an earlier run sent go to their batch, the rest
    /// in new batches within the provider's limits; all followed at once.
    async fn go(self: Arc<Self>, round: Vec<Waiting>) {
        let mut earlier: Vec<(String, Vec<Waiting>)> = Vec::new();
        let mut new = Vec::new();
        for waiting in round {
            let known = self
                .ledger
                .earlier(&self.model, &waiting.item.custom_id, &waiting.digest);
            match known {
                Some(id) => match earlier.iter_mut().find(|(known, _)| known == id) {
                    Some((_, group)) => group.push(waiting),
                    None => earlier.push((id.to_owned(), vec![waiting])),
                },
                None => new.push(waiting),
            }
        }
        let mut follows: Vec<_> = earlier
            .into_iter()
            .map(|(id, group)| self.follow(Some(id), group))
            .collect();
        follows.extend(
            chunks(new, super::limits(self.provider))
                .into_iter()
                .map(|group| self.follow(None, group)),
        );
        futures_util::future::join_all(follows).await;
    }

    /// Submit `group` (unless `earlier` names its batch), wait for its end
    /// and answer each request. An earlier batch the provider does not
    /// know (404) is marked dead in the ledger and its requests are sent
    /// again, once, in a new batch.
    async fn follow(&self, earlier: Option<String>, group: Vec<Waiting>) {
        let like = group[0].item.request.clone();
        if let Some(id) = earlier {
            let order = match self.ledger.order_of(&id) {
                Some(order) => order.to_vec(),
                None => custom_ids(&group),
            };
            let running = |state: &str| self.ledger.running(&self.model, &id, state);
            match self.client.wait(&id, &like, &order, &running).await {
                Ok(ended) => return self.answer(&id, ended, group),
                Err(unfinished) if unknown_to_provider(&unfinished) => {
                    let why = format!("the provider does not know it ({})", unfinished.problem);
                    if let Err(e) = self.ledger.dead(&self.model, &id, &why) {
                        let problem = self.ledger_problem(&e);
                        return answer_all(group, &Err(unfinished_as(&id, problem)));
                    }
                }
                Err(unfinished) => {
                    return answer_all(group, &Err(RoundError::Unfinished(unfinished)));
                }
            }
        }
        let id = match self.submit(&group).await {
            Ok(id) => id,
            Err(error) => return answer_all(group, &Err(error)),
        };
        let running = |state: &str| self.ledger.running(&self.model, &id, state);
        match self
            .client
            .wait(&id, &like, &custom_ids(&group), &running)
            .await
        {
            Ok(ended) => self.answer(&id, ended, group),
            Err(unfinished) => answer_all(group, &Err(RoundError::Unfinished(unfinished))),
        }
    }

    /// Each request of `group` answered from batch `id`'s end, matched
    /// strictly: an answer twice to one request, or to a request the
    /// batch was not sent, is the server's failure, named.
    fn answer(&self, id: &str, ended: super::Ended, group: Vec<Waiting>) {
        let sent: HashSet<&str> = group.iter().map(|w| w.item.custom_id.as_str()).collect();
        let mut answers: HashMap<String, ItemAnswer> = HashMap::new();
        let (mut twice, mut foreign) = (BTreeSet::new(), BTreeSet::new());
        for (custom_id, answer) in ended.answers {
            if !sent.contains(custom_id.as_str()) {
                foreign.insert(custom_id);
                continue;
            }
            match answers.entry(custom_id) {
                Entry::Occupied(first) => {
                    twice.insert(first.key().clone());
                }
                Entry::Vacant(place) => {
                    place.insert(answer);
                }
            }
        }
        let answered = answers
            .values()
            .filter(|a| matches!(a, ItemAnswer::Answered { .. }))
            .count();
        let failed = answers.len() - answered;
        let mut state = ended.state;
        if !foreign.is_empty() {
            state = format!(
                "{state}; answers to ids it was not sent: {}",
                listed(&foreign)
            );
        }
        // Lost, the line only makes a --resume follow the batch again.
        let _ = self
            .ledger
            .ended(&self.model, id, &state, (answered, failed));
        for waiting in group {
            let custom_id = &waiting.item.custom_id;
            let answer = if !foreign.is_empty() {
                ItemAnswer::Failed {
                    message: format!(
                        "batch {id} answered ids it was not sent ({}): none of its answers is taken",
                        listed(&foreign)
                    ),
                }
            } else if twice.contains(custom_id) {
                ItemAnswer::Failed {
                    message: format!("batch {id} answered {custom_id} more than once"),
                }
            } else {
                answers
                    .remove(custom_id)
                    .unwrap_or_else(|| ItemAnswer::Failed {
                        message: format!("batch {id} ended ({state}) with no answer to it"),
                    })
            };
            let _ = waiting.answer.send(Ok(answer));
        }
    }

    /// Record the batch in the ledger before its create is sent, and
    /// again once it has an id: a batch paid for is never unrecorded.
    async fn submit(&self, group: &[Waiting]) -> Result<String, RoundError> {
        let items: Vec<&BatchItem> = group.iter().map(|w| &w.item).collect();
        let sent: Vec<(String, String)> = group
            .iter()
            .map(|w| (w.item.custom_id.clone(), w.digest.clone()))
            .collect();
        // Unrecorded, a batch is not created at all.
        self.ledger
            .creating(&self.model, &sent)
            .map_err(|e| unfinished_as(NOT_CREATED, self.ledger_problem(&e)))?;
        let id = self.client.submit(&items).await.map_err(|e| match e {
            SubmitError::Refused(error) => RoundError::Refused(error),
            unanswered @ SubmitError::Unanswered(_) => {
                unfinished_as(NO_ID, FollowError::Unconfirmed(Box::new(unanswered)))
            }
        })?;
        self.ledger
            .submitted(&self.model, &id, &sent)
            .map_err(|e| unfinished_as(&id, self.ledger_problem(&e)))?;
        Ok(id)
    }

    fn ledger_problem(&self, error: &std::io::Error) -> FollowError {
        FollowError::Ledger {
            path: self.ledger.path().display().to_string(),
            message: error.to_string(),
        }
    }
}

/// What stands for a batch's id when it has none.
const NO_ID: &str = "(no id: its create got no answer)";
const NOT_CREATED: &str = "(not created)";

fn unfinished_as(id: &str, problem: FollowError) -> RoundError {
    RoundError::Unfinished(Unfinished {
        id: id.to_owned(),
        problem,
    })
}

/// The provider answered 404 for the batch: it does not know it.
fn unknown_to_provider(unfinished: &Unfinished) -> bool {
    matches!(&unfinished.problem, FollowError::Transport(e) if e.status() == Some(404))
}

/// The custom ids of `group`, in the order it was gathered.
fn custom_ids(group: &[Waiting]) -> Vec<String> {
    group.iter().map(|w| w.item.custom_id.clone()).collect()
}

fn listed(ids: &BTreeSet<String>) -> String {
    ids.iter().cloned().collect::<Vec<_>>().join(", ")
}

fn answer_all(group: Vec<Waiting>, answer: &Result<ItemAnswer, RoundError>) {
    for waiting in group {
        // The trial gone (the run stopped): no one to tell.
        let _ = waiting.answer.send(answer.clone());
    }
}

/// New requests split into batches the provider takes: at most its
/// count of requests and its bytes each.
fn chunks(waiting: Vec<Waiting>, (max_requests, max_bytes): (usize, usize)) -> Vec<Vec<Waiting>> {
    let mut chunks: Vec<Vec<Waiting>> = Vec::new();
    let mut bytes = 0;
    for w in waiting {
        let size = w.bytes + 256;
        let full = chunks
            .last()
            .is_none_or(|last| last.len() >= max_requests || bytes + size > max_bytes);
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        chunks.last_mut().expect("pushed").push(w);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(custom_id: &str, text: &str) -> Waiting {
        let (answer, _) = oneshot::channel();
        Waiting {
            item: BatchItem {
                custom_id: custom_id.to_owned(),
                request: crate::transport::ApiRequest {
                    url: String::new(),
                    headers: Vec::new(),
                    body: serde_json::json!({ "text": text }),
                },
            },
            digest: String::new(),
            bytes: serde_json::json!({ "text": text }).to_string().len(),
            answer,
        }
    }

    #[test]
    fn a_round_past_the_providers_limits_goes_as_several_batches_in_order() {
        let round: Vec<Waiting> = (0..5).map(|k| waiting(&format!("t{k}"), "x")).collect();
        let sizes = |chunks: Vec<Vec<Waiting>>| -> Vec<Vec<String>> {
            chunks
                .iter()
                .map(|c| c.iter().map(|w| w.item.custom_id.clone()).collect())
                .collect()
        };
        // At most two requests a batch.
        assert_eq!(
            sizes(chunks(round, (2, usize::MAX))),
            [vec!["t0", "t1"], vec!["t2", "t3"], vec!["t4"]]
        );
        // A byte limit that holds one request and a half.
        let round: Vec<Waiting> = (0..3).map(|k| waiting(&format!("t{k}"), "x")).collect();
        let one = serde_json::to_vec(&round[0].item.request.body)
            .unwrap()
            .len()
            + 256;
        assert_eq!(
            sizes(chunks(round, (100, one + one / 2))),
            [vec!["t0"], vec!["t1"], vec!["t2"]]
        );
    }
}
