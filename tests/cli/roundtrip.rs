//! Property: reading then writing any generated transcript is identity, byte
//! for byte, in every layout; and a change to one message leaves every other
//! message exactly as it was.

use ctxclean::format::{read_document, write_document, ReadOptions};
use ctxclean::transcript::Content;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        // Numbers whose text must survive: 1.0, 1e5, -0.0, huge integers.
        prop::sample::select(vec![
            "1.0",
            "1e5",
            "-0.0",
            "3.14159",
            "123456789012345678901234567890"
        ])
        .prop_map(|s| serde_json::from_str(s).unwrap()),
        "\\PC{0,12}".prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        "\\PC{0,20}".prop_map(|t| json!({"type": "text", "text": t})),
        "\\PC{0,20}".prop_map(Value::from),
        "[A-Za-z0-9+/]{0,40}".prop_map(|d| json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{d}"), "detail": "low"}})),
        Just(json!({"type": "image_url", "image_url": "picture.png"})),
        value().prop_map(|v| json!({"type": "input_audio", "input_audio": v})),
    ]
}

fn content() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        "\\PC{0,40}".prop_map(|s| Some(Value::from(s))),
        prop::collection::vec(part(), 0..4).prop_map(|p| Some(Value::Array(p))),
    ]
}

fn tool_call() -> impl Strategy<Value = Value> {
    ("[a-z_]{1,6}", "[a-z]{1,8}", "\\PC{0,20}", any::<bool>()).prop_map(|(id, name, args, extra)| {
        let mut call = json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
        if extra {
            call["index"] = json!(0);
        }
        call
    })
}

/// A message object with random typed fields, extra fields and key order.
fn message() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::sample::select(vec![
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
            "function",
        ]),
        content(),
        prop::option::of(prop::collection::vec(tool_call(), 0..3)),
        prop::option::of("[a-z0-9_]{1,8}"),
        prop::option::of("[A-Za-z]{1,8}"),
        prop::collection::vec(
            ("(sender|agentId|chatId|createdAt|x_[a-z]{1,4})", value()),
            0..3,
        ),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(role, content, calls, call_id, name, extra, rotate)| {
            let mut entries: Vec<(String, Value)> = vec![("role".into(), Value::from(role))];
            if let Some(c) = content {
                entries.push(("content".into(), c));
            }
            if let Some(calls) = calls {
                entries.push(("tool_calls".into(), Value::Array(calls)));
            }
            if let Some(id) = call_id {
                entries.push(("tool_call_id".into(), Value::from(id)));
            }
            if let Some(n) = name {
                entries.push(("name".into(), Value::from(n)));
            }
            entries.extend(extra);
            let k = rotate.index(entries.len());
            entries.rotate_left(k);
            entries.into_iter().collect()
        })
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Object,
    Array,
    JsonlMessages,
    JsonlConversations,
}

