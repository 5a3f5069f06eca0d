//! A call's arguments: always a JSON object, its members in the order the
//! model wrote them. They are held as a list of members (keys of up to 24
//! bytes inline, values as `serde_json::Value`s), read as they arrive by
//! the hot stages (the quick check, the built-in tools, Record); a
//! `serde_json::Value` of the whole object is made only when something
//! asks for one (the general validator, BFCL's checker, the matchers).
//! Building a map per call (two allocations and every key hashed) was most
//! of what Parse cost.

use std::fmt;
use std::sync::OnceLock;

use compact_str::CompactString;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Number, Value};

use crate::json_writer::{write_separated, write_str, write_value};

/// Up to this many members, a key written twice is found by comparing the
/// keys one by one; past it, through a map.
const LINEAR_MEMBERS: usize = 32;

/// A call's arguments. Equal arguments have the same members, in any order
/// (as JSON objects compare).
#[derive(Clone, Default)]
pub struct Arguments {
    members: Vec<(CompactString, Value)>,
    /// The whole object, made on first ask (boxed: arguments are moved
    /// often, and asked for whole seldom).
    whole: OnceLock<Box<Value>>,
}

impl Arguments {
    /// The arguments of `members`.
    pub fn from_map(members: Map<String, Value>) -> Self {
        Arguments {
            members: members
                .into_iter()
                .map(|(key, member)| (CompactString::from(key), member))
                .collect(),
            whole: OnceLock::new(),
        }
    }

    /// The members, in the order sent.
    pub fn members(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.members
            .iter()
            .map(|(key, member)| (key.as_str(), member))
    }

    /// The member called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.members
            .iter()
            .find(|(key, _)| crate::json_eq::str_eq(key, name))
            .map(|(_, member)| member)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The object as one JSON value, made on first ask: for what reads
    /// values whole (the general validator, BFCL's checker, the argument
    /// matchers).
    pub fn as_value(&self) -> &Value {
        self.whole.get_or_init(|| {
            Box::new(Value::Object(
                self.members
                    .iter()
                    .map(|(key, member)| (key.to_string(), member.clone()))
                    .collect(),
            ))
        })
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        self.as_value()
            .as_object()
            .expect("arguments are an object")
    }

    /// Append the object as compact JSON text, members in order.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        write_separated(out, &self.members, |out, (key, member)| {
            write_str(out, key);
            out.push(b':');
            write_value(out, member);
        });
        out.push(b'}');
    }
}

/// A JSON object is arguments; any other value comes back as the error.
impl TryFrom<Value> for Arguments {
    type Error = Value;

    fn try_from(value: Value) -> Result<Self, Value> {
        match value {
            Value::Object(members) => Ok(Arguments::from_map(members)),
            other => Err(other),
        }
    }
}

impl PartialEq for Arguments {
    fn eq(&self, other: &Arguments) -> bool {
        self.len() == other.len()
            && self
                .members()
                .all(|(key, member)| other.get(key) == Some(member))
    }
}

/// Arguments equal the JSON object of the same members (what tests write).
impl PartialEq<Value> for Arguments {
    fn eq(&self, other: &Value) -> bool {
        other.as_object().is_some_and(|object| {
            object.len() == self.len()
                && self
                    .members()
                    .all(|(key, member)| object.get(key) == Some(member))
        })
    }
}

/// The JSON text, compact, members in order.
impl fmt::Display for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::new();
        self.write_json(&mut text);
        f.write_str(std::str::from_utf8(&text).expect("JSON text is UTF-8"))
    }
}

impl fmt::Debug for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Arguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (key, member) in self.members() {
            map.serialize_entry(key, member)?;
        }
        map.end()
    }
}

/// Arguments as a model sent them: an object, read straight into
/// [`Arguments`], or any other JSON value, which Parse refuses (boxed, so
/// that the usual case stays small to move).
#[derive(Debug)]
pub enum SentArguments {
    Object(Arguments),
    Other(Box<Value>),
}

impl SentArguments {
    fn other(value: Value) -> Self {
        SentArguments::Other(Box::new(value))
    }
}

/// A value already read: an object is arguments.
impl From<Value> for SentArguments {
    fn from(value: Value) -> Self {
        match Arguments::try_from(value) {
            Ok(arguments) => SentArguments::Object(arguments),
            Err(other) => SentArguments::other(other),
        }
    }
}

impl<'de> Deserialize<'de> for SentArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SentVisitor)
    }
}

struct SentVisitor;

