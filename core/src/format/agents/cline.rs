//! Cline and Roo Code tasks: `api_conversation_history.json`, and the UI
//! log `ui_messages.json` beside it.
//!
//! The API history is a list of Anthropic-shaped messages, read with the
//! Anthropic dialect, with two differences that matter:
//!
//! - tool results are not `tool_result` blocks but the next user message's
//!   text blocks, each beginning `[read_file for 'src/a.ts'] Result:` (the
//!   output in the same block, or in the blocks after a header-only one), or
//!   Cline's `Tool [x] was not executed because…` notice. They are read as
//!   tool results and paired with the calls before them (by name, in
//!   order), so that `compact-tools`, `filter` and `validate` see them;
//!   `<environment_details>`, the `<task>` and the user's feedback stay the
//!   user's message;
//! - older tasks call tools as XML in the assistant's text
//!   (`<read_file><path>…</path></read_file>`): read as tool calls, the
//!   text around them kept.
//!
//! Both are written back as they were: text blocks with their headers, XML
//! in the text, byte for byte where nothing changed.
//!
//! `ui_messages.json` (`[{ts, type: "say"|"ask", say|ask, text}]`) is the
//! UI's log: the task and feedback are the user's, text, reasoning and
//! completion results the assistant's, commands and their output a call and
//! its result; API requests carry the usage (`tokensIn`, `tokensOut`, …).

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use crate::format::anthropic::{read_message as read_anthropic, write_message as write_anthropic};
use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss};
use crate::format::embedded::{self, result_header, Segment};
use crate::format::openai::parse_part;
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, PartKind, Role, ToolCall,
};

/// Cline and Roo Code tasks.
pub(crate) struct Cline;

/// Tool names of Cline and Roo Code, for XML calls that no result names yet.
const TOOLS: &[&str] = &[
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "new_task",
    "switch_mode",
    "plan_mode_respond",
    "load_mcp_documentation",
    "web_fetch",
    "update_todo_list",
    "fetch_instructions",
];

/// The key marking a tool result read from text blocks (in its message's
/// fields, with the header and the blocks it was read from).
const RESULT: &str = "cline_result";

/// Whether a record is a UI log entry.
pub(crate) fn is_ui_message(r: &Map<String, Value>) -> bool {
    r.get("ts").is_some_and(Value::is_number)
        && matches!(r.get("type").and_then(Value::as_str), Some("say" | "ask"))
}

/// Whether the records are a Cline task's API history: Anthropic-shaped
/// messages with Cline's own text (`<task>`, `<environment_details>`,
/// result headers) or its per-message `modelInfo`.
pub(crate) fn is_history(records: &[&Map<String, Value>]) -> bool {
    // Anthropic-shaped: user and assistant turns only, no OpenAI calls.
    let shaped = records.iter().all(|r| {
        matches!(
            r.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        ) && !r.contains_key("tool_calls")
            && !r.contains_key("tool_call_id")
    });
    shaped
        && records.iter().any(|r| {
            r.contains_key("modelInfo")
                || texts(r).any(|t| {
                    t.starts_with("<task>")
                        || t.contains("<environment_details>")
                        || result_header(t).is_some_and(|(_, n)| n > 0)
                        || (r.get("role").and_then(Value::as_str) == Some("assistant")
                            && TOOLS.iter().any(|name| {
                                t.contains(&format!("<{name}>"))
                                    && t.contains(&format!("</{name}>"))
                            }))
                })
        })
}

/// The texts of a message: its string content, or its text blocks.
fn texts(r: &Map<String, Value>) -> Box<dyn Iterator<Item = &str> + '_> {
    match r.get("content") {
        Some(Value::String(s)) => Box::new(std::iter::once(s.as_str())),
        Some(Value::Array(blocks)) => Box::new(
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str)),
        ),
        _ => Box::new(std::iter::empty()),
    }
}

