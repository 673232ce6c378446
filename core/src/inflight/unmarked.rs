//! A value's identity without its `cache_control` markers, and the markers
//! themselves: from a value already parsed, or straight from its JSON text
//! with no value built (a request's history is walked on every request,
//! and building it was most of what metering a request cost).
//!
//! Both walks feed a hasher the same stream, so a unit's identity is the
//! same whichever way it was found: a tag per kind, a string's bytes, a
//! number as written, and an end for every list and object.

use std::hash::{Hash, Hasher};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A marker's life without a `ttl` of its own, in seconds.
pub(super) const FIVE_MINUTES: f64 = 300.0;

/// The key `serde_json` (with `arbitrary_precision`) gives a number as.
const NUMBER_KEY: &str = "$serde_json::private::Number";

const NULL: u8 = 0;
const BOOL: u8 = 1;
const NUMBER: u8 = 2;
const STRING: u8 = 3;
const LIST: u8 = 4;
const OBJECT: u8 = 5;
const LIST_END: u8 = 0xf4;
const OBJECT_END: u8 = 0xf5;

/// The key every identity of a process is hashed with (the holds' and the
/// meter's alike), drawn once per process.
pub(crate) fn seed() -> &'static foldhash::quality::RandomState {
    static SEED: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(Default::default)
}

/// A string as [`hash_unmarked`] feeds it.
pub(crate) fn hash_str(s: &str, h: &mut impl Hasher) {
    h.write_u8(STRING);
    s.hash(h);
}

/// Feeds a value to a hasher without its `cache_control` markers: two
/// values that differ only in where a breakpoint sits hash alike.
pub(crate) fn hash_unmarked(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(NULL),
        Value::Bool(b) => {
            h.write_u8(BOOL);
            h.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            h.write_u8(NUMBER);
            n.as_str().hash(h);
        }
        Value::String(s) => hash_str(s, h),
        Value::Array(items) => {
            h.write_u8(LIST);
            items.iter().for_each(|i| hash_unmarked(i, h));
            h.write_u8(LIST_END);
        }
        Value::Object(map) => {
            h.write_u8(OBJECT);
            for (k, v) in map.iter().filter(|(k, _)| *k != "cache_control") {
                k.as_str().hash(h);
                hash_unmarked(v, h);
            }
            h.write_u8(OBJECT_END);
        }
    }
}

/// The JSON text `raw` fed to `h` as [`hash_unmarked`] feeds its value,
/// and the longest lifetime a marker inside it asks for (as [`marker`]);
/// `None` when it is not JSON.
pub(crate) fn walk_text(raw: &str, h: &mut impl Hasher) -> Option<Option<f64>> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let marker = Walk(h).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(marker)
}

/// `v` without its `cache_control` markers (a copy only when it has one).
pub(crate) fn unmarked(v: &Value) -> std::borrow::Cow<'_, Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.shift_remove("cache_control");
                m.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if marker(v).is_none() {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut owned = v.clone();
    strip(&mut owned);
    std::borrow::Cow::Owned(owned)
}

/// The longest lifetime a marker inside `v` asks for, if it has one.
pub(crate) fn marker(v: &Value) -> Option<f64> {
    match v {
        Value::Array(items) => items.iter().filter_map(marker).reduce(f64::max),
        Value::Object(map) => {
            let own = marker_ttl(crate::json::get(map, "cache_control"));
            let inner = map
                .iter()
                .filter(|(k, _)| *k != "cache_control")
                .filter_map(|(_, v)| marker(v))
                .reduce(f64::max);
            own.into_iter().chain(inner).reduce(f64::max)
        }
        _ => None,
    }
}

/// A marker's lifetime in seconds: an hour with `ttl: "1h"`, else five
/// minutes; `None` for no marker (absent or `null`).
pub(crate) fn marker_ttl(marker: Option<&Value>) -> Option<f64> {
    let m = marker.filter(|m| !m.is_null())?;
    Some(if m.get("ttl").and_then(Value::as_str) == Some("1h") {
        3600.0
    } else {
        FIVE_MINUTES
    })
}

fn longer(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// Walks one JSON value into the hasher; gives its marker.
struct Walk<'h, H>(&'h mut H);

