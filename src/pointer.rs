//! Where something is in a JSON document: [`Pointer`], an RFC 6901 JSON
//! pointer built a segment at a time (the escaping of `~` and `/` is
//! written here once), and [`Located`], a problem at a pointer.

use std::borrow::Cow;
use std::fmt;

/// An RFC 6901 JSON pointer: `""` is the whole document, `/tools/0/name`
/// a value inside it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pointer(String);

impl Pointer {
    /// The whole document.
    pub const fn root() -> Pointer {
        Pointer(String::new())
    }

    /// A pointer already written out (`/task/answer`), as given.
    pub fn at(text: impl Into<String>) -> Pointer {
        Pointer(text.into())
    }

    /// The value under `key` of the object here.
    pub fn key(mut self, key: &str) -> Pointer {
        let key = segment(key);
        // One allocation: a pointer is often cloned just to be extended.
        self.0.reserve_exact(1 + key.len());
        self.0.push('/');
        self.0.push_str(&key);
        self
    }

    /// Item `index` of the array here.
    pub fn index(mut self, index: usize) -> Pointer {
        use fmt::Write as _;
        let _ = write!(self.0, "/{index}");
        self
    }

    /// `tail`, read from here.
    pub fn join(mut self, tail: &Pointer) -> Pointer {
        self.0.push_str(&tail.0);
        self
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The value that holds this one (the root's is the root).
    pub fn parent(&self) -> Pointer {
        Pointer(
            self.0
                .rsplit_once('/')
                .map_or("", |(parent, _)| parent)
                .to_owned(),
        )
    }

    /// The key or index of its last segment, unescaped (none at the root).
    pub fn last(&self) -> Option<String> {
        self.0
            .rsplit_once('/')
            .map(|(_, last)| key_of(last).into_owned())
    }

    /// The keys and indexes it names, unescaped.
    pub fn segments(&self) -> impl Iterator<Item = String> + '_ {
        self.0.split('/').skip(1).map(|s| key_of(s).into_owned())
    }
}

impl serde::Serialize for Pointer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A key as one segment of a JSON pointer (`~` is `~0`, `/` is `~1`);
/// borrowed when it needs neither.
pub fn segment(key: &str) -> Cow<'_, str> {
    if key.bytes().any(|b| b == b'~' || b == b'/') {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}

/// The key a segment names: [`segment`] undone; borrowed when it needed
/// no escape.
pub fn key_of(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// A problem at a place in a JSON value: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct Located {
    pub pointer: Pointer,
    pub message: String,
}

impl Located {
    pub fn new(pointer: Pointer, message: impl Into<String>) -> Located {
        Located {
            pointer,
            message: message.into(),
        }
    }

    /// A problem of the whole value (its place given by the caller).
    pub fn here(message: impl Into<String>) -> Located {
        Located::new(Pointer::root(), message)
    }

    /// The same problem, seen from a document that holds this value at
    /// `prefix`.
    pub fn under(self, prefix: &Pointer) -> Located {
        Located {
            pointer: prefix.clone().join(&self.pointer),
            message: self.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_with_slashes_and_tildes_round_trip_through_a_pointer() {
        let pointer = Pointer::root().key("a/b").index(2).key("~c");
        assert_eq!(pointer.as_str(), "/a~1b/2/~0c");
        let keys: Vec<String> = pointer.segments().collect();
        assert_eq!(keys, ["a/b", "2", "~c"]);
    }

    #[test]
    fn segments_escape_and_unescape_as_rfc_6901_says() {
        assert_eq!(segment("a/b~c"), "a~1b~0c");
        assert_eq!(key_of("a~1b~0c"), "a/b~c");
        // "~01" is "~1" escaped, not "/".
        assert_eq!(key_of(&segment("~1")), "~1");
        assert!(matches!(segment("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_problem_seen_from_the_outer_document_has_the_whole_pointer() {
        let inner = Located::new(Pointer::root().key("x"), "bad");
        let outer = inner.under(&Pointer::at("/tools/3"));
        assert_eq!(outer.to_string(), "/tools/3/x: bad");
    }
}
