//! The vocabularies of `o200k_base` and `cl100k_base` as tables laid out at
//! compile time (see `build.rs`) and read in place: counting a short text
//! builds nothing, where loading `bpe-openai`'s vocabulary takes about
//! 40 ms and 70 MB (issue 43).
//!
//! A pre-tokenized piece is counted by tiktoken's own byte-pair merge: the
//! piece is one token when it is in the vocabulary; else, starting from
//! its bytes, the adjacent pair of lowest rank is merged (the leftmost
//! first) until no pair is a token. The merge is quadratic in the piece,
//! so pieces longer than [`MAX_PIECE`] go to `bpe-openai`, which is
//! linear. Both give tiktoken's counts; `tests` compares them.

include!("vocab_hash.rs");

static O200K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.vocab"));
static CL100K: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.vocab"));

/// Pieces at most this long are merged here.
pub(crate) const MAX_PIECE: usize = 256;

/// One vocabulary's table.
#[derive(Clone, Copy)]
pub(crate) struct Vocab {
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
        let t = if cl100k { CL100K } else { O200K };
        let (log2, ranks) = (word(t, 0) as usize, word(t, 1) as usize);
        let slots_end = 8 + 4 * (1 << log2);
        let offsets_end = slots_end + 4 * (ranks + 1);
        Vocab {
            slots: &t[8..slots_end],
            offsets: &t[slots_end..offsets_end],
            blob: &t[offsets_end..],
            mask: (1 << log2) - 1,
        }
    }

    /// The rank of a token's bytes; `u32::MAX` when they are not a token.
    fn rank(&self, bytes: &[u8]) -> u32 {
        let mut i = vocab_hash(bytes) as usize & self.mask;
        loop {
            let slot = word(self.slots, i);
            if slot == 0 {
                return u32::MAX;
            }
            let r = (slot - 1) as usize;
            let (start, end) = (word(self.offsets, r), word(self.offsets, r + 1));
            if &self.blob[start as usize..end as usize] == bytes {
                return r as u32;
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
        if piece.len() < 2 {
            return piece.len();
        }
        if self.rank(piece) != u32::MAX {
            return 1;
        }
        // tiktoken's `_byte_pair_merge`: each part's start, and the rank of
        // it merged with the next part.
        let mut parts: Vec<(usize, u32)> = (0..piece.len() - 1)
            .map(|i| (i, self.rank(&piece[i..i + 2])))
            .collect();
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let rank_at = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                u32::MAX
            }
        };
        loop {
            let (mut min, mut at) = (u32::MAX, 0);
            for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min {
                    (min, at) = (r, i);
                }
            }
            if min == u32::MAX {
                break;
            }
            if at > 0 {
                parts[at - 1].1 = rank_at(&parts, at - 1);
            }
            parts[at].1 = rank_at(&parts, at);
            parts.remove(at + 1);
        }
        parts.len() - 1
    }

    /// The number of ranks (for tests).
    #[cfg(test)]
    fn ranks(&self) -> usize {
        self.offsets.len() / 4 - 1
    }

    /// The bytes of a rank (for tests).
    #[cfg(test)]
    fn token(&self, r: usize) -> &'static [u8] {
        &self.blob[word(self.offsets, r) as usize..word(self.offsets, r + 1) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_found_at_its_rank() {
        for cl100k in [false, true] {
            let v = Vocab::of(cl100k);
            assert!(v.ranks() > 100_000);
            for r in 0..v.ranks() {
                let t = v.token(r);
                if !t.is_empty() {
                    assert_eq!(v.rank(t) as usize, r);
                }
            }
        }
    }
}