impl<'de, H: Hasher> DeserializeSeed<'de> for Walk<'_, H> {
    type Value = Option<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, H: Hasher> Visitor<'de> for Walk<'_, H> {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Option<f64>, E> {
        self.0.write_u8(NULL);
        Ok(None)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Option<f64>, E> {
        self.0.write_u8(BOOL);
        self.0.write_u8(u8::from(b));
        Ok(None)
    }
    // With `arbitrary_precision` numbers come as a map (below); these are
    // what a number is without it, written as `serde_json` writes it.
    fn visit_u64<E>(self, n: u64) -> Result<Option<f64>, E> {
        self.number(&n.to_string())
    }
    fn visit_i64<E>(self, n: i64) -> Result<Option<f64>, E> {
        self.number(&n.to_string())
    }
    fn visit_f64<E>(self, n: f64) -> Result<Option<f64>, E> {
        let n = serde_json::Number::from_f64(n);
        match n {
            Some(n) => self.number(n.as_str()),
            None => {
                self.0.write_u8(NULL);
                Ok(None)
            }
        }
    }
    fn visit_str<E>(self, s: &str) -> Result<Option<f64>, E> {
        hash_str(s, self.0);
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<f64>, A::Error> {
        self.0.write_u8(LIST);
        let mut marker = None;
        while let Some(m) = seq.next_element_seed(Walk(&mut *self.0))? {
            marker = longer(marker, m);
        }
        self.0.write_u8(LIST_END);
        Ok(marker)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<f64>, A::Error> {
        let mut marker = None;
        let mut first = true;
        while let Some(key) = map.next_key_seed(KeyOf(&mut *self.0, first))? {
            match key {
                Key::Number => {
                    let digits: String = map.next_value()?;
                    return self.number(&digits);
                }
                Key::Marker => {
                    let m: Value = map.next_value()?;
                    marker = longer(marker, marker_ttl(Some(&m)));
                }
                Key::Other => marker = longer(marker, map.next_value_seed(Walk(&mut *self.0))?),
            }
            first = false;
        }
        if first {
            self.0.write_u8(OBJECT);
        }
        self.0.write_u8(OBJECT_END);
        Ok(marker)
    }
}

impl<H: Hasher> Walk<'_, H> {
    fn number<E>(self, digits: &str) -> Result<Option<f64>, E> {
        self.0.write_u8(NUMBER);
        digits.hash(self.0);
        Ok(None)
    }
}

/// What an object's key is: a number's (the map `serde_json` hands one
/// over as), a marker, or another, fed to the hasher (after the object's
/// tag, when it is the first).
enum Key {
    Number,
    Marker,
    Other,
}

struct KeyOf<'h, H>(&'h mut H, bool);

impl<'de, H: Hasher> DeserializeSeed<'de> for KeyOf<'_, H> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, H: Hasher> Visitor<'de> for KeyOf<'_, H> {
    type Value = Key;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object's key")
    }
    fn visit_str<E>(self, k: &str) -> Result<Key, E> {
        let KeyOf(h, first) = self;
        if first && k == NUMBER_KEY {
            return Ok(Key::Number);
        }
        if first {
            h.write_u8(OBJECT);
        }
        if k == "cache_control" {
            return Ok(Key::Marker);
        }
        k.hash(h);
        Ok(Key::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(text: &str) -> (u64, Option<f64>, u64, Option<f64>) {
        let mut a = std::collections::hash_map::DefaultHasher::new();
        let m = walk_text(text, &mut a).unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        let mut b = std::collections::hash_map::DefaultHasher::new();
        hash_unmarked(&v, &mut b);
        (a.finish(), m, b.finish(), marker(&v))
    }

    /// The text walked and the value parsed hash alike, markers left out
    /// and read, whatever the spelling.
    #[test]
    fn text_and_value_hash_alike() {
        for text in [
            r#"{"role":"user","content":[{"type":"text","text":"a\"b\u00e9","cache_control":{"type":"ephemeral","ttl":"1h"}}]}"#,
            r#"[1, -2.50, 1e400, 123456789012345678901234567890, true, false, null, "", {}, []]"#,
            r#"{"a": {"b": [{"cache_control": null, "c": 0}]}, "cache_control": {"type": "ephemeral"}}"#,
            r#""just a string""#,
            "17",
        ] {
            let (a, ma, b, mb) = hashes(text);
            assert_eq!(a, b, "{text}");
            assert_eq!(ma, mb, "{text}");
        }
        // Spelling does not matter; content and markers' places do not
        // either; content does.
        let h = |t: &str| hashes(t).0;
        assert_eq!(h(r#"{"a":"x"}"#), h("{ \"a\" : \"\\u0078\" }"));
        assert_eq!(
            h(r#"{"a":"x","cache_control":{"type":"ephemeral"}}"#),
            h(r#"{"a":"x"}"#)
        );
        assert_ne!(h(r#"{"a":"x"}"#), h(r#"{"a":"y"}"#));
        assert_ne!(h(r#"[[1],2]"#), h(r#"[[1,2]]"#));
        assert_ne!(h(r#"{}"#), h(r#"[]"#));
        assert_ne!(h(r#"{"a":{}}"#), h(r#"{"a":[]}"#));
        assert!(walk_text(
            "{\"a\":",
            &mut std::collections::hash_map::DefaultHasher::new()
        )
        .is_none());
    }
}
