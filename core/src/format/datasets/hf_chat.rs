//! Hugging Face / TRL chat sets (`hf-chat`): JSON lines (or a JSON list)
//! whose rows hold role/content messages under keys other than OpenAI's
//! `messages`:
//!
//! - `{"conversations": [{"role", "content", "tool_calls"?}], …}`, as
//!   MiniMind and many SFT sets write them (not ShareGPT's `from`/`value`),
//!   KTO rows adding a `label`;
//! - preference rows: `chosen` and `rejected` message lists, with an
//!   optional `prompt` (a message list or a string) — DPO; or a `prompt`
//!   and a `completion` list.
//!
//! Messages are read as OpenAI messages (tolerating `"tool_calls": ""`).
//! A preference row is one conversation holding its columns' messages in
//! order — prompt, chosen, rejected, completion — and written back column
//! by column; every other column is kept as it is. Converted to a request
//! format, a row keeps its prompt and chosen (or completion) messages; the
//! rejected ones are reported as a loss.

use serde_json::{Map, Value};

use crate::format::dialect::{Dialect, Fault, Loss};
use crate::format::openai::{message_value, parse_message};
use crate::transcript::{Conversation, Fields, Message, Role};

/// Hugging Face / TRL chat sets.
pub(crate) struct HfChat;

/// The message-list columns of a preference row, in the order they are read.
const COLUMNS: &[&str] = &["prompt", "chosen", "rejected", "completion"];

/// Whether a value is a list of role/content messages.
fn messages(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(|l| {
        !l.is_empty()
            && l.iter()
                .all(|m| m.get("role").is_some_and(Value::is_string))
    })
}

/// Whether a value is a list of role/content messages, or empty.
fn message_list(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(Vec::is_empty) || messages(v)
}

/// Whether a row is a preference row (DPO or prompt/completion). One of
/// `chosen` and `rejected` may be empty: a trim can leave it so, and what
/// ctxclean writes it reads back.
fn preference(obj: &Map<String, Value>) -> bool {
    let (chosen, rejected) = (obj.get("chosen"), obj.get("rejected"));
    let text = |k: &str| obj.get(k).is_some_and(Value::is_string);
    // TRL's standard (not conversational) rows: strings throughout.
    (text("prompt") && text("chosen") && text("rejected"))
        || (message_list(chosen)
            && message_list(rejected)
            && (messages(chosen) || messages(rejected)))
        || ((messages(obj.get("prompt")) || obj.get("prompt").is_some_and(Value::is_string))
            && messages(obj.get("completion")))
}

/// Each column's length as read: how many messages it gave.
fn layout(env: &Map<String, Value>) -> Vec<(&'static str, usize)> {
    COLUMNS
        .iter()
        .filter_map(|&c| match env.get(c) {
            Some(Value::Array(l)) if message_list(env.get(c)) => Some((c, l.len())),
            // An empty string (a column a trim emptied) holds no message.
            Some(Value::String(s)) => Some((c, usize::from(!s.is_empty()))),
            _ => None,
        })
        .collect()
}

