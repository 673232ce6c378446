//! Grok CLI sessions. Grok CLI (`@vibe-kit/grok-cli`) keeps every
//! session in a SQLite database, `~/.grok/grok.db`: a `messages` row per
//! message (`seq`, `role`, `message_json`: the AI SDK's `ModelMessage`),
//! `compactions` (the latest one's `first_kept_seq` and `summary` start
//! what the next call carries) and `usage_events`. [`sessions`] puts each
//! session together as JSON, `{"session": {…its row…}, "usage_events":
//! [...], "messages": [{…a row…, "message_json": {…}}]}`, the latest
//! compaction a record of its own (`{"compaction": {…its row…}}`) just
//! before the first message it keeps, where Grok CLI puts its summary.
//!
//! A message is the AI SDK's: `content` a string, or parts: `text`,
//! `image`, `file`, `reasoning`, `tool-call` (`toolCallId`, `toolName`,
//! `input`), and in `tool` messages `tool-result` (`output`: `{type:
//! text | json | error-text | error-json | content | execution-denied,
//! value}`).

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, Role, ToolCall,
};

/// Grok CLI sessions, put together from its database.
pub(crate) struct GrokCli;

/// What Grok CLI puts before a compaction's summary.
const SUMMARY_HEADER: &str = "[Context checkpoint summary]";

/// Whether an object is a Grok CLI session put together (`session`, and
/// `messages` that are its rows).
pub(crate) fn is_session(obj: &Map<String, Value>) -> bool {
    let session = obj
        .get("session")
        .and_then(Value::as_object)
        .is_some_and(|s| s.contains_key("id") && s.contains_key("workspace_id"));
    let rows = obj
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| {
            m.first()
                .and_then(Value::as_object)
                .is_none_or(|r| r.contains_key("message_json") || r.contains_key("compaction"))
        });
    session && rows
}

fn ty(p: &Value) -> Option<&str> {
    p.get("type").and_then(Value::as_str)
}

/// The text a tool result's `output` gives the model.
fn output_text(output: &Value) -> String {
    let value = output.get("value");
    match (ty(output), value) {
        (Some("text" | "error-text"), Some(Value::String(s))) => s.clone(),
        (Some("content"), Some(Value::Array(items))) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        (Some("execution-denied"), _) => output
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        (_, Some(v)) => v.to_string(),
        (_, None) => output.to_string(),
    }
}

/// A part; an image a URL or base64 (`mediaType` beside it), read as a
/// data URL.
fn part(p: &Value, k: usize) -> Part {
    crate::format::dialect::typed_part(p, k, "image")
}

fn call(p: &Value, k: usize) -> ToolCall {
    ToolCall {
        id: p
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: p
            .get("toolName")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .to_string(),
        arguments: arguments_text(p.get("input").unwrap_or(&Value::Null)),
        raw: p.clone().into(),
        slot: Some(k),
    }
}

fn result(p: &Value) -> Message {
    Message::from(MessageData {
        tool_call_id: p
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: p
            .get("toolName")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..MessageData::new(
            Role::Tool,
            output_text(p.get("output").unwrap_or(&Value::Null)),
        )
    })
}

/// The messages of one AI SDK `ModelMessage`.
fn read_model_message(m: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
    let role = crate::format::dialect::four_roles(m, "AI SDK")?;
    let fields = Fields::from(m.clone());
    let items = match m.get("content") {
        Some(Value::String(s)) => {
            return Ok(vec![Message::from(MessageData {
                fields,
                ..MessageData::new(role, s.as_str())
            })])
        }
        Some(Value::Array(items)) => items,
        _ => return Err("a message's \"content\" is a string or a list of parts".into()),
    };
    if role == Role::Tool {
        let results = items.iter().filter(|p| ty(p) == Some("tool-result"));
        return Ok(results.map(result).collect());
    }
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for (k, p) in items.iter().enumerate() {
        match ty(p) {
            Some("tool-call") if role == Role::Assistant => calls.push(call(p, k)),
            _ => parts.push(part(p, k)),
        }
    }
    Ok(vec![Message::from(MessageData {
        content: Content::Parts(parts),
        tool_calls: (!calls.is_empty()).then_some(calls),
        fields,
        ..MessageData::new(role, "")
    })])
}

/// A `tool-result` part with the text its result now has (as `text`
/// output when it changed).
fn set_output(part: &mut Value, text: &str) {
    let Value::Object(p) = part else { return };
    if p.get("output").map(output_text).as_deref() == Some(text) {
        return;
    }
    p.insert(
        "output".into(),
        serde_json::json!({"type": "text", "value": text}),
    );
}

