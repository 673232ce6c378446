//! Chat exports and agent logs beyond the API formats, read so that every
//! transcript people have can be counted and cleaned:
//!
//! - `copilot`: GitHub Copilot CLI `events.jsonl` (`user.message`,
//!   `assistant.message` with `toolRequests`, `tool.execution_complete`);
//! - `claude-ai`: Claude.ai `conversations.json` (`chat_messages` with `sender`);
//! - `grok`: Grok exports (`conversations[].responses[].response`);
//! - `aistudio`: Google AI Studio prompts (`chunkedPrompt.chunks`).
//!
//! Each is written back in its own shape; untouched parts stay as they came.

use serde_json::{Map, Value};

use crate::format::anthropic::{read_message, write_message};
use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

fn text_records(msgs: &[&Message], make: impl Fn(&Message) -> Value) -> Vec<Value> {
    msgs.iter().map(|m| make(m)).collect()
}

/// GitHub Copilot CLI session events.
pub(crate) struct Copilot;

/// Whether a line is a Copilot CLI event.
pub(crate) fn is_copilot_event(r: &Map<String, Value>) -> bool {
    r.get("data").is_some_and(Value::is_object)
        && r.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains('.') || t == "abort")
}

/// A `tool.execution_complete`'s `result.content`.
fn result_content(data: &Map<String, Value>) -> Option<&Value> {
    data.get("result")?.get("content")
}

/// A failed `tool.execution_complete`'s `error.message`.
fn error_message(data: &Map<String, Value>) -> Option<&str> {
    data.get("error")?.get("message")?.as_str()
}

impl Dialect for Copilot {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let data = match rec.get("data") {
            Some(Value::Object(d)) => d,
            _ => return Ok(Vec::new()),
        };
        let text = || match data.get("content") {
            Some(Value::String(s)) => Content::Text(s.clone()),
            _ => Content::Absent,
        };
        let role = match rec.get("type").and_then(Value::as_str) {
            Some("user.message") => Role::User,
            Some("system.message") => Role::System,
            Some("assistant.message") => Role::Assistant,
            Some("tool.execution_complete") => {
                // What the model was shown: the result, or a failure's
                // `error.message` when there is no result.
                let content = match (result_content(data), error_message(data)) {
                    (Some(Value::String(s)), _) => Content::Text(s.clone()),
                    (Some(v), _) => Content::Text(arguments_text(v)),
                    (None, Some(e)) => Content::Text(e.to_string()),
                    (None, None) => Content::Absent,
                };
                return Ok(vec![Message::from(MessageData {
                    content,
                    tool_call_id: data
                        .get("toolCallId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    fields: rec.clone(),
                    ..MessageData::new(Role::Tool, "")
                })]);
            }
            _ => return Ok(Vec::new()),
        };
        let mut m = Message::from(MessageData {
            content: text(),
            fields: rec.clone(),
            ..MessageData::new(role, "")
        });
        if let Some(Value::Array(reqs)) = data.get("toolRequests") {
            let calls: Vec<ToolCall> = reqs
                .iter()
                .enumerate()
                .map(|(k, r)| ToolCall {
                    id: r
                        .get("toolCallId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    name: r
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_string(),
                    arguments: arguments_text(r.get("arguments").unwrap_or(&Value::Null)),
                    raw: r.clone().into(),
                    // Its place in the list: two calls of one id each
                    // written back to their own.
                    slot: Some(k),
                })
                .collect();
            if !calls.is_empty() {
                m.tool_calls = Some(calls);
            }
        }
        Ok(vec![m])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut data = rec.get("data")?.as_object()?.clone();
        if m.role.is_result() {
            let text = m.content.text();
            if result_content(&data).is_none() && error_message(&data).is_some() {
                if let Some(Value::Object(e)) = data.get_mut("error") {
                    set_if_changed(e, "message", Value::from(text));
                }
            } else if result_content(&data).is_some() || !matches!(m.content, Content::Absent) {
                let mut result = data
                    .get("result")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                set_if_changed(&mut result, "content", Value::from(text));
                set_if_changed(&mut data, "result", Value::Object(result));
            }
        } else {
            if data.contains_key("content") || !m.content.is_blank() {
                set_if_changed(&mut data, "content", Value::from(m.content.text()));
            }
            if let Some(Value::Array(reqs)) = data.get("toolRequests").cloned() {
                let by_slot = crate::pairs::calls_by_slot(m.calls());
                let kept: Vec<Value> = reqs
                    .into_iter()
                    .enumerate()
                    .filter_map(|(k, r)| {
                        let call = *by_slot.get(&k)?;
                        let mut r = r.as_object()?.clone();
                        if r.get("arguments").map(arguments_text).as_deref()
                            != Some(call.arguments.as_str())
                        {
                            let v = match r.get("arguments") {
                                Some(Value::String(_)) => Value::from(call.arguments.as_str()),
                                _ => arguments_value(&call.arguments),
                            };
                            r.insert("arguments".into(), v);
                        }
                        Some(Value::Object(r))
                    })
                    .collect();
                set_if_changed(&mut data, "toolRequests", Value::Array(kept));
            }
        }
        let mut out = rec.clone();
        set_if_changed(&mut out, "data", Value::Object(data));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        _losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        text_records(msgs, |m| {
            let ty = match m.role {
                Role::Assistant => "assistant.message",
                Role::System | Role::Developer => "system.message",
                _ => "user.message",
            };
            serde_json::json!({"type": ty, "data": {"content": m.content.text()}})
        })
    }
}

/// Claude.ai data exports.
pub(crate) struct ClaudeAi;

/// The record as an Anthropic message, for the Anthropic reader.
fn as_anthropic(rec: &Map<String, Value>) -> Map<String, Value> {
    let role = match rec.get("sender").and_then(Value::as_str) {
        Some("assistant") => "assistant",
        _ => "user",
    };
    let mut m = Map::new();
    m.insert("role".into(), Value::from(role));
    match rec.get("content") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => {
            m.insert("content".into(), Value::Array(blocks.clone()));
        }
        _ => {
            m.insert(
                "content".into(),
                rec.get("text").cloned().unwrap_or(Value::from("")),
            );
        }
    }
    m
}

