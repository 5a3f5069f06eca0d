//! Input files opened as regular files and read as JSON, with errors
//! located by line, column and pointer.

use std::io;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::locate;
use crate::pointer::{Located, Pointer};

/// Something wrong with an input file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}:{line}:{column}: not valid JSON: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}{}: {}: {message}", path.display(), location(*line, *column), if pointer.is_root() { "/" } else { pointer.as_str() })]
    Shape {
        path: PathBuf,
        /// Where the offending value is.
        pointer: Pointer,
        /// 0 when the position is unknown.
        line: usize,
        column: usize,
        message: String,
    },
}

fn location(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}:{column}")
    }
}

impl FileError {
    /// A value of the wrong shape at `pointer` in `text`, the file's JSON.
    pub fn shape_in(
        path: &Path,
        text: &[u8],
        pointer: &Pointer,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = locate(&String::from_utf8_lossy(text), pointer.as_str());
        FileError::Shape {
            path: path.to_owned(),
            pointer: pointer.clone(),
            line,
            column,
            message: message.into(),
        }
    }

    /// A value of the wrong shape where no line is known.
    pub fn shape(path: &Path, pointer: &Pointer, message: impl Into<String>) -> Self {
        FileError::Shape {
            path: path.to_owned(),
            pointer: pointer.clone(),
            line: 0,
            column: 0,
            message: message.into(),
        }
    }
}

/// The largest input file read: past it, a file is refused, not read.
pub const INPUT_LIMIT: u64 = 512 * 1024 * 1024;

/// Every input file is opened here: a regular file (a FIFO would block
/// for ever, a device never end), of at most [`INPUT_LIMIT`] bytes.
/// Opened without blocking, so that a FIFO is seen for what it is, not
/// waited on (for a regular file the flag changes nothing).
pub fn open_input(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = regular(&file)?;
    if meta.len() > INPUT_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it holds {} bytes, over the {} MiB an input file may hold",
                meta.len(),
                INPUT_LIMIT >> 20
            ),
        ));
    }
    Ok(file)
}

/// A file of a run folder (trials.csv, session.jsonl, batches.jsonl),
/// opened to read as an input is: a regular file, never waited on as a
/// FIFO would be, and in the folder itself: a link at its name (which
/// could lead out of the folder) is refused. Of any size: a run's log
/// grows with the run.
pub fn open_run_file(path: &Path) -> io::Result<std::fs::File> {
    open_in_run_folder(std::fs::OpenOptions::new().read(true), path)
}

/// A run folder's file opened with `options` (to read, or to append, as
/// the batch ledger is): never through a link at its name, never waited
/// on as a FIFO, and only if it is a regular file.
pub fn open_in_run_folder(
    options: &mut std::fs::OpenOptions,
    path: &Path,
) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it is a symbolic link: a run folder's files are read and written only in the folder itself",
                )
            } else {
                e
            }
        })?;
    regular(&file)?;
    Ok(file)
}

/// `file`'s metadata, if it is a regular file; else why it is refused.
fn regular(file: &std::fs::File) -> io::Result<std::fs::Metadata> {
    use std::os::unix::fs::FileTypeExt as _;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a folder")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    };
    if let Some(what) = what {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}; give a regular file"),
        ));
    }
    Ok(meta)
}

