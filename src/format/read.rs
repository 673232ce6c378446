//! Reading an input into a [`Document`]: layout detection, parsing, and
//! errors that name the file, line and column.
//!
//! A JSON document is parsed with borrowed [`RawValue`]s first, so that a
//! message that is wrong can be located by its byte offset; JSONL is read
//! line by line, and each message keeps its line's exact text so that an
//! unchanged line is written back byte for byte.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{openai, Document, Format, Layout, Style};
use crate::error::{line_col, InputError};
use crate::transcript::{Conversation, Message, Origin};

/// How to read inputs.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Force the message dialect instead of detecting it.
    pub from: Option<Format>,
    /// Skip JSONL lines that are blank, comments or malformed instead of
    /// failing; they are counted and kept in place in the output.
    pub skip_invalid: bool,
}

/// Reads one input. `source` names it in errors (`-` for stdin).
pub fn read_document(
    source: &str,
    bytes: Vec<u8>,
    opts: &ReadOptions,
) -> Result<Document, InputError> {
    let text = decode(source, bytes)?;
    let format = opts.from.unwrap_or(Format::OpenAi);
    let style = Style {
        crlf: text.find('\n').is_some_and(|i| text[..i].ends_with('\r')),
        tail: text[text.trim_end().len()..].to_string(),
        ..Style::default()
    };
    let mut reader = Reader {
        source,
        text: &text,
        opts,
    };
    let mut doc = Document {
        source: source.to_string(),
        format,
        layout: Layout::Empty,
        conversations: Vec::new(),
        skipped: Vec::new(),
        passthrough: Vec::new(),
        style,
    };
    if text.trim().is_empty() {
        return Ok(doc);
    }
    if looks_like_jsonl(&text) {
        reader.read_jsonl(&mut doc)?;
    } else {
        reader.read_json(&mut doc)?;
        doc.style.indent = detect_indent(&text);
        doc.style.original = Some(text);
    }
    doc.style.message_counts = doc.conversations.iter().map(|c| c.messages.len()).collect();
    Ok(doc)
}

/// Checks UTF-8 and drops a byte-order mark.
fn decode(source: &str, mut bytes: Vec<u8>) -> Result<String, InputError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = std::str::from_utf8(&e.as_bytes()[..valid]).unwrap_or_default();
        let (line, col) = line_col(prefix, prefix.len());
        InputError::new(
            source,
            line,
            Some(col),
            "invalid UTF-8 (transcripts must be UTF-8 text)",
        )
    })
}

/// JSONL when the first non-blank line is a whole JSON value and more
/// follows it, or when it is a single message object.
fn looks_like_jsonl(text: &str) -> bool {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let end = rest.find('\n').unwrap_or(rest.len());
    let first = rest[..end].trim_end();
    match serde_json::from_str::<Value>(first) {
        Ok(Value::Object(map)) => {
            !rest[end..].trim().is_empty()
                || (map.contains_key("role") && !map.contains_key("messages"))
        }
        Ok(_) => false,
        // A document spread over several lines; or a broken first line,
        // which reads best as a JSONL error when other lines follow.
        Err(e) => {
            !e.is_eof() && !first.starts_with('[') && rest[end..].trim_start().starts_with('{')
        }
    }
}

/// The indentation of a pretty-printed document: the leading whitespace of
/// its first indented line.
fn detect_indent(text: &str) -> Option<String> {
    text.lines().skip(1).find_map(|l| {
        let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        (!ws.is_empty() && ws.len() < l.len()).then_some(ws)
    })
}

struct Reader<'a> {
    source: &'a str,
    text: &'a str,
    opts: &'a ReadOptions,
}

