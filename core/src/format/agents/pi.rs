//! pi coding-agent sessions (`~/.pi/agent/sessions/…/*.jsonl`): a
//! `{"type": "session", "provider", "modelId", …}` header line, then entry
//! lines; `{"type": "message", "message": {…}}` lines hold the conversation.
//!
//! A message is a user turn (`content` a string or text and image blocks),
//! an assistant turn (text, `thinking` and `toolCall` blocks: `{id, name,
//! arguments}` with arguments as an object), or a tool's answer
//! (`{"role": "toolResult", "toolCallId", "toolName", "content", "isError"}`).
//! Assistant turns are read and written as Anthropic turns are, with
//! `toolCall`/`arguments` in place of `tool_use`/`input`, so every block
//! keeps its place. Every other line (model and thinking-level changes,
//! compactions, custom entries) passes through as it came.

use serde_json::{Map, Value};

use crate::format::anthropic::{read_message, write_message};
use crate::format::dialect::{Dialect, Fault, Loss};
use crate::format::openai::{content_value, parse_content};
use crate::transcript::{Content, Fields, Message, MessageData, Role};

/// pi coding-agent sessions.
pub(crate) struct Pi;

/// The entry types of pi sessions, the evidence detection looks for.
const ENTRY_TYPES: &[&str] = &[
    "session",
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

/// Whether a line is a pi session entry.
pub(crate) fn is_entry(r: &Map<String, Value>) -> bool {
    let ty = r.get("type").and_then(Value::as_str);
    match ty {
        Some("message") => r
            .get("message")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            .is_some_and(|role| matches!(role, "user" | "assistant" | "toolResult")),
        Some("session") => r.contains_key("cwd") || r.contains_key("provider"),
        Some(t) => ENTRY_TYPES.contains(&t) && !r.contains_key("payload"),
        None => false,
    }
}

/// A message's blocks with pi's names turned into Anthropic's (`toolCall`
/// → `tool_use`, `arguments` → `input`), keys in place; [`from_anthropic`]
/// turns them back.
fn rename(msg: &Map<String, Value>, ty: (&str, &str), key: (&str, &str)) -> Map<String, Value> {
    let mut out = msg.clone();
    if let Some(Value::Array(blocks)) = out.get_mut("content") {
        for b in blocks.iter_mut() {
            let Value::Object(o) = b else { continue };
            if o.get("type").and_then(Value::as_str) != Some(ty.0) {
                continue;
            }
            *o = o
                .iter()
                .map(|(k, v)| match k.as_str() {
                    "type" => (k.clone(), Value::from(ty.1)),
                    k2 if k2 == key.0 => (key.1.to_string(), v.clone()),
                    _ => (k.clone(), v.clone()),
                })
                .collect();
        }
    }
    out
}

fn to_anthropic(msg: &Map<String, Value>) -> Map<String, Value> {
    rename(msg, ("toolCall", "tool_use"), ("arguments", "input"))
}

fn from_anthropic(msg: &Map<String, Value>) -> Map<String, Value> {
    rename(msg, ("tool_use", "toolCall"), ("input", "arguments"))
}

/// The message object of a `message` line.
fn message(rec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if rec.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    rec.get("message")?.as_object()
}

fn read_tool_result(msg: &Map<String, Value>) -> Result<Message, Fault> {
    let content = match msg.get("content") {
        None => Content::Absent,
        Some(v) => parse_content(v)?,
    };
    Ok(Message::from(MessageData {
        content,
        tool_call_id: msg
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: msg
            .get("toolName")
            .and_then(Value::as_str)
            .map(str::to_string),
        fields: msg.clone().into(),
        ..MessageData::new(Role::Tool, "")
    }))
}

/// Whether a line is a message entry.
fn is_message_entry(r: &Map<String, Value>) -> bool {
    message(r).is_some()
}

impl Dialect for Pi {
    /// Says how many message entries other branches of a version-3
    /// session's tree hold: kept in place and not read.
    fn passed_over_note(
        &self,
        _records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        let why = "another branch of the session's tree";
        crate::format::chain::passed_note(active, "message entry", why)
    }

    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn picks_active(&self) -> bool {
        true
    }

    /// A new line has no place in a session kept as a tree of `id`s.
    fn takes_new_messages(&self, conv: &crate::transcript::Conversation) -> bool {
        !conv
            .records
            .iter()
            .any(|r| r.value.as_ref().is_some_and(|v| v.contains_key("parentId")))
    }

    /// Sessions since version 2 are trees (`id`, `parentId`): the
    /// conversation is the chain of the last entry; the entries of other
    /// branches stay in place, untouched.
    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::chain::active_chain(records, "id", "parentId", is_message_entry)
    }

    /// Removing an entry relinks its children to its parent, as pi's own
    /// branch reading needs.
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[crate::transcript::Record],
        out: &mut [crate::format::dialect::OutRecord],
    ) {
        crate::format::chain::relink(original, out, "id", "parentId");
        crate::format::chain::keep_leaf_last(original, out, "id", is_message_entry);
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let Some(msg) = message(rec) else {
            return Ok(Vec::new());
        };
        match msg.get("role").and_then(Value::as_str) {
            Some("toolResult") => Ok(vec![read_tool_result(msg)?]),
            Some("user" | "assistant") => {
                let mut out = read_message(&Fields::from(to_anthropic(msg)))?;
                for m in &mut out {
                    m.fields = msg.clone().into();
                }
                Ok(out)
            }
            // Other roles (a shell run's output shown to the user) pass through.
            _ => Ok(Vec::new()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let msg = message(rec)?;
        let new = if msg.get("role").and_then(Value::as_str) == Some("toolResult") {
            let m = msgs.first()?;
            let mut out = msg.clone();
            match content_value(&m.content, msg.get("content")) {
                Some(v) => crate::format::dialect::set_if_changed(&mut out, "content", v),
                None => {
                    out.shift_remove("content");
                }
            }
            out
        } else {
            from_anthropic(&write_message(&to_anthropic(msg), msgs)?)
        };
        let mut out = rec.clone();
        if new != *msg {
            out.insert("message".into(), Value::Object(new));
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for m in crate::format::anthropic::new_messages(msgs, env, losses) {
            let line = |message: Map<String, Value>| serde_json::json!({"type": "message", "message": Value::Object(message)});
            let blocks = m
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let results: Vec<&Value> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .collect();
            if results.is_empty() {
                out.push(line(from_anthropic(&m)));
                continue;
            }
            for b in results {
                let mut r = Map::new();
                r.insert("role".into(), Value::from("toolResult"));
                r.insert(
                    "toolCallId".into(),
                    b.get("tool_use_id").cloned().unwrap_or_default(),
                );
                let content = match b.get("content") {
                    Some(Value::String(s)) => serde_json::json!([{"type": "text", "text": s}]),
                    Some(v) => v.clone(),
                    None => Value::Array(Vec::new()),
                };
                r.insert("content".into(), content);
                r.insert(
                    "isError".into(),
                    Value::Bool(b.get("is_error") == Some(&Value::Bool(true))),
                );
                out.push(line(r));
            }
        }
        // A system prompt has no line of its own in a pi session.
        crate::format::dialect::system_as_first_line(
            env,
            &mut out,
            |m| serde_json::json!({"type": "message", "message": m}),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, write_document, Format};

    /// Lines of pi sessions as pi's own tests and users' tools write them.
    const SESSION: &str = concat!(
        r#"{"type":"session","id":"x","timestamp":"2025-12-09T00:53:29.825Z","cwd":"/repo","provider":"anthropic","modelId":"claude-opus-4-5"}"#,
        "\n",
        r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"run the tests"}]}}"#,
        "\n",
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"inspect first","thinkingSignature":"sig"},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"npm test"}}],"stopReason":"toolUse"}}"#,
        "\n",
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","isError":true,"content":[{"type":"text","text":"1 failing"}]}}"#,
        "\n",
        r#"{"type":"model_change","model":"claude-sonnet-4-5","timestamp":"2025-12-09T00:54:00.000Z"}"#,
        "\n",
        r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"One test fails."}],"stopReason":"stop"}}"#,
        "\n",
    );

    #[test]
    fn a_session_reads_pairs_and_writes_back() {
        let doc = read_document("s.jsonl", SESSION.into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Pi);
        let msgs = &doc.conversations[0].messages;
        let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(msgs[1].calls()[0].arguments, r#"{"command":"npm test"}"#);
        assert_eq!(msgs[2].tool_call_id.as_deref(), Some("call_1"));
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), SESSION);
    }

    #[test]
    fn a_changed_result_and_a_dropped_thinking_block_keep_the_rest() {
        let mut doc = read_document("s.jsonl", SESSION.into(), &Default::default()).unwrap();
        let conv = &mut doc.conversations[0];
        conv.messages[2].content = Content::Text("[1 line]".into());
        if let Content::Parts(parts) = &mut conv.messages[1].content {
            parts.clear();
        }
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[2]["message"]["content"],
            serde_json::json!([{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"npm test"}}])
        );
        assert_eq!(lines[3]["message"]["content"], "[1 line]");
        assert_eq!(lines[3]["message"]["isError"], true);
        assert_eq!(lines[4]["type"], "model_change");
    }

    /// A version 3 session: a tree of entries, a rewind to the first turn.
    const TREE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-05-20T01:00:00.000Z","cwd":"/tmp/project"}"#,
        "\n",
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"t","message":{"role":"user","content":"first question"}}"#,
        "\n",
        r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}]}}"#,
        "\n",
        r#"{"type":"message","id":"u2","parentId":"a1","timestamp":"t","message":{"role":"user","content":"abandoned follow-up"}}"#,
        "\n",
        r#"{"type":"message","id":"u3","parentId":"a1","timestamp":"t","message":{"role":"user","content":"the follow-up kept"}}"#,
        "\n",
        r#"{"type":"message","id":"a3","parentId":"u3","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}]}}"#,
        "\n",
    );

    #[test]
    fn a_tree_session_is_its_last_branch_and_removals_relink() {
        let doc = read_document("s.jsonl", TREE.into(), &Default::default()).unwrap();
        let texts: Vec<String> = doc.conversations[0]
            .messages
            .iter()
            .map(|m| m.content.text())
            .collect();
        assert_eq!(
            texts,
            [
                "first question",
                "first answer",
                "the follow-up kept",
                "second answer"
            ]
        );
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), TREE);
        // Removing the first answer hangs the kept follow-up on the question.
        let mut doc = doc;
        doc.conversations[0].messages.remove(1);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[3]["parentId"], "u1", "{text}");
        let back = read_document("s.jsonl", text.into_bytes(), &Default::default()).unwrap();
        assert_eq!(back.conversations[0].messages.len(), 3);
    }
}
