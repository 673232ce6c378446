//! Cursor agent transcripts (`~/.cursor/projects/<project>/agent-transcripts/
//! <id>/<id>.jsonl`, a subagent's under `subagents/` beside it): one line per
//! message, `{"role": "user"|"assistant", "message": {"content": [blocks]}}`,
//! the blocks Anthropic's (`text`, `thinking`, `tool_use`), a user's text
//! wrapped in `<user_query>`; `{"type": "turn_ended", …}` lines between
//! turns pass through in place.
//!
//! Cursor writes these for people to read back: its calls carry no id, and
//! their results are not kept. A call is read as a call, and a note says
//! how many have no result in the file.

use serde_json::{Map, Value};

use crate::format::anthropic::{new_messages, read_message, write_message};
use crate::format::dialect::{Dialect, Fault, Loss};
use crate::numbers::plural;
use crate::transcript::{Conversation, Fields, Message, MessageData};

/// Cursor agent transcripts.
pub(crate) struct Cursor;

/// The message of a transcript line, when it is one: `role` beside a
/// `message` object that holds only the content.
fn message(r: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let role = r.get("role")?.as_str()?;
    if !matches!(role, "user" | "assistant") || r.contains_key("type") {
        return None;
    }
    let m = r.get("message")?.as_object()?;
    (m.contains_key("content") && !m.contains_key("role")).then_some(m)
}

/// Whether lines are a Cursor agent transcript: message lines, and
/// `turn_ended` lines between them.
pub(crate) fn is_transcript(records: &[&Map<String, Value>]) -> bool {
    records.iter().any(|r| message(r).is_some())
        && records.iter().all(|r| {
            message(r).is_some() || r.get("type").and_then(Value::as_str) == Some("turn_ended")
        })
}

