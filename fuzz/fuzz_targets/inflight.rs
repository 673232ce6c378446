//! The proxy's one call per request (`inflight::clean_and_meter`) on
//! whatever a client sends: the first byte picks the request format and the
//! recipe's budget, the rest is the body. The body goes through holds
//! twice, as it came and grown by items of its own list (a conversation
//! that comes back longer: the held path). Never a panic; a body the call
//! forwards reads back as its format, breaks no tool pair that came whole,
//! and empties no conversation without saying so.
#![no_main]

use ctxclean_core::engine::{Engine, Options};
use ctxclean_core::format::Format;
use ctxclean_core::inflight::cache::AsCame;
use ctxclean_core::inflight::{clean_and_meter, read_request, Holds};
use ctxclean_core::ops::compact_tools::CompactSpec;
use ctxclean_core::ops::trim::TrimSpec;
use ctxclean_core::ops::Pipeline;
use ctxclean_core::pairs::pair_problems;
use ctxclean_core::tokens::{Encoding, Tokenizer};
use ctxclean_core::transcript::Conversation;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const FORMATS: [Format; 4] = [
    Format::OpenAi,
    Format::Anthropic,
    Format::Responses,
    Format::Gemini,
];

/// The body with its list grown by its own first and last items, when it
/// is an object with a list.
fn grown(body: &[u8], format: Format) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let key = match format {
        Format::Anthropic | Format::OpenAi => "messages",
        Format::Responses => "input",
        _ => "contents",
    };
    let list = value.get_mut(key)?.as_array_mut()?;
    let (first, last) = (list.first()?.clone(), list.last()?.clone());
    list.push(last);
    list.push(first);
    serde_json::to_vec(&value).ok()
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
    let meter = AsCame::new(16);
    let bodies = [Some(body.to_vec()), grown(body, format)];
    for (now, body) in bodies.into_iter().flatten().enumerate() {
        let Ok((out, _metered)) = clean_and_meter(
            (&engine, Some(&holds)),
            format,
            &body,
            &tok,
            false,
            (&meter, now as f64),
        ) else {
            continue;
        };
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
});
