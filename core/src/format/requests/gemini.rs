//! Google Gemini: API `contents` (or `history`) of `{role, parts}` with a
//! top-level `systemInstruction`, and the Gemini CLI's own session files
//! (`{sessionId, messages: [{type: user|gemini, content, toolCalls}]}`, and
//! their JSONL form with a header line and `$set` lines).
//!
//! A model turn is one assistant message (text parts, `functionCall` parts
//! as tool calls); a user turn becomes one tool message per
//! `functionResponse` part plus, when it has other parts, one user message.
//! A CLI `gemini` message holds its tool calls *and* their results: it
//! becomes an assistant message followed by one tool message per result.

use serde_json::{Map, Value};

use crate::format::convert::{self, arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::transcript::{
    Content, Fields, Image, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// Gemini API contents and Gemini CLI sessions.
pub(crate) struct Gemini;

fn get<'a>(map: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    map.get(camel).or_else(|| map.get(snake))
}

/// Whether a record is a Gemini CLI message.
pub(crate) fn is_cli_message(r: &Map<String, Value>) -> bool {
    matches!(
        r.get("type").and_then(Value::as_str),
        Some("user" | "gemini" | "model" | "info" | "error" | "warning")
    ) && !r.get("message").is_some_and(Value::is_object)
}

impl Dialect for Gemini {
    fn content_key(&self) -> Option<&'static str> {
        Some("parts")
    }

    /// A Gemini CLI turn's `thoughts`: the model's reasoning, which other
    /// formats' messages do not carry.
    fn extra_keys(&self, m: &Message) -> Vec<String> {
        let thoughts = m.fields.get("thoughts");
        let some = thoughts.is_some_and(|t| t.as_array().is_none_or(|a| !a.is_empty()));
        if some && !m.role.is_result() && is_cli_message(&m.fields) {
            vec!["thoughts".to_string()]
        } else {
            Vec::new()
        }
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let list = |k: &str| obj.get(k).and_then(Value::as_array);
        if let Some(path) = crate::format::wrap::list_path(obj, "contents") {
            return Some(path);
        }
        if crate::format::answer::format_of(obj) == Some(crate::format::Format::Gemini) {
            // A `GenerateContentResponse`: its candidates wrap the turn.
            return Some(&["candidates"]);
        }
        if list("history").is_some_and(|l| l.first().is_none_or(|r| r.get("parts").is_some())) {
            return Some(&["history"]);
        }
        let cli = list("messages").is_some_and(|l| {
            obj.contains_key("projectHash")
                || l.first()
                    .and_then(Value::as_object)
                    .is_some_and(is_cli_message)
        });
        cli.then_some(&["messages"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["contents"]
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        if conv.envelope.is_none() {
            if let Err(e) = crate::format::stream::read(crate::format::Format::Gemini, conv) {
                conv.notes
                    .push(format!("the stream's chunks make no message: {e}"));
            }
        }
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        let env = crate::format::wrap::body(env);
        let Some(Value::Object(si)) = get(env, "systemInstruction", "system_instruction") else {
            return Ok(Vec::new());
        };
        let Some(parts @ Value::Array(_)) = si.get("parts") else {
            return Ok(Vec::new());
        };
        let (parts, _, _) = read_parts(parts)?;
        Ok(vec![Message::from(MessageData {
            content: Content::Parts(parts),
            ..MessageData::new(Role::System, "")
        })])
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        let env = crate::format::wrap::body_mut(env);
        let key = if env.contains_key("system_instruction") {
            "system_instruction"
        } else {
            "systemInstruction"
        };
        match msgs.first() {
            None => {
                env.shift_remove(key);
            }
            Some(m) => {
                let Some(Value::Object(mut si)) = env.get(key).cloned() else {
                    return;
                };
                let parts: Vec<Value> = m.content.parts().iter().map(Part::to_value).collect();
                set_if_changed(&mut si, "parts", Value::Array(parts));
                set_if_changed(env, key, Value::Object(si));
            }
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if crate::format::stream::is_event(crate::format::Format::Gemini, rec) {
            // A chunk of a stream: read together (see `after_read`).
            return Ok(Vec::new());
        }
        if let Some(parts) = rec.get("parts") {
            return read_turn(rec, parts);
        }
        if let Some(turn) = candidate_turn(rec) {
            let turn = Fields::from(turn.clone());
            return match turn.get("parts") {
                Some(parts) => read_turn(&turn, parts),
                // A candidate stopped before it said anything (`MAX_TOKENS`
                // with no parts): nothing to read.
                None => Ok(Vec::new()),
            };
        }
        read_cli(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if crate::format::stream::is_event(crate::format::Format::Gemini, rec) {
            return Some(rec.clone());
        }
        if rec.contains_key("parts") {
            write_turn(rec, msgs)
        } else if let Some(turn) = candidate_turn(rec) {
            let new = write_turn(turn, msgs)?;
            let mut out = rec.clone();
            set_if_changed(&mut out, "content", Value::Object(new));
            Some(out)
        } else {
            write_cli(rec, msgs)
        }
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let cli = env.contains_key("sessionId") || env.contains_key("projectHash");
        if cli {
            return msgs
                .iter()
                .map(|m| {
                    let ty = if m.role == Role::Assistant {
                        "gemini"
                    } else {
                        "user"
                    };
                    serde_json::json!({"type": ty, "content": m.content.text()})
                })
                .collect();
        }
        new_turns(msgs, env, losses)
    }
}

/// Parts, tool calls, and function responses (with their slots) of a part list.
type ReadParts = (Vec<Part>, Vec<ToolCall>, Vec<(usize, Message)>);

fn read_parts(parts: &Value) -> Result<ReadParts, Fault> {
    let Value::Array(list) = parts else {
        return Err("\"parts\" must be a list".into());
    };
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (k, p) in list.iter().enumerate() {
        let Some(map) = p.as_object() else {
            out.0.push(Part {
                kind: PartKind::Other,
                raw: p.clone().into(),
                slot: Some(k),
            });
            continue;
        };
        if let Some(Value::Object(call)) = get(map, "functionCall", "function_call") {
            out.1.push(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_string),
                name: call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a functionCall has no \"name\"")?
                    .to_string(),
                arguments: arguments_text(call.get("args").unwrap_or(&Value::Null)),
                raw: p.clone().into(),
                slot: Some(k),
            });
            continue;
        }
        if let Some(Value::Object(resp)) = get(map, "functionResponse", "function_response") {
            out.2.push((
                k,
                Message::from(MessageData {
                    content: Content::Text(response_text(resp.get("response"))),
                    tool_call_id: resp.get("id").and_then(Value::as_str).map(str::to_string),
                    name: resp.get("name").and_then(Value::as_str).map(str::to_string),
                    fields: map.clone().into(),
                    ..MessageData::new(Role::Tool, "")
                }),
            ));
            continue;
        }
        let kind = if map.get("thought") == Some(&Value::Bool(true)) {
            PartKind::Other
        } else if let Some(Value::String(t)) = map.get("text") {
            PartKind::Text(t.clone())
        } else if let Some(Value::Object(d)) = get(map, "inlineData", "inline_data") {
            let mime = get(d, "mimeType", "mime_type")
                .and_then(Value::as_str)
                .unwrap_or("");
            if mime.starts_with("image/") {
                match d.get("data").and_then(Value::as_str) {
                    Some(data) => PartKind::Image(Image::inline(Some(mime.to_string()), data)),
                    None => PartKind::Image(Image {
                        media_type: Some(mime.to_string()),
                        ..Image::default()
                    }),
                }
            } else {
                PartKind::Other
            }
        } else if let Some(Value::Object(d)) = get(map, "fileData", "file_data") {
            let mime = get(d, "mimeType", "mime_type")
                .and_then(Value::as_str)
                .unwrap_or("");
            if mime.starts_with("image/") {
                PartKind::Image(Image {
                    media_type: Some(mime.to_string()),
                    ..Image::default()
                })
            } else {
                PartKind::Other
            }
        } else {
            PartKind::Other
        };
        out.0.push(Part {
            kind,
            raw: p.clone().into(),
            slot: Some(k),
        });
    }
    Ok(out)
}

/// The text of a function response: its `output` (or `content`) string, or the JSON.
fn response_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Object(o)) => match o.get("output").or_else(|| o.get("content")) {
            Some(Value::String(s)) if o.len() == 1 => s.clone(),
            _ => arguments_text(&Value::Object(o.clone())),
        },
        Some(v) => arguments_text(v),
        None => String::new(),
    }
}