impl Dialect for Cline {
    fn content_key(&self) -> Option<&'static str> {
        Some("content")
    }

    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        if is_ui_message(rec) {
            return read_ui(rec);
        }
        if rec.get("role").and_then(Value::as_str) != Some("user") {
            return read_anthropic(rec);
        }
        let blocks = match rec.get("content") {
            // Newer tasks with native results are Anthropic's as they stand.
            Some(Value::Array(blocks))
                if blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")) =>
            {
                return read_anthropic(rec);
            }
            Some(Value::Array(blocks)) => blocks,
            Some(Value::String(s)) if result_header(s).is_some() => {
                return Ok(vec![result_message(rec, &[(0, text_value(s))])]);
            }
            _ => return read_anthropic(rec),
        };
        // Blocks → groups: each result (its header block and the blocks of
        // output after a header-only one), and the user's own blocks.
        let mut out: Vec<Message> = Vec::new();
        let mut user: Vec<Part> = Vec::new();
        let mut user_at = None;
        let mut group: Vec<(usize, Value)> = Vec::new();
        let mut open = false; // a header-only block waits for its output
        for (k, b) in blocks.iter().enumerate() {
            let text = b
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| *t == "text")
                .and_then(|_| b.get("text")?.as_str());
            let header = text.and_then(result_header);
            let output = text.is_none_or(|t| {
                !t.contains("<environment_details>") && !t.starts_with("[TASK RESUMPTION]")
            });
            if header.is_some() {
                if !group.is_empty() {
                    out.push(result_message(rec, &group));
                }
                group = vec![(k, b.clone())];
                open = header.is_some_and(|(_, n)| n > 0)
                    && text.is_some_and(|t| t.len() == header.map_or(0, |h| h.1));
            } else if open && output {
                group.push((k, b.clone()));
                open = false;
            } else {
                if !group.is_empty() {
                    out.push(result_message(rec, &std::mem::take(&mut group)));
                }
                open = false;
                user_at.get_or_insert(out.len());
                user.push(Part {
                    slot: Some(k),
                    ..parse_part(b)
                });
            }
        }
        if !group.is_empty() {
            out.push(result_message(rec, &group));
        }
        if let Some(at) = user_at {
            out.insert(
                at,
                Message::from(MessageData {
                    content: Content::Parts(user),
                    fields: rec.clone(),
                    ..MessageData::new(Role::User, "")
                }),
            );
        }
        if out.is_empty() {
            out.push(Message::from(MessageData {
                content: Content::Parts(Vec::new()),
                fields: rec.clone(),
                ..MessageData::new(Role::User, "")
            }));
        }
        Ok(out)
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        if is_ui_message(rec) {
            return write_ui(rec, msgs.first()?);
        }
        let has_embedded = msgs.iter().any(|m| {
            m.fields.contains_key(RESULT) || m.calls().iter().any(|c| c.raw.get("xml").is_some())
        });
        if !has_embedded {
            return write_anthropic(rec, msgs);
        }
        let blocks: Vec<Value> = match rec.get("content") {
            Some(Value::Array(b)) => b.clone(),
            Some(Value::String(s)) => vec![text_value(s)],
            _ => Vec::new(),
        };
        let mut items: Vec<(usize, Value)> = Vec::new();
        let mut fresh = blocks.len() * XML_SLOTS;
        let mut next = || {
            fresh += 1;
            fresh
        };
        for m in msgs {
            if m.fields.contains_key(RESULT) {
                items.extend(result_blocks(m, &blocks));
                continue;
            }
            // A message whose text may hold XML calls: its pieces go back
            // into the blocks (or the string) they came from. Pieces carry
            // slots within their block's range; whole blocks, the block's.
            for p in m.content.parts() {
                let piece = p.raw.get("cline_piece").is_some();
                let slot = match p.slot {
                    Some(k) if piece => k,
                    Some(k) => k * XML_SLOTS,
                    None => next(),
                };
                items.push((slot, p.to_value()));
            }
            for c in m.calls() {
                let slot = match c.slot {
                    Some(k) if c.raw.get("xml").is_some() => k,
                    Some(k) => k * XML_SLOTS,
                    None => next(),
                };
                items.push((slot, call_value(c)));
            }
        }
        items.sort_by_key(|(slot, _)| *slot);
        if items.is_empty() {
            return None;
        }
        let mut out = rec.clone();
        let content = join_pieces(items, rec.get("content").is_some_and(Value::is_string));
        set_if_changed(&mut out, "content", content);
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        crate::format::anthropic::new_messages(msgs, env, losses)
            .into_iter()
            .map(Value::Object)
            .collect()
    }

    fn after_read(&self, conv: &mut Conversation) {
        embed_xml_calls(conv);
        pair_results(conv);
        ui_task(conv);
    }

    fn extra_keys(&self, m: &Message) -> Vec<String> {
        let modelled: &[&str] = &["role", "content", RESULT];
        if m.role.is_result() {
            return Vec::new();
        }
        m.fields
            .keys()
            .filter(|k| !modelled.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// Slots per block: the pieces of a block's text (plain text and XML
/// calls) take consecutive slots within their block's range. 2^32 on a
/// 64-bit machine: more pieces than a block's text has bytes. (It was
/// 1,000: a block of 500 calls or more had its later pieces written into
/// the next block's place, the text reordered.)
const XML_SLOTS: usize = 1 << (usize::BITS / 2);

/// A text piece of a block cut around its XML calls: the block's object
/// with the piece as its text. The block's own text is not copied for each
/// piece (a block of many calls copied its whole text for every one of
/// them: quadratic).
fn piece_of(block: &Value, piece: &str) -> Value {
    let Value::Object(o) = block else {
        return block.clone();
    };
    // Every key but the text copied; the text set in its place (or last).
    let mut raw: Map<String, Value> = o
        .iter()
        .map(|(k, v)| (k.clone(), if k == "text" { Value::Null } else { v.clone() }))
        .collect();
    raw.insert("text".into(), Value::from(piece));
    raw.insert("cline_piece".into(), Value::Bool(true));
    Value::Object(raw)
}

fn text_value(s: &str) -> Value {
    serde_json::json!({"type": "text", "text": s})
}

/// A result read from its blocks: the header stripped from the first, the
/// output in the rest.
fn result_message(rec: &Map<String, Value>, group: &[(usize, Value)]) -> Message {
    let first = group[0].1.get("text").and_then(Value::as_str).unwrap_or("");
    let (name, header_len) = result_header(first).unwrap_or(("tool", 0));
    let content = result_content(group);
    let mut fields = Map::new();
    fields.insert(RESULT.into(), Value::Bool(true));
    fields.insert("header".into(), Value::from(&first[..header_len]));
    fields.insert(
        "blocks".into(),
        Value::Array(group.iter().map(|(k, _)| Value::from(*k)).collect()),
    );
    let _ = rec;
    Message::from(MessageData {
        content,
        name: Some(name.to_string()),
        fields: fields.into(),
        ..MessageData::new(Role::Tool, "")
    })
}

/// A result's content as read: its blocks, the first without its header.
fn result_content(group: &[(usize, Value)]) -> Content {
    let mut parts = Vec::new();
    for (i, (k, b)) in group.iter().enumerate() {
        let mut p = Part {
            slot: Some(*k),
            ..parse_part(b)
        };
        if i == 0 {
            let text = b.get("text").and_then(Value::as_str).unwrap_or("");
            let n = result_header(text).map_or(0, |h| h.1);
            let rest = text[n..].strip_prefix('\n').unwrap_or(&text[n..]);
            if rest.is_empty() && group.len() > 1 {
                continue; // a header-only block: the output follows
            }
            p.kind = PartKind::Text(rest.to_string());
        }
        parts.push(p);
    }
    match parts.as_slice() {
        [p] if p.text().is_some() => Content::Text(p.text().unwrap_or_default().to_string()),
        _ => Content::Parts(parts),
    }
}

/// A result written back: its blocks as they came, or, when it changed,
/// its header and its new content in the first block's place.
fn result_blocks(m: &Message, blocks: &[Value]) -> Vec<(usize, Value)> {
    let slots: Vec<usize> = m
        .fields
        .get("blocks")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|k| k as usize)
                .collect()
        })
        .unwrap_or_default();
    let group: Vec<(usize, Value)> = slots
        .iter()
        .filter_map(|&k| Some((k, blocks.get(k)?.clone())))
        .collect();
    if !group.is_empty() && result_content(&group) == m.content {
        return group.into_iter().map(|(k, v)| (k * XML_SLOTS, v)).collect();
    }
    let at = slots.first().copied().unwrap_or(blocks.len()) * XML_SLOTS;
    let header = m.fields.get("header").and_then(Value::as_str).unwrap_or("");
    let header_only = group.len() > 1;
    let mut out = Vec::new();
    if header_only {
        out.push((at, group[0].1.clone()));
    }
    match &m.content {
        Content::Parts(parts) if parts.iter().any(|p| p.text().is_none()) => {
            for (i, p) in parts.iter().enumerate() {
                out.push((at + 1 + i, p.to_value()));
            }
        }
        c => {
            let text = c.text();
            // A notice is its own header: changed, it is written with the
            // notice's first words as one, to be read back as the same
            // call's result (without, it read as the user's text).
            let first = group.first().and_then(|(_, b)| b.get("text")?.as_str());
            // (Only a notice has a header of no length.)
            let notice = first
                .and_then(result_header)
                .filter(|&(_, n)| n == 0)
                .map(|(name, _)| format!("Tool [{name}{}", embedded::NOTICE_END));
            let block = match notice {
                Some(notice) if header.is_empty() && !header_only => format!("{notice}\n{text}"),
                _ if header_only || header.is_empty() => text,
                _ => format!("{header}\n{text}"),
            };
            let mut v = group
                .get(usize::from(header_only))
                .map(|(_, b)| b.clone())
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .unwrap_or_else(|| text_value(""));
            if let Some(o) = v.as_object_mut() {
                o.insert("text".into(), Value::from(block));
            }
            out.push((at + 1, v));
        }
    }
    out
}

