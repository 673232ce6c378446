//! Amazon Q Developer CLI conversations (Kiro CLI's ancestor): the JSON a
//! `/save` writes, and each value of the `conversations` table of its
//! database (`amazon-q/data.sqlite3`), one per working directory. Read as
//! the CLI's `ConversationState` (`crates/chat-cli/src/cli/chat/
//! conversation.rs` and `message.rs` of aws/amazon-q-developer-cli):
//! `{conversation_id, next_message, history, valid_history_range,
//! transcript, tools, context_manager, latest_summary, model_info, …}`.
//!
//! Each history entry is `{user, assistant, request_metadata}`:
//! - `user.content` is externally tagged: `{"Prompt": {prompt}}`,
//!   `{"ToolUseResults": {tool_use_results}}` or `{"CancelledToolUses":
//!   {prompt, tool_use_results}}`, each result `{tool_use_id, content:
//!   [{"Text": …} | {"Json": …}], status}`; `additional_context` (hooks'
//!   output) is sent before the prompt;
//! - `assistant` is `{"Response": {message_id, content}}` or `{"ToolUse":
//!   {message_id, content, tool_uses}}`, each use `{id, name, orig_name,
//!   args, orig_args}` (the model sees `name` and `args`).
//!
//! What the next call carries: the entries in `valid_history_range`, after
//! the last `/compact`'s summary (`latest_summary`), which the CLI sends
//! first in a context message. Entries outside the range are kept as they
//! are and said in a note; so are images, a pending `next_message` and the
//! human-readable `transcript`, which is not sent.
//!
//! Versions before 1.13 (July 2025) saved each entry as a `[user,
//! assistant]` pair: such a file is refused with that reason (the
//! database's store puts pairs together as entries; see the CLI's
//! `stores`).

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, with_arguments};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, Role, ToolCall,
};

/// Amazon Q Developer CLI conversations.
pub(crate) struct AmazonQ;

/// The mark on a message that says which piece of its entry it is.
const FROM: &str = "amazon_q_from";

/// The CLI's context message around a summary (`context_messages`).
const SUMMARY_HEAD: &str = "--- CONTEXT ENTRY BEGIN ---\nThis summary contains ALL relevant information from our previous conversation including tool uses, results, code analysis, and file operations. YOU MUST reference this information when answering questions and explicitly acknowledge specific details from the summary when they're relevant to the current question.\n\nSUMMARY CONTENT:\n";
const SUMMARY_TAIL: &str = "\n--- CONTEXT ENTRY END ---\n\n";

/// Whether an object is an Amazon Q `ConversationState` (either shape of
/// its history).
pub(crate) fn is_state(obj: &Map<String, Value>) -> bool {
    obj.get("conversation_id").is_some_and(Value::is_string)
        && obj.get("history").is_some_and(Value::is_array)
        && obj.get("valid_history_range").is_some_and(Value::is_array)
        && obj.contains_key("transcript")
}

/// Whether the history is the old list of `[user, assistant]` pairs.
fn pairs(obj: &Map<String, Value>) -> bool {
    obj.get("history")
        .and_then(Value::as_array)
        .is_some_and(|h| h.iter().any(Value::is_array))
}

/// The one key of an externally tagged value, and what it holds.
fn tagged(v: Option<&Value>) -> Option<(&str, &Map<String, Value>)> {
    let o = v?.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, inner) = o.iter().next()?;
    Some((k.as_str(), inner.as_object()?))
}

fn marked(m: &Message) -> Option<(&str, usize)> {
    let a = m.fields.get(FROM)?.as_array()?;
    Some((a.first()?.as_str()?, a.get(1)?.as_u64()? as usize))
}

/// A message carrying only its mark in its fields.
fn derived(role: Role, content: Content, what: &str, k: usize) -> Message {
    let mut fields = Map::new();
    fields.insert(FROM.into(), serde_json::json!([what, k]));
    Message::from(MessageData {
        content,
        fields: fields.into(),
        ..MessageData::new(role, "")
    })
}

