//! Execute: the scheduler. Consecutive `read` calls run concurrently (up to
//! a limit); a `write` waits for everything before it and runs alone.
//! Results come back in call order, whatever order the calls finish in.

use futures_util::future::join_all;
use futures_util::{StreamExt, stream};
use tokio::time::Instant;

use super::validate::{Approved, validate};
use super::{Batch, ExecMode, Pipeline};
use crate::call::{ErrorKind, ParsedCall, ToolResult};
use crate::tool::{Effect, ToolFailure, ToolFailureKind};

impl Pipeline {
    /// Validate and execute one model turn's calls.
    pub async fn run(&self, calls: &[ParsedCall]) -> Batch {
        let started_at = std::time::SystemTime::now();
        let batch_start = Instant::now();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut reads: Vec<(usize, Approved<'_>)> = Vec::new();

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
                    self.run_reads(calls, &mut reads, &mut results, batch_start)
                        .await;
                    let result = self.execute_one(&calls[index], approved, batch_start).await;
                    results[index] = Some(result);
                }
            }
        }
        self.run_reads(calls, &mut reads, &mut results, batch_start)
            .await;

        Batch {
            results: results
                .into_iter()
                .map(|r| r.expect("every call gets a result"))
                .collect(),
            makespan: batch_start.elapsed(),
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
    ) {
        match reads.len() {
            0 => {}
            1 => {
                let (index, approved) = reads[0];
                results[index] = Some(self.execute_one(&calls[index], approved, batch_start).await);
            }
            n if n <= self.options.max_concurrency => {
                // All fit under the limit: one allocation, no task per call.
                let finished = join_all(reads.iter().map(|&(index, approved)| {
                    self.execute_one(&calls[index], approved, batch_start)
                }))
                .await;
                for (&(index, _), result) in reads.iter().zip(finished) {
                    results[index] = Some(result);
                }
            }
            _ => {
                let finished: Vec<(usize, ToolResult)> = stream::iter(reads.iter().copied())
                    .map(|(index, approved)| async move {
                        (
                            index,
                            self.execute_one(&calls[index], approved, batch_start).await,
                        )
                    })
                    .buffer_unordered(self.options.max_concurrency.max(1))
                    .collect()
                    .await;
                for (index, result) in finished {
                    results[index] = Some(result);
                }
            }
        }
        reads.clear();
    }

    async fn execute_one(
        &self,
        call: &ParsedCall,
        approved: Approved<'_>,
        batch_start: Instant,
    ) -> ToolResult {
        let start = Instant::now();
        let timeout = self.registry.definition(approved.tool).timeout();
        let outcome = tokio::time::timeout(
            timeout,
            self.registry.execute(approved.tool, approved.arguments),
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
