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
//!
//! A conversation is read one node at a time: each node is held as its span
//! of the text, and only the nodes on the branch are parsed, so a deep
//! export is not held parsed whole (issue 38). A conversation whose branch
//! does not follow the `mapping`'s order is parsed whole instead, its tree
//! kept in the envelope.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::format::chain::{self, Node, Time};
use crate::format::dialect::{Dialect, Fault, Loss, OutRecord};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, PartKind, Record, Role, ToolCall,
};

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
        // A bare string is its text: `Part::to_value` writes the text back
        // over an empty `raw`, so a deep export's texts are not held twice.
        Value::String(s) => {
            return Part {
                kind: PartKind::Text(s.clone()),
                raw: Value::String(String::new()).into(),
                slot: None,
            }
        }
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
        raw: p.clone().into(),
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
        raw: Value::Object(c.clone()).into(),
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
    let mut m = Message::from(MessageData {
        content: content(msg.get("content")),
        name: author
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string),
        // The message object stays in the envelope, which is what is
        // written back (see `rewrite`): a copy here would double what a
        // large export holds in memory.
        ..MessageData::new(role, "")
    });
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
            raw: Value::Null.into(),
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

/// A part as it goes back. Text an operation put in another part's place
/// (a note where an image was, shaped `{"type": "text"}`) is a string, as
/// ChatGPT keeps text among the parts.
fn part_value(p: &Part) -> Value {
    match (&p.kind, p.raw.get("type").and_then(Value::as_str)) {
        (PartKind::Text(t), Some("text")) if p.raw.get("content_type").is_none() => {
            Value::from(t.as_str())
        }
        _ => p.to_value(),
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
            (Content::Parts(ps), _) => ps.iter().map(part_value).collect(),
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

/// What the branch needs of a node, read without parsing its message.
#[derive(Deserialize)]
struct Link<'a> {
    #[serde(borrow, default)]
    parent: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    message: Option<Stamp>,
}

/// A node's message, for its time only.
#[derive(Deserialize)]
struct Stamp {
    #[serde(default)]
    create_time: Option<Value>,
}

/// A node's links, for splicing removed nodes out.
#[derive(Default)]
struct Links {
    parent: Option<String>,
    children: Option<Vec<Value>>,
}

/// A node's links as they are written, read without parsing its message.
#[derive(Deserialize)]
struct RawLinks {
    #[serde(default)]
    parent: Option<Value>,
    #[serde(default)]
    children: Option<Value>,
}

impl Links {
    fn from_raw(raw: RawLinks, id: &str) -> Links {
        Links {
            // A node that names itself as its parent is a root.
            parent: match raw.parent {
                Some(Value::String(p)) if p != id => Some(p),
                _ => None,
            },
            children: match raw.children {
                Some(Value::Array(kids)) => Some(kids),
                _ => None,
            },
        }
    }

    /// The links of a node as read: from its text, else from its parse.
    fn of(node: &Fields, id: &str) -> Links {
        let light = node
            .span_text()
            .and_then(|t| serde_json::from_str::<RawLinks>(t).ok());
        let raw = light.unwrap_or_else(|| {
            node.peek(|m| RawLinks {
                parent: m.get("parent").cloned(),
                children: m.get("children").cloned(),
            })
        });
        Links::from_raw(raw, id)
    }
}

/// The tree's links, by node id, for the splice after nodes were removed.
struct Tree<'a> {
    links: HashMap<&'a str, Links>,
    /// The node ids in document order.
    order: Vec<&'a str>,
    gone: HashSet<&'a str>,
    /// Children by parent, from the parent links, for nodes without a
    /// `children` list (built when first needed).
    by_parent: Option<HashMap<String, Vec<&'a str>>>,
    /// The nearest kept ancestor of each removed node resolved so far.
    resolved: HashMap<&'a str, Option<String>>,
}

impl<'a> Tree<'a> {
    /// The nearest ancestor of a node (from its parent `p`) that was not
    /// removed: `None` past a root, or in a loop of removed nodes. Each
    /// removed node is resolved once: a long run of removed nodes is walked
    /// once, not once for every node that hangs below it.
    fn kept_parent(&mut self, p: Option<&str>) -> Option<String> {
        let mut walked: Vec<&'a str> = Vec::new();
        let mut seen = HashSet::new();
        let mut p = p.map(str::to_string);
        let found = loop {
            let Some(id) = p else { break None };
            let Some(&g) = self.gone.get(id.as_str()) else {
                break Some(id);
            };
            if let Some(known) = self.resolved.get(g) {
                break known.clone();
            }
            if !seen.insert(g) {
                break None;
            }
            walked.push(g);
            p = self.links.get(g).and_then(|l| l.parent.clone());
        };
        for g in walked {
            self.resolved.insert(g, found.clone());
        }
        found
    }

