//! OpenAI Chat Completions messages ↔ the transcript model.
//!
//! Reading keeps the message object as it came in [`Message::fields`];
//! writing starts from that object and puts the typed fields back over it,
//! in their original place, so that an unchanged message comes out as the
//! same JSON value with the same key order.
//!
//! The legacy `function_call` field is read as a single tool call without an
//! id and written back to `function_call`.

use serde_json::{Map, Value};

use crate::format::convert;
use crate::format::dialect::{Dialect, Fault, Loss};
use crate::transcript::{
    Content, Fields, Image, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// The keys of an OpenAI message that the typed model carries.
const MODELLED: &[&str] = &[
    "role",
    "content",
    "tool_calls",
    "function_call",
    "tool_call_id",
    "tool_call_ids",
    "name",
];

/// OpenAI Chat Completions: a `messages` list of message objects (or, in
/// SWE-agent trajectories, a `history` list of them).
pub(crate) struct OpenAi;

impl Dialect for OpenAi {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if let Some(path) = crate::format::wrap::list_path(obj, "messages") {
            Some(path)
        } else if let Some(path) = crate::format::wrap::output_choices(obj) {
            Some(path)
        } else if crate::format::answer::format_of(obj) == Some(crate::format::Format::OpenAi) {
            // A `chat.completion`: its choices wrap the message.
            Some(&["choices"])
        } else if obj.contains_key("trajectory") && obj.get("history").is_some_and(Value::is_array)
        {
            // SWE-agent trajectories.
            Some(&["history"])
        } else {
            None
        }
    }

    /// Chatbot UI exports keep their conversations under `history`.
    fn conversations_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        let list = obj.get("history")?.as_array()?;
        let export = obj.contains_key("folders") || obj.contains_key("prompts");
        (export
            && list
                .iter()
                .all(|c| c.get("messages").is_some_and(Value::is_array)))
        .then_some(&["history"][..])
    }

    /// A Chatbot UI conversation's system prompt (`prompt`), which it sends
    /// first.
    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        Ok(match chatbot_ui_prompt(env) {
            Some(p) if !p.is_empty() => vec![Message::from(MessageData {
                fields: Fields::new(),
                ..MessageData::new(Role::System, p)
            })],
            _ => Vec::new(),
        })
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        if chatbot_ui_prompt(env).is_some() {
            let text = msgs.first().map(|m| m.content.text()).unwrap_or_default();
            crate::format::dialect::set_if_changed(env, "prompt", Value::from(text));
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if crate::format::stream::is_event(crate::format::Format::OpenAi, rec) {
            // Read together once all are (see `after_read`).
            return Ok(Vec::new());
        }
        // A choice of a completion (a Batch API output line's
        // `response.body.choices`): its message.
        if let Some(Value::Object(m)) = choice_message(rec) {
            return parse_message(m.clone()).map(|m| vec![m]);
        }
        // mini-swe-agent ends its trajectories with `{"role": "exit"}`: the
        // agent's own record of how it stopped, never sent; kept in place.
        // So are Kimi CLI's `{"role": "_checkpoint", "id": 3}` and
        // `{"role": "_usage", "token_count": 6131}` lines in its
        // `context.jsonl`: a role starting with `_` is the agent's own.
        if rec
            .get("role")
            .and_then(Value::as_str)
            .is_some_and(|r| r == "exit" || r.starts_with('_'))
        {
            return Ok(Vec::new());
        }
        parse_message(rec.clone()).map(|m| vec![m])
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if crate::format::stream::is_event(crate::format::Format::OpenAi, rec) {
            return Some(rec.clone());
        }
        if choice_message(rec).is_some() {
            let mut out = rec.clone();
            let m = msgs.first()?;
            set_choice(&mut out, message_value(m));
            return Some(out);
        }
        match result_items(rec) {
            Some(items)
                if msgs
                    .iter()
                    .any(|m| m.origin.as_ref().is_some_and(|o| o.sub > 0))
                    || msgs.len() > 1 =>
            {
                Some(join_results(rec, &items, msgs))
            }
            _ => msgs.first().map(|m| message_value(m)),
        }
    }

    fn untouched(&self, rec: &Fields, msgs: &[&Message]) -> bool {
        match msgs {
            // A choice is never untouched: the message's fields say a
            // `role`, which a choice has not (`same_fields`), so it is not
            // looked for here, which would parse a record held as its span.
            [m] if m.origin.as_ref().is_some_and(|o| o.sub == 0) => {
                let same = untouched(rec, m);
                debug_assert!(
                    !same || (choice_message(rec).is_none() && **rec == message_value(m)),
                    "untouched, but rewritten"
                );
                same
            }
            _ => false,
        }
    }

    fn seal(&self, rec: &Map<String, Value>, msgs: &mut [Message]) {
        if let [m] = msgs {
            if same_fields(rec, m) {
                let seal = m.typed_digest();
                if let Some(o) = m.origin.as_mut() {
                    o.seal = seal;
                }
            }
        }
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let records = msgs.iter().filter_map(|m| record_value(m, losses));
        records.map(Value::Object).collect()
    }

    fn new_record_texts(
        &self,
        msgs: &[&Message],
        losses: &mut Vec<Loss>,
    ) -> Option<Vec<std::sync::Arc<str>>> {
        Some(msgs.iter().filter_map(|m| record_text(m, losses)).collect())
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        if let Err(e) = crate::format::stream::read(crate::format::Format::OpenAi, conv) {
            conv.notes
                .push(format!("the stream's chunks make no message: {e}"));
        }
        crate::format::placeholders::attach_images(conv);
        split_results(conv);
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        m.fields
            .keys()
            .filter(|k| !MODELLED.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// The system prompt of a Chatbot UI conversation
/// (`{id, name, messages, model, prompt, temperature, folderId}`).
fn chatbot_ui_prompt(env: &Map<String, Value>) -> Option<&str> {
    if !env.contains_key("folderId") || !env.contains_key("name") {
        return None;
    }
    env.get("prompt")?.as_str()
}

/// The message a record wraps: a completion's choice (`{index, message,
/// finish_reason}`).
fn choice_message(rec: &Map<String, Value>) -> Option<&Value> {
    if rec.contains_key("role") || rec.contains_key("type") {
        return None;
    }
    rec.get("message")
        .filter(|m| m.get("role").is_some_and(Value::is_string))
}

/// Puts a message back into its choice, keeping the choice's other keys.
fn set_choice(choice: &mut Map<String, Value>, message: Map<String, Value>) {
    if choice.get("message").and_then(Value::as_object) != Some(&message) {
        choice.insert("message".into(), Value::Object(message));
    }
}

/// Reads one message object.
pub(crate) fn parse_message(fields: impl Into<Fields>) -> Result<Message, Fault> {
    let fields: Fields = fields.into();
    let role = match fields.get("role") {
        Some(Value::String(r)) => Role::parse(r).ok_or_else(|| {
            format!(
                "unknown role \"{r}\" (expected system, developer, user, assistant, tool or function)"
            )
        })?,
        Some(_) => return Err("\"role\" must be a string".into()),
        None => return Err("message has no \"role\"".into()),
    };
    let mut content = match fields.get("content") {
        None => Content::Absent,
        Some(v) => parse_content(v)?,
    };
    let mut tool_calls = match fields.get("tool_calls") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    parse_tool_call(c, false).map_err(|e| format!("tool_calls[{i}]: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        // Training sets (MiniMind, …) keep the calls as JSON text, or "".
        Some(Value::String(text)) => string_calls(text)?,
        Some(_) => return Err("\"tool_calls\" must be a list".into()),
    };
    if tool_calls.is_none() {
        match fields.get("function_call") {
            None | Some(Value::Null) => {}
            Some(v @ Value::Object(_)) => {
                let call = parse_tool_call(v, false).map_err(|e| format!("function_call: {e}"))?;
                tool_calls = Some(vec![call]);
            }
            Some(_) => return Err("\"function_call\" must be an object".into()),
        }
    }
    if tool_calls.is_none() {
        tool_calls = calls_in_parts(&mut content);
    }
    let mut tool_call_id = optional_string(&fields, "tool_call_id")?;
    if tool_call_id.is_none() {
        // SWE-agent writes a list of one id.
        if let Some(Value::Array(ids)) = fields.get("tool_call_ids") {
            tool_call_id = ids.first().and_then(Value::as_str).map(str::to_string);
        }
    }
    Ok(Message::from(MessageData {
        role,
        content,
        tool_calls,
        tool_call_id,
        name: optional_string(&fields, "name")?,
        fields,
        origin: None,
        minted: None,
        anchor: None,
    }))
}

/// A LLaMA-Factory v1 `{"type": "tool_call", "value": "{\"name\": …,
/// \"arguments\": …}"}` part as a tool call.
fn part_call(raw: &Value, slot: usize) -> Option<ToolCall> {
    if raw.get("type").and_then(Value::as_str) != Some("tool_call") {
        return None;
    }
    let value: Value = serde_json::from_str(raw.get("value")?.as_str()?).ok()?;
    Some(ToolCall {
        id: value.get("id").and_then(Value::as_str).map(str::to_string),
        name: value.get("name")?.as_str()?.to_string(),
        arguments: convert::arguments_text(value.get("arguments").unwrap_or(&Value::Null)),
        raw: raw.clone().into(),
        slot: Some(slot),
    })
}

/// Tool calls kept as content parts (LLaMA-Factory v1): taken out of the
/// parts, every part and call remembering its place so that writing puts
/// them back in order.
fn calls_in_parts(content: &mut Content) -> Option<Vec<ToolCall>> {
    let Content::Parts(parts) = content else {
        return None;
    };
    if !parts
        .iter()
        .enumerate()
        .any(|(k, p)| part_call(&p.raw, k).is_some())
    {
        return None;
    }
    let mut calls = Vec::new();
    let mut rest = Vec::with_capacity(parts.len());
    for (k, p) in std::mem::take(parts).into_iter().enumerate() {
        match part_call(&p.raw, k) {
            Some(c) => calls.push(c),
            None => rest.push(Part { slot: Some(k), ..p }),
        }
    }
    *parts = rest;
    Some(calls)
}

/// The results a LLaMA-Factory v1 tool message holds for several calls: its
/// one text part's value, a JSON list with one item per call.
fn result_items(rec: &Map<String, Value>) -> Option<Vec<Value>> {
    if crate::json::get(rec, "role").and_then(Value::as_str) != Some("tool") {
        return None;
    }
    let [part] = crate::json::get(rec, "content")?.as_array()?.as_slice() else {
        return None;
    };
    if crate::json::field(part, "type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    match serde_json::from_str(crate::json::field(part, "value")?.as_str()?).ok()? {
        Value::Array(items) if items.len() > 1 => Some(items),
        _ => None,
    }
}

/// The text of one result item: its `content`, or the item itself.
fn item_text(item: &Value) -> String {
    match item.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => convert::arguments_text(item),
    }
}

/// A tool message answering every call of the assistant message before it
/// (LLaMA-Factory v1 writes one, holding a list of results, for parallel
/// calls) becomes one result per call, so that each call is answered.
fn split_results(conv: &mut crate::transcript::Conversation) {
    // Find the results to split first: most conversations have none and are
    // left as they are, not copied.
    let mut splits: Vec<(usize, Vec<Value>)> = Vec::new();
    let mut open = 0; // calls of the latest assistant message, kept in parts
    for (i, m) in conv.messages.iter().enumerate() {
        if m.has_calls() {
            let in_parts = m.calls().iter().all(|c| c.slot.is_some() && c.id.is_none());
            open = if in_parts { m.calls().len() } else { 0 };
            continue;
        }
        if !m.role.is_result() {
            open = 0;
            continue;
        }
        // Only a `tool` message with a list of parts splits (see
        // `result_items`): the others are not parsed to find that out.
        if m.role != Role::Tool || !matches!(m.content, Content::Parts(_)) {
            continue;
        }
        match m.fields.peek(result_items) {
            Some(items) if items.len() == open && m.tool_call_id.is_none() => {
                splits.push((i, items));
                open = 0;
            }
            _ => {}
        }
    }
    if splits.is_empty() {
        return;
    }
    let msgs = std::mem::take(&mut conv.messages);
    let extra: usize = splits.iter().map(|(_, items)| items.len() - 1).sum();
    let mut out = Vec::with_capacity(msgs.len() + extra);
    let mut splits = splits.into_iter().peekable();
    for (i, m) in msgs.into_iter().enumerate() {
        let Some((_, items)) = splits.next_if(|(k, _)| *k == i) else {
            out.push(m);
            continue;
        };
        for (sub, item) in items.iter().enumerate() {
            let mut r = m.clone();
            r.content = Content::Text(item_text(item));
            r.name = item.get("name").and_then(Value::as_str).map(str::to_string);
            if let Some(o) = r.origin.as_mut() {
                o.sub = sub;
            }
            out.push(r);
        }
    }
    conv.messages = out;
}

/// A split tool message written back: the items of the results that
/// survive, each as it came unless its result changed.
fn join_results(
    rec: &Map<String, Value>,
    items: &[Value],
    msgs: &[&Message],
) -> Map<String, Value> {
    let mut kept = Vec::with_capacity(msgs.len());
    for m in msgs {
        let i = m.origin.as_ref().map_or(0, |o| o.sub);
        let text = m.content.text();
        let item = match items.get(i) {
            Some(item) if item_text(item) == text => item.clone(),
            Some(Value::Object(item)) if item.contains_key("content") => {
                let mut item = item.clone();
                item.insert("content".into(), Value::from(text));
                Value::Object(item)
            }
            _ => Value::from(text),
        };
        kept.push(item);
    }
    if kept.as_slice() == items {
        return rec.clone();
    }
    let mut out = rec.clone();
    if let Some(Value::Array(parts)) = out.get_mut("content") {
        if let Some(Value::Object(part)) = parts.first_mut() {
            part.insert("value".into(), Value::from(Value::Array(kept).to_string()));
        }
    }
    out
}

/// A tool call kept as a content part, written back: the part as it came
/// when the call is unchanged.
fn call_part_value(c: &ToolCall) -> Value {
    if let Some(orig) = part_call(&c.raw, 0) {
        if orig.name == c.name && orig.arguments == c.arguments && orig.id == c.id {
            return Value::clone(&c.raw);
        }
    }
    let mut value = Map::new();
    value.insert("name".into(), Value::from(c.name.as_str()));
    value.insert("arguments".into(), convert::arguments_value(&c.arguments));
    let mut part = c.raw.as_object().cloned().unwrap_or_default();
    part.insert("type".into(), Value::from("tool_call"));
    part.insert(
        "value".into(),
        Value::from(Value::Object(value).to_string()),
    );
    Value::Object(part)
}

/// Content whose parts include tool calls (LLaMA-Factory v1), parts and
/// calls in their original order, new ones after.
fn content_with_calls(m: &Message) -> Value {
    let mut items: Vec<(usize, Value)> = Vec::new();
    let mut fresh = usize::MAX / 2;
    for p in m.content.parts() {
        let slot = p.slot.unwrap_or_else(|| {
            fresh += 1;
            fresh
        });
        items.push((slot, p.to_value()));
    }
    for c in m.calls() {
        let slot = c.slot.unwrap_or_else(|| {
            fresh += 1;
            fresh
        });
        items.push((slot, call_part_value(c)));
    }
    items.sort_by_key(|(slot, _)| *slot);
    Value::Array(items.into_iter().map(|(_, v)| v).collect())
}

fn optional_string(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, Fault> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("\"{key}\" must be a string")),
    }
}

