//! Records read before, by their exact text.
//!
//! A reader given a [`Recall`] (see [`super::ReadOptions::recall`]) reads a
//! record whose text, in the same format, it read before by copying the
//! messages it read from it then, instead of parsing it again. `replay`
//! reads every call's request, and every recipe's body read back to check
//! it: each mostly the records of the call before, so that reading them
//! again grew with the square of a session's length.
//!
//! Only what a record's text alone decides is recalled: the messages a
//! dialect reads from it and their seals. What depends on where the record
//! sits (its origin: index, line, record) is set as on any read, and what
//! depends on the other records (pairing, notes, checks) is done after, on
//! every read. A record's text is compared byte for byte, never by its hash
//! alone.

use std::sync::{Mutex, MutexGuard};

use super::Format;
use crate::memo::ByText;
use crate::transcript::{Fields, Message};

/// Records read before, by format and text, up to a number of bytes (past
/// it, it starts again). Shared between threads.
pub struct Recall {
    max_bytes: usize,
    inner: Mutex<Inner>,
}

/// What a [`Recall`] holds.
pub(crate) struct Inner {
    /// By the record's format (its tag) and text: the messages read.
    records: ByText<Vec<Recalled>>,
    hits: u64,
}

/// A message read from a record, as the dialect read it.
struct Recalled {
    /// With its fields emptied when they were the record's own (`record`).
    message: Message,
    /// Whether the message's fields are the record's object itself: then
    /// they are the record as it lies in the text being read.
    record: bool,
    /// Its origin's seal (see [`crate::transcript::Origin::seal`]).
    seal: u64,
}

impl Recall {
    /// A recall of records up to about `max_bytes` (their texts and what was
    /// read from them).
    pub fn new(max_bytes: usize) -> Recall {
        Recall {
            max_bytes,
            inner: Mutex::new(Inner {
                records: ByText::new(max_bytes),
                hits: 0,
            }),
        }
    }

    /// How many records were read from it instead of parsed.
    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A reader that panicked left nothing half made: an entry is put
        // whole or not at all.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Recall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("Recall")
            .field("max_bytes", &self.max_bytes)
            .field("bytes", &inner.records.bytes())
            .field("hits", &inner.hits)
            .finish()
    }
}

/// A format as a memo's tag.
fn tag(format: Format) -> u64 {
    format as u64
}

impl Inner {
    /// The messages read from `text` before, in `format`, with `rec` (the
    /// record as it lies in the text being read, made only for a record
    /// recalled) as the fields of those that were the record's own; their
    /// seals beside them.
    pub(crate) fn get(
        &mut self,
        format: Format,
        text: &str,
        rec: impl FnOnce() -> Fields,
    ) -> Option<(Fields, Vec<(Message, u64)>)> {
        let messages = self.records.get_mut(tag(format), text.as_bytes())?;
        let rec = rec();
        let out = messages
            .iter()
            .map(|r| {
                let mut m = r.message.clone();
                if r.record {
                    m.fields = rec.clone();
                }
                (m, r.seal)
            })
            .collect();
        self.hits += 1;
        Some((rec, out))
    }

