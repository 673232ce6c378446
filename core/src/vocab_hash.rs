// The hash of the vocabulary tables: included by `build.rs`, which lays the
// tables out, and by `src/vocab.rs`, which looks pieces up in them, so the
// two cannot disagree. FNV-1a over the bytes, its high bits folded down.
#[inline]
fn vocab_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 31)
}
