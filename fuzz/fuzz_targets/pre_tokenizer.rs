//! The hand-written pre-tokenizer against tiktoken's pattern (issue
//! 43: counting at 140 MB/s is only worth having exact).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ctxclean_core::fuzzing::pre_tokenizer(data);
});
