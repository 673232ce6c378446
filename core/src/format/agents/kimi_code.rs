//! Kimi Code sessions (`~/.kimi-code/sessions/wd_<dir>/session_<id>/agents/<agent>/wire.jsonl`,
//! `$KIMI_CODE_HOME` in place of `~/.kimi-code`): each agent's log of
//! records, `{type, …, time}`, after a `metadata` header. Kimi Code builds
//! what it sends from the `context.*` records, in order:
//!
//! - `context.append_message`: a whole message (`{role, content: [parts],
//!   toolCalls, toolCallId, origin}`), the user's turns mostly;
//! - `context.append_loop_event`: a step of the model, one record per
//!   piece: `step.begin` opens an assistant message, each `content.part`
//!   adds a part (`text`, `think`, `image_url`) and each `tool.call` a call
//!   (`{toolCallId, name, args}`), `step.end` closes it; a `tool.result`
//!   (`{toolCallId, result: {output, isError}}`) is the call's result;
//! - `context.apply_compaction`: a summary (`summary` or `contextSummary`)
//!   that replaces what came before, but for the user's own messages, which
//!   Kimi Code keeps; `context.clear` empties the context; `context.undo`
//!   takes back the last `count` of the user's turns.
//!
//! Each piece of a step is read as a message of its own (as Claude Code's
//! lines are), so a part or a call removed takes its record with it, and a
//! step left with nothing is one Kimi Code drops itself. Every other record
//! (turns, usage, tools, permissions) passes through as it came.

use serde_json::{Map, Value};

use crate::format::convert::{arguments_text, arguments_value};
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{
    Content, Conversation, Fields, Message, MessageData, Part, Role, ToolCall,
};

/// Kimi Code wire logs.
pub(crate) struct KimiCode;

fn ty(v: &Map<String, Value>) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// The event of a `context.append_loop_event` record, and its type.
fn event(r: &Map<String, Value>) -> Option<(&Map<String, Value>, &str)> {
    if ty(r) != Some("context.append_loop_event") {
        return None;
    }
    let e = r.get("event")?.as_object()?;
    Some((e, ty(e)?))
}

/// Whether JSONL records are a Kimi Code wire log: its `metadata` header,
/// or records of its context (a message or an event of a step).
pub(crate) fn is_wire(records: &[&Map<String, Value>]) -> bool {
    let header = |r: &Map<String, Value>| {
        ty(r) == Some("metadata") && r.get("protocol_version").is_some_and(Value::is_string)
    };
    let context = |r: &Map<String, Value>| match ty(r) {
        Some("context.append_message") => r.get("message").is_some_and(Value::is_object),
        Some("context.append_loop_event") => event(r).is_some(),
        _ => false,
    };
    let headed = records.first().is_some_and(|r| header(r));
    // A session that has no message yet is its header and Kimi Code's own
    // records, each typed.
    (headed && records.iter().all(|r| ty(r).is_some()))
        || (records.iter().any(|r| context(r))
            && (headed || records.iter().filter(|r| context(r)).count() * 2 >= records.len()))
}

fn part(p: &Value, k: usize) -> Part {
    crate::format::dialect::typed_part(p, k, "image_url")
}

fn parts(items: &[Value]) -> Content {
    Content::Parts(items.iter().enumerate().map(|(k, p)| part(p, k)).collect())
}

/// A call of a message's `toolCalls` (`{type: function, id, name,
/// arguments}`; the oldest logs nest `name` and `arguments` in `function`).
fn listed_call(c: &Value, k: usize) -> ToolCall {
    let f = c.get("function").unwrap_or(c);
    let s = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    ToolCall {
        id: s(c, "id"),
        name: s(f, "name").unwrap_or_else(|| "tool".into()),
        arguments: arguments_text(f.get("arguments").unwrap_or(&Value::Null)),
        raw: c.clone().into(),
        slot: Some(k),
    }
}

/// The content of a result's `output`: a string, or parts.
fn output_content(output: &Value) -> Content {
    match output {
        Value::String(s) => Content::Text(s.clone()),
        Value::Array(items) => parts(items),
        _ => Content::Text(String::new()),
    }
}

