//! Short excerpts of values for messages: an error names the bad value,
//! but never echoes a huge one whole (a 50 MB string would bury the
//! message, and the terminal).

use std::borrow::Cow;

/// Values up to this many characters are shown whole.
pub const MAX_CHARS: usize = 80;

/// How much of a longer value is shown.
const SHOWN_CHARS: usize = 60;

/// `text` as a terminal may show it: every control character but the
/// line break and the tab written as its escape (`\u{1b}`), so that text
/// a server, a bridge or a model sent (an escape sequence that retitles
/// the window, clears the screen) is read, never obeyed.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            safe.extend(c.escape_unicode());
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

/// `text` itself when short; otherwise its first characters and its
/// length: `aaaa… (52428800 bytes)`. Cut on a character boundary.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    if text.char_indices().nth(MAX_CHARS).is_none() {
        return Cow::Borrowed(text);
    }
    cut(text, SHOWN_CHARS)
}

/// The first `chars` characters of `text` and its length when it is
/// longer: `<html>… (5120 bytes)`.
pub fn cut(text: &str, chars: usize) -> Cow<'_, str> {
    if text.char_indices().nth(chars).is_none() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}… ({} bytes)", prefix(text, chars), text.len()))
}

fn prefix(text: &str, chars: usize) -> &str {
    let cut = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(at, _)| at);
    &text[..cut]
}

/// `message` with every long quoted value in it ("…", `…` or '…') cut to
/// a short prefix and its length. Messages from serde and other crates
/// quote the bad value whole; this is the one place that shortens them.
pub fn cut_quoted(message: &str) -> Cow<'_, str> {
    if message.len() <= MAX_CHARS {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(256);
    let mut rest = message;
    let mut changed = false;
    while let Some(open) = rest.find(['"', '`', '\'']) {
        let quote = rest.as_bytes()[open] as char;
        let body = &rest[open + 1..];
        let Some(close) = closing_quote(body, quote) else {
            break;
        };
        let inner = &body[..close];
        out.push_str(&rest[..=open]);
        if inner.char_indices().nth(MAX_CHARS).is_some() {
            out.push_str(prefix(inner, SHOWN_CHARS));
            out.push('…');
            out.push(quote);
            out.push_str(&format!(" ({} bytes)", inner.len()));
            changed = true;
        } else {
            out.push_str(inner);
            out.push(quote);
        }
        rest = &body[close + 1..];
    }
    if !changed {
        return Cow::Borrowed(message);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The end of a quoted value: the next `quote` not escaped by a backslash.
fn closing_quote(body: &str, quote: char) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => return Some(at),
            _ => escaped = false,
        }
    }
    None
}

/// A JSON value as text, cut like a quoted value: a string keeps its
/// quotes (`"vvv…" (5000000 bytes)`), anything else is its JSON text cut.
pub fn json_excerpt(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) if text.char_indices().nth(MAX_CHARS).is_some() => {
            format!("\"{}…\" ({} bytes)", prefix(text, SHOWN_CHARS), text.len())
        }
        other => excerpt(&other.to_string()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_shown_whole() {
        assert_eq!(excerpt("abc"), "abc");
        let exactly = "x".repeat(MAX_CHARS);
        assert_eq!(excerpt(&exactly), exactly);
    }

    #[test]
    fn long_text_is_cut_with_its_length_on_a_char_boundary() {
        let long = "é".repeat(1_000_000);
        let shown = excerpt(&long);
        assert!(shown.chars().count() < MAX_CHARS + 20, "{shown}");
        assert!(shown.ends_with("… (2000000 bytes)"), "{shown}");
    }

    #[test]
    fn long_quoted_values_in_a_message_are_cut_and_the_rest_kept() {
        let big = "a".repeat(10_000);
        let message = format!("invalid type: string \"{big}\", expected u64 at `x`");
        let cut = cut_quoted(&message);
        assert_eq!(
            cut,
            format!(
                "invalid type: string \"{}…\" (10000 bytes), expected u64 at `x`",
                "a".repeat(SHOWN_CHARS)
            )
        );
        let escaped = format!("bad value \"{}\\\"{big}\" here", "b".repeat(3));
        let cut = cut_quoted(&escaped);
        assert!(cut.ends_with("(10005 bytes) here"), "{cut}");
        assert_eq!(cut_quoted("short \"value\""), "short \"value\"");
    }

    #[test]
    fn escape_sequences_are_shown_never_obeyed_on_a_terminal() {
        let hostile = "stderr: \u{1b}]0;pwned\u{7}\u{1b}[2J done\n\tnext";
        let safe = terminal_safe(hostile);
        assert!(
            !safe.chars().any(|c| c == '\u{1b}' || c == '\u{7}'),
            "{safe}"
        );
        assert!(
            safe.contains("\\u{1b}]0;pwned") && safe.ends_with(" done\n\tnext"),
            "{safe}"
        );
        assert!(matches!(terminal_safe("plain\ttext\n"), Cow::Borrowed(_)));
    }
}
