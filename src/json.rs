//! JSON read as the readers need it: an object's map built with room for
//! exactly its keys. The ground floor: it imports nothing of the crate.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

/// The JSON object `text` holds, if it holds one.
pub(crate) fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match parse_exact(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// A JSON value; an object is built with room for exactly its keys (see
/// [`Exact`]).
pub(crate) fn parse_exact(text: &str) -> serde_json::Result<Value> {
    if text.trim_start().starts_with('{') {
        from_str::<Exact>(text).map(|o| Value::Object(o.0))
    } else {
        from_str(text)
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
