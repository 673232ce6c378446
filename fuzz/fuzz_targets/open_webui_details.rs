//! The embedded Open WebUI `<details type="tool_calls">` parser, and its
//! HTML escaping.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        ctxclean_core::fuzzing::open_webui_details(text);
    }
});
