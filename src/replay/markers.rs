//! The prompt-cache markers an agent puts on the requests it sends, placed
//! on the requests replay rebuilds from its log (which does not keep
//! them), so that replay measures the traffic the agent really sends.
//!
//! - **Cline** (`src/core/api/providers/anthropic.ts` and
//!   `src/core/api/transform/anthropic-format.ts` in github.com/cline/cline):
//!   the system prompt is one text block marked `cache_control: {type:
//!   "ephemeral"}`; the last two user messages have their last content
//!   block marked; every message's content is a list of blocks.
//! - **Claude Code** (closed source; as its requests were captured, issue
//!   56): the last block of the newest message is marked, so the marker
//!   moves to the newest block on every call, and the system prompt's last
//!   block is marked.
//!
//! A body that already carries a marker (a capture, a log that records
//! the request) is left as it is; so is any other agent's, and any request
//! that is not Anthropic's Messages API.

use serde_json::{json, Map, Value};

use crate::format::Format;

/// `body`, an `agent`'s request in `format`, with the markers that agent
/// places.
pub(super) fn placed(agent: Format, format: Format, body: Vec<u8>) -> Vec<u8> {
    let rule: fn(&mut Map<String, Value>) = match (agent, format) {
        (Format::Cline, Format::Anthropic) => cline,
        (Format::ClaudeCode, Format::Anthropic) => claude_code,
        _ => return body,
    };
    if memchr::memmem::find(&body, b"\"cache_control\"").is_some() {
        return body;
    }
    let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    rule(&mut map);
    serde_json::to_vec(&Value::Object(map)).unwrap_or(body)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Content as a list of blocks (a string becomes one text block).
fn blocks(content: &mut Value) -> Option<&mut Vec<Value>> {
    if let Value::String(s) = content {
        *content = json!([{"type": "text", "text": std::mem::take(s)}]);
    }
    content.as_array_mut()
}

/// Marks the last block of `content` (a string made one text block).
fn mark_last(content: &mut Value) {
    if let Some(Value::Object(last)) = blocks(content).and_then(|b| b.last_mut()) {
        last.insert("cache_control".into(), ephemeral());
    }
}

fn cline(map: &mut Map<String, Value>) {
    if let Some(system) = map.get_mut("system") {
        mark_last(system);
    }
    let Some(Value::Array(messages)) = map.get_mut("messages") else {
        return;
    };
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|(i, _)| i)
        .collect();
    let marked = &users[users.len().saturating_sub(2)..];
    for (i, m) in messages.iter_mut().enumerate() {
        let Some(content) = m.get_mut("content") else {
            continue;
        };
        if marked.contains(&i) {
            mark_last(content);
        } else {
            blocks(content);
        }
    }
}

fn claude_code(map: &mut Map<String, Value>) {
    if let Some(system) = map.get_mut("system") {
        mark_last(system);
    }
    if let Some(content) = map
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|m| m.last_mut())
        .and_then(|m| m.get_mut("content"))
    {
        mark_last(content);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Vec<u8> {
        json!({"model": "claude-sonnet-4-5", "system": "be careful", "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second"},
                {"type": "text", "text": "and more"}]},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "third"},
        ]})
        .to_string()
        .into_bytes()
    }

    fn marked(v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(s) = v["system"].as_array() {
            for b in s.iter().filter(|b| b.get("cache_control").is_some()) {
                out.push(format!("system:{}", b["text"].as_str().unwrap()));
            }
        }
        for (i, m) in v["messages"].as_array().unwrap().iter().enumerate() {
            for b in m["content"].as_array().into_iter().flatten() {
                if b.get("cache_control").is_some() {
                    out.push(format!("{i}:{}", b["text"].as_str().unwrap()));
                }
            }
        }
        out
    }

    #[test]
    fn cline_marks_the_system_prompt_and_the_last_two_user_messages() {
        let out = placed(Format::Cline, Format::Anthropic, body());
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(marked(&v), ["system:be careful", "2:and more", "4:third"]);
        assert!(
            v["messages"][1]["content"].is_array(),
            "every content a list"
        );
        assert_eq!(v["messages"][0]["content"][0]["text"], "first");
    }

    #[test]
    fn claude_code_marks_the_newest_block() {
        let out = placed(Format::ClaudeCode, Format::Anthropic, body());
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(marked(&v), ["system:be careful", "4:third"]);
    }

    #[test]
    fn a_body_with_markers_and_other_agents_are_left_alone() {
        let mut v: Value = serde_json::from_slice(&body()).unwrap();
        v["messages"][0]["content"] = json!([{"type": "text", "text": "first",
            "cache_control": {"type": "ephemeral"}}]);
        let with = serde_json::to_vec(&v).unwrap();
        assert_eq!(placed(Format::Cline, Format::Anthropic, with.clone()), with);
        assert_eq!(placed(Format::Codex, Format::Responses, body()), body());
        assert_eq!(placed(Format::OpenAi, Format::OpenAi, body()), body());
    }
}
