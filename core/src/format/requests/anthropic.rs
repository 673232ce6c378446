//! Anthropic Messages API: `system` at the top, `messages` of user and
//! assistant turns whose content is a string or a list of blocks.
//!
//! In the model, an assistant turn is one message (text and thinking blocks
//! as parts, `tool_use` blocks as tool calls); a user turn becomes one tool
//! message per `tool_result` block plus, when it has other blocks, one user
//! message. Writing puts every block back in its original place.
//!
//! Claude Code session lines carry the same message objects, so its dialect
//! reuses [`read_message`] and [`write_message`].

use serde_json::{Map, Value};

use crate::format::convert::{self, arguments_text, arguments_value, part_type};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::format::openai::{content_value, parse_part};
use crate::format::Format;
use crate::pairs::Pairing;
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Block types only Anthropic uses, the evidence detection looks for.
pub(crate) const BLOCK_TYPES: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
];

/// Anthropic Messages API requests.
pub(crate) struct Anthropic;

impl Dialect for Anthropic {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if crate::format::answer::format_of(obj) == Some(Format::Anthropic) {
            // An answer: the object is the message.
            return Some(&[]);
        }
        crate::format::wrap::list_path(obj, "messages")
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        if crate::format::answer::format_of(env) == Some(Format::Anthropic) {
            // The message is the answer's role and content; its other keys
            // are the envelope's.
            let mut msg = Map::new();
            for k in ["role", "content"] {
                msg.insert(k.into(), env[k].clone());
            }
            return read_message(&Fields::from(msg));
        }
        let env = crate::format::wrap::body(env);
        let content = match env.get("system") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::String(s)) => Content::Text(s.clone()),
            Some(Value::Array(blocks)) => Content::Parts(parts(blocks)),
            Some(_) => return Err("\"system\" must be a string or a list of blocks".into()),
        };
        Ok(vec![Message::from(MessageData {
            content,
            ..MessageData::new(Role::System, "")
        })])
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        if crate::format::answer::format_of(env) == Some(Format::Anthropic) {
            match write_message(env, msgs) {
                Some(new) => *env = new,
                None => {
                    env.insert("content".into(), Value::Array(Vec::new()));
                }
            }
            return;
        }
        let env = crate::format::wrap::body_mut(env);
        match msgs.first() {
            None => {
                env.shift_remove("system");
            }
            Some(m) => {
                let orig = env.get("system").cloned();
                if let Some(v) = content_value(&m.content, orig.as_ref()) {
                    set_if_changed(env, "system", v);
                }
            }
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if crate::format::stream::is_event(Format::Anthropic, rec) {
            // Read together once all are (see `after_read`).
            return Ok(Vec::new());
        }
        read_message(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if crate::format::stream::is_event(Format::Anthropic, rec) {
            return Some(rec.clone());
        }
        write_message(rec, msgs)
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        if let Err(e) = crate::format::stream::read(Format::Anthropic, conv) {
            conv.notes
                .push(format!("the stream's events make no message: {e}"));
        }
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        new_messages(msgs, env, losses)
            .into_iter()
            .map(Value::Object)
            .collect()
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        let modelled: &[&str] = if m.role.is_result() {
            &["type", "tool_use_id", "content"]
        } else {
            &["role", "content"]
        };
        m.fields
            .keys()
            .filter(|k| !modelled.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// Block parts, each remembering its place.
fn parts(blocks: &[Value]) -> Vec<Part> {
    blocks
        .iter()
        .enumerate()
        .map(|(k, b)| Part {
            slot: Some(k),
            ..parse_part(b)
        })
        .collect()
}

/// Reads an Anthropic message object into messages (see the module docs).
pub(crate) fn read_message(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let role = crate::format::dialect::user_or_assistant(rec, "Anthropic")?;
    let blocks = match rec.get("content") {
        None => return Ok(vec![base(role, Content::Absent, rec)]),
        Some(Value::String(s)) => return Ok(vec![base(role, Content::Text(s.clone()), rec)]),
        Some(Value::Null) => return Ok(vec![base(role, Content::Null, rec)]),
        Some(Value::Array(blocks)) => blocks,
        Some(_) => return Err("\"content\" must be a string or a list of blocks".into()),
    };
    if role == Role::Assistant {
        let mut parts_out = Vec::new();
        let mut calls = Vec::new();
        for (k, b) in blocks.iter().enumerate() {
            if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                calls.push(tool_use(b, k)?);
            } else {
                parts_out.push(Part {
                    slot: Some(k),
                    ..parse_part(b)
                });
            }
        }
        let mut m = base(role, Content::Parts(parts_out), rec);
        if !calls.is_empty() {
            m.tool_calls = Some(calls);
        }
        return Ok(vec![m]);
    }
    // A user turn: tool results, and the rest as one user message placed at
    // its first block.
    let mut out = Vec::new();
    let mut user_parts = Vec::new();
    let mut user_at = None;
    for (k, b) in blocks.iter().enumerate() {
        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
            out.push(tool_result(b)?);
        } else {
            user_at.get_or_insert(out.len());
            user_parts.push(Part {
                slot: Some(k),
                ..parse_part(b)
            });
        }
    }
    if let Some(at) = user_at {
        out.insert(at, base(role, Content::Parts(user_parts), rec));
    }
    if out.is_empty() {
        out.push(base(role, Content::Parts(Vec::new()), rec));
    }
    Ok(out)
}

fn base(role: Role, content: Content, rec: &Fields) -> Message {
    Message::from(MessageData {
        content,
        fields: rec.clone(),
        ..MessageData::new(role, "")
    })
}

fn tool_use(b: &Value, k: usize) -> Result<ToolCall, Fault> {
    let id = b.get("id").and_then(Value::as_str).map(str::to_string);
    let name = b
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool_use block has no \"name\"")?
        .to_string();
    Ok(ToolCall {
        id,
        name,
        arguments: arguments_text(b.get("input").unwrap_or(&Value::Null)),
        raw: b.clone().into(),
        slot: Some(k),
    })
}

