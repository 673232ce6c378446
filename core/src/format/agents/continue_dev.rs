//! Continue sessions (`~/.continue/sessions/<id>.json`): `{sessionId, title,
//! workspaceDirectory, history, …}`, each history item `{message,
//! contextItems, toolCallStates?, conversationSummary?, …}`.
//!
//! The conversation is what Continue sends (its GUI's `constructMessages`),
//! not the stored messages as they stand:
//! - a user's turn is its context items (`content` of each, a text part
//!   apiece) then its own content;
//! - an assistant's turn carries its `toolCalls`, and each of its
//!   `toolCallStates` is the call's result: the output's context items'
//!   `content` joined by blank lines, or Continue's words for a call with no
//!   output, cancelled or failed. Stored `role: tool` messages are not sent
//!   when a state answers the call, and are read only when none does;
//! - `system` messages are not sent; `thinking` ones are, as a thinking
//!   block;
//! - past the last item with a `conversationSummary`, only the items after
//!   it are sent, the summary first (Continue puts it in its system
//!   message).
//!
//! Everything is written back where it came from: a context item's text
//! into its `content`, a result into its state's output, the summary into
//! `conversationSummary`; a removed context item or state leaves its list.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, with_arguments};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::format::openai::{content_value, parse_content};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// Continue sessions.
pub(crate) struct Continue;

/// The mark on a message or part that says where in its item it came from.
const FROM: &str = "continue_from";

/// What Continue sends for a call whose state has no output.
const NO_OUTPUT: &str = "No tool output";
/// … for a call the user cancelled.
const CANCELLED: &str = "The user cancelled this tool call.";

/// Whether an object is a Continue session.
pub(crate) fn is_session(obj: &Map<String, Value>) -> bool {
    obj.contains_key("sessionId")
        && obj.contains_key("workspaceDirectory")
        && obj
            .get("history")
            .and_then(Value::as_array)
            .is_some_and(|h| {
                h.iter().all(|item| {
                    item.get("message")
                        .and_then(|m| m.get("role"))
                        .is_some_and(Value::is_string)
                })
            })
}

/// The ids of a session's calls, and of the calls its states answer.
#[derive(Default)]
struct Ids {
    calls: HashSet<String>,
    states: HashSet<String>,
}

impl Ids {
    /// An item's calls and the calls its states answer.
    fn add(&mut self, item: &Map<String, Value>) {
        let ids = |v: Option<&Value>, key: &str| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| Some(c.get(key)?.as_str()?.to_string()))
                .collect()
        };
        let calls = item.get("message").and_then(|m| m.get("toolCalls"));
        self.calls.extend(ids(calls, "id"));
        self.states
            .extend(ids(item.get("toolCallStates"), "toolCallId"));
    }
}

/// A mark: `{continue_from: [what, k]}`.
fn mark(what: &str, k: usize) -> Value {
    serde_json::json!([what, k])
}

/// Where a message or part came from, read from its mark.
fn marked(v: Option<&Value>) -> Option<(&str, usize)> {
    let a = v?.as_array()?;
    Some((a.first()?.as_str()?, a.get(1)?.as_u64()? as usize))
}

fn marked_message(m: &Message) -> Option<(&str, usize)> {
    marked(m.fields.get(FROM))
}

/// The context item a user's part is (its place in `contextItems`).
fn context_item(p: &Part) -> Option<usize> {
    p.slot
}

/// A message carrying only its mark in its fields.
fn derived(role: Role, content: Content, what: &str, k: usize) -> Message {
    let mut fields = Map::new();
    fields.insert(FROM.into(), mark(what, k));
    Message::from(MessageData {
        content,
        fields: fields.into(),
        ..MessageData::new(role, "")
    })
}

/// A user's turn: its context items, then its content.
fn read_user(item: &Fields, msg: &Map<String, Value>) -> Result<Message, Fault> {
    let mut parts = Vec::new();
    let items = item.get("contextItems").and_then(Value::as_array);
    for (k, ctx) in items.into_iter().flatten().enumerate() {
        let text = ctx.get("content").and_then(Value::as_str).unwrap_or("");
        if text.trim().is_empty() {
            continue;
        }
        // A context item's part holds its place in `slot`; the message's
        // own parts have none.
        parts.push(Part {
            slot: Some(k),
            ..Part::text_part(format!("{text}\n"))
        });
    }
    match parse_content(msg.get("content").unwrap_or(&Value::Null))? {
        Content::Parts(own) => parts.extend(own.into_iter().map(|p| Part { slot: None, ..p })),
        Content::Text(t) => parts.push(Part::text_part(t)),
        Content::Absent | Content::Null => {}
    }
    let mut fields = Map::new();
    fields.insert(FROM.into(), mark("message", 0));
    Ok(Message::from(MessageData {
        content: Content::Parts(parts),
        fields: fields.into(),
        ..MessageData::new(Role::User, "")
    }))
}

