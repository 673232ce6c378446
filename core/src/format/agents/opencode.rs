//! OpenCode sessions, as `opencode export <session>` writes them:
//! `{"info": {…session…}, "messages": [{"info": {role, id, modelID, tokens,
//! cost, …}, "parts": [...]}]}`.
//!
//! A message's parts are its content: `text`, `reasoning` (thinking),
//! `file` (an attachment) and `tool` parts (`{callID, tool, state: {status,
//! input, output}}`: the call and, once it ran, its result in one part).
//! `step-start`/`step-finish` parts bound each model call within an
//! assistant message, so an assistant message of several steps reads as
//! several turns, each followed by the results of its calls. Every other
//! part (`patch`, `snapshot`, `agent`, `compaction`, …) stays where it is.
//!
//! After a compaction (a user message with a `compaction` part, answered by
//! an assistant message with `summary` set), the next call carries that
//! user message, the summary and what follows: earlier messages stay in the
//! file as they are and are not read.

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// OpenCode session exports.
pub(crate) struct OpenCode;

/// Whether a record is an OpenCode message (`{info: {role}, parts}`).
pub(crate) fn is_message(r: &Map<String, Value>) -> bool {
    r.get("parts").is_some_and(Value::is_array)
        && r.get("info")
            .and_then(|i| i.get("role"))
            .is_some_and(Value::is_string)
}

fn ty(p: &Value) -> Option<&str> {
    p.get("type").and_then(Value::as_str)
}

fn info(rec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    rec.get("info")?.as_object()
}

/// A part that is content: text, reasoning, an attachment.
fn content_part(p: &Value, k: usize) -> Option<Part> {
    let kind = match ty(p)? {
        "text" => PartKind::Text(p.get("text")?.as_str()?.to_string()),
        "reasoning" | "file" => PartKind::Other,
        _ => return None,
    };
    Some(Part {
        kind,
        raw: p.clone().into(),
        slot: Some(k),
    })
}

/// A tool part's call.
fn call(p: &Value, k: usize) -> ToolCall {
    let state = p.get("state");
    ToolCall {
        id: p.get("callID").and_then(Value::as_str).map(str::to_string),
        name: p
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .to_string(),
        arguments: arguments_text(state.and_then(|s| s.get("input")).unwrap_or(&Value::Null)),
        raw: p.clone().into(),
        slot: Some(k),
    }
}

/// A tool part's result, once the tool ran (`completed` or `error`).
fn result(p: &Value) -> Option<Message> {
    let state = p.get("state")?;
    let text = match state.get("status").and_then(Value::as_str) {
        Some("completed") => state.get("output")?.as_str()?,
        Some("error") => state.get("error")?.as_str()?,
        _ => return None,
    };
    Some(Message::from(MessageData {
        tool_call_id: p.get("callID").and_then(Value::as_str).map(str::to_string),
        name: p.get("tool").and_then(Value::as_str).map(str::to_string),
        ..MessageData::new(Role::Tool, text)
    }))
}

/// One model call of an assistant message: its content, its calls and
/// their results.
#[derive(Default)]
struct Step {
    parts: Vec<Part>,
    calls: Vec<ToolCall>,
    results: Vec<Message>,
}

impl Step {
    fn flush(&mut self, fields: &Fields, out: &mut Vec<Message>) {
        if self.parts.is_empty() && self.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        out.push(Message::from(MessageData {
            content: Content::Parts(std::mem::take(&mut self.parts)),
            tool_calls: (!calls.is_empty()).then_some(calls),
            fields: fields.clone(),
            ..MessageData::new(Role::Assistant, "")
        }));
        out.append(&mut self.results);
    }
}

fn read_assistant(parts: &[Value], fields: &Fields) -> Vec<Message> {
    let mut out = Vec::new();
    let mut step = Step::default();
    for (k, p) in parts.iter().enumerate() {
        match ty(p) {
            Some("step-start") => step.flush(fields, &mut out),
            Some("tool") => {
                step.calls.push(call(p, k));
                step.results.extend(result(p));
            }
            _ => step.parts.extend(content_part(p, k)),
        }
    }
    step.flush(fields, &mut out);
    out
}

