//! LibreChat conversation exports: `{conversationId, endpoint, title,
//! options: {model, promptPrefix, …}, messages: [{messageId,
//! parentMessageId, isCreatedByUser, sender, text, content?, …}]}`, or with
//! `recursive: true`, the same messages nested under `messagesTree` with
//! their replies in `children`.
//!
//! An export holds every branch of the conversation (regenerations, edits);
//! the conversation is the chain from the newest message back through
//! `parentMessageId` (see [`crate::format::chain`]); the root's parent is the
//! all-zero id. Messages on other branches stay in place, untouched. The
//! system prompt is `options.promptPrefix`. Newer (agents) messages keep
//! their text and tool calls in `content` parts, each `tool_call` part
//! holding the call and its output: read as a call and its result, and
//! written back into the same part.

use serde_json::{Map, Value};

use crate::format::chain::{self, Node, Time};
use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{
    Content, Fields, Message, MessageData, Part, PartKind, Record, Role, ToolCall,
};

/// LibreChat exports.
pub(crate) struct LibreChat;

/// Whether a record is a LibreChat message.
pub(crate) fn is_message(r: &Map<String, Value>) -> bool {
    r.contains_key("messageId") && r.contains_key("parentMessageId")
}

/// A node of the message tree, from a message object.
fn node(m: &Map<String, Value>) -> Option<Node<'_>> {
    Some(Node {
        id: m.get("messageId")?.as_str()?,
        parent: m.get("parentMessageId").and_then(Value::as_str),
        time: Time::of(m.get("createdAt")),
        leaf_ok: true,
    })
}

/// A message of a recursive export: its parent's place in the flattened
/// list (`None` at the top), its position among its siblings, and itself.
type Flat<'a> = (Option<usize>, usize, &'a Map<String, Value>);

/// The messages of a recursive export, depth first, each with where it
/// hangs (its path is walked up only for the few that are edited: a path
/// per message was memory in the square of the depth). Walked with a stack
/// of its own, not recursion: a deep export does not touch the stack's end.
fn flatten(tree: &[Value]) -> Vec<Flat<'_>> {
    let mut out = Vec::new();
    // (parent, the list, the next position in it)
    let mut stack: Vec<(Option<usize>, &[Value], usize)> = vec![(None, tree, 0)];
    while let Some((parent, list, i)) = stack.pop() {
        if i >= list.len() {
            continue;
        }
        stack.push((parent, list, i + 1));
        let Some(m) = list[i].as_object() else {
            continue;
        };
        out.push((parent, i, m));
        if let Some(Value::Array(children)) = m.get("children") {
            stack.push((Some(out.len() - 1), children, 0));
        }
    }
    out
}

/// The path of child positions from the top to `flat[k]`.
fn path_of(flat: &[Flat<'_>], mut k: usize) -> Vec<usize> {
    let mut path = vec![flat[k].1];
    while let Some(p) = flat[k].0 {
        path.push(flat[p].1);
        k = p;
    }
    path.reverse();
    path
}

/// A message object without its replies (`children`): what is read from
/// it, and what it is compared and rewritten as (cloning a node with its
/// replies cloned the whole branch below it, for every message).
fn without_children(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| *k != "children")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The key of a recursive export's message tree: `messagesTree`, or
/// `messages` when it holds replies nested in `children` (exports with
/// `"recursive": true` write either).
fn tree_key(env: &Map<String, Value>) -> Option<&'static str> {
    if env.get("messagesTree").is_some_and(Value::is_array) {
        return Some("messagesTree");
    }
    let nested = env
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|l| {
            l.iter().any(|m| {
                m.get("children")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty())
            })
        });
    nested.then_some("messages")
}

/// The message at a path of child positions in a recursive export.
fn at_path<'a>(tree: &'a mut [Value], path: &[usize]) -> Option<&'a mut Map<String, Value>> {
    let (last, init) = path.split_last()?;
    let mut list = tree;
    for &i in init {
        list = match list.get_mut(i)?.as_object_mut()?.get_mut("children") {
            Some(Value::Array(children)) => children,
            _ => return None,
        };
    }
    list.get_mut(*last)?.as_object_mut()
}

