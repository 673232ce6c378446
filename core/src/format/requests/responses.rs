//! OpenAI Responses API items (`message`, `function_call`,
//! `function_call_output`, `reasoning`, custom and local-shell calls), and
//! Codex CLI rollouts, whose `response_item` lines carry the same items.
//!
//! Each item is one message: a `message` item by its role, a call as an
//! assistant message with one tool call, an output as a tool message, a
//! `reasoning` item as an assistant message whose one part is the item.
//! Items of other types (web search calls, …) are kept in place untouched.

use serde_json::{Map, Value};

use crate::format::convert::{self, part_type};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::format::openai::parse_part;
use crate::transcript::{Content, Fields, Message, MessageData, Part, PartKind, Role, ToolCall};

/// Item types that mark Responses input, the evidence detection looks for.
pub(crate) const ITEM_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "web_search_call",
];

/// Responses API input: a list of items, or `{"input": [...], "instructions": ...}`.
pub(crate) struct Responses;

impl Dialect for Responses {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if crate::format::answer::format_of(obj) == Some(crate::format::Format::Responses) {
            // A `response` object: its output items.
            return Some(&["output"]);
        }
        obj.get("input")
            .is_some_and(Value::is_array)
            .then_some(&["input"][..])
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["input"]
    }

    fn read_envelope(&self, env: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
        match env.get("instructions") {
            Some(Value::String(s)) => Ok(vec![Message::new(Role::System, s.as_str())]),
            _ => Ok(Vec::new()),
        }
    }

    fn write_envelope(&self, env: &mut Map<String, Value>, msgs: &[&Message]) {
        match msgs.first() {
            Some(m) => set_if_changed(env, "instructions", Value::from(m.content.text())),
            // `"instructions": null` (a response object's) says nothing.
            None if env.get("instructions").is_some_and(Value::is_string) => {
                env.shift_remove("instructions");
            }
            None => {}
        }
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        read_item(rec)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        write_item(rec, msgs.first()?)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let _ = env;
        new_items(msgs, losses)
            .into_iter()
            .map(Value::Object)
            .collect()
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        const MODELLED: &[&str] = &[
            "type",
            "role",
            "content",
            "call_id",
            "name",
            "arguments",
            "input",
            "output",
            "id",
            "status",
        ];
        m.fields
            .keys()
            .filter(|k| !MODELLED.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

fn content_of(v: Option<&Value>) -> Result<Content, Fault> {
    Ok(match v {
        None => Content::Absent,
        Some(Value::Null) => Content::Null,
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(Value::Array(parts)) => Content::Parts(parts.iter().map(parse_part).collect()),
        // Schema drift: a single part object.
        Some(v @ Value::Object(_)) => Content::Parts(vec![parse_part(v)]),
        Some(_) => return Err("content must be a string, a list of parts or a part".into()),
    })
}

fn call(rec: &Map<String, Value>, args_key: &str) -> Result<ToolCall, Fault> {
    let name = rec
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(if args_key == "action" {
            "local_shell"
        } else {
            ""
        });
    if name.is_empty() {
        return Err("a call item has no \"name\"".into());
    }
    Ok(ToolCall {
        id: rec
            .get("call_id")
            .or_else(|| rec.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string),
        name: name.to_string(),
        arguments: convert::arguments_text(rec.get(args_key).unwrap_or(&Value::Null)),
        raw: if args_key == "input" {
            convert::custom_marker().into()
        } else {
            Value::Null.into()
        },
        slot: None,
    })
}

/// Reads one Responses item into messages (none for item types kept as they are).
pub(crate) fn read_item(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let ty = rec.get("type").and_then(Value::as_str);
    let with_fields = |mut m: Message| {
        m.fields = rec.clone();
        m
    };
    let m = match ty {
        Some("message") | None => {
            let role = match rec.get("role").and_then(Value::as_str) {
                Some(r) => Role::parse(r).ok_or_else(|| format!("unknown role \"{r}\""))?,
                None if ty.is_none() => return Err("item has neither \"type\" nor \"role\"".into()),
                None => return Err("message item has no \"role\"".into()),
            };
            Message::from(MessageData {
                role,
                content: content_of(rec.get("content"))?,
                ..MessageData::new(role, "")
            })
        }
        Some("function_call") => assistant_call(call(rec, "arguments")?),
        Some("custom_tool_call") => assistant_call(call(rec, "input")?),
        Some("local_shell_call") => assistant_call(call(rec, "action")?),
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
            let id = rec
                .get("call_id")
                .or_else(|| rec.get("id"))
                .and_then(Value::as_str);
            Message::from(MessageData {
                content: content_of(rec.get("output"))?,
                tool_call_id: id.map(str::to_string),
                ..MessageData::new(Role::Tool, "")
            })
        }
        Some("reasoning") => Message::from(MessageData {
            content: Content::Parts(vec![Part {
                kind: PartKind::Other,
                raw: Value::Object(rec.clone().into_map()).into(),
                slot: None,
            }]),
            ..MessageData::new(Role::Assistant, "")
        }),
        Some(_) => return Ok(Vec::new()),
    };
    Ok(vec![with_fields(m)])
}

fn assistant_call(c: ToolCall) -> Message {
    Message::from(MessageData {
        content: Content::Absent,
        tool_calls: Some(vec![c]),
        ..MessageData::new(Role::Assistant, "")
    })
}

/// Writes one item back from its message.
pub(crate) fn write_item(rec: &Map<String, Value>, m: &Message) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    match rec.get("type").and_then(Value::as_str) {
        Some("function_call" | "custom_tool_call" | "local_shell_call") => {
            let c = m.calls().first()?;
            let key = match rec.get("type").and_then(Value::as_str) {
                Some("custom_tool_call") => "input",
                Some("local_shell_call") => "action",
                _ => "arguments",
            };
            let orig = rec.get(key).map(convert::arguments_text);
            if orig.as_deref() != Some(c.arguments.as_str()) {
                let v = if key == "action" || rec.get(key).is_some_and(|v| !v.is_string()) {
                    convert::arguments_value(&c.arguments)
                } else {
                    Value::from(c.arguments.as_str())
                };
                out.insert(key.into(), v);
            }
            if rec.contains_key("name") {
                set_if_changed(&mut out, "name", Value::from(c.name.as_str()));
            }
        }
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
            let orig = rec.get("output");
            let v = match (&m.content, orig) {
                (Content::Parts(parts), Some(Value::Object(_))) if parts.len() == 1 => {
                    parts[0].to_value()
                }
                (c, o) => crate::format::openai::content_value(c, o)?,
            };
            set_if_changed(&mut out, "output", v);
        }
        Some("reasoning") => {
            let part = m.content.parts().first()?;
            return part.raw.as_object().cloned();
        }
        _ => {
            if m.role.as_str() != rec.get("role").and_then(Value::as_str).unwrap_or("") {
                out.insert("role".into(), Value::from(m.role.as_str()));
            }
            let content = own_text_parts(&m.content, rec.get("content"), m.role == Role::Assistant);
            match crate::format::openai::content_value(&content, rec.get("content")) {
                Some(v) => set_if_changed(&mut out, "content", v),
                None => {
                    out.shift_remove("content");
                }
            }
        }
    }
    Some(out)
}