/// A function response value for a result text, keeping the original shape.
fn response_value(text: &str, orig: Option<&Value>) -> Value {
    if let Some(Value::Object(o)) = orig {
        if response_text(orig) == text {
            return Value::Object(o.clone());
        }
        for key in ["output", "content"] {
            if o.len() == 1 && o.get(key).is_some_and(Value::is_string) {
                let mut o = o.clone();
                o.insert(key.into(), Value::from(text));
                return Value::Object(o);
            }
        }
    }
    // A JSON object is a response as it stands when it reads back as the
    // same text; any other text is the response's `output`.
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) if arguments_text(&v) == text => v,
        _ => serde_json::json!({ "output": text }),
    }
}

/// A turn object (`{role, parts}`) read.
pub(crate) fn read_turn_of(rec: &Fields) -> Result<Vec<Message>, Fault> {
    read_turn(rec, rec.get("parts").unwrap_or(&Value::Null))
}

fn read_turn(rec: &Fields, parts: &Value) -> Result<Vec<Message>, Fault> {
    // API turns name their side in `role`; Gemini CLI messages that carry
    // API parts name it in `type` (`"type": "model"`).
    let side = rec
        .get("role")
        .or_else(|| rec.get("type").filter(|_| !rec.contains_key("role")));
    let role = match side.and_then(Value::as_str) {
        Some("model" | "gemini" | "assistant") => Role::Assistant,
        Some("user" | "function" | "tool") | None => Role::User,
        Some("system") => Role::System,
        Some(r) => {
            return Err(format!(
                "unknown role \"{r}\" (Gemini turns are user or model)"
            ))
        }
    };
    let (parts, calls, results) = read_parts(parts)?;
    let base = |content| {
        Message::from(MessageData {
            content,
            fields: rec.clone(),
            ..MessageData::new(role, "")
        })
    };
    if role == Role::Assistant {
        let mut m = base(Content::Parts(parts));
        if !calls.is_empty() {
            m.tool_calls = Some(calls);
        }
        return Ok(vec![m]);
    }
    let first_part = parts.first().and_then(|p| p.slot).unwrap_or(usize::MAX);
    let mut out = results;
    if !parts.is_empty() || out.is_empty() {
        out.push((first_part, base(Content::Parts(parts))));
    }
    out.sort_by_key(|(k, _)| *k);
    Ok(out.into_iter().map(|(_, m)| m).collect())
}