    /// The children of a removed node, in order.
    fn children_of(&mut self, id: &str) -> Vec<Value> {
        if let Some(kids) = self.links.get(id).and_then(|l| l.children.clone()) {
            return kids;
        }
        let (links, order) = (&self.links, &self.order);
        let index = self.by_parent.get_or_insert_with(|| {
            let mut index: HashMap<String, Vec<&'a str>> = HashMap::new();
            for &id in order {
                if let Some(p) = links.get(id).and_then(|l| l.parent.clone()) {
                    index.entry(p).or_default().push(id);
                }
            }
            index
        });
        let kids = index.get(id).cloned().unwrap_or_default();
        kids.into_iter().map(Value::from).collect()
    }

    /// A children list with every removed node replaced by its own
    /// children, in place: walked with a stack of its own, so a run of
    /// 100k removed nodes is no 100k-deep recursion.
    fn spliced(&mut self, kids: Vec<Value>) -> Vec<Value> {
        let mut out = Vec::with_capacity(kids.len());
        let mut seen = HashSet::new();
        let mut stack = vec![kids.into_iter()];
        while let Some(top) = stack.last_mut() {
            let Some(k) = top.next() else {
                stack.pop();
                continue;
            };
            match k.as_str().and_then(|id| self.gone.get(id).copied()) {
                Some(id) if seen.insert(id) => {
                    let inner = self.children_of(id);
                    stack.push(inner.into_iter());
                }
                Some(_) => {}
                None => out.push(k),
            }
        }
        out
    }
}

/// The branch of a conversation read node by node (see
/// [`Dialect::keyed_branch`]): `None` when a node is not what the light
/// reading expects, when ids repeat, or when the branch is not in the
/// `mapping`'s order.
fn keyed_branch(
    env: &Map<String, Value>,
    records: &[(String, &str)],
) -> Option<(Vec<usize>, Vec<String>)> {
    let mut nodes = Vec::with_capacity(records.len());
    let mut parents = Vec::with_capacity(records.len());
    for (id, raw) in records {
        let link: Link = serde_json::from_str(raw).ok()?;
        parents.push(link.parent);
        nodes.push(Node {
            id: id.as_str(),
            parent: None,
            time: link
                .message
                .as_ref()
                .and_then(|m| Time::of(m.create_time.as_ref())),
            leaf_ok: link.message.is_some(),
        });
    }
    for (n, p) in nodes.iter_mut().zip(&parents) {
        n.parent = p.as_deref();
    }
    let ids: HashSet<&str> = nodes.iter().map(|n| n.id).collect();
    if ids.len() != nodes.len() {
        return None;
    }
    let named = env.get("current_node").and_then(Value::as_str);
    let b = chain::branch(&nodes, named, "current_node");
    let notes = b.note.into_iter().chain(chain::edits_note(b.off)).collect();
    b.path
        .windows(2)
        .all(|w| w[0] < w[1])
        .then_some((b.path, notes))
}

/// A node's id: its key in `mapping`.
fn key(r: &Record) -> &str {
    r.key.as_deref().unwrap_or_default()
}

