//! The streaming reader: the input cut into chunks of whole lines (the first
//! byte sets their size) reads as it does whole, or fails as it does whole.
#![no_main]

use ctxclean::batch::Chunks;
use ctxclean_core::format::{read_document, write_document, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, input)) = data.split_first() else {
        return;
    };
    let opts = ReadOptions::default();
    let mut streamed = Vec::new();
    let mut ok = true;
    for work in Chunks::new("fuzz", input, &opts, 1 + size as usize) {
        match work
            .map_err(|e| e.to_string())
            .and_then(|w| w.parse("fuzz", &opts).map_err(|e| e.to_string()))
        {
            Ok(doc) => {
                write_document(&doc, &mut streamed).expect("writing to memory");
            }
            Err(_) => {
                ok = false;
                break;
            }
        }
    }
    let whole = read_document("fuzz", input.to_vec(), &opts);
    if ok {
        // Streamed output equals the whole file's (when the file reads).
        if let Ok(doc) = whole {
            let mut out = Vec::new();
            write_document(&doc, &mut out).expect("writing to memory");
            assert_eq!(streamed, out, "chunked and whole reads differ");
        }
    }
});