fn tool_result(b: &Value) -> Result<Message, Fault> {
    let map = b
        .as_object()
        .ok_or("a tool_result block must be an object")?;
    // Schema-drifted logs omit the id: the result is then paired by order.
    // Amp threads name it `toolUseID` and keep the output in `run`.
    let id = map
        .get("tool_use_id")
        .or_else(|| map.get("toolUseID"))
        .and_then(Value::as_str);
    let amp = amp_output(map).map(|(_, v)| v);
    let content = match map.get("content").or(amp) {
        // Amp's output may be an object (a command's output and exit
        // code): its JSON is the result's text.
        Some(v @ Value::Object(_)) if amp.is_some() => Content::Text(v.to_string()),
        None => Content::Absent,
        Some(Value::Null) => Content::Null,
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(Value::Array(blocks)) => Content::Parts(parts(blocks)),
        Some(_) => {
            return Err("tool_result \"content\" must be a string or a list of blocks".into())
        }
    };
    Ok(Message::from(MessageData {
        content,
        tool_call_id: id.map(str::to_string),
        fields: map.clone().into(),
        ..MessageData::new(Role::Tool, "")
    }))
}

/// Writes an Anthropic message object back from the messages read from it.
pub(crate) fn write_message(
    rec: &Map<String, Value>,
    msgs: &[&Message],
) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    match rec.get("content") {
        Some(Value::Array(blocks)) => {
            let mut items: Vec<(usize, Value)> = Vec::new();
            let mut fresh = blocks.len();
            let mut next_slot = || {
                fresh += 1;
                fresh
            };
            // Each result's block, by its call's id, found once: a turn of
            // thousands of parallel results was scanned again for each.
            let mut result_at = crate::format::dialect::ResultSlots::new(
                blocks.iter().enumerate().filter_map(|(k, b)| {
                    if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                        return None;
                    }
                    let id = b.get("tool_use_id").or_else(|| b.get("toolUseID"));
                    Some((id?.as_str()?, k))
                }),
            );
            for m in msgs {
                if m.role.is_result() {
                    // Its block is what it was read from.
                    let own = |k: usize| blocks[k].as_object().is_some_and(|b| m.fields == *b);
                    let slot = result_at.take_own(m.tool_call_id.as_deref(), own);
                    let slot = slot.unwrap_or_else(&mut next_slot);
                    items.push((slot, tool_result_value(m)));
                    continue;
                }
                for p in m.content.parts() {
                    let slot = p.slot.unwrap_or_else(&mut next_slot);
                    items.push((slot, p.to_value()));
                }
                for c in m.calls() {
                    let slot = c.slot.unwrap_or_else(&mut next_slot);
                    items.push((slot, tool_use_value(c)));
                }
            }
            items.sort_by_key(|(slot, _)| *slot);
            if items.is_empty() {
                return None;
            }
            out.insert(
                "content".into(),
                Value::Array(items.into_iter().map(|(_, v)| v).collect()),
            );
        }
        orig => {
            let m = msgs.first()?;
            if m.has_calls() {
                // A string turn that gained tool calls: write blocks.
                let mut blocks: Vec<Value> = match content_value(&m.content, None) {
                    Some(Value::String(s)) if !s.is_empty() => vec![text_block(&s)],
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                blocks.extend(m.calls().iter().map(tool_use_value));
                out.insert("content".into(), Value::Array(blocks));
            } else {
                match content_value(&m.content, orig) {
                    Some(v) => set_if_changed(&mut out, "content", v),
                    None => {
                        out.shift_remove("content");
                    }
                }
            }
        }
    }
    Some(out)
}

