//! Goose sessions: the session JSONL Goose keeps (a header line with the
//! session's `working_dir`, `description` and token counts, then one
//! message per line, `{role, created, content: [...]}`), and the output of
//! `goose run --output-format stream-json` (`{"type": "message", "message":
//! {…}}` lines, then `{"type": "complete", …}`), and the session as newer
//! versions keep it in `sessions.db` and `goose session export` writes it:
//! one JSON document, the session's fields and its `conversation` (see
//! [`sessions`], which puts each session of the database together so).
//!
//! A message whose `metadata.agentVisible` is false (what a compaction
//! replaced by its summary) is not sent to the model: it is kept in place
//! and not read.
//!
//! A message's content is a list of items: `text`, `thinking`, `image`,
//! `toolRequest` (`{id, toolCall: {status, value: {name, arguments}}}`, a
//! call) and `toolResponse` (`{id, toolResult: {status, value}}`, a result,
//! its value a list of content items or `{content, isError}`). Each item
//! keeps its place; every other line passes through as it came.

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Goose sessions.
pub(crate) struct Goose;

fn ty(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// The message of a line: the line itself, or a stream line's `message`.
fn message(r: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let stream = r.get("type").and_then(Value::as_str) == Some("message");
    let m = match (stream, r.get("message")) {
        (true, Some(Value::Object(m))) => m,
        _ => r,
    };
    matches!(
        m.get("role").and_then(Value::as_str),
        Some("user" | "assistant")
    )
    .then_some(m)
    .filter(|m| m.get("content").is_some_and(Value::is_array))
}

/// Whether records are a Goose session: its header, a tool item of its
/// own, or a stream's `complete` line beside its messages (or beside its
/// other lines alone, once its messages were all taken out).
pub(crate) fn is_session(records: &[&Map<String, Value>]) -> bool {
    let header = |r: &Map<String, Value>| {
        r.contains_key("working_dir")
            && (r.contains_key("description") || r.contains_key("message_count"))
    };
    let own_item = |r: &Map<String, Value>| {
        message(r).is_some_and(|m| {
            m["content"].as_array().into_iter().flatten().any(|i| {
                matches!(
                    ty(i),
                    Some("toolRequest" | "toolResponse" | "redactedThinking")
                )
            })
        })
    };
    // A stream its messages were all taken from (a selection emptied it)
    // is still one: its `complete` line with the run's tokens, beside the
    // stream's own lines alone.
    let stream_line = |r: &&Map<String, Value>| {
        matches!(
            r.get("type").and_then(Value::as_str),
            Some("message" | "notification" | "error" | "complete")
        )
    };
    let stream = records
        .iter()
        .any(|r| r.get("type").and_then(Value::as_str) == Some("complete"))
        && (records
            .iter()
            .any(|r| message(r).is_some() && r.contains_key("message"))
            || (records.iter().all(stream_line)
                && records.iter().any(|r| r.contains_key("total_tokens"))));
    records.iter().any(|r| header(r) || own_item(r)) || stream
}

/// The call of a `toolRequest` item: its `value` (or `Ok`).
fn call_value(item: &Value) -> Option<&Map<String, Value>> {
    let call = item.get("toolCall")?;
    call.get("value").or_else(|| call.get("Ok"))?.as_object()
}

/// The text of a `toolResponse` item's result.
fn result_text(item: &Value) -> Option<String> {
    let result = item.get("toolResult")?;
    let value = result
        .get("value")
        .or_else(|| result.get("Ok"))
        .or_else(|| result.get("error"))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(o) => o.get("content")?.as_array()?,
        Value::String(s) => return Some(s.clone()),
        _ => return None,
    };
    // Items meant for the user's eyes only (`annotations.audience`
    // without "assistant") never reach the model.
    let for_model = |i: &&Value| {
        i.get("annotations")
            .and_then(|a| a.get("audience"))
            .and_then(Value::as_array)
            .is_none_or(|a| a.iter().any(|x| x == "assistant"))
    };
    Some(
        items
            .iter()
            .filter(for_model)
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn read_message(m: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("assistant") => Role::Assistant,
        _ => Role::User,
    };
    let items = m
        .get("content")
        .and_then(Value::as_array)
        .ok_or("a Goose message has a \"content\" list")?;
    let fields = Fields::from(m.clone());
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (k, item) in items.iter().enumerate() {
        match ty(item) {
            Some("toolRequest") => {
                let v = call_value(item);
                calls.push(ToolCall {
                    id: item.get("id").and_then(Value::as_str).map(str::to_string),
                    name: v
                        .and_then(|v| v.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_string(),
                    arguments: arguments_text(
                        v.and_then(|v| v.get("arguments")).unwrap_or(&Value::Null),
                    ),
                    raw: item.clone().into(),
                    slot: Some(k),
                });
            }
            Some("toolResponse") => results.push(Message::from(MessageData {
                tool_call_id: item.get("id").and_then(Value::as_str).map(str::to_string),
                ..MessageData::new(Role::Tool, result_text(item).unwrap_or_default())
            })),
            Some("text") => parts.push(Part {
                kind: PartKind::Text(
                    item.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                ),
                raw: item.clone().into(),
                slot: Some(k),
            }),
            _ => parts.push(Part {
                kind: PartKind::Other,
                raw: item.clone().into(),
                slot: Some(k),
            }),
        }
    }
    let mut out = results;
    if !parts.is_empty() || !calls.is_empty() {
        out.push(Message::from(MessageData {
            content: Content::Parts(parts),
            tool_calls: (!calls.is_empty()).then_some(calls),
            fields,
            ..MessageData::new(role, "")
        }));
    }
    Ok(out)
}

/// The content items written back from the messages that survive.
fn write_items(items: &[Value], msgs: &[&Message]) -> Vec<Value> {
    let mut kept: Vec<Option<Value>> = vec![None; items.len()];
    let mut result_at = crate::format::dialect::ResultSlots::new(
        items
            .iter()
            .enumerate()
            .filter(|(_, i)| ty(i) == Some("toolResponse"))
            .filter_map(|(k, i)| Some((i.get("id")?.as_str()?, k))),
    );
    for m in msgs {
        if m.role.is_result() {
            let text = m.content.text();
            let own = |k: usize| result_text(&items[k]).as_deref() == Some(text.as_str());
            let Some(k) = result_at.take_own(m.tool_call_id.as_deref(), own) else {
                continue;
            };
            let mut item = items[k].clone();
            if result_text(&item).as_deref() != Some(text.as_str()) {
                set_result(&mut item, text);
            }
            kept[k] = Some(item);
            continue;
        }
        for p in m.content.parts() {
            if let Some(k) = p.slot.filter(|&k| k < items.len()) {
                kept[k] = Some(p.to_value());
            }
        }
        for c in m.calls() {
            let Some(k) = c.slot.filter(|&k| k < items.len()) else {
                continue;
            };
            let mut item = items[k].clone();
            let args = call_value(&item)
                .and_then(|v| v.get("arguments"))
                .map(arguments_text);
            if args.as_deref() != Some(c.arguments.as_str()) {
                if let Some(Value::Object(call)) = item.get_mut("toolCall") {
                    let key = if call.contains_key("Ok") {
                        "Ok"
                    } else {
                        "value"
                    };
                    if let Some(Value::Object(v)) = call.get_mut(key) {
                        v.insert("arguments".into(), arguments_value(&c.arguments));
                    }
                }
            }
            kept[k] = Some(item);
        }
    }
    kept.into_iter().flatten().collect()
}

/// A result's text replaced, in the shape its value has.
fn set_result(item: &mut Value, text: String) {
    let Some(Value::Object(result)) = item.get_mut("toolResult") else {
        return;
    };
    let key = ["value", "Ok"]
        .into_iter()
        .find(|k| result.contains_key(*k))
        .unwrap_or("value");
    let list = Value::Array(vec![serde_json::json!({"type": "text", "text": text})]);
    match result.get_mut(key) {
        Some(Value::Object(o)) => {
            o.insert("content".into(), list);
        }
        _ => {
            result.insert(key.into(), list);
        }
    }
}

/// Whether a message is hidden from the model (`metadata.agentVisible`
/// false).
fn hidden(r: &Map<String, Value>) -> bool {
    message(r)
        .and_then(|m| m.get("metadata"))
        .and_then(|m| m.get("agentVisible"))
        == Some(&Value::Bool(false))
}

impl Dialect for Goose {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let export =
            obj.contains_key("working_dir") && obj.get("conversation").is_some_and(Value::is_array);
        export.then_some(&["conversation"])
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        let shown: Vec<bool> = records.iter().map(|r| !r.is_some_and(hidden)).collect();
        shown.contains(&false).then_some(shown)
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        let hidden = conv
            .records
            .iter()
            .filter_map(|r| r.value.as_deref())
            .filter(|r| hidden(r))
            .count();
        if hidden > 0 {
            conv.notes.push(format!(
                "{hidden} {} hidden from the model (metadata.agentVisible false, as a compaction leaves them): kept as they are and not read",
                if hidden == 1 { "message is" } else { "messages are" },
            ));
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        match message(rec) {
            Some(m) => read_message(m),
            None => Ok(Vec::new()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = message(rec)?;
        let items = m.get("content")?.as_array()?;
        let mut new = m.clone();
        set_if_changed(&mut new, "content", Value::Array(write_items(items, msgs)));
        if rec.get("type").and_then(Value::as_str) == Some("message") && rec.contains_key("message")
        {
            let mut out = rec.clone();
            set_if_changed(&mut out, "message", Value::Object(new));
            Some(out)
        } else {
            Some(new)
        }
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        crate::format::dialect::text_records(msgs, losses, "a Goose session", |role, text| {
            let role = crate::format::dialect::user_or_assistant_word(role);
            serde_json::json!({"role": role, "content": [{"type": "text", "text": text}]})
        })
    }
}
