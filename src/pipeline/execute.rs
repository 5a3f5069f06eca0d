//! Execute: the scheduler. Consecutive `read` calls run concurrently (up to
//! a limit); a `write` waits for everything before it and runs alone.
//! Results come back in call order, whatever order the calls finish in.

use std::ops::Range;
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use super::feedback::{PythonFacts, Told, word_error};
use super::validate::{Approved, Rejection, validate_among};
use super::{Batch, ExecMode, Pipeline};
use crate::call::{ErrorKind, ParsedCall, ToolResult};
use crate::provider::EMPTY_RESULT_PLACEHOLDER;
use crate::tool::{Effect, ToolFailure, ToolFailureKind, ToolOutput, ToolState};

/// One batch under way: results so far, and the reads waiting to run together.
struct InProgress<'c> {
    calls: &'c [ParsedCall],
    state: &'c ToolState,
    start: Instant,
    results: Vec<Option<ToolResult>>,
    reads: Vec<(usize, Approved<'c>)>,
    /// The makespan with unbounded concurrency and no overhead, so far.
    ideal: Duration,
    /// Serial mode: the longest read since the last write. Ideally those
    /// reads overlap, whatever the mode ran them as.
    read_group: Duration,
}

impl Pipeline {
    /// Validate and execute one model turn's calls, with fresh tool state.
    pub async fn run(&self, calls: &[ParsedCall]) -> Batch {
        self.run_with(calls, &self.registry.new_state()).await
    }

    /// Validate and execute one turn's calls; `state` carries what tools
    /// remember across the turns of one trial.
    pub async fn run_with(&self, calls: &[ParsedCall], state: &ToolState) -> Batch {
        let started_at = std::time::SystemTime::now();
        let mut batch = InProgress {
            calls,
            state,
            start: Instant::now(),
            results: vec![None; calls.len()],
            reads: Vec::new(),
            ideal: Duration::ZERO,
            read_group: Duration::ZERO,
        };
        for (index, call) in calls.iter().enumerate() {
            match validate_among(&self.registry, state.hidden(), call) {
                Err(rejection) => {
                    batch.results[index] = Some(self.rejected(call, &rejection, batch.start));
                }
                Ok(approved) => {
                    let effect = self.registry.definition(approved.tool).effect;
                    if self.options.mode == ExecMode::Parallel && effect == Effect::Read {
                        batch.reads.push((index, approved));
                        continue;
                    }
                    // A write (or any call in serial mode) waits for what came before.
                    self.run_reads(&mut batch).await;
                    let call = &batch.calls[index];
                    let result = match self.try_instant(call, batch.start, approved, Instant::now())
                    {
                        Some((result, _)) => result,
                        None => {
                            self.execute_one(call, batch.state, batch.start, approved)
                                .await
                        }
                    };
                    if effect == Effect::Read {
                        batch.read_group = batch.read_group.max(result.elapsed);
                    } else {
                        batch.ideal += std::mem::take(&mut batch.read_group) + result.elapsed;
                    }
                    batch.results[index] = Some(result);
                }
            }
        }
        self.run_reads(&mut batch).await;
        batch.ideal += batch.read_group;

        Batch {
            makespan: batch.start.elapsed(),
            ideal_makespan: batch.ideal,
            results: batch
                .results
                .into_iter()
                .map(|r| r.expect("every call gets a result"))
                .collect(),
            started_at,
        }
    }

    /// The result of a call that may not run: why, in the run's words.
    pub(super) fn rejected(
        &self,
        call: &ParsedCall,
        rejection: &Rejection,
        batch_start: Instant,
    ) -> ToolResult {
        ToolResult {
            call_id: call.id().to_owned(),
            name: call.name().to_owned(),
            content: self.word_rejection(call, rejection),
            error_kind: Some(rejection.kind),
            started: batch_start.elapsed(),
            elapsed: Duration::ZERO,
            images: Vec::new(),
        }
    }

