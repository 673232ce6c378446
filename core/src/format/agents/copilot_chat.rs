//! VS Code Copilot Chat sessions (`workspaceStorage/<hash>/chatSessions/
//! <session>.json`, and the Export Chat command's file): `{"version": 3,
//! "requesterUsername", "responderUsername", "requests": [...]}`.
//!
//! Each request is a user turn (`message.text`) and what answered it. In
//! agent mode the model calls are in `result.metadata.toolCallRounds`
//! (`{response, toolCalls: [{name, arguments, id}]}`, one per call of the
//! model) and the results in `result.metadata.toolCallResults` (by call id,
//! `{content: [{value}]}`): each round reads as an assistant turn followed
//! by its results. Without rounds, the answer is the text of `response`'s
//! markdown items. `response` is what the chat view shows; it is kept as it
//! came unless the answer it holds changes.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// VS Code Copilot Chat sessions.
pub(crate) struct CopilotChat;

/// Whether an object is a chat session.
pub(crate) fn is_session(obj: &Map<String, Value>) -> bool {
    obj.get("requests").is_some_and(Value::is_array)
        && (obj.contains_key("requesterUsername") || obj.contains_key("responderUsername"))
}

fn metadata(rec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    rec.get("result")?.get("metadata")?.as_object()
}

