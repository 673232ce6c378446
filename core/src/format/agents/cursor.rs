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
use crate::transcript::{Conversation, Fields, Message};

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
        for msg in &mut out {
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
        if let Some(system) = env.shift_remove("system") {
            let text = match system {
                Value::String(s) => s,
                other => other.to_string(),
            };
            out.insert(
                0,
                serde_json::json!({"role": "user", "message": {"content": [{"type": "text", "text": text}]}}),
            );
        }
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
