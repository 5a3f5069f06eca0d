//! A run's budget (`--max-cost`, `--max-tokens`): what its models'
//! requests have spent, and whether the next one may go. A request is
//! sent only when one as large as the largest so far would still fit, so
//! the run stops before it passes the budget; the trials finished by then
//! are kept, and the stop is the budget's, never a model's.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::call::{Prices, Usage};

/// The limits a run was given (`--max-cost`, `--max-tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, clap::Args)]
pub struct BudgetLimits {
    /// Stop before a request would take the models' spending past USD
    /// dollars, at their prices (every live model needs api.prices):
    /// finished trials are kept, and `--resume` continues the run.
    #[arg(long, value_name = "USD", value_parser = super::flag_values::parse_dollars, allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Stop before a request would take the models' input and output
    /// tokens past N; finished trials are kept, and `--resume` continues.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
}

impl BudgetLimits {
    pub fn is_set(&self) -> bool {
        self.max_cost.is_some() || self.max_tokens.is_some()
    }
}

/// What the run's requests have spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub cost: f64,
    pub tokens: u64,
    pub requests: u64,
    /// The largest single request, the estimate of each one to come.
    largest_cost: f64,
    largest_tokens: u64,
}

#[derive(Debug, Default)]
struct State {
    spent: Spent,
    /// Requests sent and not yet answered, each reserved at the estimate.
    in_flight: u64,
    /// Requests answered or failed: until one has, nothing is known of a
    /// request's size, and no second one goes.
    settled: u64,
    ended: bool,
    /// What each trial not yet kept has spent: what is left when the
    /// budget ends the run was paid for trials it cut.
    unkept: HashMap<TrialKey, Spent>,
}

/// A trial as the budget knows it: (model, scenario, trial).
pub type TrialKey = (usize, usize, u32);

/// A budget shared by a run's trials.
#[derive(Debug)]
pub struct Budget {
    limits: BudgetLimits,
    state: Mutex<State>,
    /// Bumped whenever a request settles or the budget ends.
    changed: tokio::sync::watch::Sender<u64>,
    /// One admission decided at a time, in the order trials asked
    /// (tokio's mutex is fair): the trials let go are the first in job
    /// order, which the reports can keep.
    turn: tokio::sync::Mutex<()>,
}

/// A request the budget let go, held while its turn runs:
/// [`Admission::spend`] counts its reply, and dropped (the turn done, the
/// request failed, or its trial dropped) it frees its place.
#[derive(Debug)]
pub struct Admission<'b> {
    budget: &'b Budget,
    trial: TrialKey,
}

