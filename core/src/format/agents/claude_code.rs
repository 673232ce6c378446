//! Claude Code session JSONL (`~/.claude/projects/<path>/<session>.jsonl`),
//! and its `{"loglines": [...]}` JSON wrapper.
//!
//! Lines of type `user` and `assistant` carry Anthropic message objects and
//! are read with the Anthropic dialect; every other line (summary, progress,
//! system, file-history-snapshot, …) passes through untouched and in place.
//! When a line is removed, the lines that named it as `parentUuid` are
//! relinked to its parent, so the chain stays valid.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::format::anthropic::{new_messages, read_message, write_message};
use crate::format::convert;
use crate::format::dialect::{set_if_changed, Dialect, Fault, Loss, OutRecord};
use crate::transcript::{Content, Fields, Message, MessageData, Record, Role, ToolCall};

/// Claude Code sessions.
pub(crate) struct ClaudeCode;

/// Whether a line looks like a Claude Code session line.
pub(crate) fn is_line(r: &Map<String, Value>) -> bool {
    if crate::format::qwen_code::is_line(r) {
        // The same envelope around a Gemini turn: Qwen Code's.
        return false;
    }
    let ty = r.get("type").and_then(Value::as_str);
    // Lines that carry no message: snapshots often open a session, many at a time.
    let bookkeeping = match ty {
        Some("file-history-snapshot") => r.contains_key("snapshot"),
        Some(
            "queue-operation" | "custom-title" | "ai-title" | "agent-name" | "last-prompt"
            | "pr-link" | "permission-mode" | "mode" | "worktree-state",
        ) => r.contains_key("sessionId"),
        // `claude -p --output-format stream-json`: the run's opening and its result.
        Some("system" | "result") => r.contains_key("session_id") && r.contains_key("subtype"),
        _ => false,
    };
    bookkeeping
        || (r.contains_key("sessionId") && (r.contains_key("uuid") || r.contains_key("parentUuid")))
        || (ty == Some("summary") && r.contains_key("leafUuid"))
        || (matches!(ty, Some("user" | "assistant"))
            && r.get("message").is_some_and(Value::is_object))
        || (ty.is_none()
            && (r.contains_key("sessionId") || r.contains_key("uuid"))
            && r.get("message").is_some_and(Value::is_object))
}

/// The kind of a message line: its `type`, or, for lines written by viewers
/// and converters that drop it, its message's role.
fn line_type(r: &Map<String, Value>) -> Option<&str> {
    match r.get("type").and_then(Value::as_str) {
        Some(t) => Some(t),
        None => r.get("message")?.get("role")?.as_str(),
    }
}

impl Dialect for ClaudeCode {
    fn compaction(&self) -> Option<crate::format::dialect::IsRecord> {
        Some(is_compact_boundary)
    }

    fn records_path(&self, obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
        if obj.get("loglines").is_some_and(Value::is_array) {
            Some(&["loglines"])
        } else if obj.contains_key("agentType") && obj.len() <= 4 {
            // A subagent's `agent-<id>.meta.json`: session metadata, no messages.
            Some(&[])
        } else {
            None
        }
    }

