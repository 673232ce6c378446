//! The proxy's tap on an upstream's answer (`inflight::answer::Tap`), on
//! whatever an upstream sends: the first byte picks the route (its low 3
//! bits: OpenAI, Anthropic, Responses, Gemini, Ollama), the framing (the
//! next 2: an event stream, NDJSON, or one JSON document), whether the
//! answer is gzipped (0x40: the rest compressed here) and whether it ended
//! cut off (0x80); the second, how the bytes are cut into chunks. Never a
//! panic, and the same reading however the answer was cut: whole, in
//! chunks, and (for a short one) byte by byte.
#![no_main]

use std::io::Write;

use ctxclean_core::format::Format;
use ctxclean_core::inflight::answer::{Read, Tap};
use libfuzzer_sys::fuzz_target;

const ROUTES: [(Format, bool); 5] = [
    (Format::OpenAi, false),
    (Format::Anthropic, false),
    (Format::Responses, false),
    (Format::Gemini, false),
    (Format::OpenAi, true),
];
const TYPES: [&str; 3] = [
    "text/event-stream",
    "application/x-ndjson",
    "application/json",
];

fn read(pick: u8, answer: &[u8], cut: impl Fn(usize) -> usize) -> Read {
    let (format, ollama) = ROUTES[usize::from(pick & 7) % ROUTES.len()];
    let content_type = TYPES[usize::from((pick >> 3) & 3) % TYPES.len()];
    let encoding = if pick & 0x40 != 0 { "gzip" } else { "" };
    let mut tap = Tap::new(format, ollama, content_type, encoding);
    let mut at = 0;
    while at < answer.len() {
        let end = (at + cut(at).max(1)).min(answer.len());
        tap.feed(&answer[at..end]);
        at = end;
    }
    tap.finish(pick & 0x80 == 0)
}

fuzz_target!(|data: &[u8]| {
    let [pick, size, rest @ ..] = data else {
        return;
    };
    let (pick, size) = (*pick, usize::from(*size));
    let answer = if pick & 0x40 != 0 {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(rest).expect("writing to memory");
        gz.finish().expect("writing to memory")
    } else {
        rest.to_vec()
    };
    let whole = read(pick, &answer, |_| answer.len());
    // Chunks of varying sizes, from 1 to `size` + 1 bytes.
    let chunked = read(pick, &answer, |at| 1 + (at * 7 + size) % (size + 1));
    assert_eq!(whole, chunked, "the reading depends on the chunks");
    if answer.len() <= 4096 {
        let bytes = read(pick, &answer, |_| 1);
        assert_eq!(
            whole, bytes,
            "the reading depends on the chunks (byte by byte)"
        );
    }
});