/// A message's content with each text part an operation made (a note in an
/// image's place: `{"type": "text"}`, the chat shape) in the shape an item
/// of its role takes, `output_text` for the assistant and `input_text` for
/// the rest: Responses refuses `text` ("type \"text\" is not accepted").
fn own_text_parts<'a>(
    content: &'a Content,
    orig: Option<&Value>,
    output: bool,
) -> std::borrow::Cow<'a, Content> {
    let Content::Parts(parts) = content else {
        return std::borrow::Cow::Borrowed(content);
    };
    // A part read as `text` stays as it came (its item is the client's):
    // found by its slot, or by its place when no part went.
    let orig = orig.and_then(Value::as_array);
    let same_places = orig.is_some_and(|o| o.len() == parts.len());
    let was_text = |k: usize, p: &Part| {
        let at = p.slot.or(same_places.then_some(k));
        let part = orig.zip(at).and_then(|(a, k)| a.get(k));
        part.and_then(|p| p.get("type")).and_then(Value::as_str) == Some("text")
    };
    let foreign = |k: usize, p: &Part| {
        matches!(p.kind, PartKind::Text(_))
            && p.raw.get("type").and_then(Value::as_str) == Some("text")
            && !was_text(k, p)
    };
    if !parts.iter().enumerate().any(|(k, p)| foreign(k, p)) {
        return std::borrow::Cow::Borrowed(content);
    }
    let own = parts
        .iter()
        .enumerate()
        .map(|(k, p)| match (&p.kind, foreign(k, p)) {
            (PartKind::Text(_), true) => {
                let mut lost = Vec::new();
                let raw = item_part(p, output, None, &mut lost).unwrap_or(Value::Null);
                Part {
                    raw: raw.into(),
                    ..p.clone()
                }
            }
            _ => p.clone(),
        })
        .collect();
    std::borrow::Cow::Owned(Content::Parts(own))
}

