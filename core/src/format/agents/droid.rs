//! Factory Droid sessions, in the two shapes Droid writes them.
//!
//! - The session store (`~/.factory/sessions/…/<session>.jsonl`): a
//!   `{"type": "session_start", id, title, cwd, …}` line, then
//!   `{"type": "message", id, parentId, timestamp, message}` lines whose
//!   `message` is an Anthropic message (`text`, `tool_use`, `tool_result`
//!   blocks). pi's lines have the same frame with pi's own block names;
//!   Droid's keep Anthropic's, and are written back with them. The
//!   conversation is the chain of the last line (`parentId`).
//! - `droid exec --output-format stream-json`: one event per line,
//!   `{"type": "system"}` (the run's model and tools), `{"type": "message",
//!   role, text}`, `{"type": "tool_call", toolCallId | id, toolName,
//!   parameters}`, `{"type": "tool_result", toolCallId | id, value,
//!   isError}`, `{"type": "completion", finalText, usage}`, `{"type":
//!   "error"}`. Each call is an assistant turn of its own, its result the
//!   tool's; the system and error lines pass through as they came.
//!
//! Every other line passes through in place.

use serde_json::{Map, Value};

use crate::format::anthropic::{new_messages, read_message, write_message};
use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{Fields, Message, MessageData, Record, Role, ToolCall};

/// Factory Droid sessions and stream-json logs.
pub(crate) struct Droid;

/// The line types of Droid's stream-json output.
const STREAM_TYPES: &[&str] = &[
    "system",
    "message",
    "tool_call",
    "tool_result",
    "completion",
    "error",
];

/// The session store's message object of a line, when it is one.
fn store_message(r: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if r.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    r.get("message")?.as_object()
}

/// Whether a line is a stream-json event.
fn is_stream_event(r: &Map<String, Value>) -> bool {
    let Some(ty) = r.get("type").and_then(Value::as_str) else {
        return false;
    };
    STREAM_TYPES.contains(&ty)
        && !r.get("message").is_some_and(Value::is_object)
        && (r.contains_key("session_id") || r.contains_key("sessionId"))
}

/// Whether a message's blocks are Anthropic's tool blocks.
fn anthropic_tool_blocks(m: &Map<String, Value>) -> bool {
    m.get("content")
        .and_then(Value::as_array)
        .is_some_and(|bs| {
            bs.iter().any(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("tool_use" | "tool_result")
                )
            })
        })
}

/// Whether lines are Droid's: its session store (a `session_start` line,
/// or message lines with Anthropic tool blocks), or its stream-json events
/// (each with the session's id).
pub(crate) fn is_session(records: &[&Map<String, Value>]) -> bool {
    fn ty(r: &Map<String, Value>) -> Option<&str> {
        r.get("type").and_then(Value::as_str)
    }
    let store = records.iter().any(|r| ty(r) == Some("session_start"))
        || records
            .iter()
            .filter_map(|r| store_message(r))
            .any(anthropic_tool_blocks);
    let stream = records.iter().all(|r| is_stream_event(r))
        && records
            .iter()
            .any(|r| matches!(ty(r), Some("tool_call" | "completion" | "message")));
    !records.is_empty() && (store || stream)
}