fn rounds(rec: &Map<String, Value>) -> &[Value] {
    metadata(rec)
        .and_then(|m| m.get("toolCallRounds"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The text of a result (`{content: [{value}]}`).
fn result_text(v: &Value) -> String {
    v.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("value").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer shown in `response`: its markdown items' text.
fn response_text(rec: &Map<String, Value>) -> Option<String> {
    let items = rec.get("response")?.as_array()?;
    let text: String = items
        .iter()
        .filter(|i| i.get("kind").is_none_or(|k| k == "markdownContent"))
        .filter_map(|i| i.get("value").and_then(Value::as_str))
        .collect();
    (!text.is_empty()).then_some(text)
}

fn read_rounds(rec: &Map<String, Value>, rounds: &[Value]) -> Vec<Message> {
    let results = metadata(rec).and_then(|m| m.get("toolCallResults"));
    let mut out = Vec::new();
    for (i, round) in rounds.iter().enumerate() {
        let text = round.get("response").and_then(Value::as_str).unwrap_or("");
        let calls: Vec<ToolCall> = round
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: c.get("id").and_then(Value::as_str).map(str::to_string),
                name: c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_string(),
                arguments: arguments_text(c.get("arguments").unwrap_or(&Value::Null)),
                raw: c.clone().into(),
                slot: Some(i),
            })
            .collect();
        let answers: Vec<Message> = calls
            .iter()
            .filter_map(|c| {
                let r = results?.get(c.id.as_deref()?)?;
                Some(Message::from(MessageData {
                    tool_call_id: c.id.clone(),
                    name: Some(c.name.clone()),
                    ..MessageData::new(Role::Tool, result_text(r))
                }))
            })
            .collect();
        out.push(Message::from(MessageData {
            content: Content::Parts(vec![Part {
                kind: PartKind::Text(text.to_string()),
                raw: serde_json::json!({"type": "text", "text": text}).into(),
                slot: Some(i),
            }]),
            tool_calls: (!calls.is_empty()).then_some(calls),
            ..MessageData::new(Role::Assistant, "")
        }));
        out.extend(answers);
    }
    out
}

/// A round's calls that are left, each with its arguments as now: a call
/// of the round is the message's call that came as it (the first not taken
/// yet: ids may be given twice, even in one round), else the first not
/// taken of its id (an operation wrote the call anew).
fn paired_calls(calls: &[Value], mine: &[ToolCall]) -> Vec<Value> {
    fn id(c: &Value) -> Option<&str> {
        c.get("id").and_then(Value::as_str)
    }
    // The message's calls by the id each came with, and by its id now, in
    // order: a round's calls are looked for among their id's alone.
    let mut came: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    let mut now: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (j, k) in mine.iter().enumerate() {
        came.entry(id(&k.raw)).or_default().push(j);
        now.entry(k.id.as_deref()).or_default().push(j);
    }
    let mut taken = vec![false; mine.len()];
    let mut take = |among: Option<&Vec<usize>>, fits: &dyn Fn(usize) -> bool| {
        let j = among?.iter().copied().find(|&j| !taken[j] && fits(j))?;
        taken[j] = true;
        Some(j)
    };
    let mut pair: Vec<Option<usize>> = calls
        .iter()
        .map(|c| take(came.get(&id(c)), &|j| *mine[j].raw == *c))
        .collect();
    for (c, p) in calls.iter().zip(pair.iter_mut()) {
        if p.is_none() {
            *p = take(now.get(&id(c)), &|_| true);
        }
    }
    calls
        .iter()
        .zip(pair)
        .filter_map(|(c, p)| {
            let k = &mine[p?];
            let mut c = c.clone();
            if c.get("arguments").map(arguments_text).as_deref() != Some(k.arguments.as_str()) {
                let string = c.get("arguments").is_some_and(Value::is_string);
                c["arguments"] = if string {
                    Value::from(k.arguments.clone())
                } else {
                    arguments_value(&k.arguments)
                };
            }
            Some(c)
        })
        .collect()
}

/// The rounds written back from the assistant turns and results that
/// survive.
fn write_rounds(out: &mut Map<String, Value>, rounds: &[Value], msgs: &[&Message]) {
    let mut kept: Vec<Option<Value>> = vec![None; rounds.len()];
    for m in msgs.iter().filter(|m| m.role == Role::Assistant) {
        let Some(i) = m
            .content
            .parts()
            .first()
            .and_then(|p| p.slot)
            .filter(|&i| i < rounds.len())
        else {
            continue;
        };
        let mut round = rounds[i].clone();
        let text = m.content.text();
        if round.get("response").and_then(Value::as_str) != Some(text.as_str()) {
            round["response"] = Value::from(text);
        }
        if let Some(Value::Array(calls)) = round.get_mut("toolCalls") {
            let left = paired_calls(calls, m.calls());
            *calls = left;
        }
        kept[i] = Some(round);
    }
    let Some(Value::Object(meta)) = out.get_mut("result").and_then(|r| r.get_mut("metadata"))
    else {
        return;
    };
    set_if_changed(
        meta,
        "toolCallRounds",
        Value::Array(kept.into_iter().flatten().collect()),
    );
    if let Some(Value::Object(results)) = meta.get_mut("toolCallResults") {
        // A request keeps one result per call id. Where results that share
        // one (an id given twice) now differ, one of them changed: the one
        // as it came stays, so that no result's text is lost.
        let mut texts: HashMap<&str, Vec<String>> = HashMap::new();
        for m in msgs.iter().filter(|m| m.role.is_result()) {
            if let Some(id) = m.tool_call_id.as_deref() {
                texts.entry(id).or_default().push(m.content.text());
            }
        }
        results.retain(|id, _| texts.contains_key(id.as_str()));
        for (id, texts) in texts {
            let Some(r) = results.get_mut(id) else {
                continue;
            };
            let came = result_text(r);
            if texts.contains(&came) {
                continue;
            }
            if let Some(text) = texts.into_iter().next() {
                let mut item = r
                    .get("content")
                    .and_then(|c| c.get(0))
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                item["value"] = Value::from(text);
                r["content"] = Value::Array(vec![item]);
            }
        }
    }
}

impl Dialect for CopilotChat {
    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        is_session(obj).then_some(&["requests"])
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let mut out = Vec::new();
        let text = rec
            .get("message")
            .and_then(|m| m.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !text.is_empty() {
            out.push(Message::new(Role::User, text));
        }
        let rounds = rounds(rec);
        if !rounds.is_empty() {
            out.extend(read_rounds(rec, rounds));
        } else if let Some(answer) = response_text(rec) {
            out.push(Message::new(Role::Assistant, answer));
        }
        Ok(out)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        let user = msgs
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.text());
        let was = rec
            .get("message")
            .and_then(|m| m.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if user.as_deref().unwrap_or("") != was {
            let mut message = rec
                .get("message")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            message.insert("text".into(), Value::from(user.unwrap_or_default()));
            message.insert("parts".into(), Value::Array(Vec::new()));
            out.insert("message".into(), Value::Object(message));
        }
        let rounds = rounds(rec);
        if !rounds.is_empty() {
            write_rounds(&mut out, rounds, msgs);
            // Every round gone: the reader would take the answer from the
            // response's text instead, and the messages removed came back.
            if !msgs.iter().any(|m| m.role == Role::Assistant) && response_text(rec).is_some() {
                out.insert("response".into(), Value::Array(Vec::new()));
            }
        } else {
            let answer = msgs
                .iter()
                .find(|m| m.role == Role::Assistant)
                .map(|m| m.content.text());
            if answer != response_text(rec) {
                let list = answer
                    .map(|a| vec![serde_json::json!({"value": a})])
                    .unwrap_or_default();
                out.insert("response".into(), Value::Array(list));
            }
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        // A request is a user turn and its answer: new text goes in as a
        // request of its own.
        crate::format::dialect::text_records(
            msgs,
            losses,
            "a Copilot Chat session",
            |role, text| {
                if role == Role::Assistant {
                    serde_json::json!({"message": {"text": "", "parts": []}, "response": [{"value": text}]})
                } else {
                    serde_json::json!({"message": {"text": text, "parts": []}, "response": []})
                }
            },
        )
    }
}