fn text_block(text: &str) -> Value {
    let mut b = Map::new();
    b.insert("type".into(), Value::from("text"));
    b.insert("text".into(), Value::from(text));
    Value::Object(b)
}

/// A tool_use block: the original with id, name and input updated.
fn tool_use_value(c: &ToolCall) -> Value {
    let mut b = match &*c.raw {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("tool_use") => m.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), Value::from("tool_use"));
            m
        }
    };
    if let Some(id) = &c.id {
        set_if_changed(&mut b, "id", Value::from(id.as_str()));
    }
    set_if_changed(&mut b, "name", Value::from(c.name.as_str()));
    let unchanged = b
        .get("input")
        .is_some_and(|i| arguments_text(i) == c.arguments);
    if !unchanged {
        b.insert("input".into(), arguments_value(&c.arguments));
    }
    Value::Object(b)
}

/// Whether a conversation object is an Amp thread (`~/.local/share/amp/
/// threads/T-*.json`): Anthropic messages in an envelope of Amp's own
/// (`id` `T-…`; older threads add `v`, `created`, `env`; exported ones may
/// hold only `id`, `title` and `messages`), not a request body: a request
/// names its `model`.
pub(crate) fn is_amp_thread(env: &Map<String, Value>) -> bool {
    env.get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with("T-"))
        && !env.contains_key("model")
        && !env.contains_key("max_tokens")
}

/// An Amp tool result's output: `run.result`, else `run.progress`, with
/// its key.
fn amp_output(block: &Map<String, Value>) -> Option<(&'static str, &Value)> {
    if !block.contains_key("toolUseID") || block.contains_key("content") {
        return None;
    }
    let run = block.get("run")?.as_object()?;
    ["result", "progress"]
        .into_iter()
        .find_map(|k| Some((k, run.get(k)?)))
}

/// An Amp tool result block with its output updated in `run`.
fn amp_result_value(mut b: Map<String, Value>, m: &Message) -> Value {
    if let Some(id) = &m.tool_call_id {
        set_if_changed(&mut b, "toolUseID", Value::from(id.as_str()));
    }
    let Some((key, orig)) = amp_output(&b).map(|(k, v)| (k, v.clone())) else {
        return Value::Object(b);
    };
    let text = m.content.text();
    let same = serde_json::to_string(&orig).is_ok_and(|s| s == text);
    let new = match &orig {
        Value::Object(_) if same => None,
        Value::String(_) | Value::Object(_) => Some(Value::from(text)),
        _ => content_value(&m.content, Some(&orig)),
    };
    if let (Some(new), Some(Value::Object(run))) = (new, b.get_mut("run")) {
        set_if_changed(run, key, new);
    }
    Value::Object(b)
}

/// A tool_result block: the original with its content updated.
fn tool_result_value(m: &Message) -> Value {
    if m.fields.get("type").and_then(Value::as_str) == Some("tool_result")
        && amp_output(&m.fields).is_some()
    {
        return amp_result_value(m.fields.clone().into_map(), m);
    }
    let mut b = if m.fields.get("type").and_then(Value::as_str) == Some("tool_result") {
        m.fields.clone().into_map()
    } else {
        let mut b = Map::new();
        b.insert("type".into(), Value::from("tool_result"));
        b
    };
    if let Some(id) = &m.tool_call_id {
        // An Amp block without its run's output names its call as Amp does.
        let key = if b.contains_key("toolUseID") && !b.contains_key("tool_use_id") {
            "toolUseID"
        } else {
            "tool_use_id"
        };
        set_if_changed(&mut b, key, Value::from(id.as_str()));
    }
    let orig = b.get("content").cloned();
    match content_value(&m.content, orig.as_ref()) {
        Some(v) => set_if_changed(&mut b, "content", v),
        None => {
            b.shift_remove("content");
        }
    }
    Value::Object(b)
}

