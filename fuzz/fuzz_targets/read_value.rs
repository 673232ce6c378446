//! A request body read from its parsed value (`format::read_value`, how the
//! proxy reads back a held body it just built) and from its text
//! (`format::read_document`, the reader of record): the first byte picks
//! the request format (OpenAI, Anthropic, Responses, Gemini), the rest is
//! the body. Where both read, the same messages (but each origin's seal, a
//! hash of the text it was read from) and the same problems for the
//! provider; and the value is never read where its text is refused.
#![no_main]

use ctxclean_core::format::{read_document, read_value, ReadOptions};
use ctxclean_core::transcript::{Conversation, Message};
use ctxclean_core::validate::{validate_request, Provider};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

use common::REQUEST_FORMATS as FORMATS;

fn unsealed(c: &Conversation) -> Vec<Message> {
    let mut messages = c.messages.clone();
    for o in messages.iter_mut().filter_map(|m| m.origin.as_mut()) {
        o.seal = 0;
    }
    messages
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(pick) % FORMATS.len()];
    let Ok(value @ Value::Object(_)) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    // The text the proxy writes from the value.
    let bytes = serde_json::to_vec(&value).expect("writing to memory");
    let opts = ReadOptions {
        from: Some(format),
        ..ReadOptions::default()
    };
    let by_text = read_document("request", bytes, &opts);
    let by_value = read_value("request", value, Some(format));
    match (by_text, by_value) {
        (Ok(text), Some(value)) => {
            assert_eq!(text.conversations.len(), value.conversations.len());
            let provider = Provider::for_format(format);
            for (a, b) in text.conversations.iter().zip(&value.conversations) {
                assert!(unsealed(a) == unsealed(b), "{format}: other messages");
                assert_eq!(
                    format!("{:?}", validate_request(a, format, provider)),
                    format!("{:?}", validate_request(b, format, provider)),
                    "{format}: other problems"
                );
            }
        }
        (Err(e), Some(_)) => panic!("{format}: the value reads where its text is refused: {e}"),
        _ => {}
    }
});

mod common;