    /// A rejected call's error in the run's style; the Python facts of an
    /// invalid call are found only for the styles that word them.
    fn word_rejection(&self, call: &ParsedCall, rejection: &Rejection) -> String {
        let style = self.options.feedback;
        let facts = match call {
            ParsedCall::Ok(call)
                if rejection.kind == ErrorKind::Validation && style.needs_python_facts() =>
            {
                self.registry.lookup(&call.name).map(|tool| {
                    PythonFacts::of(
                        &self.registry.definition(tool).parameters,
                        self.registry.schema(tool),
                        &call.arguments,
                    )
                })
            }
            _ => None,
        };
        word_error(
            style,
            &Told {
                kind: rejection.kind,
                message: &rejection.message,
                details: &rejection.details,
                tool_error: None,
                tool: call.name(),
                python: facts.as_ref(),
            },
        )
    }

    /// Run the pending reads together, bounded by the concurrency limit.
    async fn run_reads(&self, batch: &mut InProgress<'_>) {
        let mut reads = std::mem::take(&mut batch.reads);
        // Instant tools finish here and now: no future per call. One
        // call's end is the next one's start: one clock read per call.
        let mut longest = Duration::ZERO;
        let mut clock = Instant::now();
        reads.retain(|&(index, approved)| {
            match self.try_instant(&batch.calls[index], batch.start, approved, clock) {
                Some((result, end)) => {
                    longest = longest.max(result.elapsed);
                    batch.results[index] = Some(result);
                    clock = end;
                    false
                }
                None => true,
            }
        });
        let finished: Vec<(usize, ToolResult)> = match reads.len() {
            0 => Vec::new(),
            1 => {
                let (index, approved) = reads[0];
                let call = &batch.calls[index];
                let result = self
                    .execute_one(call, batch.state, batch.start, approved)
                    .await;
                vec![(index, result)]
            }
            n if n <= self.options.max_concurrency => {
                // All fit under the limit: one allocation, no task per call.
                let batch = &*batch;
                join_all(reads.iter().map(|&(index, approved)| async move {
                    let call = &batch.calls[index];
                    let result = self
                        .execute_one(call, batch.state, batch.start, approved)
                        .await;
                    (index, result)
                }))
                .await
            }
            _ => {
                let batch = &*batch;
                stream::iter(reads.iter().copied())
                    .map(|(index, approved)| async move {
                        let call = &batch.calls[index];
                        let result = self
                            .execute_one(call, batch.state, batch.start, approved)
                            .await;
                        (index, result)
                    })
                    .buffer_unordered(self.options.max_concurrency.max(1))
                    .collect()
                    .await
            }
        };
        // Reads of one group overlap: ideally the group takes its longest call.
        let longest = finished
            .iter()
            .map(|(_, r)| r.elapsed)
            .fold(longest, Duration::max);
        batch.ideal += longest;
        for (index, result) in finished {
            batch.results[index] = Some(result);
        }
        // Keep the allocation for the next group.
        batch.reads = reads;
        batch.reads.clear();
    }

    /// Run an instant tool here and now, with no timer (it cannot overrun
    /// one) and no future; `None` for a tool that must be awaited. Gives
    /// the result and when it ended.
    pub(super) fn try_instant(
        &self,
        call: &ParsedCall,
        batch_start: Instant,
        approved: Approved<'_>,
        start: Instant,
    ) -> Option<(ToolResult, Instant)> {
        let done = self
            .registry
            .execute_now(approved.tool, approved.arguments)?;
        let end = Instant::now();
        Some((
            self.finish(
                call,
                batch_start,
                approved,
                start..end,
                Ok(done.map(ToolOutput::from)),
            ),
            end,
        ))
    }

