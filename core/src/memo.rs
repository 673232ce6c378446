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
    /// The first text kept under each hash, in the table itself: a look-up
    /// that finds it reads no other allocation before the text.
    by_hash: FastMap<u64, Kept<T>>,
    /// Texts whose hash a text in `by_hash` already had, a few per hash
    /// (the hash is not keyed: a client could choose texts that share one).
    more: FastMap<u64, Vec<Kept<T>>>,
    bytes: usize,
    max_bytes: usize,
}

/// Texts kept at most under one hash besides the first.
const MORE_PER_HASH: usize = 8;

impl<T> ByText<T> {
    /// An empty memo of up to about `max_bytes`.
    pub(crate) fn new(max_bytes: usize) -> ByText<T> {
        ByText {
            by_hash: FastMap::default(),
            more: FastMap::default(),
            bytes: 0,
            max_bytes,
        }
    }

    /// What was kept for `text` under `tag`.
    pub(crate) fn get_mut(&mut self, tag: u64, text: &[u8]) -> Option<&mut T> {
        self.get_at(hash_of(tag, text), tag, text)
    }

    /// [`ByText::get_mut`], the text's hash given.
    fn get_at(&mut self, hash: u64, tag: u64, text: &[u8]) -> Option<&mut T> {
        let same = |(t, kept, _): &&mut Kept<T>| *t == tag && **kept == *text;
        let first = self.by_hash.get_mut(&hash)?;
        if same(&first) {
            return Some(&mut first.2);
        }
        let all = self.more.get_mut(&hash)?;
        all.iter_mut().find(same).map(|(_, _, v)| v)
    }

    /// Keeps `value` for `text` under `tag`, weighing the text and `more`
    /// bytes: not at all when that alone passes the bound, or when its
    /// hash has as many texts as it may; after starting again empty when
    /// the memo would pass the bound.
    pub(crate) fn insert(&mut self, tag: u64, text: &[u8], value: T, more: usize) {
        self.insert_at(hash_of(tag, text), (tag, text), value, more);
    }

    /// [`ByText::insert`], the text's hash given.
    fn insert_at(&mut self, hash: u64, (tag, text): (u64, &[u8]), value: T, more: usize) {
        let weight = text.len() + more;
        if weight > self.max_bytes {
            return;
        }
        if self.bytes + weight > self.max_bytes {
            self.by_hash.clear();
            self.more.clear();
            self.bytes = 0;
        }
        let kept = (tag, text.into(), value);
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(kept);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                let all = self.more.entry(hash).or_default();
                if all.len() >= MORE_PER_HASH {
                    return;
                }
                all.push(kept);
            }
        }
        self.bytes += weight;
    }

    /// What the texts kept weigh, about.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many texts are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_hash.len() + self.more.values().map(Vec::len).sum::<usize>()
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

    /// Texts that share a hash are each found byte for byte, up to
    /// `MORE_PER_HASH` besides the first; past that they are not kept.
    #[test]
    fn texts_of_one_hash_are_told_apart_and_bounded() {
        let mut m = ByText::new(10_000);
        let texts: Vec<String> = (0..12).map(|i| format!("text {i}")).collect();
        for (i, t) in texts.iter().enumerate() {
            m.insert_at(7, (0, t.as_bytes()), i, 0);
        }
        assert_eq!(m.len(), 1 + super::MORE_PER_HASH);
        for (i, t) in texts.iter().enumerate() {
            let want = (i <= super::MORE_PER_HASH).then_some(i);
            assert_eq!(m.get_at(7, 0, t.as_bytes()).copied(), want, "{t}");
            assert_eq!(m.get_at(7, 1, t.as_bytes()), None, "{t} under another tag");
        }
        assert_eq!(m.get_at(8, 0, texts[0].as_bytes()), None);
        m.insert_at(9, (0, b"big"), 99, 9_990);
        assert_eq!(m.get_at(7, 0, texts[3].as_bytes()), None, "started again");
        assert_eq!(m.len(), 1);
    }
}