fn joined_text(content: Option<&Value>) -> Option<String> {
    let blocks = content?.as_array()?;
    Some(
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

impl Dialect for ClaudeAi {
    fn content_key(&self) -> Option<&'static str> {
        Some("text")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        obj.get("chat_messages")
            .is_some_and(Value::is_array)
            .then_some(&["chat_messages"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["chat_messages"]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_message(&Fields::from(as_anthropic(rec)))
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let synth = as_anthropic(rec);
        let new = write_message(&synth, msgs)?;
        if new == synth {
            return Some(rec.clone());
        }
        let mut out = rec.clone();
        let new_content = new.get("content")?;
        match new_content {
            Value::Array(_) => {
                let text_in_sync = joined_text(rec.get("content")).as_deref()
                    == rec.get("text").and_then(Value::as_str);
                out.insert("content".into(), new_content.clone());
                if text_in_sync {
                    out.insert(
                        "text".into(),
                        Value::from(joined_text(Some(new_content)).unwrap_or_default()),
                    );
                }
            }
            other => {
                out.insert("text".into(), other.clone());
            }
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        _losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        text_records(msgs, |m| {
            let sender = if m.role == Role::Assistant {
                "assistant"
            } else {
                "human"
            };
            let text = m.content.text();
            serde_json::json!({"sender": sender, "text": text, "content": [{"type": "text", "text": text}]})
        })
    }
}

/// Google AI Studio prompts.
pub(crate) struct AiStudio;

impl Dialect for AiStudio {
    fn content_key(&self) -> Option<&'static str> {
        Some("text")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        obj.get("chunkedPrompt")
            .and_then(|c| c.get("chunks"))
            .is_some_and(Value::is_array)
            .then_some(&["chunkedPrompt", "chunks"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["chunkedPrompt", "chunks"]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let role = match rec.get("role").and_then(Value::as_str) {
            Some("model") => Role::Assistant,
            Some("user") => Role::User,
            Some(r) => return Err(format!("unknown role \"{r}\"")),
            None => return Err("a chunk has no \"role\"".into()),
        };
        let text = rec.get("text").and_then(Value::as_str).unwrap_or_default();
        let content = if rec.get("isThought") == Some(&Value::Bool(true)) {
            Content::Parts(vec![Part {
                kind: PartKind::Other,
                raw: serde_json::json!({"type": "thinking", "thinking": text}).into(),
                slot: None,
            }])
        } else {
            Content::Text(text.to_string())
        };
        Ok(vec![Message::from(MessageData {
            content,
            fields: rec.clone(),
            ..MessageData::new(role, "")
        })])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut out = rec.clone();
        if rec.get("isThought") == Some(&Value::Bool(true)) {
            let part = m.content.parts().first()?;
            let text = part.raw.get("thinking").and_then(Value::as_str)?;
            set_if_changed(&mut out, "text", Value::from(text));
        } else {
            set_if_changed(&mut out, "text", Value::from(m.content.text()));
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        _losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        text_records(msgs, |m| {
            let role = if m.role == Role::Assistant {
                "model"
            } else {
                "user"
            };
            serde_json::json!({"role": role, "text": m.content.text()})
        })
    }
}

/// Grok exports: `{"conversations": [{"conversation": {...}, "responses": [...]}]}`.
pub(crate) struct Grok;

impl Dialect for Grok {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        (obj.contains_key("conversation") && obj.get("responses").is_some_and(Value::is_array))
            .then_some(&["responses"][..])
    }

    fn conversations_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let list = obj.get("conversations")?.as_array()?;
        (!list.is_empty() && list.iter().all(|c| c.get("responses").is_some()))
            .then_some(&["conversations"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["responses"]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let resp = rec
            .get("response")
            .and_then(Value::as_object)
            .ok_or("a response has no \"response\" object")?;
        let role = match resp.get("sender").and_then(Value::as_str) {
            Some("human" | "user") => Role::User,
            Some("assistant" | "ASSISTANT" | "grok") => Role::Assistant,
            Some(s) => {
                Role::parse(&s.to_lowercase()).ok_or_else(|| format!("unknown sender \"{s}\""))?
            }
            None => return Err("a response has no \"sender\"".into()),
        };
        let text = resp
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok(vec![Message::from(MessageData {
            fields: rec.clone(),
            ..MessageData::new(role, text)
        })])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let m = msgs.first()?;
        let mut resp = rec.get("response")?.as_object()?.clone();
        set_if_changed(&mut resp, "message", Value::from(m.content.text()));
        let mut out = rec.clone();
        set_if_changed(&mut out, "response", Value::Object(resp));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        _losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        text_records(msgs, |m| {
            let sender = if m.role == Role::Assistant {
                "assistant"
            } else {
                "human"
            };
            serde_json::json!({"response": {"message": m.content.text(), "sender": sender}})
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};

    #[test]
    fn copilot_events() {
        let text = "{\"type\":\"session.start\",\"data\":{\"sessionId\":\"s\"}}\n{\"type\":\"user.message\",\"data\":{\"content\":\"List\"}}\n{\"type\":\"assistant.message\",\"data\":{\"content\":\"\",\"toolRequests\":[{\"toolCallId\":\"c1\",\"name\":\"shell\",\"arguments\":\"{}\"}]}}\n{\"type\":\"tool.execution_complete\",\"data\":{\"toolCallId\":\"c1\",\"result\":{\"content\":\"a.txt\"}}}\n";
        let doc = read_document("e.jsonl", text.as_bytes().to_vec(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Copilot);
        let msgs = &doc.conversations[0].messages;
        assert_eq!(msgs.len(), 3);
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn a_failed_copilot_call_s_error_is_its_result() {
        // A failure without a `result`: its `error.message` is what the
        // model was shown. It read as an empty result, and the writer gave
        // the event a `result` it did not have, even through `convert`.
        let text = "{\"type\":\"user.message\",\"data\":{\"content\":\"List\"}}\n{\"type\":\"assistant.message\",\"data\":{\"content\":\"\",\"toolRequests\":[{\"toolCallId\":\"c1\",\"name\":\"shell\",\"arguments\":\"{}\"}]}}\n{\"type\":\"tool.execution_complete\",\"data\":{\"toolCallId\":\"c1\",\"success\":false,\"error\":{\"message\":\"ls: no such directory\",\"code\":\"failure\"}}}\n";
        let mut doc =
            read_document("e.jsonl", text.as_bytes().to_vec(), &Default::default()).unwrap();
        let msgs = &mut doc.conversations[0].messages;
        assert_eq!(msgs[2].content.text(), "ls: no such directory");
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        doc.conversations[0].messages[2].content = crate::transcript::Content::Text("[cut]".into());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(r#""error":{"message":"[cut]","code":"failure"}"#),
            "{out}"
        );
        assert!(!out.contains("\"result\""), "{out}");
    }
}
