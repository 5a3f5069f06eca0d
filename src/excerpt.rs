//! Short excerpts of values for messages: an error names the bad value,
//! but never echoes a huge one whole (a 50 MB string would bury the
//! message).

use std::borrow::Cow;

/// Values up to this many characters are shown whole.
pub const MAX_CHARS: usize = 80;

/// `text` itself when short; otherwise its first characters and its
/// length: `"aaaa…" (52428800 bytes)`. Cut on a character boundary.
pub fn excerpt(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_CHARS) {
        None => Cow::Borrowed(text),
        Some((_, _)) => {
            let cut = text
                .char_indices()
                .nth(MAX_CHARS - 20)
                .map_or(text.len(), |(at, _)| at);
            Cow::Owned(format!("{}… ({} bytes)", &text[..cut], text.len()))
        }
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
}