/// A turn object written back from the messages read from it.
pub(crate) fn write_turn_of(
    rec: &Map<String, Value>,
    msgs: &[&Message],
) -> Option<Map<String, Value>> {
    write_turn(rec, msgs)
}

fn write_turn(rec: &Map<String, Value>, msgs: &[&Message]) -> Option<Map<String, Value>> {
    let orig_parts = rec.get("parts")?.as_array()?;
    let mut items: Vec<(usize, Value)> = Vec::new();
    let mut used = vec![false; orig_parts.len()];
    let mut fresh = orig_parts.len();
    for m in msgs {
        if m.role.is_result() {
            let slot = orig_parts
                .iter()
                .enumerate()
                .position(|(k, p)| !used[k] && p.as_object() == Some(&m.fields));
            let slot = match slot {
                Some(k) => {
                    used[k] = true;
                    k
                }
                None => {
                    fresh += 1;
                    fresh
                }
            };
            let mut part = m.fields.clone().into_map();
            let key = if part.contains_key("function_response") {
                "function_response"
            } else {
                "functionResponse"
            };
            let mut resp = part
                .get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let text = m.content.text();
            let v = response_value(&text, resp.get("response"));
            set_if_changed(&mut resp, "response", v);
            part.insert(key.into(), Value::Object(resp));
            items.push((slot, Value::Object(part)));
            continue;
        }
        for p in m.content.parts() {
            let slot = p.slot.unwrap_or_else(|| {
                fresh += 1;
                fresh
            });
            items.push((slot, p.to_value_untyped()));
        }
        for c in m.calls() {
            let slot = c.slot.unwrap_or_else(|| {
                fresh += 1;
                fresh
            });
            items.push((slot, call_part(c)));
        }
    }
    items.sort_by_key(|(k, _)| *k);
    if items.is_empty() {
        return None;
    }
    let mut out = rec.clone();
    set_if_changed(
        &mut out,
        "parts",
        Value::Array(items.into_iter().map(|(_, v)| v).collect()),
    );
    Some(out)
}