/// Reads a content value: a string, null, or a list of parts.
pub(crate) fn parse_content(v: &Value) -> Result<Content, Fault> {
    match v {
        Value::Null => Ok(Content::Null),
        Value::String(s) => Ok(Content::Text(s.clone())),
        Value::Array(items) => Ok(Content::Parts(items.iter().map(parse_part).collect())),
        _ => Err("\"content\" must be a string, null or a list of parts".into()),
    }
}

/// Reads one content part; a part of an unknown kind is kept as it is.
pub(crate) fn parse_part(v: &Value) -> Part {
    let kind = match v {
        Value::String(s) => PartKind::Text(s.clone()),
        Value::Object(map) => {
            let ty = map.get("type").and_then(Value::as_str).unwrap_or("");
            match ty {
                "text" | "input_text" | "output_text" => {
                    match map.get(crate::transcript::text_key(map)) {
                        Some(Value::String(t)) => PartKind::Text(t.clone()),
                        _ => PartKind::Other,
                    }
                }
                "image_url" | "input_image" => match map.get("image_url") {
                    Some(Value::String(url)) => PartKind::Image(Image::from_url(url)),
                    Some(Value::Object(o)) => PartKind::Image(Image {
                        detail: o.get("detail").and_then(Value::as_str).map(str::to_string),
                        ..Image::from_url(o.get("url").and_then(Value::as_str).unwrap_or(""))
                    }),
                    _ => PartKind::Image(Image::default()),
                },
                "image" => PartKind::Image(image_block(map)),
                _ => PartKind::Other,
            }
        }
        _ => PartKind::Other,
    };
    Part {
        kind,
        raw: v.clone().into(),
        slot: None,
    }
}

