//! An answer saved as it streamed: Anthropic's server-sent events one per
//! line (`message_start`, `content_block_delta`, …), OpenAI's
//! `chat.completion.chunk` lines, Gemini's `GenerateContentResponse` chunks
//! (a JSON array, or one per line). The events are kept as they came; the
//! message they make, put together as the provider's SDK does, is read in
//! the provider's format and hung on the stream's first event. A stream
//! cannot be rewritten event by event: an operation that would change its
//! message leaves it as it is and says so (`convert --to` writes the message
//! in any format).

use serde_json::{Map, Value};

use crate::format::Format;
use crate::transcript::{Conversation, Fields, Origin};

/// Anthropic's stream events.
const ANTHROPIC_EVENTS: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

/// Whether one record is an event of `format`'s stream.
pub(crate) fn is_event(format: Format, rec: &Map<String, Value>) -> bool {
    let ty = crate::json::get(rec, "type").and_then(Value::as_str);
    match format {
        Format::Anthropic => {
            ty.is_some_and(|t| ANTHROPIC_EVENTS.contains(&t)) && !rec.contains_key("role")
        }
        Format::OpenAi => {
            crate::json::get(rec, "object").and_then(Value::as_str) == Some("chat.completion.chunk")
        }
        Format::Gemini => crate::format::answer::format_of(rec) == Some(Format::Gemini),
        _ => false,
    }
}

/// The provider whose stream the records are, when they all are one.
pub(crate) fn format_of(records: &[&Map<String, Value>]) -> Option<Format> {
    let first = records.first()?;
    if records.iter().all(|r| is_event(Format::Anthropic, r))
        && records
            .iter()
            .any(|r| r.get("type").and_then(Value::as_str) == Some("message_start"))
    {
        return Some(Format::Anthropic);
    }
    if records.iter().all(|r| is_event(Format::OpenAi, r)) {
        return Some(Format::OpenAi);
    }
    // Gemini's chunks are answers each: a stream when they share their
    // response's id, or, without ids, only the last one says why it stopped.
    let gemini = records.len() > 1 && records.iter().all(|r| is_event(Format::Gemini, r));
    let id = |r: &Map<String, Value>| r.get("responseId").cloned();
    let one_id = id(first).is_some() && records.iter().all(|r| id(r) == id(first));
    let stops = records
        .iter()
        .filter(|r| {
            r.get("candidates")
                .and_then(|c| c.get(0))
                .is_some_and(|c| c.get("finishReason").is_some())
        })
        .count();
    let last_stops = records.last().is_some_and(|r| {
        r.get("candidates")
            .and_then(|c| c.get(0))
            .is_some_and(|c| c.get("finishReason").is_some())
    });
    (gemini && (one_id || (id(first).is_none() && stops <= 1 && last_stops)))
        .then_some(Format::Gemini)
}

/// Whether the first record of a conversation is an event of `format`'s
/// stream, looked at without keeping it parsed (records are held as their
/// text): a stream has no envelope, so a request body is never looked at.
fn opens_as_stream(format: Format, conv: &Conversation) -> bool {
    conv.envelope.is_none()
        && conv
            .records
            .iter()
            .find_map(|r| r.value.as_ref())
            .is_some_and(|v| v.peek(|first| is_event(format, first)))
}

/// Whether a conversation was read from a stream's events.
pub(crate) fn is_stream(conv: &Conversation) -> bool {
    [Format::Anthropic, Format::OpenAi, Format::Gemini]
        .into_iter()
        .any(|f| opens_as_stream(f, conv))
}

/// After the events are read: the message they make, read in `format` and
/// hung on the first event.
pub(crate) fn read(format: Format, conv: &mut Conversation) -> Result<(), String> {
    if !opens_as_stream(format, conv) {
        return Ok(());
    }
    let records: Vec<&Map<String, Value>> = conv
        .records
        .iter()
        .filter_map(|r| r.value.as_deref())
        .collect();
    if format_of(&records) != Some(format) {
        return Ok(());
    }
    let message = match format {
        Format::Anthropic => anthropic(&records),
        Format::OpenAi => openai(&records),
        Format::Gemini => gemini(&records),
        _ => return Ok(()),
    };
    let msgs = match format {
        Format::Anthropic => crate::format::anthropic::read_message(&Fields::from(message))?,
        Format::OpenAi => vec![crate::format::openai::parse_message(message)?],
        _ => crate::format::gemini::read_turn_of(&Fields::from(message))?,
    };
    let at = conv
        .records
        .iter()
        .position(|r| r.value.is_some())
        .unwrap_or(0);
    let line = conv.records[at].line;
    for (sub, mut m) in msgs.into_iter().enumerate() {
        m.origin = Some(Origin {
            index: 0,
            line,
            record: Some(at),
            sub,
            seal: 0,
        });
        conv.messages.push(m);
    }
    Ok(())
}