/// A call of `toolCalls` (`{id, type, function: {name, arguments}}`).
fn read_call(c: &Value) -> ToolCall {
    let f = c.get("function");
    ToolCall {
        id: c.get("id").and_then(Value::as_str).map(str::to_string),
        name: f
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        arguments: f
            .and_then(|f| f.get("arguments"))
            .map(arguments_text)
            .unwrap_or_default(),
        raw: c.clone().into(),
        slot: None,
    }
}

/// What Continue sends as a state's result.
fn state_output(state: &Value) -> String {
    let status = state.get("status").and_then(Value::as_str);
    if status == Some("canceled") {
        return CANCELLED.to_string();
    }
    let items = state.get("output").and_then(Value::as_array);
    match items {
        Some(items) if !items.is_empty() => items
            .iter()
            .map(|i| i.get("content").and_then(Value::as_str).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => NO_OUTPUT.to_string(),
    }
}

/// An assistant's turn, and a result for each of its call states.
fn read_assistant(item: &Fields, msg: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
    let content = match msg.get("content") {
        None => Content::Absent,
        Some(v) => parse_content(v)?,
    };
    let calls: Vec<ToolCall> = msg
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().map(read_call).collect())
        .unwrap_or_default();
    let mut turn = derived(Role::Assistant, content, "message", 0);
    turn.tool_calls = (!calls.is_empty()).then_some(calls);
    let mut out = vec![turn];
    let states = item.get("toolCallStates").and_then(Value::as_array);
    for (k, state) in states.into_iter().flatten().enumerate() {
        let mut result = derived(Role::Tool, Content::Text(state_output(state)), "state", k);
        result.tool_call_id = state
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string);
        result.name = state
            .get("toolCall")
            .and_then(|c| c.get("function"))
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string);
        out.push(result);
    }
    Ok(out)
}

/// The messages one history item sends.
fn read_item(item: &Fields) -> Result<Vec<Message>, Fault> {
    let Some(msg) = item.get("message").and_then(Value::as_object) else {
        return Err("a Continue history item without its message".into());
    };
    let mut out = match msg.get("role").and_then(Value::as_str) {
        Some("user") => vec![read_user(item, msg)?],
        Some("assistant") => read_assistant(item, msg)?,
        Some("thinking") => {
            let mut block = Map::new();
            block.insert("type".into(), Value::from("thinking"));
            let text = msg.get("content").map(arguments_text).unwrap_or_default();
            block.insert("thinking".into(), Value::from(text));
            if let Some(sig) = msg.get("signature").and_then(Value::as_str) {
                block.insert("signature".into(), Value::from(sig));
            }
            let part = Part {
                kind: PartKind::Other,
                raw: Value::Object(block).into(),
                slot: None,
            };
            vec![derived(
                Role::Assistant,
                Content::Parts(vec![part]),
                "thinking",
                0,
            )]
        }
        Some("tool") => {
            let mut m = derived(
                Role::Tool,
                Content::Text(msg.get("content").map(arguments_text).unwrap_or_default()),
                "message",
                0,
            );
            m.tool_call_id = msg
                .get("toolCallId")
                .and_then(Value::as_str)
                .map(str::to_string);
            vec![m]
        }
        Some("system") => Vec::new(),
        Some(r) => return Err(format!("unknown role \"{r}\" in a Continue message")),
        None => return Err("a Continue message without its role".into()),
    };
    let summary = item.get("conversationSummary").and_then(Value::as_str);
    if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
        out.push(derived(
            Role::System,
            Content::Text(format!("Previous conversation summary:\n\n {summary}")),
            "summary",
            0,
        ));
    }
    Ok(out)
}

/// The summary's text back from what was sent.
fn summary_text(sent: &str) -> &str {
    sent.strip_prefix("Previous conversation summary:\n\n ")
        .unwrap_or(sent)
}