/// Splices the removed nodes of a conversation read node by node out of
/// its tree: their children go to their parents, in their place, and
/// `current_node` follows when the node it named was removed.
fn splice_records(
    env: Option<&mut Map<String, Value>>,
    original: &[Record],
    out: &mut [OutRecord],
) {
    let mut kept = vec![false; original.len()];
    for o in out.iter() {
        if let Some(r) = o.from {
            kept[r] = true;
        }
    }
    let gone: HashSet<&str> = original
        .iter()
        .zip(&kept)
        .filter(|(r, k)| r.messages > 0 && !**k)
        .map(|(r, _)| key(r))
        .collect();
    if gone.is_empty() {
        return;
    }
    let links = original
        .iter()
        .map(|r| {
            let id = key(r);
            (
                id,
                r.value
                    .as_ref()
                    .map(|f| Links::of(f, id))
                    .unwrap_or_default(),
            )
        })
        .collect();
    let mut tree = Tree {
        links,
        order: original.iter().map(key).collect(),
        gone,
        by_parent: None,
        resolved: HashMap::new(),
    };
    for o in out.iter_mut() {
        let Some(id) = o.from.map(|r| key(&original[r])) else {
            continue;
        };
        let parent = tree.links.get(id).and_then(|l| l.parent.clone());
        let kids = tree.links.get(id).and_then(|l| l.children.clone());
        let new_parent = parent
            .filter(|p| tree.gone.contains(p.as_str()))
            .map(|p| tree.kept_parent(Some(&p)));
        let new_kids = kids
            .filter(|ks| {
                ks.iter()
                    .any(|k| k.as_str().is_some_and(|k| tree.gone.contains(k)))
            })
            .map(|ks| tree.spliced(ks));
        if new_parent.is_none() && new_kids.is_none() {
            continue;
        }
        let Some(mut node) = o.object().cloned() else {
            continue;
        };
        if let Some(p) = new_parent {
            node.insert("parent".into(), p.map_or(Value::Null, Value::from));
        }
        if let Some(kids) = new_kids {
            node.insert("children".into(), Value::Array(kids));
        }
        o.set(Value::Object(node));
    }
    let Some(env) = env else { return };
    let named = env.get("current_node").and_then(Value::as_str);
    if let Some(id) = named.and_then(|n| tree.gone.get(n).copied()) {
        let current = tree.kept_parent(Some(id));
        env.insert(
            "current_node".into(),
            current.map_or(Value::Null, Value::from),
        );
    }
}