/// A functionCall part: the original, with name and args updated.
fn call_part(c: &ToolCall) -> Value {
    let mut part = c.raw.as_object().cloned().unwrap_or_default();
    let key = if part.contains_key("function_call") {
        "function_call"
    } else {
        "functionCall"
    };
    let mut call = part
        .get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    set_if_changed(&mut call, "name", Value::from(c.name.as_str()));
    if call.get("args").map(arguments_text).as_deref() != Some(c.arguments.as_str()) {
        call.insert("args".into(), arguments_value(&c.arguments));
    }
    if let Some(id) = &c.id {
        if call.contains_key("id") || c.raw.is_null() {
            set_if_changed(&mut call, "id", Value::from(id.as_str()));
        }
    }
    part.insert(key.into(), Value::Object(call));
    Value::Object(part)
}

fn cli_content(v: Option<&Value>) -> Result<Content, Fault> {
    Ok(match v {
        None => Content::Absent,
        Some(Value::Null) => Content::Null,
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(parts @ Value::Array(_)) => Content::Parts(read_parts(parts)?.0),
        Some(_) => return Err("\"content\" must be a string or a list of parts".into()),
    })
}

fn read_cli(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let role = match rec.get("type").and_then(Value::as_str) {
        Some("user") => Role::User,
        // Sessions written by other tools say `model`, as the API does.
        Some("gemini" | "model") => Role::Assistant,
        _ => return Ok(Vec::new()),
    };
    let mut m = Message::from(MessageData {
        content: cli_content(rec.get(text_key(rec)))?,
        fields: rec.clone(),
        ..MessageData::new(role, "")
    });
    let mut results = Vec::new();
    if let Some(Value::Array(calls)) = rec.get("toolCalls") {
        let mut out = Vec::new();
        for (k, c) in calls.iter().enumerate() {
            let id = c.get("id").and_then(Value::as_str).map(str::to_string);
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool call has no \"name\"")?;
            out.push(ToolCall {
                id: id.clone(),
                name: name.to_string(),
                arguments: arguments_text(c.get("args").unwrap_or(&Value::Null)),
                raw: c.clone().into(),
                // Its place in the list: two calls of one id each written
                // back to their own.
                slot: Some(k),
            });
            let text = match c.get("result") {
                Some(Value::Array(rs)) => rs
                    .iter()
                    .filter_map(|r| get(r.as_object()?, "functionResponse", "function_response"))
                    .map(|fr| response_text(fr.get("response")))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => match c.get("resultDisplay") {
                    Some(Value::String(s)) => s.clone(),
                    _ => continue, // no result recorded: an unanswered call
                },
            };
            results.push(Message::from(MessageData {
                content: Content::Text(text),
                tool_call_id: id,
                name: Some(name.to_string()),
                fields: c.as_object().cloned().unwrap_or_default().into(),
                ..MessageData::new(Role::Tool, "")
            }));
        }
        if !out.is_empty() {
            m.tool_calls = Some(out);
        }
    }
    let mut msgs = vec![m];
    msgs.extend(results);
    Ok(msgs)
}

