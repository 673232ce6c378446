//! Zed's agent threads (`threads/threads.db` in Zed's data directory), each
//! thread's payload as the CLI puts it together: Zed's JSON (`{title,
//! messages, updated_at, model, …, version: "0.3.0"}`, stored zstd-compressed)
//! and `row`, the table's other columns.
//!
//! Messages are externally tagged: `{"User": {id, content}}`, `{"Agent":
//! {content, tool_results}}`, and the bare string `"Resume"` (a marker, put
//! together as `{"Resume": null}` and kept in place). A user's content is `Text`, `Mention {uri, content}` (the
//! mentioned file or symbol, sent as text) and `Image`; an agent's is
//! `Text`, `Thinking {text, signature}`, `RedactedThinking` and `ToolUse
//! {id, name, raw_input, input}`, its `tool_results` (by call id, each
//! `{tool_use_id, tool_name, is_error, content, output}`) the results,
//! which Zed sends after the agent's turn.
//!
//! Each piece is written back where it came from (its place in its list is
//! its part's `slot`); a piece removed leaves its list.

use serde_json::{Map, Value};

use crate::format::convert::arguments_value;
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Zed's agent threads.
pub(crate) struct Zed;

/// A message of a thread: one key, `User`, `Agent`, or a unit message
/// (`Resume`, a bare string in Zed's own list, put together as an object).
fn is_message(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.len() == 1)
}

/// Whether an object is a Zed thread's payload.
pub(crate) fn is_thread(obj: &Map<String, Value>) -> bool {
    obj.contains_key("title")
        && obj
            .get("messages")
            .and_then(Value::as_array)
            .is_some_and(|ms| {
                ms.iter().all(is_message)
                    && ms
                        .iter()
                        .any(|m| m.get("User").is_some() || m.get("Agent").is_some())
            })
}

/// A text part, element `k` of its message (its place kept in `slot`).
fn text_at(text: &str, k: usize) -> Part {
    Part {
        kind: PartKind::Text(text.to_string()),
        raw: serde_json::json!({"type": "text", "text": text}).into(),
        slot: Some(k),
    }
}

/// A part that is not text, element `k`: an Anthropic block of the same
/// meaning (a thinking block with its signature, an image by its base64).
fn other_at(raw: Value, kind: PartKind, k: usize) -> Part {
    Part {
        kind,
        raw: raw.into(),
        slot: Some(k),
    }
}

/// Which element of its message a part is.
fn element(p: &Part) -> Option<usize> {
    p.slot
}

/// Zed's image (`{source: base64 PNG, size}`) as an Anthropic image block.
fn image_at(img: &Value, k: usize) -> Part {
    let data = img.get("source").and_then(Value::as_str).unwrap_or("");
    let raw = serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
    let image = crate::transcript::Image::inline(Some("image/png".into()), data);
    other_at(raw, PartKind::Image(image), k)
}

fn read_user(u: &Map<String, Value>) -> Message {
    let items = u.get("content").and_then(Value::as_array);
    let mut parts = Vec::new();
    for (k, item) in items.into_iter().flatten().enumerate() {
        if let Some(t) = item.get("Text").and_then(Value::as_str) {
            parts.push(text_at(t, k));
        } else if let Some(m) = item.get("Mention") {
            let text = m.get("content").and_then(Value::as_str).unwrap_or("");
            parts.push(text_at(text, k));
        } else if let Some(img) = item.get("Image") {
            parts.push(image_at(img, k));
        } else {
            // Kept as it came, counted by its text.
            parts.push(other_at(item.clone(), PartKind::Other, k));
        }
    }
    Message::from(MessageData {
        content: Content::Parts(parts),
        ..MessageData::new(Role::User, "")
    })
}

/// A tool result's text: `{"Text": …}`, a plain string, or the value.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) if o.get("Text").is_some_and(Value::is_string) => {
            o["Text"].as_str().unwrap_or("").to_string()
        }
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