/// An Anthropic `image` block (`source: {type: base64, media_type, data}` or
/// a URL), or LangChain's standard image block (`url` / `base64` + `mime_type`).
pub(crate) fn image_block(map: &Map<String, Value>) -> Image {
    let str_of =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(Value::Object(src)) = map.get("source") {
        if let Some(url) = src.get("url").and_then(Value::as_str) {
            return Image::from_url(url);
        }
        return match src.get("data").and_then(Value::as_str) {
            Some(data) => Image::inline(str_of(src, "media_type"), data),
            None => Image {
                media_type: str_of(src, "media_type"),
                ..Image::default()
            },
        };
    }
    if let Some(url) = map.get("url").and_then(Value::as_str) {
        return Image::from_url(url);
    }
    // MCP's image content (pi's and Goose's blocks): `data` and `mimeType`.
    if let Some(data) = map.get("data").and_then(Value::as_str) {
        return Image::inline(str_of(map, "mimeType").or(str_of(map, "mime_type")), data);
    }
    match map.get("base64").and_then(Value::as_str) {
        Some(data) => Image::inline(str_of(map, "mime_type"), data),
        None => Image {
            media_type: str_of(map, "mime_type"),
            ..Image::default()
        },
    }
}

/// Reads one tool call: `{id, type, function: {name, arguments}}`, a custom
/// tool call `{custom: {name, input}}`, or a legacy `{name, arguments}`.
/// Tool calls kept as a JSON text (`"tool_calls": "[{…}]"`, or `""` for
/// none), as training sets write them; arguments may be objects there.
fn string_calls(text: &str) -> Result<Option<Vec<ToolCall>>, Fault> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, c)| parse_tool_call(c, true).map_err(|e| format!("tool_calls[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err("\"tool_calls\" must be a list, or a JSON text of one".into()),
    }
}

