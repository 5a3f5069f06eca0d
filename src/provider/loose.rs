//! `LooseStr`: a string field that may hold anything. Providers and
//! compatible servers disagree on field types; a name that is a number
//! should make one malformed call, not reject the whole response.

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

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LooseStr(None))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        LooseStr::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LooseStr(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LooseStr(None))
    }
}

/// For `Option<Value>` fields: a present `null` is `Some(Null)`, so that
/// "arguments: null" is told apart from "no arguments".
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(deserializer).map(Some)
}