fn read_agent(a: &Map<String, Value>) -> Vec<Message> {
    let items = a.get("content").and_then(Value::as_array);
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for (k, item) in items.into_iter().flatten().enumerate() {
        if let Some(t) = item.get("Text").and_then(Value::as_str) {
            parts.push(text_at(t, k));
        } else if let Some(t) = item.get("Thinking") {
            let text = t.get("text").and_then(Value::as_str).unwrap_or("");
            let mut raw = serde_json::json!({"type": "thinking", "thinking": text});
            if let Some(sig) = t.get("signature").and_then(Value::as_str) {
                raw["signature"] = Value::from(sig);
            }
            parts.push(other_at(raw, PartKind::Other, k));
        } else if let Some(r) = item.get("RedactedThinking") {
            let raw = serde_json::json!({"type": "redacted_thinking", "data": r});
            parts.push(other_at(raw, PartKind::Other, k));
        } else if let Some(u) = item.get("ToolUse") {
            let raw_input = u.get("raw_input").and_then(Value::as_str).unwrap_or("");
            let arguments = if raw_input.is_empty() {
                u.get("input").map(Value::to_string).unwrap_or_default()
            } else {
                raw_input.to_string()
            };
            calls.push(ToolCall {
                id: u.get("id").and_then(Value::as_str).map(str::to_string),
                name: u
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                arguments,
                raw: Value::Null.into(),
                slot: Some(k),
            });
        } else {
            parts.push(other_at(item.clone(), PartKind::Other, k));
        }
    }
    let results = a.get("tool_results").and_then(Value::as_object);
    let mut out = Vec::new();
    for c in &calls {
        let Some(r) = c.id.as_deref().and_then(|id| results?.get(id)) else {
            continue;
        };
        out.push(Message::from(MessageData {
            tool_call_id: c.id.clone(),
            name: Some(c.name.clone()),
            ..MessageData::new(Role::Tool, result_text(r.get("content")))
        }));
    }
    let turn = Message::from(MessageData {
        content: Content::Parts(parts),
        tool_calls: (!calls.is_empty()).then_some(calls),
        ..MessageData::new(Role::Assistant, "")
    });
    let mut all = vec![turn];
    all.extend(out);
    all
}

/// A user's content written back: each element whose part is left, its
/// text as it now is; new text parts after them.
fn write_user(items: &[Value], m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    for (k, item) in items.iter().enumerate() {
        let Some(p) = m.content.parts().iter().find(|p| element(p) == Some(k)) else {
            continue;
        };
        let mut item = item.clone();
        if let Some(t) = p.text() {
            if let Some(v) = item.get_mut("Text").filter(|v| v.is_string()) {
                *v = Value::from(t);
            } else if let Some(Value::Object(mention)) = item.get_mut("Mention") {
                set_if_changed(mention, "content", Value::from(t));
            } else {
                // Text where something else was (a note in a processed
                // image's place): Zed's text element.
                item = serde_json::json!({"Text": t});
            }
        }
        out.push(item);
    }
    for p in m.content.parts().iter().filter(|p| element(p).is_none()) {
        if let Some(t) = p.text() {
            out.push(serde_json::json!({"Text": t}));
        }
    }
    if let Content::Text(t) = &m.content {
        out.push(serde_json::json!({"Text": t}));
    }
    out
}

