//! Crush sessions. Crush keeps a project's sessions in a SQLite database
//! (`<project>/.crush/crush.db`: tables `sessions`, `messages`, `files`);
//! [`database`] reads it, read-only, and puts each session together as the
//! rows of its tables in JSON: `{"session": {…its row…}, "messages":
//! [{…a message's row…, "parts": [...]}]}`, a message's `parts` column
//! decoded (JSON, or zstd-compressed JSON in newer versions). That is what
//! this dialect reads; it is also the shape of the messages Crush's own
//! server API returns.
//!
//! A message's parts are `{"type", "data"}`: `text`, `reasoning`,
//! `image_url`, `binary` (an attachment: `Path`, `MIMEType`, base64
//! `Data`), `tool_call` (`id`, `name`, `input` as JSON text), `tool_result`
//! (`tool_call_id`, `name`, `content`, `data`, `mime_type`, `is_error`),
//! `shell_command`, and `finish` (never sent). A `tool` message holds the
//! results of the calls before it. Once a session is summarized, its row's
//! `summary_message_id` names the summary, an assistant message that
//! Crush sends as the user's, followed by what came after; what precedes it
//! is not sent.

use serde_json::{Map, Value};

use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{
    Content, Conversation, Fields, Image, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// Crush sessions, put together from its database.
pub(crate) struct Crush;

/// Whether a record is a message row of Crush's (`session_id`, `role`,
/// `parts` of `{type, data}`).
pub(crate) fn is_message(r: &Map<String, Value>) -> bool {
    r.contains_key("session_id")
        && r.get("role").is_some_and(Value::is_string)
        && r.get("parts").and_then(Value::as_array).is_some_and(|p| {
            p.iter()
                .all(|p| p.get("type").is_some() && p.get("data").is_some())
        })
}

/// Whether an object is a Crush session put together (`session`, and
/// `messages` that are its message rows).
pub(crate) fn is_session(obj: &Map<String, Value>) -> bool {
    let session = obj
        .get("session")
        .and_then(Value::as_object)
        .is_some_and(|s| s.contains_key("id") && s.contains_key("message_count"));
    let messages = obj
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| m.first().and_then(Value::as_object).is_none_or(is_message));
    session && messages
}

fn ty(p: &Value) -> Option<&str> {
    p.get("type").and_then(Value::as_str)
}

fn data(p: &Value) -> Option<&Map<String, Value>> {
    p.get("data")?.as_object()
}

fn str_of<'a>(m: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    m?.get(key)?.as_str()
}

fn is_summary(rec: &Map<String, Value>) -> bool {
    match rec.get("is_summary_message") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_u64().is_some_and(|n| n != 0),
        _ => false,
    }
}

/// A part that is content the model is sent: text, reasoning, an image,
/// an attachment, a shell command the user ran.
fn content_part(p: &Value, k: usize) -> Option<Part> {
    let d = data(p);
    let kind = match ty(p)? {
        "text" => PartKind::Text(str_of(d, "text")?.to_string()),
        "image_url" => PartKind::Image(Image::from_url(str_of(d, "url").unwrap_or(""))),
        "binary" => {
            let mime = str_of(d, "MIMEType").unwrap_or("");
            match str_of(d, "Data") {
                Some(b64) if mime.starts_with("image/") => {
                    PartKind::Image(Image::inline(Some(mime.to_string()), b64))
                }
                _ => PartKind::Other,
            }
        }
        "reasoning" | "shell_command" => PartKind::Other,
        _ => return None,
    };
    Some(Part {
        kind,
        raw: p.clone().into(),
        slot: Some(k),
    })
}

fn call(p: &Value, k: usize) -> ToolCall {
    let d = data(p);
    ToolCall {
        id: str_of(d, "id").map(str::to_string),
        name: str_of(d, "name").unwrap_or("tool").to_string(),
        arguments: str_of(d, "input").unwrap_or("").to_string(),
        raw: p.clone().into(),
        slot: Some(k),
    }
}

