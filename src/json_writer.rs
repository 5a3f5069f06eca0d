//! JSON text written straight into a byte buffer, for the hot paths whose
//! shapes are fixed (Record's log lines, Return's result messages): keys
//! are constant bytes and only values need work. The output is what
//! `serde_json` writes for the same values, byte for byte.
//!
//! serde_json escapes strings one byte at a time; most strings here (ids,
//! tool names, tool output) need no escaping at all, so this checks them
//! eight bytes at a time and copies a clean string whole.

use serde_json::Value;

/// Append `text` as a JSON string literal.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if is_clean(bytes) {
        out.extend_from_slice(bytes);
    } else {
        let mut clean_from = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            if needs_escape(byte) {
                out.extend_from_slice(&bytes[clean_from..at]);
                write_escape(out, byte);
                clean_from = at + 1;
            }
        }
        out.extend_from_slice(&bytes[clean_from..]);
    }
    out.push(b'"');
}

/// Append `items` separated by commas, each written by `write_item`.
pub fn write_separated<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut write_item: impl FnMut(&mut Vec<u8>, T),
) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_item(out, item);
    }
}

/// Append a JSON value, compact, as `serde_json::to_writer` would.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => {
            serde_json::to_writer(&mut *out, number).expect("writing to memory cannot fail");
        }
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            write_separated(out, items, write_value);
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            write_separated(out, members, |out, (key, member)| {
                write_str(out, key);
                out.push(b':');
                write_value(out, member);
            });
            out.push(b'}');
        }
    }
}

/// Append an unsigned integer.
pub fn write_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Whether no byte needs escaping, checked eight bytes at a time (the last
/// word overlaps the one before it rather than going byte by byte).
fn is_clean(bytes: &[u8]) -> bool {
    if bytes.len() < 8 {
        return !bytes.iter().any(|&byte| needs_escape(byte));
    }
    let word_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let mut dirty = 0;
    let mut at = 0;
    while at + 8 <= bytes.len() {
        dirty |= escapes_in(word_at(at));
        at += 8;
    }
    dirty |= escapes_in(word_at(bytes.len() - 8));
    dirty == 0
}

/// Non-zero when some byte of `word` is below 0x20, a quote or a backslash:
/// the classic "has a byte less than n" test, applied to the word and to
/// the word xor-ed with each special byte. A false signal can only appear
/// above a true one, so the word-level answer is exact.
fn escapes_in(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_less = |w: u64, n: u64| w.wrapping_sub(n * ONES) & !w;
    let quote = word ^ (u64::from(b'"') * ONES);
    let backslash = word ^ (u64::from(b'\\') * ONES);
    (has_less(word, 0x20) | has_less(quote, 1) | has_less(backslash, 1)) & HIGH
}

fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The escapes serde_json uses: short forms where JSON has them, `\u00XX`
/// for other control characters.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
            return;
        }
    };
    out.push(b'\\');
    out.push(short);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).expect("escaping keeps UTF-8")
    }

    #[test]
    fn escapes_as_serde_json_does() {
        for text in [
            "",
            "plain",
            "a \"quoted\" word and a \\ backslash",
            "lines\nand\ttabs\r\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f} control",
            "é ü 日本 🎉 beyond ASCII stays as is",
            "sixteen bytes ok\"then a quote past the first chunk",
            "Validation failed:\n- /a: must be number\n- /operation: must be one of \"add\"",
        ] {
            assert_eq!(written(text), serde_json::to_string(text).unwrap());
        }
    }

    #[test]
    fn every_byte_at_every_place_in_a_word_is_judged_right() {
        for len in [7, 8, 9, 15, 16, 17, 23] {
            for place in 0..len {
                for byte in 0..=u8::MAX {
                    let mut bytes = vec![b'a'; len];
                    bytes[place] = byte;
                    assert_eq!(
                        is_clean(&bytes),
                        !needs_escape(byte),
                        "{byte:#x} at {place} of {len}"
                    );
                }
            }
        }
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_writes_as_serde_json_does(value in any_json()) {
            let mut out = Vec::new();
            write_value(&mut out, &value);
            prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&value).unwrap());
        }

        #[test]
        fn word_checks_agree_with_byte_checks(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(is_clean(&bytes), !bytes.iter().any(|&b| needs_escape(b)));
        }

        #[test]
        fn any_string_escapes_as_serde_json_does(text in any::<String>()) {
            prop_assert_eq!(written(&text), serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn strings_of_json_specials_escape_as_serde_json_does(
            text in proptest::string::string_regex("[a\"\\\\\n\t\u{0}-\u{1f}é]{0,64}").unwrap()
        ) {
            prop_assert_eq!(written(&text), serde_json::to_string(&text).unwrap());
        }
    }
}
