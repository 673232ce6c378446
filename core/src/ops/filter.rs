//! `ctxclean filter`: drop what the next model call does not need.
//!
//! Every rule is a flag and several combine in one run; rules apply in a
//! fixed order (the order of [`FilterSpec`]'s fields), and with no rule the
//! transcript passes through unchanged. After the rules, tool pairs are
//! repaired: a result whose call went is removed, and a call whose result
//! went is stripped (its message too, when nothing else is left in it),
//! except in the active cycle at the very end.
//!
//! Works on one conversation at a time; it does not need the others.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::Outcome;
use crate::changes::{Action, Change};
use crate::pairs::{active_cycle, CallRef, Pairing};
use crate::transcript::{Content, Conversation, Message, Part, PartKind, Role};

/// The rules of `filter`. Each is off unless set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterSpec {
    /// Drop tool traffic from query cycles before the last user message.
    pub previous_cycles: bool,
    /// Keep only what this agent would have heard (multi-agent memories).
    pub agent: Option<String>,
    /// With `agent`: keep only messages of this chat.
    pub chat_id: Option<String>,
    /// `(tool, argument)`: of calls to the tool with the same value of the
    /// argument (`*`: the same arguments), keep only the latest.
    pub supersede: Vec<(String, String)>,
    /// Replace images that an assistant has already answered with a note.
    pub strip_processed_images: bool,
    /// Replace a result identical to an earlier result of the same tool.
    pub dedupe_tool_results: bool,
    /// Replace tool results whose distinctive strings all appear later.
    pub moved_past: bool,
    /// Replace the large argument values of a call that failed and was
    /// retried on the same target.
    pub retried_failures: bool,
    /// Replace the large argument strings of a call that wrote to a file
    /// a later call read again whole.
    pub read_again: bool,
    /// Drop thinking blocks from assistant turns older than the last
    /// `keep_thinking_turns`.
    pub drop_thinking: bool,
    /// With `drop_thinking`: how many of the last assistant turns keep theirs.
    pub keep_thinking_turns: usize,
    /// Keep only messages of these roles.
    pub include_roles: Option<Vec<Role>>,
    /// Drop messages of these roles.
    pub exclude_roles: Vec<Role>,
    /// Keep only messages with one of these names.
    pub include_names: Option<Vec<String>>,
    /// Drop messages with one of these names.
    pub exclude_names: Vec<String>,
    /// Drop the calls of these tools and their results.
    pub exclude_tools: Vec<String>,
    /// Drop all tool traffic.
    pub exclude_tool_calls: bool,
}

impl FilterSpec {
    /// Whether any rule is on.
    pub fn is_empty(&self) -> bool {
        !(self.previous_cycles
            || self.agent.is_some()
            || !self.supersede.is_empty()
            || self.strip_processed_images
            || self.dedupe_tool_results
            || self.moved_past
            || self.retried_failures
            || self.read_again
            || self.drop_thinking
            || self.include_roles.is_some()
            || !self.exclude_roles.is_empty()
            || self.include_names.is_some()
            || !self.exclude_names.is_empty()
            || !self.exclude_tools.is_empty()
            || self.exclude_tool_calls)
    }
}

/// Messages at their input positions; `None` once removed.
struct Work {
    slots: Vec<Option<Message>>,
    changes: Vec<Change>,
}

impl Work {
    fn remove(&mut self, i: usize, rule: &str, what: &str) {
        if let Some(m) = self.slots[i].take() {
            self.changes
                .push(change(&m, i, Action::Removed, rule, what));
        }
    }

    fn modified(&mut self, i: usize, rule: &str, what: &str) {
        if let Some(m) = &self.slots[i] {
            self.changes
                .push(change(m, i, Action::Modified, rule, what));
        }
    }

    /// The live messages, with their slot numbers.
    fn live(&self) -> (Vec<usize>, Vec<&Message>) {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.as_ref().map(|m| (i, m)))
            .unzip()
    }

    /// Removes calls (by slot and position) from their messages; a message
    /// left with no calls and nothing to say goes too.
    fn strip_calls(&mut self, calls: &[(usize, usize)], rule: &str) {
        let mut by_msg: HashMap<usize, Vec<usize>> = HashMap::new();
        for &(i, c) in calls {
            by_msg.entry(i).or_default().push(c);
        }
        let mut order: Vec<usize> = by_msg.keys().copied().collect();
        order.sort_unstable();
        for i in order {
            let drop_calls = &by_msg[&i];
            let Some(m) = self.slots[i].as_mut() else {
                continue;
            };
            let remaining: Vec<_> = m
                .calls()
                .iter()
                .enumerate()
                .filter(|(c, _)| !drop_calls.contains(c))
                .map(|(_, call)| call.clone())
                .collect();
            if remaining.is_empty() && m.content.is_blank() {
                self.remove(i, rule, "empty assistants removed");
            } else {
                m.tool_calls = if remaining.is_empty() {
                    None
                } else {
                    Some(remaining)
                };
                self.modified(i, rule, "tool_calls stripped");
            }
        }
    }
}

fn change(m: &Message, i: usize, action: Action, rule: &str, what: &str) -> Change {
    let mut c = Change::of(m, i, action, rule);
    c.detail.insert("what".into(), Value::from(what));
    c
}

/// Applies `filter` to one conversation.
pub fn filter(conv: Conversation, spec: &FilterSpec) -> Outcome {
    let mut conv = conv;
    let mut w = Work {
        slots: std::mem::take(&mut conv.messages)
            .into_iter()
            .map(Some)
            .collect(),
        changes: Vec::new(),
    };
    // Per --supersede rule: the calls of its tool, and of those the ones
    // keyed on its argument, so that a rule that never matched is told.
    let mut superseding: Vec<Value> = Vec::new();
    if !spec.is_empty() {
        if spec.previous_cycles {
            previous_cycles(&mut w);
        }
        if let Some(name) = &spec.agent {
            agent(&mut w, name, spec.chat_id.as_deref());
        }
        for (tool, arg) in &spec.supersede {
            let (calls, keyed) = supersede(&mut w, tool, arg);
            superseding.push(serde_json::json!({
                "rule": supersede_rule(tool, arg),
                "calls": calls,
                "keyed": keyed,
            }));
        }
        if spec.strip_processed_images {
            strip_processed_images(&mut w);
        }
        if spec.dedupe_tool_results {
            dedupe_tool_results(&mut w);
        }
        if spec.retried_failures {
            retried_failures(&mut w);
        }
        if spec.read_again {
            read_again(&mut w);
        }
        if spec.moved_past {
            moved_past(&mut w);
        }
        select(&mut w, spec);
        repair_pairs(&mut w);
        // After the calls that go have gone: a reasoning item kept for the
        // call after it is not kept for a call that went (a second run
        // would take it).
        if spec.drop_thinking {
            drop_thinking(&mut w, spec.keep_thinking_turns);
        }
        lone_reasoning(&mut w);
    }
    let had = w.slots.len();
    conv.messages = w.slots.into_iter().flatten().collect();
    let mut out = Outcome::new(conv, w.changes);
    if !superseding.is_empty() {
        out.flags
            .insert("supersede".into(), Value::Array(superseding));
    }
    if had > 0 && out.conversation.messages.is_empty() {
        // The rules asked for it, but it is never done in silence.
        let mut rules: Vec<&str> = Vec::new();
        for c in &out.changes {
            if !rules.contains(&c.reason.as_str()) {
                rules.push(&c.reason);
            }
        }
        let reason = format!("every message was removed by {}", rules.join(", "));
        out.flags.insert("emptied".into(), Value::Bool(true));
        out.flags
            .insert("emptied_reason".into(), Value::from(reason));
    }
    out
}

/// Whether the user message at `u` came in one record with tool results
/// (Cline and Roo append `environment_details` to every result): it
/// answers calls and belongs to their cycle, whatever text rides with it.
fn rides_with_results(slots: &[Option<Message>], u: usize) -> bool {
    let record = |i: usize| slots[i].as_ref().and_then(|m| m.origin.as_ref()?.record);
    let Some(r) = record(u) else {
        return false;
    };
    let same = |i: &usize| record(*i) == Some(r);
    let result = |i: usize| slots[i].as_ref().is_some_and(|m| m.role.is_result());
    (0..u).rev().take_while(same).any(result) || (u + 1..slots.len()).take_while(same).any(result)
}

/// Rule 1: before the last user message that opens a cycle (not one that
/// rides with tool results), tool results go, calls are stripped from
/// assistants that also say something, and assistants that only called
/// tools go.
fn previous_cycles(w: &mut Work) {
    let Some(last_user) = (0..w.slots.len()).rev().find(|&i| {
        w.slots[i].as_ref().is_some_and(|m| m.role == Role::User)
            && !rides_with_results(&w.slots, i)
    }) else {
        return;
    };
    const RULE: &str = "previous cycles";
    for i in 0..last_user {
        let Some(m) = w.slots[i].as_mut() else {
            continue;
        };
        if m.role.is_result() {
            w.remove(i, RULE, "tool messages");
        } else if m.role == Role::Assistant && m.tool_calls.is_some() {
            if m.content.is_blank() {
                w.remove(i, RULE, "empty assistants removed");
            } else {
                m.tool_calls = None;
                w.modified(i, RULE, "tool_calls stripped");
            }
        }
    }
}