/// A `tool_result` part as the model is sent it: an image when it carries
/// one, else its text (an error's too).
fn result(p: &Value, k: usize) -> Message {
    let d = data(p);
    let media = str_of(d, "data").filter(|s| !s.is_empty());
    let mime = str_of(d, "mime_type").unwrap_or("");
    let content = match media {
        Some(b64) if mime.starts_with("image/") => Content::Parts(vec![Part {
            kind: PartKind::Image(Image::inline(Some(mime.to_string()), b64)),
            raw: p.clone().into(),
            slot: Some(k),
        }]),
        _ => Content::Text(str_of(d, "content").unwrap_or("").to_string()),
    };
    Message::from(MessageData {
        tool_call_id: str_of(d, "tool_call_id").map(str::to_string),
        name: str_of(d, "name").map(str::to_string),
        content,
        ..MessageData::new(Role::Tool, "")
    })
}

fn read_message(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let Some(Value::Array(parts)) = rec.get("parts") else {
        return Err("a Crush message has a \"parts\" list".into());
    };
    let role = match rec.get("role").and_then(Value::as_str) {
        // Crush sends its summary as the user's message.
        Some("assistant") if is_summary(rec) => Role::User,
        Some("assistant") => Role::Assistant,
        Some("user") => Role::User,
        Some("tool") => {
            let results = parts.iter().enumerate();
            return Ok(results
                .filter(|(_, p)| ty(p) == Some("tool_result"))
                .map(|(k, p)| result(p, k))
                .collect());
        }
        // Crush never sends a system row of its own.
        Some("system") => return Ok(Vec::new()),
        Some(r) => {
            return Err(format!(
                "unknown role \"{r}\" (Crush messages are user, assistant, tool or system)"
            ))
        }
        None => return Err("a Crush message has no \"role\"".into()),
    };
    let mut content = Vec::new();
    let mut calls = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        if ty(p) == Some("tool_call") && role == Role::Assistant {
            calls.push(call(p, k));
        } else {
            content.extend(content_part(p, k));
        }
    }
    if content.is_empty() && calls.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Message::from(MessageData {
        content: Content::Parts(content),
        tool_calls: (!calls.is_empty()).then_some(calls),
        fields: rec.clone(),
        ..MessageData::new(role, "")
    })])
}

/// A `tool_result` part with the text a result now has: an image result
/// that became text no longer carries its image.
fn set_result(part: &mut Value, m: &Message) {
    let text = m.content.text();
    let Some(Value::Object(d)) = part.get_mut("data") else {
        return;
    };
    let unchanged = match &m.content {
        Content::Parts(ps) => ps.iter().all(|p| matches!(p.kind, PartKind::Image(_))),
        _ => d.get("content").and_then(Value::as_str) == Some(text.as_str()),
    };
    if unchanged {
        return;
    }
    d.insert("content".into(), Value::String(text));
    if d.get("data")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        d.insert("data".into(), Value::String(String::new()));
        d.insert("mime_type".into(), Value::String(String::new()));
    }
}

/// A content part as it goes back: a text part's text is in its `data`
/// (where [`Part::to_value`] would not look). Text that took another part's
/// place (an image's placeholder) is written as Crush's text part: the
/// part an operation made is in its own format's shape, which Crush does
/// not read (nor tell the file by).
fn part_value(p: &Part) -> Value {
    let PartKind::Text(t) = &p.kind else {
        return Value::clone(&p.raw);
    };
    match (ty(&p.raw), p.raw.get("data")) {
        (Some("text"), Some(Value::Object(_))) => {
            let mut raw = Value::clone(&p.raw);
            if let Some(Value::Object(d)) = raw.get_mut("data") {
                set_if_changed(d, "text", Value::String(t.clone()));
            }
            raw
        }
        _ => serde_json::json!({"type": "text", "data": {"text": t}}),
    }
}

/// The value each part of `parts` goes back as, from the messages read
/// from it that survive; `None`: removed.
fn kept_parts(parts: &[Value], msgs: &[&Message]) -> Vec<Option<Value>> {
    let mut kept: Vec<Option<Value>> = vec![None; parts.len()];
    let mut result_at = crate::format::dialect::ResultSlots::new(
        parts
            .iter()
            .enumerate()
            .filter(|(_, p)| ty(p) == Some("tool_result"))
            .filter_map(|(k, p)| Some((str_of(data(p), "tool_call_id")?, k))),
    );
    for m in msgs {
        if m.role.is_result() {
            let text = m.content.text_ref();
            let own = |k: usize| str_of(data(&parts[k]), "content") == Some(&*text);
            let Some(k) = result_at.take_own(m.tool_call_id.as_deref(), own) else {
                continue;
            };
            let part = kept[k].get_or_insert_with(|| parts[k].clone());
            set_result(part, m);
            continue;
        }
        for p in m.content.parts() {
            if let Some(k) = p.slot.filter(|&k| k < parts.len()) {
                kept[k] = Some(part_value(p));
            }
        }
        for c in m.calls() {
            let Some(k) = c.slot.filter(|&k| k < parts.len()) else {
                continue;
            };
            let mut part = parts[k].clone();
            if let Some(Value::Object(d)) = part.get_mut("data") {
                if d.get("input").and_then(Value::as_str) != Some(c.arguments.as_str()) {
                    d.insert("input".into(), Value::String(c.arguments.clone()));
                }
            }
            kept[k] = Some(part);
        }
    }
    kept
}