/// Where a Gemini CLI entry keeps its text: `content` in sessions,
/// `message` in the prompt log (`logs.json`).
fn text_key(rec: &Map<String, Value>) -> &'static str {
    if !rec.contains_key("content") && rec.get("message").is_some_and(Value::is_string) {
        "message"
    } else {
        "content"
    }
}

fn write_cli(rec: &Map<String, Value>, msgs: &[&Message]) -> Option<Map<String, Value>> {
    let main = msgs.iter().find(|m| !m.role.is_result())?;
    let mut out = rec.clone();
    let key = text_key(rec);
    match crate::format::openai::content_value(&main.content, rec.get(key)) {
        Some(v) => set_if_changed(&mut out, key, v),
        None => {
            out.shift_remove(key);
        }
    }
    if let Some(Value::Array(calls)) = rec.get("toolCalls") {
        // Each call by its place in the list, and the results by the id
        // they answer, in order: two calls of one id (a model's bug) each
        // keep their own arguments and result. By the first call and result
        // of an id, the second was written with the first's.
        let by_slot = crate::pairs::calls_by_slot(main.calls());
        let mut results: crate::memo::FastMap<Option<&str>, std::collections::VecDeque<&Message>> =
            crate::memo::FastMap::default();
        for m in msgs.iter().filter(|m| m.role.is_result()) {
            results
                .entry(m.tool_call_id.as_deref())
                .or_default()
                .push_back(*m);
        }
        let kept: Vec<Value> = calls
            .iter()
            .enumerate()
            .filter_map(|(k, orig)| {
                let id = orig.get("id").and_then(Value::as_str);
                let call = *by_slot.get(&k)?;
                let mut o = orig.as_object()?.clone();
                if o.get("args").map(arguments_text).as_deref() != Some(call.arguments.as_str()) {
                    o.insert("args".into(), arguments_value(&call.arguments));
                }
                // The reader made a result of each call that has one.
                let answered = matches!(orig.get("result"), Some(Value::Array(_)))
                    || matches!(orig.get("resultDisplay"), Some(Value::String(_)));
                let result = answered
                    .then(|| results.get_mut(&id)?.pop_front())
                    .flatten();
                if answered && result.is_none() {
                    // Its result went (the call kept in the turn in
                    // progress): read again, the call has none.
                    o.shift_remove("result");
                    o.shift_remove("resultDisplay");
                }
                if let (Some(r), Some(Value::Array(rs))) = (result, o.get("result").cloned()) {
                    let text = r.content.text();
                    let rs: Vec<Value> = rs
                        .into_iter()
                        .map(|mut part| {
                            if let Some(fr) = part
                                .get_mut("functionResponse")
                                .and_then(Value::as_object_mut)
                            {
                                let v = response_value(&text, fr.get("response"));
                                set_if_changed(fr, "response", v);
                            }
                            part
                        })
                        .collect();
                    set_if_changed(&mut o, "result", Value::Array(rs));
                }
                Some(Value::Object(o))
            })
            .collect();
        set_if_changed(&mut out, "toolCalls", Value::Array(kept));
    }
    Some(out)
}