/// A user's message written back: context items' text into them, the rest
/// into the message's content.
fn write_user(out: &mut Map<String, Value>, msg: &mut Map<String, Value>, m: &Message) {
    let mut ctx_kept: Vec<(usize, String)> = Vec::new();
    let mut own: Vec<Part> = Vec::new();
    for p in m.content.parts() {
        match context_item(p) {
            Some(k) => {
                let t = p.text().unwrap_or("");
                ctx_kept.push((k, t.strip_suffix('\n').unwrap_or(t).to_string()));
            }
            _ => own.push(p.clone()),
        }
    }
    if let Some(Value::Array(items)) = out.get("contextItems").cloned() {
        let mut new_items = Vec::new();
        for (k, ctx) in items.into_iter().enumerate() {
            let blank = ctx
                .get("content")
                .and_then(Value::as_str)
                .is_none_or(|t| t.trim().is_empty());
            if blank {
                new_items.push(ctx); // never sent, never removed
                continue;
            }
            let Some((_, text)) = ctx_kept.iter().find(|(j, _)| *j == k) else {
                continue;
            };
            let mut ctx = ctx;
            if let Some(o) = ctx.as_object_mut() {
                set_if_changed(o, "content", Value::from(text.as_str()));
            }
            new_items.push(ctx);
        }
        set_if_changed(out, "contextItems", Value::Array(new_items));
    }
    let own = Content::Parts(own);
    let before = msg.get("content");
    let value = match (before, &own) {
        (Some(Value::String(_)) | None, c) => Value::from(c.text()),
        (Some(b), c) => content_value(c, Some(b)).unwrap_or(Value::from(c.text())),
    };
    set_if_changed(msg, "content", value);
}

/// An assistant's message written back: its content and calls, and each
/// state whose result is left (its output replaced when the result was).
fn write_assistant(out: &mut Map<String, Value>, msg: &mut Map<String, Value>, msgs: &[&Message]) {
    let turn = msgs
        .iter()
        .find(|m| m.role == Role::Assistant && marked_message(m) == Some(("message", 0)));
    if let Some(t) = turn {
        let value = content_value(&t.content, msg.get("content")).unwrap_or(Value::from(""));
        set_if_changed(msg, "content", value);
        if msg.contains_key("toolCalls") || t.has_calls() {
            let calls: Vec<Value> = t
                .calls()
                .iter()
                .map(|c| {
                    let mut v = Value::clone(&c.raw);
                    if let Some(f) = v.get_mut("function") {
                        *f = with_arguments(f, "arguments", &c.arguments, false);
                    }
                    v
                })
                .collect();
            set_if_changed(msg, "toolCalls", Value::Array(calls));
        }
    }
    let Some(Value::Array(states)) = out.get("toolCallStates").cloned() else {
        return;
    };
    let mut kept = Vec::new();
    for (k, state) in states.into_iter().enumerate() {
        let Some(r) = msgs
            .iter()
            .find(|m| m.role == Role::Tool && marked_message(m) == Some(("state", k)))
        else {
            continue;
        };
        let mut state = state;
        let text = r.content.text();
        if text != state_output(&state) {
            if let Some(o) = state.as_object_mut() {
                let mut first = o
                    .get("output")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                first.insert("content".into(), Value::from(text));
                o.insert("output".into(), Value::Array(vec![Value::Object(first)]));
                // Continue sends its own words for a cancelled call, whatever
                // its output: a result changed is sent only from a state
                // that is not.
                if o.get("status").and_then(Value::as_str) == Some("canceled") {
                    o.insert("status".into(), Value::from("done"));
                }
            }
        }
        kept.push(state);
    }
    set_if_changed(out, "toolCallStates", Value::Array(kept));
}