impl Dialect for LibreChat {
    fn content_key(&self) -> Option<&'static str> {
        Some("text")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let export = obj.contains_key("conversationId") || obj.contains_key("exportAt");
        if !export {
            return None;
        }
        if tree_key(obj).is_some() {
            Some(&[])
        } else if obj.get("messages").is_some_and(Value::is_array) {
            Some(&["messages"])
        } else {
            None
        }
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        self.read_envelope_noted(env).map(|(messages, _)| messages)
    }

    /// A recursive export's messages, and a note of how many its other
    /// branches (edits, regenerations) hold, counted as the branch is
    /// found (a list export's are said as the reader passes them over).
    fn read_envelope_noted(
        &self,
        env: &Map<String, Value>,
    ) -> Result<(Vec<Message>, Vec<String>), Fault> {
        let mut out = Vec::new();
        let prefix = env.get("options").and_then(|o| o.get("promptPrefix"));
        if let Some(Value::String(p)) = prefix {
            out.push(Message::from(MessageData {
                fields: Fields::new(),
                ..MessageData::new(Role::System, p.as_str())
            }));
        }
        let Some(Value::Array(tree)) = tree_key(env).and_then(|k| env.get(k)) else {
            return Ok((out, Vec::new()));
        };
        let flat = flatten(tree);
        let nodes: Vec<Node<'_>> = flat.iter().filter_map(|(_, _, m)| node(m)).collect();
        let b = chain::branch(&nodes, None, "the newest message");
        let by_id = by_id(&flat);
        for i in b.path {
            if let Some(&k) = by_id.get(nodes[i].id) {
                out.extend(read_message(&Fields::from(without_children(flat[k].2)))?);
            }
        }
        Ok((out, chain::edits_note(b.off).into_iter().collect()))
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        // The system prompt.
        let system = msgs
            .iter()
            .find(|m| m.role == Role::System && m.fields.is_empty());
        if let Some(Value::Object(options)) = env.get_mut("options") {
            match (system, options.get("promptPrefix")) {
                (Some(m), Some(Value::String(_))) => {
                    set_if_changed(options, "promptPrefix", Value::from(m.content.text()))
                }
                (None, Some(Value::String(_))) => {
                    options.insert("promptPrefix".into(), Value::Null);
                }
                _ => {}
            }
        }
        let Some(key) = tree_key(env) else { return };
        let Some(Value::Array(tree)) = env.get(key) else {
            return;
        };
        let flat = flatten(tree);
        let nodes: Vec<Node<'_>> = flat.iter().filter_map(|(_, _, m)| node(m)).collect();
        let b = chain::branch(&nodes, None, "the newest message");
        let by_id = by_id(&flat);
        let mut groups: std::collections::HashMap<&str, Vec<&Message>> = Default::default();
        for m in msgs {
            if let Some(id) = message_id(m) {
                groups.entry(id).or_default().push(m);
            }
        }
        // For each node on the branch: its path, and its object rewritten
        // from the messages read from it that survive (`None`: all went).
        type Edit = (Vec<usize>, Option<Map<String, Value>>);
        let mut edits: Vec<Edit> = Vec::new();
        for i in &b.path {
            let id = nodes[*i].id;
            let Some(&k) = by_id.get(id) else { continue };
            let bare = without_children(flat[k].2);
            let group = groups.get(id).cloned().unwrap_or_default();
            let new = if group.is_empty() {
                None
            } else {
                write_message(&bare, &group)
            };
            if new.as_ref() != Some(&bare) {
                edits.push((path_of(&flat, k), new));
            }
        }
        let Some(Value::Array(tree)) = env.get_mut(key) else {
            return;
        };
        // Deepest first, so that removing a node does not move the others.
        edits.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(b.0.cmp(&a.0)));
        for (path, new) in edits {
            match new {
                Some(m) => {
                    if let Some(slot) = at_path(tree, &path) {
                        // The replies stay where they were among its keys.
                        let at = slot.keys().position(|k| k == "children");
                        let children = slot.shift_remove("children");
                        *slot = m;
                        if let (Some(at), Some(c)) = (at, children) {
                            slot.shift_insert(at.min(slot.len()), "children".into(), c);
                        }
                    }
                }
                None => remove_nested(tree, &path),
            }
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_message(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        write_message(rec, msgs)
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
            "librechat exports take no new messages",
        )
    }

    fn takes_new_messages(&self, _conv: &crate::transcript::Conversation) -> bool {
        false
    }

    fn picks_active(&self) -> bool {
        true
    }

    /// Says how many messages the other branches (edits, regenerations)
    /// of a list export hold: kept in place and not read.
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        chain::edits_note(chain::passed(active))
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        let nodes: Vec<(usize, Node<'_>)> = records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, node((*r)?)?)))
            .collect();
        let list: Vec<Node<'_>> = nodes.iter().map(|(_, n)| n.clone()).collect();
        let b = chain::branch(&list, None, "the newest message");
        let mut active = vec![false; records.len()];
        for i in b.path {
            active[nodes[i].0] = true;
        }
        // Records that are not messages are never a branch of their own.
        for (i, r) in records.iter().enumerate() {
            if r.is_none_or(|r| node(r).is_none()) {
                active[i] = true;
            }
        }
        active.contains(&false).then_some(active)
    }

    fn branch_moved(
        &self,
        env: Option<&Map<String, Value>>,
        _out: &[OutRecord],
        conv: &crate::transcript::Conversation,
    ) -> Option<Loss> {
        let kept = conv.messages.iter().rev().find_map(message_id)?;
        // The tree in the envelope (a recursive export); a list of records
        // is the writer's to check, by `active`.
        let tree = env
            .and_then(|e| e.get(tree_key(e)?))
            .and_then(Value::as_array)?;
        let flat = flatten(tree);
        let nodes: Vec<Node<'_>> = flat.iter().filter_map(|(_, _, m)| node(m)).collect();
        let leaf = newest_leaf_id(&nodes)?;
        (leaf != kept).then(|| {
            Loss::request(
                "the branch kept as the conversation",
                format!(
                    "a LibreChat export is the branch of its newest message, and the last message kept ({kept}) is no longer the newest: LibreChat, and ctxclean reading this file again, follow the branch that ends at {leaf}"
                ),
            )
        })
    }

    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        // A removed message's replies hang on its parent.
        let parent_of: std::collections::HashMap<&str, Option<&str>> = original
            .iter()
            .filter_map(|r| {
                let v = r.value.as_ref()?;
                Some((
                    v.get("messageId")?.as_str()?,
                    v.get("parentMessageId").and_then(Value::as_str),
                ))
            })
            .collect();
        let kept: std::collections::HashSet<String> = out
            .iter()
            .filter_map(|r| r.object()?.get("messageId")?.as_str().map(str::to_string))
            .collect();
        let mut memo = std::collections::HashMap::new();
        for r in out.iter_mut() {
            let Some(m) = r.object() else {
                continue;
            };
            let Some(p) = m.get("parentMessageId").and_then(Value::as_str) else {
                continue;
            };
            if kept.contains(p) {
                continue;
            }
            let Some((&p, _)) = parent_of.get_key_value(p) else {
                continue;
            };
            let stop = |q: &str| kept.contains(q) || !parent_of.contains_key(q);
            // No kept ancestor (a root went, or a loop): LibreChat's root marker.
            let up = crate::format::chain::nearest_kept(p, &parent_of, stop, &mut memo)
                .unwrap_or(NO_PARENT);
            let mut m = m.clone();
            m.insert("parentMessageId".into(), Value::from(up));
            r.set(Value::Object(m));
        }
    }
}

