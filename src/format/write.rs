//! Writing a [`Document`] back in the shape it came in.
//!
//! Lossless by default: a JSON document in which nothing changed is written
//! back byte for byte; otherwise it is re-serialized with the input's
//! indentation. In JSONL, every unchanged line is written back byte for byte
//! and changed lines are written compact. Lines kept in place (skipped
//! invalid lines) stay where they were.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{openai, Document, Layout};
use crate::transcript::{Conversation, Message};

/// Writes a document to `out`.
pub fn write_document<W: Write + ?Sized>(doc: &Document, out: &mut W) -> io::Result<()> {
    let newline: &[u8] = if doc.style.crlf { b"\r\n" } else { b"\n" };
    match doc.layout {
        Layout::Empty => Ok(()),
        Layout::JsonlMessages | Layout::JsonlConversations => {
            let mut lines = Lines {
                out,
                newline,
                written: false,
            };
            if doc.layout == Layout::JsonlMessages {
                for conv in &doc.conversations {
                    write_jsonl_messages(conv, &mut lines)?;
                }
            } else {
                let mut pending = doc.passthrough.iter().peekable();
                for (i, conv) in doc.conversations.iter().enumerate() {
                    while let Some((_, line)) = pending.next_if(|(anchor, _)| *anchor <= i) {
                        lines.text(line)?;
                    }
                    match &conv.text {
                        Some(text) if conversation_unchanged(doc, i) => lines.text(text)?,
                        _ => lines.value(&conversation_value(conv))?,
                    }
                }
                for (_, line) in pending {
                    lines.text(line)?;
                }
            }
            if lines.written {
                out.write_all(doc.style.tail.as_bytes())?;
            }
            Ok(())
        }
        Layout::Object | Layout::Array | Layout::ArrayOfConversations => {
            if let Some(original) = &doc.style.original {
                if (0..doc.conversations.len()).all(|i| conversation_unchanged(doc, i)) {
                    return out.write_all(original.as_bytes());
                }
            }
            let value = match doc.layout {
                Layout::Object => match doc.conversations.first() {
                    Some(conv) => conversation_value(conv),
                    None => Value::Object(Map::new()),
                },
                Layout::Array => Value::Array(
                    doc.conversations
                        .iter()
                        .flat_map(|c| c.messages.iter())
                        .map(|m| Value::Object(openai::message_value(m)))
                        .collect(),
                ),
                _ => Value::Array(doc.conversations.iter().map(conversation_value).collect()),
            };
            let mut buf = Vec::new();
            match &doc.style.indent {
                Some(indent) => {
                    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
                    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
                    value.serialize(&mut ser)?;
                }
                None => serde_json::to_writer(&mut buf, &value)?,
            }
            if doc.style.crlf {
                buf = crlf(&buf);
            }
            out.write_all(&buf)?;
            out.write_all(doc.style.tail.as_bytes())
        }
    }
}

/// JSONL lines, separated by the input's line end.
struct Lines<'a, W: Write + ?Sized> {
    out: &'a mut W,
    newline: &'a [u8],
    written: bool,
}

impl<W: Write + ?Sized> Lines<'_, W> {
    fn start(&mut self) -> io::Result<()> {
        if self.written {
            self.out.write_all(self.newline)?;
        }
        self.written = true;
        Ok(())
    }

    fn text(&mut self, text: &str) -> io::Result<()> {
        self.start()?;
        self.out.write_all(text.as_bytes())
    }

    fn value(&mut self, value: &impl Serialize) -> io::Result<()> {
        self.start()?;
        serde_json::to_writer(&mut *self.out, value)?;
        Ok(())
    }
}