impl<'a> Reader<'a> {
    /// An error at the start of `part`, a slice of the input text.
    fn error_at(&self, part: &str, message: impl Into<String>) -> InputError {
        let offset = (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        let (line, col) = line_col(self.text, offset);
        InputError::new(self.source, line, Some(col), message)
    }

    /// A serde error inside `part` (which starts at line `base_line`).
    fn serde_error(&self, part: &str, e: &serde_json::Error) -> InputError {
        let offset = (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        let (base_line, base_col) = line_col(self.text, offset);
        let line = base_line + e.line().saturating_sub(1);
        let col = if e.line() <= 1 {
            base_col + e.column().saturating_sub(1)
        } else {
            e.column()
        };
        InputError::new(self.source, line, Some(col.max(1)), serde_message(e))
    }

    fn read_json(&mut self, doc: &mut Document) -> Result<(), InputError> {
        let text = self.text;
        let body = text.trim_start();
        match body.as_bytes().first() {
            Some(b'[') => {
                let items: Vec<&RawValue> =
                    serde_json::from_str(text).map_err(|e| self.serde_error(text, &e))?;
                let is_conversations = match items.first() {
                    Some(first) => self.object(first)?.contains_key("messages"),
                    None => false,
                };
                if is_conversations {
                    doc.layout = Layout::ArrayOfConversations;
                    for item in items {
                        let conv = self.conversation(item.get())?;
                        doc.conversations.push(conv);
                    }
                } else {
                    doc.layout = Layout::Array;
                    let messages = self.messages(&items)?;
                    doc.conversations.push(Conversation::new(messages));
                }
            }
            Some(b'{') => {
                doc.layout = Layout::Object;
                let conv = self.conversation(text)?;
                doc.conversations.push(conv);
            }
            _ => {
                let value: Value =
                    serde_json::from_str(text).map_err(|e| self.serde_error(text, &e))?;
                return Err(self.error_at(
                    body,
                    format!(
                        "a JSON {} is not a transcript: expected an object with \"messages\", \
                         an array of messages, or JSONL",
                        kind_of(&value)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Parses an object; `raw` points into the input text.
    fn object(&self, raw: &RawValue) -> Result<Map<String, Value>, InputError> {
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(self.error_at(
                raw.get(),
                format!("expected an object, found a JSON {}", kind_of(&other)),
            )),
            Err(e) => Err(self.serde_error(raw.get(), &e)),
        }
    }

    /// Reads a conversation object (`{"messages": [...], ...}`) from `part`,
    /// a slice of the input text.
    fn conversation(&self, part: &'a str) -> Result<Conversation, InputError> {
        let Entries(entries) =
            serde_json::from_str(part).map_err(|e| self.serde_error(part, &e))?;
        let mut envelope = Map::with_capacity(entries.len());
        let mut messages = None;
        for (key, raw) in entries {
            if key == "messages" && messages.is_none() {
                let items: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(|_| {
                    self.error_at(raw.get(), "\"messages\" must be a list of message objects")
                })?;
                messages = Some(self.messages(&items)?);
                envelope.insert(key, Value::Null);
            } else {
                let value =
                    serde_json::from_str(raw.get()).map_err(|e| self.serde_error(raw.get(), &e))?;
                envelope.insert(key, value);
            }
        }
        let Some(messages) = messages else {
            return Err(self.error_at(
                part,
                "no \"messages\" list: not an OpenAI chat transcript (use --from to name its format)",
            ));
        };
        let (line, _) = line_col(
            self.text,
            part.as_ptr() as usize - self.text.as_ptr() as usize,
        );
        Ok(Conversation {
            envelope: Some(envelope),
            line,
            ..Conversation::new(messages)
        })
    }

    fn messages(&self, items: &[&RawValue]) -> Result<Vec<Message>, InputError> {
        items
            .iter()
            .enumerate()
            .map(|(index, raw)| {
                let fields = self.object(raw).map_err(|e| InputError {
                    message: format!("messages[{index}]: {}", e.message),
                    ..e
                })?;
                let mut m = openai::parse_message(fields).map_err(|fault| {
                    self.error_at(raw.get(), format!("messages[{index}]: {fault}"))
                })?;
                let (line, _) = line_col(
                    self.text,
                    raw.get().as_ptr() as usize - self.text.as_ptr() as usize,
                );
                m.origin = Some(Origin {
                    index,
                    line,
                    text: None,
                });
                Ok(m)
            })
            .collect()
    }

    fn read_jsonl(&mut self, doc: &mut Document) -> Result<(), InputError> {
        let text = self.text;
        let mut conv = Conversation::new(Vec::new());
        let mut layout = None;
        let last_content = text.trim_end().len();
        let mut offset = 0;
        for (i, raw_line) in text.split_inclusive('\n').enumerate() {
            let line_no = i + 1;
            let start = offset;
            offset += raw_line.len();
            if start >= last_content {
                break; // trailing blank lines, kept in the style's tail
            }
            let line = raw_line.trim_end_matches('\n').trim_end_matches('\r');
            doc.style.tail = text[start + line.len()..].to_string();
            match self.jsonl_line(line, line_no, &mut layout) {
                Ok(JsonlLine::Message(fields)) => match openai::parse_message(fields) {
                    Ok(mut m) => {
                        m.origin = Some(Origin {
                            index: conv.messages.len(),
                            line: line_no,
                            text: Some(line.into()),
                        });
                        conv.messages.push(m);
                    }
                    Err(fault) => {
                        let err = InputError::new(self.source, line_no, Some(1), fault);
                        self.skip(err, doc)?;
                        conv.passthrough.push((conv.messages.len(), line.into()));
                    }
                },
                Ok(JsonlLine::Conversation) => match self.conversation(line) {
                    Ok(mut c) => {
                        c.line = line_no;
                        c.text = Some(line.into());
                        doc.conversations.push(c);
                    }
                    Err(err) => {
                        self.skip(err, doc)?;
                        doc.passthrough.push((doc.conversations.len(), line.into()));
                    }
                },
                Err(err) => {
                    self.skip(err, doc)?;
                    match layout {
                        Some(Layout::JsonlConversations) => {
                            doc.passthrough.push((doc.conversations.len(), line.into()))
                        }
                        _ => conv.passthrough.push((conv.messages.len(), line.into())),
                    }
                }
            }
        }
        doc.layout = layout.unwrap_or(Layout::JsonlMessages);
        if doc.layout == Layout::JsonlMessages {
            doc.conversations.push(conv);
        } else if !conv.passthrough.is_empty() {
            // Lines skipped before the layout was known come first.
            let mut lines: Vec<_> = conv.passthrough.drain(..).map(|(_, l)| (0, l)).collect();
            lines.append(&mut doc.passthrough);
            doc.passthrough = lines;
        }
        Ok(())
    }

    fn skip(&self, err: InputError, doc: &mut Document) -> Result<(), InputError> {
        if self.opts.skip_invalid {
            doc.skipped.push(err);
            Ok(())
        } else {
            Err(InputError {
                message: format!("{} (--skip-invalid skips such lines)", err.message),
                ..err
            })
        }
    }

    /// Classifies one JSONL line, fixing the layout on the first good line.
    fn jsonl_line(
        &self,
        line: &'a str,
        line_no: usize,
        layout: &mut Option<Layout>,
    ) -> Result<JsonlLine, InputError> {
        let err = |col: usize, msg: String| InputError::new(self.source, line_no, Some(col), msg);
        if line.trim().is_empty() {
            return Err(err(1, "blank line in JSONL".into()));
        }
        if line.trim_start().starts_with("//") {
            return Err(err(1, "comment line: JSONL has no comments".into()));
        }
        let fields = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(err(
                    1,
                    format!("expected a JSON object, found a JSON {}", kind_of(&other)),
                ))
            }
            Err(e) => return Err(err(e.column().max(1), serde_message(&e))),
        };
        let is_conversation =
            fields.get("messages").is_some_and(Value::is_array) && !fields.contains_key("role");
        match layout {
            None => {
                *layout = Some(if is_conversation {
                    Layout::JsonlConversations
                } else if fields.contains_key("role") {
                    Layout::JsonlMessages
                } else {
                    return Err(err(
                        1,
                        "neither a message (no \"role\") nor a conversation (no \"messages\" list); \
                         use --from to name the format"
                            .into(),
                    ));
                });
            }
            Some(Layout::JsonlConversations) if !is_conversation => {
                return Err(err(
                    1,
                    "expected a conversation object with a \"messages\" list".into(),
                ))
            }
            _ => {}
        }
        Ok(match layout {
            Some(Layout::JsonlConversations) => JsonlLine::Conversation,
            _ => JsonlLine::Message(fields),
        })
    }
}

enum JsonlLine {
    Message(Map<String, Value>),
    Conversation,
}

/// A serde_json message without its " at line L column C" suffix.
fn serde_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An object's entries in order, values left unparsed.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'a>, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    entries.push((k, v));
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Document, InputError> {
        read_document("t", text.as_bytes().to_vec(), &ReadOptions::default())
    }

    #[test]
    fn detects_layouts() {
        let layout = |t: &str| read(t).unwrap().layout;
        assert_eq!(layout(""), Layout::Empty);
        assert_eq!(layout(" \n\t"), Layout::Empty);
        assert_eq!(layout(r#"{"messages":[]}"#), Layout::Object);
        assert_eq!(layout("{\n \"messages\": []\n}\n"), Layout::Object);
        assert_eq!(layout(r#"[{"role":"user","content":"x"}]"#), Layout::Array);
        assert_eq!(layout("[]"), Layout::Array);
        assert_eq!(layout(r#"[{"messages":[]}]"#), Layout::ArrayOfConversations);
        assert_eq!(
            layout(r#"{"role":"user","content":"x"}"#),
            Layout::JsonlMessages
        );
        assert_eq!(
            layout("{\"role\":\"user\",\"content\":\"x\"}\n{\"role\":\"assistant\",\"content\":\"y\"}\n"),
            Layout::JsonlMessages
        );
        assert_eq!(
            layout("{\"messages\":[]}\n{\"messages\":[]}\n"),
            Layout::JsonlConversations
        );
    }

    #[test]
    fn errors_are_located() {
        let e = read("{\"role\":\"user\",\"content\":\"x\"}\n{\"content\":\"y\"}\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, Some(1)));
        assert!(e.message.contains("no \"role\""), "{}", e.message);

        let e =
            read("{\"messages\": [\n  {\"role\": \"user\"},\n  {\"content\": 1}\n]}").unwrap_err();
        assert_eq!((e.line, e.column), (3, Some(3)));
        assert!(e.message.starts_with("messages[1]: "), "{}", e.message);

        let e = read("{\"messages\": [\n  {\"role\": \"user\",}\n]}").unwrap_err();
        assert_eq!(e.line, 2);

        let e = read("5").unwrap_err();
        assert!(e.message.contains("a JSON number is not a transcript"));

        let e = read(r#"{"messages": 5}"#).unwrap_err();
        assert!(e.message.contains("\"messages\" must be a list"));

        let e = read("{\"role\":\"user\"}\n{\"role\":\"user\"\n{\"role\":\"user\"}\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn invalid_utf8_is_located() {
        let e = read_document(
            "t",
            b"{\"messages\":[\n{\"role\":\"\xff\"}]}".to_vec(),
            &ReadOptions::default(),
        )
        .unwrap_err();
        assert_eq!((e.line, e.column), (2, Some(10)));
        assert!(e.message.contains("UTF-8"));
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let doc = read("\u{feff}{\"role\":\"user\",\"content\":\"a\"}\r\n{\"role\":\"user\",\"content\":\"b\"}\r\n")
            .unwrap();
        assert_eq!(doc.message_count(), 2);
        assert!(doc.style.crlf);
    }

    #[test]
    fn skip_invalid_keeps_lines_in_place() {
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let text = "// note\n{\"role\":\"user\",\"content\":\"a\"}\n\n{oops\n{\"role\":\"user\",\"content\":\"b\"}\n";
        let doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        assert_eq!(doc.skipped.len(), 3);
        assert_eq!(doc.skipped[0].line, 1);
        assert_eq!(doc.skipped[2].line, 4);
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(
            conv.passthrough.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
            vec![0, 1, 1]
        );
        let e = read(text).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("--skip-invalid"));
    }

    #[test]
    fn detects_indentation() {
        assert_eq!(detect_indent("{\n    \"a\": 1\n}"), Some("    ".into()));
        assert_eq!(detect_indent("{\"a\": 1}"), None);
    }
}