/// A Responses content part for a part of any format.
fn item_part(
    p: &Part,
    output: bool,
    index: Option<usize>,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let mut b = Map::new();
    match &p.kind {
        PartKind::Text(t) => {
            b.insert(
                "type".into(),
                Value::from(if output { "output_text" } else { "input_text" }),
            );
            b.insert("text".into(), Value::from(t.as_str()));
            if output {
                b.insert("annotations".into(), Value::Array(Vec::new()));
            }
        }
        PartKind::Image(_) => {
            b.insert("type".into(), Value::from("input_image"));
            b.insert(
                "image_url".into(),
                Value::from(crate::format::dialect::image_url(&p.raw)?),
            );
            b.insert("detail".into(), Value::from("auto"));
        }
        PartKind::Other => {
            losses.push(Loss::at(
                index,
                format!("{} part", part_type(&p.raw)),
                "responses cannot express it",
            ));
            return None;
        }
    }
    Some(Value::Object(b))
}

/// Responses items for messages of any format.
pub(crate) fn new_items(msgs: &[&Message], losses: &mut Vec<Loss>) -> Vec<Map<String, Value>> {
    let pairing = crate::pairs::Pairing::new(msgs);
    let call_id = |i: usize, c: usize| -> String {
        msgs[i].calls()[c]
            .id
            .clone()
            .unwrap_or_else(|| format!("call_ctxclean_{i}_{c}"))
    };
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let index = m.input_index();
        let output = m.role == Role::Assistant;
        if m.role.is_result() {
            let paired = pairing.result_of(i);
            let id = match paired {
                Some(r) => call_id(r.message, r.call),
                None => m.tool_call_id.clone().unwrap_or_default(),
            };
            // A freeform call's output answers it as its own kind.
            let custom =
                paired.is_some_and(|r| convert::is_custom(&msgs[r.message].calls()[r.call]));
            let mut item = Map::new();
            let ty = if custom {
                "custom_tool_call_output"
            } else {
                "function_call_output"
            };
            item.insert("type".into(), Value::from(ty));
            item.insert("call_id".into(), Value::from(id));
            let output = match &m.content {
                Content::Parts(parts) => Value::Array(
                    parts
                        .iter()
                        .filter_map(|p| item_part(p, false, index, losses))
                        .collect(),
                ),
                c => Value::from(c.text()),
            };
            item.insert("output".into(), output);
            out.push(item);
            continue;
        }
        let says_something = match &m.content {
            Content::Text(s) => !s.is_empty(),
            Content::Parts(p) => !p.is_empty(),
            _ => false,
        };
        let has_content = says_something || (!m.has_calls() && m.content != Content::Absent);
        if has_content {
            let content = match (&m.content, output) {
                (Content::Text(s), false) => Value::from(s.as_str()),
                (Content::Text(s), true) => Value::Array(vec![
                    serde_json::json!({"type": "output_text", "text": s, "annotations": []}),
                ]),
                (c, _) => Value::Array(
                    c.parts()
                        .iter()
                        .filter_map(|p| item_part(p, output, index, losses))
                        .collect(),
                ),
            };
            // Parts the target cannot carry were dropped (and reported):
            // an empty list is not written.
            if content.as_array().is_some_and(Vec::is_empty) {
                if !m.has_calls() {
                    losses.push(Loss::at(
                        index,
                        "message",
                        "nothing responses can carry was left in it",
                    ));
                }
            } else {
                let mut item = Map::new();
                item.insert("type".into(), Value::from("message"));
                item.insert("role".into(), Value::from(m.role.as_str()));
                item.insert("content".into(), content);
                out.push(item);
            }
        }
        for (c, tc) in m.calls().iter().enumerate() {
            let custom = convert::is_custom(tc);
            let mut item = Map::new();
            let (ty, key) = if custom {
                ("custom_tool_call", "input")
            } else {
                ("function_call", "arguments")
            };
            item.insert("type".into(), Value::from(ty));
            item.insert("call_id".into(), Value::from(call_id(i, c)));
            item.insert("name".into(), Value::from(tc.name.as_str()));
            item.insert(key.into(), Value::from(tc.arguments.as_str()));
            out.push(item);
        }
    }
    out
}

