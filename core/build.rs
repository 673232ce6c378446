//! Lays out the vocabularies of o200k_base, cl100k_base, p50k_base and
//! r50k_base (`vocab/`, tiktoken's files; see vocab/SOURCES.md) as tables a
//! counter reads in place:
//! no vocabulary is built when ctxclean starts (see `src/vocab.rs`).
//!
//! Each table, little-endian `u32`s: the log2 of the slot count and the
//! number of ranks; the rank of each two bytes, 65,536 of them (`u32::MAX`
//! for a pair that is no token: the pairs a merge starts from are looked up
//! in 256 KiB that stay in the cache, not in the slots); a filter of 2^21
//! bits, one set for each token at bits 32 to 52 of its hash (see
//! `vocab_slot.rs`: most longer bytes a merge looks up are no token, and
//! the filter, another 256 KiB, tells most of them so without the slots);
//! the slots of an open-addressing hash of the tokens'
//! bytes, four words each (see `vocab_slot.rs`: the rank + 1, 0 for none,
//! the token's length and its first 12 bytes), at most 77% full;
//! each rank's offset into the bytes (one more than there are ranks); then
//! the tokens' bytes, in rank order.

use std::io::Read;

include!("src/vocab_hash.rs");
include!("src/vocab_slot.rs");

fn main() {
    for name in ["o200k_base", "cl100k_base", "p50k_base", "r50k_base"] {
        let src = format!("vocab/{name}.tiktoken.gz");
        println!("cargo::rerun-if-changed={src}");
        let table = table(&std::fs::read(&src).expect("the vocabulary is in vocab/"));
        let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set"))
            .join(format!("{name}.vocab"));
        std::fs::write(out, table).expect("OUT_DIR is writable");
    }
    println!("cargo::rerun-if-changed=src/vocab_hash.rs");
    println!("cargo::rerun-if-changed=src/vocab_slot.rs");
    println!("cargo::rerun-if-changed=build.rs");
}

fn table(gz: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .expect("the vocabulary decompresses");
    let mut tokens: Vec<(u32, Vec<u8>)> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (b64, rank) = l.split_once(' ').expect("a line is a token and its rank");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("a token is base64");
            (rank.parse().expect("a rank is a number"), bytes)
        })
        .collect();
    tokens.sort();
    let ranks = tokens.last().map_or(0, |t| t.0 as usize + 1);
    let mut log2 = 1;
    // Filled up to 77%: a look-up of bytes that are no token seldom reads
    // the slots (the filter answers), and a token's slot is read with its
    // neighbours.
    while (1usize << log2) * 10 < 13 * ranks {
        log2 += 1;
    }
    let mask = (1usize << log2) - 1;
    let mut slots = vec![0u128; 1 << log2];
    let mut offsets = vec![0u32; ranks + 1];
    let mut blob = Vec::new();
    let mut next = 0;
    for (rank, bytes) in &tokens {
        let rank = *rank as usize;
        while next <= rank {
            offsets[next] = blob.len() as u32;
            next += 1;
        }
        blob.extend_from_slice(bytes);
        let mut i = vocab_hash(bytes) as usize & mask;
        while slots[i] != 0 {
            i = (i + 1) & mask;
        }
        slots[i] = slot_of(rank as u32, bytes);
    }
    offsets[ranks] = blob.len() as u32;
    let mut pairs = vec![u32::MAX; 1 << 16];
    for (rank, bytes) in &tokens {
        if let [a, b] = bytes[..] {
            pairs[usize::from(a) << 8 | usize::from(b)] = *rank;
        }
    }
    let mut filter = vec![0u32; FILTER_BITS / 32];
    for (_, bytes) in &tokens {
        let bit = filter_bit(vocab_hash(bytes));
        filter[bit / 32] |= 1 << (bit % 32);
    }
    let mut out = Vec::with_capacity(
        8 + 4 * (pairs.len() + filter.len() + offsets.len()) + 16 * slots.len() + blob.len(),
    );
    let words = |out: &mut Vec<u8>, words: &[u32]| {
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    };
    words(&mut out, &[log2 as u32, ranks as u32]);
    words(&mut out, &pairs);
    words(&mut out, &filter);
    for s in slots {
        out.extend_from_slice(&s.to_le_bytes());
    }
    words(&mut out, &offsets);
    out.extend_from_slice(&blob);
    out
}