impl Dialect for OpenCode {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let messages = obj.get("messages")?.as_array()?;
        let session = obj.get("info").is_some_and(Value::is_object);
        let shaped = messages
            .first()
            .and_then(Value::as_object)
            .is_none_or(is_message);
        (session && shaped).then_some(&["messages"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let Some(info) = info(rec) else {
            return Err("an OpenCode message has an \"info\" object".into());
        };
        let Some(Value::Array(parts)) = rec.get("parts") else {
            return Err("an OpenCode message has a \"parts\" list".into());
        };
        let fields = Fields::from(info.clone());
        match info.get("role").and_then(Value::as_str) {
            Some("assistant") => Ok(read_assistant(parts, &fields)),
            Some("user") => {
                let content: Vec<Part> = parts
                    .iter()
                    .enumerate()
                    .filter_map(|(k, p)| content_part(p, k))
                    .collect();
                if content.is_empty() && parts.iter().any(|p| ty(p) == Some("compaction")) {
                    // A compaction request: the boundary itself, kept in
                    // place as a marker, never removed (see `after_read`).
                    return Ok(Vec::new());
                }
                Ok(vec![Message::from(MessageData {
                    content: Content::Parts(content),
                    fields,
                    ..MessageData::new(Role::User, "")
                })])
            }
            Some(r) => Err(format!(
                "unknown role \"{r}\" (OpenCode messages are user or assistant)"
            )),
            None => Err("an OpenCode message's info has no \"role\"".into()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let parts = rec.get("parts")?.as_array()?;
        // The value each part a message holds goes back as; `None`: removed.
        let mut kept: Vec<Option<Value>> = vec![None; parts.len()];
        // Which result each tool part writes back (a step of a long turn
        // can hold thousands: found by id, not by a scan).
        let tools = parts.iter().filter(|p| ty(p) == Some("tool"));
        let read = (
            tools.clone().count(),
            tools.filter(|p| result(p).is_some()).count(),
        );
        let answers =
            crate::format::dialect::embedded_answers(msgs, read, |c| result(&c.raw).is_some());
        for (i, m) in msgs.iter().enumerate() {
            if m.role.is_result() {
                continue; // written into its call's part
            }
            for p in m.content.parts() {
                if let Some(k) = p.slot.filter(|&k| k < parts.len()) {
                    kept[k] = Some(p.to_value());
                }
            }
            for (c, call) in m.calls().iter().enumerate() {
                let Some(k) = call.slot.filter(|&k| k < parts.len()) else {
                    continue;
                };
                let mut part = parts[k].clone();
                if let Some(Value::Object(state)) = part.get_mut("state") {
                    if state.get("input").map(arguments_text).as_deref() != Some(&call.arguments) {
                        state.insert("input".into(), arguments_value(&call.arguments));
                    }
                }
                match answers[i][c] {
                    Some(a) => set_output(&mut part, &msgs[a].content.text()),
                    // The conversation holds no result for it (of two calls
                    // of one id, the other took the one kept): a call still
                    // running, as OpenCode keeps one, so that it reads back
                    // without one.
                    None if result(&part).is_some() => unset_output(&mut part),
                    None => {}
                }
                kept[k] = Some(part);
            }
        }
        let mut out = rec.clone();
        let list = parts
            .iter()
            .zip(kept)
            .filter_map(|(p, k)| match ty(p) {
                Some("text" | "reasoning" | "file" | "tool") => k,
                _ => Some(p.clone()),
            })
            .collect();
        set_if_changed(&mut out, "parts", Value::Array(list));
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        crate::format::dialect::text_records(msgs, losses, "an OpenCode session", |role, text| {
            let role = crate::format::dialect::user_or_assistant_word(role);
            serde_json::json!({"info": {"role": role}, "parts": [{"type": "text", "text": text}]})
        })
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        crate::format::dialect::active_from(boundary(records), records.len())
    }

    fn after_read(&self, conv: &mut Conversation) {
        if let Some(b) = crate::format::dialect::start_past_first(conv, boundary) {
            conv.notes.push(format!(
                "{} precede the last compaction (message {b}): the next call carries its summary and what follows, so they are kept in the file as they are and not read; the compaction request itself (which OpenCode sends as \"What did we do so far?\") is kept as a marker",
                crate::numbers::plural(b, "message"),
            ));
        }
        let cleared = conv
            .records
            .iter()
            .filter(|r| r.messages > 0)
            .filter_map(|r| r.value.as_deref())
            .flat_map(|v| {
                v.get("parts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter(|p| {
                p.get("state")
                    .and_then(|s| s.get("time"))
                    .is_some_and(|t| t.get("compacted").is_some())
            })
            .count();
        if cleared > 0 {
            conv.notes.push(format!(
                "{cleared} tool {} marked compacted: OpenCode sends a placeholder in their place, ctxclean counts them as stored",
                if cleared == 1 { "output is" } else { "outputs are" },
            ));
        }
    }
}

/// A tool part's result taken out: its state back to `running`.
fn unset_output(part: &mut Value) {
    if let Some(Value::Object(state)) = part.get_mut("state") {
        state.insert("status".into(), Value::from("running"));
        state.shift_remove("output");
        state.shift_remove("error");
    }
}

/// A tool part's output set to `text`.
fn set_output(part: &mut Value, text: &str) {
    let Some(Value::Object(state)) = part.get_mut("state") else {
        return;
    };
    let key = match state.get("status").and_then(Value::as_str) {
        Some("error") => "error",
        Some("completed") => "output",
        // A result the conversation pairs with a call read while it ran (of
        // two calls of one id, the first stripped): the call completed.
        _ => {
            state.insert("status".into(), Value::from("completed"));
            "output"
        }
    };
    if state.get(key).and_then(Value::as_str) != Some(text) {
        state.insert(key.into(), Value::from(text));
    }
}

/// The record the next call starts from: the last user message with a
/// `compaction` part that an assistant `summary` answered (its
/// `parentID`), or that other messages followed (its summary removed
/// since); one still being summarized is no boundary yet.
fn boundary(records: &[Option<&Map<String, Value>>]) -> Option<usize> {
    let role = |r: &Option<&Map<String, Value>>| {
        r.and_then(info)
            .and_then(|i| i.get("role"))
            .and_then(Value::as_str)
            .is_some()
    };
    let answered: Vec<&str> = records
        .iter()
        .flatten()
        .filter_map(|r| info(r))
        .filter(|i| {
            i.get("role").and_then(Value::as_str) == Some("assistant")
                && i.get("summary").is_some_and(|s| s.as_bool() == Some(true))
        })
        .filter_map(|i| i.get("parentID")?.as_str())
        .collect();
    (0..records.len()).rev().find(|&k| {
        records[k].is_some_and(|r| {
            let compaction = r
                .get("parts")
                .and_then(Value::as_array)
                .is_some_and(|ps| ps.iter().any(|p| ty(p) == Some("compaction")));
            let id = info(r).and_then(|i| i.get("id")).and_then(Value::as_str);
            let went_on = records[k + 1..].iter().any(|r| {
                role(r)
                    && !r
                        .and_then(info)
                        .is_some_and(|i| i.get("summary") == Some(&Value::Bool(true)))
            });
            compaction && (id.is_some_and(|id| answered.contains(&id)) || went_on)
        })
    })
}