impl Budget {
    pub fn new(limits: BudgetLimits) -> Budget {
        Budget {
            limits,
            state: Mutex::new(State::default()),
            changed: tokio::sync::watch::Sender::new(0),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }

    pub fn spent(&self) -> Spent {
        self.lock().spent
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("never poisoned")
    }

    /// Let a request go when it fits: what was spent, plus each request in
    /// flight and this one at the largest so far, within every limit. The
    /// run's first request goes alone, its size unknown. `None`: the
    /// budget has ended the run, and every later ask is refused too.
    pub async fn admit(&self, trial: TrialKey) -> Option<Admission<'_>> {
        let _turn = self.turn.lock().await;
        let mut changed = self.changed.subscribe();
        loop {
            {
                let mut state = self.lock();
                if state.ended {
                    return None;
                }
                if state.settled > 0 || state.in_flight == 0 {
                    let spent = state.spent;
                    let requests = (state.in_flight + 1) as f64;
                    let fits = self
                        .limits
                        .max_cost
                        .is_none_or(|max| spent.cost + requests * spent.largest_cost <= max)
                        && self.limits.max_tokens.is_none_or(|max| {
                            spent.tokens + (state.in_flight + 1) * spent.largest_tokens <= max
                        });
                    if !fits {
                        state.ended = true;
                        drop(state);
                        self.changed.send_modify(|n| *n += 1);
                        return None;
                    }
                    state.in_flight += 1;
                    return Some(Admission {
                        budget: self,
                        trial,
                    });
                }
            }
            // The first request is out: wait for it to settle.
            if changed.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Completes once the budget has ended the run and every turn it let
    /// go has run, so that what they paid for is kept.
    pub async fn ended(&self) {
        let mut changed = self.changed.subscribe();
        let over = || {
            let state = self.lock();
            state.ended && state.in_flight == 0
        };
        // The sender lives as long as `self`: the wait cannot fail.
        let _ = changed.wait_for(|_| over()).await;
    }

    pub fn has_ended(&self) -> bool {
        self.lock().ended
    }

    fn spend(&self, trial: TrialKey, usage: Usage, prices: Option<Prices>) {
        let cost = prices.map_or(0.0, |p| p.cost(usage));
        let tokens = usage.input_tokens + usage.output_tokens;
        let mut state = self.lock();
        let spent = &mut state.spent;
        spent.cost += cost;
        spent.tokens += tokens;
        spent.requests += 1;
        spent.largest_cost = spent.largest_cost.max(cost);
        spent.largest_tokens = spent.largest_tokens.max(tokens);
        let by_trial = state.unkept.entry(trial).or_default();
        by_trial.cost += cost;
        by_trial.tokens += tokens;
        by_trial.requests += 1;
    }

    /// `trial` is kept (in trials.csv): what it spent is reported there.
    pub fn kept(&self, trial: TrialKey) {
        self.lock().unkept.remove(&trial);
    }

    /// What was spent on trials not kept, and how many they are: once the
    /// budget has ended the run, the trials it cut (paid for, in no
    /// trials.csv row until `--resume` runs them again).
    pub fn cut(&self) -> (Spent, usize) {
        let state = self.lock();
        let mut cut = Spent::default();
        for spent in state.unkept.values() {
            cut.cost += spent.cost;
            cut.tokens += spent.tokens;
            cut.requests += spent.requests;
        }
        (cut, state.unkept.len())
    }

    fn settle(&self) {
        let mut state = self.lock();
        state.in_flight -= 1;
        state.settled += 1;
        drop(state);
        self.changed.send_modify(|n| *n += 1);
    }
}

impl Admission<'_> {
    /// Count the reply's tokens, at `prices` (a model without prices costs
    /// nothing in dollars).
    pub fn spend(&self, usage: Usage, prices: Option<Prices>) {
        self.budget.spend(self.trial, usage, prices);
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.budget.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TrialKey = (0, 0, 0);

    fn usage(tokens: u64) -> Usage {
        Usage {
            input_tokens: tokens,
            ..Usage::default()
        }
    }

    fn now<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn the_next_request_goes_only_if_one_as_large_as_the_largest_still_fits() {
        let budget = Budget::new(BudgetLimits {
            max_tokens: Some(3_500),
            ..BudgetLimits::default()
        });
        let mut sent = 0;
        while let Some(admission) = now(budget.admit(T)) {
            admission.spend(usage(1_000), None);
            drop(admission);
            sent += 1;
        }
        // 3 x 1,000 spent; a fourth would reach 4,000.
        assert_eq!(sent, 3);
        assert_eq!(budget.spent().tokens, 3_000);
        assert!(budget.has_ended() && now(budget.admit(T)).is_none());
    }

    #[test]
    fn requests_in_flight_count_at_the_largest_so_far() {
        let budget = Budget::new(BudgetLimits {
            max_tokens: Some(3_500),
            ..BudgetLimits::default()
        });
        now(budget.admit(T)).unwrap().spend(usage(1_000), None);
        // 1,000 spent, 1,000 and 1,000 in flight: a third would reach 4,000.
        let second = now(budget.admit(T)).unwrap();
        let third = now(budget.admit(T)).unwrap();
        assert!(now(budget.admit(T)).is_none());
        second.spend(usage(1_000), None);
        drop((second, third));
        assert_eq!(budget.spent().requests, 2);
    }

    #[test]
    fn the_first_request_goes_alone_its_size_unknown() {
        let budget = std::sync::Arc::new(Budget::new(BudgetLimits {
            max_tokens: Some(1_500),
            ..BudgetLimits::default()
        }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let first = budget.admit(T).await.unwrap();
            let waiting = budget.admit(T);
            tokio::pin!(waiting);
            // Not admitted while the first is out.
            assert!(futures_util::poll!(waiting.as_mut()).is_pending());
            first.spend(usage(1_000), None);
            drop(first);
            // 1,000 spent and another 1,000 would pass 1,500.
            assert!(waiting.await.is_none());
        });
    }

    #[test]
    fn what_cut_trials_spent_is_what_trials_not_kept_spent() {
        let budget = Budget::new(BudgetLimits {
            max_tokens: Some(10_000),
            ..BudgetLimits::default()
        });
        for (trial, tokens) in [((0, 0, 0), 1_000), ((0, 0, 1), 700), ((1, 0, 0), 300)] {
            now(budget.admit(trial)).unwrap().spend(usage(tokens), None);
        }
        now(budget.admit((0, 0, 1)))
            .unwrap()
            .spend(usage(200), None);
        budget.kept((0, 0, 0));
        let (cut, trials) = budget.cut();
        assert_eq!((cut.tokens, cut.requests, trials), (1_200, 3, 2));
        assert_eq!(budget.spent().tokens, 2_200);
    }

    #[test]
    fn a_dollar_budget_counts_at_the_models_prices() {
        let budget = Budget::new(BudgetLimits {
            max_cost: Some(0.01),
            ..BudgetLimits::default()
        });
        let prices = Prices {
            input_per_mtok: 1_000.0,
            output_per_mtok: 0.0,
            cached_input_per_mtok: None,
            cache_write_per_mtok: None,
        };
        // 4 tokens at $1,000 per million: $0.004 a request.
        now(budget.admit(T)).unwrap().spend(usage(4), Some(prices));
        now(budget.admit(T)).unwrap().spend(usage(4), Some(prices));
        assert!(now(budget.admit(T)).is_none(), "{:?}", budget.spent());
        // A model without prices costs no dollars.
        let free = Budget::new(budget.limits());
        now(free.admit(T)).unwrap().spend(usage(1_000_000), None);
        assert!(now(free.admit(T)).is_some());
    }
}