/// `tool_calls` written back as JSON text, as it came when no call changed.
fn string_calls_value(orig: &str, calls: Option<&[ToolCall]>) -> Value {
    let same = match (string_calls(orig), calls) {
        (Ok(None), None | Some([])) => true,
        (Ok(Some(old)), Some(new)) => {
            old.len() == new.len()
                && old
                    .iter()
                    .zip(new)
                    .all(|(a, b)| a.name == b.name && a.arguments == b.arguments && a.id == b.id)
        }
        _ => false,
    };
    if same {
        return Value::from(orig);
    }
    let list: Vec<Value> = calls
        .unwrap_or_default()
        .iter()
        .map(tool_call_value)
        .collect();
    if list.is_empty() {
        Value::from("")
    } else {
        Value::from(Value::Array(list).to_string())
    }
}

fn parse_tool_call(v: &Value, lenient: bool) -> Result<ToolCall, Fault> {
    let Value::Object(map) = v else {
        return Err("a tool call must be an object".into());
    };
    let get = |key| crate::json::get(map, key);
    let id = match get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"id\" must be a string".into()),
    };
    let (body, args_key) = match (get("function"), get("custom")) {
        (Some(Value::Object(f)), _) => (f, "arguments"),
        (Some(_), _) => return Err("\"function\" must be an object".into()),
        (None, Some(Value::Object(c))) => (c, "input"),
        (None, _) if map.contains_key("name") => (map, "arguments"),
        (None, _) => return Err("tool call has no \"function\"".into()),
    };
    let name = match crate::json::get(body, "name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("the function \"name\" must be a string".into()),
        None => return Err("the function has no \"name\"".into()),
    };
    // Ollama's `/api/chat` writes a call without id or type, its arguments
    // an object; the OpenAI API never does.
    let ollama = id.is_none() && !map.contains_key("type") && map.contains_key("function");
    let arguments = match crate::json::get(body, args_key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) if lenient || ollama => convert::arguments_text(v),
        Some(_) => {
            return Err(format!(
                "\"{args_key}\" must be a JSON-encoded string, not a JSON value"
            ))
        }
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
        raw: v.clone().into(),
        slot: None,
    })
}