/// The message of a `context.append_message` record.
fn read_message(m: &Map<String, Value>) -> Result<Vec<Message>, Fault> {
    let role = crate::format::dialect::four_roles(m, "Kimi Code")?;
    let content = match m.get("content") {
        Some(Value::Array(items)) => parts(items),
        Some(Value::String(s)) => Content::Text(s.clone()),
        _ => return Err("a message's \"content\" is a list of parts".into()),
    };
    let calls: Vec<ToolCall> = m
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, c)| listed_call(c, k))
        .collect();
    Ok(vec![Message::from(MessageData {
        content,
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_call_id: m
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_string),
        name: m.get("name").and_then(Value::as_str).map(str::to_string),
        fields: Fields::from(m.clone()),
        ..MessageData::new(role, "")
    })])
}

/// The message of one piece of a step.
fn read_event(e: &Map<String, Value>, kind: &str) -> Vec<Message> {
    let s = |key: &str| e.get(key).and_then(Value::as_str).map(str::to_string);
    match kind {
        "content.part" => vec![Message::from(MessageData {
            content: Content::Parts(vec![part(e.get("part").unwrap_or(&Value::Null), 0)]),
            ..MessageData::new(Role::Assistant, "")
        })],
        "tool.call" => vec![Message::from(MessageData {
            content: Content::Parts(Vec::new()),
            tool_calls: Some(vec![ToolCall {
                id: s("toolCallId"),
                name: s("name").unwrap_or_else(|| "tool".into()),
                arguments: arguments_text(e.get("args").unwrap_or(&Value::Null)),
                raw: Value::Object(e.clone()).into(),
                slot: None,
            }]),
            ..MessageData::new(Role::Assistant, "")
        })],
        "tool.result" => {
            let result = e.get("result");
            let output = result.and_then(|r| r.get("output")).unwrap_or(&Value::Null);
            vec![Message::from(MessageData {
                content: output_content(output),
                tool_call_id: s("toolCallId"),
                ..MessageData::new(Role::Tool, "")
            })]
        }
        _ => Vec::new(),
    }
}

/// The key that holds a compaction's summary: `contextSummary` before
/// `summary`, as Kimi Code reads them.
fn summary_key(r: &Map<String, Value>) -> Option<&'static str> {
    ["contextSummary", "summary"]
        .into_iter()
        .find(|k| r.get(*k).is_some_and(Value::is_string))
}

/// Parts written back from a message's content: each part where it was,
/// and a text that an operation put in place of parts as one text part.
fn write_parts(items: &[Value], content: &Content) -> Value {
    match content {
        Content::Parts(ps) => {
            let mut kept: Vec<Option<Value>> = vec![None; items.len()];
            let mut added = Vec::new();
            for p in ps {
                match p.slot.filter(|&k| k < items.len()) {
                    Some(k) => kept[k] = Some(p.to_value()),
                    None => added.push(p.to_value()),
                }
            }
            Value::Array(kept.into_iter().flatten().chain(added).collect())
        }
        Content::Text(t) => serde_json::json!([{"type": "text", "text": t}]),
        Content::Absent | Content::Null => Value::Array(Vec::new()),
    }
}

/// A `context.append_message`'s message written back.
fn write_message(m: &Map<String, Value>, msg: &Message) -> Map<String, Value> {
    let mut out = m.clone();
    let items = m.get("content").and_then(Value::as_array);
    let content = match (items, &msg.content) {
        (Some(items), c) => write_parts(items, c),
        (None, c) => Value::String(c.text()),
    };
    set_if_changed(&mut out, "content", content);
    if let Some(Value::Array(listed)) = m.get("toolCalls") {
        let calls = msg.calls().iter().filter_map(|c| {
            let mut item = listed.get(c.slot?)?.clone();
            let nested = item.get("function").is_some_and(Value::is_object);
            let at = if nested {
                item.get_mut("function")
            } else {
                Some(&mut item)
            };
            if let Some(Value::Object(at)) = at {
                let was = arguments_text(at.get("arguments").unwrap_or(&Value::Null));
                if was != c.arguments {
                    at.insert("arguments".into(), Value::String(c.arguments.clone()));
                }
            }
            Some(item)
        });
        set_if_changed(&mut out, "toolCalls", Value::Array(calls.collect()));
    }
    out
}

