//! Splitting JSON already known to be valid: a list into its elements, an
//! object into its entries, without checking it again.
//!
//! The reader splits a large span through `serde_json` once, which checks
//! every byte of it. A span inside one already checked is split again here,
//! at the speed of finding its quotes: a 200 MB document's list of messages
//! was otherwise scanned byte by byte twice before any message was read.
//!
//! Given text that is not valid JSON, these functions never panic; they may
//! answer `None` or a split that means nothing. What they check is the
//! split itself: the brackets, commas and colons between the parts, the
//! keys (decoded, control characters refused), and nothing but whitespace
//! after the end. So a span whose every part `serde_json` then parses is
//! valid JSON as a whole, and the reader relies on that (see
//! `read::read_document`).

use memchr::memchr;

/// The spans of the elements of the JSON list `raw`, as `serde_json` would
/// give them as raw values (no whitespace around them).
pub(crate) fn list(raw: &str) -> Option<Vec<&str>> {
    let b = raw.as_bytes();
    let (end, items) = list_at(raw, ws(b, 0))?;
    (ws(b, end) == b.len()).then_some(items)
}

/// The elements of the list that starts at `i`, and where it ends.
fn list_at(raw: &str, mut i: usize) -> Option<(usize, Vec<&str>)> {
    let b = raw.as_bytes();
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut items = Vec::new();
    i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some((i + 1, items));
    }
    loop {
        let end = value(b, i)?;
        items.push(raw.get(i..end)?);
        i = ws(b, end);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b']' => return Some((i + 1, items)),
            _ => return None,
        }
    }
}

/// The entries of the JSON object `raw` in order: each key decoded, each
/// value's span as `serde_json` would give it as a raw value. The values
/// that are lists of `min` bytes or more are split on the way, into `lists`
/// (span, elements): a document's messages are split in the same pass that
/// steps over them.
pub(crate) fn entries<'a>(
    raw: &'a str,
    min: usize,
    lists: &mut Vec<(&'a str, Vec<&'a str>)>,
) -> Option<Vec<(String, &'a str)>> {
    let b = raw.as_bytes();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut entries = Vec::new();
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (ws(b, i + 1) == b.len()).then_some(entries);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string(b, i)?;
        let key = raw.get(i..key_end)?;
        // Keys are checked here: nothing parses them later.
        let inner = &key[1..key.len() - 1];
        let key = if inner.contains('\\') {
            serde_json::from_str::<String>(key).ok()?
        } else if inner.bytes().any(|c| c < 0x20) {
            return None;
        } else {
            inner.to_string()
        };
        i = ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let end = match b.get(i)? {
            b'[' => {
                let (end, items) = list_at(raw, i)?;
                if end - i >= min {
                    lists.push((raw.get(i..end)?, items));
                }
                end
            }
            _ => value(b, i)?,
        };
        entries.push((key, raw.get(i..end)?));
        i = ws(b, end);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return (ws(b, i + 1) == b.len()).then_some(entries),
            _ => return None,
        }
    }
}

/// An object's entries: each key decoded, and its value's span.
pub(crate) type Entries<'a> = Vec<(String, &'a str)>;

/// The entries of the JSON object `raw` ([`entries`]) and the elements of
/// the list at `key`, when its value is one (a key said twice is the last
/// one's, as `serde_json` reads it): a request body's keys and messages.
pub(crate) fn entries_and_list<'a>(
    raw: &'a str,
    key: &str,
) -> Option<(Entries<'a>, Option<Vec<&'a str>>)> {
    let mut lists = Vec::new();
    let top = entries(raw, 0, &mut lists)?;
    let list = top
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .and_then(|(_, span)| {
            let at = lists
                .iter()
                .position(|(s, _)| s.as_ptr() == span.as_ptr())?;
            Some(lists.swap_remove(at).1)
        });
    Some((top, list))
}