/// Codex CLI rollout JSONL: `response_item` lines are the conversation;
/// session metadata, events and turn context pass through in place. Older
/// rollouts (bare items, `{role, content}` lines, `tool_call`/`tool_result`
/// lines) are read too.
pub(crate) struct Codex;

/// Line types of Codex rollouts, the evidence detection looks for.
pub(crate) const CODEX_LINE_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
];

impl Dialect for Codex {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn compaction(&self) -> Option<crate::format::dialect::IsRecord> {
        Some(is_compacted)
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let ty = rec.get("type").and_then(Value::as_str);
        let mut msgs = match ty {
            Some("compacted") => return read_compacted(rec),
            Some("response_item") => match rec.get("payload") {
                Some(Value::Object(item)) => read_codex_item(&Fields::from(item.clone()))?,
                _ => return Err("a response_item line has no \"payload\" object".into()),
            },
            Some(t) if CODEX_LINE_TYPES.contains(&t) || t.contains('.') || t == "error" => {
                return Ok(Vec::new())
            }
            Some(_) if rec.contains_key("payload") => Vec::new(),
            _ => read_codex_item(rec)?,
        };
        for m in &mut msgs {
            if m.fields.is_empty() {
                m.fields = rec.clone();
            }
        }
        Ok(msgs)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if rec.get("type").and_then(Value::as_str) == Some("compacted") {
            return write_compacted(rec, msgs);
        }
        let m = msgs.first()?;
        if rec.get("type").and_then(Value::as_str) == Some("response_item") {
            let item = rec.get("payload")?.as_object()?;
            let mut out = rec.clone();
            out.insert("payload".into(), Value::Object(write_codex_item(item, m)?));
            return Some(out);
        }
        write_codex_item(rec, m)
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn emptied(&self, rec: &Fields) -> Option<Map<String, Value>> {
        rec.peek(|rec| {
            is_compacted(rec)
                .then(|| write_compacted(rec, &[]))
                .flatten()
        })
    }

    /// A new line cannot go into a compaction's history, and one before
    /// the `compacted` line would not be read back: a conversation whose
    /// history is a compaction's takes no new message.
    fn takes_new_messages(&self, conv: &crate::transcript::Conversation) -> bool {
        !conv
            .records
            .iter()
            .any(|r| r.messages > 0 && r.value.as_ref().is_some_and(|v| is_compacted(v)))
    }

    /// After a compaction the next call carries the `compacted` line's
    /// history and what follows, not the items before it.
    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        let b = records.iter().rposition(|r| r.is_some_and(is_compacted))?;
        // Before the last compaction only lines that hold no message are
        // read: neither items nor an earlier compaction's history.
        let before = |r: &Map<String, Value>| {
            !matches!(
                r.get("type").and_then(Value::as_str),
                Some("response_item" | "compacted")
            )
        };
        Some(
            records
                .iter()
                .enumerate()
                .map(|(i, r)| i >= b || r.is_none_or(before))
                .collect(),
        )
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        let item =
            |v: &Map<String, Value>| v.get("type").and_then(Value::as_str) == Some("response_item");
        crate::format::dialect::compaction_note(conv, is_compacted, item, "item");
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        _env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        new_items(msgs, losses)
            .into_iter()
            .map(|item| {
                let mut line = Map::new();
                line.insert("type".into(), Value::from("response_item"));
                line.insert("payload".into(), Value::Object(item));
                Value::Object(line)
            })
            .collect()
    }
}

/// Whether a Codex line is a compaction.
fn is_compacted(r: &Map<String, Value>) -> bool {
    r.get("type").and_then(Value::as_str) == Some("compacted")
}

/// The items of a `compacted` line's history, or none.
fn replacement_history(rec: &Map<String, Value>) -> Option<&Vec<Value>> {
    rec.get("payload")?.get("replacement_history")?.as_array()
}

/// A `compacted` line: the history the next call carries
/// (`replacement_history`), or its summary (`message`) as the user's.
fn read_compacted(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let mut out = Vec::new();
    if let Some(items) = replacement_history(rec) {
        for (k, item) in items.iter().enumerate() {
            let Value::Object(item) = item else { continue };
            out.extend(
                read_codex_item(&Fields::from(item.clone()))
                    .map_err(|e| format!("replacement_history[{k}]: {e}"))?,
            );
        }
        return Ok(out);
    }
    match rec.get("payload").and_then(|p| p.get("message")) {
        Some(Value::String(s)) if !s.is_empty() => Ok(vec![Message::from(MessageData {
            fields: rec.clone(),
            ..MessageData::new(Role::User, s.as_str())
        })]),
        _ => Ok(out),
    }
}

