//! Find where a JSON pointer's value starts in a JSON text, for messages
//! that name the line and column of a problem found on the parsed value.

/// The 1-based (line, column) of the value at `pointer`, or of the deepest
/// part of the pointer that exists. The text must be valid JSON.
pub fn locate(text: &str, pointer: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    let segments = pointer.split('/').skip(1).map(crate::pointer::key_of);
    for segment in segments {
        match find_child(bytes, pos, &segment) {
            Some(child) => pos = child,
            None => break,
        }
    }
    line_column(bytes, pos)
}

fn line_column(bytes: &[u8], pos: usize) -> (usize, usize) {
    let before = &bytes[..pos.min(bytes.len())];
    let line = 1 + before.iter().filter(|b| **b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |p| p + 1);
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column)
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// Position of the child `segment` of the container starting at `pos`.
fn find_child(bytes: &[u8], pos: usize, segment: &str) -> Option<usize> {
    match bytes.get(pos)? {
        b'{' => {
            let mut p = skip_ws(bytes, pos + 1);
            while bytes.get(p)? == &b'"' {
                let key_end = skip_string(bytes, p)?;
                let key: String = serde_json::from_slice(&bytes[p..key_end]).ok()?;
                p = skip_ws(bytes, key_end);
                p = skip_ws(bytes, p + 1); // ':'
                if key == segment {
                    return Some(p);
                }
                p = skip_ws(bytes, skip_value(bytes, p)?);
                if bytes.get(p)? == &b',' {
                    p = skip_ws(bytes, p + 1);
                }
            }
            None
        }
        b'[' => {
            let index: usize = segment.parse().ok()?;
            let mut p = skip_ws(bytes, pos + 1);
            for _ in 0..index {
                p = skip_ws(bytes, skip_value(bytes, p)?);
                if bytes.get(p)? != &b',' {
                    return None;
                }
                p = skip_ws(bytes, p + 1);
            }
            (bytes.get(p)? != &b']').then_some(p)
        }
        _ => None,
    }
}

/// End (exclusive) of the string starting at `pos`.
fn skip_string(bytes: &[u8], pos: usize) -> Option<usize> {
    let mut p = pos + 1;
    while p < bytes.len() {
        match bytes[p] {
            b'\\' => p += 2,
            b'"' => return Some(p + 1),
            _ => p += 1,
        }
    }
    None
}

/// End (exclusive) of the value starting at `pos`.
fn skip_value(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => skip_string(bytes, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut p = pos;
            while p < bytes.len() {
                match bytes[p] {
                    b'"' => {
                        p = skip_string(bytes, p)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(p + 1);
                        }
                    }
                    _ => {}
                }
                p += 1;
            }
            None
        }
        _ => {
            let mut p = pos;
            while p < bytes.len()
                && !matches!(bytes[p], b',' | b'}' | b']')
                && !bytes[p].is_ascii_whitespace()
            {
                p += 1;
            }
            Some(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_found_at_their_line_and_column() {
        let text = "{\n  \"a\": {\"b\": [10, {\"c\": \"x\\\"y\"}, 30]},\n  \"d/e\": true\n}";
        assert_eq!(locate(text, ""), (1, 1));
        assert_eq!(locate(text, "/a"), (2, 8));
        assert_eq!(locate(text, "/a/b/1"), (2, 19));
        assert_eq!(locate(text, "/a/b/2"), (2, 34));
        assert_eq!(locate(text, "/d~1e"), (3, 10));
        // A missing part stops at the deepest existing value.
        assert_eq!(locate(text, "/a/zzz"), (2, 8));
    }
}