impl Dialect for Continue {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_session(obj).then_some(&["history"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_item(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        let mut msg = rec.get("message")?.as_object()?.clone();
        // The item Continue cuts at sends its summary only: its message,
        // context items and states were never read, and stay as they came.
        let cut_here = rec
            .get("conversationSummary")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        let role = msg
            .get("role")
            .and_then(Value::as_str)
            .filter(|_| !cut_here);
        match role {
            Some("user") => {
                let m = msgs
                    .iter()
                    .find(|m| marked_message(m) == Some(("message", 0)))?;
                write_user(&mut out, &mut msg, m);
            }
            Some("assistant") => write_assistant(&mut out, &mut msg, msgs),
            Some("tool") => {
                if let Some(m) = msgs.iter().find(|m| m.role == Role::Tool) {
                    let value =
                        content_value(&m.content, msg.get("content")).unwrap_or(Value::from(""));
                    set_if_changed(&mut msg, "content", value);
                }
            }
            _ => {}
        }
        if let Some(s) = msgs
            .iter()
            .find(|m| marked_message(m) == Some(("summary", 0)))
        {
            let text = s.content.text();
            set_if_changed(
                &mut out,
                "conversationSummary",
                Value::from(summary_text(&text)),
            );
        }
        set_if_changed(&mut out, "message", Value::Object(msg));
        Some(out)
    }

    /// A new message is a history item of its own, without context items;
    /// one with calls or a result is a loss, said.
    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for m in msgs.iter() {
            if m.has_calls() || m.role.is_result() {
                losses.push(Loss::at(
                    m.input_index(),
                    "new message",
                    "a Continue session takes new text messages only",
                ));
                continue;
            }
            let mut converted = crate::format::convert::to_openai(m, losses);
            // Continue sends no system message from its history: a summary
            // is the user's to read, at the start.
            if converted.role == Role::System {
                converted.role = Role::User;
            }
            let mut message = Map::new();
            message.insert("role".into(), Value::from(converted.role.as_str()));
            message.insert("content".into(), Value::from(converted.content.text()));
            out.push(serde_json::json!({"message": Value::Object(message), "contextItems": []}));
        }
        out
    }

    /// Only what Continue sends: past the last summary, and stored tool
    /// messages only for calls no state answers.
    fn after_read(&self, conv: &mut Conversation) {
        // Continue cuts at the last item with a summary (any text: a blank
        // one, which a removed summary leaves, cuts and says nothing).
        let last_summary = conv.records.iter().rposition(|r| {
            r.value.as_ref().is_some_and(|v| {
                v.get("conversationSummary")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            })
        });
        let answered: HashSet<String> = conv
            .messages
            .iter()
            .filter(|m| marked_message(m).is_some_and(|(w, _)| w == "state"))
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        conv.messages.retain(|m| {
            let record = m.origin.as_ref().and_then(|o| o.record);
            let what = marked_message(m).map(|(w, _)| w);
            if let (Some(s), Some(r)) = (last_summary, record) {
                // Before the summary's item, and that item itself: not sent.
                if r < s || (r == s && what != Some("summary")) {
                    return false;
                }
            }
            if what == Some("summary") && record != last_summary {
                return false;
            }
            let stored_result = m.role == Role::Tool && what == Some("message");
            !(stored_result
                && m.tool_call_id
                    .as_ref()
                    .is_some_and(|id| answered.contains(id)))
        });
    }

    /// The item where Continue cuts stays when its summary is removed: its
    /// summary blank, so that Continue still sends only what follows it.
    fn emptied(&self, rec: &Fields) -> Option<Map<String, Value>> {
        rec.peek(|rec| {
            let summary = rec.get("conversationSummary")?.as_str()?;
            if summary.is_empty() {
                return None;
            }
            let mut out = rec.clone();
            out.insert("conversationSummary".into(), Value::from(" "));
            Some(out)
        })
    }

    /// A stored tool message (never sent while a state answers its call)
    /// whose call is gone leaves with it: read again, it would answer
    /// nothing. So does one whose call's state went (its result removed):
    /// read again, it would be that result, back. One whose call was never
    /// in the session (an orphan as it came) stays as it came.
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[crate::transcript::Record],
        out: &mut [OutRecord],
    ) {
        let mut left = Ids::default();
        out.iter()
            .filter_map(|r| r.object())
            .for_each(|o| left.add(o));
        // Looked at without keeping them parsed.
        let mut came = Ids::default();
        for v in original.iter().filter_map(|r| r.value.as_ref()) {
            v.peek(|o| came.add(o));
        }
        for r in out.iter_mut() {
            let gone = r.object().and_then(|o| o.get("message")).is_some_and(|m| {
                let id = m.get("toolCallId").and_then(Value::as_str);
                m.get("role").and_then(Value::as_str) == Some("tool")
                    && id.is_some_and(|id| {
                        (came.calls.contains(id) && !left.calls.contains(id))
                            || (came.states.contains(id) && !left.states.contains(id))
                    })
            });
            if gone {
                r.remove();
            }
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
    fn a_state_output_is_what_continue_sends() {
        let state =
            serde_json::json!({"status": "done", "output": [{"content": "a"}, {"content": "b"}]});
        assert_eq!(state_output(&state), "a\n\nb");
        assert_eq!(
            state_output(&serde_json::json!({"status": "canceled"})),
            CANCELLED
        );
        assert_eq!(
            state_output(&serde_json::json!({"status": "done"})),
            NO_OUTPUT
        );
        assert_eq!(
            summary_text("Previous conversation summary:\n\n Fixed the parser."),
            "Fixed the parser."
        );
    }
}