/// Anthropic's events put together: each block started, its deltas applied.
fn anthropic(events: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut blocks: Vec<Map<String, Value>> = Vec::new();
    let mut json: Vec<String> = Vec::new();
    for e in events {
        let index = e.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match e.get("type").and_then(Value::as_str) {
            Some("content_block_start") => {
                let block = e
                    .get("content_block")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if blocks.len() <= index {
                    blocks.resize(index + 1, Map::new());
                    json.resize(index + 1, String::new());
                }
                blocks[index] = block;
            }
            Some("content_block_delta") => {
                let (Some(block), Some(delta)) = (blocks.get_mut(index), e.get("delta")) else {
                    continue;
                };
                apply_delta(block, &mut json[index], delta);
            }
            _ => {}
        }
    }
    for (block, partial) in blocks.iter_mut().zip(&json) {
        if !partial.is_empty() {
            block.insert(
                "input".into(),
                serde_json::from_str(partial).unwrap_or(Value::String(partial.clone())),
            );
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    out.insert(
        "content".into(),
        Value::Array(
            blocks
                .into_iter()
                .filter(|b| !b.is_empty())
                .map(Value::Object)
                .collect(),
        ),
    );
    out
}

fn apply_delta(block: &mut Map<String, Value>, json: &mut String, delta: &Value) {
    let append = |block: &mut Map<String, Value>, key: &str, more: Option<&str>| {
        if let Some(more) = more {
            push_str(block, key, more);
        }
    };
    let text = |k: &str| delta.get(k).and_then(Value::as_str);
    match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => append(block, "text", text("text")),
        Some("thinking_delta") => append(block, "thinking", text("thinking")),
        Some("signature_delta") => append(block, "signature", text("signature")),
        Some("input_json_delta") => json.push_str(text("partial_json").unwrap_or("")),
        Some("citations_delta") => {
            if let Some(c) = delta.get("citation") {
                let list = block
                    .entry("citations")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(l) = list {
                    l.push(c.clone());
                }
            }
        }
        _ => {}
    }
}

/// OpenAI's chunks put together: the first choice's deltas, its calls by
/// their index.
fn openai(chunks: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut content: Option<String> = None;
    let mut refusal: Option<String> = None;
    let mut calls: Vec<Map<String, Value>> = Vec::new();
    for c in chunks {
        let Some(delta) = c
            .get("choices")
            .and_then(|l| l.get(0))
            .and_then(|c| c.get("delta"))
        else {
            continue;
        };
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            content.get_or_insert_with(String::new).push_str(t);
        }
        if let Some(t) = delta.get("refusal").and_then(Value::as_str) {
            refusal.get_or_insert_with(String::new).push_str(t);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if calls.len() <= index {
                calls.resize(index + 1, Map::new());
            }
            merge_call(&mut calls[index], call);
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    out.insert("content".into(), content.map_or(Value::Null, Value::from));
    if let Some(r) = refusal {
        out.insert("refusal".into(), r.into());
    }
    if !calls.is_empty() {
        out.insert(
            "tool_calls".into(),
            Value::Array(calls.into_iter().map(Value::Object).collect()),
        );
    }
    out
}

fn merge_call(into: &mut Map<String, Value>, delta: &Value) {
    for k in ["id", "type"] {
        if let Some(v) = delta.get(k).filter(|v| v.is_string()) {
            into.insert(k.into(), v.clone());
        }
    }
    let Some(f) = delta.get("function") else {
        return;
    };
    let func = into
        .entry("function")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(func) = func else { return };
    if let Some(name) = f.get("name").and_then(Value::as_str) {
        func.insert("name".into(), name.into());
    }
    let args = f.get("arguments").and_then(Value::as_str).unwrap_or("");
    push_str(func, "arguments", args);
}

/// `more` appended to the string at `key` in place (a stream's deltas are
/// many: copying the text so far at each would be quadratic).
fn push_str(map: &mut Map<String, Value>, key: &str, more: &str) {
    match map.get_mut(key) {
        Some(Value::String(s)) => s.push_str(more),
        _ => {
            map.insert(key.into(), Value::from(more));
        }
    }
}

/// Gemini's chunks put together: the first candidate's parts in order, a
/// text part run into the plain text part before it (as the SDK's `text`
/// reads them).
fn gemini(chunks: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut parts: Vec<Map<String, Value>> = Vec::new();
    for c in chunks {
        let got = c
            .get("candidates")
            .and_then(|l| l.get(0))
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for p in got.into_iter().flatten().filter_map(Value::as_object) {
            let plain = |p: &Map<String, Value>| p.keys().all(|k| k == "text" || k == "thought");
            match parts.last_mut() {
                Some(last)
                    if plain(p)
                        && plain(last)
                        && last.get("thought") == p.get("thought")
                        && last.contains_key("text")
                        && p.contains_key("text") =>
                {
                    push_str(last, "text", p["text"].as_str().unwrap_or(""));
                }
                _ => parts.push(p.clone()),
            }
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), "model".into());
    out.insert(
        "parts".into(),
        Value::Array(parts.into_iter().map(Value::Object).collect()),
    );
    out
}

/// A stream's usage: Anthropic's `message_start` counts updated by
/// `message_delta`'s, the last chunk's for OpenAI and Gemini.
pub(crate) fn usage(records: &[&Map<String, Value>]) -> Option<Map<String, Value>> {
    let format = format_of(records)?;
    if format == Format::Anthropic {
        let mut out = Map::new();
        for e in records {
            let u = match e.get("type").and_then(Value::as_str) {
                Some("message_start") => e.get("message").and_then(|m| m.get("usage")),
                Some("message_delta") => e.get("usage"),
                _ => None,
            };
            for (k, v) in u.and_then(Value::as_object).into_iter().flatten() {
                if !v.is_null() {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        return (!out.is_empty()).then_some(out);
    }
    records.iter().rev().find_map(|r| {
        r.get("usage")
            .or_else(|| r.get("usageMetadata"))
            .and_then(Value::as_object)
            .cloned()
    })
}