/// A mention: `@` followed by `[A-Za-z0-9_]+(?:[-_][A-Za-z0-9_]+)*`.
fn mention_at(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('@')?;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let bytes = rest.as_bytes();
    let mut end = 0;
    loop {
        let start = end;
        while end < bytes.len() && word(bytes[end] as char) {
            end += 1;
        }
        if end == start {
            // A separator not followed by a word char: stop before it.
            if start == 0 {
                return None;
            }
            return Some(&rest[..start - 1]);
        }
        if end < bytes.len() && (bytes[end] == b'-' || bytes[end] == b'_') {
            end += 1;
            continue;
        }
        return Some(&rest[..end]);
    }
}

/// All mentions, lowercased.
pub(crate) fn mentions(text: &str) -> Vec<String> {
    text.match_indices('@')
        .filter_map(|(i, _)| mention_at(&text[i..]))
        .map(str::to_lowercase)
        .collect()
}

/// Mentions that begin a line (after leading whitespace), lowercased.
pub(crate) fn paragraph_mentions(text: &str) -> Vec<String> {
    text.split('\n')
        .filter_map(|line| mention_at(line.trim_start()))
        .map(str::to_lowercase)
        .collect()
}

fn field_str<'a>(m: &'a Message, key: &str) -> Option<&'a str> {
    m.extra(key).and_then(Value::as_str)
}

/// Rule 2: what agent `name` would have heard.
fn agent(w: &mut Work, name: &str, chat_id: Option<&str>) {
    const RULE: &str = "agent";
    let me = name.to_lowercase();
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let mut keep = vec![true; msgs.len()];
    let mut why = vec![""; msgs.len()];
    for (k, m) in msgs.iter().enumerate() {
        if m.role.is_instruction() || m.role.is_result() {
            continue;
        }
        let sender = field_str(m, "sender")
            .or(m.name.as_deref())
            .map(str::to_lowercase)
            .or_else(|| (m.role == Role::User).then(|| "human".to_string()));
        let text = m.content.text();
        let (k_keep, k_why) = if chat_id.is_some_and(|id| field_str(m, "chatId") != Some(id)) {
            (false, "messages from another chat")
        } else if m.role == Role::Assistant
            && (field_str(m, "agentId").is_some_and(|a| a.to_lowercase() == me)
                || sender.as_deref() == Some(&me))
        {
            (true, "")
        } else if sender.as_deref() == Some(&me) {
            (false, "messages sent in this agent's name")
        } else if text.contains("Turn limit reached") {
            (false, "turn-limit notices")
        } else {
            match sender.as_deref() {
                None | Some("system") => (false, "messages from the system or no sender"),
                Some("world") => (true, ""),
                Some("human" | "user" | "you") => {
                    let pb = paragraph_mentions(&text);
                    if pb.is_empty() {
                        (
                            mentions(&text).is_empty(),
                            "messages mentioning someone else",
                        )
                    } else {
                        (pb.contains(&me), "messages addressed to someone else")
                    }
                }
                Some(_) => (
                    paragraph_mentions(&text).contains(&me),
                    "messages not addressed to this agent",
                ),
            }
        };
        keep[k] = k_keep;
        why[k] = k_why;
    }
    // A tool result goes with the message holding its call.
    for (k, m) in msgs.iter().enumerate() {
        if m.role.is_result() {
            keep[k] = pairing.result_of(k).is_some_and(|r| keep[r.message]);
            why[k] = "results whose call was not heard";
        }
    }
    for k in 0..msgs.len() {
        if !keep[k] {
            w.remove(slots[k], RULE, why[k]);
        }
    }
}

/// A --supersede rule as written: `TOOL=ARG`, or `TOOL` (no argument).
fn supersede_rule(tool: &str, arg: &str) -> String {
    if arg.is_empty() {
        tool.to_string()
    } else {
        format!("{tool}={arg}")
    }
}

/// The value a call is keyed on: an argument's value, (`*`) all of them,
/// or (no argument) none: every call of the tool alike, whatever its
/// arguments say.
fn supersede_key(arguments: &str, arg: &str) -> Option<String> {
    if arg.is_empty() {
        return Some(String::new());
    }
    let v: Value = serde_json::from_str(arguments).ok()?;
    if arg == "*" {
        return Some(v.to_string());
    }
    v.get(arg).map(Value::to_string)
}

/// Rule 3: of calls to `tool` with the same key, only the latest stays.
/// Returns how many calls `tool` had, and how many of them had the key.
fn supersede(w: &mut Work, tool: &str, arg: &str) -> (usize, usize) {
    let rule = format!("supersede {}", supersede_rule(tool, arg));
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let mut latest: HashMap<String, CallRef> = HashMap::new();
    let mut older: Vec<CallRef> = Vec::new();
    let (mut calls_seen, mut keyed) = (0, 0);
    for (k, m) in msgs.iter().enumerate() {
        for (c, call) in m.calls().iter().enumerate() {
            if call.name != tool {
                continue;
            }
            calls_seen += 1;
            let Some(key) = supersede_key(&call.arguments, arg) else {
                continue;
            };
            keyed += 1;
            if let Some(prev) = latest.insert(
                key,
                CallRef {
                    message: k,
                    call: c,
                },
            ) {
                older.push(prev);
            }
        }
    }
    let results: Vec<usize> = older
        .iter()
        .filter_map(|r| pairing.answer(*r))
        .map(|k| slots[k])
        .collect();
    let calls: Vec<(usize, usize)> = older.iter().map(|r| (slots[r.message], r.call)).collect();
    for i in results {
        w.remove(i, &rule, "superseded results");
    }
    w.strip_calls(&calls, &rule);
    (calls_seen, keyed)
}

/// The note an image is replaced with.
fn image_note(p: &Part) -> String {
    match &p.kind {
        PartKind::Image(img) => {
            let media = img.media_type.as_deref().unwrap_or("image");
            match img.bytes {
                Some(n) => format!(
                    "[image removed: {media}, {}]",
                    crate::numbers::count(n, "byte")
                ),
                None => format!("[image removed: {media}, by URL]"),
            }
        }
        _ => String::new(),
    }
}

/// Rule 4: images an assistant has already answered become a note.
fn strip_processed_images(w: &mut Work) {
    const RULE: &str = "processed images";
    let n = w.slots.len();
    let last_user = w
        .slots
        .iter()
        .rposition(|m| m.as_ref().is_some_and(|m| m.role == Role::User))
        .unwrap_or(n);
    let last_assistant = w
        .slots
        .iter()
        .rposition(|m| m.as_ref().is_some_and(|m| m.role == Role::Assistant));
    for i in 0..last_user.min(n) {
        if last_assistant.is_none_or(|a| a <= i) {
            continue;
        }
        let Some(m) = w.slots[i].as_mut() else {
            continue;
        };
        let Content::Parts(parts) = &mut m.content else {
            continue;
        };
        let mut changed = false;
        for p in parts.iter_mut() {
            if matches!(p.kind, PartKind::Image(_)) {
                let note = image_note(p);
                *p = Part {
                    slot: p.slot,
                    ..Part::text_part(note)
                };
                changed = true;
            }
        }
        if changed {
            w.modified(i, RULE, "images replaced");
        }
    }
}

/// Rule 5: a result identical to an earlier result of the same tool, when
/// the note is shorter. A note a first run left is neither the first of a
/// text nor replaced: a second run changes nothing (it pointed the note at
/// another note, not at the result).
fn dedupe_tool_results(w: &mut Work) {
    const RULE: &str = "duplicate results";
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut replace: Vec<(usize, usize)> = Vec::new();
    for (k, m) in msgs.iter().enumerate() {
        if !m.role.is_result() {
            continue;
        }
        let name = crate::pairs::result_tool_name(&msgs, &pairing, k)
            .unwrap_or_default()
            .to_string();
        let text = m.content.text();
        if is_same_note(&text) {
            continue;
        }
        match seen.get(&(name.clone(), text.clone())) {
            Some(&first) if same_note(first).len() < text.len() => replace.push((slots[k], first)),
            Some(_) => {}
            None => {
                seen.insert((name, text), m.input_index().unwrap_or(slots[k]));
            }
        }
    }
    for (i, first) in replace {
        if let Some(m) = w.slots[i].as_mut() {
            m.content = Content::Text(same_note(first));
            w.modified(i, RULE, "results replaced");
        }
    }
}

/// The note of a result the same as the one at input position `first`.
fn same_note(first: usize) -> String {
    format!("[same result as message {first}]")
}

/// Whether a text is a note [`dedupe_tool_results`] left.
fn is_same_note(text: &str) -> bool {
    text.strip_prefix("[same result as message ")
        .and_then(|t| t.strip_suffix(']'))
        .is_some_and(crate::numbers::is_digits)
}

