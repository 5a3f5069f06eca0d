//! Execute before the reply ends (`execute_early`): a streamed reply's
//! calls run as each is complete, while the rest of the stream is still
//! coming, under the scheduler's rules: reads run together (up to the
//! concurrency limit), a write waits for everything before it and runs
//! alone, serial mode runs one at a time. When the reply ends, its calls
//! are checked against those run early; from the first that differs
//! (a stream that changed a call after it looked complete), the reply's
//! own calls are run. Also the ideal of it, for any streamed turn: each
//! call started the moment it was complete.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::validate::{Approved, validate, validate_among};
use super::{Batch, ExecMode, Pipeline};
use crate::call::{EarlyCall, ParsedCall, ToolResult};
use crate::tool::{Effect, ToolId, ToolState};

type Running<'p> = Pin<Box<dyn Future<Output = (usize, ToolResult)> + Send + 'p>>;

/// Calls run while their reply is still streaming.
pub struct EarlyRun<'p> {
    pipeline: &'p Pipeline,
    state: &'p ToolState,
    start: Instant,
    started_at: SystemTime,
    calls: Vec<ParsedCall>,
    results: Vec<Option<ToolResult>>,
    running: FuturesUnordered<Running<'p>>,
}

impl Pipeline {
    /// Calls to run as they come, against `state`; times count from now.
    pub fn early<'p>(&'p self, state: &'p ToolState) -> EarlyRun<'p> {
        EarlyRun {
            pipeline: self,
            state,
            start: Instant::now(),
            started_at: SystemTime::now(),
            calls: Vec::new(),
            results: Vec::new(),
            running: FuturesUnordered::new(),
        }
    }
}

impl<'p> EarlyRun<'p> {
    /// Run the calls `arriving` hands over as they come, until it closes
    /// (the reply ended); those still running go on.
    pub async fn take(&mut self, mut arriving: mpsc::UnboundedReceiver<EarlyCall>) {
        loop {
            tokio::select! {
                call = arriving.recv() => match call {
                    // Calls come in order; one out of order ends early running.
                    Some((index, call)) if index == self.calls.len() => self.push(call).await,
                    Some(_) => {}
                    None => return,
                },
                Some((index, result)) = self.running.next(), if !self.running.is_empty() => {
                    self.results[index] = Some(result);
                }
            }
        }
    }

    /// How many calls ran before the reply ended.
    pub fn ran(&self) -> usize {
        self.calls.len()
    }

    /// Start one call, after what it must wait for.
    async fn push(&mut self, call: ParsedCall) {
        let index = self.calls.len();
        self.calls.push(call);
        self.results.push(None);
        let pipeline = self.pipeline;
        let call = &self.calls[index];
        let tool = match validate_among(&pipeline.registry, self.state.hidden(), call) {
            Err(rejection) => {
                self.results[index] = Some(pipeline.rejected(call, &rejection, self.start));
                return;
            }
            Ok(approved) => approved.tool,
        };
        let effect = pipeline.registry.definition(tool).effect;
        let alone = pipeline.options.mode == ExecMode::Serial || effect == Effect::Write;
        if alone {
            self.drain().await;
        }
        while self.running.len() >= pipeline.options.max_concurrency.max(1) {
            self.settle_one().await;
        }
        let (state, start) = (self.state, self.start);
        let call = &self.calls[index];
        if let Some((result, _)) =
            pipeline.try_instant(call, start, approved(call, tool), Instant::now())
        {
            self.results[index] = Some(result);
            return;
        }
        let call = call.clone();
        self.running.push(Box::pin(async move {
            let result = pipeline
                .execute_one(&call, state, start, approved(&call, tool))
                .await;
            (index, result)
        }));
        if alone {
            self.drain().await;
        }
    }

    async fn settle_one(&mut self) {
        if let Some((index, result)) = self.running.next().await {
            self.results[index] = Some(result);
        }
    }

    async fn drain(&mut self) {
        while !self.running.is_empty() {
            self.settle_one().await;
        }
    }

    /// The reply ended with `calls`: those that ran early keep their
    /// results while they are the reply's own; the rest run now.
    pub async fn finish(mut self, calls: &[ParsedCall]) -> Batch {
        self.drain().await;
        let same = self
            .calls
            .iter()
            .zip(calls)
            .take_while(|(early, own)| early == own)
            .count();
        self.calls.truncate(same);
        self.results.truncate(same);
        for call in &calls[same..] {
            self.push(call.clone()).await;
        }
        self.drain().await;
        let results: Vec<ToolResult> = self
            .results
            .into_iter()
            .map(|r| r.expect("every call gets a result"))
            .collect();
        let first = results.iter().map(|r| r.started).min().unwrap_or_default();
        let last = results
            .iter()
            .map(|r| r.started + r.elapsed)
            .max()
            .unwrap_or_default();
        let ideal_makespan = self.pipeline.ideal_early(calls, &results, &[]);
        Batch {
            results,
            makespan: last - first,
            ideal_makespan,
            started_at: self.started_at,
        }
    }
}

/// A call validation approved, approved again after a wait.
fn approved(call: &ParsedCall, tool: ToolId) -> Approved<'_> {
    let ParsedCall::Ok(ok) = call else {
        unreachable!("only a readable call is approved")
    };
    Approved {
        tool,
        arguments: &ok.arguments,
    }
}

impl EarlyRun<'_> {
    /// The reply was cut (or could not be read) and its calls are not to
    /// run: those that ran early, and are the reply's own, say what they
    /// did; the rest are `not_run`.
    pub async fn finish_cut(mut self, calls: &[ParsedCall], mut not_run: Batch) -> Batch {
        self.drain().await;
        for (i, (early, own)) in self.calls.iter().zip(calls).enumerate() {
            match self.results[i].take() {
                Some(result) if early == own => not_run.results[i] = result,
                _ => break,
            }
        }
        not_run
    }
}

impl Pipeline {
    /// The time to the last result had each call started the moment it
    /// was complete (`complete[i]`, counted like the results' `started`;
    /// all at zero: the ideal makespan), reads together, a write after
    /// everything before it, each taking as long as it took.
    pub fn ideal_early(
        &self,
        calls: &[ParsedCall],
        results: &[ToolResult],
        complete: &[Duration],
    ) -> Duration {
        let (mut all_done, mut writes_done) = (Duration::ZERO, Duration::ZERO);
        for (i, (call, result)) in calls.iter().zip(results).enumerate() {
            let ready = complete.get(i).copied().unwrap_or_default();
            let write = validate(&self.registry, call)
                .is_ok_and(|a| self.registry.definition(a.tool).effect == Effect::Write);
            let end = if write {
                let end = ready.max(all_done) + result.elapsed;
                writes_done = end;
                end
            } else {
                ready.max(writes_done) + result.elapsed
            };
            all_done = all_done.max(end);
        }
        all_done
    }
}
