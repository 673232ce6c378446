//! Every reader: the first byte picks the format (`--from`), the rest is the
//! input. Reading never panics; what reads writes back in its own format and
//! converted to OpenAI, and reads again.
#![no_main]

use ctxclean_core::format::{read_document, write_document, Format, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let format = Format::ALL[pick as usize % Format::ALL.len()];
    let opts = ReadOptions {
        from: Some(format),
        skip_invalid: pick & 0x80 != 0,
        ..ReadOptions::default()
    };
    let Ok(doc) = read_document("fuzz", input.to_vec(), &opts) else {
        return;
    };
    let mut out = Vec::new();
    write_document(&doc, &mut out).expect("writing to memory");
    let again = read_document("fuzz", out, &opts);
    assert!(
        again.is_ok(),
        "{format} output does not read back: {again:?}"
    );
    let mut converted = doc.clone();
    converted.format = Format::OpenAi;
    let mut out = Vec::new();
    write_document(&converted, &mut out).expect("writing to memory");
    common::check(&doc);
});

#[path = "common.rs"]
mod common;