/// A message's text as a later message may repeat a string of it: its
/// content's text and its calls' argument values, as text (not as JSON: a
/// newline in a value is a newline, as in the strings looked for).
fn said(m: &Message, out: &mut String) {
    crate::tokens::for_each_text(&m.content, |t| {
        out.push_str(t);
        out.push('\n');
    });
    for call in m.calls() {
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(Value::Object(args)) => {
                for v in args.values() {
                    match v {
                        Value::String(t) => out.push_str(t),
                        v => out.push_str(&v.to_string()),
                    }
                    out.push('\n');
                }
            }
            _ => {
                out.push_str(&call.arguments);
                out.push('\n');
            }
        }
    }
}

/// What `--moved-past` may replace: a tool result (its message), or one
/// large argument value of a call (its message, call and key).
enum Past {
    Result(usize),
    Argument(usize, usize, String),
}

/// The candidates of `--moved-past` in the live messages `msgs`, each with
/// the ids of its distinctive strings (numbered in `ids`): the tool
/// results, and each argument value over [`LARGE_ARGUMENT`] bytes of JSON
/// (a Write's content, an Edit's strings), its short values (the path, the
/// command) left to say what the call was.
fn past_candidates(msgs: &[&Message], ids: &mut HashMap<String, usize>) -> Vec<(Past, Vec<usize>)> {
    let mut number = |strings: Vec<String>| -> Vec<usize> {
        strings
            .into_iter()
            .map(|s| {
                let n = ids.len();
                *ids.entry(s).or_insert(n)
            })
            .collect()
    };
    let mut out = Vec::new();
    for (k, m) in msgs.iter().enumerate() {
        if m.role.is_result() && !is_note(&m.content.text_ref()) {
            let found = number(super::strings::distinctive(&m.content.text(), usize::MAX));
            if !found.is_empty() {
                out.push((Past::Result(k), found));
            }
        }
        for (c, call) in m.calls().iter().enumerate() {
            let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.arguments) else {
                continue;
            };
            for (key, v) in args {
                let Value::String(text) = &v else { continue };
                if !holds_large(&v) {
                    continue;
                }
                let found = number(super::strings::distinctive(text, usize::MAX));
                if !found.is_empty() {
                    out.push((Past::Argument(k, c, key), found));
                }
            }
        }
    }
    out
}

/// Argument values longer than this (as JSON) may be moved past.
const LARGE_ARGUMENT: usize = 64;

/// Rule 5b: tool results, and large argument values of calls, every
/// distinctive string of which appears in a later message (nothing it
/// named is lost: the conversation says it later), replaced by what they
/// were. The strings are found in one pass over the conversation
/// (Aho-Corasick), whatever its length. The last copy of a string always
/// stays, so the calls of the cycle in progress (nothing follows them) do.
fn moved_past(w: &mut Work) {
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let mut text = String::new();
    let mut ends = Vec::with_capacity(msgs.len());
    for m in &msgs {
        said(m, &mut text);
        ends.push(text.len());
    }
    let mut ids: HashMap<String, usize> = HashMap::new();
    let candidates = past_candidates(&msgs, &mut ids);
    let mut patterns = vec![""; ids.len()];
    for (s, &id) in &ids {
        patterns[id] = s;
    }
    let Ok(ac) = aho_corasick::AhoCorasick::new(&patterns) else {
        return;
    };
    let mut last = vec![0usize; patterns.len()];
    for found in ac.find_overlapping_iter(&text) {
        let id = found.pattern().as_usize();
        last[id] = last[id].max(found.start());
    }
    let at = |p: &Past| match p {
        Past::Result(k) | Past::Argument(k, ..) => *k,
    };
    let gone: Vec<(Past, String)> = candidates
        .into_iter()
        .filter(|(p, found)| found.iter().all(|&id| last[id] >= ends[at(p)]))
        .map(|(p, _)| {
            let name = match &p {
                Past::Result(k) => crate::pairs::result_tool_name(&msgs, &pairing, *k),
                Past::Argument(k, c, _) => Some(msgs[*k].calls()[*c].name.as_str()),
            };
            (p, name.unwrap_or("a tool").to_string())
        })
        .collect();
    drop(msgs);
    for (p, name) in gone {
        let i = slots[at(&p)];
        match p {
            Past::Result(_) => replace_result(w, i, &name),
            Past::Argument(_, c, key) => {
                let note = |bytes: usize| {
                    format!("[{key} of this {name} call moved past: every path, name and number in it appears later; {bytes} bytes]")
                };
                replace_argument(w, (i, c), &key, note, ("moved past", "arguments replaced"));
            }
        }
    }
}

/// A result moved past, replaced by what it was.
fn replace_result(w: &mut Work, i: usize, name: &str) {
    if let Some(m) = w.slots[i].as_mut() {
        let bytes = m.content.text().len();
        let note = format!(
            "[tool result of {name} moved past: every path, name and number in it appears later; {bytes} bytes]"
        );
        // A note no shorter than the result would save nothing.
        if note.len() < bytes {
            m.content = Content::Text(note);
            w.modified(i, "moved past", "results replaced");
        }
    }
}

/// An argument value `key` of call `c` of message `i`, replaced by the
/// `note` of its length in bytes (what it was, and why it went), under
/// `rule`; the call's other values (its path, its command) stay as they
/// were. A note no shorter than the value leaves it.
fn replace_argument(
    w: &mut Work,
    (i, c): (usize, usize),
    key: &str,
    note: impl Fn(usize) -> String,
    rule: (&str, &str),
) {
    let Some(call) = w.slots[i]
        .as_mut()
        .and_then(|m| m.tool_calls.as_mut())
        .and_then(|calls| calls.get_mut(c))
    else {
        return;
    };
    let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(&call.arguments) else {
        return;
    };
    let Some(v) = args.get_mut(key) else { return };
    let bytes = v.as_str().map_or(0, str::len);
    let note = note(bytes);
    if note.len() >= bytes {
        return;
    }
    *v = Value::from(note);
    call.arguments = Value::Object(args).to_string();
    w.modified(i, rule.0, rule.1);
}

/// The arguments that name what a call acts on (a file, a page): a retry
/// acts on the same.
const TARGETS: [(&str, &str); 6] = [
    ("file_path", "file"),
    ("path", "file"),
    ("notebook_path", "file"),
    ("filePath", "file"),
    ("url", "page"),
    ("uri", "page"),
];

/// What a call acts on: its first target argument (see [`TARGETS`]) and
/// that argument's value; `None` for a call that names none.
fn target_of(args: &Map<String, Value>) -> Option<((&'static str, &'static str), String)> {
    TARGETS.iter().find_map(|&t| match args.get(t.0) {
        Some(Value::String(v)) if !v.is_empty() => Some((t, v.clone())),
        _ => None,
    })
}

/// Whether a text is a note a rule here left in place of what it replaced
/// (`[… moved past: …; 1234 bytes]`, `[… read again later, whole; 1234
/// bytes]`): a second run leaves it. Replaced again, its size became the
/// note's own, the original's lost.
fn is_note(s: &str) -> bool {
    s.starts_with('[')
        && s.strip_suffix(" bytes]")
            .and_then(|t| t.rsplit_once("; "))
            .is_some_and(|(_, n)| crate::numbers::is_digits(n))
}

/// Whether a value is, or holds, a string of over [`LARGE_ARGUMENT`] bytes
/// of JSON (a MultiEdit's `edits` hold their strings in objects), not a
/// note ([`is_note`]).
fn holds_large(v: &Value) -> bool {
    match v {
        // Written as JSON, a string is at least two bytes longer; only a
        // short one is written out to count its escapes.
        Value::String(s) => {
            (s.len() + 2 > LARGE_ARGUMENT || v.to_string().len() > LARGE_ARGUMENT) && !is_note(s)
        }
        Value::Array(items) => items.iter().any(holds_large),
        Value::Object(fields) => fields.values().any(holds_large),
        _ => false,
    }
}

/// Replaces, in `v` (under `key`), each string of over [`LARGE_ARGUMENT`]
/// bytes of JSON by `note(KEY, its bytes)`, KEY the name it is under (an
/// array's items under the array's); the shape around them stays. A note
/// no shorter than the string leaves it. How many were replaced.
fn replace_large(v: &mut Value, key: &str, note: &impl Fn(&str, usize) -> String) -> usize {
    match v {
        Value::String(_) if holds_large(v) => {
            let bytes = v.as_str().map_or(0, str::len);
            let n = note(key, bytes);
            if n.len() >= bytes {
                return 0;
            }
            *v = Value::from(n);
            1
        }
        Value::Array(items) => items.iter_mut().map(|i| replace_large(i, key, note)).sum(),
        Value::Object(fields) => fields
            .iter_mut()
            .map(|(k, f)| replace_large(f, k, note))
            .sum(),
        _ => 0,
    }
}

