//! Any bytes, read trusting every span (split without checking, every part
//! parsed) and checking every span: the same document, or the same error at
//! the same place.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ctxclean_core::fuzzing::read_trusting(data);
});