impl<'de> Visitor<'de> for SentVisitor {
    type Value = SentArguments;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<SentArguments, E> {
        Ok(SentArguments::other(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<SentArguments, E> {
        Ok(SentArguments::other(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<SentArguments, D::Error> {
        SentArguments::deserialize(inner)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<SentArguments, E> {
        Ok(SentArguments::other(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SentArguments, E> {
        Ok(SentArguments::other(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SentArguments, E> {
        Ok(SentArguments::other(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SentArguments, E> {
        Ok(SentArguments::other(
            Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SentArguments, E> {
        Ok(SentArguments::other(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<SentArguments, E> {
        Ok(SentArguments::other(Value::String(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SentArguments, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(SentArguments::other(Value::Array(items)))
    }

    /// A key written twice keeps its first place and its last value, as
    /// serde_json's map does.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SentArguments, A::Error> {
        let mut members: Vec<(CompactString, Value)> =
            Vec::with_capacity(map.size_hint().unwrap_or(4).min(LINEAR_MEMBERS));
        while let Some(key) = map.next_key::<CompactString>()? {
            let member: Value = map.next_value()?;
            if let Some(earlier) = members.iter_mut().find(|(known, _)| *known == key) {
                earlier.1 = member;
            } else if members.len() < LINEAR_MEMBERS {
                members.push((key, member));
            } else {
                return many_members(members, key, member, map);
            }
        }
        Ok(SentArguments::Object(Arguments {
            members,
            whole: OnceLock::new(),
        }))
    }
}

/// The rest of an object too large to look keys up one by one: read into
/// a map, which keeps the order and finds a key written twice.
fn many_members<'de, A: MapAccess<'de>>(
    members: Vec<(CompactString, Value)>,
    key: CompactString,
    member: Value,
    mut map: A,
) -> Result<SentArguments, A::Error> {
    let mut object: Map<String, Value> = members
        .into_iter()
        .map(|(key, member)| (key.into_string(), member))
        .collect();
    object.insert(key.into_string(), member);
    while let Some((key, member)) = map.next_entry::<String, Value>()? {
        object.insert(key, member);
    }
    Ok(SentArguments::Object(Arguments::from_map(object)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(text: &str) -> SentArguments {
        serde_json::from_str(text).unwrap()
    }

    fn object(text: &str) -> Arguments {
        match sent(text) {
            SentArguments::Object(arguments) => arguments,
            SentArguments::Other(other) => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn members_keep_the_order_sent_in_text_and_in_the_whole_value() {
        let arguments = object(r#"{"b":1,"a":{"y":2,"x":[3]},"c":"text"}"#);
        assert_eq!(
            arguments.to_string(),
            r#"{"b":1,"a":{"y":2,"x":[3]},"c":"text"}"#
        );
        assert_eq!(
            serde_json::to_string(arguments.as_value()).unwrap(),
            r#"{"b":1,"a":{"y":2,"x":[3]},"c":"text"}"#
        );
        assert_eq!(
            serde_json::to_string(&arguments).unwrap(),
            arguments.to_string()
        );
        assert_eq!(arguments.get("a"), Some(&json!({"x": [3], "y": 2})));
        assert_eq!(arguments.get("missing"), None);
    }

    #[test]
    fn a_key_written_twice_keeps_its_first_place_and_last_value_as_serde_json_does() {
        for count in [3, LINEAR_MEMBERS + 5] {
            let mut text = String::from("{\"twice\":1");
            for i in 0..count {
                text.push_str(&format!(",\"k{i}\":{i}"));
            }
            text.push_str(",\"twice\":2}");
            let arguments = object(&text);
            let expected: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(arguments.len(), count + 1);
            assert_eq!(
                arguments.to_string(),
                expected.to_string(),
                "{count} members"
            );
            assert_eq!(arguments.get("twice"), Some(&json!(2)));
        }
    }

    #[test]
    fn anything_but_an_object_is_sent_back_as_the_value_it_is() {
        for text in [
            "[1,{\"a\":2}]",
            "\"text\"",
            "null",
            "true",
            "-1",
            "1.5",
            "18446744073709551615",
        ] {
            match sent(text) {
                SentArguments::Other(other) => {
                    assert_eq!(
                        *other,
                        serde_json::from_str::<Value>(text).unwrap(),
                        "{text}"
                    )
                }
                SentArguments::Object(arguments) => panic!("{text} read as {arguments}"),
            }
        }
    }

    #[test]
    fn arguments_compare_as_json_objects_do_in_any_order() {
        let arguments = object(r#"{"a":1,"b":[2]}"#);
        assert_eq!(arguments, object(r#"{"b":[2],"a":1}"#));
        assert_eq!(arguments, json!({"b": [2], "a": 1}));
        assert_ne!(arguments, object(r#"{"a":1}"#));
        assert_ne!(arguments, json!({"a": 1, "b": [3]}));
        assert_ne!(arguments, json!([1]));
        assert_eq!(
            Arguments::try_from(json!({"a": 1, "b": [2]})).unwrap(),
            arguments
        );
        assert_eq!(Arguments::try_from(json!(3)).unwrap_err(), json!(3));
    }
}
