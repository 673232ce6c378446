//! Grok Build sessions (xAI's terminal agent, the `grok` command):
//! `~/.grok/sessions/<cwd, percent-encoded>/<session>/chat_history.jsonl`,
//! one line per item of the conversation it sends, beside `summary.json`
//! (the session's id, folder, title, model) and `updates.jsonl` (its
//! events and usage), which are not read.
//!
//! A line is `{type, content, …}`:
//! - `system`, `user` (`content` a string or text parts; a `user` line
//!   with `synthetic_reason` is one the agent added, such as a reminder,
//!   and is sent like the others);
//! - `assistant`, its calls in `tool_calls` as `{id, name, arguments}`
//!   (`arguments` a JSON string), beside `model_id` and the like;
//! - `tool_result`, `{tool_call_id, content}`;
//! - `reasoning`, `{summary: [{type: "summary_text", text}],
//!   encrypted_content?}` (or a `content`), kept whole as an opaque block
//!   of its own message.
//!
//! The structure is as public readers of these sessions document it (the
//! agent's own source is not public); see `fixtures/SOURCES.md`. Results
//! may come in another order than their calls: they pair by id.

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, with_arguments};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::format::openai::{content_value, parse_content};
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Grok Build sessions.
pub(crate) struct GrokBuild;

/// The types of a line that hold a message.
const TYPES: [&str; 5] = ["system", "user", "assistant", "tool_result", "reasoning"];

/// Whether a line is a Grok Build item: a `type` of [`TYPES`], its text in
/// `content` (a reasoning line's maybe in `summary`), and none of the keys
/// other agents frame a message with.
pub(crate) fn is_line(r: &Map<String, Value>) -> bool {
    let Some(t) = r.get("type").and_then(Value::as_str) else {
        return false;
    };
    TYPES.contains(&t)
        && (r.contains_key("content") || (t == "reasoning" && r.contains_key("summary")))
        && ![
            "role",
            "message",
            "payload",
            "uuid",
            "sessionId",
            "id",
            "parts",
        ]
        .iter()
        .any(|k| r.contains_key(*k))
}

/// Whether the sample's lines are Grok Build's: all of them items, one of
/// them the user's, the assistant's or a `tool_result` (a type no other
/// format's lines have: a session trimmed to its system prompt and a last
/// result is still Grok Build's).
pub(crate) fn is_session(records: &[&Map<String, Value>]) -> bool {
    records.iter().all(|r| is_line(r))
        && records.iter().any(|r| {
            matches!(
                r.get("type").and_then(Value::as_str),
                Some("user" | "assistant" | "tool_result")
            )
        })
}

/// A call of `tool_calls`: `{id, name, arguments}`.
fn read_call(c: &Value) -> ToolCall {
    ToolCall {
        id: c.get("id").and_then(Value::as_str).map(str::to_string),
        name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
        arguments: c.get("arguments").map(arguments_text).unwrap_or_default(),
        raw: c.clone().into(),
        slot: None,
    }
}

fn content_of(rec: &Fields) -> Result<Content, Fault> {
    match rec.get("content") {
        None => Ok(Content::Absent),
        Some(v) => parse_content(v),
    }
}

impl Dialect for GrokBuild {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let role = match rec.get("type").and_then(Value::as_str) {
            Some("system") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool_result") => Role::Tool,
            Some("reasoning") => {
                let part = Part {
                    kind: PartKind::Other,
                    raw: Value::Object(rec.clone().into_map()).into(),
                    slot: None,
                };
                return Ok(vec![Message::from(MessageData {
                    content: Content::Parts(vec![part]),
                    ..MessageData::new(Role::Assistant, "")
                })]);
            }
            _ => return Ok(Vec::new()),
        };
        let mut m = Message::from(MessageData {
            content: content_of(rec)?,
            ..MessageData::new(role, "")
        });
        if role == Role::Tool {
            m.tool_call_id = rec
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        let calls: Vec<ToolCall> = rec
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(read_call).collect())
            .unwrap_or_default();
        m.tool_calls = (!calls.is_empty()).then_some(calls);
        Ok(vec![m])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        if rec.get("type").and_then(Value::as_str) == Some("reasoning") {
            return m.content.parts().first()?.raw.as_object().cloned();
        }
        let mut out = rec.clone();
        match content_value(&m.content, rec.get("content")) {
            Some(v) => set_if_changed(&mut out, "content", v),
            None => {
                out.shift_remove("content");
            }
        }
        if rec.contains_key("tool_calls") || m.has_calls() {
            let calls: Vec<Value> = m
                .calls()
                .iter()
                .map(|c| with_arguments(&c.raw, "arguments", &c.arguments, false))
                .collect();
            if calls.is_empty() {
                out.shift_remove("tool_calls");
            } else {
                set_if_changed(&mut out, "tool_calls", Value::Array(calls));
            }
        }
        Some(out)
    }

    /// A new message is a line of its own, in Grok Build's shape; an image
    /// or another part that is not text is a loss, said.
    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for m in msgs.iter() {
            let converted = crate::format::convert::to_openai(m, losses);
            if converted.content.parts().iter().any(|p| p.text().is_none()) {
                losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "a Grok Build line takes text only: its other parts are written as text",
                ));
            }
            let ty = match converted.role {
                Role::System | Role::Developer => "system",
                Role::Assistant => "assistant",
                Role::Tool | Role::Function => "tool_result",
                _ => "user",
            };
            let mut line = Map::new();
            line.insert("type".into(), Value::from(ty));
            line.insert("content".into(), Value::from(converted.content.text()));
            if let Some(id) = &converted.tool_call_id {
                line.insert("tool_call_id".into(), Value::from(id.as_str()));
            }
            if converted.has_calls() {
                let calls: Vec<Value> = converted
                    .calls()
                    .iter()
                    .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                    .collect();
                line.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(line));
        }
        out
    }
}
