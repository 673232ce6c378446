//! The byte-pair merge of a long piece made of runs of one byte (a line of
//! `=` or `-`, base64's runs of `A`, brackets a thousand deep), over runs
//! of equal parts instead of parts: the same merges in the same order as
//! [`super::count_long`], in time that grows with the number of runs and
//! the merge's depth rather than with the piece.
//!
//! The parts are held as runs, each so many copies of one part. The
//! pairs inside a run all have one rank, and the leftmost of them is
//! merged first; a run's pairs are merged all at once, when none of the
//! pairs that merging them makes on the way (the doubled parts with each
//! other, with the single parts still to merge, and with the run before)
//! ranks before them: tiktoken would merge them one after another, the
//! leftmost each time, before anything else. Otherwise one pair is merged, as tiktoken
//! merges it. Ranks are unique to their bytes, so no pair made differs
//! from the run's pair but by ranking higher or lower.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Whether a piece is made of runs of one byte long enough for
/// [`count_runs`] (8 bytes or more each, on average).
pub(super) fn run_heavy(piece: &[u8]) -> bool {
    let most = piece.len() / 8;
    let mut runs = 1;
    for w in piece.windows(2) {
        runs += usize::from(w[0] != w[1]);
        if runs > most {
            return false;
        }
    }
    true
}

/// How many tokens `piece` is, merged as tiktoken merges it (`rank`: a
/// token's rank, `u32::MAX` for bytes that are none).
pub(super) fn count_runs(rank: &impl Fn(&[u8]) -> u32, piece: &[u8]) -> usize {
    let mut m = Merge::new(rank, piece);
    while let Some(Reverse(pair)) = m.heap.pop() {
        if m.stands(&pair) {
            match pair.right {
                NONE => m.merge_inside(pair.left, pair.rank),
                right => m.merge_across(pair.left, right),
            }
        }
    }
    m.runs.iter().filter(|r| r.alive).map(|r| r.count).sum()
}

const NONE: usize = usize::MAX;

/// `count` copies of the part of `len` bytes at `start`, in a list.
#[derive(Clone, Copy)]
struct Run {
    start: usize,
    len: usize,
    count: usize,
    prev: usize,
    next: usize,
    /// Changed whenever the run is: a pair queued before is then stale.
    version: u32,
    alive: bool,
}

/// A pair queued: the pairs inside run `left` (`right` is [`NONE`]), or its
/// last part with the first of run `right`; ordered by rank, then by where
/// the pair starts (the leftmost first), as tiktoken picks them.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pair {
    rank: u32,
    at: usize,
    left: usize,
    left_version: u32,
    right: usize,
    right_version: u32,
}

struct Merge<'a, F> {
    rank: &'a F,
    piece: &'a [u8],
    runs: Vec<Run>,
    heap: BinaryHeap<Reverse<Pair>>,
}

impl<'a, F: Fn(&[u8]) -> u32> Merge<'a, F> {
    /// The piece's runs of one byte, and their pairs queued.
    fn new(rank: &'a F, piece: &'a [u8]) -> Self {
        let mut runs: Vec<Run> = Vec::new();
        for (i, &b) in piece.iter().enumerate() {
            match runs.last_mut() {
                Some(r) if piece[r.start] == b => r.count += 1,
                _ => {
                    let at = runs.len();
                    runs.push(Run {
                        start: i,
                        len: 1,
                        count: 1,
                        prev: at.wrapping_sub(1),
                        next: at + 1,
                        version: 0,
                        alive: true,
                    });
                }
            }
        }
        if let Some(last) = runs.last_mut() {
            last.next = NONE;
        }
        if let Some(first) = runs.first_mut() {
            first.prev = NONE;
        }
        let mut m = Merge {
            rank,
            piece,
            runs,
            heap: BinaryHeap::new(),
        };
        for r in 0..m.runs.len() {
            m.queue(r);
        }
        m
    }