/// A piece of a step written back; `None` for a part left with nothing.
fn write_event(e: &Map<String, Value>, kind: &str, msg: &Message) -> Option<Map<String, Value>> {
    let mut out = e.clone();
    match kind {
        "content.part" => {
            let original = e.get("part").cloned().into_iter().collect::<Vec<_>>();
            let Value::Array(ps) = write_parts(&original, &msg.content) else {
                return None;
            };
            // An event holds one part: what an operation made of it, or
            // several parts' text joined into one.
            let part = match <[Value; 1]>::try_from(ps) {
                Ok([p]) => p,
                Err(ps) if ps.is_empty() => return None,
                Err(_) => serde_json::json!({"type": "text", "text": msg.content.text()}),
            };
            set_if_changed(&mut out, "part", part);
        }
        "tool.call" => {
            // The call removed, its record goes with it.
            let c = msg.calls().first()?;
            let was = arguments_text(e.get("args").unwrap_or(&Value::Null));
            if was != c.arguments {
                out.insert("args".into(), arguments_value(&c.arguments));
            }
        }
        "tool.result" => {
            let mut result = e.get("result").and_then(Value::as_object).cloned();
            if let Some(r) = result.as_mut() {
                let output = match r.get("output") {
                    Some(Value::Array(items)) => write_parts(items, &msg.content),
                    _ => Value::String(msg.content.text()),
                };
                set_if_changed(r, "output", output);
            }
            if let Some(r) = result {
                set_if_changed(&mut out, "result", Value::Object(r));
            }
        }
        _ => {}
    }
    Some(out)
}

impl Dialect for KimiCode {
    fn records_path(&self, _obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        None
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        match ty(rec) {
            Some("context.append_message") => match rec.get("message") {
                Some(Value::Object(m)) => read_message(m),
                _ => Err("a context.append_message record has a \"message\" object".into()),
            },
            // Emptied (its summary removed), it says nothing.
            Some("context.apply_compaction") => Ok(summary_key(rec)
                .and_then(|k| rec.get(k)?.as_str())
                .filter(|s| !s.is_empty())
                .map(|s| Message::new(Role::User, s))
                .into_iter()
                .collect()),
            _ => Ok(event(rec).map_or_else(Vec::new, |(e, kind)| read_event(e, kind))),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let msg = msgs.first()?;
        let mut out = rec.clone();
        match ty(rec) {
            Some("context.append_message") => {
                let m = rec.get("message")?.as_object()?;
                set_if_changed(&mut out, "message", Value::Object(write_message(m, msg)));
            }
            Some("context.apply_compaction") => {
                let key = summary_key(rec)?;
                set_if_changed(&mut out, key, Value::String(msg.content.text()));
            }
            _ => {
                let (e, kind) = event(rec)?;
                set_if_changed(&mut out, "event", Value::Object(write_event(e, kind, msg)?));
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
        crate::format::dialect::text_records(msgs, losses, "a Kimi Code log", |role, text| {
            serde_json::json!({
                "type": "context.append_message",
                "message": {
                    "role": crate::format::dialect::four_roles_word(role),
                    "content": [{"type": "text", "text": text}],
                    "toolCalls": [],
                },
            })
        })
    }

    /// A message added (a summary) before a compaction or a clear would be
    /// wiped by it when Kimi Code replays its context (a compaction keeps
    /// only the user's own messages): it goes right after the last one,
    /// where the context last starts over.
    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        _original: &[crate::transcript::Record],
        out: &mut [OutRecord],
    ) {
        let wipes = |r: &OutRecord| {
            r.object()
                .and_then(ty)
                .is_some_and(|t| t == "context.apply_compaction" || t == "context.clear")
        };
        let Some(last) = out.iter().rposition(wipes) else {
            return;
        };
        // The added records before it, in their order, go right after it
        // (a stable sort: the others keep their order, it among them).
        out[..=last].sort_by_key(|r| r.added);
    }

    /// A compaction whose summary was removed stays, its summary emptied:
    /// it is still where Kimi Code's context starts over.
    fn emptied(&self, rec: &Fields) -> Option<Map<String, Value>> {
        rec.peek(|rec| {
            let key = summary_key(rec)?;
            let mut out = rec.clone();
            out.insert(key.into(), Value::String(String::new()));
            Some(out)
        })
    }

    fn picks_active(&self) -> bool {
        true
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        let active = active(records);
        active.contains(&false).then_some(active)
    }

    fn content_key(&self) -> Option<&'static str> {
        None
    }

    /// Says how many records that hold a message were not read (those
    /// [`KimiCode::active`] left out: no message came from them).
    fn after_read(&self, conv: &mut Conversation) {
        let mut read = vec![false; conv.records.len()];
        for r in conv
            .messages
            .iter()
            .filter_map(|m| m.origin.as_ref()?.record)
        {
            if let Some(x) = read.get_mut(r) {
                *x = true;
            }
        }
        let left: Vec<usize> = conv
            .records
            .iter()
            .zip(read)
            .filter(|(r, read)| !read && r.value.as_deref().is_some_and(holds_message))
            .map(|(r, _)| r.line)
            .collect();
        if let Some(last) = left.last() {
            conv.notes.push(format!(
                "{} up to line {last} left Kimi Code's context (a compaction, a clear or an undo): kept in the log as they are and not read",
                crate::numbers::plural(left.len(), "message record"),
            ));
        }
    }
}

/// Whether a record holds a message of the context.
fn holds_message(r: &Map<String, Value>) -> bool {
    match ty(r) {
        Some("context.append_message") => true,
        Some("context.apply_compaction") => {
            summary_key(r).is_some_and(|k| r.get(k).and_then(Value::as_str) != Some(""))
        }
        _ => {
            event(r).is_some_and(|(_, k)| matches!(k, "content.part" | "tool.call" | "tool.result"))
        }
    }
}

/// Whether a record is a message the user typed (what a compaction keeps
/// and an undo takes back): a user message whose `origin` is the user's.
fn user_turn(r: &Map<String, Value>) -> bool {
    let Some(m) = r
        .get("message")
        .filter(|_| ty(r) == Some("context.append_message"))
    else {
        return false;
    };
    let origin = m
        .get("origin")
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str);
    m.get("role").and_then(Value::as_str) == Some("user") && matches!(origin, None | Some("user"))
}

