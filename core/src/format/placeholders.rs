//! Multimodal training sets keep their images beside the messages: a list
//! of paths (`"images": ["a.jpg", …]`) and one `<image>` token in the text
//! for each, in order (LLaMA-Factory, ShareGPT-style and OpenAI-style sets).
//!
//! Reading turns a message whose text holds `<image>` tokens into parts:
//! the text between tokens, and one image part per token (its path from the
//! list, when the list has one). Such a message is *inline*: every part
//! stands for a piece of the original string, so writing joins the pieces
//! back into one string, byte for byte where nothing changed.

use serde_json::{Map, Value};

use crate::transcript::{Content, Conversation, Image, Part, PartKind};

/// The token that stands for an image in the text.
pub(crate) const IMAGE_TOKEN: &str = "<image>";

/// The media type a path's extension names, if it names one.
fn media_type(path: &str) -> Option<String> {
    let ext = path.rsplit('.').next()?.to_ascii_lowercase();
    Some(
        match ext.as_str() {
            "jpg" | "jpeg" => "image/jpeg",
            "png" => "image/png",
            "gif" => "image/gif",
            "webp" => "image/webp",
            "bmp" => "image/bmp",
            _ => return None,
        }
        .to_string(),
    )
}

/// Splits `text` at its image tokens, taking one path from `paths` for each.
fn split(text: &str, paths: &mut std::slice::Iter<'_, Value>) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(IMAGE_TOKEN) {
        if at > 0 {
            parts.push(text_piece(&rest[..at]));
        }
        let path = paths.next().and_then(Value::as_str);
        let mut raw = Map::new();
        raw.insert("placeholder".into(), Value::from(IMAGE_TOKEN));
        if let Some(p) = path {
            raw.insert("url".into(), Value::from(p));
        }
        parts.push(Part {
            kind: PartKind::Image(Image {
                media_type: path.and_then(media_type),
                ..Image::default()
            }),
            raw: Value::Object(raw).into(),
            slot: None,
        });
        rest = &rest[at + IMAGE_TOKEN.len()..];
    }
    if !rest.is_empty() {
        parts.push(text_piece(rest));
    }
    parts
}

fn text_piece(t: &str) -> Part {
    Part {
        kind: PartKind::Text(t.to_string()),
        raw: Value::from(t).into(),
        slot: None,
    }
}

/// For a conversation whose envelope lists `images`: every string content
/// holding image tokens becomes inline parts (see the module docs).
pub(crate) fn attach_images(conv: &mut Conversation) {
    let Some(Value::Array(list)) = conv.envelope.as_ref().and_then(|e| e.get("images")) else {
        return;
    };
    let list = list.clone();
    let mut paths = list.iter();
    for m in &mut conv.messages {
        if let Content::Text(t) = &m.content {
            if t.contains(IMAGE_TOKEN) {
                m.content = Content::Parts(split(t, &mut paths));
            }
        }
    }
}

/// The string an inline content stands for, its pieces joined: `None` when
/// the content is not inline (a real list of parts).
pub(crate) fn inline_text(content: &Content) -> Option<String> {
    let Content::Parts(parts) = content else {
        return None;
    };
    let inline = |p: &Part| match &*p.raw {
        Value::String(_) => true,
        Value::Object(o) => o.contains_key("placeholder"),
        _ => false,
    };
    let placeholder = |p: &Part| p.raw.get("placeholder").is_some();
    if !parts.iter().any(placeholder) || !parts.iter().all(inline) {
        return None;
    }
    let mut out = String::new();
    for p in parts {
        match (&p.kind, &*p.raw) {
            (PartKind::Text(t), _) => out.push_str(t),
            (_, Value::Object(o)) => {
                out.push_str(o.get("placeholder").and_then(Value::as_str).unwrap_or(""))
            }
            (_, Value::String(s)) => out.push_str(s),
            _ => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_become_images_and_join_back() {
        let mut paths_list = vec![Value::from("a.jpg"), Value::from("b.png")];
        let parts = split("<image>Who? And<image>", &mut paths_list.iter());
        assert_eq!(parts.len(), 3);
        assert!(
            matches!(&parts[0].kind, PartKind::Image(i) if i.media_type.as_deref() == Some("image/jpeg"))
        );
        assert_eq!(parts[1].text(), Some("Who? And"));
        let content = Content::Parts(parts);
        assert_eq!(content.images().count(), 2);
        assert_eq!(
            inline_text(&content).as_deref(),
            Some("<image>Who? And<image>")
        );
        paths_list.clear();
        // More tokens than paths: still images, without a path.
        let parts = split("<image>", &mut paths_list.iter());
        assert!(matches!(parts[0].kind, PartKind::Image(_)));
    }
}
