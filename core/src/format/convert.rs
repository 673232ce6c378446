//! Format-neutral helpers for converting messages between formats: image
//! sources in every shape, tool-call arguments as text or as objects.

use serde_json::{Map, Value};

use super::dialect::Loss;
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Splits a `data:` URL into media type and base64 data.
pub(crate) fn split_data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media = meta
        .split(';')
        .next()
        .filter(|m| !m.is_empty())
        .unwrap_or("image/png");
    Some((media.to_string(), data.to_string()))
}

/// Tool-call arguments as a JSON value: the parsed text (looping while a
/// double-encoded string parses), or the text itself when it is not JSON.
pub(crate) fn arguments_value(arguments: &str) -> Value {
    let mut v: Value = match serde_json::from_str(arguments) {
        Ok(v) => v,
        Err(_) if arguments.trim().is_empty() => return Value::Object(Map::new()),
        Err(_) => return Value::String(arguments.to_string()),
    };
    while let Value::String(s) = &v {
        match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => v = inner,
            _ => break,
        }
    }
    v
}

/// The marker a freeform call (a Responses `custom_tool_call`, an OpenAI
/// `custom` tool call) keeps in [`ToolCall::raw`] on its way to another
/// format, whose input is text, not JSON.
pub(crate) fn custom_marker() -> Value {
    serde_json::json!({"type": "custom", "custom": {}})
}

/// Whether a call is freeform: its input is text, not JSON arguments.
pub(crate) fn is_custom(c: &ToolCall) -> bool {
    c.raw.get("type").and_then(Value::as_str) == Some("custom")
        || c.raw.get("custom").is_some_and(Value::is_object)
}

/// A call's arguments as the JSON object a target that takes only objects
/// needs (Anthropic's `input`, Gemini's `args`): freeform or non-object
/// arguments are wrapped as `{"input": …}`, and the change is reported.
pub(crate) fn object_arguments(
    c: &ToolCall,
    index: Option<usize>,
    target: &str,
    losses: &mut Vec<Loss>,
) -> Value {
    let v = arguments_value(&c.arguments);
    if v.is_object() && !is_custom(c) {
        return v;
    }
    losses.push(Loss::at(
        index,
        "shape of a freeform tool input",
        format!("{target} tool inputs are JSON objects; wrapped as {{\"input\": …}}"),
    ));
    let mut o = Map::new();
    o.insert("input".into(), Value::from(c.arguments.as_str()));
    Value::Object(o)
}

/// A call's value (`raw`) with its arguments at `key` set to `arguments`
/// when they say something else: as a JSON string, or with `as_value` as
/// the value they hold. Arguments that say the same stay as they were
/// spelled.
pub(crate) fn with_arguments(raw: &Value, key: &str, arguments: &str, as_value: bool) -> Value {
    let mut v = raw.clone();
    if let Some(o) = v.as_object_mut() {
        let before = o.get(key).map(arguments_text).unwrap_or_default();
        if before != arguments {
            let new = if as_value {
                arguments_value(arguments)
            } else {
                Value::from(arguments)
            };
            o.insert(key.into(), new);
        }
    }
    v
}

/// Tool-call arguments as text: objects are serialized compactly.
pub(crate) fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// The type tag of a part, for loss reports.
pub(crate) fn part_type(raw: &Value) -> String {
    if let Some(t) = raw.get("type").and_then(Value::as_str) {
        return t.to_string();
    }
    // Gemini names its parts by their one key (`{"thought": true, "text"}`
    // is a thought, `{"executableCode": …}` code).
    if raw.get("thought") == Some(&Value::Bool(true)) {
        return "thought".to_string();
    }
    raw.as_object()
        .and_then(|o| {
            o.keys()
                .find(|k| !matches!(k.as_str(), "text" | "thoughtSignature"))
        })
        .cloned()
        .unwrap_or_else(|| "untyped".to_string())
}