/// Pieces in slot order, joined back into blocks: the pieces of one
/// block's text (slots `k·XML_SLOTS …`) become that block's text again; with
/// `string`, the single block's text is the content.
fn join_pieces(items: Vec<(usize, Value)>, string: bool) -> Value {
    let mut blocks: Vec<Value> = Vec::new();
    let mut current: Option<(usize, String, Value)> = None; // block, text, template
    let flush = |cur: &mut Option<(usize, String, Value)>, blocks: &mut Vec<Value>| {
        if let Some((_, text, mut template)) = cur.take() {
            if let Some(o) = template.as_object_mut() {
                o.insert("text".into(), Value::from(text));
            }
            blocks.push(template);
        }
    };
    for (slot, v) in items {
        let piece = v.get("cline_piece").is_some() || v.is_string();
        if !piece {
            flush(&mut current, &mut blocks);
            blocks.push(v);
            continue;
        }
        let block = slot / XML_SLOTS;
        let text = match &v {
            Value::String(s) => s.clone(),
            _ => v
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        };
        match current.as_mut() {
            Some((b, acc, _)) if *b == block => acc.push_str(&text),
            _ => {
                flush(&mut current, &mut blocks);
                let template = match &v {
                    Value::Object(o) => {
                        let mut o = o.clone();
                        o.shift_remove("cline_piece");
                        Value::Object(o)
                    }
                    _ => text_value(""),
                };
                current = Some((block, text, template));
            }
        }
    }
    flush(&mut current, &mut blocks);
    if string {
        return match blocks.as_slice() {
            [b] if b.get("type").and_then(Value::as_str) == Some("text") => {
                b.get("text").cloned().unwrap_or(Value::from(""))
            }
            [] => Value::from(""),
            _ => Value::Array(blocks),
        };
    }
    Value::Array(blocks)
}