    fn new_path(&self) -> &'static [&'static str] {
        &["loglines"]
    }

    fn read_record(&self, rec: &Fields) -> Result<Vec<Message>, Fault> {
        let ty = rec.get("type").and_then(Value::as_str);
        match (ty, rec.get("message")) {
            (t @ (Some("user" | "assistant") | None), Some(Value::Object(msg))) => {
                let t = t
                    .or_else(|| msg.get("role").and_then(Value::as_str))
                    .unwrap_or("user");
                if msg.contains_key("role") {
                    read_message(&Fields::from(msg.clone()))
                } else if msg.get("content").is_some_and(Value::is_array) {
                    // claude-code-action's execution file drops the role of
                    // the tool-result turns: the line's type is it.
                    let mut with_role = msg.clone();
                    with_role.insert("role".into(), Value::from(t));
                    read_message(&Fields::from(with_role))
                } else {
                    // Usage-only lines: the role is the line's type.
                    let role = if t == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    Ok(vec![Message::from(MessageData {
                        content: match msg.get("content") {
                            Some(v) => crate::format::openai::parse_content(v)?,
                            None => Content::Absent,
                        },
                        fields: msg.clone().into(),
                        ..MessageData::new(role, "")
                    })])
                }
            }
            (Some("user" | "assistant"), Some(_)) => Err("\"message\" must be an object".into()),
            // Schema-drifted logs write tool calls and results as lines.
            (Some("tool_use"), _) => Ok(vec![Message::from(MessageData {
                content: Content::Absent,
                tool_calls: Some(vec![ToolCall {
                    id: rec.get("id").and_then(Value::as_str).map(str::to_string),
                    name: rec
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_string(),
                    arguments: convert::arguments_text(rec.get("input").unwrap_or(&Value::Null)),
                    raw: Value::Null.into(),
                    slot: None,
                }]),
                fields: rec.clone(),
                ..MessageData::new(Role::Assistant, "")
            })]),
            (Some("tool_result"), _) => Ok(vec![Message::from(MessageData {
                // No `output` key is no content, never `"output": null`.
                content: match rec.get("output") {
                    Some(v @ Value::Object(_)) => {
                        Content::Parts(vec![crate::format::openai::parse_part(v)])
                    }
                    Some(v) => crate::format::openai::parse_content(v)?,
                    None => Content::Absent,
                },
                tool_call_id: rec
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name: rec.get("name").and_then(Value::as_str).map(str::to_string),
                fields: rec.clone(),
                ..MessageData::new(Role::Tool, "")
            })]),
            _ => Ok(Vec::new()),
        }
    }

    fn write_record(
        &self,
        rec: &Map<String, Value>,
        msgs: &[&Message],
    ) -> Option<Map<String, Value>> {
        let mut out = rec.clone();
        match rec.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let c = msgs.first()?.calls().first()?;
                if rec.get("input").map(convert::arguments_text).as_deref()
                    != Some(c.arguments.as_str())
                {
                    out.insert("input".into(), convert::arguments_value(&c.arguments));
                }
            }
            Some("tool_result") => {
                let content = &msgs.first()?.content;
                let v = match (content, rec.get("output")) {
                    // An object output read as one part goes back as the object.
                    (Content::Parts(parts), Some(Value::Object(_))) if parts.len() == 1 => {
                        Some(parts[0].to_value())
                    }
                    (c, orig) => crate::format::openai::content_value(c, orig),
                };
                if let Some(v) = v {
                    set_if_changed(&mut out, "output", v);
                }
            }
            _ => {
                let msg = rec.get("message")?.as_object()?;
                let m = msgs.first()?;
                let new = if msg.contains_key("role")
                    || msg.get("content").is_some_and(Value::is_array)
                {
                    write_message(msg, msgs)?
                } else {
                    let mut new = msg.clone();
                    if let Some(v) =
                        crate::format::openai::content_value(&m.content, msg.get("content"))
                    {
                        set_if_changed(&mut new, "content", v);
                    }
                    new
                };
                if &new != msg {
                    out.insert("message".into(), Value::Object(new));
                    // The structured copy of a tool result no longer matches.
                    if msgs.iter().any(|m| m.role.is_result()) {
                        out.shift_remove("toolUseResult");
                    }
                }
            }
        }
        Some(out)
    }

    fn new_records(
        &self,
        msgs: &[&Message],
        env: &mut Map<String, Value>,
        losses: &mut Vec<Loss>,
    ) -> Vec<Value> {
        let mut system = Map::new();
        let objects = new_messages(msgs, &mut system, losses);
        // One line per message: each takes its uuid from the digest the
        // message was minted with (see `link_new_lines`).
        let minted: Vec<Option<[u8; 16]>> = if objects.len() == msgs.len() {
            msgs.iter().map(|m| m.minted).collect()
        } else {
            vec![None; objects.len()]
        };
        let lines: Vec<Value> = objects
            .into_iter()
            .zip(minted)
            .map(|(m, minted)| {
                let mut line = Map::new();
                let ty = m
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("user")
                    .to_string();
                line.insert("type".into(), Value::from(ty));
                line.insert("message".into(), Value::Object(m));
                if let Some(d) = minted {
                    line.insert(MINTED.into(), Value::from(uuid_of(&d)));
                }
                Value::Object(line)
            })
            .collect();
        if let Some(Value::String(text)) = system.get("system") {
            // Claude Code keeps no system prompt; a system message (a
            // summary) becomes a user line marked as injected.
            let mut line = Map::new();
            line.insert("type".into(), Value::from("user"));
            line.insert("isMeta".into(), Value::Bool(true));
            line.insert(
                "message".into(),
                serde_json::json!({"role": "user", "content": text}),
            );
            let mut all = vec![Value::Object(line)];
            all.extend(lines);
            let _ = env;
            return all;
        }
        lines
    }

    fn picks_active(&self) -> bool {
        true
    }

    /// Says how many message lines of the main conversation, after its
    /// last compaction, are off the chain the conversation is: a branch a
    /// rewind abandoned, or another session's lines in the same file (two
    /// logs written to one output). Kept in place, never read: said, not
    /// silent. (The lines before a compaction, and a subagent's, are said in
    /// [`Dialect::after_read`].)
    fn passed_over_note(
        &self,
        records: &[Option<&Map<String, Value>>],
        active: &[bool],
    ) -> Option<String> {
        let from = records
            .iter()
            .rposition(|v| v.is_some_and(is_compact_boundary))
            .map_or(0, |b| b + 1);
        let off = (from..records.len())
            .filter(|&i| {
                !active[i] && records[i].is_some_and(|v| chain_message(v) && uuid(v).is_some())
            })
            .count();
        (off > 0).then(|| {
            let (lines, they) = lines_are(off);
            format!(
                "{off} message {lines} off the conversation's chain (a branch a rewind left, or another session's lines in the same file): kept in the file as {they} and not read"
            )
        })
    }

    fn active(&self, records: &[Option<&Map<String, Value>>]) -> Option<Vec<bool>> {
        // A subagent's conversation (`isSidechain`) written into the main
        // session's file, as Claude Code did before it kept subagents in
        // files of their own, is not part of the main conversation. A file
        // of only such lines is the subagent's own.
        let mixed = records.iter().flatten().any(|r| chain_message(r))
            && records.iter().flatten().any(|r| sidechain(r));
        let main_only = || -> Option<Vec<bool>> {
            mixed.then(|| {
                records
                    .iter()
                    .map(|r| r.is_none_or(|r| !sidechain(r)))
                    .collect()
            })
        };
        // Lines without uuids (stream-json of older versions) have no
        // chain to walk.
        let Some(leaf) = records
            .iter()
            .rposition(|r| r.is_some_and(|r| chain_message(r) && uuid(r).is_some()))
        else {
            return main_only();
        };
        let (boundary, preserved) = compaction(records);
        if !branched(records) && boundary.is_none() {
            return main_only();
        }
        let walked = match boundary {
            // Nothing follows the last compaction yet: no message before it
            // is carried (the summary is still to come).
            Some(b) if leaf < b => Some(vec![false; records.len()]),
            _ => walk_chain(records, leaf, boundary, &preserved),
        };
        let Some(mut on_chain) = walked.or_else(|| {
            // A chain that cannot be walked (links missing or looping): after
            // a compaction, what follows it, in file order.
            let b = boundary?;
            Some((0..records.len()).map(|i| i > b).collect())
        }) else {
            return main_only();
        };
        parallel_results(records, &mut on_chain);
        let active: Vec<bool> = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                on_chain[i]
                    || r.is_none_or(|r| {
                        (uuid(r).is_none() || !chain_message(r)) && !(mixed && sidechain(r))
                    })
            })
            .collect();
        active.contains(&false).then_some(active)
    }

    fn after_read(&self, conv: &mut crate::transcript::Conversation) {
        crate::format::dialect::compaction_note(
            conv,
            is_compact_boundary,
            is_main_message,
            "message",
        );
        let unread = conv
            .records
            .iter()
            .filter(|r| {
                r.messages == 0
                    && r.value.as_ref().is_some_and(|v| {
                        subagent(v)
                            && matches!(
                                v.get("type").and_then(Value::as_str),
                                Some("user" | "assistant")
                            )
                    })
            })
            .count();
        if unread > 0 {
            let (lines, they) = lines_are(unread);
            conv.notes.push(format!(
                "{unread} subagent (isSidechain, parent_tool_use_id) {lines} not part of this conversation; passed through as {they}"
            ));
        }
        let run = conv.records.iter().any(|r| {
            r.value.as_ref().is_some_and(|v| {
                v.get("type").and_then(Value::as_str) == Some("system")
                    && v.get("subtype").and_then(Value::as_str) == Some("init")
            })
        });
        let lead = conv.messages.iter().find(|m| !m.role.is_instruction());
        if run && lead.is_some_and(|m| m.role == Role::Assistant) {
            conv.notes.push(
                "the prompt is not in this log: `claude -p` writes it only with --replay-user-messages, so the conversation opens with the assistant".into(),
            );
        }
    }

    fn finish(
        &self,
        _env: Option<&mut Map<String, Value>>,
        original: &[Record],
        out: &mut [OutRecord],
    ) {
        crate::format::chain::relink(original, out, "uuid", "parentUuid");
        crate::format::chain::keep_leaf_last(original, out, "uuid", is_main_message);
        if original
            .iter()
            .any(|r| r.value.as_ref().is_some_and(|v| v.contains_key("uuid")))
        {
            link_new_lines(out);
        } else {
            // A session without uuids: new lines get none either.
            for r in out.iter_mut().filter(|r| r.added) {
                if let Some(Value::Object(l)) = r.value.as_mut().map(std::sync::Arc::make_mut) {
                    l.shift_remove(MINTED);
                }
            }
        }
    }
}