/// The parent LibreChat gives a first message (`Constants.NO_PARENT`).
const NO_PARENT: &str = "00000000-0000-0000-0000-000000000000";

/// Positions in a flattened tree, by message id.
fn by_id<'a>(flat: &[Flat<'a>]) -> std::collections::HashMap<&'a str, usize> {
    flat.iter()
        .enumerate()
        .filter_map(|(k, (_, _, m))| Some((m.get("messageId")?.as_str()?, k)))
        .collect()
}

/// The id of the leaf the branch of `nodes` ends at.
fn newest_leaf_id(nodes: &[Node<'_>]) -> Option<String> {
    let b = chain::branch(nodes, None, "the newest message");
    Some(nodes[*b.path.last()?].id.to_string())
}

/// The id of the message object a message was read from.
fn message_id(m: &Message) -> Option<&str> {
    m.fields.get("messageId").and_then(Value::as_str)
}

/// Removes the node at `path`, putting its children in its place with the
/// node's parent as theirs.
fn remove_nested(tree: &mut Vec<Value>, path: &[usize]) {
    let Some((last, init)) = path.split_last() else {
        return;
    };
    let list: &mut Vec<Value> = if init.is_empty() {
        tree
    } else {
        match at_path(tree, init).and_then(|m| m.get_mut("children")) {
            Some(Value::Array(children)) => children,
            _ => return,
        }
    };
    if *last >= list.len() {
        return;
    }
    let mut removed = list.remove(*last);
    let parent = removed
        .get("parentMessageId")
        .cloned()
        .unwrap_or(Value::Null);
    // Its replies moved up, not copied (a copy is the whole branch below).
    let children = removed
        .as_object_mut()
        .and_then(|m| m.shift_remove("children"));
    if let Some(Value::Array(children)) = children {
        let tail = list.split_off(*last);
        for mut c in children {
            if let Some(obj) = c.as_object_mut() {
                obj.insert("parentMessageId".into(), parent.clone());
            }
            list.push(c);
        }
        list.extend(tail);
    }
}

/// Reads one LibreChat message: its text (or `content` parts), and for an
/// agents message, each `tool_call` part as a call with its output as the
/// result.
fn read_message(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let role = match rec.get("isCreatedByUser") {
        Some(Value::Bool(true)) => Role::User,
        Some(Value::Bool(false)) => Role::Assistant,
        _ => match rec.get("sender").and_then(Value::as_str) {
            Some(s) if s.eq_ignore_ascii_case("user") => Role::User,
            Some(_) => Role::Assistant,
            None => return Err("a message has neither \"isCreatedByUser\" nor \"sender\"".into()),
        },
    };
    let mut m = Message::from(MessageData {
        fields: rec.clone(),
        ..MessageData::new(role, "")
    });
    let parts = rec
        .get("content")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty());
    let Some(parts) = parts else {
        m.content = match rec.get("text") {
            Some(Value::String(t)) => Content::Text(t.clone()),
            Some(Value::Null) => Content::Null,
            _ => Content::Absent,
        };
        return Ok(vec![m]);
    };
    let mut content = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let ty = p.get("type").and_then(Value::as_str);
        match (ty, p.get("tool_call")) {
            (Some("tool_call"), Some(Value::Object(tc))) => {
                let id = tc.get("id").and_then(Value::as_str).map(str::to_string);
                let name = tc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_string();
                calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments_text(tc.get("args").unwrap_or(&Value::Null)),
                    raw: p.clone().into(),
                    slot: Some(k),
                });
                if let Some(output) = tc.get("output").filter(|o| !o.is_null()) {
                    results.push(Message::from(MessageData {
                        content: Content::Text(arguments_text(output)),
                        tool_call_id: id,
                        name: Some(name),
                        fields: rec.clone(),
                        ..MessageData::new(Role::Tool, "")
                    }));
                }
            }
            (Some("text"), _) => {
                let text = match p.get("text") {
                    // Older agents parts: {"type": "text", "text": {"value": …}}.
                    Some(Value::Object(t)) => t.get("value").and_then(Value::as_str),
                    Some(Value::String(t)) => Some(t.as_str()),
                    _ => None,
                };
                content.push(Part {
                    kind: text.map_or(PartKind::Other, |t| PartKind::Text(t.to_string())),
                    raw: p.clone().into(),
                    slot: Some(k),
                });
            }
            _ => content.push(Part {
                kind: PartKind::Other,
                raw: p.clone().into(),
                slot: Some(k),
            }),
        }
    }
    m.content = Content::Parts(content);
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    let mut out = vec![m];
    out.extend(results);
    Ok(out)
}

