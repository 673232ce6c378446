//! The vocabularies of `o200k_base`, `cl100k_base`, `p50k_base` and
//! `r50k_base` (`vocab/`, see its SOURCES.md) as tables laid out at
//! compile time (see `build.rs`) and read in place: counting a short text
//! builds nothing, where loading `bpe-openai`'s vocabulary takes about
//! 40 ms and 70 MB (issue 43). They are the only vocabularies in the
//! binary; `tiktoken-rs`, which counts the same, is the tests' oracle
//! (`tokens::vocab_tests`, `tokens::legacy_tests`), and `bpe-openai` the
//! speed `bench/count/` compares with.
//!
//! A pre-tokenized piece is counted by tiktoken's own byte-pair merge: the
//! piece is one token when it is in the vocabulary; else, starting from
//! its bytes, the adjacent pair of lowest rank is merged (the leftmost
//! first) until no pair is a token. Written as tiktoken writes it, the
//! merge is quadratic in the piece: up to [`MAX_PIECE`] bytes it is merged
//! so, on the stack; up to [`HEAP_MAX`] in the same order with its pairs in
//! a heap (`count_long`, O(n log n)); beyond, by `bpe`'s linear encoder
//! over a dictionary made from the table. A long piece made of runs of one
//! byte (a line of `=`, brackets a thousand deep, base64's runs of `A`),
//! whatever its length, is merged over its runs instead ([`runs`]): the
//! same merges, in time that grows with its runs, not its bytes.
//!
//! A merge is look-ups, and a look-up's cost is the memory it reads: the
//! table of a vocabulary is 4 to 7 MB, so a read of it is a cache miss.
//! A pair of bytes, where every merge starts, is read from a table of
//! 65,536 ranks (256 KiB); longer bytes first from a filter of one bit per
//! token (256 KiB), which tells most bytes that are no token so, as most
//! of a merge's longer look-ups are (a piece of base64 is mostly tokens of
//! one and two bytes); a token of 12 bytes or fewer is then known from its
//! slot, one read. Before (2026-11-30, one process per side, medians of 5
//! to 11 interleaved rounds): base64 counted at 12–13 MB/s, slower than
//! `bpe-openai`; after, 31–37 (with `tokens`' short pieces merged again
//! rather than remembered; see docs/benchmarks.md).

use std::sync::OnceLock;

mod runs;

include!("vocab_hash.rs");
include!("vocab_slot.rs");

static O200K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.vocab"));
static CL100K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.vocab"));
static P50K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/p50k_base.vocab"));
static R50K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/r50k_base.vocab"));

/// Pieces at most this long are merged as tiktoken writes it; longer ones
/// through a heap.
pub(crate) const MAX_PIECE: usize = 256;

/// Pieces longer than this (1 MiB), but for runs of one byte (see
/// [`runs`]), are counted by `bpe`'s encoder, linear
/// in the piece (the heap's O(n log n) took 8.6 s for 20 MB of one letter,
/// about 0.45 s a MiB), over a dictionary made from the table on the first
/// such piece (a second or so for o200k_base: below a MiB the heap costs
/// less).
const HEAP_MAX: usize = 1 << 20;

/// One vocabulary's table.
#[derive(Clone, Copy)]
pub(crate) struct Vocab {
    /// Which of the four tables (for its linear encoder).
    id: usize,
    /// The rank of each two bytes (`u32::MAX` for none).
    pairs: &'static [u8],
    /// A bit for each token (see `vocab_slot.rs`).
    filter: &'static [u8],
    slots: &'static [u8],
    offsets: &'static [u8],
    blob: &'static [u8],
    mask: usize,
}