    /// Run a tool that must be awaited, under its timeout.
    pub(super) async fn execute_one(
        &self,
        call: &ParsedCall,
        state: &ToolState,
        batch_start: Instant,
        approved: Approved<'_>,
    ) -> ToolResult {
        let start = Instant::now();
        let outcome = self
            .registry
            .execute_in_time(approved.tool, approved.arguments, state)
            .await;
        self.finish(call, batch_start, approved, start..Instant::now(), outcome)
    }

    /// Word a tool's outcome as the result the model gets.
    fn finish(
        &self,
        call: &ParsedCall,
        batch_start: Instant,
        approved: Approved<'_>,
        ran: Range<Instant>,
        outcome: Result<Result<ToolOutput, ToolFailure>, tokio::time::error::Elapsed>,
    ) -> ToolResult {
        let timeout = self.registry.definition(approved.tool).timeout();
        let mut images = Vec::new();
        let (content, error_kind) = match outcome {
            Ok(Ok(output)) => {
                // Sent as parts only to a model that takes images; the
                // text names each image either way.
                if self.options.images {
                    images = output.images;
                }
                // An empty success still says something: providers mishandle empty results.
                if output.text.is_empty() {
                    (EMPTY_RESULT_PLACEHOLDER.to_owned(), None)
                } else {
                    (truncate(output.text, self.options.output_limit), None)
                }
            }
            Ok(Err(failure)) => {
                let kind = error_kind_of(&failure);
                let message = format!("Error: {}", failure.message);
                let told = Told {
                    kind,
                    message: &message,
                    details: &[],
                    tool_error: Some(&failure.message),
                    tool: call.name(),
                    python: None,
                };
                (word_error(self.options.feedback, &told), Some(kind))
            }
            Err(_) => {
                let raw = format!(
                    "timed out after {} ms (hint: the tool may be slow or stuck; try again or with a smaller request)",
                    timeout.as_millis()
                );
                let message = format!("Error: {raw}");
                let told = Told {
                    kind: ErrorKind::Timeout,
                    message: &message,
                    details: &[],
                    tool_error: Some(&raw),
                    tool: call.name(),
                    python: None,
                };
                (
                    word_error(self.options.feedback, &told),
                    Some(ErrorKind::Timeout),
                )
            }
        };
        ToolResult {
            call_id: call.id().to_owned(),
            name: call.name().to_owned(),
            content,
            error_kind,
            started: ran.start - batch_start,
            elapsed: ran.end - ran.start,
            images,
        }
    }
}

fn error_kind_of(failure: &ToolFailure) -> ErrorKind {
    match failure.kind {
        ToolFailureKind::Blocked => ErrorKind::Sandbox,
        ToolFailureKind::Timeout => ErrorKind::Timeout,
        ToolFailureKind::Invalid => ErrorKind::Validation,
        ToolFailureKind::Unavailable => ErrorKind::ToolUnavailable,
        ToolFailureKind::BadOutput => ErrorKind::BadOutput,
        ToolFailureKind::Runtime
        | ToolFailureKind::NotFound
        | ToolFailureKind::PermissionDenied => ErrorKind::Runtime,
    }
}

/// Cut output to `limit` bytes (on a character boundary) and say how much
/// was cut, so the model knows it saw only part.
pub fn truncate(mut output: String, limit: usize) -> String {
    if output.len() <= limit {
        return output;
    }
    let total = output.len();
    let mut cut_at = limit;
    while !output.is_char_boundary(cut_at) {
        cut_at -= 1;
    }
    output.truncate(cut_at);
    output.push_str(&format!(
        "\n[output truncated: {} of {total} bytes cut]",
        total - cut_at
    ));
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_marks_how_much_was_cut_and_respects_characters() {
        assert_eq!(truncate("short".into(), 10), "short");
        assert_eq!(
            truncate("abcdef".into(), 4),
            "abcd\n[output truncated: 2 of 6 bytes cut]"
        );
        // 'é' is two bytes: cutting at 2 would split it.
        assert_eq!(
            truncate("aéb".into(), 2),
            "a\n[output truncated: 3 of 4 bytes cut]"
        );
    }
}