/// An agent's turn written back: its content's elements that are left
/// (calls with their arguments as they now are), and the results left.
fn write_agent(a: &Map<String, Value>, msgs: &[&Message]) -> Map<String, Value> {
    let mut out = a.clone();
    let turn = msgs.iter().find(|m| m.role == Role::Assistant);
    let items = a
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut content = Vec::new();
    for (k, item) in items.into_iter().enumerate() {
        let Some(t) = turn else { break };
        if let Some(c) = t.calls().iter().find(|c| c.slot == Some(k)) {
            let mut item = item;
            if let Some(Value::Object(u)) = item.get_mut("ToolUse") {
                let before = u.get("raw_input").and_then(Value::as_str).unwrap_or("");
                let was = if before.is_empty() {
                    u.get("input").map(Value::to_string).unwrap_or_default()
                } else {
                    before.to_string()
                };
                if was != c.arguments {
                    u.insert("raw_input".into(), Value::from(c.arguments.as_str()));
                    u.insert("input".into(), arguments_value(&c.arguments));
                }
            }
            content.push(item);
        } else if let Some(p) = t.content.parts().iter().find(|p| element(p) == Some(k)) {
            let mut item = item;
            match (p.text(), item.get_mut("Text")) {
                (Some(text), Some(v)) => *v = Value::from(text),
                // Text where something else was: Zed's text element.
                (Some(text), None) => item = serde_json::json!({"Text": text}),
                (None, _) => {}
            }
            content.push(item);
        }
    }
    if let Some(t) = turn {
        for p in t.content.parts().iter().filter(|p| element(p).is_none()) {
            if let Some(text) = p.text() {
                content.push(serde_json::json!({"Text": text}));
            }
        }
    }
    set_if_changed(&mut out, "content", Value::Array(content));
    if let Some(Value::Object(results)) = a.get("tool_results") {
        // A turn keeps one result per call id. Where results that share one
        // (an id given twice) now differ, one of them changed: the one as it
        // came stays, so that no result's text is lost.
        let mut texts: std::collections::HashMap<&str, Vec<String>> = Default::default();
        for m in msgs.iter().filter(|m| m.role == Role::Tool) {
            if let Some(id) = m.tool_call_id.as_deref() {
                texts.entry(id).or_default().push(m.content.text());
            }
        }
        let mut kept = Map::new();
        for (id, r) in results {
            let Some(texts) = texts.remove(id.as_str()) else {
                continue;
            };
            let mut r = r.clone();
            let came = result_text(r.get("content"));
            if !texts.contains(&came) {
                let text = texts.into_iter().next().unwrap_or_default();
                if let Some(o) = r.as_object_mut() {
                    o.insert("content".into(), serde_json::json!({"Text": text}));
                }
            }
            kept.insert(id.clone(), r);
        }
        set_if_changed(&mut out, "tool_results", Value::Object(kept));
    }
    out
}

impl Dialect for Zed {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_thread(obj).then_some(&["messages"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let mut msgs = if let Some(Value::Object(u)) = rec.get("User") {
            vec![read_user(u)]
        } else if let Some(Value::Object(a)) = rec.get("Agent") {
            read_agent(a)
        } else {
            return Ok(Vec::new());
        };
        for m in &mut msgs {
            m.fields = rec.clone();
        }
        Ok(msgs)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        if let Some(Value::Object(u)) = rec.get("User") {
            let m = msgs.first()?;
            let items = u
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut u = u.clone();
            set_if_changed(&mut u, "content", Value::Array(write_user(&items, m)));
            set_if_changed(&mut out, "User", Value::Object(u));
        } else if let Some(Value::Object(a)) = rec.get("Agent") {
            set_if_changed(&mut out, "Agent", Value::Object(write_agent(a, msgs)));
        }
        Some(out)
    }

    /// A new message is a `User` or an `Agent` of text (a summary: the
    /// user's).
    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            let text = m.content.text();
            match m.role {
                Role::Assistant if !m.has_calls() => out.push(
                    serde_json::json!({"Agent": {"content": [{"Text": text}], "tool_results": {}}}),
                ),
                Role::User | Role::System => {
                    let id = match m.minted {
                        Some(d) => d.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                        None => format!("ctxclean-{i}"),
                    };
                    out.push(serde_json::json!({"User": {"id": id, "content": [{"Text": text}]}}));
                }
                _ => losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "a Zed thread takes new text messages only",
                )),
            }
        }
        out
    }
}