fn word(bytes: &[u8], i: usize) -> u32 {
    let at = 4 * i;
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

impl Vocab {
    /// `cl100k_base`'s table, else `o200k_base`'s.
    pub(crate) fn of(cl100k: bool) -> Vocab {
        if cl100k {
            Vocab::table(1, CL100K)
        } else {
            Vocab::table(0, O200K)
        }
    }

    /// `p50k_base`'s table, else `r50k_base`'s.
    pub(crate) fn gpt2(p50k: bool) -> Vocab {
        if p50k {
            Vocab::table(2, P50K)
        } else {
            Vocab::table(3, R50K)
        }
    }

    fn table(id: usize, t: &'static [u8]) -> Vocab {
        let (log2, ranks) = (word(t, 0) as usize, word(t, 1) as usize);
        let pairs_end = 8 + 4 * (1 << 16);
        let filter_end = pairs_end + FILTER_BITS / 8;
        let slots_end = filter_end + 16 * (1 << log2);
        let offsets_end = slots_end + 4 * (ranks + 1);
        Vocab {
            id,
            pairs: &t[8..pairs_end],
            filter: &t[pairs_end..filter_end],
            slots: &t[filter_end..slots_end],
            offsets: &t[slots_end..offsets_end],
            blob: &t[offsets_end..],
            mask: (1 << log2) - 1,
        }
    }

    /// The rank of a token's bytes; `u32::MAX` when they are not a token.
    /// A slot tells its token's length and first 12 bytes: only a longer
    /// token that matches both is compared in full.
    pub(crate) fn rank(&self, bytes: &[u8]) -> u32 {
        if let [a, b] = *bytes {
            return word(self.pairs, usize::from(a) << 8 | usize::from(b));
        }
        let hash = vocab_hash(bytes);
        let bit = filter_bit(hash);
        if self.filter[bit / 8] & (1 << (bit % 8)) == 0 {
            return u32::MAX;
        }
        let key = key_of(bytes);
        let mut i = hash as usize & self.mask;
        loop {
            let at = 16 * i;
            let slot = u128::from_le_bytes(
                self.slots[at..at + 16]
                    .try_into()
                    .expect("a slot is 16 bytes"),
            );
            if slot == 0 {
                return u32::MAX;
            }
            if slot & !RANK_BITS == key {
                let r = (slot & RANK_BITS) as u32 - 1;
                if bytes.len() <= 12 || self.token(r as usize) == bytes {
                    return r;
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Whether a piece is one token of the vocabulary.
    pub(crate) fn is_token(&self, piece: &[u8]) -> bool {
        self.rank(piece) != u32::MAX
    }

    /// How many tokens a pre-tokenized piece is, as tiktoken encodes it.
    pub(crate) fn count(&self, piece: &[u8]) -> usize {
        let rank = |b: &[u8]| self.rank(b);
        if piece.len() <= HEAP_MAX {
            return count(rank, piece);
        }
        // No token is a MiB long: the piece is merged, one way or another.
        if runs::run_heavy(piece) {
            return runs::count_runs(&rank, piece);
        }
        match self.linear() {
            Some(linear) => linear.count(piece),
            None => count_long(&rank, piece),
        }
    }

    /// [`Vocab::count`] of a piece of 2 to 256 bytes known not to be one
    /// token (the caller looked it up): merged without looking it up again.
    pub(crate) fn count_not_token(&self, piece: &[u8]) -> usize {
        debug_assert!((2..=MAX_PIECE).contains(&piece.len()));
        merge_short(|b| self.rank(b), piece)
    }

    /// The table as `bpe`'s dictionary, made once per process (`None` if
    /// `bpe` refused it: the heap counts then).
    fn linear(&self) -> Option<&'static bpe::byte_pair_encoding::BytePairEncoding> {
        static LINEAR: [OnceLock<Option<bpe::byte_pair_encoding::BytePairEncoding>>; 4] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let vocab = *self;
        LINEAR[self.id]
            .get_or_init(|| {
                // Rank order (a rank with no token is left out): `bpe`'s
                // merges then are tiktoken's; only counts are asked of it.
                let tokens: Vec<Vec<u8>> = (0..vocab.ranks())
                    .map(|r| vocab.token(r).to_vec())
                    .filter(|t| !t.is_empty())
                    .collect();
                let factor = collision_free_factor(&tokens);
                std::panic::catch_unwind(move || {
                    bpe::byte_pair_encoding::BytePairEncoding::from_dictionary(tokens, Some(factor))
                })
                .ok()
            })
            .as_ref()
    }

    /// Reads a byte of each page of the table, so that the counts to come
    /// do not fault its pages in one at a time as they reach them (about a
    /// tenth of counting 1.7 MB of real sessions, `bench/count.py`): what
    /// [`crate::tokens::preload`] does on a thread of its own while the
    /// inputs are read. The table is in the binary, read in place: paged
    /// in, not copied.
    pub(crate) fn page_in(&self) -> u64 {
        const PAGE: usize = 4096;
        let whole = [self.pairs, self.filter, self.slots, self.offsets, self.blob];
        let mut sum = 0u64;
        for part in whole {
            for at in (0..part.len()).step_by(PAGE) {
                sum = sum.wrapping_add(u64::from(std::hint::black_box(part[at])));
            }
        }
        sum
    }

    /// The number of ranks.
    fn ranks(&self) -> usize {
        self.offsets.len() / 4 - 1
    }

    /// The bytes of a rank (empty for a rank with no token).
    fn token(&self, r: usize) -> &'static [u8] {
        &self.blob[word(self.offsets, r) as usize..word(self.offsets, r + 1) as usize]
    }
}

/// For the fuzz target (`crate::fuzzing::pre_tokenizer`): a piece of two
/// bytes or more merged over its runs and through the heap, under
/// `o200k_base` and `cl100k_base`.
pub(crate) fn merged_both_ways(piece: &[u8]) -> [(usize, usize); 2] {
    [Vocab::of(false), Vocab::of(true)].map(|v| {
        let rank = |b: &[u8]| v.rank(b);
        (runs::count_runs(&rank, piece), count_long(&rank, piece))
    })
}

/// How many tokens a pre-tokenized piece is under a vocabulary's `rank`
/// (`u32::MAX` for bytes that are no token), as tiktoken encodes it.
fn count(rank: impl Fn(&[u8]) -> u32, piece: &[u8]) -> usize {
    if piece.len() < 2 {
        return piece.len();
    }
    if rank(piece) != u32::MAX {
        return 1;
    }
    if piece.len() > MAX_PIECE {
        if runs::run_heavy(piece) {
            return runs::count_runs(&rank, piece);
        }
        return count_long(&rank, piece);
    }
    merge_short(rank, piece)
}

/// tiktoken's `_byte_pair_merge` of a piece of 2 to [`MAX_PIECE`] bytes
/// that is not one token, on the stack: each part's start, and the rank of
/// it merged with the next part.
fn merge_short(rank: impl Fn(&[u8]) -> u32, piece: &[u8]) -> usize {
    // Most pieces are a word: a buffer their size, not one of 2 KiB to
    // fill for each.
    if piece.len() < 16 {
        merge_in(rank, piece, &mut [(0u16, u32::MAX); 17])
    } else {
        merge_in(rank, piece, &mut [(0u16, u32::MAX); MAX_PIECE + 1])
    }
}

/// [`merge_short`] in `buf`, at least a part longer than the piece.
fn merge_in(rank: impl Fn(&[u8]) -> u32, piece: &[u8], buf: &mut [(u16, u32)]) -> usize {
    let n = piece.len();
    for (i, slot) in buf[..n - 1].iter_mut().enumerate() {
        *slot = (i as u16, rank(&piece[i..i + 2]));
    }
    buf[n - 1] = ((n - 1) as u16, u32::MAX);
    buf[n] = (n as u16, u32::MAX);
    let mut len = n + 1;
    let rank_at = |parts: &[(u16, u32)], i: usize| {
        if i + 3 < parts.len() {
            rank(&piece[usize::from(parts[i].0)..usize::from(parts[i + 3].0)])
        } else {
            u32::MAX
        }
    };
    loop {
        let parts = &mut buf[..len];
        let (mut min, mut at) = (u32::MAX, 0);
        for (i, &(_, r)) in parts[..len - 1].iter().enumerate() {
            if r < min {
                (min, at) = (r, i);
            }
        }
        if min == u32::MAX {
            break;
        }
        if at > 0 {
            parts[at - 1].1 = rank_at(parts, at - 1);
        }
        parts[at].1 = rank_at(parts, at);
        parts.copy_within(at + 2..len, at + 1);
        len -= 1;
    }
    len - 1
}

/// [`count`] of a long piece: the same merges in the same order (the pair
/// of lowest rank, the leftmost of equals), the parts a linked list over
/// their first bytes and their pairs' ranks in a min-heap. A popped rank
/// that is no longer its part's is skipped: the part was merged away or
/// its pair changed since. A pair spans two tokens at most, so each
/// look-up is short, and the whole is O(n log n).
fn count_long(rank: &impl Fn(&[u8]) -> u32, piece: &[u8]) -> usize {
    use std::cmp::Reverse;
    // Indices are u32 (12 bytes a byte of the piece): a piece of 4 GiB or
    // more is counted as two halves, an upper bound by a token or so.
    if piece.len() >= u32::MAX as usize {
        let (a, b) = piece.split_at(piece.len() / 2);
        return count_long(rank, a) + count_long(rank, b);
    }
    let n = piece.len() as u32;
    // next[i]: the first byte of the part after the part at i (n: none).
    let mut next: Vec<u32> = (1..=n).collect();
    let mut prev: Vec<u32> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    // ranks[i]: the rank of the part at i merged with the next; MAX when
    // that is no token or the part is gone.
    let mut ranks = vec![u32::MAX; piece.len()];
    let pair = |next: &[u32], i: u32| -> u32 {
        let j = next[i as usize];
        if j >= n {
            return u32::MAX;
        }
        rank(&piece[i as usize..next[j as usize] as usize])
    };
    // A pair as one number, rank above position: the least is the pair of
    // lowest rank, the leftmost of equals.
    let key = |r: u32, i: u32| Reverse((u64::from(r) << 32) | u64::from(i));
    let mut first = Vec::with_capacity(piece.len());
    for i in 0..n - 1 {
        let r = pair(&next, i);
        ranks[i as usize] = r;
        if r != u32::MAX {
            first.push(key(r, i));
        }
    }
    let mut heap = std::collections::BinaryHeap::from(first);
    let mut parts = piece.len();
    while let Some(Reverse(k)) = heap.pop() {
        let (r, i) = ((k >> 32) as u32, k as u32);
        if ranks[i as usize] != r {
            continue;
        }
        let j = next[i as usize];
        let after = next[j as usize];
        next[i as usize] = after;
        if after < n {
            prev[after as usize] = i;
        }
        ranks[j as usize] = u32::MAX;
        parts -= 1;
        for k in [Some(i), (i > 0).then(|| prev[i as usize])]
            .into_iter()
            .flatten()
        {
            let r = pair(&next, k);
            ranks[k as usize] = r;
            if r != u32::MAX {
                heap.push(key(r, k));
            }
        }
    }
    parts
}

/// A factor under which `bpe`'s 32-bit hashes of `tokens` are all
/// different (its `hash_bytes`: FNV-1a over the length, little-endian, and
/// the bytes, times the factor, the high half), tried in a fixed order.
fn collision_free_factor(tokens: &[Vec<u8>]) -> u64 {
    let fnv = |bytes: &[u8]| {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    let hashes: Vec<u64> = tokens.iter().map(|t| fnv(t)).collect();
    let mut seen = std::collections::HashSet::with_capacity(hashes.len());
    (1u64..)
        .map(|k| {
            // splitmix64: well-spread odd factors.
            let mut z = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) | 1
        })
        .find(|&f| {
            seen.clear();
            hashes
                .iter()
                .all(|h| seen.insert((h.wrapping_mul(f) >> 32) as u32))
        })
        .expect("some factor separates the hashes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_found_at_its_rank_and_no_other_bytes_are() {
        for v in [
            Vocab::of(false),
            Vocab::of(true),
            Vocab::gpt2(true),
            Vocab::gpt2(false),
        ] {
            assert!(v.ranks() > 50_000);
            let tokens: std::collections::HashSet<&[u8]> =
                (0..v.ranks()).map(|r| v.token(r)).collect();
            for r in 0..v.ranks() {
                let t = v.token(r);
                if t.is_empty() {
                    continue;
                }
                assert_eq!(v.rank(t) as usize, r);
                // The same length and first bytes, another last byte (past
                // a slot's 12 for the longest): no token unless it is one.
                let mut other = t.to_vec();
                for b in [0u8, 0x7f, 0xff] {
                    *other.last_mut().expect("not empty") ^= b.max(1);
                    let expected = tokens.get(&other[..]).map_or(u32::MAX, |_| v.rank(&other));
                    assert_eq!(v.rank(&other), expected, "{other:?}");
                    assert!(expected == u32::MAX || v.token(expected as usize) == &other[..]);
                }
            }
        }
    }

    /// tiktoken's merge as it writes it, on any length (the quadratic one).
    fn quadratic(v: &Vocab, piece: &[u8]) -> usize {
        let mut parts: Vec<&[u8]> = piece.chunks(1).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .map(|i| (v.rank(&piece_of(&parts[i..i + 2])), i))
                .filter(|&(r, _)| r != u32::MAX)
                .min();
            let Some((_, i)) = best else {
                return parts.len();
            };
            let joined =
                &piece[offset(piece, parts[i])..offset(piece, parts[i + 1]) + parts[i + 1].len()];
            parts.splice(i..i + 2, [joined]);
        }
    }

    fn offset(whole: &[u8], part: &[u8]) -> usize {
        part.as_ptr() as usize - whole.as_ptr() as usize
    }

    fn piece_of(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn the_heap_merges_as_tiktoken_does() {
        let texts: Vec<Vec<u8>> = vec![
            b"a".repeat(700),
            b"ab".repeat(400),
            "\u{4e2d}\u{6587}\u{5b57}".repeat(100).into_bytes(),
            (0..900u32)
                .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 7 % 38) as usize])
                .collect(),
            b"thequickbrownfoxjumpsoverthelazydog".repeat(12),
        ];
        for cl100k in [false, true] {
            let v = Vocab::of(cl100k);
            for t in &texts {
                assert_eq!(
                    count_long(&|b: &[u8]| v.rank(b), t),
                    quadratic(&v, t),
                    "{:?}",
                    String::from_utf8_lossy(t)
                );
            }
        }
    }

    #[test]
    fn pieces_over_a_mib_count_as_tiktoken_does() {
        let mut letters = Vec::new();
        let mut x: u32 = 7;
        while letters.len() < HEAP_MAX + 5000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            letters.push(b"abcdefghijklmnopqrstuvwxyz"[(x >> 16) as usize % 26]);
        }
        // Past the heap's limit, the linear encoder against the heap's merge
        // (tiktoken's order, checked against tiktoken-rs on shorter pieces)
        // run on the whole piece.
        let v = Vocab::of(false);
        for piece in [b"a".repeat(HEAP_MAX + 1), letters.clone()] {
            assert_eq!(v.count(&piece), count(|b| v.rank(b), &piece));
        }
        // Each table's linear dictionary merges as the heap does.
        for v in [Vocab::of(true), Vocab::gpt2(true), Vocab::gpt2(false)] {
            let linear = v.linear().unwrap();
            for piece in [b"a".repeat(5000), letters[..7000].to_vec()] {
                assert_eq!(linear.count(&piece), count(|b| v.rank(b), &piece));
            }
        }
    }
}