/// An XML call written back: as it came when unchanged, else rebuilt from
/// its arguments; a native call as a `tool_use` block.
fn call_value(c: &ToolCall) -> Value {
    let Some(xml) = c.raw.get("xml").and_then(Value::as_str) else {
        let mut b = c.raw.as_object().cloned().unwrap_or_default();
        if let Some(id) = &c.id {
            set_if_changed(&mut b, "id", Value::from(id.as_str()));
        }
        set_if_changed(&mut b, "name", Value::from(c.name.as_str()));
        if b.get("input").map(arguments_text).as_deref() != Some(c.arguments.as_str()) {
            b.insert("input".into(), arguments_value(&c.arguments));
        }
        return Value::Object(b);
    };
    let text = match parse_xml(xml, &c.name) {
        Some(args) if args == c.arguments => xml.to_string(),
        _ => render_xml(&c.name, &c.arguments),
    };
    serde_json::json!({"type": "text", "text": text, "cline_piece": true})
}

/// The arguments of an XML call (`<path>a</path><content>…</content>`) as
/// JSON text; free text inside becomes `{"text": …}`.
fn parse_xml(xml: &str, name: &str) -> Option<String> {
    let inner = xml
        .strip_prefix(&format!("<{name}>"))?
        .strip_suffix(&format!("</{name}>"))?;
    let mut args = Map::new();
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let Some(open) = rest.strip_prefix('<') else {
            break;
        };
        let Some(close) = open.find('>') else { break };
        let key = &open[..close];
        if !embedded::valid_name(key) {
            break;
        }
        let body = &open[close + 1..];
        let end_tag = format!("</{key}>");
        let Some(end) = body.find(&end_tag) else {
            break;
        };
        let value = body[..end].strip_prefix('\n').unwrap_or(&body[..end]);
        let value = value.strip_suffix('\n').unwrap_or(value);
        args.insert(key.to_string(), Value::from(value));
        rest = body[end + end_tag.len()..].trim_start();
    }
    if !rest.is_empty() || args.is_empty() {
        let text = inner.trim();
        return Some(serde_json::json!({ "text": text }).to_string());
    }
    Some(Value::Object(args).to_string())
}