/// A `compacted` line written back from the messages read from it that
/// survive (known by their place among those read, `Origin::sub`).
fn write_compacted(rec: &Map<String, Value>, msgs: &[&Message]) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    let Some(items) = replacement_history(rec) else {
        let text = msgs.first().map(|m| m.content.text()).unwrap_or_default();
        let payload = out.get_mut("payload")?.as_object_mut()?;
        payload.insert("message".into(), Value::from(text));
        return Some(out);
    };
    let mut new = Vec::with_capacity(items.len());
    let mut start = 0;
    for item in items {
        let Value::Object(map) = item else {
            new.push(item.clone());
            continue;
        };
        let n = read_codex_item(&Fields::from(map.clone())).map_or(0, |ms| ms.len());
        let range = start..start + n;
        start += n;
        if n == 0 {
            new.push(item.clone());
            continue;
        }
        let kept: Vec<&&Message> = msgs
            .iter()
            .filter(|m| m.origin.as_ref().is_some_and(|o| range.contains(&o.sub)))
            .collect();
        if let Some(m) = kept.first() {
            new.push(Value::Object(write_codex_item(map, m)?));
        }
    }
    let payload = out.get_mut("payload")?.as_object_mut()?;
    payload.insert("replacement_history".into(), Value::Array(new));
    Some(out)
}

/// Reads a Codex item: a Responses item, or one of the older shapes (the
/// TypeScript CLI's `{role, content}` lines and `tool_call`/`tool_result`
/// records, with or without a `response_item` wrapper).
fn read_codex_item(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let ty = rec.get("type").and_then(Value::as_str);
    Ok(match ty {
        Some("tool_call" | "function_call") if !rec.contains_key("call_id") => {
            let name = rec
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| rec.get("name"))
                .and_then(Value::as_str)
                .ok_or("a tool_call line has no function name")?;
            vec![assistant_call(ToolCall {
                id: None,
                name: name.to_string(),
                arguments: convert::arguments_text(rec.get("arguments").unwrap_or(&Value::Null)),
                raw: Value::Null.into(),
                slot: None,
            })]
        }
        Some("tool_result" | "function_result") => vec![Message::from(MessageData {
            content: match rec.get("result").or_else(|| rec.get("output")) {
                Some(v @ Value::Object(_)) => Content::Text(convert::arguments_text(v)),
                v => content_of(v)?,
            },
            name: rec.get("name").and_then(Value::as_str).map(str::to_string),
            ..MessageData::new(Role::Tool, "")
        })],
        None if rec.contains_key("role") => {
            let role = rec.get("role").and_then(Value::as_str).unwrap_or("");
            let role = Role::parse(role).ok_or_else(|| format!("unknown role \"{role}\""))?;
            vec![Message::from(MessageData {
                content: content_of(rec.get("content").or_else(|| rec.get("message")))?,
                ..MessageData::new(role, "")
            })]
        }
        None => Vec::new(),
        Some(_) => read_item(rec)?,
    })
}