/// A stream-json call's or result's id: `toolCallId`, else the line's `id`.
fn call_id(r: &Map<String, Value>) -> Option<String> {
    r.get("toolCallId")
        .or_else(|| r.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The messages of one stream-json event.
fn read_event(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let text = |key: &str| rec.get(key).and_then(Value::as_str).unwrap_or("");
    let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
    let m = match ty {
        "message" => {
            let role = match rec.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("system") => Role::System,
                Some(r) => return Err(format!("unknown role \"{r}\" in a Droid message")),
                None => return Err("a Droid message without its role".into()),
            };
            Message::new(role, text("text"))
        }
        "completion" => Message::new(Role::Assistant, text("finalText")),
        "tool_call" => {
            let name = rec
                .get("toolName")
                .or_else(|| rec.get("toolId"))
                .and_then(Value::as_str)
                .ok_or("a Droid tool call without its toolName")?;
            let params = rec.get("parameters").cloned().unwrap_or(Value::Null);
            Message::from(MessageData {
                content: crate::transcript::Content::Absent,
                tool_calls: Some(vec![ToolCall {
                    id: call_id(rec),
                    name: name.to_string(),
                    arguments: arguments_text(&params),
                    raw: Value::Null.into(),
                    slot: None,
                }]),
                ..MessageData::new(Role::Assistant, "")
            })
        }
        "tool_result" => {
            let value = match rec.get("value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            Message::from(MessageData {
                tool_call_id: call_id(rec),
                name: rec
                    .get("toolName")
                    .or_else(|| rec.get("toolId"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                ..MessageData::new(Role::Tool, value)
            })
        }
        _ => return Ok(Vec::new()),
    };
    let mut m = m;
    m.fields = rec.clone();
    Ok(vec![m])
}

/// A stream-json event with its message's changes written back in place.
fn write_event(rec: &Map<String, Value>, m: &Message) -> Map<String, Value> {
    let mut out = rec.clone();
    match rec.get("type").and_then(Value::as_str) {
        Some("message") => set_if_changed(&mut out, "text", Value::from(m.content.text())),
        Some("completion") => set_if_changed(&mut out, "finalText", Value::from(m.content.text())),
        Some("tool_call") => {
            if let Some(c) = m.calls().first() {
                let before = rec.get("parameters").cloned().unwrap_or(Value::Null);
                if arguments_text(&before) != c.arguments {
                    out.insert("parameters".into(), arguments_value(&c.arguments));
                }
            }
        }
        Some("tool_result") => {
            let text = m.content.text();
            let same = match rec.get("value") {
                Some(Value::String(s)) => *s == text,
                Some(Value::Null) | None => text.is_empty(),
                Some(v) => serde_json::to_string(v).ok().as_deref() == Some(text.as_str()),
            };
            if !same {
                out.insert("value".into(), Value::from(text));
            }
        }
        _ => {}
    }
    out
}

impl Dialect for Droid {
    /// Says how many message lines other branches of the session's chain
    /// hold: kept in place and not read.
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        let why = "another branch of the session's chain";
        crate::format::chain::passed_note(active, "message line", why)
    }

    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if let Some(msg) = store_message(rec) {
            let mut out = read_message(&Fields::from(msg.clone()))?;
            // A result keeps its block as its fields (`is_error`, a
            // `cache_control`), which is what it is written back from.
            for m in out.iter_mut().filter(|m| !m.role.is_result()) {
                m.fields = Fields::from(msg.clone());
            }
            return Ok(out);
        }
        if is_stream_event(rec) {
            return read_event(rec);
        }
        Ok(Vec::new())
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if let Some(msg) = store_message(rec) {
            let new = write_message(msg, msgs)?;
            let mut out = rec.clone();
            if new != *msg {
                out.insert("message".into(), Value::Object(new));
            }
            return Some(out);
        }
        Some(write_event(rec, msgs.first()?))
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out: Vec<Value> = new_messages(msgs, env, losses)
            .into_iter()
            .map(|m| serde_json::json!({"type": "message", "message": Value::Object(m)}))
            .collect();
        // A system prompt has no line of its own in a Droid session.
        crate::format::dialect::system_as_first_line(
            env,
            &mut out,
            |m| serde_json::json!({"type": "message", "message": m}),
        );
        out
    }

    /// New lines go into the session store, not a run's event log.
    fn takes_new_messages(&self, conv: &crate::transcript::Conversation) -> bool {
        !conv
            .records
            .iter()
            .any(|r| r.value.as_ref().is_some_and(|v| is_stream_event(v)))
    }

    fn picks_active(&self) -> bool {
        true
    }

    /// The session store's lines form a chain (`parentId`): the
    /// conversation is the chain of the last line.
    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::chain::active_chain(records, "id", "parentId", |r| {
            store_message(r).is_some()
        })
    }

    /// Removing a line relinks its children to its parent.
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        crate::format::chain::relink(original, out, "id", "parentId");
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document};
    use crate::transcript::Content;

    const SESSION: &str = r#"{"type":"session_start","id":"s1","title":"t","cwd":"/w"}
{"type":"message","id":"m1","parentId":"s1","message":{"role":"user","content":[{"type":"text","text":"run it"}]}}
{"type":"message","id":"m2","parentId":"m1","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"Execute","input":{"command":"ls /nope"}}]}}
{"type":"message","id":"m3","parentId":"m2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"ls: /nope: No such file","is_error":true}]}}
{"type":"message","id":"m4","parentId":"m3","message":{"role":"assistant","content":[{"type":"text","text":"It is not there."}]}}
"#;

    #[test]
    fn a_result_keeps_its_block_s_keys() {
        // The result's fields were the whole message's, so its block was
        // written back without `is_error`, even by `convert`.
        let mut doc = read_document("s.jsonl", SESSION.into(), &Default::default()).unwrap();
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), SESSION);
        let msgs = &mut doc.conversations[0].messages;
        let r = msgs.iter().position(|m| m.role.is_result()).unwrap();
        msgs[r].content = Content::Text("[Tool: 1 lines]".into());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#"{"type":"tool_result","tool_use_id":"tu1","content":"[Tool: 1 lines]","is_error":true}"#),
            "{text}"
        );
    }
}
