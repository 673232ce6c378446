//! ChatGPT data exports (`conversations.json`): a list of conversations
//! whose messages are the nodes of a `mapping` tree; the conversation is the
//! branch ending at `current_node` (see [`crate::format::chain`]). Every message
//! lives in the envelope, so the whole conversation object is written back
//! with the nodes that changed rewritten and the removed ones spliced out.
//!
//! Real exports are not always whole: `current_node` may be missing or name
//! a node that is not in `mapping` (hand-trimmed exports), and a list entry
//! may have no `mapping` at all. The first follows the newest leaf and says
//! so; the second is an empty conversation, with a note, kept as it came.
//! `current_node` itself is never rewritten unless the node it named was
//! removed.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::format::chain::{self, Node, Time};
use crate::format::dialect::{Dialect, Fault, Loss};
use crate::transcript::{Content, Conversation, Fields, Message, Part, PartKind, Role, ToolCall};

/// ChatGPT data exports.
pub(crate) struct ChatGpt;

/// The nodes of a conversation's `mapping`, in document order.
fn nodes(mapping: &Map<String, Value>) -> Vec<Node<'_>> {
    mapping
        .iter()
        .map(|(id, node)| {
            let msg = node.get("message").filter(|m| m.is_object());
            Node {
                id: id.as_str(),
                parent: node.get("parent").and_then(Value::as_str),
                time: Time::of(msg.and_then(|m| m.get("create_time"))),
                leaf_ok: msg.is_some(),
            }
        })
        .collect()
}

/// The node ids of the conversation's branch, root first, and what reading
/// it had to decide.
fn branch(env: &Map<String, Value>) -> (Vec<String>, chain::Branch) {
    let Some(Value::Object(mapping)) = env.get("mapping") else {
        return (Vec::new(), chain::Branch::default());
    };
    let nodes = nodes(mapping);
    let named = env.get("current_node").and_then(Value::as_str);
    let b = chain::branch(&nodes, named, "current_node");
    let ids = b.path.iter().map(|&i| nodes[i].id.to_string()).collect();
    (ids, b)
}

/// A part of `content.parts`: strings and `{"content_type": "text"}` objects
/// are text, image asset pointers are images, anything else is kept.
fn part(p: &Value) -> Part {
    let kind = match p {
        Value::String(s) => PartKind::Text(s.clone()),
        Value::Object(o) => match o.get("content_type").and_then(Value::as_str) {
            Some("text") => match o.get("text") {
                Some(Value::String(t)) => PartKind::Text(t.clone()),
                _ => PartKind::Other,
            },
            Some("image_asset_pointer") => PartKind::Image(Default::default()),
            _ => PartKind::Other,
        },
        _ => PartKind::Other,
    };
    Part {
        kind,
        raw: p.clone(),
        slot: None,
    }
}

/// The content of a message's `content` object: its parts, its `text`
/// (code, execution output), or the whole object as one part whose text
/// fields count (thoughts, user context, browsing results).
fn content(c: Option<&Value>) -> Content {
    let Some(Value::Object(c)) = c else {
        return Content::Absent;
    };
    if let Some(Value::Array(ps)) = c.get("parts") {
        return Content::Parts(ps.iter().map(part).collect());
    }
    if let Some(Value::String(t)) = c.get("text") {
        return Content::Text(t.clone());
    }
    Content::Parts(vec![Part {
        kind: PartKind::Other,
        raw: Value::Object(c.clone()),
        slot: None,
    }])
}

fn message(msg: &Map<String, Value>) -> Message {
    let author = msg.get("author");
    let hidden_system = msg
        .get("metadata")
        .and_then(|m| m.get("is_user_system_message"))
        == Some(&Value::Bool(true));
    let role = match author.and_then(|a| a.get("role")).and_then(Value::as_str) {
        _ if hidden_system => Role::System,
        Some("tool") => Role::Tool,
        Some(r) => Role::parse(r).unwrap_or(Role::User),
        None => Role::User,
    };
    let mut m = Message {
        content: content(msg.get("content")),
        name: author
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string),
        // The message object stays in the envelope, which is what is
        // written back (see `rewrite`): a copy here would double what a
        // large export holds in memory.
        ..Message::new(role, "")
    };
    let recipient = msg
        .get("recipient")
        .and_then(Value::as_str)
        .unwrap_or("all");
    if role == Role::Assistant && recipient != "all" {
        // A message to a tool is a call; the tool's reply answers it.
        m.tool_calls = Some(vec![ToolCall {
            id: None,
            name: recipient.to_string(),
            arguments: m.content.text(),
            raw: Value::Null,
            slot: None,
        }]);
        m.content = Content::Absent;
    }
    m
}

