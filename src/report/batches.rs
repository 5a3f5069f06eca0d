//! The batches a `--batch` run sent, as reports tell them: one record per
//! batch (heard as a notice when the run ends), and summary.md's table.

use std::fmt::Write as _;

use crate::markup::{Align::Left, Align::Right, Table};

/// A batch of the run and how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRecord {
    pub model: String,
    pub id: String,
    pub requests: usize,
    /// The provider's word for its end; `None`: not followed to its end.
    pub ended: Option<String>,
    pub answered: usize,
    pub failed: usize,
}

impl std::fmt::Display for BatchRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.id.is_empty() {
            // Recorded before its create was sent, never confirmed.
            return write!(
                f,
                "a batch of {} request(s) ({}) whose create got no answer: it may exist, \
                 paid, at the provider; look for it in the provider's batch list",
                self.requests, self.model
            );
        }
        write!(
            f,
            "batch {} ({}): {} request(s), ",
            self.id, self.model, self.requests
        )?;
        match &self.ended {
            Some(state) => write!(
                f,
                "{state}: {} answered, {} failed",
                self.answered, self.failed
            ),
            None => f.write_str("not followed to its end"),
        }
    }
}

/// summary.md's section for a batched run: the batch rate its costs are
/// at, and every batch (of every shard, when shards are merged).
pub fn markdown(batched: bool, batches: &[BatchRecord]) -> String {
    if !batched {
        return String::new();
    }
    let mut text = String::from(
        "\n## Batches\n\nLive models' requests went through their providers' batch APIs: \
         costs are at the batch rate (half the model files' prices). batches.jsonl keeps \
         each batch's requests.\n",
    );
    if batches.is_empty() {
        return text;
    }
    text.push('\n');
    let mut table = Table::new(&[
        ("model", Left),
        ("batch", Left),
        ("requests", Right),
        ("ended", Left),
        ("answered", Right),
        ("failed", Right),
    ]);
    for b in batches {
        table.row(vec![
            b.model.clone(),
            b.id.clone(),
            b.requests.to_string(),
            b.ended.clone().unwrap_or_else(|| "not followed".to_owned()),
            b.answered.to_string(),
            b.failed.to_string(),
        ]);
    }
    let _ = write!(text, "{}", table.render());
    text
}
