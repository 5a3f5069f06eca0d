//! Execute: the scheduler. Consecutive `read` calls run concurrently (up to
//! a limit); a `write` waits for everything before it and runs alone.
//! Results come back in call order, whatever order the calls finish in.

use std::time::Duration;

use futures_util::future::join_all;
use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use super::validate::{Approved, validate};
use super::{Batch, ExecMode, Pipeline};
use crate::call::{ErrorKind, ParsedCall, ToolResult};
use crate::tool::{Effect, ToolFailure, ToolFailureKind, ToolState};

impl Pipeline {
    /// Validate and execute one model turn's calls, with fresh tool state.
    pub async fn run(&self, calls: &[ParsedCall]) -> Batch {
        self.run_with(calls, &self.registry.new_state()).await
    }

    /// Validate and execute one turn's calls; `state` carries what tools
    /// remember across the turns of one trial.
    pub async fn run_with(&self, calls: &[ParsedCall], state: &ToolState) -> Batch {
        let started_at = std::time::SystemTime::now();
        let batch_start = Instant::now();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut reads: Vec<(usize, Approved<'_>)> = Vec::new();
        // The makespan with unbounded concurrency and no overhead.
        let mut ideal = Duration::ZERO;

        for (index, call) in calls.iter().enumerate() {
            match validate(&self.registry, call) {
                Err(rejection) => {
                    results[index] = Some(ToolResult {
                        call_id: call.id().to_owned(),
                        name: call.name().to_owned(),
                        content: rejection.message,
                        error_kind: Some(rejection.kind),
                        started: batch_start.elapsed(),
                        elapsed: Default::default(),
                    });
                }
                Ok(approved) => {
                    let effect = self.registry.definition(approved.tool).effect;
                    if self.options.mode == ExecMode::Parallel && effect == Effect::Read {
                        reads.push((index, approved));
                        continue;
                    }
                    self.run_reads(
                        calls,
                        &mut reads,
                        &mut results,
                        batch_start,
                        state,
                        &mut ideal,
                    )
                    .await;
                    let result = self
                        .execute_one(&calls[index], approved, batch_start, state)
                        .await;
                    ideal += result.elapsed;
                    results[index] = Some(result);
                }
            }
        }
        self.run_reads(
            calls,
            &mut reads,
            &mut results,
            batch_start,
            state,
            &mut ideal,
        )
        .await;

        Batch {
            results: results
                .into_iter()
                .map(|r| r.expect("every call gets a result"))
                .collect(),
            makespan: batch_start.elapsed(),
            ideal_makespan: ideal,
            started_at,
        }
    }

    /// Run the pending reads together, bounded by the concurrency limit.
    async fn run_reads(
        &self,
        calls: &[ParsedCall],
        reads: &mut Vec<(usize, Approved<'_>)>,
        results: &mut [Option<ToolResult>],
        batch_start: Instant,
        state: &ToolState,
        ideal: &mut Duration,
    ) {
        // Reads of one group overlap: ideally the group takes its longest call.
        let mut longest = Duration::ZERO;
        match reads.len() {
            0 => {}
            1 => {
                let (index, approved) = reads[0];
                let result = self
                    .execute_one(&calls[index], approved, batch_start, state)
                    .await;
                longest = result.elapsed;
                results[index] = Some(result);
            }
            n if n <= self.options.max_concurrency => {
                // All fit under the limit: one allocation, no task per call.
                let finished = join_all(reads.iter().map(|&(index, approved)| {
                    self.execute_one(&calls[index], approved, batch_start, state)
                }))
                .await;
                for (&(index, _), result) in reads.iter().zip(finished) {
                    longest = longest.max(result.elapsed);
                    results[index] = Some(result);
                }
            }
            _ => {
                let finished: Vec<(usize, ToolResult)> = stream::iter(reads.iter().copied())
                    .map(|(index, approved)| async move {
                        let result = self.execute_one(&calls[index], approved, batch_start, state);
                        (index, result.await)
                    })
                    .buffer_unordered(self.options.max_concurrency.max(1))
                    .collect()
                    .await;
                for (index, result) in finished {
                    longest = longest.max(result.elapsed);
                    results[index] = Some(result);
                }
            }
        }
        *ideal += longest;
        reads.clear();
    }

    async fn execute_one(
        &self,
        call: &ParsedCall,
        approved: Approved<'_>,
        batch_start: Instant,
        state: &ToolState,
    ) -> ToolResult {
        let start = Instant::now();
        let timeout = self.registry.definition(approved.tool).timeout();
        let outcome = tokio::time::timeout(
            timeout,
            self.registry
                .execute(approved.tool, approved.arguments, state),
        )
        .await;
        let elapsed = start.elapsed();
        let (content, error_kind) = match outcome {
            Ok(Ok(output)) => (truncate(output, self.options.output_limit), None),
            Ok(Err(failure)) => {
                let kind = error_kind_of(&failure);
                (format!("Error: {}", failure.message), Some(kind))
            }
            Err(_) => (
                format!(
                    "Error: timed out after {} ms (hint: the tool may be slow or stuck; try again or with a smaller request)",
                    timeout.as_millis()
                ),
                Some(ErrorKind::Timeout),
            ),
        };
        ToolResult {
            call_id: call.id().to_owned(),
            name: call.name().to_owned(),
            content,
            error_kind,
            started: start - batch_start,
            elapsed,
        }
    }
}

fn error_kind_of(failure: &ToolFailure) -> ErrorKind {
    match failure.kind {
        ToolFailureKind::Blocked => ErrorKind::Sandbox,
        ToolFailureKind::Timeout => ErrorKind::Timeout,
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
