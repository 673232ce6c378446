//! JSON inside tool results (plain, HTML-escaped, double-encoded, fenced)
//! and the `compact-tools` descriptions.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        ctxclean_core::fuzzing::tool_result_json(text);
    }
});