/// Writes a tool call back over its original JSON.
pub(crate) fn tool_call_value(call: &ToolCall) -> Value {
    let mut map = match &*call.raw {
        Value::Object(m) => m.clone(),
        _ => {
            let mut m = Map::new();
            if let Some(id) = &call.id {
                m.insert("id".into(), Value::from(id.as_str()));
            }
            m.insert("type".into(), Value::from("function"));
            m.insert("function".into(), Value::Object(Map::new()));
            m
        }
    };
    match (&call.id, crate::json::get(&map, "id")) {
        (Some(id), Some(Value::String(old))) if old == id => {}
        (Some(id), _) => {
            map.insert("id".into(), Value::from(id.as_str()));
        }
        (None, Some(Value::String(_))) => {
            map.shift_remove("id");
        }
        (None, _) => {}
    }
    let set = |body: &mut Map<String, Value>, key: &str, value: &str| {
        if crate::json::get(body, key).and_then(Value::as_str) != Some(value) {
            body.insert(key.to_string(), Value::from(value));
        }
    };
    if let Some(Value::Object(f)) = map.get_mut("function") {
        set(f, "name", &call.name);
        // Arguments that came as an object (Ollama) stay one.
        match f.get("arguments") {
            Some(Value::Object(_) | Value::Array(_)) => {
                let value = convert::arguments_value(&call.arguments);
                f.insert("arguments".into(), value);
            }
            _ => set(f, "arguments", &call.arguments),
        }
    } else if let Some(Value::Object(c)) = map.get_mut("custom") {
        set(c, "name", &call.name);
        set(c, "input", &call.arguments);
    } else {
        set(&mut map, "name", &call.name);
        set(&mut map, "arguments", &call.arguments);
    }
    Value::Object(map)
}

/// Whether [`tool_call_value`] of `call` is `item`, told without building
/// it when the call still says what the object it came as says (a call no
/// operation touched): that object is then what it would give.
fn tool_call_is(call: &ToolCall, item: &Value) -> bool {
    let Value::Object(map) = &*call.raw else {
        return tool_call_value(call) == *item;
    };
    let id_kept = match (&call.id, map.get("id")) {
        (Some(id), Some(Value::String(old))) => old == id,
        (Some(_), _) | (None, Some(Value::String(_))) => false,
        (None, _) => true,
    };
    let says = |m: &Map<String, Value>, key: &str, value: &str| {
        m.get(key).and_then(Value::as_str) == Some(value)
    };
    let kept = id_kept
        && match (map.get("function"), map.get("custom")) {
            (Some(Value::Object(f)), _) => {
                says(f, "name", &call.name)
                    && matches!(f.get("arguments"), Some(Value::String(a)) if *a == call.arguments)
            }
            (_, Some(Value::Object(c))) => {
                says(c, "name", &call.name) && says(c, "input", &call.arguments)
            }
            _ => says(map, "name", &call.name) && says(map, "arguments", &call.arguments),
        };
    if kept {
        return *call.raw == *item;
    }
    tool_call_value(call) == *item
}