/// The first offset from `i` that is not JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The end of the value that starts at `i`.
fn value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string(b, i),
        b'{' | b'[' => container(b, i),
        _ => {
            // A number or a literal: up to what may follow a value.
            let len = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

/// The end of the list or object that starts at `i`: brackets counted
/// outside strings.
fn container(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => i = string(b, i)?,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
}

/// The end (after the closing quote) of the string whose opening quote is
/// at `i`. A quote ends it unless an odd number of backslashes comes right
/// before it: quotes are found with `memchr`, and the backslashes of the
/// escapes between them are never looked at.
fn string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let q = j + memchr(b'"', b.get(j..)?)?;
        let backslashes = b[j..q].iter().rev().take_while(|&&c| c == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(q + 1);
        }
        j = q + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{entries, list};
    use proptest::prelude::*;
    use serde_json::value::RawValue;
    use serde_json::Value;

    /// What `serde_json` gives, which is what the reader split before.
    fn serde_list(text: &str) -> Vec<&str> {
        serde_json::from_str::<Vec<&RawValue>>(text)
            .unwrap()
            .into_iter()
            .map(RawValue::get)
            .collect()
    }

    /// The reader's own serde_json split of an object (repeated keys kept).
    fn serde_entries(text: &str) -> Vec<(String, &str)> {
        serde_json::from_str::<crate::format::keys::Entries>(text)
            .unwrap()
            .0
    }

    #[test]
    fn splits_as_serde_json_does() {
        let lists = [
            "[]",
            " [ ] ",
            "[1,2.5e3,-0,true,false,null]",
            "[ \"a\\\"]\" , \"\\\\\" ,\"\\\\\\\"\", {\"k]\":[1,{}]} ,[[]]]",
            "\n[\n  {\"role\": \"user\", \"content\": \"x\\u00e9\\n\"},\n  \"}{][\"\n]\n",
            "[\"é中\",{\"\":\"\"},[{\"a\":[\"\\\\\\\\\"]}]]",
        ];
        for text in lists {
            assert_eq!(list(text).unwrap(), serde_list(text), "{text}");
        }
        let objects = [
            "{}",
            " { } ",
            "{\"a\":1,\"a\":2}",
            "{\"k\\\"\" : [1,\"]\"] , \"\\u00e9\\n\":{\"x\":\"}\"},\"n\":-1.5E+2}",
            "{\n  \"messages\": [\n    {\"role\": \"user\"}\n  ],\n  \"t\": null\n}",
        ];
        for text in objects {
            assert_eq!(
                entries(text, 0, &mut Vec::new()).unwrap(),
                serde_entries(text),
                "{text}"
            );
        }
        // Not a list or an object, or cut short: no answer, no panic.
        for text in [
            "",
            "{",
            "[",
            "[1",
            "[\"a",
            "1",
            "\"x\"",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "[] x",
            "[1],",
            "{} {}",
            "{\"a\u{1}\":1}",
            "{\"a\\q\":1}",
            "{\"a\":1,}",
        ] {
            assert!(list(text).is_none(), "{text}");
            assert!(entries(text, 0, &mut Vec::new()).is_none(), "{text}");
        }
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z\"\\\\\\]\\[{}:, é\\n\\u{1}\\u{2028}]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\]{0,4}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_valid_document_splits_as_serde_json_does(
            items in prop::collection::vec(json(), 0..8),
            pretty in any::<bool>(),
        ) {
            let value = Value::Array(items.clone());
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            prop_assert_eq!(list(&text).unwrap(), serde_list(&text));
            for item in &items {
                let text = if pretty {
                    serde_json::to_string_pretty(item).unwrap()
                } else {
                    serde_json::to_string(item).unwrap()
                };
                if item.is_object() {
                    let mut lists = Vec::new();
                    let split = entries(&text, 0, &mut lists).unwrap();
                    prop_assert_eq!(&split, &serde_entries(&text));
                    // Each list value, split on the way as it splits alone.
                    let values: Vec<&str> = split.iter().map(|(_, v)| *v).filter(|v| v.starts_with('[')).collect();
                    prop_assert_eq!(lists.iter().map(|(span, _)| *span).collect::<Vec<_>>(), values);
                    for (span, items) in &lists {
                        prop_assert_eq!(items, &serde_list(span));
                    }
                }
                if item.is_array() {
                    prop_assert_eq!(list(&text).unwrap(), serde_list(&text));
                }
            }
        }
    }
}