/// An input file's bytes, opened by [`open_input`].
pub fn read_input(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = open_input(path)?;
    let mut bytes = Vec::new();
    // A file that grows while read stops at the limit all the same.
    file.take(INPUT_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > INPUT_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it grew past the {} MiB an input file may hold",
                INPUT_LIMIT >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// [`read_input`] as text; bytes that are not UTF-8 are an error.
pub fn read_input_text(path: &Path) -> io::Result<String> {
    String::from_utf8(read_input(path)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Read and deserialize a JSON file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, FileError> {
    let bytes = read_input(path).map_err(|source| FileError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_json(path, &bytes)
}

/// Deserialize JSON bytes that came from `path` (used in messages). A
/// byte order mark and a key given twice in one object are errors: JSON
/// parsers differ on both, and a duplicate silently drops a value.
pub fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, FileError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(FileError::Syntax {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: "the file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 \
                      without a BOM"
                .to_owned(),
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize::<_, UniqueKeys>(&mut deserializer).map_err(|error| {
        let pointer = pointer_of(error.path());
        located(path, pointer, &error.into_inner())
    })?;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let pointer = pointer_of(error.path());
        located(path, pointer, &error.into_inner())
    })?;
    deserializer
        .end()
        .map_err(|error| located(path, Pointer::root(), &error))?;
    Ok(value)
}

fn located(path: &Path, pointer: Pointer, error: &serde_json::Error) -> FileError {
    let (line, column) = (error.line(), error.column());
    let message = in_json_words(&strip_position(&error.to_string()));
    if error.is_syntax() || error.is_eof() {
        FileError::Syntax {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    } else {
        FileError::Shape {
            path: path.to_owned(),
            pointer,
            line,
            column,
            message,
        }
    }
}

/// Deserialize an in-memory value (borrowed: a caller may still need it
/// to word an error).
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, Located> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        Located::new(
            pointer_of(error.path()),
            in_json_words(&error.into_inner().to_string()),
        )
    })
}

/// serde's message with Rust's type names in JSON's words: `expected
/// u64` reads `expected a whole number >= 0`.
pub fn in_json_words(message: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        ("expected u64", "expected a whole number >= 0"),
        ("expected u32", "expected a whole number >= 0"),
        ("expected u16", "expected a whole number >= 0"),
        ("expected u8", "expected a whole number >= 0"),
        ("expected usize", "expected a whole number >= 0"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected an object"),
        ("invalid type: map", "invalid type: object"),
    ];
    let mut text = message.to_owned();
    for (rust, json) in WORDS {
        text = text.replace(rust, json);
    }
    if let Some(at) = text.find("expected struct ") {
        let end = text[at + 16..]
            .find(|c: char| !c.is_alphanumeric() && c != '_')
            .map_or(text.len(), |e| at + 16 + e);
        text.replace_range(at..end, "expected an object");
    }
    text.replace("invalid type: sequence", "invalid type: array")
}

/// serde_path_to_error's path as an RFC 6901 JSON pointer.
fn pointer_of(path: &serde_path_to_error::Path) -> Pointer {
    use serde_path_to_error::Segment;
    path.iter()
        .fold(Pointer::root(), |pointer, segment| match segment {
            Segment::Seq { index } => pointer.index(*index),
            Segment::Map { key } | Segment::Enum { variant: key } => pointer.key(key),
            Segment::Unknown => pointer.key("?"),
        })
}

/// Walks a JSON document and fails on the first object that has a key
/// twice, at that key's value (so the error has its pointer and place).
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return map.next_value_seed(Duplicate(key)).map(|_| UniqueKeys);
            }
            map.next_value::<UniqueKeys>()?;
            seen.insert(key);
        }
        Ok(UniqueKeys)
    }
}

/// The value of a key seen before: an error, raised where the value is.
struct Duplicate(String);

impl<'de> serde::de::DeserializeSeed<'de> for Duplicate {
    type Value = UniqueKeys;

    fn deserialize<D: serde::Deserializer<'de>>(self, _: D) -> Result<UniqueKeys, D::Error> {
        Err(serde::de::Error::custom(format!(
            "the key {:?} is given twice in this object; keep one",
            self.0
        )))
    }
}

/// serde_json appends " at line L column C"; we print the position ourselves.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        count: u32,
    }

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let error = parse_json::<Value>(Path::new("x.json"), b"{\n  \"a\": [1,\n}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "x.json:3:1: not valid JSON: expected value"
        );
    }

    #[test]
    fn shape_errors_name_the_pointer() {
        let text = b"{\"items\": [{\"count\": 1}, {\"cuont\": 2}]}";
        let error = parse_json::<Doc>(Path::new("d.json"), text).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("d.json:1:33: /items/1/cuont: unknown field `cuont`"),
            "{message}"
        );
    }

    #[test]
    fn a_byte_order_mark_is_named_as_such() {
        let error = parse_json::<Value>(Path::new("b.json"), b"\xEF\xBB\xBF{}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "b.json:1:1: not valid JSON: the file starts with a UTF-8 byte order mark (BOM); \
             save it as UTF-8 without a BOM"
        );
    }

    #[test]
    fn a_key_given_twice_is_an_error_at_its_second_value() {
        let text = b"{\"items\": [{\"count\": 1,\n \"count\": 2}]}";
        let error = parse_json::<Value>(Path::new("d.json"), text).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with(
                "d.json:2:10: /items/0/count: the key \"count\" is given twice in this object"
            ),
            "{message}"
        );
        // The same key in two objects is fine.
        parse_json::<Value>(Path::new("ok.json"), b"[{\"a\": 1}, {\"a\": 2}]").unwrap();
    }

    #[test]
    fn trailing_garbage_is_a_syntax_error() {
        let error = parse_json::<Value>(Path::new("t.json"), b"{} x").unwrap_err();
        assert!(
            matches!(
                error,
                FileError::Syntax {
                    line: 1,
                    column: 4,
                    ..
                }
            ),
            "{error}"
        );
    }
}