/// Which records Kimi Code's context holds, replayed in order: a clear
/// leaves nothing before it, a compaction only the user's own messages
/// (in the oldest logs, which give no `keptUserMessageCount`, none: Kimi
/// Code kept the messages past `compactedCount` there, before the summary,
/// an order the records do not have),
/// and an undo of `count` turns takes back the records from the
/// `count`-th last user message on (unless a compaction is in the way,
/// when Kimi Code refuses it).
fn active(records: &[Option<&Map<String, Value>>]) -> Vec<bool> {
    let mut ctx = Context::default();
    for (i, r) in records.iter().enumerate() {
        match r.and_then(|r| ty(r)) {
            Some("context.clear") => ctx.clear(),
            Some("context.apply_compaction") => {
                let r = r.expect("a type is read from a record");
                let keeps_users = r.contains_key("keptUserMessageCount")
                    || r.get("legacyTail") == Some(&Value::Bool(false));
                ctx.compact(keeps_users);
                ctx.push(i, false, true);
                continue;
            }
            Some("context.undo") => {
                let r = r.expect("a type is read from a record");
                ctx.undo(r.get("count").and_then(Value::as_u64).unwrap_or(1));
            }
            _ => {}
        }
        ctx.push(i, r.is_some_and(user_turn), false);
    }
    let mut active = vec![false; records.len()];
    for &i in &ctx.live {
        active[i] = true;
    }
    active
}

/// The records in Kimi Code's context as [`active`] replays them: each
/// record goes in and out at most once, so the log is replayed in linear
/// time whatever its clears, compactions and undos.
#[derive(Default)]
struct Context {
    /// The records in the context, in order.
    live: Vec<usize>,
    /// For each of `live`: the user turns up to it, itself included.
    users: Vec<u64>,
    /// Where in `live` compactions are.
    compactions: Vec<usize>,
    /// `live[..checked]` are what a compaction kept already (user turns).
    checked: usize,
}