/// The text a message's `content` object holds now (a call's arguments,
/// or the content's text).
fn text_of(m: &Message) -> String {
    match m.calls().first() {
        Some(c) => c.arguments.clone(),
        None => m.content.text(),
    }
}

/// The message object rewritten for `m`, or `None` when nothing changed.
fn rewrite(msg: &Map<String, Value>, m: &Message) -> Option<Map<String, Value>> {
    let Some(Value::Object(c)) = msg.get("content") else {
        return None;
    };
    let mut c = c.clone();
    if let Some(Value::Array(parts)) = c.get("parts") {
        let old = content(msg.get("content"));
        let new_parts: Vec<Value> = match (&m.content, m.calls().first()) {
            (_, Some(call)) if old.text() != call.arguments => {
                vec![Value::from(call.arguments.as_str())]
            }
            (_, Some(_)) => return None,
            (Content::Parts(ps), _) => ps.iter().map(Part::to_value).collect(),
            (other, _) => vec![Value::from(other.text())],
        };
        if &new_parts == parts {
            return None;
        }
        c.insert("parts".into(), Value::Array(new_parts));
    } else if c.get("text").is_some_and(Value::is_string) {
        let text = text_of(m);
        if c.get("text").and_then(Value::as_str) == Some(text.as_str()) {
            return None;
        }
        c.insert("text".into(), Value::from(text));
    } else {
        // Kept whole as one part: written back when that part changed.
        let part = m.content.parts().first()?;
        let new = part.to_value();
        if new == Value::Object(c.clone()) || !new.is_object() {
            return None;
        }
        c = new.as_object()?.clone();
    }
    let mut msg = msg.clone();
    msg.insert("content".into(), Value::Object(c));
    Some(msg)
}