/// An Anthropic content block for a part of any format.
fn block(p: &Part, index: Option<usize>, losses: &mut Vec<Loss>) -> Option<Value> {
    match &p.kind {
        PartKind::Text(t) => Some(text_block(t)),
        PartKind::Image(_) => {
            if p.raw.get("type").and_then(Value::as_str) == Some("image")
                && p.raw.get("source").is_some()
            {
                return Some(Value::clone(&p.raw));
            }
            let url = crate::format::dialect::image_url(&p.raw)?;
            let mut source = Map::new();
            match convert::split_data_url(&url) {
                Some((media, data)) => {
                    source.insert("type".into(), Value::from("base64"));
                    source.insert("media_type".into(), Value::from(media));
                    source.insert("data".into(), Value::from(data));
                }
                None => {
                    source.insert("type".into(), Value::from("url"));
                    source.insert("url".into(), Value::from(url));
                }
            }
            let mut b = Map::new();
            b.insert("type".into(), Value::from("image"));
            b.insert("source".into(), Value::Object(source));
            Some(Value::Object(b))
        }
        PartKind::Other => {
            let ty = part_type(&p.raw);
            if ["thinking", "redacted_thinking", "document"].contains(&ty.as_str()) {
                Some(Value::clone(&p.raw))
            } else {
                losses.push(Loss::at(
                    index,
                    format!("{ty} part"),
                    "anthropic cannot express it",
                ));
                None
            }
        }
    }
}

/// The blocks of a message's content. Text that is only white space is
/// left out, and said: Anthropic answers 400 `text content blocks must
/// contain non-whitespace text`.
fn blocks_of(content: &Content, index: Option<usize>, losses: &mut Vec<Loss>) -> Vec<Value> {
    let mut blank = |t: &str| {
        let is = t.trim().is_empty();
        if is && !t.is_empty() {
            losses.push(Loss::at(
                index,
                "white-space-only text",
                "anthropic rejects text blocks without non-whitespace text",
            ));
        }
        is
    };
    match content {
        Content::Absent | Content::Null => Vec::new(),
        Content::Text(s) if blank(s) => Vec::new(),
        Content::Text(s) => vec![text_block(s)],
        Content::Parts(parts) => parts
            .iter()
            .filter(|p| !matches!(&p.kind, PartKind::Text(t) if blank(t)))
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|p| block(p, index, losses))
            .collect(),
    }
}

