//! The secrets toolgauge knows: every key it read for a model or a judge
//! (`know`), so that a key a server quotes back (a proxy's 401 that echoes
//! it, a tool result that carries it) is replaced by `[REDACTED]` in any
//! text before it is printed, logged or written (`redact`). Process-wide
//! on purpose: a key is known where it is read, and text meets the writers
//! far from there.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a known secret is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are not taken as secrets: a key of a few
/// characters would blank out ordinary words wherever they appear.
const SHORTEST: usize = 8;

static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());
/// Some secret is known: the common case, none, costs one load.
static ANY: AtomicBool = AtomicBool::new(false);

/// Take `value` as a secret from now on.
pub fn know(value: &str) {
    let value = value.trim();
    if value.len() < SHORTEST {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|k| k == value) {
        known.push(value.to_owned());
        // Longest first: a key that holds another is replaced whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
    ANY.store(true, Ordering::Release);
}

/// `text` with every known secret replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(text);
    }
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    let mut text = Cow::Borrowed(text);
    for secret in known.iter() {
        if text.contains(secret.as_str()) {
            text = Cow::Owned(text.replace(secret.as_str(), REDACTED));
        }
    }
    text
}

/// `bytes` with every known secret replaced by [`REDACTED`].
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(bytes);
    }
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    let mut bytes = Cow::Borrowed(bytes);
    for secret in known.iter() {
        let finder = memchr::memmem::Finder::new(secret.as_bytes());
        if finder.find(&bytes).is_none() {
            continue;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest: &[u8] = &bytes;
        while let Some(at) = finder.find(rest) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(REDACTED.as_bytes());
            rest = &rest[at + secret.len()..];
        }
        out.extend_from_slice(rest);
        bytes = Cow::Owned(out);
    }
    bytes
}

/// A writer that passes on what it is given with every known secret
/// replaced, holding back only as many bytes as a secret that began in
/// one write and ends in the next could need. What it holds is written
/// by [`Redacting::finish`].
pub struct Redacting<W: Write> {
    inner: W,
    held: Vec<u8>,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W) -> Self {
        Redacting {
            inner,
            held: Vec::new(),
        }
    }

    /// Write what is held, and give the inner writer back.
    pub fn finish(mut self) -> io::Result<W> {
        let held = std::mem::take(&mut self.held);
        self.inner.write_all(&redact_bytes(&held))?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let longest = longest();
        if longest == 0 && self.held.is_empty() {
            return self.inner.write(buf);
        }
        self.held.extend_from_slice(buf);
        let redacted = redact_bytes(&self.held).into_owned();
        // A secret's start could be in the last `longest - 1` bytes.
        let keep = longest.saturating_sub(1).min(redacted.len());
        let (out, tail) = redacted.split_at(redacted.len() - keep);
        self.inner.write_all(out)?;
        self.held = tail.to_vec();
        Ok(buf.len())
    }

    /// Flushes what was passed on; a possible secret's start stays held.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The length of the longest known secret (0: none).
fn longest() -> usize {
    if !ANY.load(Ordering::Acquire) {
        return 0;
    }
    let known = KNOWN.read().unwrap_or_else(|e| e.into_inner());
    known.first().map_or(0, String::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_key_is_replaced_in_text_and_bytes_and_a_short_value_is_not_a_secret() {
        know("sk-unit-canary-0a1b2c3d");
        know("sk-unit-canary-0a1b2c3d-longer");
        know("short");
        let said = "401: invalid key sk-unit-canary-0a1b2c3d-longer (sk-unit-canary-0a1b2c3d)";
        assert_eq!(
            redact(said),
            "401: invalid key [REDACTED] ([REDACTED])",
            "the longer key is replaced whole"
        );
        assert_eq!(
            &*redact_bytes(said.as_bytes()),
            b"401: invalid key [REDACTED] ([REDACTED])"
        );
        assert_eq!(redact("a short word"), "a short word");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_key_written_in_pieces_is_replaced_whole() {
        know("sk-unit-pieces-9z8y7x6w");
        let mut out = Redacting::new(Vec::new());
        for piece in ["{\"error\": \"bad key sk-unit-", "pieces-9z8y", "7x6w\"}"] {
            out.write_all(piece.as_bytes()).unwrap();
        }
        let written = out.finish().unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            "{\"error\": \"bad key [REDACTED]\"}"
        );
    }
}