/// A call that names a target (see [`TARGETS`]), its arguments read once
/// for the rules that follow a target from call to call.
struct Touch {
    at: CallRef,
    /// What it acts on (`file`, `page`) and which one.
    target: (&'static str, String),
    /// The keys of its values that are or hold a large string (but the
    /// target's): what it writes (a Write's content, an Edit's strings).
    large: Vec<String>,
    /// Whether it names nothing but its target (a `command` of `view` or
    /// `read` aside): no offset, range or pattern; it reads it whole.
    whole: bool,
    /// `Some(failed)` once answered.
    failed: Option<bool>,
}

/// The calls of the live messages `msgs` that name a target, in order.
fn touches(msgs: &[&Message], pairing: &Pairing) -> Vec<Touch> {
    let mut out = Vec::new();
    for (k, m) in msgs.iter().enumerate() {
        for (c, call) in m.calls().iter().enumerate() {
            let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.arguments) else {
                continue;
            };
            let Some(((key, what), value)) = target_of(&args) else {
                continue;
            };
            let at = CallRef {
                message: k,
                call: c,
            };
            out.push(Touch {
                at,
                target: (what, value),
                large: args
                    .iter()
                    .filter(|(k, v)| *k != key && holds_large(v))
                    .map(|(k, _)| k.clone())
                    .collect(),
                whole: args.iter().all(|(k, v)| {
                    k == key || (k == "command" && matches!(v.as_str(), Some("view" | "read")))
                }),
                failed: pairing.answer(at).map(|r| super::failed(msgs[r])),
            });
        }
    }
    out
}

/// Rule 5c: a call whose result is an error (flagged so, or reading as
/// one), retried: a later call wrote to the same target (the same file, the
/// same page; a call of any tool whose arguments carry a large value: an
/// Edit refused, then a Write or a MultiEdit of that file). Its argument
/// values of over [`LARGE_ARGUMENT`] bytes of JSON (the content it failed
/// to write, the strings of an edit that did not apply) are replaced by
/// what they were. Its target, its short values and the error it got stay:
/// the model still reads what it tried and why it failed. The last attempt
/// on a target, failed or not, is left whole.
fn retried_failures(w: &mut Work) {
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let writes: Vec<Touch> = touches(&msgs, &pairing)
        .into_iter()
        .filter(|t| !t.large.is_empty())
        .collect();
    // The last write on each target.
    let latest: HashMap<&(&str, String), CallRef> =
        writes.iter().map(|t| (&t.target, t.at)).collect();
    let retried: Vec<&Touch> = writes
        .iter()
        .filter(|t| t.failed == Some(true) && latest.get(&t.target) != Some(&t.at))
        .collect();
    let cleared = to_clear(&slots, &msgs, retried);
    drop(msgs);
    clear_each(w, cleared, "retried failures", |name, what, key, bytes| {
        format!("[{key} of this {name} call, which failed and was retried on the same {what}; {bytes} bytes]")
    });
}

/// Rule 5d: a call that wrote to a file (it names the file and carries a
/// large string: a Write's content, an Edit's strings) and succeeded, that
/// a later call read again whole (a call that names only that file, and
/// did not fail): its large strings are replaced by what they were. What
/// it wrote is in the conversation as the file read then (or as later
/// writes made it). Its path, its short values and its result stay.
fn read_again(w: &mut Work) {
    let (slots, msgs) = w.live();
    let pairing = Pairing::new(&msgs);
    let done: Vec<Touch> = touches(&msgs, &pairing)
        .into_iter()
        .filter(|t| t.failed == Some(false))
        .collect();
    // The last message that read each target whole.
    let read_at: HashMap<&(&str, String), usize> = done
        .iter()
        .filter(|t| t.large.is_empty() && t.whole)
        .map(|t| (&t.target, t.at.message))
        .collect();
    let again: Vec<&Touch> = done
        .iter()
        .filter(|t| !t.large.is_empty())
        .filter(|t| read_at.get(&t.target).is_some_and(|&k| k > t.at.message))
        .collect();
    let cleared = to_clear(&slots, &msgs, again);
    drop(msgs);
    clear_each(w, cleared, "read again", |name, what, key, bytes| {
        format!(
            "[{key} of this {name} call: the {what} was read again later, whole; {bytes} bytes]"
        )
    });
}

/// What [`clear_each`] clears of each of `calls`: its message's slot, the
/// call's place in it, the tool's name, what it acts on, its large keys.
type Clear = (usize, usize, String, &'static str, Vec<String>);

/// `calls` (of the live messages `msgs`, at `slots`) as [`Clear`] says them.
fn to_clear(slots: &[usize], msgs: &[&Message], calls: Vec<&Touch>) -> Vec<Clear> {
    calls
        .into_iter()
        .map(|t| {
            let name = msgs[t.at.message].calls()[t.at.call].name.clone();
            (
                slots[t.at.message],
                t.at.call,
                name,
                t.target.0,
                t.large.clone(),
            )
        })
        .collect()
}

/// Each call's large strings replaced by `note(TOOL, WHAT, KEY, bytes)`
/// (see [`replace_large`]), each a change under `rule`.
fn clear_each(
    w: &mut Work,
    calls: Vec<Clear>,
    rule: &str,
    note: impl Fn(&str, &str, &str, usize) -> String,
) {
    for (i, c, name, what, keys) in calls {
        let Some(call) = w.slots[i]
            .as_mut()
            .and_then(|m| m.tool_calls.as_mut())
            .and_then(|calls| calls.get_mut(c))
        else {
            continue;
        };
        let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(&call.arguments) else {
            continue;
        };
        let note = |key: &str, bytes: usize| note(&name, what, key, bytes);
        let replaced: usize = keys
            .iter()
            .filter_map(|k| Some(replace_large(args.get_mut(k)?, k, &note)))
            .sum();
        if replaced > 0 {
            call.arguments = Value::Object(args).to_string();
        }
        for _ in 0..replaced {
            w.modified(i, rule, "arguments replaced");
        }
    }
}

/// Whether a part is a thinking or reasoning block.
fn is_thinking(p: &Part) -> bool {
    p.is_thinking()
}

/// Rule 6: thinking blocks of assistant turns older than the last `keep`.
fn drop_thinking(w: &mut Work, keep: usize) {
    const RULE: &str = "thinking";
    let assistants: Vec<usize> = (0..w.slots.len())
        .filter(|&i| {
            w.slots[i]
                .as_ref()
                .is_some_and(|m| m.role == Role::Assistant)
        })
        .collect();
    let older = assistants.len().saturating_sub(keep);
    let in_progress = turn_in_progress(w);
    // A Responses reasoning item before a function call stays: OpenAI
    // refuses the call "without its required 'reasoning' item".
    let call_needs = |i: usize| {
        w.slots[i]
            .as_ref()
            .is_some_and(crate::validate::is_reasoning)
            && w.slots[i + 1..]
                .iter()
                .flatten()
                .next()
                .is_some_and(|m| m.has_calls())
    };
    let needed: std::collections::HashSet<usize> = assistants[..older]
        .iter()
        .copied()
        .filter(|&i| call_needs(i))
        .collect();
    for &i in &assistants[..older] {
        if in_progress.contains(&i) || needed.contains(&i) {
            continue;
        }
        let Some(m) = w.slots[i].as_mut() else {
            continue;
        };
        let mut changed = false;
        if let Content::Parts(parts) = &mut m.content {
            let before = parts.len();
            parts.retain(|p| !is_thinking(p));
            changed = parts.len() != before;
        }
        for key in ["reasoning_content", "reasoning"] {
            if m.fields.get(key).is_some_and(Value::is_string) {
                m.fields.shift_remove(key);
                changed = true;
            }
        }
        if !changed {
            continue;
        }
        if m.content.parts().is_empty() && matches!(m.content, Content::Parts(_)) && !m.has_calls()
        {
            w.remove(i, RULE, "thinking-only turns removed");
        } else {
            w.modified(i, RULE, "thinking blocks removed");
        }
    }
}

/// The slots of the assistant turn in progress: the assistant messages that
/// end in the active cycle's call, when only its results follow. Their
/// thinking stays: with thinking on, Anthropic refuses a turn in progress
/// that does not start with it.
fn turn_in_progress(w: &Work) -> Vec<usize> {
    let live: Vec<(usize, &Message)> = w
        .slots
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, m.as_ref()?)))
        .collect();
    let msgs: Vec<&Message> = live.iter().map(|(_, m)| *m).collect();
    let Some(a) = active_cycle(&msgs, &Pairing::new(&msgs)) else {
        return Vec::new();
    };
    let first = (0..=a)
        .rev()
        .take_while(|&k| msgs[k].role == Role::Assistant)
        .last()
        .unwrap_or(a);
    (first..=a).map(|k| live[k].0).collect()
}

