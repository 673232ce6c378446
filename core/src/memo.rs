//! Values kept by the exact text they were made from, up to a number of
//! bytes: past it, the memo starts again empty. A text is found by its
//! hash and compared byte for byte, never taken for another of the same
//! hash. What is kept, and the lock around it, are the user's: the
//! messages a reader read from a record (`format::Recall`), the values a
//! hold parsed (`inflight::values`), the identities a meter walked
//! (`inflight::cache::Sizes`).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

/// A map hashed with foldhash, seeded per process (keys may be the
/// client's: call ids, texts), for the maps built on every request: the
/// standard library's SipHash was a tenth of a replay's instructions in
/// them.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::quality::RandomState>;

/// A set hashed as [`FastMap`] is.
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::quality::RandomState>;

/// A text (with a tag that tells apart texts read in different ways, 0
/// where there is one way) and what was made from it.
type Kept<T> = (u64, Box<[u8]>, T);

/// Values by their text, up to about `max_bytes`.
pub(crate) struct ByText<T> {
    by_hash: FastMap<u64, Vec<Kept<T>>>,
    bytes: usize,
    max_bytes: usize,
}

impl<T> ByText<T> {
    /// An empty memo of up to about `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> ByText<T> {
        ByText {
            by_hash: FastMap::default(),
            bytes: 0,
            max_bytes,
        }
    }

    /// What was kept for `text` under `tag`.
    pub(crate) fn get_mut(&mut self, tag: u64, text: &[u8]) -> Option<&mut T> {
        let all = self.by_hash.get_mut(&hash_of(tag, text))?;
        all.iter_mut()
            .find(|(t, kept, _)| *t == tag && **kept == *text)
            .map(|(_, _, v)| v)
    }

    /// Keeps `value` for `text` under `tag`, weighing the text and `more`
    /// bytes: not at all when that alone passes the bound; after starting
    /// again empty when the memo would pass it.
    pub(crate) fn insert(&mut self, tag: u64, text: &[u8], value: T, more: usize) {
        let weight = text.len() + more;
        if weight > self.max_bytes {
            return;
        }
        if self.bytes + weight > self.max_bytes {
            self.by_hash.clear();
            self.bytes = 0;
        }
        self.by_hash
            .entry(hash_of(tag, text))
            .or_default()
            .push((tag, text.into(), value));
        self.bytes += weight;
    }

    /// What the texts kept weigh, about.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many texts are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_hash.values().map(Vec::len).sum()
    }
}

fn hash_of(tag: u64, text: &[u8]) -> u64 {
    let mut h = foldhash::fast::FixedState::with_seed(0x5eed).build_hasher();
    h.write_u64(tag);
    h.write(text);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::ByText;

    /// A text is found under its tag only, byte for byte; one that alone
    /// passes the bound is not kept; past the bound the memo starts again.
    #[test]
    fn a_memo_keeps_by_text_within_its_bound() {
        let mut m = ByText::new(100);
        m.insert(0, b"abc", 1, 10);
        m.insert(1, b"abc", 2, 10);
        assert_eq!(m.get_mut(0, b"abc"), Some(&mut 1));
        assert_eq!(m.get_mut(1, b"abc"), Some(&mut 2));
        assert_eq!(m.get_mut(0, b"abd"), None);
        m.insert(0, b"big", 3, 200);
        assert_eq!((m.len(), m.bytes()), (2, 26));
        m.insert(0, b"more", 4, 80);
        assert_eq!((m.len(), m.bytes()), (1, 84));
        assert_eq!(m.get_mut(0, b"abc"), None);
    }
}