/// The fields a session's message lines share, copied onto new lines from
/// their neighbours, in the order Claude Code writes them.
const SHARED: [&str; 6] = [
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
];

/// Gives lines written for added messages (a summary, a trim placeholder)
/// what the session's lines carry: a `uuid`, a `parentUuid` that puts them
/// in the chain right before the next line (which then names the last of
/// them as its parent), the session's shared fields and a timestamp, taken
/// from the next line (or the one before, at the end).
pub(crate) fn link_new_lines(out: &mut [OutRecord]) {
    fn line(r: &OutRecord) -> Option<&Map<String, Value>> {
        r.object()
    }
    let n = out.len();
    let mut i = 0;
    while i < n {
        if !out[i].added {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < n && out[j].added {
            j += 1;
        }
        let next = (j..n).find(|&k| line(&out[k]).is_some_and(|l| l.contains_key("parentUuid")));
        let prev = (0..i)
            .rev()
            .find(|&k| line(&out[k]).is_some_and(|l| l.contains_key("uuid")));
        let template = next.or(prev).and_then(|k| line(&out[k])).cloned();
        let mut parent = match (next, prev) {
            (Some(k), _) => line(&out[k]).and_then(|l| l.get("parentUuid")).cloned(),
            (None, Some(k)) => line(&out[k]).and_then(|l| l.get("uuid")).cloned(),
            (None, None) => None,
        }
        .unwrap_or(Value::Null);
        for r in &mut out[i..j] {
            let Some(new) = line(r).cloned() else {
                continue;
            };
            let mut l = Map::new();
            l.insert("parentUuid".into(), parent.clone());
            for key in SHARED {
                if let Some(v) = template.as_ref().and_then(|t| t.get(key)) {
                    l.insert(key.into(), v.clone());
                }
            }
            let minted = new.get(MINTED).and_then(Value::as_str).map(str::to_string);
            l.extend(new.into_iter().filter(|(k, _)| k != MINTED));
            let uuid = minted.unwrap_or_else(|| line_uuid(&l));
            l.insert("uuid".into(), Value::from(uuid.clone()));
            if let Some(v) = template.as_ref().and_then(|t| t.get("timestamp")) {
                l.insert("timestamp".into(), v.clone());
            }
            r.set(Value::Object(l));
            r.added = true;
            parent = Value::from(uuid);
        }
        if let Some(k) = next {
            if let Some(mut l) = line(&out[k]).cloned() {
                l.insert("parentUuid".into(), parent);
                out[k].set(Value::Object(l));
            }
        }
        i = j;
    }
}

/// Where `new_records` leaves a new line's uuid for `link_new_lines`.
pub(crate) const MINTED: &str = "\u{0}ctxclean-uuid";

/// A UUID (version 4 in form) derived from a new line's content (not its
/// parent, which a later step may relink), for a line whose message was not
/// minted; the same run writes the same file.
fn line_uuid(line: &Map<String, Value>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut line = line.clone();
    line.shift_remove("parentUuid");
    h.update(Value::Object(line).to_string().as_bytes());
    let b: [u8; 16] = h.finalize()[..16].try_into().expect("16 bytes");
    uuid_of(&b)
}

/// 16 bytes as a UUID of version 4 in form.
pub(crate) fn uuid_of(bytes: &[u8; 16]) -> String {
    let mut b = *bytes;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Whether a line is the boundary Claude Code writes at `/compact` (or an
/// automatic compaction).
fn is_compact_boundary(r: &Map<String, Value>) -> bool {
    r.get("type").and_then(Value::as_str) == Some("system")
        && r.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}
fn uuid(r: &Map<String, Value>) -> Option<&str> {
    r.get("uuid").and_then(Value::as_str)
}

/// A message line of the main conversation.
fn chain_message(r: &Map<String, Value>) -> bool {
    matches!(line_type(r), Some("user" | "assistant")) && !subagent(r)
}

/// A message line of a subagent's conversation.
fn sidechain(r: &Map<String, Value>) -> bool {
    matches!(line_type(r), Some("user" | "assistant")) && subagent(r)
}

/// Written by a subagent: `isSidechain` in a session file, a
/// `parent_tool_use_id` (the Task call it works for) in stream-json.
fn subagent(r: &Map<String, Value>) -> bool {
    r.get("isSidechain") == Some(&Value::Bool(true))
        || r.get("parent_tool_use_id").is_some_and(Value::is_string)
}

/// Whether the file has branches to leave out: a fork (a rewind: one line
/// with two children), or linked messages with several roots (a rewritten
/// file whose fork point went, a session that started over in the same
/// file): then the conversation is the chain of the last message.
fn branched(records: &[Option<&Map<String, Value>>]) -> bool {
    let mut children: HashMap<&str, usize> = HashMap::new();
    for r in records.iter().flatten() {
        if let Some(p) = r.get("parentUuid").and_then(Value::as_str) {
            *children.entry(p).or_default() += 1;
        }
    }
    // Roots that start a chain (a parentless message something answers).
    let roots = records
        .iter()
        .flatten()
        .filter(|r| {
            chain_message(r)
                && uuid(r).is_some_and(|u| children.contains_key(u))
                && !r.get("parentUuid").is_some_and(Value::is_string)
                && !r.get("logicalParentUuid").is_some_and(Value::is_string)
        })
        .count();
    children.values().any(|&n| n >= 2) || roots >= 2
}

/// The lines on the chain from the last message to the root (across
/// compactions, by `logicalParentUuid`, stopping at the last boundary). A
/// chain that breaks (a parent in another file, a cycle) gives `None`: the
/// file is left as it is.
fn walk_chain(
    records: &[Option<&Map<String, Value>>],
    leaf: usize,
    boundary: Option<usize>,
    preserved: &HashSet<&str>,
) -> Option<Vec<bool>> {
    let by_uuid: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((uuid((*r)?)?, i)))
        .collect();
    let mut on_chain = vec![false; records.len()];
    let mut cur = leaf;
    loop {
        if on_chain[cur] {
            return None;
        }
        on_chain[cur] = true;
        let parent = records[cur].and_then(|r| {
            r.get("parentUuid")
                .and_then(Value::as_str)
                .or_else(|| r.get("logicalParentUuid").and_then(Value::as_str))
        });
        match parent {
            None => break,
            Some(p) => match by_uuid.get(p) {
                Some(&k) if boundary.is_some_and(|b| k < b) && !preserved.contains(p) => break,
                Some(&k) => cur = k,
                None if boundary.is_some() => break,
                None => return None,
            },
        }
    }
    Some(on_chain)
}

/// Parallel tool calls: Claude Code writes each call as a line of its own
/// and hangs each result off its call, so the results of all but the last
/// call are leaves beside the chain, not a rewind. A line of only results
/// to calls on the chain that the chain does not answer itself is part of
/// the conversation.
fn parallel_results(records: &[Option<&Map<String, Value>>], on_chain: &mut [bool]) {
    let blocks = |r: &Map<String, Value>, ty: &str, key: &str| -> Vec<String> {
        r.get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(ty))
            .filter_map(|b| b.get(key).and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let mut called = HashSet::new();
    let mut answered = HashSet::new();
    for (i, r) in records.iter().enumerate() {
        if let (true, Some(r)) = (on_chain[i], r) {
            called.extend(blocks(r, "tool_use", "id"));
            answered.extend(blocks(r, "tool_result", "tool_use_id"));
        }
    }
    for (i, r) in records.iter().enumerate() {
        let Some(r) = r else { continue };
        if on_chain[i] || !chain_message(r) {
            continue;
        }
        let results = blocks(r, "tool_result", "tool_use_id");
        let all_results = r
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|c| c.len() == results.len());
        if all_results
            && !results.is_empty()
            && results
                .iter()
                .all(|id| called.contains(id) && !answered.contains(id))
        {
            on_chain[i] = true;
            answered.extend(results);
        }
    }
}

/// After `/compact` the next call carries the summary and what follows
/// it, not the history before the last compact boundary: that history stays
/// in the file, untouched, and is not read. Where the last boundary is,
/// and the lines newer compactions keep from before it
/// (`compactMetadata.preservedMessages.uuids`), which are sent too.
fn compaction<'a>(records: &[Option<&'a Map<String, Value>>]) -> (Option<usize>, HashSet<&'a str>) {
    let boundary = records
        .iter()
        .rposition(|r| r.is_some_and(is_compact_boundary));
    let preserved = boundary
        .and_then(|b| records[b])
        .and_then(|r| {
            r.get("compactMetadata")?
                .get("preservedMessages")?
                .get("uuids")
        })
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    (boundary, preserved)
}

