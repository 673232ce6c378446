//! Every fixture with each list item that carries an id (a call, a
//! result, a message, a part) given twice, in place: ids a client or a
//! model repeated. Nothing changed comes back byte for byte, and
//! `compact-tools --clear-inputs` on everything keeps every message and
//! every result. Writers that found a result's block, or a call, by its id
//! moved, merged or dropped the second of an id (see docs/robustness.md).

use ctxclean::engine::{Engine, Options};
use ctxclean::format::{read_document, ReadOptions};
use ctxclean::ops::compact_tools::CompactSpec;
use ctxclean::ops::{Accounting, Pipeline};
use ctxclean::tokens::{Encoding, Tokenizer};
use serde_json::Value;

use crate::redetect::fixtures;

/// The keys that name an id of a call, a result or a message.
const ID_KEYS: [&str; 8] = [
    "id",
    "toolCallId",
    "callID",
    "tool_use_id",
    "tool_call_id",
    "call_id",
    "toolUseId",
    "toolUseID",
];

/// `v` with every list item that is an object with an id given twice.
fn doubled(v: &mut Value) {
    match v {
        Value::Object(map) => map.values_mut().for_each(doubled),
        Value::Array(items) => {
            items.iter_mut().for_each(doubled);
            let mut out = Vec::with_capacity(items.len() * 2);
            for item in items.drain(..) {
                let twice = item
                    .as_object()
                    .is_some_and(|o| ID_KEYS.iter().any(|k| o.contains_key(*k)));
                if twice {
                    out.push(item.clone());
                }
                out.push(item);
            }
            *items = out;
        }
        _ => {}
    }
}

/// A fixture's text with its ids doubled, a JSONL file line by line;
/// `None` for a file that is not JSON.
fn with_ids_doubled(text: &str, jsonl: bool) -> Option<String> {
    let one = |t: &str| -> Option<String> {
        let mut v: Value = serde_json::from_str(t).ok()?;
        doubled(&mut v);
        Some(serde_json::to_string(&v).unwrap())
    };
    if !jsonl {
        return one(text);
    }
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(&if line.trim().is_empty() {
            line.to_string()
        } else {
            one(line)?
        });
        out.push('\n');
    }
    Some(out)
}

/// Per conversation: its messages, and how many are tool results.
fn counts(bytes: &[u8]) -> Vec<(usize, usize)> {
    let doc = read_document("doubled", bytes.to_vec(), &ReadOptions::default()).unwrap();
    doc.conversations
        .iter()
        .map(|c| {
            let results = c.messages.iter().filter(|m| m.role.is_result()).count();
            (c.messages.len(), results)
        })
        .collect()
}

#[test]
fn ids_given_twice_come_back_in_place_and_no_result_is_lost() {
    let tok = Tokenizer::new(Encoding::Approx).unwrap();
    let convert = Engine::new(Options::default());
    let mut pipeline = Pipeline::new();
    pipeline.push(CompactSpec {
        keep_last: 0,
        max_result_tokens: 0,
        clear_inputs: true,
        ..CompactSpec::default()
    });
    let compact = Engine::new(Options {
        pipeline,
        accounting: Accounting::Full,
        ..Options::default()
    });
    let mut compared = 0;
    for path in fixtures() {
        let name = path.display().to_string();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let jsonl = name.ends_with(".jsonl");
        let Some(text) = with_ids_doubled(&text, jsonl) else {
            continue;
        };
        let read = ReadOptions::default();
        // A format that refuses an id given twice says so: no output.
        let Ok(same) = convert.clean(&name, text.clone().into_bytes(), &read, &tok) else {
            continue;
        };
        assert!(
            same.bytes() == text.as_bytes(),
            "{name}: convert changed it"
        );
        let out = compact
            .clean(&name, text.clone().into_bytes(), &read, &tok)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            counts(&out.bytes()),
            counts(text.as_bytes()),
            "{name}: (messages, results) per conversation"
        );
        compared += 1;
    }
    assert!(compared > 100, "only {compared} fixtures compared");
}