/// An XML call from its name and arguments, as Cline writes them.
fn render_xml(name: &str, arguments: &str) -> String {
    let mut out = format!("<{name}>\n");
    match arguments_value(arguments) {
        Value::Object(args) => {
            for (k, v) in args {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out += &format!("<{k}>{v}</{k}>\n");
            }
        }
        other => out += &format!("{}\n", arguments_text(&other)),
    }
    out += &format!("</{name}>");
    out
}

/// Finds the next XML call of one of `names` in a text.
fn find_xml<'a>(
    names: &'a HashSet<String>,
) -> impl Fn(&str) -> Option<(usize, usize, String)> + 'a {
    move |text: &str| {
        let mut from = 0;
        while let Some(at) = text[from..].find('<').map(|i| from + i) {
            let rest = &text[at + 1..];
            let name_end = rest.find('>')?;
            let name = &rest[..name_end];
            if names.contains(name) {
                let close = format!("</{name}>");
                if let Some(end) = rest.find(&close) {
                    return Some((at, at + 1 + end + close.len(), name.to_string()));
                }
            }
            from = at + 1;
        }
        None
    }
}

/// Assistant texts holding XML calls become text pieces and calls.
fn embed_xml_calls(conv: &mut Conversation) {
    let mut names: HashSet<String> = TOOLS.iter().map(|s| s.to_string()).collect();
    for m in &conv.messages {
        if m.fields.contains_key(RESULT) {
            if let Some(n) = &m.name {
                names.insert(n.clone());
            }
        }
    }
    let find = find_xml(&names);
    for m in conv
        .messages
        .iter_mut()
        .filter(|m| m.role == Role::Assistant)
    {
        if m.has_calls() {
            continue; // native tool_use: no XML calls alongside
        }
        let (texts, string): (Vec<(usize, String, Value)>, bool) = match &m.content {
            Content::Text(s) => (vec![(0, s.clone(), text_value(s))], true),
            Content::Parts(parts) => (
                parts
                    .iter()
                    .filter_map(|p| Some((p.slot?, p.text()?.to_string(), Value::clone(&p.raw))))
                    .collect(),
                false,
            ),
            _ => continue,
        };
        if !texts.iter().any(|(_, t, _)| find(t).is_some()) {
            continue;
        }
        let mut parts: Vec<Part> = match &m.content {
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| {
                    !texts
                        .iter()
                        .any(|(k, t, _)| Some(*k) == p.slot && find(t).is_some())
                })
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        let mut calls = Vec::new();
        for (k, text, template) in &texts {
            if find(text).is_none() {
                continue;
            }
            for (n, seg) in embedded::split(text, &find).into_iter().enumerate() {
                let slot = k * XML_SLOTS + n;
                match seg {
                    Segment::Text(t) => {
                        let raw = piece_of(template, t);
                        parts.push(Part {
                            kind: PartKind::Text(t.to_string()),
                            raw: raw.into(),
                            slot: Some(slot),
                        });
                    }
                    Segment::Item(xml, name) => calls.push(ToolCall {
                        id: None,
                        arguments: parse_xml(xml, &name).unwrap_or_default(),
                        name,
                        raw: serde_json::json!({ "xml": xml }).into(),
                        slot: Some(slot),
                    }),
                }
            }
        }
        parts.sort_by_key(|p| p.slot);
        let _ = string;
        m.content = Content::Parts(parts);
        m.tool_calls = Some(calls);
    }
}

/// A call waiting for its result.
struct Open {
    at: (usize, usize),
    id: Option<String>,
    name: String,
}

/// The latest assistant turn's open calls, in order and by name. A call
/// taken leaves a hole, skipped when a front reaches it: a turn of many
/// calls is paired in linear time (a search of the list and a shift of it
/// for each result were quadratic).
#[derive(Default)]
struct Turn {
    calls: Vec<Option<Open>>,
    by_name: HashMap<String, VecDeque<usize>>,
    first: usize,
}

impl Turn {
    fn push(&mut self, o: Open) {
        self.by_name
            .entry(o.name.clone())
            .or_default()
            .push_back(self.calls.len());
        self.calls.push(Some(o));
    }

    /// The first open call named `name`.
    fn take_named(&mut self, name: &str) -> Option<Open> {
        let queue = self.by_name.get_mut(name)?;
        while let Some(k) = queue.pop_front() {
            if let Some(o) = self.calls[k].take() {
                return Some(o);
            }
        }
        None
    }