impl Dialect for ChatGpt {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        // Read node by node, the envelope holds `null` at `mapping`, which
        // the writer's probe shows as a list (see `write::probe_value`).
        if obj.get("mapping").is_some_and(Value::is_array) {
            return Some(&["mapping"]);
        }
        let mapping = obj.get("mapping").is_some_and(Value::is_object);
        // An export entry that lost its tree still has the conversation's ids.
        let bare = !obj.contains_key("mapping")
            && obj.contains_key("conversation_id")
            && obj.contains_key("create_time");
        (mapping || bare).then_some(&[][..])
    }

    fn keyed_records(&self) -> Option<&'static str> {
        Some("mapping")
    }

    fn keyed_branch(
        &self,
        env: &Map<String, Value>,
        records: &[(String, &str)],
    ) -> Option<(Vec<usize>, Vec<String>)> {
        keyed_branch(env, records)
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
        let (_, b) = branch(env);
        conv.notes.extend(b.note);
        conv.notes.extend(chain::edits_note(b.off));
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

    /// A node of a conversation read node by node: its message, if any.
    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        Ok(match rec.get("message") {
            Some(Value::Object(msg)) => vec![message(msg)],
            _ => Vec::new(),
        })
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let new = match (rec.get("message"), msgs) {
            (Some(Value::Object(msg)), [m]) => rewrite(msg, m),
            _ => None,
        };
        let mut rec = rec.clone();
        if let Some(new) = new {
            rec.insert("message".into(), Value::Object(new));
        }
        Some(rec)
    }

    fn seal(&self, rec: &Map<String, Value>, msgs: &mut [Message]) {
        if let ([m], Some(Value::Object(msg))) = (msgs, rec.get("message")) {
            if rewrite(msg, m).is_none() {
                let seal = m.typed_digest();
                if let Some(o) = m.origin.as_mut() {
                    o.seal = seal;
                }
            }
        }
    }

    fn untouched(&self, _rec: &Fields, msgs: &[&Message]) -> bool {
        match msgs {
            [m] => m
                .origin
                .as_ref()
                .is_some_and(|o| o.seal != 0 && o.seal == m.typed_digest()),
            _ => false,
        }
    }

    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        if original.iter().any(|r| r.key.is_some()) {
            splice_records(env, original, out);
        }
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        crate::format::dialect::no_new_records(
            msgs,
            losses,
            "chatgpt exports cannot take new messages",
        )
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
    fn a_note_in_an_image_s_place_is_a_string_part() {
        let tree = TREE.replace(
            r#""parts":["hi"]"#,
            r#""parts":["hi",{"content_type":"image_asset_pointer","asset_pointer":"file-service://x"}]"#,
        );
        let mut doc = read_document("c.json", tree.into_bytes(), &Default::default()).unwrap();
        let content = &mut doc.conversations[0].messages[0].content;
        assert!(matches!(content.parts()[1].kind, PartKind::Image(_)));
        crate::transcript::note_in_place(content, 1, "[image removed]");
        let v: Value = serde_json::from_str(&write(&doc)).unwrap();
        assert_eq!(
            v[0]["mapping"]["a"]["message"]["content"]["parts"],
            serde_json::json!(["hi", "[image removed]"])
        );
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

    /// An export of `parents.len()` nodes (node 0 the root, `message:
    /// null`), the nodes written in `order`, `current_node` naming `leaf`;
    /// nodes in `bare` have no `children` list.
    fn export(parents: &[usize], order: &[usize], leaf: usize, bare: &[bool]) -> String {
        let mut mapping = Map::new();
        for &i in order {
            let kids: Vec<Value> = (1..parents.len())
                .filter(|&k| parents[k] == i)
                .map(|k| Value::from(format!("n{k}")))
                .collect();
            let mut node = serde_json::json!({
                "id": format!("n{i}"),
                "message": null,
                "parent": if i == 0 { Value::Null } else { Value::from(format!("n{}", parents[i])) },
            });
            if i > 0 {
                let role = if i % 2 == 1 { "user" } else { "assistant" };
                node["message"] = serde_json::json!({
                    "id": format!("n{i}"), "author": {"role": role}, "create_time": i as f64,
                    "content": {"content_type": "text", "parts": [format!("message {i}")]}});
            }
            if !bare[i] {
                node["children"] = Value::Array(kids);
            }
            mapping.insert(format!("n{i}"), node);
        }
        serde_json::to_string(&serde_json::json!([{
            "title": "t", "mapping": mapping, "current_node": format!("n{leaf}")}]))
        .unwrap()
    }

    proptest::proptest! {
        /// A conversation read node by node is spliced exactly as one read
        /// whole (which a branch against the `mapping`'s order forces).
        #[test]
        fn node_by_node_and_whole_splice_alike(
            picks in proptest::collection::vec(0usize..1000, 2..24),
            keep in proptest::collection::vec(proptest::bool::ANY, 24),
            bare in proptest::collection::vec(proptest::bool::weighted(0.03), 25),
            leaf in 0usize..1000,
        ) {
            let mut parents = vec![0];
            for (i, p) in picks.iter().enumerate() {
                parents.push(p % (i + 1));
            }
            let n = parents.len();
            let leaf = 1 + leaf % (n - 1);
            let forward: Vec<usize> = (0..n).collect();
            let backward: Vec<usize> = (0..n).rev().collect();
            let mut outs = Vec::new();
            for (order, keyed) in [(&forward, true), (&backward, false)] {
                let text = export(&parents, order, leaf, &bare);
                let mut doc = read_document("c.json", text.into(), &Default::default()).unwrap();
                let conv = &mut doc.conversations[0];
                proptest::prop_assert_eq!(!conv.records.is_empty(), keyed);
                let mut k = keep.iter();
                conv.messages.retain(|_| *k.next().unwrap());
                outs.push(serde_json::from_str::<Value>(&write(&doc)).unwrap());
            }
            if bare[..n].iter().any(|b| *b) {
                // Children found by their parent links come in document
                // order, which the two readings reverse.
                for out in &mut outs {
                    for node in out[0]["mapping"].as_object_mut().unwrap().values_mut() {
                        if let Some(Value::Array(kids)) = node.get_mut("children") {
                            kids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                        }
                    }
                }
            }
            proptest::prop_assert_eq!(&outs[0], &outs[1]);
        }
    }

    #[test]
    fn a_deep_export_is_held_as_spans() {
        let text = export(&[0, 0, 1, 2, 3], &[0, 1, 2, 3, 4], 4, &[false; 5]);
        let doc = read_document("c.json", text.clone().into(), &Default::default()).unwrap();
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages.len(), 4);
        assert_eq!(conv.records.len(), 5);
        assert!(conv
            .records
            .iter()
            .all(|r| r.value.as_ref().is_some_and(|f| f.span_text().is_some())));
        assert_eq!(conv.envelope.as_ref().unwrap()["mapping"], Value::Null);
        assert_eq!(write(&doc), text);
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