/// `line is` and `it is`, or `lines are` and `they are`, for `n` lines.
fn lines_are(n: usize) -> (&'static str, &'static str) {
    if n == 1 {
        ("line is", "it is")
    } else {
        ("lines are", "they are")
    }
}

/// A main-conversation message line.
fn is_main_message(v: &Map<String, Value>) -> bool {
    matches!(line_type(v), Some("user" | "assistant"))
        && v.get("isSidechain") != Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, write_document, Format};

    const SESSION: &str = r#"{"type":"summary","summary":"Demo","leafUuid":"u4"}
{"parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"List files"},"uuid":"u1"}
{"parentUuid":"u1","sessionId":"s","type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},"uuid":"u2","requestId":"r1"}
{"parentUuid":"u2","sessionId":"s","type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"a.txt"}]},"uuid":"u3","toolUseResult":{"stdout":"a.txt"}}
{"type":"progress","data":{"type":"bash_progress"},"uuid":"p1","parentUuid":"u3","sessionId":"s"}
{"parentUuid":"p1","sessionId":"s","type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"One file."}]},"uuid":"u4"}
"#;

    #[test]
    fn reads_messages_and_passes_other_lines() {
        let doc =
            read_document("s.jsonl", SESSION.as_bytes().to_vec(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::ClaudeCode);
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages.len(), 4);
        assert_eq!(conv.records.len(), 6);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), SESSION);
    }

    #[test]
    fn a_session_opening_with_many_snapshots_is_claude_code() {
        let snap = r#"{"type":"file-history-snapshot","messageId":"a1","snapshot":{"messageId":"a1","trackedFileBackups":{},"timestamp":"2025-12-16T00:00:03.600Z"},"isSnapshotUpdate":false}"#;
        let mut text = format!("{snap}\n").repeat(60);
        text += r#"{"parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"hi"},"uuid":"u1"}"#;
        text.push('\n');
        let doc = read_document("s.jsonl", text.clone().into_bytes(), &Default::default()).unwrap();
        assert_eq!(doc.source_format, Format::ClaudeCode);
        assert_eq!(doc.conversations[0].messages.len(), 1);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn schema_drifted_tool_lines_come_back_as_they_were() {
        // A `tool_result` line without `output` gained `"output": null` (issue 13).
        let text = r#"{"type":"tool_use","sessionId":"s","name":"bash","input":{"command":"ls"},"uuid":"t1"}
{"type":"tool_result","sessionId":"s","name":"bash","uuid":"r1"}
{"type":"tool_result","sessionId":"s","name":"bash","output":{"stdout":"a.txt"},"uuid":"r2"}
"#;
        let doc = read_document("s.jsonl", text.as_bytes().to_vec(), &Default::default()).unwrap();
        assert_eq!(doc.conversations[0].messages.len(), 3);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn a_rewound_branch_is_not_part_of_the_conversation() {
        // u2 was answered (a2), then the user rewound to u1 and asked again (u3).
        let text = r#"{"parentUuid":null,"sessionId":"s","type":"user","message":{"role":"user","content":"first"},"uuid":"u1"}
{"parentUuid":"u1","sessionId":"s","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"abandoned answer"}]},"uuid":"a2"}
{"parentUuid":"u1","sessionId":"s","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"kept answer"}]},"uuid":"a3"}
{"parentUuid":"a3","sessionId":"s","type":"user","message":{"role":"user","content":"next"},"uuid":"u4"}
"#;
        let doc = read_document("s.jsonl", text.as_bytes().to_vec(), &Default::default()).unwrap();
        let texts: Vec<String> = doc.conversations[0]
            .messages
            .iter()
            .map(|m| m.content.text())
            .collect();
        assert_eq!(texts, ["first", "kept answer", "next"]);
        // Said, not silent.
        assert_eq!(
            doc.conversations[0].notes,
            ["1 message line is off the conversation's chain (a branch a rewind left, or another session's lines in the same file): kept in the file as it is and not read"]
        );
        // The abandoned line is still written back, in place.
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn two_sessions_in_one_file_say_the_lines_not_read() {
        // Two logs written one after the other (`convert a.jsonl b.jsonl >
        // both.jsonl`): the conversation is the second's chain, and the
        // first's lines are said.
        let session = |s: &str| {
            format!(
                r#"{{"parentUuid":null,"sessionId":"{s}","type":"user","message":{{"role":"user","content":"hello {s}"}},"uuid":"{s}1"}}
{{"parentUuid":"{s}1","sessionId":"{s}","type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"hi"}}]}},"uuid":"{s}2"}}
"#
            )
        };
        let text = session("a") + &session("b");
        let doc = read_document("s.jsonl", text.into_bytes(), &Default::default()).unwrap();
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages[0].content.text(), "hello b");
        assert_eq!(conv.messages.len(), 2);
        assert!(
            conv.notes[0].starts_with("2 message lines are off the conversation's chain"),
            "{:?}",
            conv.notes
        );
        // One session alone: nothing to say.
        let doc = read_document("s.jsonl", session("a").into_bytes(), &Default::default()).unwrap();
        assert!(doc.conversations[0].notes.is_empty());
    }

    #[test]
    fn removing_lines_keeps_the_parent_chain() {
        let mut doc =
            read_document("s.jsonl", SESSION.as_bytes().to_vec(), &Default::default()).unwrap();
        // Drop the tool call and its result.
        doc.conversations[0].messages.drain(1..3);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        // The progress line's parent was u3 (removed): it now hangs on u1.
        assert_eq!(lines[2]["uuid"], "p1");
        assert_eq!(lines[2]["parentUuid"], "u1");
        // Untouched lines stay byte for byte.
        assert_eq!(
            text.lines().next().unwrap(),
            SESSION.lines().next().unwrap()
        );
    }

    #[test]
    fn a_compacted_session_is_read_from_its_last_boundary() {
        // Issue 29: after `/compact`, the next call carries the summary and
        // what follows; the history before stays in the file as it was.
        let lines = [
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"question"}]}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"README.md"}}]}}"#,
            r#"{"type":"user","uuid":"t1","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"file contents"}],"is_error":false}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"c1","parentUuid":null,"logicalParentUuid":"t1","sessionId":"s","content":"Conversation compacted","compactMetadata":{"preTokens":2048,"trigger":"auto"}}"#,
            r#"{"type":"user","uuid":"cs1","parentUuid":"c1","sessionId":"s","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":[{"type":"text","text":"condensed context"}]}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"cs1","sessionId":"s","message":{"role":"assistant","content":[{"type":"text","text":"Continuing."}]}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let doc = read_document("s.jsonl", text.clone().into(), &Default::default()).unwrap();
        let conv = &doc.conversations[0];
        let texts: Vec<String> = conv.messages.iter().map(|m| m.content.text()).collect();
        assert_eq!(texts, ["condensed context", "Continuing."]);
        assert!(
            conv.notes[0].starts_with("3 message lines precede a compaction"),
            "{:?}",
            conv.notes
        );
        let mut out = Vec::new();
        crate::format::write_document(&doc, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
        // Messages the compaction kept are part of what follows it.
        let kept = text
            .replace(
                r#""trigger":"auto"}"#,
                r#""trigger":"auto","preservedMessages":{"anchorUuid":"t1","uuids":["a1","t1"]}}"#,
            )
            .replace(r#""parentUuid":"c1""#, r#""parentUuid":"t1""#);
        let doc = read_document("s.jsonl", kept.into(), &Default::default()).unwrap();
        let texts: Vec<String> = doc.conversations[0]
            .messages
            .iter()
            .map(|m| m.content.text())
            .collect();
        assert_eq!(
            texts,
            ["", "file contents", "condensed context", "Continuing."]
        );
        assert!(crate::pairs::pair_problems(&doc.conversations[0].messages).is_empty());
    }
}
