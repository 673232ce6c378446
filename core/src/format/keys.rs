//! Duplicate keys. JSON parsers disagree on an object with a key twice
//! (`serde_json` and Python's `json` keep the last value, others the
//! first), so a transcript with `"messages"` twice has no one meaning:
//! reading it is an error that names the key and where it is. Here too,
//! an object's entries read in order with their values unparsed
//! ([`Entries`]), a key given twice kept twice: the reader and the list
//! splitter both walk objects so.

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// An object's entries in order, values left unparsed (a key given twice
/// is kept twice).
pub(crate) struct Entries<'a>(pub(crate) Vec<(String, &'a str)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'a>, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    entries.push((k, v.get()));
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// The first key that an object holds twice, with its byte offset in
/// `text`: one pass, strings found with `memchr`.
pub(crate) fn duplicate(text: &str) -> Option<(usize, &str)> {
    let b = text.as_bytes();
    // The keys of the open objects, one after another; per open container,
    // where its keys start (`None` for an array).
    let mut keys: Vec<&str> = Vec::new();
    let mut open: Vec<Option<usize>> = Vec::new();
    // Objects with many keys are checked through a set (kept per open
    // object, made when it passes `MANY` keys), so the pass stays linear.
    const MANY: usize = 64;
    let mut sets: Vec<(usize, std::collections::HashSet<&str>)> = Vec::new();
    let mut expect_key = false;
    let mut pos = 0;
    loop {
        let quote = pos + memchr::memchr(b'"', &b[pos..])?;
        for &c in &b[pos..quote] {
            match c {
                b'{' => {
                    open.push(Some(keys.len()));
                    expect_key = true;
                }
                b'[' => {
                    open.push(None);
                    expect_key = false;
                }
                b'}' | b']' => {
                    if let Some(Some(start)) = open.pop() {
                        keys.truncate(start);
                        if sets.last().is_some_and(|(depth, _)| *depth > open.len()) {
                            sets.pop();
                        }
                    }
                    expect_key = false;
                }
                b',' => expect_key = matches!(open.last(), Some(Some(_))),
                _ => {}
            }
        }
        // The string's end: the next quote not escaped, that is, not
        // after an odd number of backslashes (escapes between quotes are
        // never stopped at: `\u` escapes fill whole texts).
        let mut end = quote + 1;
        loop {
            end += memchr::memchr(b'"', b.get(end..)?)?;
            let backslashes = b[quote + 1..end]
                .iter()
                .rev()
                .take_while(|&&c| c == b'\\')
                .count();
            if backslashes % 2 == 0 {
                break;
            }
            end += 1;
        }
        if expect_key {
            let key = &text[quote + 1..end];
            if let Some(&Some(start)) = open.last() {
                let depth = open.len();
                match sets.last_mut() {
                    Some((d, set)) if *d == depth => {
                        if !set.insert(key) {
                            return Some((quote, key));
                        }
                    }
                    _ => {
                        if keys[start..].contains(&key) {
                            return Some((quote, key));
                        }
                        keys.push(key);
                        if keys.len() - start > MANY {
                            sets.push((depth, keys[start..].iter().copied().collect()));
                        }
                    }
                }
            }
            expect_key = false;
        }
        pos = end + 1;
        if pos >= b.len() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::duplicate;

    #[test]
    fn finds_a_key_given_twice_in_one_object() {
        let text =
            r#"{"messages":[{"role":"user","content":"a"}],"x":{"messages":1},"messages":[]}"#;
        let (at, key) = duplicate(text).unwrap();
        assert_eq!(key, "messages");
        assert_eq!(&text[at..at + 10], "\"messages\"");
        assert!(at > 50);
        // The same key in different objects, values that look like keys,
        // escaped quotes: no duplicate.
        assert!(duplicate(r#"[{"a":1},{"a":2}]"#).is_none());
        assert!(duplicate(r#"{"a":"a","b":["a","a"],"c":{"a":{"a":1}}}"#).is_none());
        assert!(duplicate(r#"{"a\"b":1,"a":"x\\","b":2}"#).is_none());
        assert_eq!(duplicate(r#"{"a":{"b":1,"b":2}}"#).map(|d| d.1), Some("b"));
        assert!(duplicate("").is_none() && duplicate("{").is_none() && duplicate("\"").is_none());
        // Many keys: through a set, and still found.
        let many: Vec<String> = (0..500).map(|i| format!("\"k{i}\":{i}")).collect();
        let text = format!(
            "{{\"o\":{{{}}},\"p\":{{{},\"k3\":0}}}}",
            many.join(","),
            many.join(",")
        );
        let (_, key) = duplicate(&text).unwrap();
        assert_eq!(key, "k3");
        let text = format!(
            "{{\"o\":{{{}}},\"p\":{{{}}}}}",
            many.join(","),
            many.join(",")
        );
        assert!(duplicate(&text).is_none());
    }
}
