//! The proxy's one call per request (`inflight::clean_and_meter`) on
//! whatever a client sends: the first byte picks the request format and the
//! recipe's budget, the rest is the body. The body goes through holds
//! twice, as it came and grown as an agent grows it (an answer of the
//! model, a new user message: the held path). Never a panic; a body the
//! call forwards reads back as its format, breaks no tool pair that came
//! whole, and empties no conversation without saying so; each request is
//! metered as its text walked would be; and a replica that never saw the
//! first request forwards the same bytes for the grown one.
#![no_main]

use ctxclean_core::engine::{Engine, Options};
use ctxclean_core::format::Format;
use ctxclean_core::inflight::cache::AsCame;
use ctxclean_core::inflight::{clean_and_meter, read_request, Holds};
use ctxclean_core::ops::compact_tools::CompactSpec;
use ctxclean_core::ops::filter::FilterSpec;
use ctxclean_core::ops::trim::TrimSpec;
use ctxclean_core::ops::Pipeline;
use ctxclean_core::pairs::pair_problems;
use ctxclean_core::tokens::{Encoding, Tokenizer};
use ctxclean_core::transcript::Conversation;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

use common::REQUEST_FORMATS as FORMATS;

/// The body with its list grown as an agent grows it: an answer of the
/// model, then a new user message; and whether the body ended where a
/// turn of the model starts (its last item not the model's), so that a
/// proxy that never saw it finds it again as an earlier request of the
/// grown one.
fn grown(body: &[u8], format: Format) -> Option<(Vec<u8>, bool)> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let (key, answer, next) = match format {
        Format::Gemini => (
            "contents",
            json!({"role": "model", "parts": [{"text": "ok"}]}),
            json!({"role": "user", "parts": [{"text": "next"}]}),
        ),
        _ => (
            if format == Format::Responses {
                "input"
            } else {
                "messages"
            },
            json!({"role": "assistant", "content": "ok"}),
            json!({"role": "user", "content": "next"}),
        ),
    };
    let list = value.get_mut(key)?.as_array_mut()?;
    let last = list.last()?;
    let at_a_turn = last["role"] == "user"
        || (format == Format::OpenAi && last["role"] == "tool")
        || (format == Format::Responses && last["type"] == "function_call_output");
    list.push(answer);
    list.push(next);
    Some((serde_json::to_vec(&value).ok()?, at_a_turn))
}

fn says(c: &Conversation) -> bool {
    c.messages.iter().any(|m| !m.role.is_instruction())
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let format = FORMATS[pick as usize % FORMATS.len()];
    let budget = 20 + 40 * usize::from(pick >> 2);
    let mut pipeline = Pipeline::new();
    if pick & 0x80 != 0 {
        // The rules that decide from later messages: what was moved past,
        // retried, or superseded (replicas must still agree).
        pipeline.push(FilterSpec {
            moved_past: true,
            retried_failures: true,
            read_again: true,
            supersede: vec![("Read".into(), String::new())],
            ..FilterSpec::default()
        });
    }
    pipeline.push(CompactSpec {
        max_result_tokens: 10,
        keep_last: usize::from(pick & 1),
        ..CompactSpec::default()
    });
    pipeline.push(TrimSpec {
        max_tokens: Some(budget),
        ..TrimSpec::default()
    });
    let engine = Engine::new(Options {
        pipeline,
        ..Options::default()
    });
    let holds = Holds::new(Some(budget), None, 4);
    let tok = Tokenizer::new(Encoding::Approx).expect("approx needs no data");
    // The proxy's meter (from the messages the holds listed), and the
    // same requests metered by walking their text: they bill alike.
    let (by_list, by_text) = (AsCame::new(16), AsCame::new(16));
    let call = |holds: &Holds, meter: &AsCame, body: &[u8], now: f64| {
        clean_and_meter(
            (&engine, Some(holds)),
            format,
            body,
            &tok,
            false,
            (meter, now),
        )
        .ok()
    };
    let grown = grown(body, format);
    let bodies = [Some(body.to_vec()), grown.as_ref().map(|(b, _)| b.clone())];
    let mut sent = Vec::new();
    for (now, body) in bodies.into_iter().flatten().enumerate() {
        let out = call(&holds, &by_list, &body, now as f64);
        sent.push(out.as_ref().map(|(o, _)| o.body.clone()));
        let Some((out, metered)) = out else {
            continue;
        };
        let walked = out.meter(&by_text, format, &body, &tok, now as f64);
        assert_eq!(metered, walked, "{format}: the meter bills another way");
        let Some(sent) = out.body.as_deref() else {
            continue;
        };
        let came = read_request(format, &body).expect("the body the call cleaned reads");
        let read = read_request(format, sent);
        let read =
            read.unwrap_or_else(|e| panic!("a forwarded {format} body does not read back: {e}"));
        assert_eq!(came.conversations.len(), read.conversations.len());
        for (k, (a, b)) in came
            .conversations
            .iter()
            .zip(&read.conversations)
            .enumerate()
        {
            if pair_problems(&a.messages).is_empty() {
                let problems = pair_problems(&b.messages);
                assert!(problems.is_empty(), "{format}: pairs broken: {problems:?}");
            }
            let said = out
                .reports
                .get(k)
                .is_some_and(|r| r.flags.contains_key("emptied"));
            assert!(!says(a) || says(b) || said, "{format}: emptied in silence");
        }
    }
    // A replica that never saw the first request (or a proxy restarted
    // since) forwards for the grown one what this proxy forwards: it finds
    // the first again as an earlier request of the grown one.
    if let (Some((body, true)), [Some(_), Some(theirs)]) = (&grown, &sent[..]) {
        let replica = Holds::new(Some(budget), None, 4);
        let mine = call(&replica, &AsCame::new(16), body, 1.0).map(|(o, _)| o.body);
        assert!(
            mine.as_ref() == Some(theirs),
            "{format}: a replica forwards another body"
        );
    }
});

mod common;