/// The message's `content` written back from the messages read from it
/// that survive.
fn write_content(m: &Map<String, Value>, msgs: &[&Message]) -> Value {
    let Some(Value::Array(items)) = m.get("content") else {
        let text = msgs.first().map(|m| m.content.text()).unwrap_or_default();
        return Value::String(text);
    };
    let mut kept: Vec<Option<Value>> = vec![None; items.len()];
    let mut result_at = crate::format::dialect::ResultSlots::new(
        items
            .iter()
            .enumerate()
            .filter(|(_, i)| ty(i) == Some("tool-result"))
            .filter_map(|(k, i)| Some((i.get("toolCallId")?.as_str()?, k))),
    );
    for msg in msgs {
        if msg.role.is_result() {
            let text = msg.content.text();
            let own =
                |k: usize| output_text(items[k].get("output").unwrap_or(&Value::Null)) == text;
            let Some(k) = result_at.take_own(msg.tool_call_id.as_deref(), own) else {
                continue;
            };
            let mut item = items[k].clone();
            set_output(&mut item, &text);
            kept[k] = Some(item);
            continue;
        }
        for p in msg.content.parts() {
            if let Some(k) = p.slot.filter(|&k| k < items.len()) {
                kept[k] = Some(p.to_value());
            }
        }
        for c in msg.calls() {
            let Some(k) = c.slot.filter(|&k| k < items.len()) else {
                continue;
            };
            let mut item = items[k].clone();
            if item.get("input").map(arguments_text).as_deref() != Some(c.arguments.as_str()) {
                item["input"] = arguments_value(&c.arguments);
            }
            kept[k] = Some(item);
        }
    }
    let results = m.get("role").and_then(Value::as_str) == Some("tool");
    let list = items.iter().zip(kept).filter_map(|(i, k)| match ty(i) {
        Some("tool-approval-response") if results => Some(i.clone()),
        _ => k,
    });
    Value::Array(list.collect())
}

/// The summary a compaction record gives the next call, as Grok CLI
/// sends it.
fn summary(rec: &Map<String, Value>) -> Option<String> {
    let text = rec.get("compaction")?.get("summary")?.as_str()?.trim();
    (!text.is_empty()).then(|| format!("{SUMMARY_HEADER}\n{text}"))
}

impl Dialect for GrokCli {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_session(obj).then_some(&["messages"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if rec.contains_key("compaction") {
            return Ok(summary(rec)
                .map(|s| Message::new(Role::System, s))
                .into_iter()
                .collect());
        }
        match rec.get("message_json") {
            Some(Value::Object(m)) => read_model_message(m),
            _ => Err("a Grok CLI message row has a \"message_json\" object".into()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        if rec.contains_key("compaction") {
            let text = msgs.first()?.content.text();
            if summary(rec).as_deref() != Some(text.as_str()) {
                let body = text
                    .strip_prefix(SUMMARY_HEADER)
                    .unwrap_or(&text)
                    .trim_start();
                if let Some(Value::Object(c)) = out.get_mut("compaction") {
                    c.insert("summary".into(), Value::String(body.to_string()));
                }
            }
            return Some(out);
        }
        let m = rec.get("message_json")?.as_object()?;
        let mut new = m.clone();
        set_if_changed(&mut new, "content", write_content(m, msgs));
        set_if_changed(&mut out, "message_json", Value::Object(new));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let session = crate::format::dialect::session_id(env);
        crate::format::dialect::text_records(msgs, losses, "a Grok CLI session", |role, text| {
            let role = crate::format::dialect::four_roles_word(role);
            serde_json::json!({
                "session_id": session,
                "role": role,
                "message_json": {"role": role, "content": text},
            })
        })
    }

    /// The compaction, its summary removed, stays as the marker of where
    /// the next call starts.
    fn emptied(&self, rec: &Fields) -> Option<Map<String, Value>> {
        rec.peek(|rec| {
            let mut out = rec.clone();
            let Some(Value::Object(c)) = out.get_mut("compaction") else {
                return None;
            };
            c.insert("summary".into(), Value::String(String::new()));
            Some(out)
        })
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::dialect::active_from(boundary(records), records.len())
    }

    fn after_read(&self, conv: &mut Conversation) {
        if let Some(b) = crate::format::dialect::start_past_first(conv, boundary) {
            conv.notes.push(format!(
                "{} precede the session's last compaction: Grok CLI sends its summary and the messages it kept, so they are kept in the session as they are and not read",
                crate::numbers::plural(b, "message"),
            ));
        }
    }
}

/// The position of the latest compaction's record.
fn boundary(records: &[Option<&Map<String, Value>>]) -> Option<usize> {
    records
        .iter()
        .rposition(|r| r.is_some_and(|r| r.contains_key("compaction")))
}