/// The column a message read from the envelope came from, by its position.
fn column_of(layout: &[(&'static str, usize)], sub: usize) -> Option<&'static str> {
    let mut start = 0;
    for &(c, n) in layout {
        if sub < start + n {
            return Some(c);
        }
        start += n;
    }
    None
}

impl Dialect for HfChat {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let conversations = obj.get("conversations").and_then(Value::as_array);
        if conversations.is_some_and(|l| l.first().is_none_or(|m| m.get("role").is_some())) {
            return Some(&["conversations"]);
        }
        preference(obj).then_some(&[][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["conversations"]
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        if !preference(env) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (column, _) in layout(env) {
            match env.get(column) {
                Some(Value::Array(list)) => {
                    for (i, m) in list.iter().enumerate() {
                        let map = m
                            .as_object()
                            .ok_or_else(|| format!("{column}[{i}]: not an object"))?;
                        out.push(
                            parse_message(map.clone())
                                .map_err(|e| format!("{column}[{i}]: {e}"))?,
                        );
                    }
                }
                // A string column is one message: the prompt the user's,
                // the others the model's.
                Some(Value::String(text)) if text.is_empty() => {}
                Some(Value::String(text)) => out.push(Message::new(
                    if column == "prompt" {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    text.as_str(),
                )),
                _ => {}
            }
        }
        Ok(out)
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        if !preference(env) {
            return;
        }
        let layout = layout(env);
        for (column, _) in &layout {
            let kept: Vec<&&Message> = msgs
                .iter()
                .filter(|m| {
                    m.origin.as_ref().and_then(|o| column_of(&layout, o.sub)) == Some(*column)
                })
                .collect();
            let new = match env.get(*column) {
                Some(Value::String(_)) => match kept.first() {
                    Some(m) => Value::from(m.content.text()),
                    None => Value::from(""),
                },
                _ => Value::Array(
                    kept.iter()
                        .map(|m| Value::Object(message_value(m)))
                        .collect(),
                ),
            };
            if env.get(*column) != Some(&new) {
                env.insert((*column).to_string(), new);
            }
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        parse_message(rec.clone()).map(|m| vec![m])
    }

    fn write_record(
        &self,
        _rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        msgs.first().map(|m| message_value(m))
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        if preference(env) {
            for m in msgs.iter() {
                losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "a preference row takes no new messages",
                ));
            }
            return Vec::new();
        }
        crate::format::openai::OpenAi.new_records(msgs, env, losses)
    }

    fn takes_new_messages(&self, conv: &Conversation) -> bool {
        conv.envelope.as_ref().is_none_or(|env| !preference(env))
    }

    fn after_read(&self, conv: &mut Conversation) {
        crate::format::placeholders::attach_images(conv);
    }

    fn alternatives(&self, conv: &Conversation) -> Vec<(usize, String)> {
        let Some(env) = conv.envelope.as_ref().filter(|e| preference(e)) else {
            return Vec::new();
        };
        let layout = layout(env);
        conv.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.origin.as_ref().and_then(|o| column_of(&layout, o.sub)) == Some("rejected")
            })
            .map(|(i, _)| {
                (
                    i,
                    "a request holds one conversation, the chosen one".to_string(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};
    use crate::transcript::Content;

    fn roundtrip(text: &str) -> crate::format::Document {
        let doc = read_document("t.jsonl", text.as_bytes().to_vec(), &Default::default()).unwrap();
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        doc
    }

    #[test]
    fn conversations_of_role_content_are_hf_chat() {
        let doc = roundtrip("{\"conversations\":[{\"role\":\"user\",\"content\":\"hi\",\"tool_calls\":\"\"},{\"role\":\"assistant\",\"content\":\"hello\",\"tool_calls\":\"\"}],\"label\":true}\n{\"conversations\":[{\"role\":\"user\",\"content\":\"x\"}]}\n");
        assert_eq!(doc.source_format, Format::HfChat);
        assert_eq!(doc.conversations[0].messages.len(), 2);
    }

    #[test]
    fn preference_rows_hold_every_column_and_write_back_by_column() {
        let text = "{\"prompt\":[{\"role\":\"user\",\"content\":\"Q\"}],\"chosen\":[{\"role\":\"assistant\",\"content\":\"good\"}],\"rejected\":[{\"role\":\"assistant\",\"content\":\"bad\"}],\"score\":0.5}\n";
        let mut doc = roundtrip(text);
        assert_eq!(doc.source_format, Format::HfChat);
        let conv = &mut doc.conversations[0];
        assert_eq!(conv.messages.len(), 3);
        conv.messages[2].content = Content::Text("worse".into());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"prompt\":[{\"role\":\"user\",\"content\":\"Q\"}],\"chosen\":[{\"role\":\"assistant\",\"content\":\"good\"}],\"rejected\":[{\"role\":\"assistant\",\"content\":\"worse\"}],\"score\":0.5}\n"
        );
        // A string prompt is a user message.
        let doc = roundtrip("{\"prompt\":\"Q\",\"chosen\":[{\"role\":\"assistant\",\"content\":\"a\"}],\"rejected\":[{\"role\":\"assistant\",\"content\":\"b\"}]}\n");
        assert_eq!(doc.conversations[0].messages[0].content.text(), "Q");
    }
}