    fn part(&self, r: usize) -> &'a [u8] {
        let run = self.runs[r];
        &self.piece[run.start..run.start + run.len]
    }

    /// Where run `r`'s last part starts.
    fn last(&self, r: usize) -> usize {
        let run = self.runs[r];
        run.start + (run.count - 1) * run.len
    }

    /// The rank of the bytes from `from` to `to`.
    fn rank_of(&self, from: usize, to: usize) -> u32 {
        (self.rank)(&self.piece[from..to])
    }

    /// Whether a queued pair is still the piece's: neither run changed.
    fn stands(&self, p: &Pair) -> bool {
        let l = self.runs[p.left];
        if !l.alive || l.version != p.left_version {
            return false;
        }
        p.right == NONE || {
            let r = self.runs[p.right];
            r.alive && r.version == p.right_version && l.next == p.right
        }
    }

    /// Queues run `r`'s pairs: inside it, and with the run after it.
    fn queue(&mut self, r: usize) {
        let run = self.runs[r];
        if run.count >= 2 {
            self.push(
                self.rank_of(run.start, run.start + 2 * run.len),
                run.start,
                r,
                NONE,
            );
        }
        if run.next != NONE {
            let n = self.runs[run.next];
            self.push(
                self.rank_of(self.last(r), n.start + n.len),
                self.last(r),
                r,
                run.next,
            );
        }
    }

    fn push(&mut self, rank: u32, at: usize, left: usize, right: usize) {
        if rank == u32::MAX {
            return;
        }
        let version = |r: usize| if r == NONE { 0 } else { self.runs[r].version };
        let pair = Pair {
            rank,
            at,
            left,
            left_version: version(left),
            right,
            right_version: version(right),
        };
        self.heap.push(Reverse(pair));
    }

    /// Run `r` changed: its pairs, and its predecessor's with it, queued
    /// again (the ones queued before are stale).
    fn changed(&mut self, r: usize) {
        self.runs[r].version += 1;
        self.queue(r);
        let prev = self.runs[r].prev;
        if prev != NONE {
            self.queue(prev);
        }
    }

    /// A run of `count` parts of `len` bytes at `start`, after run `r`.
    fn insert_after(&mut self, r: usize, start: usize, len: usize, count: usize) -> usize {
        let next = self.runs[r].next;
        let at = self.runs.len();
        self.runs.push(Run {
            start,
            len,
            count,
            prev: r,
            next,
            version: 0,
            alive: true,
        });
        self.runs[r].next = at;
        if next != NONE {
            self.runs[next].prev = at;
        }
        at
    }

    fn remove(&mut self, r: usize) {
        let Run { prev, next, .. } = self.runs[r];
        self.runs[r].alive = false;
        if prev != NONE {
            self.runs[prev].next = next;
        }
        if next != NONE {
            self.runs[next].prev = prev;
        }
    }

    /// Run `r` joined with its neighbours whose part is the same bytes;
    /// the run that holds them.
    fn join(&mut self, mut r: usize) -> usize {
        let prev = self.runs[r].prev;
        if prev != NONE && self.part(prev) == self.part(r) {
            self.runs[prev].count += self.runs[r].count;
            self.remove(r);
            r = prev;
        }
        let next = self.runs[r].next;
        if next != NONE && self.part(next) == self.part(r) {
            self.runs[r].count += self.runs[next].count;
            self.remove(next);
        }
        r
    }

    /// The pairs inside run `r` (of rank `rank`): all of them when nothing
    /// they make ranks first, else the leftmost.
    fn merge_inside(&mut self, r: usize, rank: u32) {
        let Run {
            start,
            len,
            count,
            prev,
            ..
        } = self.runs[r];
        // On the way, tiktoken's parts are doubled parts, then single
        // ones: each merge but the last makes a pair of two doubled parts
        // (but the first), of a doubled part and a single one, and the
        // first makes one with the run before. The pair the last merge
        // makes comes after it, whatever its rank.
        let all = count >= 4 && {
            let doubled = self.rank_of(start, start + 4 * len) > rank;
            let mixed = self.rank_of(start, start + 3 * len) > rank;
            let before = prev == NONE || self.rank_of(self.last(prev), start + 2 * len) > rank;
            doubled && mixed && before
        };
        let (merged, left) = if all {
            (count / 2, count % 2)
        } else {
            (1, count - 2)
        };
        self.runs[r].len = 2 * len;
        self.runs[r].count = merged;
        let mut touched = vec![r];
        if left > 0 {
            let rest = self.insert_after(r, start + 2 * len * merged, len, left);
            touched.push(self.join(rest));
        }
        touched.push(self.join(r));
        self.refresh(&touched);
    }

    /// The last part of run `l` merged with the first of run `r`.
    fn merge_across(&mut self, l: usize, r: usize) {
        let at = self.last(l);
        let len = self.runs[l].len + self.runs[r].len;
        self.runs[l].count -= 1;
        self.runs[r].count -= 1;
        self.runs[r].start += self.runs[r].len;
        let merged = self.insert_after(l, at, len, 1);
        let mut touched = Vec::new();
        for gone in [l, r] {
            if self.runs[gone].count == 0 {
                self.remove(gone);
            } else {
                touched.push(gone);
            }
        }
        touched.push(self.join(merged));
        self.refresh(&touched);
    }

    /// The runs `touched` that still stand, each changed once.
    fn refresh(&mut self, touched: &[usize]) {
        let mut seen: Vec<usize> = Vec::with_capacity(touched.len());
        for &r in touched {
            if self.runs[r].alive && !seen.contains(&r) {
                seen.push(r);
                self.changed(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{count_long, Vocab};
    use super::*;
    use proptest::prelude::*;

    fn vocabs() -> [Vocab; 4] {
        [
            Vocab::of(false),
            Vocab::of(true),
            Vocab::gpt2(true),
            Vocab::gpt2(false),
        ]
    }

    /// The heap's merge (tiktoken's order, checked against tiktoken-rs).
    fn both(v: &Vocab, piece: &[u8]) -> (usize, usize) {
        let rank = |b: &[u8]| v.rank(b);
        (count_runs(&rank, piece), count_long(&rank, piece))
    }

    #[test]
    fn runs_of_one_byte_merge_as_the_heap_does() {
        let bytes = b"A=-[]# *~.0a_/\\\t\xff\xe4";
        let lengths = (2..=300).chain([511, 512, 513, 1000, 1023, 1024, 4095, 4096, 10_007]);
        for v in vocabs() {
            for &b in bytes {
                for n in lengths.clone() {
                    let piece = vec![b; n];
                    let (runs, heap) = both(&v, &piece);
                    assert_eq!(runs, heap, "{:?} × {n}", b as char);
                }
            }
        }
    }

    #[test]
    fn brackets_and_runs_side_by_side_merge_as_the_heap_does() {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        for (a, b) in [(1, 1), (7, 9), (100, 100), (333, 1000), (4096, 4095)] {
            pieces.push([vec![b'['; a], vec![b']'; b]].concat());
            pieces.push([vec![b'A'; a], vec![b'a'; b], vec![b'A'; a]].concat());
            pieces.push([vec![b'='; a], b"==>".to_vec(), vec![b'-'; b]].concat());
        }
        for v in vocabs() {
            for p in &pieces {
                let (runs, heap) = both(&v, p);
                assert_eq!(
                    runs,
                    heap,
                    "{}",
                    String::from_utf8_lossy(&p[..p.len().min(40)])
                );
            }
        }
    }

    /// A made-up vocabulary over `a` and `b`, seeded: each string of 2 to 12
    /// bytes a token or not, its rank drawn (unique, as tiktoken's are), so
    /// that a longer part may rank before a shorter one, which the real
    /// vocabularies' runs of one byte never do.
    fn made_up(seed: u64) -> impl Fn(&[u8]) -> u32 {
        move |bytes: &[u8]| {
            if bytes.len() > 12 {
                return u32::MAX;
            }
            let mut h = seed ^ 0xcbf2_9ce4_8422_2325;
            let mut id = 1u32;
            for &b in bytes {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                id = id * 2 + u32::from(b == b'b');
            }
            h ^= h >> 29;
            if h % 10 < 3 {
                u32::MAX
            } else {
                ((h % 509) as u32) << 14 | id
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Under made-up ranks, where merging a run's pairs at once is
        /// often wrong: the same count as the heap's merge.
        #[test]
        fn made_up_vocabularies_merge_as_the_heap_does(
            runs in proptest::collection::vec((0u8..2, 1usize..24), 1..8),
            seed in any::<u64>(),
        ) {
            let mut piece: Vec<u8> = runs
                .iter()
                .flat_map(|&(b, n)| std::iter::repeat_n(b'a' + b, n))
                .collect();
            piece.push(b'b'); // two bytes at least
            let rank = made_up(seed);
            prop_assert_eq!(count_runs(&rank, &piece), count_long(&rank, &piece));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any piece, run-heavy or not: the same count.
        #[test]
        fn any_runs_merge_as_the_heap_does(
            runs in proptest::collection::vec((0usize..6, 1usize..80), 1..40),
            vocab in 0usize..4,
        ) {
            let alphabet = b"A=a[]-";
            let mut piece: Vec<u8> = runs
                .iter()
                .flat_map(|&(b, n)| std::iter::repeat_n(alphabet[b], n))
                .collect();
            piece.push(b'='); // two bytes at least
            let (runs, heap) = both(&vocabs()[vocab], &piece);
            prop_assert_eq!(runs, heap);
        }
    }
}
