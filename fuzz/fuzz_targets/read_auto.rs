//! Any bytes, format detected: reading never panics; what reads writes back
//! and reads again, and stats and validate run on it.
#![no_main]

use ctxclean_core::format::{read_document, write_document, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = ReadOptions::default();
    let Ok(doc) = read_document("fuzz", data.to_vec(), &opts) else {
        return;
    };
    let mut out = Vec::new();
    write_document(&doc, &mut out).expect("writing to memory");
    let again = read_document(
        "fuzz",
        out,
        &ReadOptions {
            from: Some(doc.source_format),
            ..ReadOptions::default()
        },
    );
    assert!(
        again.is_ok(),
        "written output does not read back: {again:?}"
    );
    common::check(&doc);
});

#[path = "common.rs"]
mod common;
