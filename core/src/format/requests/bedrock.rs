//! Amazon Bedrock's Converse API: a request's `messages` of user and
//! assistant turns whose `content` is a list of blocks, each an object of
//! one key (`{"text": …}`, `{"toolUse": {toolUseId, name, input}}`,
//! `{"toolResult": {toolUseId, content, status}}`, `{"image": …}`,
//! `{"reasoningContent": …}`, `{"document": …}`, `{"cachePoint": …}`),
//! `system` a list of such blocks; and a Converse response, the answer in
//! `output.message`, with `stopReason` and `usage`.
//!
//! As for Anthropic, an assistant turn is one message (its text, reasoning
//! and other blocks as parts, its `toolUse` blocks as calls) and a user
//! turn is one tool message per `toolResult` block plus, when it has other
//! blocks, one user message; writing puts every block back in its place.
//! Reasoning blocks (with their signature) are kept as they are and never
//! counted as text. Converse is read and written back in its own shape; it
//! is not a `--to` target.

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{
    Content, Fields, Image, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// The keys of Converse content blocks.
pub(crate) const BLOCK_KEYS: &[&str] = &[
    "text",
    "toolUse",
    "toolResult",
    "image",
    "document",
    "video",
    "reasoningContent",
    "cachePoint",
    "guardContent",
    "citationsContent",
];

/// Whether a value is a Converse content block: an object of one known
/// key, and no `type`.
pub(crate) fn is_block(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 1 && o.keys().all(|k| BLOCK_KEYS.contains(&k.as_str())))
}

/// Whether a record is a Converse message: a role, and a non-empty list of
/// Converse blocks whose keys no other format's blocks have alone.
pub(crate) fn is_message(r: &Map<String, Value>) -> bool {
    let role = matches!(
        r.get("role").and_then(Value::as_str),
        Some("user" | "assistant")
    );
    role && r
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| !blocks.is_empty() && blocks.iter().all(is_block))
}

/// Whether an object is a Converse response: `output.message`, with its
/// stop reason or usage.
pub(crate) fn is_answer(obj: &Map<String, Value>) -> bool {
    obj.get("output")
        .and_then(|o| o.get("message"))
        .is_some_and(Value::is_object)
        && (obj.contains_key("stopReason") || obj.contains_key("usage"))
}

/// Amazon Bedrock Converse requests and responses.
pub(crate) struct Bedrock;

fn part(b: &Value, slot: Option<usize>) -> Part {
    let kind = match b.as_object().and_then(|o| o.iter().next()) {
        Some((k, Value::String(t))) if k == "text" => PartKind::Text(t.clone()),
        Some((k, img)) if k == "image" => PartKind::Image(Image {
            media_type: img
                .get("format")
                .and_then(Value::as_str)
                .map(|f| format!("image/{f}")),
            ..Image::default()
        }),
        _ => PartKind::Other,
    };
    Part {
        kind,
        raw: b.clone().into(),
        slot,
    }
}

fn parts(blocks: &[Value]) -> Vec<Part> {
    blocks
        .iter()
        .enumerate()
        .map(|(k, b)| part(b, Some(k)))
        .collect()
}

fn inner<'a>(b: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    b.get(key)?.as_object()
}

fn tool_use(b: &Value, k: usize) -> Result<ToolCall, Fault> {
    let u = inner(b, "toolUse").ok_or("a toolUse block must hold an object")?;
    Ok(ToolCall {
        id: u
            .get("toolUseId")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: u
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a toolUse block has no \"name\"")?
            .to_string(),
        arguments: arguments_text(u.get("input").unwrap_or(&Value::Null)),
        raw: b.clone().into(),
        slot: Some(k),
    })
}

fn tool_result(b: &Value) -> Result<Message, Fault> {
    let r = inner(b, "toolResult").ok_or("a toolResult block must hold an object")?;
    let content = match r.get("content") {
        None => Content::Absent,
        Some(Value::Array(blocks)) => {
            Content::Parts(blocks.iter().map(|b| part(b, None)).collect())
        }
        Some(_) => return Err("toolResult \"content\" must be a list of blocks".into()),
    };
    Ok(Message::from(MessageData {
        content,
        tool_call_id: r
            .get("toolUseId")
            .and_then(Value::as_str)
            .map(str::to_string),
        fields: b.as_object().cloned().unwrap_or_default().into(),
        ..MessageData::new(Role::Tool, "")
    }))
}

