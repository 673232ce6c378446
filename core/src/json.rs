//! JSON read as the readers need it: an object's map built with room for
//! exactly its keys. The ground floor: it imports nothing of the crate.

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Objects of at most this many keys are searched in order by [`get`].
const SCANNED: usize = 8;

/// A key's value in an object. One of a few keys (a message, a call, a
/// part) is found by comparing the keys in order: `Map::get` hashes the key
/// with SipHash first, serde_json's hasher, and that was a twentieth of a
/// replay's instructions.
#[inline]
pub(crate) fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= SCANNED {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// A key's value in `v` when it is an object, found as [`get`] finds it.
#[inline]
pub(crate) fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|map| get(map, key))
}

/// The JSON object `text` holds, if it holds one.
pub(crate) fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match parse_exact(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// A JSON value; an object is built with room for exactly its keys (see
/// [`Exact`]).
pub fn parse_exact(text: &str) -> serde_json::Result<Value> {
    if text.trim_start().starts_with('{') {
        from_str::<Exact>(text).map(|o| Value::Object(o.0))
    } else {
        from_str(text)
    }
}

/// Like [`parse_exact`], but an object that holds a key twice, at any
/// depth, is an error ([`is_duplicate`]); the caller finds which key and
/// where (`format::keys::duplicate`). One pass, where parsing and then
/// looking for duplicates took two.
pub(crate) fn parse_unique(text: &str) -> serde_json::Result<Value> {
    from_str::<Unique>(text).map(|u| u.0)
}

/// Whether `e` is [`parse_unique`]'s error for a key repeated.
pub(crate) fn is_duplicate(e: &serde_json::Error) -> bool {
    e.is_data() && e.to_string().starts_with(DUPLICATE)
}

/// The error [`Unique`] stops at.
const DUPLICATE: &str = "an object holds a key twice";

/// The key `serde_json` (with `arbitrary_precision`) gives a number as.
const NUMBER_KEY: &str = "$serde_json::private::Number";

/// A JSON value built as `serde_json::Value` builds it, but failing on an
/// object holding a key twice; objects are built with room for exactly
/// their keys (see [`Exact`]).
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Unique::deserialize(d).map(|u| u.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Unique(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Ok(Value::Object(Map::new()));
        };
        if first == NUMBER_KEY {
            // A number, as `arbitrary_precision` hands it over.
            let digits: String = map.next_value()?;
            return digits.parse().map(Value::Number).map_err(A::Error::custom);
        }
        let Unique(value) = map.next_value()?;
        let mut entries: Vec<(String, Value)> = Vec::with_capacity(8);
        entries.push((first, value));
        while let Some((k, Unique(v))) = map.next_entry()? {
            entries.push((k, v));
        }
        let n = entries.len();
        let mut out = Map::with_capacity(n);
        out.extend(entries);
        if out.len() < n {
            return Err(A::Error::custom(DUPLICATE));
        }
        Ok(Value::Object(out))
    }
}

thread_local! {
    /// Whether the document being read on this thread may nest deeper than
    /// `serde_json`'s limit (see [`deep`]).
    static DEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with parsing on this thread free of `serde_json`'s nesting
/// limit when `deep` (a recursive LibreChat export the reader has bounded),
/// on a stack that grows as deep as the document is.
pub(crate) fn deep<R>(deep: bool, f: impl FnOnce() -> R) -> R {
    let was = DEEP.with(|d| d.replace(deep));
    let out = f();
    DEEP.with(|d| d.set(was));
    out
}

/// `serde_json::from_str`, without the nesting limit inside [`deep`].
pub(crate) fn from_str<'a, T: Deserialize<'a>>(raw: &'a str) -> serde_json::Result<T> {
    if !DEEP.with(std::cell::Cell::get) {
        return serde_json::from_str(raw);
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    de.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A JSON object whose map holds exactly its keys: a record of a large
/// document is one of millions, and a map grown key by key keeps room for
/// more (an OpenAI message of two keys kept three entries' room).
struct Exact(Map<String, Value>);

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Exact;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Exact, A::Error> {
                let mut entries: Vec<(String, Value)> = Vec::with_capacity(8);
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                let mut out = Map::with_capacity(entries.len());
                // A repeated key keeps its first place and its last value,
                // as serde_json's own map does.
                out.extend(entries);
                Ok(Exact(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    /// `get` and `field` find what `Map::get` finds, in objects scanned in
    /// order and in larger ones, present keys and absent ones.
    #[test]
    fn a_key_is_found_as_the_map_finds_it() {
        for n in [0, 1, 2, super::SCANNED, super::SCANNED + 1, 40] {
            let map: Map<String, Value> =
                (0..n).map(|i| (format!("k{i}"), Value::from(i))).collect();
            let keys = (0..n + 2).map(|i| format!("k{i}"));
            for key in keys.chain(["".to_string(), "k".to_string()]) {
                assert_eq!(super::get(&map, &key), map.get(&key), "{n} keys, {key:?}");
                let v = Value::Object(map.clone());
                assert_eq!(super::field(&v, &key), map.get(&key), "{n} keys, {key:?}");
            }
        }
        assert_eq!(super::field(&Value::from("k0"), "k0"), None);
    }
}