/// Rule 7: LangChain's `filter_messages` selection.
fn select(w: &mut Work, spec: &FilterSpec) {
    let lower = |v: &[String]| v.iter().map(|s| s.to_lowercase()).collect::<Vec<_>>();
    let exclude_names = lower(&spec.exclude_names);
    let include_names = spec.include_names.as_deref().map(lower);
    for i in 0..w.slots.len() {
        let Some(m) = w.slots[i].as_ref() else {
            continue;
        };
        let name = m.name.as_deref().map(str::to_lowercase);
        if spec.exclude_roles.contains(&m.role) {
            w.remove(i, "exclude-roles", "messages");
        } else if name.as_ref().is_some_and(|n| exclude_names.contains(n)) {
            w.remove(i, "exclude-names", "messages");
        } else if spec.include_roles.is_some() || include_names.is_some() {
            let by_role = spec
                .include_roles
                .as_ref()
                .is_some_and(|r| r.contains(&m.role));
            let by_name = include_names
                .as_ref()
                .is_some_and(|ns| name.as_ref().is_some_and(|n| ns.contains(n)));
            if !(by_role || by_name) {
                w.remove(i, "include", "messages");
            }
        }
    }
    if !spec.exclude_tools.is_empty() || spec.exclude_tool_calls {
        let rule = if spec.exclude_tool_calls {
            "exclude-tool-calls"
        } else {
            "exclude-tools"
        };
        let (slots, msgs) = w.live();
        let pairing = Pairing::new(&msgs);
        let hit =
            |name: &str| spec.exclude_tool_calls || spec.exclude_tools.iter().any(|t| t == name);
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for (k, m) in msgs.iter().enumerate() {
            for (c, call) in m.calls().iter().enumerate() {
                if hit(&call.name) {
                    calls.push((slots[k], c));
                    if let Some(a) = pairing.answer(CallRef {
                        message: k,
                        call: c,
                    }) {
                        results.push(slots[a]);
                    }
                }
            }
            if m.role.is_result() && spec.exclude_tool_calls {
                results.push(slots[k]);
            }
        }
        for i in results {
            w.remove(i, rule, "tool messages");
        }
        w.strip_calls(&calls, rule);
    }
}

/// After the rules: a Responses reasoning item whose output (the item right
/// after it) went goes too; OpenAI refuses one "without its required
/// following item". One the input already had alone stays.
fn lone_reasoning(w: &mut Work) {
    let (slots, msgs) = w.live();
    let lone: Vec<usize> = (0..msgs.len())
        .filter(|&k| crate::validate::is_reasoning(msgs[k]))
        .filter(|&k| {
            let i = slots[k];
            let output_went = i + 1 < w.slots.len() && w.slots[i + 1].is_none();
            let followed = msgs
                .get(k + 1)
                .is_some_and(|n| n.role == Role::Assistant && !crate::validate::is_reasoning(n));
            output_went && !followed
        })
        .map(|k| slots[k])
        .collect();
    for i in lone {
        w.remove(i, "tool pair", "reasoning items whose output went");
    }
}

