//! Entry points for the fuzz targets in `fuzz/` (not a stable API): the
//! parsers that are not reachable through [`crate::format::read_document`]
//! alone with arbitrary bytes.

use crate::format::open_webui::{escape, find_block, unescape};
use crate::ops::compact_tools::{describe, parse_json};
use crate::transcript::{Message, Role};

/// Runs the embedded Open WebUI `<details type="tool_calls">` parser over
/// `text`, and checks that escaping round-trips.
pub fn open_webui_details(text: &str) {
    let mut pos = 0;
    while let Some((start, end, block)) = find_block(&text[pos..]) {
        assert!(start < end && pos + end <= text.len());
        let _ = block.attr("name");
        if let Some(args) = block.attr("arguments") {
            let _ = unescape(args);
        }
        let _ = block.result();
        pos += end;
    }
    assert_eq!(
        unescape(&escape(text)),
        text,
        "escape then unescape is the identity"
    );
}

/// Runs the JSON-in-a-tool-result parser (plain, HTML-escaped,
/// double-encoded, fenced) and the description over `text`.
pub fn tool_result_json(text: &str) {
    let _ = parse_json(text);
    let m = Message::new(Role::Tool, text).with_call_id("c");
    for preview in [0, 1, 10, 200] {
        let _ = describe(&m, preview, 1);
        let _ = describe(&m, preview, 3);
    }
}

/// Reads `data` trusting every span and checking every span: the same
/// document or the same error (see `read::compare_trusting`).
pub fn read_trusting(data: &[u8]) {
    crate::format::read::compare_trusting(data, &crate::format::ReadOptions::default());
}

/// The hand-written pre-tokenizer of `o200k_base` and `cl100k_base` (by
/// hand on ASCII, by the regex between sure starts elsewhere) against
/// tiktoken's pattern (the regex) on the whole text: the same pieces, which
/// put together are the text; and each piece merged over its runs of one
/// byte as through the heap (`vocab::runs`). `data` that is not UTF-8 is made ASCII (each
/// byte's low 7 bits), so that most inputs reach the hand-written path.
pub fn pre_tokenizer(data: &[u8]) {
    let ascii: Vec<u8>;
    let text = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(_) => {
            ascii = data.iter().map(|b| b & 0x7f).collect();
            std::str::from_utf8(&ascii).expect("ASCII is UTF-8")
        }
    };
    for (fast, slow) in crate::tokens::pieces_both_ways(text) {
        assert_eq!(fast, slow, "the hand-written pieces are the regex's");
        assert_eq!(fast.concat(), text, "the pieces make the text");
        // Each piece with a run of one byte merged over its runs as the
        // heap merges it (whether or not counting would take that way).
        let has_run = |p: &&String| {
            p.as_bytes()
                .windows(4)
                .any(|w| w.iter().all(|&b| b == w[0]))
        };
        for piece in fast.iter().filter(has_run) {
            for (runs, heap) in crate::vocab::merged_both_ways(piece.as_bytes()) {
                assert_eq!(runs, heap, "merged over its runs as through the heap");
            }
        }
    }
}