/// A result's text: its `Text` blocks as they are, its `Json` ones as
/// JSON, one per line.
fn result_text(r: &Value) -> String {
    let blocks = r.get("content").and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .map(|b| match (b.get("Text"), b.get("Json")) {
            (Some(Value::String(t)), _) => t.clone(),
            (_, Some(j)) => serde_json::to_string(j).unwrap_or_default(),
            _ => serde_json::to_string(b).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The results a user's turn carries, then its text (hooks' context and
/// the prompt, each a part whose `slot` says which).
fn read_user(user: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
    let Some((kind, inner)) = tagged(user.get("content")) else {
        return Err("an Amazon Q user message whose content is not one tagged value".into());
    };
    let mut out = Vec::new();
    let results = inner.get("tool_use_results").and_then(Value::as_array);
    for (k, r) in results.into_iter().flatten().enumerate() {
        let mut m = derived(Role::Tool, Content::Text(result_text(r)), "result", k);
        m.tool_call_id = r
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push(m);
    }
    let prompt = match kind {
        "Prompt" | "CancelledToolUses" => inner.get("prompt").and_then(Value::as_str),
        "ToolUseResults" => None,
        other => {
            return Err(format!(
                "an Amazon Q user message of unknown kind \"{other}\""
            ))
        }
    };
    let context = user
        .get("additional_context")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut parts = Vec::new();
    if !context.is_empty() {
        parts.push(Part {
            slot: Some(0),
            ..Part::text_part(format!("{context}\n"))
        });
    }
    if let Some(p) = prompt.filter(|p| !p.is_empty()) {
        parts.push(Part {
            slot: Some(1),
            ..Part::text_part(p.to_string())
        });
    }
    if !parts.is_empty() {
        out.push(derived(Role::User, Content::Parts(parts), "user", 0));
    }
    Ok(out)
}

/// The assistant's turn: its text and its tool uses; none for a turn of
/// neither (what an entry whose turn was removed keeps).
fn read_assistant(assistant: Option<&Value>) -> Result<Option<Message>, Fault> {
    let Some((kind, inner)) = tagged(assistant) else {
        return Err("an Amazon Q assistant message that is not one tagged value".into());
    };
    if kind != "Response" && kind != "ToolUse" {
        return Err(format!(
            "an Amazon Q assistant message of unknown kind \"{kind}\""
        ));
    }
    let text = inner.get("content").and_then(Value::as_str).unwrap_or("");
    let calls: Vec<ToolCall> = inner
        .get("tool_uses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|u| ToolCall {
            id: u.get("id").and_then(Value::as_str).map(str::to_string),
            name: u.get("name").and_then(Value::as_str).unwrap_or("").into(),
            arguments: u.get("args").map(arguments_text).unwrap_or_default(),
            raw: u.clone().into(),
            slot: None,
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return Ok(None);
    }
    let content = if text.is_empty() {
        Content::Absent
    } else {
        Content::Text(text.to_string())
    };
    let mut m = derived(Role::Assistant, content, "assistant", 0);
    m.tool_calls = (!calls.is_empty()).then_some(calls);
    Ok(Some(m))
}

/// A user's turn written back: its results (a removed one leaves the list,
/// a changed one is one `Text` block), its context and its prompt.
fn write_user(user: &mut Map<String, Value>, msgs: &[&Message]) {
    let Some((kind, inner)) = tagged(user.get("content")) else {
        return;
    };
    let (kind, mut inner) = (kind.to_string(), inner.clone());
    if let Some(Value::Array(results)) = inner.get("tool_use_results").cloned() {
        let mut kept = Vec::new();
        for (k, r) in results.into_iter().enumerate() {
            let Some(m) = msgs.iter().find(|m| marked(m) == Some(("result", k))) else {
                continue;
            };
            let text = m.content.text();
            let mut r = r;
            if text != result_text(&r) {
                if let Some(o) = r.as_object_mut() {
                    o.insert("content".into(), serde_json::json!([{ "Text": text }]));
                }
            }
            kept.push(r);
        }
        set_if_changed(&mut inner, "tool_use_results", Value::Array(kept));
    }
    let turn = msgs.iter().find(|m| marked(m) == Some(("user", 0)));
    let piece = |slot: usize| {
        turn.and_then(|t| t.content.parts().iter().find(|p| p.slot == Some(slot)))
            .map(|p| p.text().unwrap_or("").to_string())
    };
    let context = piece(0).map(|c| c.strip_suffix('\n').map(str::to_string).unwrap_or(c));
    set_if_changed(
        user,
        "additional_context",
        Value::from(context.unwrap_or_default()),
    );
    if kind != "ToolUseResults" {
        let prompt = piece(1).unwrap_or_default();
        if inner.get("prompt").is_some_and(|p| !p.is_null()) || !prompt.is_empty() {
            set_if_changed(&mut inner, "prompt", Value::from(prompt));
        }
    }
    let mut content = Map::new();
    content.insert(kind, Value::Object(inner));
    set_if_changed(user, "content", Value::Object(content));
}

/// The assistant's turn written back: its text, and the uses left (a
/// turn whose uses are all removed is a `Response`).
fn write_assistant(out: &mut Map<String, Value>, msgs: &[&Message]) {
    let Some((_, inner)) = tagged(out.get("assistant")) else {
        return;
    };
    let mut inner = inner.clone();
    let turn = msgs.iter().find(|m| marked(m) == Some(("assistant", 0)));
    let text = turn.map(|t| t.content.text()).unwrap_or_default();
    set_if_changed(&mut inner, "content", Value::from(text));
    let uses: Vec<Value> = turn
        .map(|t| t.calls())
        .unwrap_or_default()
        .iter()
        .map(|c| with_arguments(&c.raw, "args", &c.arguments, true))
        .collect();
    let kind = if uses.is_empty() {
        inner.shift_remove("tool_uses");
        "Response"
    } else {
        set_if_changed(&mut inner, "tool_uses", Value::Array(uses));
        "ToolUse"
    };
    let mut assistant = Map::new();
    assistant.insert(kind.into(), Value::Object(inner));
    set_if_changed(out, "assistant", Value::Object(assistant));
}

/// A new history entry of a user's text and the assistant's answer.
fn entry(prompt: &str, answer: &str) -> Value {
    serde_json::json!({
        "user": {
            "additional_context": "",
            "env_context": {"env_state": null},
            "content": {"Prompt": {"prompt": prompt}},
            "timestamp": null,
            "images": null
        },
        "assistant": {"Response": {"message_id": null, "content": answer}},
        "request_metadata": null
    })
}

/// The range of history the next call sends, `(start, end)`, within `len`.
fn range(env: &Map<String, Value>, len: usize) -> (usize, usize) {
    let r = env.get("valid_history_range").and_then(Value::as_array);
    let at = |k: usize| {
        r.and_then(|r| r.get(k))
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    };
    let end = at(1).unwrap_or(len).min(len);
    (at(0).unwrap_or(0).min(end), end)
}

impl Dialect for AmazonQ {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        match (is_state(obj), pairs(obj)) {
            (false, _) => None,
            // The whole object is the envelope, which refuses it.
            (true, true) => Some(&[]),
            (true, false) => Some(&["history"]),
        }
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        if pairs(env) {
            return Err("an Amazon Q conversation saved before version 1.13 keeps its history as [user, assistant] pairs; ctxclean reads the later shape, {user, assistant} entries (give it the CLI's database instead, whose pairs it puts together)".into());
        }
        let summary = env
            .get("latest_summary")
            .and_then(Value::as_array)
            .and_then(|s| s.first())
            .and_then(Value::as_str);
        Ok(summary
            .map(|s| {
                let text = format!("{SUMMARY_HEAD}{s}{SUMMARY_TAIL}");
                derived(Role::User, Content::Text(text), "summary", 0)
            })
            .into_iter()
            .collect())
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        let Some(Value::Array(summary)) = env.get("latest_summary").cloned() else {
            return;
        };
        let text = msgs
            .iter()
            .find(|m| marked(m) == Some(("summary", 0)))
            .map(|m| m.content.text());
        let Some(text) = text else {
            set_if_changed(env, "latest_summary", Value::Null);
            return;
        };
        let inner = text
            .strip_prefix(SUMMARY_HEAD)
            .and_then(|t| t.strip_suffix(SUMMARY_TAIL))
            .unwrap_or(&text);
        let mut summary = summary;
        if let Some(first) = summary.first_mut() {
            *first = Value::from(inner);
        }
        set_if_changed(env, "latest_summary", Value::Array(summary));
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let Some(user) = rec.get("user").and_then(Value::as_object) else {
            return Err("an Amazon Q history entry without its user message".into());
        };
        let mut out = read_user(user)?;
        out.extend(read_assistant(rec.get("assistant"))?);
        Ok(out)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        let mut user = rec.get("user")?.as_object()?.clone();
        write_user(&mut user, msgs);
        set_if_changed(&mut out, "user", Value::Object(user));
        write_assistant(&mut out, msgs);
        Some(out)
    }

    /// New messages become entries of their own: a user's (or a system's,
    /// such as a summary) text, and the assistant's answer after it (empty
    /// when none follows, which reads as no message). A call or a result
    /// is a loss, said.
    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut open: Option<String> = None;
        for m in msgs.iter() {
            if m.has_calls() || m.role.is_result() {
                losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "an Amazon Q conversation takes new text messages only",
                ));
                continue;
            }
            let text = m.content.text();
            if m.role == Role::Assistant {
                let prompt = open.take().unwrap_or_default();
                out.push(entry(&prompt, &text));
            } else {
                if let Some(p) = open.take() {
                    out.push(entry(&p, ""));
                }
                open = Some(text);
            }
        }
        if let Some(p) = open {
            out.push(entry(&p, ""));
        }
        out
    }

    /// Only the entries the next call sends, and notes on what is kept
    /// unread.
    fn after_read(&self, conv: &mut Conversation) {
        let Some(env) = conv.envelope.as_ref() else {
            return;
        };
        let (start, end) = range(env, conv.records.len());
        let mut notes = Vec::new();
        if start > 0 || end < conv.records.len() {
            notes.push(format!(
                "history entries outside valid_history_range [{start}, {end}) are not sent: kept as they are, not read"
            ));
        }
        if env.get("next_message").is_some_and(|v| !v.is_null()) {
            notes.push("next_message (a turn not yet sent) is kept as it is, not read".into());
        }
        let images = conv
            .records
            .iter()
            .filter_map(|r| r.value.as_ref())
            .filter(|v| {
                v.get("user")
                    .and_then(|u| u.get("images"))
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty())
            })
            .count();
        if images > 0 {
            notes.push(format!(
                "{images} history entries carry images: kept as they are, not counted"
            ));
        }
        conv.messages.retain(|m| {
            let r = m.origin.as_ref().and_then(|o| o.record);
            r.is_none_or(|r| (start..end).contains(&r))
        });
        conv.notes.extend(notes);
    }

    /// `valid_history_range` follows the entries: those before it, and
    /// those in it, that are left.
    fn finish(
        &self,
        env: Option<&mut Map<String, Value>>,
        original: &[crate::transcript::Record],
        out: &mut [OutRecord],
    ) {
        let Some(env) = env else {
            return;
        };
        let (start, end) = range(env, original.len());
        let present = |r: &&OutRecord| r.object().is_some() || r.text.is_some();
        let before = out
            .iter()
            .filter(present)
            .filter(|r| r.from.is_some_and(|f| f < start))
            .count();
        let upto = out
            .iter()
            .filter(present)
            .filter(|r| r.from.is_none_or(|f| f < end))
            .count();
        let Some(Value::Array(old)) = env.get("valid_history_range") else {
            return;
        };
        if old.len() == 2 {
            set_if_changed(
                env,
                "valid_history_range",
                serde_json::json!([before, upto]),
            );
        }
    }

    fn extra_keys(&self, _m: &Message) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_its_blocks() {
        let r = serde_json::json!({"tool_use_id": "t", "content": [{"Text": "a"}, {"Json": {"k": 1}}], "status": "Success"});
        assert_eq!(result_text(&r), "a\n{\"k\":1}");
        let env = serde_json::json!({"valid_history_range": [2, 9]});
        assert_eq!(range(env.as_object().unwrap(), 5), (2, 5));
        let env = serde_json::json!({"valid_history_range": [7, 9]});
        assert_eq!(range(env.as_object().unwrap(), 5), (5, 5));
    }
}