/// A line's message as an Anthropic message: its role put inside.
fn as_anthropic(r: &Map<String, Value>, m: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("role".into(), r["role"].clone());
    out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

impl Dialect for Cursor {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let Some(m) = message(rec) else {
            return Ok(Vec::new());
        };
        let mut out = read_message(&Fields::from(as_anthropic(rec, m)))?;
        // A result keeps its block as its fields (`is_error`), which is
        // what it is written back from.
        for msg in out.iter_mut().filter(|m| !m.role.is_result()) {
            msg.fields = Fields::from(m.clone());
        }
        Ok(out)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let Some(m) = message(rec) else {
            return Some(rec.clone());
        };
        let mut new = write_message(&as_anthropic(rec, m), msgs)?;
        let role = new.shift_remove("role");
        let mut out = rec.clone();
        if let Some(role) = role.filter(|r| Some(r) != rec.get("role")) {
            out.insert("role".into(), role);
        }
        if new != *m {
            out.insert("message".into(), Value::Object(new));
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out: Vec<Value> = new_messages(msgs, env, losses)
            .into_iter()
            .map(|mut m| {
                let role = m.shift_remove("role").unwrap_or(Value::from("user"));
                serde_json::json!({"role": role, "message": Value::Object(m)})
            })
            .collect();
        // A system prompt has no line of its own in a transcript.
        crate::format::dialect::system_as_first_line(env, &mut out, |mut m| {
            let role = m.as_object_mut().and_then(|o| o.shift_remove("role"));
            serde_json::json!({"role": role, "message": m})
        });
        out
    }

    /// Calls whose results Cursor did not keep, said.
    fn after_read(&self, conv: &mut Conversation) {
        let answered: std::collections::HashSet<&str> = conv
            .messages
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let open = conv
            .messages
            .iter()
            .flat_map(|m| m.calls())
            .filter(|c| c.id.as_deref().is_none_or(|id| !answered.contains(id)))
            .count();
        if open > 0 {
            conv.notes.push(format!(
                "a Cursor agent transcript keeps no tool results: {} without {} in the file",
                plural(open, "tool call"),
                if open == 1 { "its" } else { "theirs" }
            ));
        }
    }
}

/// Cursor's chats as the editor keeps them (`globalStorage/state.vscdb`,
/// its `cursorDiskKV` table), each chat put together by the CLI as
/// `{composer, bubbles}`: the `composerData:<id>` value as stored, and the
/// bubbles of its `fullConversationHeadersOnly` in order (`bubbleId:<id>:
/// <bubble>` values, or the inline `conversation` of older versions).
///
/// A bubble of `type` 1 is the user's `text`; of `type` 2, the assistant's
/// `thinking.text` and `text`, and its `toolFormerData` (`name`, `rawArgs`
/// or `params`, `result`, `toolCallId`) a call and its result. A bubble with
/// none of these (Cursor writes many, empty) passes through. What the editor
/// adds when it sends (attached files, rules, its system prompt) is not in
/// the bubbles and not read.
pub(crate) struct CursorIde;

/// Whether an object is a Cursor chat as put together from the database.
pub(crate) fn is_composer(obj: &Map<String, Value>) -> bool {
    obj.get("composer")
        .and_then(|c| c.get("composerId"))
        .is_some_and(Value::is_string)
        && obj.get("bubbles").is_some_and(Value::is_array)
}

/// A bubble's call: `toolFormerData`, when it names a tool.
fn tool_former(b: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let t = b.get("toolFormerData")?.as_object()?;
    t.get("name")
        .or_else(|| t.get("tool"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
        .then_some(t)
}

/// A call's arguments: `rawArgs` (a JSON text), else `params`.
fn tool_args(t: &Map<String, Value>) -> (&'static str, String) {
    for key in ["rawArgs", "params"] {
        match t.get(key) {
            Some(Value::String(s)) => return (key, s.clone()),
            Some(v @ Value::Object(_)) => return (key, v.to_string()),
            _ => {}
        }
    }
    ("rawArgs", String::new())
}

/// A text of a value: a string as it is, anything else as JSON.
fn value_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(v) => v.to_string(),
    }
}

fn read_bubble(b: &Fields) -> Result<Vec<Message>, Fault> {
    let text = b.get("text").and_then(Value::as_str).unwrap_or("");
    match b.get("type").and_then(Value::as_i64) {
        Some(1) => {
            return Ok(vec![Message::from(MessageData {
                fields: b.clone(),
                ..MessageData::new(crate::transcript::Role::User, text)
            })])
        }
        Some(2) => {}
        Some(t) => {
            return Err(format!(
                "a bubble of unknown type {t} (1 is the user's, 2 the assistant's)"
            ))
        }
        None => return Err("a bubble without its type".into()),
    }
    use crate::transcript::{Content, Part, PartKind, Role, ToolCall};
    let mut parts = Vec::new();
    let thinking = b
        .get("thinking")
        .and_then(|t| t.get("text"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    if let Some(t) = thinking {
        parts.push(Part {
            kind: PartKind::Other,
            raw: serde_json::json!({"type": "thinking", "thinking": t}).into(),
            slot: None,
        });
    }
    if !text.is_empty() {
        parts.push(Part::text_part(text));
    }
    let tool = tool_former(b);
    if parts.is_empty() && tool.is_none() {
        return Ok(Vec::new());
    }
    let mut turn = Message::from(MessageData {
        content: Content::Parts(parts),
        fields: b.clone(),
        ..MessageData::new(Role::Assistant, "")
    });
    let Some(t) = tool else {
        return Ok(vec![turn]);
    };
    let id = t
        .get("toolCallId")
        .or_else(|| b.get("bubbleId"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let name = t
        .get("name")
        .or_else(|| t.get("tool"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    turn.tool_calls = Some(vec![ToolCall {
        id: id.clone(),
        name: name.clone(),
        arguments: tool_args(t).1,
        raw: Value::Null.into(),
        slot: None,
    }]);
    let result = Message::from(MessageData {
        tool_call_id: id,
        name: Some(name),
        fields: b.clone(),
        ..MessageData::new(Role::Tool, value_text(t.get("result")))
    });
    Ok(vec![turn, result])
}

fn write_bubble(b: &Map<String, Value>, msgs: &[&Message]) -> Map<String, Value> {
    use crate::transcript::Role;
    let mut out = b.clone();
    let Some(turn) = msgs.iter().find(|m| m.role != Role::Tool) else {
        return out;
    };
    let text = turn.content.text();
    if b.get("text").is_some() || !text.is_empty() {
        crate::format::dialect::set_if_changed(&mut out, "text", Value::from(text));
    }
    let thinking_kept = turn
        .content
        .parts()
        .iter()
        .any(|p| p.raw.get("type").and_then(Value::as_str) == Some("thinking"));
    let had_thinking = b
        .get("thinking")
        .and_then(|t| t.get("text"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if had_thinking && !thinking_kept {
        out.shift_remove("thinking");
    }
    let Some(t) = tool_former(b) else {
        return out;
    };
    let mut t = t.clone();
    if let Some(c) = turn.calls().first() {
        let (key, before) = tool_args(&t);
        if before != c.arguments {
            t.insert(key.into(), Value::from(c.arguments.as_str()));
        }
    }
    if let Some(r) = msgs.iter().find(|m| m.role == Role::Tool) {
        let text = r.content.text();
        if value_text(t.get("result")) != text {
            t.insert("result".into(), Value::from(text));
        }
    }
    crate::format::dialect::set_if_changed(&mut out, "toolFormerData", Value::Object(t));
    out
}

impl Dialect for CursorIde {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_composer(obj).then_some(&["bubbles"])
    }

    fn content_key(&self) -> Option<&'static str> {
        Some("text")
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_bubble(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        Some(write_bubble(rec, msgs))
    }

    /// A new message is a bubble of its own (a summary: the user's); one
    /// with calls or a result is a loss, said.
    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for m in msgs.iter() {
            if m.has_calls() || m.role.is_result() {
                losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "a Cursor chat takes new text messages only",
                ));
                continue;
            }
            let ty = if m.role == crate::transcript::Role::Assistant {
                2
            } else {
                1
            };
            out.push(serde_json::json!({"_v": 3, "type": ty, "text": m.content.text()}));
        }
        out
    }

    /// Bubbles the headers name but the database did not hold, said.
    fn after_read(&self, conv: &mut Conversation) {
        let missing = conv
            .envelope
            .as_ref()
            .and_then(|e| e.get("missing_bubbles"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if missing > 0 {
            conv.notes.push(format!(
                "the chat's headers name {} that {} not in the database: not read",
                plural(missing, "bubble"),
                if missing == 1 { "is" } else { "are" }
            ));
        }
    }
}
