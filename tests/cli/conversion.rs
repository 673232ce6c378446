//! Property: OpenAI → Anthropic → OpenAI and OpenAI → Responses → OpenAI
//! keep the text, the tool pairing and the images of any conversation.

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
    Call(String, String),
    Result(String, String),
}

fn events(msgs: &[Message]) -> Vec<Event> {
    let pairing = Pairing::new(msgs);
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let speaker = match m.role {
            Role::System | Role::Developer => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool | Role::Function => {
                let r = pairing.result_of(i).expect("every result has its call");
                let call = &msgs[r.message].calls()[r.call];
                out.push(Event::Result(call.name.clone(), m.content.text()));
                continue;
            }
        };
        match &m.content {
            Content::Text(t) if !t.is_empty() => out.push(Event::Text(speaker, t.clone())),
            Content::Parts(parts) => {
                for p in parts {
                    match &p.kind {
                        PartKind::Text(t) => out.push(Event::Text(speaker, t.clone())),
                        PartKind::Image(_) => out.push(Event::Image(
                            p.raw
                                .pointer("/image_url/url")
                                .and_then(Value::as_str)
                                .unwrap_or("?")
                                .to_string(),
                        )),
                        PartKind::Other => {}
                    }
                }
            }
            _ => {}
        }
        for c in m.calls() {
            out.push(Event::Call(c.name.clone(), c.arguments.clone()));
        }
    }
    out
}

fn through(text: &str, via: Format) -> String {
    let mut doc = read_document("in", text.as_bytes().to_vec(), &ReadOptions::default()).unwrap();
    assert_eq!(doc.source_format, Format::OpenAi);
    doc.format = via;
    let mut mid = Vec::new();
    write_document(&doc, &mut mid).unwrap();
    let opts = ReadOptions {
        from: Some(via),
        ..ReadOptions::default()
    };
    let mut doc = read_document("mid", mid, &opts).unwrap();
    doc.format = Format::OpenAi;
    let mut out = Vec::new();
    write_document(&doc, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn read(text: &str) -> Vec<Message> {
    let opts = ReadOptions {
        from: Some(Format::OpenAi),
        ..ReadOptions::default()
    };
    read_document("x", text.as_bytes().to_vec(), &opts)
        .unwrap()
        .conversations
        .remove(0)
        .messages
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn openai_anthropic_openai(system in text(), turns in prop::collection::vec(turn(), 1..8)) {
        let input = openai_text(&system, &turns);
        let back = read(&through(&input, Format::Anthropic));
        prop_assert!(ctxclean::pairs::pair_problems(&back).is_empty());
        prop_assert_eq!(events(&back), events(&read(&input)));
    }

    #[test]
    fn openai_responses_openai(system in text(), turns in prop::collection::vec(turn(), 1..8)) {
        let input = openai_text(&system, &turns);
        let back = read(&through(&input, Format::Responses));
        prop_assert!(ctxclean::pairs::pair_problems(&back).is_empty());
        prop_assert_eq!(events(&back), events(&read(&input)));
    }
}