    /// Remembers the messages read from `text` in `format` (as they were
    /// pushed: their seals set), `rec` being the record's own fields.
    pub(crate) fn put(&mut self, format: Format, text: &str, rec: &Fields, messages: &[Message]) {
        let more = text.len() + 256 * (messages.len() + 1);
        let messages = messages
            .iter()
            .map(|m| {
                let record = m.fields.shares(rec);
                let mut message = m.clone();
                if record {
                    // Not the text being read: it would keep it alive.
                    message.fields = Fields::new();
                }
                let seal = message.origin.take().map_or(0, |o| o.seal);
                Recalled {
                    message,
                    record,
                    seal,
                }
            })
            .collect();
        self.records
            .insert(tag(format), text.as_bytes(), messages, more);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use super::Recall;
    use crate::format::{read_document, write_document, Document, Format, ReadOptions};

    use crate::testing::fixture_files;

    fn read(
        bytes: &[u8],
        from: Option<Format>,
        recall: Option<&Arc<Recall>>,
    ) -> Result<Document, String> {
        let opts = ReadOptions {
            from,
            recall: recall.cloned(),
            ..ReadOptions::default()
        };
        read_document("t", bytes.to_vec(), &opts)
            .map_err(|e| format!("{}:{:?} {}", e.line, e.column, e.message))
    }

    /// What a reader gives: the messages (origins and seals included) and
    /// the document written back, or the error.
    fn outcome(
        doc: Result<Document, String>,
    ) -> Result<(Vec<crate::transcript::Message>, Vec<u8>), String> {
        let doc = doc?;
        let messages = doc
            .conversations
            .iter()
            .flat_map(|c| c.messages.clone())
            .collect();
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        Ok((messages, out))
    }

    /// The body with its list's first item taken out: the same records at
    /// other places.
    fn shifted(bytes: &[u8], format: Format) -> Option<Vec<u8>> {
        let mut body: serde_json::Map<String, Value> = serde_json::from_slice(bytes).ok()?;
        let list = body.get_mut(format.list_key())?.as_array_mut()?;
        if list.len() < 2 {
            return None;
        }
        list.remove(0);
        serde_json::to_vec(&body).ok()
    }

    /// Read with records recalled, every fixture reads as it does parsed:
    /// read again (every record recalled), its list shifted by one (the
    /// same records at other indices and origins), as detected and in each
    /// request format; the same messages, origins and seals, the same
    /// document written back, or the same error.
    #[test]
    fn records_recalled_read_as_records_parsed() {
        let mut hits = 0;
        let mut compared = 0;
        for path in fixture_files() {
            let bytes = std::fs::read(&path).unwrap();
            let froms = std::iter::once(None).chain(Format::REQUEST.map(Some));
            for from in froms {
                let name = format!("{} as {from:?}", path.display());
                let recall = Arc::new(Recall::new(1 << 30));
                let plain = outcome(read(&bytes, from, None));
                for _ in 0..2 {
                    assert!(
                        outcome(read(&bytes, from, Some(&recall))) == plain,
                        "{name}"
                    );
                    compared += 1;
                }
                if let Some(other) = from.and_then(|f| shifted(&bytes, f)) {
                    let plain = outcome(read(&other, from, None));
                    assert!(
                        outcome(read(&other, from, Some(&recall))) == plain,
                        "{name}, shifted"
                    );
                    compared += 1;
                }
                hits += recall.hits();
            }
        }
        assert!(
            compared > 1000 && hits > 5_000,
            "{compared} reads, {hits} records recalled"
        );
    }

    /// A record that holds a key twice is never remembered: a read that
    /// meets it again fails again, naming the key (a record recalled is
    /// not looked at for one).
    #[test]
    fn a_record_with_a_key_twice_is_never_recalled() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}"#;
        let recall = Arc::new(Recall::new(1 << 20));
        for _ in 0..2 {
            let error = read(body, Some(Format::OpenAi), Some(&recall)).unwrap_err();
            assert!(error.contains("content"), "{error}");
        }
        assert_eq!((recall.hits(), recall.lock().records.len()), (0, 0));
        let good = br#"{"model":"m","messages":[{"role":"user","content":"a"}]}"#;
        for _ in 0..2 {
            read(good, Some(Format::OpenAi), Some(&recall)).unwrap();
        }
        assert_eq!(recall.hits(), 1);
    }

    /// Past its bound it starts again, and a record larger than the bound
    /// is never held.
    #[test]
    fn a_recall_holds_what_its_bound_allows() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hello there"},{"role":"assistant","content":"hi"}]}"#;
        let small = Arc::new(Recall::new(16));
        read(body, Some(Format::OpenAi), Some(&small)).unwrap();
        read(body, Some(Format::OpenAi), Some(&small)).unwrap();
        assert_eq!(small.hits(), 0);
        assert_eq!(small.lock().records.bytes(), 0);
        // Each record weighs about 600: the second puts the first out.
        let one = Arc::new(Recall::new(700));
        for _ in 0..3 {
            read(body, Some(Format::OpenAi), Some(&one)).unwrap();
        }
        assert!(one.lock().records.bytes() <= 700);
        assert_eq!(one.lock().records.len(), 1);
    }
}