    /// The first open call.
    fn take_first(&mut self) -> Option<Open> {
        while let Some(slot) = self.calls.get_mut(self.first) {
            self.first += 1;
            if let Some(o) = slot.take() {
                return Some(o);
            }
        }
        None
    }

    /// The calls still open, in order; the turn left empty.
    fn drain(&mut self) -> impl Iterator<Item = Open> + '_ {
        self.by_name.clear();
        self.first = 0;
        self.calls.drain(..).flatten()
    }
}

/// Results read from text answer the calls before them: each takes the
/// first unanswered call of the same name in the latest assistant message
/// with calls, else in an earlier one (a call answered late), else the
/// latest message's first unanswered one, and its id when it has one.
fn pair_results(conv: &mut Conversation) {
    // The latest assistant turn's open calls, and the earlier turns' by
    // name, oldest first: a long task's unanswered calls are looked up, not
    // scanned, for every result.
    let mut current = Turn::default();
    let mut earlier: HashMap<String, VecDeque<Open>> = HashMap::new();
    // Results paired with a call turns back, which (an XML call) has no id.
    let mut late: Vec<((usize, usize), usize)> = Vec::new();
    for (i, m) in conv.messages.iter_mut().enumerate() {
        if m.has_calls() {
            // A call may be answered turns later (Roo Code's `new_task` when
            // its subtask has run, a `switch_mode` after the user spoke): it
            // stays open, for a result that names it.
            for o in current.drain() {
                earlier.entry(o.name.clone()).or_default().push_back(o);
            }
            for (c, call) in m.calls().iter().enumerate() {
                current.push(Open {
                    at: (i, c),
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            continue;
        }
        if !m.fields.contains_key(RESULT) {
            continue;
        }
        let name = m.name.clone().unwrap_or_default();
        // The latest turn's call of that name, else an earlier one's, else
        // the latest turn's first.
        let picked = if let Some(o) = current.take_named(&name) {
            Some((o, false))
        } else if let Some(o) = earlier.get_mut(&name).and_then(VecDeque::pop_front) {
            Some((o, true))
        } else {
            current.take_first().map(|o| (o, false))
        };
        if let Some((o, was_earlier)) = picked {
            if was_earlier && o.id.is_none() {
                late.push((o.at, i));
            }
            m.tool_call_id = o.id;
        }
    }
    // Those pair by an id of their own (never written: XML has none).
    for ((i, c), r) in late {
        let id = format!("ctxclean_subtask_{i}_{c}");
        if let Some(call) = conv.messages[i]
            .tool_calls
            .as_mut()
            .and_then(|cs| cs.get_mut(c))
        {
            call.id = Some(id.clone());
            conv.messages[r].tool_call_id = Some(id);
        }
    }
}

/// A UI log whose task is not a `say: "task"` entry opens with the user's
/// task as `say: "text"` (Roo Code writes it so): that entry is the user's.
fn ui_task(conv: &mut Conversation) {
    let say = |m: &Message| {
        m.fields
            .get("say")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if conv
        .messages
        .iter()
        .any(|m| say(m).as_deref() == Some("task"))
    {
        return;
    }
    if let Some(first) = conv.messages.iter_mut().find(|m| say(m).is_some()) {
        if say(first).as_deref() == Some("text") {
            first.role = Role::User;
        }
    }
}

/// One entry of the UI log.
fn read_ui(rec: &Fields) -> Result<Vec<Message>, Fault> {
    let kind = rec
        .get("say")
        .or_else(|| rec.get("ask"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = rec.get("text").and_then(Value::as_str).unwrap_or("");
    let base = |role: Role, content: Content| {
        Message::from(MessageData {
            content,
            fields: rec.clone(),
            ..MessageData::new(role, "")
        })
    };
    Ok(match kind {
        "task" | "user_feedback" | "user_feedback_diff" => {
            vec![base(Role::User, Content::Text(text.into()))]
        }
        "text" | "completion_result" | "followup" | "plan_mode_respond" if !text.is_empty() => {
            vec![base(Role::Assistant, Content::Text(text.into()))]
        }
        "reasoning" => vec![base(
            Role::Assistant,
            Content::Parts(vec![Part {
                kind: PartKind::Other,
                raw: serde_json::json!({"type": "thinking", "thinking": text}).into(),
                slot: None,
            }]),
        )],
        "command" => {
            let mut m = base(Role::Assistant, Content::Absent);
            m.tool_calls = Some(vec![ToolCall {
                id: None,
                name: "execute_command".into(),
                arguments: serde_json::json!({ "command": text }).to_string(),
                raw: Value::Null.into(),
                slot: None,
            }]);
            vec![m]
        }
        "command_output" => {
            let mut m = base(Role::Tool, Content::Text(text.into()));
            m.name = Some("execute_command".into());
            vec![m]
        }
        "tool" => vec![base(
            Role::Assistant,
            Content::Parts(vec![Part {
                kind: PartKind::Other,
                raw: serde_json::from_str(text)
                    .unwrap_or_else(|_| Value::from(text))
                    .into(),
                slot: None,
            }]),
        )],
        _ => Vec::new(),
    })
}

/// One entry of the UI log written back.
fn write_ui(rec: &Map<String, Value>, m: &Message) -> Option<Map<String, Value>> {
    let mut out = rec.clone();
    let text = match (m.calls().first(), &m.content) {
        (Some(c), _) => match arguments_value(&c.arguments) {
            Value::Object(a) => a
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            other => arguments_text(&other),
        },
        (None, Content::Parts(parts)) => match parts.first().map(|p| &*p.raw) {
            Some(Value::Object(o)) if o.get("type").and_then(Value::as_str) == Some("thinking") => {
                o.get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            }
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
        (None, c) => c.text(),
    };
    let unchanged = match read_ui(&Fields::from(rec.clone())).ok()?.first() {
        Some(orig) => orig.content == m.content && orig.tool_calls == m.tool_calls,
        None => true,
    };
    if !unchanged {
        out.insert("text".into(), Value::from(text));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::format::{read_document, write_document, Format};
    use crate::transcript::{Content, Role};

    fn read(path: &str) -> crate::format::Document {
        let bytes = std::fs::read(format!(
            "{}/../fixtures/cline/{path}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        read_document(path, bytes, &Default::default()).unwrap()
    }

    fn write(doc: &crate::format::Document) -> String {
        let mut out = Vec::new();
        write_document(doc, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn native_calls_and_text_results_pair() {
        let doc = read("api_conversation_history.json");
        assert_eq!(doc.source_format, Format::Cline);
        let msgs = &doc.conversations[0].messages;
        let results: Vec<_> = msgs.iter().filter(|m| m.role == Role::Tool).collect();
        assert_eq!(results.len(), 4);
        assert_eq!(
            results[0].tool_call_id.as_deref(),
            Some("toolu_01Hq2XyZvAaBbCcDdEe11")
        );
        assert!(results[0].content.text().starts_with("class Cart:"));
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        assert!(msgs
            .iter()
            .any(|m| m.role == Role::User && m.content.text().contains("<environment_details>")));
        let original = std::fs::read_to_string(format!(
            "{}/../fixtures/cline/api_conversation_history.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(write(&doc), original);
    }

    #[test]
    fn results_take_the_first_open_call_of_their_name_else_the_first_open_one() {
        let call = |id: &str, name: &str| {
            format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}"#)
        };
        let result = |name: &str| {
            format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"[{name} for 'x'] Result:"}},{{"type":"text","text":"out"}}]}}"#
            )
        };
        let calls = [
            call("t1", "read_file"),
            call("t2", "list_files"),
            call("t3", "read_file"),
            call("t4", "search_files"),
        ];
        let results = ["search_files", "execute_command", "read_file", "list_files"].map(result);
        let text = format!(
            r#"[{{"role":"user","content":[{{"type":"text","text":"<task>\ngo\n</task>"}}]}},{{"role":"assistant","content":[{}]}},{}]"#,
            calls.join(","),
            results.join(",")
        );
        let doc = read_document("t.json", text.into_bytes(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Cline);
        let ids: Vec<_> = doc.conversations[0]
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .map(|m| m.tool_call_id.as_deref().unwrap_or("-"))
            .collect();
        // By name; the one no call is named takes the first open (t1), so
        // the next read_file takes t3.
        assert_eq!(ids, ["t4", "t1", "t3", "t2"]);
    }

    #[test]
    fn a_block_of_many_xml_calls_is_written_back_in_its_place() {
        // 600 calls and the text between them: 1,200 pieces in one block,
        // more than the 1,000 slots a block once had (its later pieces went
        // after the next block).
        let calls: String = (0..600)
            .map(|i| format!("step {i}\n<read_file>\n<path>f{i}.py</path>\n</read_file>\n"))
            .collect();
        let mut msgs = vec![
            serde_json::json!({"role": "user", "content": [{"type": "text", "text": "<task>\nread\n</task>"}]}),
            serde_json::json!({"role": "assistant", "content": [
                {"type": "text", "text": calls},
                {"type": "text", "text": "the second block"}
            ]}),
        ];
        for i in 0..600 {
            msgs.push(serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": format!("[read_file for 'f{i}.py'] Result:")},
                {"type": "text", "text": format!("contents {i}")}
            ]}));
        }
        let text = serde_json::to_string(&msgs).unwrap();
        let doc = read_document("t.json", text.clone().into_bytes(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Cline);
        assert_eq!(doc.conversations[0].messages[1].calls().len(), 600);
        assert_eq!(write(&doc), text);
    }

    #[test]
    fn a_changed_result_keeps_its_header() {
        let mut doc = read("api_conversation_history.json");
        let i = doc.conversations[0]
            .messages
            .iter()
            .position(|m| m.role == Role::Tool)
            .unwrap();
        doc.conversations[0].messages[i].content = Content::Text("[Tool: 11 lines]".into());
        let v: serde_json::Value = serde_json::from_str(&write(&doc)).unwrap();
        assert_eq!(
            v[2]["content"][0]["text"],
            "[read_file for 'src/cart.py'] Result:\n[Tool: 11 lines]"
        );
        assert!(v[2]["content"][1]["text"]
            .as_str()
            .unwrap()
            .starts_with("[read_file for 'tests/test_cart.py'] Result:\nfrom cart"));
    }

    #[test]
    fn xml_calls_and_header_blocks() {
        let doc = read("xml-tools.json");
        assert_eq!(doc.source_format, Format::Cline);
        let msgs = &doc.conversations[0].messages;
        let calls: Vec<&str> = msgs
            .iter()
            .flat_map(|m| m.calls())
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            calls,
            [
                "write_to_file",
                "execute_command",
                "execute_command",
                "read_file"
            ]
        );
        assert!(
            crate::pairs::pair_problems(msgs).is_empty(),
            "{:?}",
            crate::pairs::pair_problems(msgs)
        );
        let original = std::fs::read_to_string(format!(
            "{}/../fixtures/cline/xml-tools.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(write(&doc), original);
    }

    #[test]
    fn the_ui_log_reads_too() {
        let doc = read("ui_messages.json");
        assert_eq!(doc.source_format, Format::Cline);
        let msgs = &doc.conversations[0].messages;
        assert_eq!(msgs[0].role, Role::User);
        assert!(msgs.iter().any(|m| m.has_calls()));
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        let original = std::fs::read_to_string(format!(
            "{}/../fixtures/cline/ui_messages.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(write(&doc), original);
    }

    #[test]
    fn roo_code_mode_switches_and_ui_tasks() {
        // Issue 29: the texts of a public Roo Code task export.
        let history = serde_json::json!([
            {"role": "user", "content": [{"type": "text", "text": "<task>\nPlan the RepoTour feature\n</task>"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "<switch_mode>\n<mode_slug>code</mode_slug>\n<reason>Planning phase complete.</reason>\n</switch_mode>"}]},
            {"role": "user", "content": [{"type": "text", "text": "[switch_mode to 'code' because: Planning phase complete.] Result:\nSuccessfully switched from 📝 Plan mode to 💻 Code mode because: Planning phase complete."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Switched."}]}
        ]);
        let doc = read_document("h.json", history.to_string().into(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::Cline);
        let msgs = &doc.conversations[0].messages;
        let result = msgs.iter().find(|m| m.role == Role::Tool).unwrap();
        assert_eq!(result.name.as_deref(), Some("switch_mode"));
        assert!(crate::pairs::pair_problems(msgs).is_empty());
        // A UI log opening with the task as `say: "text"`.
        let ui = serde_json::json!([
            {"ts": 1, "type": "say", "say": "text", "text": "Fix the cart total", "images": []},
            {"ts": 2, "type": "say", "say": "api_req_started", "text": "{}"},
            {"ts": 3, "type": "say", "say": "text", "text": "I'll read the cart first."}
        ]);
        let doc = read_document("ui.json", ui.to_string().into(), &Default::default()).unwrap();
        let roles: Vec<Role> = doc.conversations[0]
            .messages
            .iter()
            .map(|m| m.role)
            .collect();
        assert_eq!(roles, [Role::User, Role::Assistant]);
    }
}