fn base(role: Role, content: Content, rec: &Fields) -> Message {
    Message::from(MessageData {
        content,
        fields: rec.clone(),
        ..MessageData::new(role, "")
    })
}

/// Reads a Converse message into messages (see the module docs).
fn read_message(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let role = crate::format::dialect::user_or_assistant(rec, "Converse")?;
    let blocks = match rec.get("content") {
        Some(Value::Array(blocks)) => blocks,
        Some(Value::String(s)) => return Ok(vec![base(role, Content::Text(s.clone()), rec)]),
        None => return Ok(vec![base(role, Content::Absent, rec)]),
        Some(_) => return Err("\"content\" must be a list of blocks".into()),
    };
    let mut out = Vec::new();
    let (mut own, mut calls, mut at) = (Vec::new(), Vec::new(), None);
    for (k, b) in blocks.iter().enumerate() {
        match b
            .as_object()
            .and_then(|o| o.keys().next())
            .map(String::as_str)
        {
            Some("toolUse") if role == Role::Assistant => calls.push(tool_use(b, k)?),
            Some("toolResult") if role == Role::User => out.push(tool_result(b)?),
            _ => {
                at.get_or_insert(out.len());
                own.push(part(b, Some(k)));
            }
        }
    }
    if role == Role::Assistant || at.is_some() || out.is_empty() {
        let mut m = base(role, Content::Parts(own), rec);
        if !calls.is_empty() {
            m.tool_calls = Some(calls);
        }
        out.insert(at.unwrap_or(0).min(out.len()), m);
    }
    Ok(out)
}

/// A toolUse block: the original with its id, name and input updated.
fn tool_use_value(c: &ToolCall) -> Value {
    let mut u = inner(&c.raw, "toolUse").cloned().unwrap_or_default();
    if let Some(id) = &c.id {
        set_if_changed(&mut u, "toolUseId", Value::from(id.as_str()));
    }
    set_if_changed(&mut u, "name", Value::from(c.name.as_str()));
    if u.get("input")
        .is_none_or(|i| arguments_text(i) != c.arguments)
    {
        u.insert("input".into(), arguments_value(&c.arguments));
    }
    let mut b = Map::new();
    b.insert("toolUse".into(), Value::Object(u));
    Value::Object(b)
}

/// A content list for text or parts.
fn blocks_for(content: &Content) -> Vec<Value> {
    match content {
        Content::Parts(ps) => ps.iter().map(Part::to_value_untyped).collect(),
        Content::Absent | Content::Null => Vec::new(),
        other => vec![text_block(&other.text())],
    }
}

fn text_block(text: &str) -> Value {
    let mut b = Map::new();
    b.insert("text".into(), Value::from(text));
    Value::Object(b)
}

/// A toolResult block: the original with its content updated.
fn tool_result_value(m: &Message) -> Value {
    let mut r = m
        .fields
        .get("toolResult")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(id) = &m.tool_call_id {
        set_if_changed(&mut r, "toolUseId", Value::from(id.as_str()));
    }
    if m.content != Content::Absent {
        set_if_changed(&mut r, "content", Value::Array(blocks_for(&m.content)));
    }
    let mut b = Map::new();
    b.insert("toolResult".into(), Value::Object(r));
    Value::Object(b)
}

/// Writes a Converse message back from the messages read from it.
fn write_message(rec: &Map<String, Value>, msgs: &[&Message]) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    let Some(Value::Array(blocks)) = rec.get("content") else {
        let m = msgs.first()?;
        set_if_changed(&mut out, "content", Value::from(m.content.text()));
        return Some(out);
    };
    let mut result_at = crate::format::dialect::ResultSlots::new(
        blocks
            .iter()
            .enumerate()
            .filter_map(|(k, b)| Some((inner(b, "toolResult")?.get("toolUseId")?.as_str()?, k))),
    );
    let mut fresh = blocks.len();
    let mut next = || {
        fresh += 1;
        fresh
    };
    let mut items: Vec<(usize, Value)> = Vec::new();
    for m in msgs {
        if m.role.is_result() {
            // Its block is what it was read from.
            let own = |k: usize| blocks[k].as_object().is_some_and(|b| m.fields == *b);
            let slot = result_at.take_own(m.tool_call_id.as_deref(), own);
            items.push((slot.unwrap_or_else(&mut next), tool_result_value(m)));
            continue;
        }
        match &m.content {
            Content::Parts(ps) => {
                for p in ps {
                    items.push((p.slot.unwrap_or_else(&mut next), p.to_value_untyped()));
                }
            }
            other => {
                for b in blocks_for(other) {
                    items.push((next(), b));
                }
            }
        }
        for c in m.calls() {
            items.push((c.slot.unwrap_or_else(&mut next), tool_use_value(c)));
        }
    }
    if items.is_empty() {
        return None;
    }
    items.sort_by_key(|(slot, _)| *slot);
    let content = Value::Array(items.into_iter().map(|(_, v)| v).collect());
    set_if_changed(&mut out, "content", content);
    Some(out)
}

