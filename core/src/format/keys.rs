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
    duplicate_outside(text, &[])
}

/// [`duplicate`], the objects at the spans `known` (in order, apart, each
/// from its `{` to its `}`) stepped over: they are known to hold no key
/// twice (records recalled, checked when first read).
pub(crate) fn duplicate_outside<'a>(
    text: &'a str,
    known: &[std::ops::Range<usize>],
) -> Option<(usize, &'a str)> {
    let b = text.as_bytes();
    let mut open = Open::default();
    let mut known = known.iter().peekable();
    let mut pos = 0;
    loop {
        let quote = pos + memchr::memchr(b'"', &b[pos..])?;
        while known.next_if(|k| k.start < pos).is_some() {}
        if let Some(k) = known.next_if(|k| k.start < quote) {
            debug_assert!(b[k.start] == b'{' && b[k.end - 1] == b'}');
            open.structure(&b[pos..k.start]);
            // A whole object: what is open around it is as it was.
            open.expect_key = false;
            pos = k.end;
            continue;
        }
        open.structure(&b[pos..quote]);
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
        if open.expect_key {
            let key = &text[quote + 1..end];
            if open.is_repeated(key) {
                return Some((quote, key));
            }
            open.expect_key = false;
        }
        pos = end + 1;
        if pos >= b.len() {
            return None;
        }
    }
}

/// Objects with many keys are checked through a set (kept per open
/// object, made when it passes `MANY` keys), so the pass stays linear.
const MANY: usize = 64;

/// The containers open at a point of [`duplicate_outside`]'s pass.
#[derive(Default)]
struct Open<'a> {
    /// The keys of the open objects, one after another.
    keys: Vec<&'a str>,
    /// Per open container, where its keys start (`None` for an array).
    open: Vec<Option<usize>>,
    /// The sets of the open objects past `MANY` keys, by depth.
    sets: Vec<(usize, std::collections::HashSet<&'a str>)>,
    expect_key: bool,
}

impl<'a> Open<'a> {
    /// Steps over text outside strings.
    fn structure(&mut self, text: &[u8]) {
        for &c in text {
            match c {
                b'{' => {
                    self.open.push(Some(self.keys.len()));
                    self.expect_key = true;
                }
                b'[' => {
                    self.open.push(None);
                    self.expect_key = false;
                }
                b'}' | b']' => {
                    if let Some(Some(start)) = self.open.pop() {
                        self.keys.truncate(start);
                        if self
                            .sets
                            .last()
                            .is_some_and(|(depth, _)| *depth > self.open.len())
                        {
                            self.sets.pop();
                        }
                    }
                    self.expect_key = false;
                }
                b',' => self.expect_key = matches!(self.open.last(), Some(Some(_))),
                _ => {}
            }
        }
    }

    /// Whether the innermost open object held `key` already (it holds it
    /// from now on).
    fn is_repeated(&mut self, key: &'a str) -> bool {
        let Some(&Some(start)) = self.open.last() else {
            return false;
        };
        let depth = self.open.len();
        match self.sets.last_mut() {
            Some((d, set)) if *d == depth => !set.insert(key),
            _ => {
                if self.keys[start..].contains(&key) {
                    return true;
                }
                self.keys.push(key);
                if self.keys.len() - start > MANY {
                    self.sets
                        .push((depth, self.keys[start..].iter().copied().collect()));
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{duplicate, duplicate_outside};

    /// The objects at the spans given are stepped over; a key twice
    /// anywhere else is found, around them and after them, as without them.
    #[test]
    fn a_key_twice_is_found_outside_the_objects_known() {
        let text = r#"{"m":[{"a":1,"a":2},{"b":{"c":1}}],"x":1,"m":2}"#;
        let first = text.find("{\"a\"").unwrap();
        let second = text.find("{\"b\"").unwrap();
        let spans = [first..first + 13, second..second + 13];
        assert_eq!(&text[spans[0].clone()], r#"{"a":1,"a":2}"#);
        assert_eq!(&text[spans[1].clone()], r#"{"b":{"c":1}}"#);
        assert_eq!(duplicate(text).map(|d| d.1), Some("a"));
        let (at, key) = duplicate_outside(text, &spans).unwrap();
        assert_eq!((key, &text[at..at + 3]), ("m", "\"m\""));
        assert!(at > spans[1].end);
        // Spans that start before where the pass is are passed by.
        let nested = [first..first + 13, first + 1..first + 4];
        assert_eq!(duplicate_outside(text, &nested).map(|d| d.1), Some("m"));
        let clean = r#"[{"a":1,"a":2},{"a":1}]"#;
        let (first, second) = (1..14, 15..22);
        assert_eq!(duplicate_outside(clean, std::slice::from_ref(&first)), None);
        let found = duplicate_outside(clean, std::slice::from_ref(&second));
        assert_eq!(found.map(|d| d.1), Some("a"));
    }

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