impl Dialect for ChatGpt {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let mapping = obj.get("mapping").is_some_and(Value::is_object);
        // An export entry that lost its tree still has the conversation's ids.
        let bare = !obj.contains_key("mapping")
            && obj.contains_key("conversation_id")
            && obj.contains_key("create_time");
        (mapping || bare).then_some(&[][..])
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        let Some(Value::Object(mapping)) = env.get("mapping") else {
            return Ok(Vec::new());
        };
        let (ids, _) = branch(env);
        Ok(ids
            .iter()
            .filter_map(|id| mapping.get(id)?.get("message")?.as_object())
            .map(message)
            .collect())
    }

    fn after_read(&self, conv: &mut Conversation) {
        let Some(env) = &conv.envelope else { return };
        if !env.contains_key("mapping") {
            conv.notes.push(
                "no \"mapping\" (the export lost this conversation's messages); kept as it is"
                    .into(),
            );
            return;
        }
        if let (_, chain::Branch { note: Some(n), .. }) = branch(env) {
            conv.notes.push(n);
        }
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        let (ids, b) = branch(env);
        let Some(Value::Object(mapping)) = env.get_mut("mapping") else {
            return;
        };
        // A message is known by its place among the branch's messages as
        // read (`Origin::sub`), never by an id: exports written by other
        // tools may give messages no id, or one id to several.
        let with_message: Vec<&String> = ids
            .iter()
            .filter(|id| {
                mapping
                    .get(*id)
                    .and_then(|n| n.get("message"))
                    .is_some_and(Value::is_object)
            })
            .collect();
        let by_node: HashMap<&str, &Message> = msgs
            .iter()
            .filter_map(|m| {
                let sub = m.origin.as_ref()?.sub;
                Some((with_message.get(sub)?.as_str(), *m))
            })
            .collect();
        let mut current = None;
        let mut removed = Vec::new();
        for id in &ids {
            let Some(Value::Object(node)) = mapping.get(id) else {
                continue;
            };
            let Some(Value::Object(msg)) = node.get("message") else {
                current = Some(id.clone());
                continue;
            };
            match by_node.get(id.as_str()) {
                Some(m) => {
                    current = Some(id.clone());
                    if let Some(new) = rewrite(msg, m) {
                        if let Some(Value::Object(n)) = mapping.get_mut(id) {
                            n.insert("message".into(), Value::Object(new));
                        }
                    }
                }
                None => removed.push(id.clone()),
            }
        }
        chain::splice_all(mapping, &removed, "parent", "children");
        // `current_node` changes only when the node it named was removed.
        if b.named && ids.last().is_some_and(|last| !mapping.contains_key(last)) {
            env.insert(
                "current_node".into(),
                current.map_or(Value::Null, Value::from),
            );
        }
    }

    fn takes_new_messages(&self, _conv: &Conversation) -> bool {
        false
    }

    fn read_record(&self, _rec: &Fields) -> Result<Vec<Message>, Fault> {
        Ok(Vec::new())
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        _msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        Some(rec.clone())
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        for (i, m) in msgs.iter().enumerate() {
            losses.push(Loss::at(
                m.input_index().unwrap_or(i),
                "new message",
                "chatgpt exports cannot take new messages",
            ));
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, write_document, Format};

    const TREE: &str = r#"[{"title":"t","mapping":{"r":{"id":"r","message":null,"parent":null,"children":["a"]},"a":{"id":"a","message":{"id":"a","author":{"role":"user"},"content":{"content_type":"text","parts":["hi"]}},"parent":"r","children":["b"]},"b":{"id":"b","message":{"id":"b","author":{"role":"assistant"},"content":{"content_type":"text","parts":["hello"]}},"parent":"a","children":[]}},"current_node":"b"}]"#;

    fn write(doc: &crate::format::Document) -> String {
        let mut out = Vec::new();
        write_document(doc, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_branch_is_read_and_spliced() {
        let mut doc = read_document("c.json", TREE.into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::ChatGpt);
        assert_eq!(doc.conversations[0].messages.len(), 2);
        assert!(doc.conversations[0].notes.is_empty());
        assert_eq!(write(&doc), TREE);
        doc.conversations[0].messages.remove(0);
        let v: Value = serde_json::from_str(&write(&doc)).unwrap();
        assert!(v[0]["mapping"].get("a").is_none());
        assert_eq!(v[0]["mapping"]["b"]["parent"], "r");
        assert_eq!(v[0]["mapping"]["r"]["children"], serde_json::json!(["b"]));
        assert_eq!(v[0]["current_node"], "b");
    }

    #[test]
    fn a_dangling_current_node_is_kept_and_the_newest_leaf_read() {
        // See issue 13: the id became `null` and stats saw 0 messages.
        let text = TREE.replace(r#""current_node":"b""#, r#""current_node":"gone""#);
        let mut doc = read_document("c.json", text.clone().into(), &Default::default()).unwrap();
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(
            conv.notes,
            ["current_node \"gone\" is not in the message tree; followed the newest leaf \"b\""]
        );
        assert_eq!(write(&doc), text);
        // Removing the first message rewrites the tree, never the pointer.
        doc.conversations[0].messages.remove(0);
        let v: Value = serde_json::from_str(&write(&doc)).unwrap();
        assert_eq!(v[0]["current_node"], "gone");
    }

    #[test]
    fn text_objects_in_parts_are_text() {
        let text = TREE.replace(
            r#""parts":["hello"]"#,
            r#""parts":[{"content_type":"text","text":"hello"}]"#,
        );
        let doc = read_document("c.json", text.into(), &Default::default()).unwrap();
        let m = &doc.conversations[0].messages[1];
        assert_eq!(m.content.text(), "hello");
        let mut losses = Vec::new();
        let converted = crate::format::convert::to_openai(m, &mut losses);
        assert!(losses.is_empty(), "{losses:?}");
        assert_eq!(converted.content.text(), "hello");
    }

    #[test]
    fn an_entry_without_a_mapping_is_an_empty_conversation_with_a_note() {
        let bare = r#"{"title":"x","create_time":1.0,"conversation_id":"c","id":"c"}"#;
        let text = format!("{},{bare}]", TREE.trim_end_matches(']'));
        let doc = read_document("c.json", text.clone().into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::ChatGpt);
        assert_eq!(doc.conversations[1].messages.len(), 0);
        assert_eq!(doc.conversations[1].notes.len(), 1);
        assert_eq!(write(&doc), text);
    }
}