fn write_jsonl_messages<W: Write + ?Sized>(
    conv: &Conversation,
    lines: &mut Lines<'_, W>,
) -> io::Result<()> {
    let mut pending = conv.passthrough.iter().peekable();
    for m in &conv.messages {
        if let Some(index) = m.input_index() {
            while let Some((_, line)) = pending.next_if(|(anchor, _)| *anchor <= index) {
                lines.text(line)?;
            }
        }
        let verbatim = m.origin.as_ref().and_then(|o| o.text.as_deref());
        let value = openai::message_value(m);
        match verbatim {
            Some(text) if value == m.fields => lines.text(text)?,
            _ => lines.value(&value)?,
        }
    }
    for (_, line) in pending {
        lines.text(line)?;
    }
    Ok(())
}

/// Whether conversation `i` of the document is exactly as it was read.
fn conversation_unchanged(doc: &Document, i: usize) -> bool {
    let conv = &doc.conversations[i];
    doc.style.message_counts.get(i) == Some(&conv.messages.len())
        && conv
            .messages
            .iter()
            .enumerate()
            .all(|(pos, m)| message_unchanged(m, pos))
}

/// Whether a message is exactly as it was read, at the same position.
pub(crate) fn message_unchanged(m: &Message, pos: usize) -> bool {
    m.input_index() == Some(pos) && openai::message_value(m) == m.fields
}

fn conversation_value(conv: &Conversation) -> Value {
    let messages = Value::Array(
        conv.messages
            .iter()
            .map(|m| Value::Object(openai::message_value(m)))
            .collect(),
    );
    let mut map = conv.envelope.clone().unwrap_or_default();
    map.insert("messages".into(), messages);
    Value::Object(map)
}

fn crlf(buf: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len() + buf.len() / 16);
    for &b in buf {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, ReadOptions};
    use crate::transcript::Content;

    fn roundtrip(text: &str, edit: impl FnOnce(&mut Document)) -> String {
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let mut doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        edit(&mut doc);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn unchanged_inputs_come_back_byte_for_byte() {
        for text in [
            "",
            "{\n    \"model\": \"x\",\n    \"messages\": [ {\"role\": \"user\", \"content\": \"\\u00e9\"} ]\n}\n",
            "[{\"role\":\"user\",\"content\":\"hi\"}]",
            "{\"role\": \"user\", \"content\": \"a\"}\r\n{\"role\":\"assistant\",\"content\":1.0e3}\r\n",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"id\":1}\n{\"messages\":[]}\n",
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}\n\n",
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}",
            "[]  \n\n",
            "// comment\n{\"role\":\"user\",\"content\":\"a\"}\n{bad\n{\"role\":\"user\",\"content\":\"b\"}\n",
        ] {
            assert_eq!(roundtrip(text, |_| {}), text);
        }
    }

    #[test]
    fn changed_documents_keep_indentation_and_order() {
        let text = "{\n  \"model\": \"m\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"a\"},\n    {\"role\": \"user\", \"content\": \"b\"}\n  ],\n  \"tools\": []\n}\n";
        let out = roundtrip(text, |d| {
            d.conversations[0].messages.remove(0);
        });
        assert_eq!(
            out,
            "{\n  \"model\": \"m\",\n  \"messages\": [\n    {\n      \"role\": \"user\",\n      \"content\": \"b\"\n    }\n  ],\n  \"tools\": []\n}\n"
        );
    }

    #[test]
    fn changed_jsonl_lines_are_rewritten_others_kept() {
        let text = "{\"role\": \"user\", \"content\": \"a\"}\n//c\n{\"role\": \"user\", \"content\": \"b\"}\n";
        let out = roundtrip(text, |d| {
            d.conversations[0].messages[1].content = Content::Text("B".into());
        });
        assert_eq!(
            out,
            "{\"role\": \"user\", \"content\": \"a\"}\n//c\n{\"role\":\"user\",\"content\":\"B\"}\n"
        );
        let out = roundtrip(text, |d| {
            d.conversations[0].messages.remove(0);
        });
        assert_eq!(out, "//c\n{\"role\": \"user\", \"content\": \"b\"}\n");
    }
}