/// Gemini API turns for messages of any format.
fn new_turns(
    msgs: &[&Message],
    env: &mut Map<String, Value>,
    losses: &mut Vec<Loss>,
) -> Vec<Value> {
    let pairing = crate::pairs::Pairing::new(msgs);
    // Each turn, and the index of the message that began it.
    let mut out: Vec<(Map<String, Value>, Option<usize>)> = Vec::new();
    let push = |role: &str,
                parts: Vec<Value>,
                index: Option<usize>,
                out: &mut Vec<(Map<String, Value>, Option<usize>)>| {
        if let Some((last, _)) = out.last_mut() {
            if last.get("role").and_then(Value::as_str) == Some(role) {
                if let Some(Value::Array(p)) = last.get_mut("parts") {
                    p.extend(parts);
                    return;
                }
            }
        }
        let mut t = Map::new();
        t.insert("role".into(), Value::from(role));
        t.insert("parts".into(), Value::Array(parts));
        out.push((t, index));
    };
    for (i, m) in msgs.iter().enumerate() {
        let index = m.input_index();
        let mut parts: Vec<Value> = Vec::new();
        match &m.content {
            Content::Text(s) if !s.is_empty() => parts.push(serde_json::json!({ "text": s })),
            Content::Parts(ps) => {
                for p in ps {
                    match &p.kind {
                        PartKind::Text(t) if t.is_empty() => {}
                        PartKind::Text(t) => parts.push(serde_json::json!({ "text": t })),
                        PartKind::Image(img) => match crate::format::dialect::image_url(&p.raw) {
                            Some(url) => match convert::split_data_url(&url) {
                                Some((mime, data)) => parts.push(serde_json::json!({"inlineData": {"mimeType": mime, "data": data}})),
                                None => parts.push(serde_json::json!({"fileData": {"mimeType": img.media_type.clone().unwrap_or_else(|| "image/png".into()), "fileUri": url}})),
                            },
                            None => losses.push(Loss::at(index, "image", "it has no URL or inline data")),
                        },
                        PartKind::Other => losses.push(Loss::at(
                            index,
                            format!("{} part", convert::part_type(&p.raw)),
                            "gemini cannot express it",
                        )),
                    }
                }
            }
            _ => {}
        }
        match m.role {
            Role::System | Role::Developer if parts.is_empty() => {}
            Role::System | Role::Developer => {
                if !out.is_empty() {
                    losses.push(Loss::at(
                        index,
                        "place of a system message",
                        "gemini takes system instructions only at the start; moved there",
                    ));
                }
                let si = env
                    .entry("systemInstruction")
                    .or_insert_with(|| serde_json::json!({ "parts": [] }));
                if let Some(Value::Array(p)) = si.get_mut("parts") {
                    p.extend(parts);
                }
            }
            Role::User if parts.is_empty() => {}
            Role::User => push("user", parts, index, &mut out),
            Role::Assistant => {
                for c in m.calls() {
                    let mut call = Map::new();
                    call.insert("name".into(), Value::from(c.name.as_str()));
                    let args = crate::format::convert::object_arguments(c, index, "gemini", losses);
                    call.insert("args".into(), args);
                    if let Some(id) = &c.id {
                        call.insert("id".into(), Value::from(id.as_str()));
                    }
                    parts.push(serde_json::json!({ "functionCall": call }));
                }
                if !parts.is_empty() {
                    push("model", parts, index, &mut out);
                }
            }
            Role::Tool | Role::Function => {
                let call = pairing
                    .result_of(i)
                    .map(|r| &msgs[r.message].calls()[r.call]);
                let name = call
                    .map(|c| c.name.clone())
                    .or_else(|| m.name.clone())
                    .unwrap_or_default();
                let mut resp = Map::new();
                resp.insert("name".into(), Value::from(name));
                resp.insert("response".into(), response_value(&m.content.text(), None));
                if let Some(id) = call
                    .and_then(|c| c.id.clone())
                    .or_else(|| m.tool_call_id.clone())
                {
                    resp.insert("id".into(), Value::from(id));
                }
                push(
                    "user",
                    vec![serde_json::json!({ "functionResponse": resp })],
                    index,
                    &mut out,
                );
            }
        }
    }
    without_blank_turns(out, losses)
}

