//! Messages' values parsed before, by their exact text.
//!
//! A hold keeps what it forwarded as text ([`super::holds`]'s `Packed`),
//! and a conversation cleaned again is read back from the body written:
//! each request, its messages were parsed from text again, though most are
//! the ones of the request before. `replay` runs dozens of recipes' holds
//! over each call of a session (`--suggest`), and gives each a
//! [`ValueMemo`], so that a message's text is parsed once. The proxy gives
//! none: its memory is bounded by what its holds keep.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::memo::ByText;

/// Values parsed from text, by the text, up to a number of bytes (past it,
/// it starts again).
pub struct ValueMemo {
    inner: Mutex<ByText<Parsed>>,
}

/// A text's value, and the value's hash once asked for.
struct Parsed {
    value: Arc<Value>,
    hash: Option<u64>,
}

impl ValueMemo {
    /// A memo of values parsed from texts up to about `max_bytes` together
    /// (each counted at three times its text).
    pub fn new(max_bytes: usize) -> ValueMemo {
        ValueMemo {
            inner: Mutex::new(ByText::new(max_bytes)),
        }
    }

    /// The value of the JSON text `text`: parsed, or copied from the one
    /// parsed from the same text before. `None` when it is not JSON.
    pub(crate) fn value(&self, text: &[u8]) -> Option<Value> {
        self.with(text, |p| Value::clone(&p.value))
    }

    /// The value of the JSON text `text`, shared with the memo (not
    /// copied). `None` when it is not JSON.
    pub(crate) fn shared(&self, text: &[u8]) -> Option<Arc<Value>> {
        self.with(text, |p| Arc::clone(&p.value))
    }

    /// `f` of the value of the JSON text `text`, parsed or found: the value
    /// is not copied. `None` when it is not JSON.
    pub(crate) fn map<R>(&self, text: &[u8], f: impl FnOnce(&Value) -> R) -> Option<R> {
        self.with(text, |p| f(&p.value))
    }

    /// `hash` of the value of the JSON text `text`, computed once for the
    /// text: the value is not copied.
    pub(crate) fn hash(&self, text: &[u8], hash: impl Fn(&Value) -> u64) -> Option<u64> {
        self.with(text, |p| *p.hash.get_or_insert_with(|| hash(&p.value)))
    }

    /// `f` of the entry of `text`, parsed and put in the memo first when it
    /// is not there (nor kept, past the bound).
    fn with<R>(&self, text: &[u8], f: impl FnOnce(&mut Parsed) -> R) -> Option<R> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = inner.get_mut(0, text) {
            return Some(f(p));
        }
        let mut parsed = Parsed {
            value: Arc::new(serde_json::from_slice(text).ok()?),
            hash: None,
        };
        let out = f(&mut parsed);
        inner.insert(0, text, parsed, 2 * text.len() + 64);
        Some(out)
    }
}

/// The value of `text`, through `memo` when there is one.
pub(crate) fn parse(memo: Option<&ValueMemo>, text: &[u8]) -> Option<Value> {
    match memo {
        Some(m) => m.value(text),
        None => serde_json::from_slice(text).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same text gives the same value, from the memo or parsed; a text
    /// that is not JSON gives none; past its bound the memo starts again.
    #[test]
    fn a_memo_gives_what_parsing_gives() {
        let memo = ValueMemo::new(200);
        let texts: [&[u8]; 4] = [
            br#"{"a":1.0,"b":[true,null]}"#,
            b"\"x\\u0062\"",
            b"{",
            b"1e5",
        ];
        let len = |v: &Value| v.to_string().len() as u64;
        for _ in 0..3 {
            for t in texts {
                let parsed = serde_json::from_slice::<Value>(t).ok();
                assert_eq!(memo.hash(t, len), parsed.as_ref().map(len));
                assert_eq!(memo.value(t), parsed);
            }
        }
        let inner = memo.inner.lock().unwrap();
        assert!(inner.bytes() <= 200 && inner.len() > 0);
        drop(inner);
        let small = ValueMemo::new(10);
        assert_eq!(small.value(b"[1,2,3]"), Some(serde_json::json!([1, 2, 3])));
        assert!(small.inner.lock().unwrap().len() == 0);
    }
}