fn part_type(p: &Value) -> Option<&str> {
    p.get("type").and_then(Value::as_str)
}

/// Whether a `tool_call` holds an output (a result was read from it).
fn has_output(tc: &Value) -> bool {
    tc.get("output").is_some_and(|o| !o.is_null())
}

/// Writes a message back from the messages read from it.
fn write_message(rec: &Map<String, Value>, msgs: &[&Message]) -> Option<Map<String, Value>> {
    let main_at = msgs.iter().position(|m| !m.role.is_result())?;
    let main = msgs[main_at];
    let mut out = rec.clone();
    let Some(Value::Array(orig_parts)) = rec
        .get("content")
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    else {
        match crate::format::openai::content_value(&main.content, rec.get("text")) {
            Some(v) => set_if_changed(&mut out, "text", v),
            None => {
                out.shift_remove("text");
            }
        }
        return Some(out);
    };
    let mut items: Vec<(usize, Value)> = Vec::new();
    let mut fresh = orig_parts.len();
    for p in main.content.parts() {
        let slot = p.slot.unwrap_or_else(|| {
            fresh += 1;
            fresh
        });
        let v = match (&p.kind, p.raw.get("text")) {
            // The older shape keeps the text under `text.value`.
            (PartKind::Text(t), Some(Value::Object(inner))) => {
                let mut inner = inner.clone();
                set_if_changed(&mut inner, "value", Value::from(t.as_str()));
                let mut part = p.raw.as_object().cloned().unwrap_or_default();
                part.insert("text".into(), Value::Object(inner));
                Value::Object(part)
            }
            _ => p.to_value(),
        };
        items.push((slot, v));
    }
    let tool_calls = orig_parts
        .iter()
        .filter(|p| part_type(p) == Some("tool_call"))
        .filter_map(|p| p.get("tool_call").filter(|t| t.is_object()));
    let read = (
        tool_calls.clone().count(),
        tool_calls.filter(|t| has_output(t)).count(),
    );
    let had_output = |c: &ToolCall| c.raw.get("tool_call").is_some_and(has_output);
    let answers = crate::format::dialect::embedded_answers(msgs, read, had_output);
    for (k, c) in main.calls().iter().enumerate() {
        let slot = c.slot.unwrap_or_else(|| {
            fresh += 1;
            fresh
        });
        let mut part = c.raw.as_object().cloned().unwrap_or_default();
        let mut tc = part
            .get("tool_call")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if tc.get("args").map(arguments_text).as_deref() != Some(c.arguments.as_str()) {
            tc.insert("args".into(), arguments_value(&c.arguments));
        }
        let result = answers[main_at][k].map(|a| msgs[a]);
        match (result, tc.get("output")) {
            (Some(r), orig) => {
                let text = r.content.text();
                if orig.map(arguments_text).as_deref() != Some(text.as_str()) {
                    tc.insert("output".into(), Value::from(text));
                }
            }
            (None, Some(o)) if !o.is_null() => {
                tc.insert("output".into(), Value::Null);
            }
            _ => {}
        }
        part.insert("tool_call".into(), Value::Object(tc));
        items.push((slot, Value::Object(part)));
    }
    items.sort_by_key(|(k, _)| *k);
    let content = Value::Array(items.into_iter().map(|(_, v)| v).collect());
    set_if_changed(&mut out, "content", content);
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};

    const BRANCHES: &str = r#"{"conversationId":"c","exportAt":"t","recursive":false,"options":{"model":"gpt-4o","promptPrefix":null},"messages":[
{"messageId":"u1","parentMessageId":"00000000-0000-0000-0000-000000000000","isCreatedByUser":true,"sender":"User","text":"tell me a story","createdAt":"2024-05-28T18:08:55.014Z"},
{"messageId":"a1","parentMessageId":"u1","isCreatedByUser":false,"sender":"GPT-4","text":"first try","createdAt":"2024-05-28T18:08:55.390Z"},
{"messageId":"a2","parentMessageId":"u1","isCreatedByUser":false,"sender":"GPT-4","text":"second try","createdAt":"2024-05-28T18:09:27.444Z"}]}"#;

    #[test]
    fn the_newest_branch_is_the_conversation_and_the_rest_stays() {
        let doc = read_document("l.json", BRANCHES.into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::LibreChat);
        let texts: Vec<String> = doc.conversations[0]
            .messages
            .iter()
            .map(|m| m.content.text())
            .collect();
        assert_eq!(texts, ["tell me a story", "second try"]);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), BRANCHES);
    }

    #[test]
    fn tool_call_parts_that_share_an_id_keep_their_outputs() {
        // Two calls of one id in one message (a model's bug that
        // `validate` names), one without an output, one without an id:
        // each part is written back with its own output.
        let text = r#"{"conversationId":"c","exportAt":"t","recursive":false,"options":{"model":"gpt-4o"},"messages":[
{"messageId":"u1","parentMessageId":"00000000-0000-0000-0000-000000000000","isCreatedByUser":true,"text":"look","createdAt":"1"},
{"messageId":"a1","parentMessageId":"u1","isCreatedByUser":false,"text":"","createdAt":"2","content":[{"type":"text","text":"reading"},{"type":"tool_call","tool_call":{"id":"x","name":"read","args":"{\"p\":\"a\"}","output":"bare"}},{"type":"tool_call","tool_call":{"id":"x","name":"read","args":"{\"p\":\"b\"}","output":null}},{"type":"tool_call","tool_call":{"id":"x","name":"read","args":"{\"p\":\"c\"}","output":"cold"}},{"type":"tool_call","tool_call":{"name":"read","args":"{\"p\":\"d\"}","output":"dim"}}]}]}"#;
        let results = |d: &crate::format::Document| -> Vec<String> {
            d.conversations[0]
                .messages
                .iter()
                .filter(|m| m.role.is_result())
                .map(|m| m.content.text())
                .collect()
        };
        let mut doc = read_document("l.json", text.into(), &Default::default()).unwrap();
        assert_eq!(results(&doc), ["bare", "cold", "dim"]);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        // The second result of `x` changed: only its own part changes.
        let msgs = &mut doc.conversations[0].messages;
        let cold = msgs
            .iter()
            .position(|m| m.content.text() == "cold")
            .unwrap();
        msgs[cold].content = crate::transcript::Content::Text("[compacted]".into());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let parts = &v["messages"][1]["content"];
        let outputs: Vec<serde_json::Value> = (1..5)
            .map(|k| parts[k]["tool_call"]["output"].clone())
            .collect();
        let want = serde_json::json!(["bare", null, "[compacted]", "dim"]);
        assert_eq!(serde_json::Value::from(outputs), want);
        // An operation took the call "bare" was read with, and kept "bare"
        // (the conversation pairs it with the other call of `x`): written,
        // "bare" goes with the call that stays, and read again the file is
        // the conversation that was written (it kept the stripped call's
        // part for the result beside it, or dropped the result).
        let text = text
            .replace(
                r#",{"type":"tool_call","tool_call":{"id":"x","name":"read","args":"{\"p\":\"c\"}","output":"cold"}}"#,
                "",
            )
            .replace(
                "]}]}",
                r#"]},{"messageId":"u2","parentMessageId":"a1","isCreatedByUser":true,"text":"and?","createdAt":"3"}]}"#,
            );
        let mut doc = read_document("l.json", text.into(), &Default::default()).unwrap();
        let msgs = &mut doc.conversations[0].messages;
        let calls = msgs[1].tool_calls.as_mut().unwrap();
        assert_eq!(calls.len(), 3);
        calls.remove(0);
        let mut written = Vec::new();
        write_document(&doc, &mut written).unwrap();
        let back = read_document("l.json", written, &Default::default()).unwrap();
        let texts = |d: &crate::format::Document| -> Vec<(String, usize)> {
            d.conversations[0]
                .messages
                .iter()
                .map(|m| (m.content.text(), m.calls().len()))
                .collect()
        };
        assert_eq!(texts(&back), texts(&doc));
        assert_eq!(results(&back), ["bare", "dim"]);
    }

    #[test]
    fn a_recursive_export_is_read_along_its_newest_branch_and_edited_in_place() {
        let text = r#"{"conversationId":"c","exportAt":"t","recursive":true,"messagesTree":[{"messageId":"u1","parentMessageId":"00000000-0000-0000-0000-000000000000","isCreatedByUser":true,"text":"Q1","createdAt":"1","children":[{"messageId":"a1","parentMessageId":"u1","isCreatedByUser":false,"text":"A1","createdAt":"2","children":[{"messageId":"u2","parentMessageId":"a1","isCreatedByUser":true,"text":"Q2","createdAt":"3","children":[]}]}]}]}"#;
        let mut doc = read_document("l.json", text.into(), &Default::default()).unwrap();
        assert_eq!(doc.conversations[0].messages.len(), 3);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        // Removing the middle message hangs its reply on the first.
        doc.conversations[0].messages.remove(1);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let first = &v["messagesTree"][0];
        assert_eq!(first["children"][0]["messageId"], "u2");
        assert_eq!(first["children"][0]["parentMessageId"], "u1");
        let back = read_document("l.json", out, &Default::default()).unwrap();
        assert_eq!(back.conversations[0].messages.len(), 2);
    }
}