/// Turns of white space alone left out, and said (Gemini rejects empty
/// content; `validate` holds it to that); the turns of one role they kept
/// apart are joined.
fn without_blank_turns(
    turns: Vec<(Map<String, Value>, Option<usize>)>,
    losses: &mut Vec<Loss>,
) -> Vec<Value> {
    let blank = |t: &Map<String, Value>| {
        t.get("parts").and_then(Value::as_array).is_some_and(|ps| {
            ps.iter().all(|p| {
                p.as_object().is_some_and(|o| o.len() == 1)
                    && p.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.trim().is_empty())
            })
        })
    };
    let mut out: Vec<Map<String, Value>> = Vec::with_capacity(turns.len());
    for (t, index) in turns {
        if blank(&t) {
            losses.push(Loss::at(
                index,
                "white-space-only text",
                "a turn of white space alone: gemini rejects empty content",
            ));
            continue;
        }
        if let Some(last) = out.last_mut() {
            if last.get("role") == t.get("role") {
                if let (Some(Value::Array(p)), Some(Value::Array(more))) =
                    (last.get_mut("parts"), t.get("parts"))
                {
                    p.extend(more.iter().cloned());
                    continue;
                }
            }
        }
        out.push(t);
    }
    out.into_iter().map(Value::Object).collect()
}