impl Context {
    fn push(&mut self, i: usize, user: bool, compaction: bool) {
        let before = self.users.last().copied().unwrap_or(0);
        if compaction {
            self.compactions.push(self.live.len());
        }
        self.live.push(i);
        self.users.push(before + u64::from(user));
    }

    fn truncate(&mut self, len: usize) {
        self.live.truncate(len);
        self.users.truncate(len);
        self.compactions.retain(|&p| p < len);
        self.checked = self.checked.min(len);
    }

    fn clear(&mut self) {
        self.truncate(0);
    }

    /// A compaction keeps the user's own turns (`keeps_users`), or nothing.
    fn compact(&mut self, keeps_users: bool) {
        if !keeps_users {
            return self.clear();
        }
        let start = self.checked;
        let mut kept = start;
        for k in start..self.live.len() {
            let user = self.users[k] > if k == 0 { 0 } else { self.users[k - 1] };
            if user {
                self.live[kept] = self.live[k];
                kept += 1;
            }
        }
        self.live.truncate(kept);
        self.users.truncate(start);
        let mut n = self.users.last().copied().unwrap_or(0);
        for _ in start..kept {
            n += 1;
            self.users.push(n);
        }
        self.compactions.clear();
        self.checked = kept;
    }

    /// An undo of `count` turns takes back the records from the `count`-th
    /// last user turn on, unless a compaction is in the way.
    fn undo(&mut self, count: u64) {
        if count == 0 {
            return;
        }
        let total = self.users.last().copied().unwrap_or(0);
        let since = self.compactions.last().map_or(0, |&p| self.users[p]);
        if total - since < count {
            return;
        }
        // The first place where the users up to it reach total - count + 1.
        let want = total - count + 1;
        let cut = self.users.partition_point(|&u| u < want);
        self.truncate(cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(lines: &[Value]) -> Vec<Map<String, Value>> {
        lines
            .iter()
            .map(|l| l.as_object().unwrap().clone())
            .collect()
    }

    fn user(text: &str) -> Value {
        serde_json::json!({"type": "context.append_message", "message": {"role": "user", "content": [{"type": "text", "text": text}], "toolCalls": []}})
    }

    fn said(text: &str) -> Value {
        serde_json::json!({"type": "context.append_loop_event", "event": {"type": "content.part", "stepUuid": "s", "part": {"type": "text", "text": text}}})
    }

    fn active_of(lines: &[Value]) -> Vec<bool> {
        let recs = records(lines);
        let refs: Vec<Option<&Map<String, Value>>> = recs.iter().map(Some).collect();
        active(&refs)
    }

    #[test]
    fn a_clear_leaves_nothing_before_it_and_an_undo_takes_back_whole_turns() {
        let clear = serde_json::json!({"type": "context.clear"});
        let undo = serde_json::json!({"type": "context.undo", "count": 2});
        let lines = [
            user("a"),
            said("1"),
            clear,
            user("b"),
            said("2"),
            user("c"),
            said("3"),
            undo,
            user("d"),
        ];
        assert_eq!(
            active_of(&lines),
            [false, false, true, false, false, false, false, true, true]
        );
    }

    #[test]
    fn an_undo_does_not_cross_a_compaction_and_the_oldest_compactions_keep_no_user_message() {
        let legacy = serde_json::json!({"type": "context.apply_compaction", "summary": "s", "compactedCount": 2});
        let undo = serde_json::json!({"type": "context.undo", "count": 2});
        let lines = [user("a"), said("1"), legacy, user("b"), undo];
        // Two turns asked, one there since the compaction: nothing undone.
        assert_eq!(active_of(&lines), [false, false, true, true, true]);
        let current = serde_json::json!({"type": "context.apply_compaction", "summary": "s", "compactedCount": 2, "keptUserMessageCount": 1});
        let injected = serde_json::json!({"type": "context.append_message", "message": {"role": "user", "content": [], "toolCalls": [], "origin": {"kind": "injection", "variant": "plan_mode"}}});
        let lines = [user("a"), injected, said("1"), current];
        assert_eq!(active_of(&lines), [true, false, false, true]);
    }
}
