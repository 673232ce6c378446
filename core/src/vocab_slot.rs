// A slot of the vocabulary tables: included by `build.rs`, which fills the
// slots, and by `src/vocab.rs`, which reads them, so the two cannot
// disagree. 16 bytes, a little-endian `u128`: the token's rank + 1 (0 for
// an empty slot) in its low 24 bits, its length (up to 255) in the next 8,
// and its first 12 bytes (zeros past a shorter token's end) in the high
// 96. A token of 12 bytes or fewer, most of them, is known from its slot
// alone, one read where the rank's offset and bytes took two more.

/// The bits of a slot that are the rank + 1.
const RANK_BITS: u128 = 0xff_ffff;

/// The slot of a token: its [`key_of`] and its rank + 1.
// Only `build.rs` fills slots.
#[allow(dead_code)]
fn slot_of(rank: u32, bytes: &[u8]) -> u128 {
    assert!(u128::from(rank) < RANK_BITS);
    key_of(bytes) | u128::from(rank + 1)
}

/// A slot but for its rank: the length of `bytes` and their first 12.
#[inline]
fn key_of(bytes: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let n = bytes.len().min(12);
    head[4..4 + n].copy_from_slice(&bytes[..n]);
    head[3] = bytes.len().min(255) as u8;
    u128::from_le_bytes(head)
}

/// The bits of the tables' filter: one for each token, at [`filter_bit`].
const FILTER_BITS: usize = 1 << 21;

/// A token's bit in the filter: bits 32 to 52 of its hash (the slots take
/// the low bits).
#[inline]
fn filter_bit(hash: u64) -> usize {
    (hash >> 32) as usize & (FILTER_BITS - 1)
}
