//! Fields read loosely: `LooseStr` (a string), `LooseCount` (a token count)
//! and `Loose<T>` (an object of known fields) each take any JSON value and
//! make the ones of another type nothing. Providers and compatible servers
//! disagree on field types; a name that is a number should make one
//! malformed call, and a usage block of an odd shape no count, not reject
//! the whole response.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// `Some` for a JSON string (borrowed when it has no escapes), `None` for
/// any other value or an absent field.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct LooseStr<'a>(pub Option<Cow<'a, str>>);

impl LooseStr<'_> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }

    pub(crate) fn is(&self, expected: &str) -> bool {
        self.as_deref() == Some(expected)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LooseStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseStrVisitor(std::marker::PhantomData))
    }
}

/// A result's text: a JSON string as [`LooseStr`] reads it, or, in an
/// array of content parts (a result that carries images), the first
/// part's `"text"`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct LooseText<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LooseText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Shape<'a> {
            Parts(Vec<Part<'a>>),
            Other(#[serde(borrow)] LooseStr<'a>),
        }
        #[derive(serde::Deserialize)]
        struct Part<'a> {
            #[serde(borrow, default)]
            text: LooseStr<'a>,
        }
        Ok(LooseText(match Shape::deserialize(deserializer)? {
            Shape::Parts(parts) => parts.into_iter().find_map(|p| p.text.0),
            Shape::Other(text) => text.0,
        }))
    }
}

/// The visits of a loose visitor that make a value of another type
/// nothing (`$none`): scalars, and arrays and objects read past.
macro_rules! other_types_are {
    ($none:expr; $($scalar:ident: $ty:ty),*) => {
        $(fn $scalar<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok($none)
        })*

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

/// The same, objects included.
macro_rules! other_types_and_objects_are {
    ($none:expr; $($scalar:ident: $ty:ty),*) => {
        other_types_are!($none; $($scalar: $ty),*);

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($none)
        }
    };
}

struct LooseStrVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for LooseStrVisitor<'a> {
    type Value = LooseStr<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(LooseStr(Some(Cow::Borrowed(v))))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(LooseStr(Some(Cow::Owned(v.to_owned()))))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(LooseStr(Some(Cow::Owned(v))))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        LooseStr::deserialize(d)
    }

    other_types_and_objects_are!(LooseStr(None);
        visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
}

/// A count: a JSON integer of at least 0, or 0 for any other value (a
/// negative or fractional number, a string) or an absent field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LooseCount(pub u64);

impl<'de> Deserialize<'de> for LooseCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseCountVisitor)
    }
}

struct LooseCountVisitor;

impl<'de> Visitor<'de> for LooseCountVisitor {
    type Value = LooseCount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(LooseCount(v))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        LooseCount::deserialize(d)
    }

    other_types_and_objects_are!(LooseCount(0);
        visit_bool: bool, visit_i64: i64, visit_f64: f64, visit_str: &str);
}

/// An object read into `T` (whose fields should be loose themselves), or
/// `T::default()` for any other value or an absent field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loose<T>(pub T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseVisitor(std::marker::PhantomData))
    }
}

struct LooseVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for LooseVisitor<T> {
    type Value = Loose<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Loose)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Loose::deserialize(d)
    }

    other_types_are!(Loose(T::default());
        visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
}

/// For optional fields of any JSON value: a present `null` is
/// `Some(null)`, so that "arguments: null" is told apart from "no
/// arguments".
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}