/// A Converse message for a message of any format; what it cannot say is
/// told in `losses`.
fn new_message(m: &Message, index: Option<usize>, losses: &mut Vec<Loss>) -> Option<Value> {
    let mut content = Vec::new();
    if m.role.is_result() {
        let mut r = Map::new();
        if let Some(id) = &m.tool_call_id {
            r.insert("toolUseId".into(), Value::from(id.as_str()));
        }
        r.insert(
            "content".into(),
            Value::Array(vec![text_block(&m.content.text())]),
        );
        let mut b = Map::new();
        b.insert("toolResult".into(), Value::Object(r));
        content.push(Value::Object(b));
    } else {
        for p in m.content.parts() {
            match &p.kind {
                PartKind::Text(t) => content.push(text_block(t)),
                _ if is_block(&p.raw) => content.push(Value::clone(&p.raw)),
                _ => losses.push(Loss::at(
                    index,
                    "non-text part",
                    "converse cannot take it as it is",
                )),
            }
        }
        if let Content::Text(t) = &m.content {
            content.push(text_block(t));
        }
        for c in m.calls() {
            let mut u = Map::new();
            if let Some(id) = &c.id {
                u.insert("toolUseId".into(), Value::from(id.as_str()));
            }
            u.insert("name".into(), Value::from(c.name.as_str()));
            u.insert("input".into(), arguments_value(&c.arguments));
            let mut b = Map::new();
            b.insert("toolUse".into(), Value::Object(u));
            content.push(Value::Object(b));
        }
    }
    if m.role.is_instruction() {
        losses.push(Loss::at(
            index,
            "system message",
            "written as a user turn: converse takes instructions only in \"system\"",
        ));
    }
    let role = if m.role == Role::Assistant {
        "assistant"
    } else {
        "user"
    };
    let mut out = Map::new();
    out.insert("role".into(), Value::from(role));
    out.insert("content".into(), Value::Array(content));
    Some(Value::Object(out))
}

/// The message of a Converse response, as a record of its own.
fn answer_message(env: &Map<String, Value>) -> Option<&Map<String, Value>> {
    env.get("output")?.get("message")?.as_object()
}

impl Dialect for Bedrock {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if is_answer(obj) {
            // A response: the message lives in the envelope.
            return Some(&[]);
        }
        crate::format::wrap::list_path(obj, "messages")
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        if let Some(msg) = answer_message(env).filter(|_| is_answer(env)) {
            return read_message(&Fields::from(msg.clone()));
        }
        let env = crate::format::wrap::body(env);
        match env.get("system") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(blocks)) => Ok(vec![Message::from(MessageData {
                content: Content::Parts(parts(blocks)),
                ..MessageData::new(Role::System, "")
            })]),
            Some(_) => Err("\"system\" must be a list of blocks".into()),
        }
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        if is_answer(env) {
            let Some(msg) = answer_message(env).cloned() else {
                return;
            };
            let new = write_message(&msg, msgs).unwrap_or_else(|| {
                let mut m = msg.clone();
                m.insert("content".into(), Value::Array(Vec::new()));
                m
            });
            if let Some(Value::Object(output)) = env.get_mut("output") {
                set_if_changed(output, "message", Value::Object(new));
            }
            return;
        }
        let env = crate::format::wrap::body_mut(env);
        match msgs.first() {
            None => {
                env.shift_remove("system");
            }
            Some(m) => set_if_changed(env, "system", Value::Array(blocks_for(&m.content))),
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
        msgs.iter()
            .filter_map(|m| new_message(m, m.input_index(), losses))
            .collect()
    }
}