/// Writes a Codex item back (see [`read_codex_item`]).
fn write_codex_item(rec: &Map<String, Value>, m: &Message) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    match rec.get("type").and_then(Value::as_str) {
        Some("tool_call" | "function_call") if !rec.contains_key("call_id") => {
            let c = m.calls().first()?;
            if rec.get("arguments").map(convert::arguments_text).as_deref()
                != Some(c.arguments.as_str())
            {
                let v = match rec.get("arguments") {
                    Some(Value::String(_)) | None => Value::from(c.arguments.as_str()),
                    _ => convert::arguments_value(&c.arguments),
                };
                out.insert("arguments".into(), v);
            }
        }
        Some("tool_result" | "function_result") => {
            let key = if rec.contains_key("result") {
                "result"
            } else {
                "output"
            };
            let v = match rec.get(key) {
                Some(orig @ Value::Object(_))
                    if convert::arguments_text(orig) == m.content.text() =>
                {
                    orig.clone()
                }
                Some(Value::Object(_)) => convert::arguments_value(&m.content.text()),
                // A line without its output (none was read) keeps what it
                // has: never dropped for want of a value to write.
                orig => match crate::format::openai::content_value(&m.content, orig) {
                    Some(v) => v,
                    None => return Some(out),
                },
            };
            set_if_changed(&mut out, key, v);
        }
        None if rec.contains_key("role") => {
            let key = if rec.contains_key("content") || !rec.contains_key("message") {
                "content"
            } else {
                "message"
            };
            let content = own_text_parts(&m.content, rec.get(key), m.role == Role::Assistant);
            if let Some(v) = crate::format::openai::content_value(&content, rec.get(key)) {
                set_if_changed(&mut out, key, v);
            }
        }
        _ => return write_item(rec, m),
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn items_round_trip() {
        for text in [
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"List"},{"type":"input_image","image_url":null,"detail":"auto"}]}"#,
            r#"{"type":"function_call","id":"fn-1","call_id":"call-2","name":"shell","arguments":"{\"command\":[\"ls\"]}"}"#,
            r#"{"type":"function_call_output","id":"fno-1","call_id":"call-2","output":{"type":"input_text","text":"a.txt\n"}}"#,
            r#"{"type":"custom_tool_call_output","call_id":"call-1","output":[{"type":"input_text","text":"a.txt"}]}"#,
            r#"{"type":"reasoning","id":"rs-1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"xyz"}"#,
            r#"{"role":"user","content":"easy"}"#,
        ] {
            let rec = obj(text);
            let msgs = read_item(&Fields::from(rec.clone())).unwrap();
            assert_eq!(msgs.len(), 1, "{text}");
            assert_eq!(write_item(&rec, &msgs[0]).unwrap(), rec, "{text}");
        }
        assert!(
            read_item(&Fields::from(obj(r#"{"type":"web_search_call","id":"w"}"#)))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_note_in_an_image_s_place_is_input_text() {
        // `filter --strip-processed-images` puts a chat-shaped text part
        // where the image was; Responses refuses `text` in an item. A part
        // the client sent as `text` stays as it came.
        let rec = obj(
            r#"{"type":"message","role":"user","content":[{"type":"text","text":"theirs"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}"#,
        );
        let mut msgs = read_item(&Fields::from(rec.clone())).unwrap();
        assert_eq!(write_item(&rec, &msgs[0]).unwrap(), rec);
        crate::transcript::note_in_place(&mut msgs[0].content, 1, "[image removed]");
        let out = write_item(&rec, &msgs[0]).unwrap();
        assert_eq!(
            Value::Object(out)["content"],
            serde_json::json!([
                {"type": "text", "text": "theirs"},
                {"type": "input_text", "text": "[image removed]"}
            ])
        );
    }

    #[test]
    fn whitespace_text_beside_a_call_is_kept() {
        // Found by the conversion property test.
        let mut m = Message::new(Role::Assistant, " ");
        m.tool_calls = Some(vec![ToolCall {
            id: Some("c".into()),
            name: "a".into(),
            arguments: "{}".into(),
            raw: Value::Null.into(),
            slot: None,
        }]);
        let items = new_items(&[&m], &mut Vec::new());
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["type"], "message");
    }

    #[test]
    fn codex_lines() {
        let line = obj(
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"function_call","call_id":"c","name":"shell","arguments":"{}"}}"#,
        );
        let msgs = Codex.read_record(&Fields::from(line.clone())).unwrap();
        assert_eq!(msgs[0].calls()[0].id.as_deref(), Some("c"));
        assert_eq!(Codex.write_record(&line, &[&msgs[0]]).unwrap(), line);
        assert!(Codex
            .read_record(&Fields::from(obj(r#"{"type":"event_msg","payload":{}}"#)))
            .unwrap()
            .is_empty());
        let legacy = obj(
            r#"{"timestamp":"t","type":"tool_call","function":{"name":"git"},"arguments":"status"}"#,
        );
        let msgs = Codex.read_record(&Fields::from(legacy.clone())).unwrap();
        assert_eq!(msgs[0].calls()[0].name, "git");
        assert_eq!(Codex.write_record(&legacy, &[&msgs[0]]).unwrap(), legacy);
    }

    /// A legacy `tool_result` line with neither `output` nor `result` is
    /// written back as it came, never dropped (found by fuzzing
    /// read_format: `convert` wrote nothing, exit 0).
    #[test]
    fn a_result_line_without_its_output_is_kept() {
        let line = obj(r#"{"type":"tool_result","name":"transl","content":"hola"}"#);
        let msgs = Codex.read_record(&Fields::from(line.clone())).unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(Codex.write_record(&line, &[&msgs[0]]), Some(line));
    }
}