/// Writes a content value.
pub(crate) fn content_value(content: &Content, original: Option<&Value>) -> Option<Value> {
    Some(match content {
        Content::Absent => return None,
        Content::Null => Value::Null,
        Content::Text(s) => match original {
            Some(Value::String(o)) if o == s => Value::String(o.clone()),
            _ => Value::String(s.clone()),
        },
        Content::Parts(parts) => match crate::format::placeholders::inline_text(content) {
            // Text with `<image>` tokens, read into parts: one string again.
            Some(s) => match original {
                Some(Value::String(o)) if *o == s => Value::String(o.clone()),
                _ => Value::String(s),
            },
            None => Value::Array(parts.iter().map(Part::to_value).collect()),
        },
    })
}

/// Whether [`message_value`] would give `rec` back, told without building
/// it, for the common shapes: a message whose object is still the record's
/// (no operation changed it) and whose typed fields still say what the
/// record says, with string or null content. Any other shape
/// answers `false` and is rebuilt and compared.
fn untouched(rec: &Fields, m: &Message) -> bool {
    if !m.fields.shares(rec) {
        return false;
    }
    match m.origin.as_ref().map_or(0, |o| o.seal) {
        // Sealed when read (see `Dialect::seal`): the record said then what
        // the typed fields said, and they still say it when the digest is
        // the same.
        0 => {}
        seal => return m.typed_digest() == seal,
    }
    // Looked at without keeping a parsed copy: a message of a large
    // document is held as its span of the text.
    m.fields.peek(|fields| same_fields(fields, m))
}

/// Whether the typed fields of `m` say what `fields` says (see [`untouched`]).
fn same_fields(fields: &Map<String, Value>, m: &Message) -> bool {
    let same_str = |v: &Option<String>, orig: &Value| match (v, orig) {
        (Some(s), Value::String(o)) => s == o,
        (None, Value::Null) => true,
        _ => false,
    };
    let mut role = false;
    for (key, orig) in fields.iter() {
        let same = match key.as_str() {
            "role" => {
                role = true;
                orig.as_str().and_then(Role::parse) == Some(m.role)
            }
            "content" => match (&m.content, orig) {
                (Content::Text(s), Value::String(o)) => s == o,
                (Content::Null, Value::Null) => true,
                _ => false,
            },
            "tool_call_id" => same_str(&m.tool_call_id, orig),
            "name" => same_str(&m.name, orig),
            // Each call written back over its object gives that object.
            "tool_calls" => match (&m.tool_calls, orig) {
                (None, Value::Null) => true,
                (Some(calls), Value::Array(items)) => {
                    calls.len() == items.len()
                        && calls
                            .iter()
                            .zip(items)
                            .all(|(c, item)| tool_call_is(c, item))
                }
                _ => false,
            },
            "function_call" | "tool_call_ids" => false,
            _ => true,
        };
        if !same {
            return false;
        }
    }
    // Nothing that message_value would add at the end.
    role && (m.name.is_none() || fields.contains_key("name"))
        && (m.tool_call_id.is_none() || fields.contains_key("tool_call_id"))
        && (matches!(m.content, Content::Absent) || fields.contains_key("content"))
        && (m.tool_calls.is_none() || fields.contains_key("tool_calls"))
}

/// The tag of a message's record's text in a new OpenAI request,
/// remembered with what the message says (see `Message::derived`).
const RECORD_TAG: u64 = 0x0be1 << 48;

/// A message's record in a new OpenAI request, as `serde_json` writes it
/// compactly, what writing it lost said at its place: made once for what
/// the message says (replay writes each call's request, its old messages
/// again; a document converted whole is written once, and keeps none).
/// `None`: nothing OpenAI can carry was left in it.
fn record_text(m: &Message, losses: &mut Vec<Loss>) -> Option<std::sync::Arc<str>> {
    let made = m.derived(RECORD_TAG, |_| {
        let mut lost = Vec::new();
        let text = record_value(m, &mut lost).map(|v| {
            let mut text = Vec::new();
            crate::format::numbers::to_writer(&mut text, &v, None, None)
                .expect("writing to memory");
            std::sync::Arc::from(String::from_utf8(text).expect("serde_json writes UTF-8"))
        });
        // All of it follows from what the message says: its place aside.
        for l in &mut lost {
            l.index = None;
        }
        (text, lost)
    });
    let (text, lost) = &*made;
    losses.extend(lost.iter().map(|l| Loss {
        index: m.input_index(),
        ..l.clone()
    }));
    text.clone()
}

/// A message's record in a new OpenAI request (`None`: nothing OpenAI can
/// carry was left in it), what writing it lost said in `losses`.
fn record_value(m: &Message, losses: &mut Vec<Loss>) -> Option<Map<String, Value>> {
    let converted = convert::to_openai(m, losses);
    let nothing = converted.content == crate::transcript::Content::Absent
        && !converted.has_calls()
        && !converted.role.is_result();
    if nothing && m.content != crate::transcript::Content::Absent {
        losses.push(Loss::at(
            m.input_index(),
            "message",
            "nothing openai can carry was left in it",
        ));
        return None;
    }
    Some(message_value(&converted))
}

