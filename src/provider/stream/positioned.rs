//! What the formats' assemblers share: entries put by the position the
//! stream gives, nothing laid out up to it, and a field taken out of an
//! event.

use serde_json::Value;

/// What `key` of an object event holds, taken out of it.
pub(super) fn take(event: &mut Value, key: &str) -> Value {
    event.get_mut(key).map(Value::take).unwrap_or_default()
}

/// Items (or blocks) by the position the stream gave each, kept in that
/// order. A hostile position costs nothing: nothing is laid out up to it.
#[derive(Debug, Default)]
pub(super) struct Positioned<T> {
    pub(super) entries: Vec<(u64, T)>,
}

impl<T> Positioned<T> {
    /// Put `entry` at `at`, in place of one there before.
    pub(super) fn put(&mut self, at: u64, entry: T) {
        // Entries come in order: the search starts from the back.
        let slot = self.entries.iter().rposition(|(i, _)| *i <= at);
        match slot {
            Some(s) if self.entries[s].0 == at => self.entries[s].1 = entry,
            Some(s) => self.entries.insert(s + 1, (at, entry)),
            None => self.entries.insert(0, (at, entry)),
        }
    }

    pub(super) fn get_mut(&mut self, at: u64) -> Option<&mut T> {
        let slot = self.entries.iter().rposition(|(i, _)| *i == at)?;
        Some(&mut self.entries[slot].1)
    }

    /// The next position after the last.
    pub(super) fn next(&self) -> u64 {
        self.entries.last().map_or(0, |(i, _)| i.saturating_add(1))
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, entry)| entry)
    }
}
