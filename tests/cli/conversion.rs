//! Properties of conversion between request formats: for every pair A, B,
//! A → B → A keeps the text, roles, images, tool calls (names, arguments as
//! values, parallel groups) and results of any conversation, or the first
//! step reports what it lost; every output reads back as the format it was
//! written in, without `--from` (issue 14).

use ctxclean::format::{read_document, write_document, Format, ReadOptions};
use ctxclean::pairs::Pairing;
use ctxclean::transcript::{Content, Message, PartKind, Role};
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
enum Turn {
    User(String, Option<String>),
    Assistant(String),
    Tools(String, Vec<(String, i64, String)>),
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,.!?éü中文😀]{1,30}"
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (text(), prop::option::of("[A-Za-z0-9+/]{4,40}")).prop_map(|(t, img)| Turn::User(t, img)),
        text().prop_map(Turn::Assistant),
        (
            prop_oneof![Just(String::new()), text()],
            prop::collection::vec(("[a-z_]{1,10}", any::<i64>(), text()), 1..4)
        )
            .prop_map(|(t, calls)| Turn::Tools(t, calls)),
    ]
}

fn openai_text(system: &str, turns: &[Turn]) -> String {
    let mut msgs = vec![json!({"role": "system", "content": system})];
    let mut n = 0;
    for t in turns {
        match t {
            Turn::User(text, None) => msgs.push(json!({"role": "user", "content": text})),
            Turn::User(text, Some(data)) => msgs.push(json!({"role": "user", "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}]})),
            Turn::Assistant(text) => msgs.push(json!({"role": "assistant", "content": text})),
            Turn::Tools(text, calls) => {
                let ids: Vec<String> = calls.iter().map(|_| { n += 1; format!("call_{n}") }).collect();
                let tool_calls: Vec<Value> = calls.iter().zip(&ids).map(|((name, x, _), id)| json!({
                    "id": id, "type": "function",
                    "function": {"name": name, "arguments": serde_json::to_string(&json!({"x": x})).unwrap()}})).collect();
                let content = if text.is_empty() { Value::Null } else { Value::from(text.as_str()) };
                msgs.push(json!({"role": "assistant", "content": content, "tool_calls": tool_calls}));
                for ((_, _, result), id) in calls.iter().zip(&ids) {
                    msgs.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
                }
            }
        }
    }
    serde_json::to_string(&json!({"model": "m", "messages": msgs})).unwrap()
}

/// What a conversation says, independent of how a format groups it.
#[derive(Debug, PartialEq)]
enum Event {
    Text(&'static str, String),
    Image(String),
    /// The calls of one assistant turn: names and arguments as values.
    Calls(Vec<(String, Value)>),
    Result(String, String),
}

/// An image part's URL in any format's shape (data URLs rebuilt).
fn image_url(raw: &Value) -> String {
    if let Some(u) = raw
        .pointer("/image_url/url")
        .or_else(|| raw.get("image_url"))
        .and_then(Value::as_str)
    {
        return u.to_string();
    }
    for (media, data) in [
        ("/source/media_type", "/source/data"),
        ("/inlineData/mimeType", "/inlineData/data"),
    ] {
        if let (Some(m), Some(d)) = (raw.pointer(media), raw.pointer(data)) {
            return format!(
                "data:{};base64,{}",
                m.as_str().unwrap_or(""),
                d.as_str().unwrap_or("")
            );
        }
    }
    raw.pointer("/source/url")
        .or_else(|| raw.get("url"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

fn events(msgs: &[Message]) -> Vec<Event> {
    let pairing = Pairing::new(msgs);
    let mut out = Vec::new();
    let mut calls: Vec<(String, Value)> = Vec::new();
    let flush = |calls: &mut Vec<(String, Value)>, out: &mut Vec<Event>| {
        if !calls.is_empty() {
            out.push(Event::Calls(std::mem::take(calls)));
        }
    };
    for (i, m) in msgs.iter().enumerate() {
        let speaker = match m.role {
            Role::System | Role::Developer => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool | Role::Function => {
                flush(&mut calls, &mut out);
                let r = pairing.result_of(i).expect("every result has its call");
                let call = &msgs[r.message].calls()[r.call];
                out.push(Event::Result(call.name.clone(), m.content.text()));
                continue;
            }
        };
        // Consecutive assistant messages (Responses items) are one turn.
        if m.role != Role::Assistant {
            flush(&mut calls, &mut out);
        }
        match &m.content {
            Content::Text(t) if !t.is_empty() => out.push(Event::Text(speaker, t.clone())),
            Content::Parts(parts) => {
                for p in parts {
                    match &p.kind {
                        PartKind::Text(t) if !t.is_empty() => {
                            out.push(Event::Text(speaker, t.clone()))
                        }
                        PartKind::Image(_) => out.push(Event::Image(image_url(&p.raw))),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        for c in m.calls() {
            let args: Value =
                serde_json::from_str(&c.arguments).unwrap_or(Value::from(c.arguments.as_str()));
            calls.push((c.name.clone(), args));
        }
    }
    flush(&mut calls, &mut out);
    // The user's turn a user-first format puts in front of an assistant's
    // first turn (and says) is not what the conversation said.
    let first = out
        .iter()
        .position(|e| !matches!(e, Event::Text("system", _)));
    if let Some(i) = first {
        if out[i] == Event::Text("user", "[Start of conversation]".into()) {
            out.remove(i);
        }
    }
    // Consecutive texts of one speaker are one text: formats that merge
    // turns (Anthropic, Gemini) or hold one string (ShareGPT) join them.
    let mut joined: Vec<Event> = Vec::with_capacity(out.len());
    for e in out {
        match (joined.last_mut(), e) {
            (Some(Event::Text(s1, t1)), Event::Text(s2, t2)) if *s1 == s2 => {
                t1.push('\n');
                t1.push_str(&t2);
            }
            (_, e) => joined.push(e),
        }
    }
    joined
}

/// Converts `text` to `to` (reading it as it is detected); the output and
/// how many parts of messages the conversion lost.
fn convert(text: &str, to: Format) -> (String, usize) {
    let mut doc = read_document("in", text.as_bytes().to_vec(), &ReadOptions::default()).unwrap();
    doc.format = to;
    let mut out = Vec::new();
    let written = write_document(&doc, &mut out).unwrap();
    // Losses of messages (a request's model or fields do not change what
    // the conversation says).
    let lost = written
        .iter()
        .flat_map(|w| &w.losses)
        .filter(|l| l.index.is_some())
        .count();
    (String::from_utf8(out).unwrap(), lost)
}

/// The messages of a text, read without `--from`: it must be `format`.
fn read_as(text: &str, format: Format) -> Vec<Message> {
    let doc = read_document("x", text.as_bytes().to_vec(), &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{format} output does not read back: {e}\n{text}"));
    assert_eq!(doc.source_format, format, "{text}");
    doc.conversations
        .into_iter()
        .next()
        .map(|c| c.messages)
        .unwrap_or_default()
}

fn request_format() -> impl Strategy<Value = Format> {
    prop::sample::select(Format::REQUEST.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_pair_of_request_formats_round_trips(
        system in text(),
        turns in prop::collection::vec(turn(), 1..8),
        a in request_format(),
        b in request_format(),
    ) {
        prop_assume!(a != b);
        // The conversation as format A (what A can hold of it).
        let openai = openai_text(&system, &turns);
        let in_a = if a == Format::OpenAi { openai } else { convert(&openai, a).0 };
        let base = read_as(&in_a, a);
        prop_assert!(ctxclean::pairs::pair_problems(&base).is_empty());
        let (mid, lost) = convert(&in_a, b);
        let mid_msgs = read_as(&mid, b);
        prop_assert!(ctxclean::pairs::pair_problems(&mid_msgs).is_empty());
        let (back, _) = convert(&mid, a);
        let back = read_as(&back, a);
        prop_assert!(ctxclean::pairs::pair_problems(&back).is_empty());
        if lost == 0 {
            prop_assert_eq!(events(&back), events(&base), "{} → {} → {}", a, b, a);
        }
    }

    #[test]
    fn parallel_calls_stay_parallel_through_openai(turns in prop::collection::vec(turn(), 1..8), via in request_format()) {
        let openai = openai_text("s", &turns);
        let (mid, lost) = convert(&openai, via);
        let back = if via == Format::OpenAi { openai.clone() } else { convert(&mid, Format::OpenAi).0 };
        let back = read_as(&back, Format::OpenAi);
        if lost == 0 {
            // Each assistant message holds all the calls of its turn.
            prop_assert_eq!(events(&back), events(&read_as(&openai, Format::OpenAi)));
            let groups = |m: &[Message]| m.iter().filter(|m| m.has_calls()).map(|m| m.calls().len()).collect::<Vec<_>>();
            prop_assert_eq!(groups(&back), groups(&read_as(&openai, Format::OpenAi)));
        }
    }
}

/// The fixtures in request formats, through every other request format and
/// back: what they say comes back, or the first step reported a loss.
#[test]
fn fixtures_round_trip_through_every_request_format() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for path in crate::redetect::fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(doc) = read_document("in", text.clone().into_bytes(), &ReadOptions::default())
        else {
            continue;
        };
        let a = doc.source_format;
        if !a.is_request() || doc.conversations.len() != 1 {
            continue;
        }
        let base = read_as(&text, a);
        for b in Format::REQUEST {
            if b == a {
                continue;
            }
            let (mid, lost) = convert(&text, b);
            if mid.trim().is_empty() || lost > 0 {
                continue;
            }
            let (back, _) = convert(&mid, a);
            let back = read_as(&back, a);
            compared += 1;
            if events(&back) != events(&base) {
                failures.push(format!("{}: {a} → {b} → {a}", path.display()));
            }
        }
    }
    assert!(compared > 10, "only {compared} round trips compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