/// After the rules: no result without its call, no call without its result
/// (except in the active cycle at the very end).
fn repair_pairs(w: &mut Work) {
    const RULE: &str = "tool pair";
    loop {
        let (slots, msgs) = w.live();
        let pairing = Pairing::new(&msgs);
        let active = active_cycle(&msgs, &pairing);
        let orphans: Vec<usize> = (0..msgs.len())
            .filter(|&k| msgs[k].role.is_result() && pairing.result_of(k).is_none())
            .map(|k| slots[k])
            .collect();
        let unanswered: Vec<(usize, usize)> = (0..msgs.len())
            .filter(|&k| Some(k) != active)
            .flat_map(|k| (0..msgs[k].calls().len()).map(move |c| (k, c)))
            .filter(|&(k, c)| {
                pairing
                    .answer(CallRef {
                        message: k,
                        call: c,
                    })
                    .is_none()
            })
            .map(|(k, c)| (slots[k], c))
            .collect();
        if orphans.is_empty() && unanswered.is_empty() {
            return;
        }
        for i in orphans {
            w.remove(i, RULE, "results whose call went");
        }
        w.strip_calls(&unanswered, RULE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::pair_problems;
    use crate::pairs::tests::{call_msg, result_msg};

    fn msg(role: Role, text: &str) -> Message {
        Message::new(role, text)
    }

    /// A second run with the same rules changes nothing: a note is not
    /// replaced by a note of its own size.
    fn changes_nothing_again(out: &Outcome, spec: FilterSpec) {
        let again = run(out.conversation.messages.clone(), spec);
        assert!(
            again.changes.is_empty(),
            "a second run changed: {:?}",
            again.changes
        );
        assert_eq!(again.conversation.messages, out.conversation.messages);
    }

    fn run(msgs: Vec<Message>, spec: FilterSpec) -> Outcome {
        let msgs: Vec<Message> = msgs
            .into_iter()
            .enumerate()
            .map(|(i, mut m)| {
                m.origin = Some(crate::transcript::Origin {
                    index: i,
                    line: 1,
                    record: Some(i),
                    sub: 0,
                    seal: 0,
                });
                m
            })
            .collect();
        let out = filter(Conversation::new(msgs), &spec);
        assert!(pair_problems(&out.conversation.messages).is_empty());
        out
    }

    fn texts(out: &Outcome) -> Vec<String> {
        out.conversation
            .messages
            .iter()
            .map(|m| format!("{}:{}", m.role, m.content.text()))
            .collect()
    }

    fn with_sender(role: Role, sender: &str, text: &str) -> Message {
        let mut m = msg(role, text);
        m.fields.insert("sender".into(), Value::from(sender));
        m
    }

    #[test]
    fn results_whose_strings_all_appear_later_are_moved_past() {
        let msgs = vec![
            msg(Role::User, "fix the parser"),
            call_msg(&["c1"]),
            answered(
                "c1",
                "src/parse.rs src/lex.rs: 2 files, parse_expr at line 120, and nothing else of note was found in the files that were searched this time",
            ),
            call_msg(&["c2"]),
            answered("c2", "src/lex.rs: tokenize_all fails at 4411"),
            // Says everything the first result named, and one of the second.
            msg(
                Role::Assistant,
                "parse_expr (src/parse.rs line 120) calls src/lex.rs.",
            ),
            msg(Role::User, "go on"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                moved_past: true,
                ..FilterSpec::default()
            },
        );
        let t = texts(&out);
        assert!(
            t[2].starts_with("tool:[tool result of tool_c1 moved past:"),
            "{t:?}"
        );
        // `tokenize_all` and 4411 appear nowhere later: kept as it came.
        assert_eq!(t[4], "tool:src/lex.rs: tokenize_all fails at 4411");
        assert_eq!(out.changes.len(), 1);
        assert_eq!(out.changes[0].reason, "moved past");
        changes_nothing_again(
            &out,
            FilterSpec {
                moved_past: true,
                ..FilterSpec::default()
            },
        );
    }

    #[test]
    fn a_note_is_not_moved_past_again() {
        // The note of the first result names its tool and its size; the
        // conversation says both later. Moved past again, its size
        // became the note's own.
        let first = format!("src/parse.rs: parse_expr at line 120{PAD}");
        let note_size = first.len().to_string();
        let msgs = vec![
            msg(Role::User, "fix the parser"),
            tool_call("c1", "grep_files", serde_json::json!({"q": "parse"})),
            answered("c1", &first),
            msg(
                Role::Assistant,
                &format!("parse_expr (src/parse.rs line 120); grep_files read {note_size} bytes."),
            ),
            tool_call("c2", "grep_files", serde_json::json!({"q": "lex"})),
            answered("c2", "none"),
            msg(Role::User, "go on"),
        ];
        let spec = FilterSpec {
            moved_past: true,
            ..FilterSpec::default()
        };
        let out = run(msgs, spec.clone());
        let t = texts(&out);
        assert!(t[2].ends_with(&format!("; {note_size} bytes]")), "{t:?}");
        changes_nothing_again(&out, spec);
    }

    /// Words that are no distinctive string: a result long enough that
    /// its note is shorter.
    const PAD: &str = ", and the checks that ran on it all passed without a warning or an error of any kind this time around";

    #[test]
    fn the_last_copy_of_a_string_is_never_moved_past() {
        // Each result repeats the one before: only the last copy stays, and
        // every string is still in the conversation.
        let msgs = vec![
            msg(Role::User, "status"),
            call_msg(&["c1"]),
            answered("c1", &format!("deploy_v1 ok at 1001{PAD}")),
            call_msg(&["c2"]),
            answered(
                "c2",
                &format!("deploy_v1 ok at 1001, deploy_v2 ok at 1002{PAD}"),
            ),
            call_msg(&["c3"]),
            answered("c3", &format!("deploy_v2 ok at 1002{PAD}")),
        ];
        let out = run(
            msgs,
            FilterSpec {
                moved_past: true,
                ..FilterSpec::default()
            },
        );
        let all = texts(&out).join("\n");
        for s in ["deploy_v1", "1001", "deploy_v2", "1002"] {
            assert!(all.contains(s), "{s} lost: {all}");
        }
        assert_eq!(out.changes.len(), 1, "{all}");
    }

    #[test]
    fn a_result_shorter_than_its_note_stays() {
        let mut short = result_msg("c1");
        short.content = Content::Text("src/lex.rs: 4411".into());
        let msgs = vec![
            msg(Role::User, "where?"),
            call_msg(&["c1"]),
            short,
            msg(Role::Assistant, "src/lex.rs, line 4411."),
        ];
        let spec = FilterSpec {
            moved_past: true,
            ..FilterSpec::default()
        };
        let out = run(msgs, spec);
        assert_eq!(texts(&out)[2], "tool:src/lex.rs: 4411");
        assert!(out.changes.is_empty(), "{:?}", out.changes);
    }

    #[test]
    fn a_newline_is_no_copy_of_a_backslash_and_an_n() {
        // The first command prints `\n=== After ===` (a backslash and an
        // n); the second has a newline there. JSON writes both alike.
        let bash = |id: &str, command: &str| {
            let mut m = call_msg(&[id]);
            let call = &mut m.tool_calls.as_mut().unwrap()[0];
            call.name = "bash".into();
            call.arguments = serde_json::json!({ "command": command }).to_string();
            m
        };
        let tail = " && echo the checks that ran on it all passed without a warning or an error of any kind";
        let first = format!("printf '\\n=== After resolve_call ==='{tail}");
        let second = format!("printf '\n=== After resolve_call ==='{tail}");
        let msgs = vec![
            msg(Role::User, "run it"),
            bash("c1", &first),
            result_msg("c1"),
            bash("c2", &second),
            result_msg("c2"),
        ];
        let spec = FilterSpec {
            moved_past: true,
            ..FilterSpec::default()
        };
        let out = run(msgs, spec);
        let args: Value =
            serde_json::from_str(&out.conversation.messages[1].calls()[0].arguments).unwrap();
        assert_eq!(args["command"], first.as_str(), "{:?}", out.changes);
    }

    /// The arguments of a message's first call, read.
    fn arguments(m: &Message) -> Value {
        serde_json::from_str(&m.calls()[0].arguments).unwrap()
    }

    /// A message of one call: `id` of tool `name`, its arguments `args`.
    fn tool_call(id: &str, name: &str, args: Value) -> Message {
        let mut m = call_msg(&[id]);
        let c = &mut m.tool_calls.as_mut().unwrap()[0];
        c.name = name.into();
        c.arguments = args.to_string();
        m
    }

    /// The result of call `id`, saying `text`.
    fn answered(id: &str, text: &str) -> Message {
        let mut m = result_msg(id);
        m.content = Content::Text(text.into());
        m
    }

    #[test]
    fn write_payloads_the_conversation_repeats_are_moved_past() {
        let code = "fn parse_expr(input: &str) -> Expr {\n    // The whole input, tokenized and read as one expression.\n    tokenize_all(input).into_iter().collect()\n}\n";
        let write = |id: &str, path: &str| {
            let mut m = call_msg(&[id]);
            let call = &mut m.tool_calls.as_mut().unwrap()[0];
            call.name = "Write".into();
            call.arguments = serde_json::json!({"file_path": path, "content": code}).to_string();
            m
        };
        let msgs = vec![
            msg(Role::User, "write the parser twice"),
            write("c1", "src/parse.rs"),
            answered("c1", "written"),
            call_msg(&["c2"]),
            // The file read back: every name of the payload appears here.
            answered("c2", &format!("src/parse.rs:\n{code}")),
            // The same payload again, in the call of the cycle in progress:
            // nothing follows it, so it stays.
            write("c3", "src/copy.rs"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                moved_past: true,
                ..FilterSpec::default()
            },
        );
        let args = |k: usize| -> Value {
            serde_json::from_str(&out.conversation.messages[k].calls()[0].arguments).unwrap()
        };
        let first = args(1);
        assert_eq!(
            first["file_path"], "src/parse.rs",
            "the path says what it was"
        );
        let content = first["content"].as_str().unwrap();
        assert!(
            content.starts_with("[content of this Write call moved past:")
                && content.ends_with(&format!("{} bytes]", code.len())),
            "{content}"
        );
        assert_eq!(args(5)["content"], code, "the last copy stays");
        // The result read back names src/parse.rs, which nothing later
        // says: it stays, though the payload in progress repeats its code.
        let t = texts(&out);
        assert!(
            t[4].starts_with("tool:src/parse.rs:\nfn parse_expr"),
            "{t:?}"
        );
        let reasons: Vec<&str> = out.changes.iter().map(|c| c.reason.as_str()).collect();
        assert_eq!(reasons, ["moved past"], "{:?}", out.changes);
        assert!(crate::pairs::pair_problems(&out.conversation.messages).is_empty());
        changes_nothing_again(
            &out,
            FilterSpec {
                moved_past: true,
                ..FilterSpec::default()
            },
        );
    }

    #[test]
    fn a_failed_edit_is_retried_by_a_write_of_its_file_not_by_a_read() {
        let body =
            "pub fn ratio(a: f64, b: f64) -> Option<f64> {\n    (b != 0.0).then(|| a / b)\n}\n"
                .repeat(2);
        let edit = |id: &str, path: &str| {
            tool_call(
                id,
                "Edit",
                serde_json::json!({"file_path": path, "old_string": body, "new_string": "x"}),
            )
        };
        let msgs = vec![
            msg(Role::User, "fix ratio"),
            edit("e1", "src/ratio.rs"),
            answered("e1", "Error: String to replace not found in file."),
            // Read after a failure: not a retry (it writes nothing).
            edit("e2", "src/read_only.rs"),
            answered("e2", "Error: String to replace not found in file."),
            tool_call(
                "r1",
                "Read",
                serde_json::json!({"file_path": "src/read_only.rs"}),
            ),
            answered("r1", &body),
            // The file written whole: the retry of e1.
            tool_call(
                "w1",
                "Write",
                serde_json::json!({"file_path": "src/ratio.rs", "content": body}),
            ),
            answered("w1", "File written."),
        ];
        let out = run(
            msgs,
            FilterSpec {
                retried_failures: true,
                ..FilterSpec::default()
            },
        );
        let m = &out.conversation.messages;
        let args = |k: usize| arguments(&m[k]);
        assert_eq!(
            args(1)["old_string"],
            format!("[old_string of this Edit call, which failed and was retried on the same file; {} bytes]", body.len())
        );
        assert_eq!(args(1)["new_string"], "x", "a short value stays");
        assert_eq!(
            args(3)["old_string"],
            body,
            "only read after it failed: whole"
        );
        assert_eq!(args(7)["content"], body);
    }

    #[test]
    fn a_write_read_again_whole_keeps_its_path_and_result() {
        let code =
            "pub fn ratio(a: f64, b: f64) -> Option<f64> {\n    (b != 0.0).then(|| a / b)\n}\n"
                .repeat(2);
        let write = |id: &str, path: &str| {
            tool_call(
                id,
                "Write",
                serde_json::json!({"file_path": path, "content": code}),
            )
        };
        let msgs = vec![
            msg(Role::User, "write them"),
            write("w1", "src/a.rs"),
            answered("w1", "File created."),
            write("w2", "src/b.rs"),
            answered("w2", "File created."),
            write("w3", "src/c.rs"),
            answered("w3", "Error: permission denied"),
            write("w4", "src/d.rs"),
            answered("w4", "File created."),
            // Whole: only the path.
            tool_call("r1", "Read", serde_json::json!({"file_path": "src/a.rs"})),
            answered("r1", &code),
            // Part of it only.
            tool_call(
                "r2",
                "Read",
                serde_json::json!({"file_path": "src/b.rs", "limit": 2}),
            ),
            answered("r2", "pub fn ratio"),
            // After a write that failed: the payload never landed.
            tool_call("r3", "Read", serde_json::json!({"file_path": "src/c.rs"})),
            answered("r3", "(empty)"),
            // A search in the file: not a read of it.
            tool_call(
                "g1",
                "Grep",
                serde_json::json!({"path": "src/d.rs", "pattern": "ratio"}),
            ),
            answered("g1", "1: pub fn ratio"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                read_again: true,
                ..FilterSpec::default()
            },
        );
        let m = &out.conversation.messages;
        let args = |k: usize| arguments(&m[k]);
        assert_eq!(
            args(1)["content"],
            format!(
                "[content of this Write call: the file was read again later, whole; {} bytes]",
                code.len()
            )
        );
        assert_eq!(args(1)["file_path"], "src/a.rs");
        assert_eq!(m[2].content.text(), "File created.", "its result stays");
        for k in [3, 5, 7] {
            assert_eq!(args(k)["content"], code, "call {k} stays whole");
        }
        let reasons: Vec<&str> = out.changes.iter().map(|c| c.reason.as_str()).collect();
        assert_eq!(reasons, ["read again"]);
        changes_nothing_again(
            &out,
            FilterSpec {
                read_again: true,
                ..FilterSpec::default()
            },
        );
    }

    #[test]
    fn a_failed_multi_edit_keeps_the_shape_of_its_edits() {
        let long =
            &"const LIMIT: usize = 4096; // the bound the reader enforces on a line\n".repeat(2);
        let multi = serde_json::json!({"file_path": "src/read.rs", "edits": [
            {"old_string": long, "new_string": long.replace("4096", "8192")},
            {"old_string": "a", "new_string": "b", "replace_all": true},
        ]});
        let mut failed = call_msg(&["m1"]);
        let c = &mut failed.tool_calls.as_mut().unwrap()[0];
        c.name = "MultiEdit".into();
        c.arguments = multi.to_string();
        let mut refused = result_msg("m1");
        refused.content =
            Content::Text("<tool_use_error>String to replace not found</tool_use_error>".into());
        refused.fields.insert("is_error".into(), Value::Bool(true));
        let mut write = call_msg(&["w1"]);
        let c = &mut write.tool_calls.as_mut().unwrap()[0];
        c.name = "Write".into();
        c.arguments = serde_json::json!({"file_path": "src/read.rs", "content": long}).to_string();
        let msgs = vec![
            msg(Role::User, "raise the limit"),
            failed,
            refused,
            write,
            result_msg("w1"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                retried_failures: true,
                ..FilterSpec::default()
            },
        );
        let args: Value =
            serde_json::from_str(&out.conversation.messages[1].calls()[0].arguments).unwrap();
        let note = |key: &str| {
            format!("[{key} of this MultiEdit call, which failed and was retried on the same file; {} bytes]", long.len())
        };
        assert_eq!(args["edits"][0]["old_string"], note("old_string"));
        assert_eq!(args["edits"][0]["new_string"], note("new_string"));
        assert_eq!(
            args["edits"][1],
            serde_json::json!({"old_string": "a", "new_string": "b", "replace_all": true})
        );
        assert_eq!(args["file_path"], "src/read.rs");
        assert_eq!(out.changes.len(), 2, "{:?}", out.changes);
    }

    #[test]
    fn a_failed_call_retried_on_the_same_file_keeps_its_path_and_error_only() {
        // As Claude Code's subagents do: an Edit refused ("File has not been
        // read yet"), the file read, the Edit again.
        let old = "export function add(a: number, b: number): number {\n  // Both operands are finite here: the caller checked them.\n  return a + b;\n}\n";
        let new = "export function add(a: number, b: number): number {\n  // Both operands are finite here: the caller checked them.\n  return Number((a + b).toFixed(12));\n}\n";
        let edit = |id: &str, path: &str| {
            let mut m = call_msg(&[id]);
            let call = &mut m.tool_calls.as_mut().unwrap()[0];
            call.name = "Edit".into();
            call.arguments =
                serde_json::json!({"file_path": path, "old_string": old, "new_string": new})
                    .to_string();
            m
        };
        let result = |id: &str, text: &str, error: bool| {
            let mut m = answered(id, text);
            if error {
                m.fields.insert("is_error".into(), Value::Bool(true));
            }
            m
        };
        let refused = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
        let msgs = vec![
            msg(Role::User, "fix add"),
            edit("e1", "src/math.ts"),
            result("e1", refused, true),
            // Failed, and never retried on its file: the last attempt.
            edit("e2", "src/other.ts"),
            result("e2", refused, true),
            // Failed by what it says (no flag), retried below.
            edit("e3", "src/math.ts"),
            result("e3", "Error: String to replace not found in file.", false),
            edit("e4", "src/math.ts"),
            result("e4", "The file src/math.ts has been updated.", false),
            // In progress: not answered, so not failed.
            edit("e5", "src/math.ts"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                retried_failures: true,
                ..FilterSpec::default()
            },
        );
        let m = &out.conversation.messages;
        assert_eq!(m.len(), 10, "nothing is removed");
        let args =
            |k: usize| -> Value { serde_json::from_str(&m[k].calls()[0].arguments).unwrap() };
        for k in [1, 5] {
            let a = args(k);
            assert_eq!(a["file_path"], "src/math.ts", "the path says what it was");
            for key in ["old_string", "new_string"] {
                let bytes = if key == "old_string" {
                    old.len()
                } else {
                    new.len()
                };
                assert_eq!(
                    a[key].as_str().unwrap(),
                    format!("[{key} of this Edit call, which failed and was retried on the same file; {bytes} bytes]"),
                    "call {k}"
                );
            }
        }
        for k in [3, 7, 9] {
            assert_eq!(args(k)["old_string"], old, "call {k} stays whole");
        }
        // The errors the model got stay.
        assert_eq!(m[2].content.text(), refused);
        assert_eq!(
            m[6].content.text(),
            "Error: String to replace not found in file."
        );
        let reasons: Vec<&str> = out.changes.iter().map(|c| c.reason.as_str()).collect();
        // One change per value replaced: two calls, two strings each.
        assert_eq!(reasons, ["retried failures"; 4], "{:?}", out.changes);
        assert!(crate::pairs::pair_problems(&out.conversation.messages).is_empty());
        changes_nothing_again(
            &out,
            FilterSpec {
                retried_failures: true,
                ..FilterSpec::default()
            },
        );
    }

    #[test]
    fn previous_cycles_seed_example() {
        // Query one ran a tool; query two's call sees only query one's question and answer.
        let mut call = call_msg(&["c1"]);
        call.content = Content::Null;
        let mut talky = call_msg(&["c2"]);
        talky.content = Content::Text("Let me check.".into());
        let msgs = vec![
            msg(Role::User, "weather in Paris?"),
            call,
            result_msg("c1"),
            talky,
            result_msg("c2"),
            msg(Role::Assistant, "18C and sunny."),
            msg(Role::User, "and in Rome?"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                previous_cycles: true,
                ..FilterSpec::default()
            },
        );
        assert_eq!(
            texts(&out),
            [
                "user:weather in Paris?",
                "assistant:Let me check.",
                "assistant:18C and sunny.",
                "user:and in Rome?"
            ]
        );
        let whats: Vec<&str> = out
            .changes
            .iter()
            .map(|c| c.detail["what"].as_str().unwrap())
            .collect();
        assert_eq!(
            whats,
            [
                "empty assistants removed",
                "tool messages",
                "tool_calls stripped",
                "tool messages"
            ]
        );
    }

    #[test]
    fn previous_cycles_keeps_the_current_cycle_and_needs_a_user() {
        let msgs = vec![msg(Role::User, "go"), call_msg(&["c1"]), result_msg("c1")];
        let spec = FilterSpec {
            previous_cycles: true,
            ..FilterSpec::default()
        };
        assert_eq!(
            run(msgs.clone(), spec.clone()).conversation.messages.len(),
            3
        );
        let no_user = vec![call_msg(&["c1"]), result_msg("c1")];
        assert_eq!(run(no_user, spec).conversation.messages.len(), 2);
    }

    #[test]
    fn mentions_follow_the_pattern() {
        assert_eq!(
            mentions("hi @alice and @Bob-2, mail a@b.c @ x @_y"),
            ["alice", "bob-2", "b", "_y"]
        );
        assert_eq!(mention_at("@a-"), Some("a"));
        assert_eq!(mention_at("@a--b"), Some("a"));
        assert_eq!(
            paragraph_mentions("  @pm do it\nthen @dev\n@QA check"),
            ["pm", "qa"]
        );
    }

    #[test]
    fn agent_rules() {
        let msgs = vec![
            msg(Role::System, "you are pm"),
            with_sender(Role::User, "human", "hello everyone"),
            with_sender(Role::User, "human", "@pm plan it"),
            with_sender(Role::User, "human", "@dev build it"),
            with_sender(Role::User, "human", "tell @dev hi"),
            with_sender(Role::Assistant, "dev", "@pm done"),
            with_sender(Role::Assistant, "dev", "@qa test it"),
            with_sender(Role::Assistant, "pm", "my own reply"),
            with_sender(Role::User, "pm", "a user line from pm"),
            with_sender(Role::User, "world", "it rains"),
            with_sender(Role::User, "system", "note"),
            with_sender(Role::Assistant, "dev", "Turn limit reached @pm"),
        ];
        let out = run(
            msgs,
            FilterSpec {
                agent: Some("PM".into()),
                ..FilterSpec::default()
            },
        );
        assert_eq!(
            texts(&out),
            [
                "system:you are pm",
                "user:hello everyone",
                "user:@pm plan it",
                "assistant:@pm done",
                "assistant:my own reply",
                "user:it rains"
            ]
        );
    }

    #[test]
    fn agent_chat_id_and_tools() {
        let mut a = with_sender(Role::Assistant, "dev", "");
        a.tool_calls = call_msg(&["c1"]).into_data().tool_calls;
        let mut keep = with_sender(Role::User, "human", "hi");
        keep.fields.insert("chatId".into(), Value::from("c"));
        let mut other = with_sender(Role::User, "human", "hi there");
        other.fields.insert("chatId".into(), Value::from("d"));
        let out = run(
            vec![keep, other, a, result_msg("c1")],
            FilterSpec {
                agent: Some("pm".into()),
                chat_id: Some("c".into()),
                ..FilterSpec::default()
            },
        );
        assert_eq!(texts(&out), ["user:hi"]);
    }

    #[test]
    fn supersede_keeps_the_latest_write() {
        let write = |id: &str, path: &str| {
            let mut m = call_msg(&[id]);
            if let Some(calls) = m.tool_calls.as_mut() {
                calls[0].name = "create_python_script".into();
                calls[0].arguments = format!(r#"{{"path":"{path}","code":"..."}}"#);
            }
            m
        };
        let msgs = vec![
            msg(Role::User, "write it"),
            write("a", "x.py"),
            result_msg("a"),
            write("b", "y.py"),
            result_msg("b"),
            write("c", "x.py"),
            result_msg("c"),
        ];
        let spec = FilterSpec {
            supersede: vec![("create_python_script".into(), "path".into())],
            ..FilterSpec::default()
        };
        let out = run(msgs.clone(), spec);
        let ids: Vec<String> = out
            .conversation
            .messages
            .iter()
            .flat_map(|m| {
                m.calls()
                    .iter()
                    .filter_map(|c| c.id.clone())
                    .chain(m.tool_call_id.clone())
            })
            .collect();
        assert_eq!(ids, ["b", "b", "c", "c"]);
        let spec = FilterSpec {
            supersede: vec![("create_python_script".into(), "*".into())],
            ..FilterSpec::default()
        };
        // Different code would keep both; here the arguments are the same for x.py.
        assert_eq!(run(msgs, spec).conversation.messages.len(), 5);
    }

    #[test]
    fn a_tool_superseded_alone_keeps_its_latest_call_whatever_the_arguments() {
        // Claude Code's TodoWrite rewrites the whole list on every call.
        let todo = |id: &str, args: &str| {
            let mut m = call_msg(&[id]);
            if let Some(calls) = m.tool_calls.as_mut() {
                calls[0].name = "TodoWrite".into();
                calls[0].arguments = args.into();
            }
            m
        };
        let msgs = vec![
            msg(Role::User, "plan it"),
            todo("a", r#"{"todos":[{"content":"read","status":"pending"}]}"#),
            result_msg("a"),
            todo("b", "not even JSON"),
            result_msg("b"),
            msg(Role::User, "go on"),
            todo(
                "c",
                r#"{"todos":[{"content":"read","status":"completed"}]}"#,
            ),
            result_msg("c"),
            // The active cycle: a call not answered yet.
            todo("d", r#"{"todos":[]}"#),
        ];
        let spec = FilterSpec {
            supersede: vec![("TodoWrite".into(), String::new())],
            ..FilterSpec::default()
        };
        let out = run(msgs, spec);
        let ids: Vec<String> = out
            .conversation
            .messages
            .iter()
            .flat_map(|m| {
                m.calls()
                    .iter()
                    .filter_map(|c| c.id.clone())
                    .chain(m.tool_call_id.clone())
            })
            .collect();
        assert_eq!(ids, ["d"]);
        let texts: Vec<String> = out
            .conversation
            .messages
            .iter()
            .filter(|m| m.calls().is_empty() && m.tool_call_id.is_none())
            .map(|m| m.content.text())
            .collect();
        assert_eq!(texts, ["plan it", "go on"]);
        let rules: Vec<&str> = out.changes.iter().map(|c| c.reason.as_str()).collect();
        assert!(
            rules.iter().all(|r| *r == "supersede TodoWrite"),
            "{rules:?}"
        );
        assert_eq!(
            out.flags["supersede"],
            serde_json::json!([{"rule": "TodoWrite", "calls": 4, "keyed": 4}])
        );
    }

    #[test]
    fn processed_images_become_notes() {
        let img = |url: &str| Part {
            kind: PartKind::Image(crate::transcript::Image::from_url(url)),
            raw: serde_json::json!({"type": "image_url", "image_url": {"url": url}}).into(),
            slot: None,
        };
        let mut first = msg(Role::User, "");
        first.content = Content::Parts(vec![
            Part::text_part("look"),
            img("data:image/png;base64,iVBORw0KGgo="),
        ]);
        let mut last = msg(Role::User, "");
        last.content = Content::Parts(vec![img("data:image/jpeg;base64,/9j/")]);
        let out = run(
            vec![first, msg(Role::Assistant, "a cat"), last],
            FilterSpec {
                strip_processed_images: true,
                ..FilterSpec::default()
            },
        );
        let m = &out.conversation.messages;
        assert_eq!(
            m[0].content.text(),
            "look\n[image removed: image/png, 8 bytes]"
        );
        assert_eq!(m[2].content.images().count(), 1);
    }

    #[test]
    fn duplicate_results_point_back() {
        let long = "12 rows: alpha, beta, gamma, delta, epsilon, zeta, eta, theta";
        let answer = |id: &str, text: &str| Message::new(Role::Tool, text).with_call_id(id);
        let msgs = vec![
            msg(Role::User, "q"),
            call_msg(&["a"]),
            answer("a", long),
            call_msg(&["b"]),
            answer("b", long),
            call_msg(&["c"]),
            answer("c", long),
        ];
        // tool_a, tool_b and tool_c are different tools: nothing to dedupe.
        let spec = FilterSpec {
            dedupe_tool_results: true,
            ..FilterSpec::default()
        };
        assert!(run(msgs.clone(), spec.clone()).changes.is_empty());
        let mut same = msgs;
        for k in [3, 5] {
            if let Some(c) = same[k].tool_calls.as_mut() {
                c[0].name = "tool_a".into();
            }
        }
        let out = run(same.clone(), spec.clone());
        for k in [4, 6] {
            assert_eq!(
                out.conversation.messages[k].content.text(),
                "[same result as message 2]"
            );
        }
        // Two notes the same: the second is not pointed at the first.
        changes_nothing_again(&out, spec.clone());
        // A result shorter than the note stays as it is: the note would
        // make it longer.
        for k in [2, 4, 6] {
            same[k].content = Content::Text("OK".into());
        }
        assert!(run(same, spec).changes.is_empty());
    }

    #[test]
    fn thinking_goes_from_older_turns() {
        let think = |text: &str| {
            let mut m = msg(Role::Assistant, "");
            m.content = Content::Parts(vec![
                Part {
                    kind: PartKind::Other,
                    raw:
                        serde_json::json!({"type": "thinking", "thinking": "hmm", "signature": "s"})
                            .into(),
                    slot: None,
                },
                Part::text_part(text),
            ]);
            m
        };
        let msgs = vec![
            msg(Role::User, "a"),
            think("one"),
            msg(Role::User, "b"),
            think("two"),
        ];
        let spec = FilterSpec {
            drop_thinking: true,
            keep_thinking_turns: 1,
            ..FilterSpec::default()
        };
        let out = run(msgs, spec);
        assert_eq!(out.conversation.messages[1].content.parts().len(), 1);
        assert_eq!(out.conversation.messages[3].content.parts().len(), 2);
    }

    #[test]
    fn reasoning_goes_with_the_call_it_was_kept_for() {
        // A Responses reasoning item before a call stays for the call; the
        // call has no result, so the pairs' repair takes it, and the
        // reasoning goes in the same run, not in the next.
        let mut reasoning = msg(Role::Assistant, "");
        reasoning.content = Content::Parts(vec![Part {
            kind: PartKind::Other,
            raw: serde_json::json!({"type": "reasoning", "summary": [], "encrypted_content": "gA"})
                .into(),
            slot: None,
        }]);
        let msgs = vec![
            msg(Role::User, "a"),
            reasoning.clone(),
            call_msg(&["c1"]),
            msg(Role::Assistant, "one"),
            msg(Role::User, "b"),
            reasoning,
            call_msg(&["c2"]),
            result_msg("c2"),
            msg(Role::Assistant, "two"),
        ];
        let spec = FilterSpec {
            drop_thinking: true,
            ..FilterSpec::default()
        };
        let out = run(msgs, spec.clone());
        assert_eq!(
            texts(&out),
            [
                "user:a",
                "assistant:one",
                "user:b",
                "assistant:",
                "assistant:",
                "tool:result c2",
                "assistant:two"
            ]
        );
        assert!(crate::validate::is_reasoning(&out.conversation.messages[3]));
        let again = run(out.conversation.messages.clone(), spec);
        assert!(again.changes.is_empty(), "{:?}", again.changes);
    }

    #[test]
    fn selection_like_filter_messages() {
        let mut named = msg(Role::User, "from bob");
        named.name = Some("Bob".into());
        let msgs = vec![
            msg(Role::System, "s"),
            named,
            msg(Role::User, "q"),
            call_msg(&["c1", "c2"]),
            result_msg("c1"),
            result_msg("c2"),
            msg(Role::Assistant, "done"),
        ];
        let roles = |spec: FilterSpec| -> Vec<String> { texts(&run(msgs.clone(), spec)) };
        assert_eq!(
            roles(FilterSpec {
                include_roles: Some(vec![Role::User]),
                ..FilterSpec::default()
            }),
            ["user:from bob", "user:q"]
        );
        assert_eq!(
            roles(FilterSpec {
                exclude_names: vec!["bob".into()],
                exclude_tool_calls: true,
                ..FilterSpec::default()
            }),
            ["system:s", "user:q", "assistant:done"]
        );
        let out = run(
            msgs.clone(),
            FilterSpec {
                exclude_tools: vec!["tool_c1".into()],
                ..FilterSpec::default()
            },
        );
        assert_eq!(out.conversation.messages.len(), 6);
        assert_eq!(out.conversation.messages[3].calls().len(), 1);
        // With no rule, nothing changes.
        assert!(run(msgs, FilterSpec::default()).changes.is_empty());
    }
}