/// The position of the summary the next call starts from: the last
/// summary message.
fn boundary(records: &[Option<&Map<String, Value>>]) -> Option<usize> {
    records
        .iter()
        .rposition(|r| r.is_some_and(|r| is_summary(r) && r.get("role").is_some()))
}

impl Dialect for Crush {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_session(obj).then_some(&["messages"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_message(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let parts = rec.get("parts")?.as_array()?;
        let kept = kept_parts(parts, msgs);
        let list = parts
            .iter()
            .zip(kept)
            .filter_map(|(p, k)| match ty(p) {
                Some(
                    "text" | "reasoning" | "image_url" | "binary" | "shell_command" | "tool_call"
                    | "tool_result",
                ) => k,
                _ => Some(p.clone()),
            })
            .collect();
        let mut out = rec.clone();
        set_if_changed(&mut out, "parts", Value::Array(list));
        Some(out)
    }

    /// A message an operation added (a summary): a row of the session,
    /// its text its one part.
    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let session = crate::format::dialect::session_id(env);
        crate::format::dialect::text_records(msgs, losses, "a Crush session", |role, text| {
            let role = crate::format::dialect::user_or_assistant_word(role);
            serde_json::json!({
                "session_id": session,
                "role": role,
                "parts": [{"type": "text", "data": {"text": text}}],
            })
        })
    }

    /// The summary, its text removed, stays as the marker of where the
    /// next call starts: without it, what precedes it would be read again.
    fn emptied(&self, rec: &Fields) -> Option<Map<String, Value>> {
        rec.peek(|rec| {
            if !is_summary(rec) {
                return None;
            }
            let parts = rec.get("parts").and_then(Value::as_array).into_iter();
            let rest = parts.flatten().filter(|p| content_part(p, 0).is_none());
            let mut out = rec.clone();
            out.insert("parts".into(), Value::Array(rest.cloned().collect()));
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
                "{} precede the session's summary (message {b}): Crush sends the summary as the user's message and what follows, so they are kept in the session as they are and not read",
                crate::numbers::plural(b, "message"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};
    use crate::transcript::PartKind;

    #[test]
    fn text_in_an_image_s_place_is_a_crush_text_part() {
        // `filter --strip-processed-images` puts a note where the image was:
        // it was written in the note's own shape (`{"type":"text","text":…}`),
        // which Crush does not read, and the file no longer read as Crush.
        let text = r#"{"session":{"id":"s","message_count":2},"messages":[{"id":"m1","session_id":"s","role":"user","parts":[{"type":"text","data":{"text":"look"}},{"type":"binary","data":{"Path":"a.png","MIMEType":"image/png","Data":"iVBORw0KGgo="}}]},{"id":"m2","session_id":"s","role":"assistant","parts":[{"type":"text","data":{"text":"a cat"}}]}]}"#;
        let mut doc = read_document("c.json", text.into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Crush);
        let content = &mut doc.conversations[0].messages[0].content;
        assert!(matches!(content.parts()[1].kind, PartKind::Image(_)));
        crate::transcript::note_in_place(content, 1, "[image removed: image/png]");
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let written = String::from_utf8(out.clone()).unwrap();
        assert!(
            written.contains(r#"{"type":"text","data":{"text":"[image removed: image/png]"}}"#),
            "{written}"
        );
        let back = read_document("c.json", out, &Default::default()).unwrap();
        assert_eq!(back.source_format, Format::Crush);
        assert_eq!(
            back.conversations[0].messages[0].content.text(),
            doc.conversations[0].messages[0].content.text()
        );
    }
}