/// A message with the same meaning and OpenAI-shaped parts, ready for any
/// writer that builds records from typed fields. Parts OpenAI cannot carry
/// are dropped and reported.
pub(crate) fn to_openai(m: &Message, losses: &mut Vec<Loss>) -> Message {
    let index = m.input_index();
    let content = match &m.content {
        Content::Parts(parts) => {
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                match &p.kind {
                    PartKind::Text(t) => out.push(Part::text_part(t.as_str())),
                    // OpenAI takes images from the user only.
                    PartKind::Image(_) if m.role != Role::User => losses.push(Loss::at(
                        index,
                        "image",
                        format!(
                            "openai takes images from the user only, not in {} messages",
                            m.role
                        ),
                    )),
                    PartKind::Image(img) => match super::dialect::image_url(&p.raw) {
                        Some(url) => {
                            let mut url_obj = Map::new();
                            url_obj.insert("url".into(), Value::from(url));
                            let mut raw = Map::new();
                            raw.insert("type".into(), Value::from("image_url"));
                            raw.insert("image_url".into(), Value::Object(url_obj));
                            out.push(Part {
                                kind: PartKind::Image(img.clone()),
                                raw: Value::Object(raw).into(),
                                slot: None,
                            });
                        }
                        None => {
                            losses.push(Loss::at(index, "image", "it has no URL or inline data"))
                        }
                    },
                    PartKind::Other => losses.push(Loss::at(
                        index,
                        format!("{} part", part_type(&p.raw)),
                        "openai cannot express it",
                    )),
                }
            }
            if out.is_empty() {
                // Nothing OpenAI can carry is left: an empty list is a 400
                // (`expected an array with minimum length 1`). A call keeps
                // `null`, a result an empty text; any other message is left
                // without content, and not written (see `new_records`).
                if m.has_calls() {
                    Content::Null
                } else if m.role.is_result() {
                    Content::Text(String::new())
                } else {
                    Content::Absent
                }
            } else if let [Part {
                kind: PartKind::Text(t),
                ..
            }] = out.as_slice()
            {
                // One text block is OpenAI's plain string, which no other
                // provider's body is mistaken for.
                Content::Text(t.clone())
            } else {
                Content::Parts(out)
            }
        }
        c => c.clone(),
    };
    Message::from(MessageData {
        role: m.role,
        content,
        tool_calls: m.tool_calls.as_ref().map(|calls| {
            calls
                .iter()
                .map(|c| ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    // A freeform call stays one: OpenAI's `custom` shape.
                    raw: if is_custom(c) {
                        custom_marker().into()
                    } else {
                        Value::Null.into()
                    },
                    slot: None,
                })
                .collect()
        }),
        tool_call_id: m.tool_call_id.clone(),
        name: m.name.clone(),
        fields: Fields::new(),
        origin: None,
        minted: m.minted,
        anchor: m.anchor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_urls_in_every_shape() {
        let cases = [
            (
                json!({"type": "image_url", "image_url": {"url": "http://x/a.png"}}),
                "http://x/a.png",
            ),
            (json!({"type": "image_url", "image_url": "a.png"}), "a.png"),
            (
                json!({"type": "input_image", "image_url": "data:image/jpeg;base64,AAAA"}),
                "data:image/jpeg;base64,AAAA",
            ),
            (
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}),
                "data:image/gif;base64,R0lG",
            ),
            (
                json!({"type": "image", "image": "iVBO", "mediaType": "image/jpeg"}),
                "data:image/jpeg;base64,iVBO",
            ),
            (
                json!({"type": "binary", "data": {"Path": "a.png", "MIMEType": "image/png", "Data": "iVBO"}}),
                "data:image/png;base64,iVBO",
            ),
            (
                json!({"inlineData": {"mimeType": "image/png", "data": "iVBO"}}),
                "data:image/png;base64,iVBO",
            ),
            (
                json!({"type": "image", "url": "http://x/b.png"}),
                "http://x/b.png",
            ),
        ];
        for (raw, url) in cases {
            assert_eq!(
                crate::format::dialect::image_url(&raw).as_deref(),
                Some(url),
                "{raw}"
            );
        }
    }

    #[test]
    fn arguments_decode_twice_when_double_encoded() {
        assert_eq!(arguments_value(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(
            arguments_value(r#""{\"location\": \"here\"}""#),
            json!({"location": "here"})
        );
        assert_eq!(arguments_value("status"), json!("status"));
        assert_eq!(arguments_value(""), json!({}));
        assert_eq!(arguments_text(&json!({"a": 1})), r#"{"a":1}"#);
    }
}
