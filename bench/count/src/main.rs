//! Counting against `bpe-openai`'s own encoder (issue 55): each file's
//! lines (a JSON document is one text) counted by `Tokenizer::count_text`
//! (`--side ctxclean`) or by `bpe_openai`'s tokenizer of the same encoding
//! (`--side bpe-openai`), one side per process. Prints the count, the CPU
//! seconds of counting and the MB of text; `bench/count.py` runs both
//! sides in interleaved rounds over the corpora and compares.
//!
//!     cargo run --release --manifest-path bench/count/Cargo.toml -- \
//!         [--encoding o200k_base|cl100k_base] [--side ctxclean|bpe-openai] FILE...

use ctxclean_core::tokens::{Encoding, Tokenizer};

/// What each side counts before it is timed: ASCII and not.
const WARM_UP: &str = "warm up: the vocabulary and the pattern (for text like «this») load first";

/// CPU time of this thread, in seconds.
fn thread_cpu() -> f64 {
    let mut ts = [0i64; 2];
    // CLOCK_THREAD_CPUTIME_ID is 3 on Linux.
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut [i64; 2]) -> i32;
    }
    // SAFETY: clock_gettime writes a timespec (two i64 on x86_64 Linux).
    unsafe { clock_gettime(3, &mut ts) };
    ts[0] as f64 + ts[1] as f64 * 1e-9
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str, default: &str| -> String {
        match args.iter().position(|a| a == flag) {
            Some(i) => {
                let v = args.remove(i + 1);
                args.remove(i);
                v
            }
            None => default.to_string(),
        }
    };
    let encoding: Encoding = take("--encoding", "o200k_base")
        .parse()
        .expect("an encoding");
    let side = take("--side", "ctxclean");
    let mut texts = Vec::new();
    for path in &args {
        let bytes = std::fs::read(path).expect("a readable file");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.trim_start().starts_with('{')
            && text.lines().nth(1).is_some()
            && text.lines().all(|l| l.is_empty() || l.starts_with('{'))
        {
            texts.extend(text.lines().map(str::to_string));
        } else {
            texts.push(text);
        }
    }
    let mb = texts.iter().map(String::len).sum::<usize>() as f64 / 1e6;
    // Both sides load their vocabulary, and count the same short text,
    // before timing (ctxclean built its pre-tokenizer's classes on the
    // first text that is not ASCII, and faulted its table's pages in as
    // counting reached them: timed on its side only, a good part of the
    // time of a corpus of 1.7 MB).
    // One side per process: ctxclean's memos (per thread and shared) must
    // not carry a round's counts into the next.
    let (n, seconds) = if side == "bpe-openai" {
        let theirs = match encoding {
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
            _ => bpe_openai::o200k_base(),
        };
        theirs.count(WARM_UP);
        let start = thread_cpu();
        let n: usize = texts.iter().map(|x| theirs.count(x.as_str())).sum();
        (n, thread_cpu() - start)
    } else {
        let tok = Tokenizer::new(encoding).expect("a tiktoken encoding");
        // What the CLI does on a thread of its own while it reads the
        // inputs: the Unicode classes built, the table's pages read in
        // (bpe-openai's tables are built in memory before its timing too).
        ctxclean_core::tokens::preload(encoding);
        tok.count_text(WARM_UP);
        let start = thread_cpu();
        let n: usize = texts.iter().map(|x| tok.count_text(x)).sum();
        (n, thread_cpu() - start)
    };
    println!("{n} {seconds:.6} {mb:.6}");
}
