//! The one-pass path for arguments that come as JSON text (the OpenAI wire format): the text is
//! deserialized straight into the argument type, and each top-level key is checked against the schema's
//! property names as serde reads it — no `serde_json::Value` in between.
//!
//! It only ever says yes: arguments that parse, with no unknown top-level property, for a struct or map
//! type. Anything else — a parse error, an unknown property, a type read another way (an externally tagged
//! enum at the root, say) — returns `None`, and the caller takes the `Value` path, whose checks and error
//! report are the reference. So this path changes what things cost, never what is accepted or what a model
//! is told.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};

/// Deserializes `text` into `A` in one pass; `None` unless that succeeds with every top-level key known
/// (`known` says which are).
pub(crate) fn parse_text<A: DeserializeOwned>(
    text: &str,
    known: &dyn Fn(&str) -> bool,
) -> Option<A> {
    let unknown = Cell::new(false);
    let mut json = serde_json::Deserializer::from_str(text);
    let keys = Keys {
        known,
        unknown: &unknown,
    };
    let parsed = A::deserialize(TopLevel {
        inner: &mut json,
        keys,
    })
    .ok()?;
    json.end().ok()?;
    (!unknown.get()).then_some(parsed)
}

/// What checks the keys, shared by every wrapper below.
#[derive(Clone, Copy)]
struct Keys<'a> {
    known: &'a dyn Fn(&str) -> bool,
    unknown: &'a Cell<bool>,
}

impl Keys<'_> {
    fn check(&self, key: &str) {
        if !(self.known)(key) {
            self.unknown.set(true);
        }
    }
}

/// The text's top-level value: a struct, a map, or anything read through `deserialize_any` (internally
/// tagged and untagged enums, flattened structs) has its map keys checked; every other way of reading it
/// is declined.
struct TopLevel<'a, D> {
    inner: D,
    keys: Keys<'a>,
}

fn declined<E: de::Error>() -> E {
    E::custom("declined by the one-pass path")
}

macro_rules! decline {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? _visitor: V) -> Result<V::Value, D::Error> {
                $($(let _ = $arg;)*)?
                Err(declined())
            }
        )*
    };
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for TopLevel<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(MapKeys {
            inner: visitor,
            keys: self.keys,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(MapKeys {
            inner: visitor,
            keys: self.keys,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            MapKeys {
                inner: visitor,
                keys: self.keys,
            },
        )
    }

    decline! {
        deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64, deserialize_f32,
        deserialize_f64, deserialize_char, deserialize_str, deserialize_string, deserialize_bytes,
        deserialize_byte_buf, deserialize_option, deserialize_unit, deserialize_seq,
        deserialize_identifier, deserialize_ignored_any,
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }
}

/// The visitor of the top-level value: a map's keys go through [`KeySeed`].
struct MapKeys<'a, V> {
    inner: V,
    keys: Keys<'a>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for MapKeys<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.inner.visit_map(CheckedMap {
            inner: map,
            keys: self.keys,
        })
    }
}

struct CheckedMap<'a, M> {
    inner: M,
    keys: Keys<'a>,
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for CheckedMap<'_, M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        self.inner.next_key_seed(KeySeed {
            inner: seed,
            keys: self.keys,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        self.inner.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// Reads one key, seeing its text on the way.
struct KeySeed<'a, S> {
    inner: S,
    keys: Keys<'a>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Key {
            inner: deserializer,
            keys: self.keys,
        })
    }
}

/// A key's deserializer: every way of reading it hands the key's text to [`KeyText`].
struct Key<'a, D> {
    inner: D,
    keys: Keys<'a>,
}

macro_rules! forward_key {
    ($($method:ident $(($($arg:ident: $ty:ty),*))?),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value, D::Error> {
                self.inner.$method($($($arg,)*)? KeyText { inner: visitor, keys: self.keys })
            }
        )*
    };
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for Key<'_, D> {
    type Error = D::Error;

    forward_key! {
        deserialize_any, deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32,
        deserialize_i64, deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64,
        deserialize_f32, deserialize_f64, deserialize_char, deserialize_str, deserialize_string,
        deserialize_bytes, deserialize_byte_buf, deserialize_option, deserialize_unit, deserialize_seq,
        deserialize_map, deserialize_identifier, deserialize_ignored_any,
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }
}

/// Sees a key's text and passes it on. A key read as anything but text (a number key of a map) cannot be
/// checked, so it counts as unknown: the `Value` path decides.
struct KeyText<'a, V> {
    inner: V,
    keys: Keys<'a>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyText<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<V::Value, E> {
        self.keys.check(key);
        self.inner.visit_str(key)
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<V::Value, E> {
        self.keys.check(key);
        self.inner.visit_borrowed_str(key)
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<V::Value, E> {
        self.keys.check(&key);
        self.inner.visit_string(key)
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<V::Value, E> {
        self.keys.check(std::str::from_utf8(key).unwrap_or("\u{0}"));
        self.inner.visit_bytes(key)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, key: &'de [u8]) -> Result<V::Value, E> {
        self.keys.check(std::str::from_utf8(key).unwrap_or("\u{0}"));
        self.inner.visit_borrowed_bytes(key)
    }

    fn visit_u64<E: de::Error>(self, key: u64) -> Result<V::Value, E> {
        self.keys.unknown.set(true);
        self.inner.visit_u64(key)
    }

    fn visit_i64<E: de::Error>(self, key: i64) -> Result<V::Value, E> {
        self.keys.unknown.set(true);
        self.inner.visit_i64(key)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::Value;

    use super::parse_text;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Args {
        city: String,
        days: Option<u8>,
    }

    fn known(key: &str) -> bool {
        matches!(key, "city" | "days")
    }

    #[test]
    fn a_struct_parses_in_one_pass_when_every_key_is_known() {
        assert_eq!(
            parse_text::<Args>(r#"{"city": "Oslo", "days": 2}"#, &known),
            Some(Args {
                city: "Oslo".into(),
                days: Some(2)
            })
        );
    }

    #[test]
    fn an_unknown_key_or_bad_text_declines() {
        assert_eq!(
            parse_text::<Args>(r#"{"city": "Oslo", "citty": 1}"#, &known),
            None
        );
        assert_eq!(
            parse_text::<Args>(r#"{"city": "Oslo"} trailing"#, &known),
            None
        );
        assert_eq!(parse_text::<Args>(r#"{"city": 5}"#, &known), None);
        assert_eq!(parse_text::<Args>(r#"["Oslo", 2]"#, &known), None);
        assert_eq!(parse_text::<Args>("null", &known), None);
    }

    #[test]
    fn keys_of_flattened_and_map_types_are_checked_too() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Flat {
            city: String,
            #[serde(flatten)]
            rest: BTreeMap<String, Value>,
        }
        assert!(parse_text::<Flat>(r#"{"city": "Oslo", "days": 1}"#, &known).is_some());
        assert!(parse_text::<Flat>(r#"{"city": "Oslo", "zzz": 1}"#, &known).is_none());
        assert!(parse_text::<BTreeMap<String, u8>>(r#"{"days": 1}"#, &known).is_some());
        assert!(parse_text::<BTreeMap<String, u8>>(r#"{"zzz": 1}"#, &known).is_none());
    }

    #[test]
    fn an_escaped_key_is_checked_by_its_text() {
        assert!(parse_text::<Args>(r#"{"c\u0069ty": "Oslo"}"#, &known).is_some());
    }
}