/// Writes a message: its original object with the typed fields put back in
/// place. Keys the typed model dropped are removed; keys it added come last.
pub(crate) fn message_value(m: &Message) -> Map<String, Value> {
    let calls_value = |legacy: bool| -> Option<Value> {
        let calls = m.tool_calls.as_ref()?;
        if legacy {
            calls.first().map(tool_call_value)
        } else {
            Some(Value::Array(calls.iter().map(tool_call_value).collect()))
        }
    };
    let legacy = m.fields.contains_key("function_call") && !m.fields.contains_key("tool_calls");
    // Calls read from content parts go back there, not to `tool_calls`.
    let in_parts = !m.fields.contains_key("tool_calls")
        && matches!(m.content, Content::Parts(_))
        && m.calls().iter().any(|c| c.slot.is_some());
    let opt_str = |v: &Option<String>, orig: &Value| match v {
        Some(s) => Some(Value::from(s.as_str())),
        None if orig.is_null() => Some(Value::Null),
        None => None,
    };
    let mut out = Map::with_capacity(m.fields.len() + 2);
    for (key, orig) in m.fields.iter() {
        let value = match key.as_str() {
            "role" => Some(match orig.as_str().and_then(Role::parse) {
                Some(r) if r == m.role => orig.clone(),
                _ => Value::from(m.role.as_str()),
            }),
            "content" if in_parts => Some(content_with_calls(m)),
            "content" => content_value(&m.content, Some(orig)),
            "tool_calls" => match (orig, calls_value(false)) {
                (Value::String(text), _) => Some(string_calls_value(text, m.tool_calls.as_deref())),
                (Value::Null, None) => Some(Value::Null),
                (_, v) => v,
            },
            "function_call" if legacy => match calls_value(true) {
                None if orig.is_null() => Some(Value::Null),
                v => v,
            },
            "tool_call_id" => opt_str(&m.tool_call_id, orig),
            "tool_call_ids" if !m.fields.contains_key("tool_call_id") => {
                match (&m.tool_call_id, orig) {
                    (Some(id), Value::Array(ids))
                        if ids.first().and_then(Value::as_str) == Some(id) =>
                    {
                        Some(orig.clone())
                    }
                    (Some(id), _) => Some(Value::Array(vec![Value::from(id.as_str())])),
                    (None, _) => None,
                }
            }
            "name" => opt_str(&m.name, orig),
            _ => Some(orig.clone()),
        };
        if let Some(v) = value {
            out.insert(key.clone(), v);
        }
    }
    if crate::json::get(&out, "role").is_none() {
        out.insert("role".into(), Value::from(m.role.as_str()));
    }
    if !m.fields.contains_key("name") {
        if let Some(name) = &m.name {
            out.insert("name".into(), Value::from(name.as_str()));
        }
    }
    if !m.fields.contains_key("content") {
        if let Some(v) = content_value(&m.content, None) {
            out.insert("content".into(), v);
        }
    }
    if !m.fields.contains_key("tool_calls") && !legacy && !in_parts {
        if let Some(v) = calls_value(false) {
            out.insert("tool_calls".into(), v);
        }
    }
    if !m.fields.contains_key("tool_call_id") && !m.fields.contains_key("tool_call_ids") {
        if let Some(id) = &m.tool_call_id {
            out.insert("tool_call_id".into(), Value::from(id.as_str()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str) -> String {
        let fields: Map<String, Value> = serde_json::from_str(text).unwrap();
        let m = parse_message(fields).unwrap();
        serde_json::to_string(&message_value(&m)).unwrap()
    }

    #[test]
    fn an_mcp_image_block_is_inline_data() {
        // pi's and Goose's image blocks, MCP's shape: they read as an image
        // of unknown size and place, and a note in their place said "by URL".
        let block =
            serde_json::json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
        let img = image_block(block.as_object().unwrap());
        assert_eq!(img.media_type.as_deref(), Some("image/png"));
        assert_eq!(img.bytes, Some(8));
    }

    #[test]
    fn untouched_is_told_only_when_nothing_would_change() {
        let shapes = [
            r#"{"role":"user","content":"hi","sender":"a"}"#,
            r#"{"role":"human","content":"hi"}"#,
            r#"{"role":"assistant","content":null}"#,
            r#"{"role":"tool","tool_call_id":"c1","content":"42"}"#,
            r#"{"role":"user","name":"bob","content":"x"}"#,
            r#"{"role":"user","content":[{"type":"text","text":"x"}]}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"role":"user","name":null,"content":"x"}"#,
            r#"{"role":"user"}"#,
            r#"{"role":"assistant","content":"go","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"custom","custom":{"name":"g","input":"x"}}]}"#,
            r#"{"role":"assistant","content":"x","tool_calls":null}"#,
            r#"{"role":"assistant","tool_calls":"[{\"name\":\"f\"}]"}"#,
            r#"{"role":"assistant","tool_calls":[{"name":"f","arguments":"{}"}]}"#,
        ];
        let edits: [fn(&mut Message); 11] = [
            |_| {},
            |m| m.content = Content::Text("changed".into()),
            |m| m.name = Some("eve".into()),
            |m| m.tool_call_id = Some("other".into()),
            |m| m.role = Role::System,
            |m| {
                m.fields.shift_remove("sender");
            },
            |m| m.tool_calls = None,
            |m| m.tool_calls = Some(Vec::new()),
            |m| {
                if let Some(c) = m.tool_calls.as_mut().and_then(|c| c.first_mut()) {
                    c.arguments = "{\"x\":1}".into();
                }
            },
            |m| {
                if let Some(c) = m.tool_calls.as_mut().and_then(|c| c.last_mut()) {
                    c.name = "h".into();
                    c.id = None;
                }
            },
            |m| {
                if let Some(calls) = m.tool_calls.as_mut() {
                    calls.pop();
                }
            },
        ];
        let mut told = 0;
        for text in shapes {
            let rec = Fields::from(serde_json::from_str::<Map<String, Value>>(text).unwrap());
            // As read from a record (origin set), and sealed when read (see
            // `Dialect::seal`): the answer comes from the digests then.
            let read = |sealed: bool| {
                let mut m = parse_message(rec.clone()).unwrap();
                m.origin = Some(crate::transcript::Origin {
                    index: 0,
                    line: 1,
                    record: Some(0),
                    sub: 0,
                    seal: 0,
                });
                if sealed {
                    OpenAi.seal(&rec, std::slice::from_mut(&mut m));
                }
                m
            };
            for sealed in [false, true] {
                for edit in edits {
                    let mut m = read(sealed);
                    edit(&mut m);
                    let same = *rec == message_value(&m);
                    if untouched(&rec, &m) {
                        assert!(same, "{text}: told untouched, but written otherwise");
                        told += 1;
                    }
                }
                // A message read and left alone is told untouched in the
                // common shapes, calls included.
                let m = read(sealed);
                let common =
                    !text.contains(r#""content":["#) && !text.contains(r#""tool_calls":""#);
                assert_eq!(untouched(&rec, &m), common, "{text}");
                assert_eq!(
                    m.origin.as_ref().unwrap().seal != 0,
                    sealed && common,
                    "{text}"
                );
            }
        }
        assert!(told >= 20, "{told}");
    }

    #[test]
    fn unchanged_messages_round_trip_exactly() {
        for text in [
            r#"{"role":"user","content":"hi","sender":"bob","agentId":"a1","createdAt":1.50}"#,
            r#"{"content":null,"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"index":0}]}"#,
            r#"{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"x"}]}"#,
            r#"{"role":"assistant","content":"go","function_call":{"name":"f","arguments":"{\n}"}}"#,
            r#"{"role":"function","name":"f","content":"{'price': 1}"}"#,
            r#"{"role":"user","content":[{"type":"image_url","image_url":"pic.png"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}"#,
            r#"{"role":"assistant","content":"x","tool_calls":null,"name":null}"#,
            r#"{"role":"human","content":"aliased role kept"}"#,
        ] {
            assert_eq!(roundtrip(text), text);
        }
    }

    #[test]
    fn changes_stay_in_place() {
        let fields: Map<String, Value> = serde_json::from_str(
            r#"{"role":"assistant","content":"keep","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"sender":"a"}"#,
        )
        .unwrap();
        let mut m = parse_message(fields).unwrap();
        m.tool_calls = None;
        m.content = Content::Text("changed".into());
        assert_eq!(
            serde_json::to_string(&message_value(&m)).unwrap(),
            r#"{"role":"assistant","content":"changed","sender":"a"}"#
        );
    }

    #[test]
    fn new_messages_get_the_usual_key_order() {
        let mut m = Message::new(Role::Tool, "r");
        m.tool_call_id = Some("c1".into());
        assert_eq!(
            serde_json::to_string(&message_value(&m)).unwrap(),
            r#"{"role":"tool","content":"r","tool_call_id":"c1"}"#
        );
    }

    #[test]
    fn faults_are_explained() {
        let bad = |t: &str| {
            parse_message(serde_json::from_str::<Map<String, Value>>(t).unwrap()).unwrap_err()
        };
        assert_eq!(bad(r#"{"content":"x"}"#), "message has no \"role\"");
        assert!(bad(r#"{"role":"bot"}"#).contains("unknown role \"bot\""));
        assert!(bad(r#"{"role":"user","content":5}"#).contains("\"content\" must be"));
        assert_eq!(
            bad(r#"{"role":"assistant","tool_calls":{}}"#),
            "\"tool_calls\" must be a list"
        );
        assert!(bad(
            r#"{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}"#
        )
        .starts_with("tool_calls[0]: \"arguments\" must be a JSON-encoded string"));
    }
}