/// Anthropic messages for messages of any format: system prompts go to the
/// envelope's `system`, tool results into the user turn after their call.
pub(crate) fn new_messages(
    msgs: &[&Message],
    env: &mut Map<String, Value>,
    losses: &mut Vec<Loss>,
) -> Vec<Map<String, Value>> {
    let pairing = Pairing::new(msgs);
    // Ids for id-less calls, so results can name them.
    let call_id = |i: usize, c: usize| -> String {
        msgs[i].calls()[c]
            .id
            .clone()
            .unwrap_or_else(|| format!("toolu_ctxclean_{i}_{c}"))
    };
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let push = |role: &str, blocks: Vec<Value>, merge: bool, out: &mut Vec<Map<String, Value>>| {
        if merge {
            if let Some(last) = out.last_mut() {
                if last.get("role").and_then(Value::as_str) == Some(role) {
                    if let Some(Value::Array(existing)) = last.get_mut("content") {
                        existing.extend(blocks);
                        return;
                    }
                }
            }
        }
        let mut m = Map::new();
        m.insert("role".into(), Value::from(role));
        m.insert("content".into(), Value::Array(blocks));
        out.push(m);
    };
    for (i, m) in msgs.iter().enumerate() {
        let index = m.input_index();
        if m.name.is_some() && !m.role.is_result() {
            losses.push(Loss::at(
                index,
                "participant name",
                "anthropic messages have no name",
            ));
        }
        match m.role {
            Role::System | Role::Developer => {
                if !out.is_empty() {
                    losses.push(Loss::at(
                        index,
                        "place of a system message",
                        "anthropic takes system instructions only at the start; moved there",
                    ));
                }
                let text: Vec<String> = blocks_of(&m.content, index, losses)
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string))
                    .collect();
                let text = text.join("\n");
                if text.is_empty() {
                    continue; // nothing left to say (its parts are reported)
                }
                match env.get_mut("system") {
                    Some(Value::String(s)) => {
                        s.push_str("\n\n");
                        s.push_str(&text);
                    }
                    Some(Value::Array(blocks)) => blocks.push(text_block(&text)),
                    _ => {
                        env.insert("system".into(), Value::from(text));
                    }
                }
            }
            Role::User => {
                let blocks = blocks_of(&m.content, index, losses);
                if !blocks.is_empty() {
                    push("user", blocks, true, &mut out);
                }
            }
            Role::Assistant => {
                let mut blocks = blocks_of(&m.content, index, losses);
                for (c, call) in m.calls().iter().enumerate() {
                    let mut b = Map::new();
                    b.insert("type".into(), Value::from("tool_use"));
                    b.insert("id".into(), Value::from(call_id(i, c)));
                    b.insert("name".into(), Value::from(call.name.as_str()));
                    let input = convert::object_arguments(call, index, "anthropic", losses);
                    b.insert("input".into(), input);
                    blocks.push(Value::Object(b));
                }
                // Consecutive assistant messages are one turn (the API
                // merges them too); one left with nothing is not written.
                if !blocks.is_empty() {
                    push("assistant", blocks, true, &mut out);
                }
            }
            Role::Tool | Role::Function => {
                let id = match pairing.result_of(i) {
                    Some(r) => call_id(r.message, r.call),
                    None => m.tool_call_id.clone().unwrap_or_default(),
                };
                let mut b = Map::new();
                b.insert("type".into(), Value::from("tool_result"));
                b.insert("tool_use_id".into(), Value::from(id));
                let content = match &m.content {
                    Content::Text(s) => Value::from(s.as_str()),
                    c => Value::Array(blocks_of(c, index, losses)),
                };
                b.insert("content".into(), content);
                // Gemini CLI marks a failed call `"status": "error"`.
                let failed = m.fields.get("is_error") == Some(&Value::Bool(true))
                    || m.fields.get("status").and_then(Value::as_str) == Some("error");
                if failed {
                    b.insert("is_error".into(), Value::Bool(true));
                }
                push("user", vec![Value::Object(b)], true, &mut out);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn user_turns_split_into_results_and_text() {
        let rec = obj(
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"next?"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"x"}],"is_error":true}]}"#,
        );
        let msgs = read_message(&Fields::from(rec.clone())).unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0].role, Role::Tool);
        assert_eq!(msgs[1].role, Role::User);
        assert_eq!(msgs[2].tool_call_id.as_deref(), Some("t2"));
        let refs: Vec<&Message> = msgs.iter().collect();
        assert_eq!(write_message(&rec, &refs).unwrap(), rec);
        // Dropping a result drops its block only.
        let out = write_message(&rec, &[&msgs[1], &msgs[2]]).unwrap();
        assert_eq!(out["content"].as_array().unwrap().len(), 2);
        assert_eq!(out["content"][0]["type"], "text");
    }

    #[test]
    fn assistant_blocks_keep_their_order() {
        let rec = obj(
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a.rs"}},{"type":"text","text":"after"}]}"#,
        );
        let msgs = read_message(&Fields::from(rec.clone())).unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].calls()[0].arguments, r#"{"path":"a.rs"}"#);
        assert_eq!(write_message(&rec, &[&msgs[0]]).unwrap(), rec);
        let mut m = msgs[0].clone();
        m.tool_calls = None;
        let out = write_message(&rec, &[&m]).unwrap();
        let types: Vec<&str> = out["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["thinking", "text", "text"]);
    }

    #[test]
    fn converts_openai_messages() {
        let doc = crate::format::read_document(
            "t",
            br#"{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"done"},{"role":"user","content":"thanks"}]}"#.to_vec(),
            &Default::default(),
        )
        .unwrap();
        let msgs: Vec<&Message> = doc.conversations[0].messages.iter().collect();
        let mut env = Map::new();
        let mut losses = Vec::new();
        let out = new_messages(&msgs, &mut env, &mut losses);
        assert_eq!(env["system"], "be brief");
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"done"},{"type":"text","text":"thanks"}]}]"#
        );
        assert!(losses.is_empty());
    }
}