/// The turn of an answer's candidate (`{content: {role, parts},
/// finishReason, index}`).
fn candidate_turn(rec: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if rec.contains_key("role") || rec.contains_key("type") {
        return None;
    }
    let turn = rec.get("content")?.as_object()?;
    (turn.contains_key("parts") || rec.contains_key("finishReason")).then_some(turn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_turn_of_white_space_goes_and_is_said() {
        // Open WebUI keeps the "\n" after a call's block as the answer's
        // text: converted, it was a model turn Gemini rejects.
        let mut call = Message::new(Role::Assistant, "");
        call.content = Content::Null;
        call.tool_calls = Some(vec![ToolCall {
            id: Some("c1".into()),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
            raw: Value::Null.into(),
            slot: None,
        }]);
        let mut result = Message::new(Role::Tool, "text of a");
        result.tool_call_id = Some("c1".into());
        let msgs = [
            Message::new(Role::User, "read a"),
            call,
            result,
            Message::new(Role::Assistant, "\n"),
            Message::new(Role::User, "and b?"),
        ];
        let refs: Vec<&Message> = msgs.iter().collect();
        let mut losses = Vec::new();
        let turns = new_turns(&refs, &mut Map::new(), &mut losses);
        let roles: Vec<&str> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "model", "user"]);
        assert_eq!(turns[2]["parts"][1]["text"], "and b?");
        assert_eq!(losses.len(), 1);
        assert_eq!(losses[0].what, "white-space-only text");
    }

    #[test]
    fn api_turns_round_trip() {
        for text in [
            r#"{"role":"user","parts":[{"text":"Weather in Paris?"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}"#,
            r#"{"role":"model","parts":[{"text":"Let me check."},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]}"#,
            r#"{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":18}}},{"text":"and?"}]}"#,
        ] {
            let rec = obj(text);
            let msgs = Gemini.read_record(&Fields::from(rec.clone())).unwrap();
            let refs: Vec<&Message> = msgs.iter().collect();
            assert_eq!(Gemini.write_record(&rec, &refs).unwrap(), rec, "{text}");
        }
        let msgs = Gemini
            .read_record(&Fields::from(obj(r#"{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"temp_c":18}}},{"text":"and?"}]}"#)))
            .unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].role, Role::Tool);
        assert_eq!(msgs[0].content.text(), r#"{"temp_c":18}"#);
    }

    #[test]
    fn a_note_in_an_image_s_place_is_a_gemini_text_part() {
        // `filter --strip-processed-images` puts a chat-shaped text part
        // where the image was: written as it came, its `type` is a field
        // Gemini does not know, and refuses.
        let rec = obj(
            r#"{"role":"user","parts":[{"text":"Weather?"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}"#,
        );
        let mut msgs = Gemini.read_record(&Fields::from(rec.clone())).unwrap();
        crate::transcript::note_in_place(&mut msgs[0].content, 1, "[image removed]");
        let refs: Vec<&Message> = msgs.iter().collect();
        let out = Gemini.write_record(&rec, &refs).unwrap();
        assert_eq!(
            out["parts"],
            serde_json::json!([{"text": "Weather?"}, {"text": "[image removed]"}])
        );
    }

    #[test]
    fn cli_model_messages_with_parts_are_the_model_s() {
        // `"type": "model"` messages were read as the user's (issue 13).
        let rec = obj(r#"{"id":"m5","type":"model","parts":[{"text":"Done."}]}"#);
        let msgs = Gemini.read_record(&Fields::from(rec.clone())).unwrap();
        assert_eq!(msgs[0].role, Role::Assistant);
        let refs: Vec<&Message> = msgs.iter().collect();
        assert_eq!(Gemini.write_record(&rec, &refs).unwrap(), rec);
    }

    #[test]
    fn cli_messages_split_calls_and_results() {
        let rec = obj(
            r#"{"id":"m2","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run","args":{"command":"ls"},"result":[{"functionResponse":{"id":"c1","name":"run","response":{"output":"a.txt"}}}],"status":"success"}]}"#,
        );
        let msgs = Gemini.read_record(&Fields::from(rec.clone())).unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1].content.text(), "a.txt");
        let refs: Vec<&Message> = msgs.iter().collect();
        assert_eq!(Gemini.write_record(&rec, &refs).unwrap(), rec);
        let mut result = msgs[1].clone();
        result.content = Content::Text("[Tool: 1 lines, 5 chars | a.txt]".into());
        let out = Gemini.write_record(&rec, &[&msgs[0], &result]).unwrap();
        assert_eq!(
            out["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"],
            "[Tool: 1 lines, 5 chars | a.txt]"
        );
        // Its result taken (`filter --exclude-roles tool`; the call stays
        // in the turn in progress): the result went with it. It stayed in
        // the call's entry and came back on reading, though said removed.
        let out = Gemini.write_record(&rec, &[&msgs[0]]).unwrap();
        assert!(out["toolCalls"][0].get("result").is_none(), "{out:?}");
        let back = Gemini.read_record(&Fields::from(out)).unwrap();
        assert_eq!(back.len(), 1);
    }

    #[test]
    fn cli_model_turns_with_text_content_are_the_model_s_and_thoughts_a_loss() {
        // Issue 29: `"type": "model"` with a plain string was dropped.
        let rec = obj(
            r#"{"id":"m2","timestamp":"t","type":"model","content":"Hi!","thoughts":[{"subject":"s","description":"d"}]}"#,
        );
        let msgs = Gemini.read_record(&Fields::from(rec.clone())).unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].role, Role::Assistant);
        assert_eq!(msgs[0].content.text(), "Hi!");
        assert_eq!(Gemini.extra_keys(&msgs[0]), ["thoughts"]);
        let refs: Vec<&Message> = msgs.iter().collect();
        assert_eq!(Gemini.write_record(&rec, &refs).unwrap(), rec);
    }

    #[test]
    fn a_failed_cli_call_is_an_error_result_in_anthropic() {
        let rec = obj(
            r#"{"id":"m2","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run","args":{},"resultDisplay":"Error: no such file","status":"error"}]}"#,
        );
        let msgs = Gemini.read_record(&Fields::from(rec)).unwrap();
        let refs: Vec<&Message> = msgs.iter().collect();
        let body = crate::format::anthropic::new_messages(&refs, &mut Map::new(), &mut Vec::new());
        let block = &body[1]["content"][0];
        assert_eq!(block["type"], "tool_result");
        assert_eq!(block["is_error"], true, "{body:?}");
    }
}