fn render(shape: Shape, convs: &[Vec<Map<String, Value>>], pretty: bool) -> String {
    let to_text = |v: &Value| {
        if pretty {
            serde_json::to_string_pretty(v).unwrap()
        } else {
            serde_json::to_string(v).unwrap()
        }
    };
    let msgs =
        |c: &Vec<Map<String, Value>>| Value::Array(c.iter().cloned().map(Value::Object).collect());
    match shape {
        Shape::Object => {
            to_text(&json!({"model": "m", "messages": msgs(&convs[0]), "tools": []})) + "\n"
        }
        Shape::Array => to_text(&msgs(&convs[0])),
        Shape::JsonlMessages => convs[0]
            .iter()
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect(),
        Shape::JsonlConversations => convs
            .iter()
            .map(|c| serde_json::to_string(&json!({"messages": msgs(c), "id": 1})).unwrap() + "\n")
            .collect(),
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    prop::sample::select(vec![
        Shape::Object,
        Shape::Array,
        Shape::JsonlMessages,
        Shape::JsonlConversations,
    ])
}

fn roundtrip(
    text: &str,
    edit: impl FnOnce(&mut ctxclean::format::Document),
) -> Result<String, String> {
    let mut doc = read_document("gen", text.as_bytes().to_vec(), &ReadOptions::default())
        .map_err(|e| e.to_string())?;
    edit(&mut doc);
    let mut out = Vec::new();
    write_document(&doc, &mut out).unwrap();
    Ok(String::from_utf8(out).unwrap())
}

/// Messages whose fields make them invalid OpenAI messages are not part of
/// the property (those are errors, tested elsewhere).
fn readable(m: &Map<String, Value>) -> bool {
    let calls_ok = match m.get("tool_calls") {
        Some(Value::Array(calls)) => calls.iter().all(|c| c["function"]["arguments"].is_string()),
        _ => true,
    };
    calls_ok
}

/// A conversation in which no message has content is not an OpenAI
/// transcript as it stands (a reading error, tested elsewhere).
fn has_content(msgs: &[Map<String, Value>]) -> bool {
    msgs.iter().any(|m| {
        m.contains_key("content") || m.contains_key("tool_calls") || m.contains_key("tool_call_id")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn read_then_write_is_identity(
        convs in prop::collection::vec(prop::collection::vec(message(), 1..6), 1..4),
        shape in shape(),
        pretty in any::<bool>(),
    ) {
        prop_assume!(convs.iter().flatten().all(readable));
        prop_assume!(convs.iter().all(|c| has_content(c)));
        let text = render(shape, &convs, pretty);
        let out = roundtrip(&text, |_| {}).unwrap();
        prop_assert_eq!(out, text);
    }

    #[test]
    fn editing_one_message_leaves_the_others_exact(
        msgs in prop::collection::vec(message(), 2..8),
        pick in any::<prop::sample::Index>(),
        shape in shape(),
    ) {
        prop_assume!(msgs.iter().all(readable));
        prop_assume!(has_content(&msgs));
        let text = render(shape, std::slice::from_ref(&msgs), false);
        let i = pick.index(msgs.len());
        let out = roundtrip(&text, |doc| {
            doc.conversations[0].messages[i].content = Content::Text("EDITED".into());
        }).unwrap();
        let back = read_document("out", out.into_bytes(), &ReadOptions::default()).unwrap();
        let got = &back.conversations[0].messages;
        prop_assert_eq!(got.len(), msgs.len());
        for (j, m) in got.iter().enumerate() {
            if j == i {
                prop_assert_eq!(&m.content, &Content::Text("EDITED".into()));
                // Every other field as it was; content in its place, or last.
                let mut expected = msgs[j].clone();
                expected.insert("content".into(), Value::from("EDITED"));
                prop_assert_eq!(&m.fields, &expected);
                prop_assert_eq!(
                    m.fields.keys().collect::<Vec<_>>(),
                    expected.keys().collect::<Vec<_>>()
                );
            } else {
                prop_assert_eq!(&m.fields, &msgs[j]);
                prop_assert_eq!(
                    m.fields.keys().collect::<Vec<_>>(),
                    msgs[j].keys().collect::<Vec<_>>()
                );
            }
        }
    }
}

/// A ChatGPT export whose tree and `current_node` may not agree: the
/// pointer names a node, a node not in `mapping`, or is missing; parents
/// may be missing too (issue 13).
fn chatgpt_export() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(("\\PC{0,12}", any::<prop::sample::Index>(), any::<bool>()), 1..6),
        0..3u8,
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(nodes, pointer, pick, bom)| {
            let mut mapping = Map::new();
            for (i, (text, parent, dangling)) in nodes.iter().enumerate() {
                let parent = if i == 0 {
                    Value::Null
                } else if *dangling {
                    Value::from("gone-parent")
                } else {
                    Value::from(format!("n{}", parent.index(i)))
                };
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                mapping.insert(
                    format!("n{i}"),
                    json!({"id": format!("n{i}"), "message": {"id": format!("n{i}"), "author": {"role": role}, "create_time": i as f64, "content": {"content_type": "text", "parts": [text]}}, "parent": parent, "children": []}),
                );
            }
            let mut conv = Map::new();
            conv.insert("title".into(), Value::from("t"));
            conv.insert("mapping".into(), Value::Object(mapping));
            match pointer {
                0 => {
                    conv.insert(
                        "current_node".into(),
                        Value::from(format!("n{}", pick.index(nodes.len()))),
                    );
                }
                1 => {
                    conv.insert("current_node".into(), Value::from("not-a-node"));
                }
                _ => {}
            }
            let text = serde_json::to_string(&Value::Array(vec![Value::Object(conv)])).unwrap();
            if bom {
                format!("\u{feff}{text}")
            } else {
                text
            }
        })
}

/// A Claude Code session with lines of types ctxclean does not model, and
/// schema-drifted tool lines with and without `output` (issue 13).
fn claude_code_session() -> impl Strategy<Value = String> {
    prop::collection::vec((0..5u8, "\\PC{0,12}", "[a-z-]{1,12}"), 1..10).prop_map(|lines| {
        let mut out = String::new();
        let mut parent = Value::Null;
        for (i, (kind, text, ty)) in lines.into_iter().enumerate() {
            let uuid = format!("u{i}");
            let line = match kind {
                0 => json!({"parentUuid": parent, "sessionId": "s", "type": "user", "message": {"role": "user", "content": text}, "uuid": uuid}),
                1 => json!({"parentUuid": parent, "sessionId": "s", "type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}, "uuid": uuid}),
                2 => json!({"type": "tool_result", "sessionId": "s", "name": "bash", "uuid": uuid}),
                3 => json!({"type": "tool_result", "sessionId": "s", "name": "bash", "output": text, "uuid": uuid}),
                _ => json!({"type": ty, "sessionId": "s", "uuid": uuid, "parentUuid": parent, "data": {"note": text}}),
            };
            parent = Value::from(uuid);
            out += &serde_json::to_string(&line).unwrap();
            out.push('\n');
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn exports_with_dangling_references_come_back_byte_for_byte(text in chatgpt_export()) {
        let out = roundtrip(&text, |_| {}).unwrap();
        prop_assert_eq!(out, text);
    }

    #[test]
    fn sessions_with_unknown_lines_come_back_byte_for_byte(text in claude_code_session()) {
        let out = roundtrip(&text, |_| {}).unwrap();
        prop_assert_eq!(out, text);
    }
}
