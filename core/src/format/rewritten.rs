//! Records rewritten, remembered by what they were rewritten from: a
//! record as read and the messages written into it. A recipe applied to
//! each request of a conversation rewrites the same old records on every
//! one (each result `compact-tools` replaced, call after call), and each
//! rewrite parsed the record's text again to write its other keys back.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Format;
use crate::memo::ByText;
use crate::transcript::{Fields, Message};

/// What the records a thread remembers weigh at most, with their keys:
/// the proxy's cleaning workers each keep theirs.
const MAX_BYTES: usize = 8 << 20;

/// What a record was rewritten as, and its text as `serde_json` writes it
/// when that was asked for: `None` when it came out as it was read.
type Rewritten = Option<(Arc<Value>, Written)>;

/// A record's text as `serde_json` writes it, when asked for.
pub(super) type Written = Option<Arc<str>>;

thread_local! {
    static REWRITTEN: std::cell::RefCell<ByText<Rewritten>> =
        std::cell::RefCell::new(ByText::new(MAX_BYTES));
}

/// The key of a record as read (`original`, its text) rewritten in
/// `format` from `group`, its messages (all of them, `whole`): the text,
/// then of each message everything a writer reads of it. The typed fields
/// go in as their digest (keyed per process: two different states share
/// one with a chance of about 2^-64, as the writer's own test of a message
/// left untouched assumes). `None` when the record is not held as its text,
/// or a message's other keys are not the record's own.
pub(super) fn key(
    format: Format,
    original: &Fields,
    group: &[&Message],
    whole: bool,
) -> Option<(u64, Vec<u8>)> {
    let text = original.span_text()?;
    let mut key = Vec::with_capacity(text.len() + 80 * group.len() + 8);
    key.extend_from_slice(text.as_bytes());
    for m in group {
        if !m.fields.shares(original) {
            return None;
        }
        let origin = m.origin.as_ref();
        let numbers = [
            m.typed_digest(),
            origin.map_or(u64::MAX, |o| o.index as u64),
            origin.map_or(u64::MAX, |o| o.line as u64),
            origin.and_then(|o| o.record).map_or(u64::MAX, |r| r as u64),
            origin.map_or(u64::MAX, |o| o.sub as u64),
            origin.map_or(0, |o| o.seal),
            m.anchor
                .map_or(u64::MAX, |a| a.map_or(u64::MAX - 1, |r| r as u64)),
        ];
        for n in numbers {
            key.extend_from_slice(&n.to_le_bytes());
        }
        key.extend_from_slice(&m.minted.unwrap_or_default());
        key.push(u8::from(m.minted.is_some()));
    }
    key.extend_from_slice(&(group.len() as u64).to_le_bytes());
    let tag = format as u64 | u64::from(whole) << 32;
    Some((tag, key))
}

/// What the record of `key` was rewritten as, when it was.
pub(super) fn recalled((tag, key): &(u64, Vec<u8>)) -> Option<Rewritten> {
    REWRITTEN.with(|m| m.borrow_mut().get_mut(*tag, key).cloned())
}

/// Remembers what the record of `key` was rewritten as, with its text.
pub(super) fn remember((tag, key): (u64, Vec<u8>), rewritten: Option<(&Arc<Value>, Written)>) {
    // A map weighs about twice its text; its keys and values, a few words
    // each; and the text written, as it is.
    let weight = rewritten.as_ref().map_or(0, |(v, text)| {
        let m = v.as_object().map_or(0, |m| 64 * m.len() + 2 * text_len(m));
        m + text.as_ref().map_or(0, |t| t.len())
    });
    let kept = rewritten.map(|(v, text)| (Arc::clone(v), text));
    REWRITTEN.with(|m| m.borrow_mut().insert(tag, &key, kept, weight));
}

/// The length of the texts an object holds, about.
fn text_len(map: &Map<String, Value>) -> usize {
    map.iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    Value::String(s) => s.len(),
                    Value::Null | Value::Bool(_) | Value::Number(_) => 8,
                    other => other.to_string().len(),
                }
        })
        .sum()
}
