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
use crate::transcript::{Content, Conversation, Fields, Message, Part, PartKind, Role, ToolCall};

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
        raw: p.clone(),
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
        raw: p.clone(),
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
    Some(Message {
        tool_call_id: p.get("callID").and_then(Value::as_str).map(str::to_string),
        name: p.get("tool").and_then(Value::as_str).map(str::to_string),
        ..Message::new(Role::Tool, text)
    })
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
        out.push(Message {
            content: Content::Parts(std::mem::take(&mut self.parts)),
            tool_calls: (!calls.is_empty()).then_some(calls),
            fields: fields.clone(),
            ..Message::new(Role::Assistant, "")
        });
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
                Ok(vec![Message {
                    content: Content::Parts(content),
                    fields,
                    ..Message::new(Role::User, "")
                }])
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
        // A step of a long turn can hold thousands of tool parts: each
        // result finds its part by id, not by a scan.
        let tool_at: std::collections::HashMap<&str, usize> = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| ty(p) == Some("tool"))
            .filter_map(|(k, p)| Some((p.get("callID")?.as_str()?, k)))
            .collect();
        for m in msgs {
            if m.role.is_result() {
                // A result is its call's part: kept with the call when it
                // cannot be told by id.
                let Some(&k) = m.tool_call_id.as_deref().and_then(|id| tool_at.get(id)) else {
                    continue;
                };
                let part = kept[k].get_or_insert_with(|| parts[k].clone());
                set_output(part, &m.content.text());
                continue;
            }
            for p in m.content.parts() {
                if let Some(k) = p.slot.filter(|&k| k < parts.len()) {
                    kept[k] = Some(p.to_value());
                }
            }
            for c in m.calls() {
                let Some(k) = c.slot.filter(|&k| k < parts.len()) else {
                    continue;
                };
                let mut part = parts[k].clone();
                if let Some(Value::Object(state)) = part.get_mut("state") {
                    if state.get("input").map(arguments_text).as_deref() != Some(&c.arguments) {
                        state.insert("input".into(), arguments_value(&c.arguments));
                    }
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

/// A tool part's output set to `text`.
fn set_output(part: &mut Value, text: &str) {
    let Some(Value::Object(state)) = part.get_mut("state") else {
        return;
    };
    let key = match state.get("status").and_then(Value::as_str) {
        Some("error") => "error",
        _ => "output",
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

/// OpenCode's storage directory (`~/.local/share/opencode/storage`): a
/// session is `session/<project>/<session>.json`, its messages
/// `message/<session>/<message>.json`, each message's parts
/// `part/<message>/<part>.json`, messages and parts in the order of their
/// ids (as OpenCode lists them). Each session is put together as the
/// export `opencode export` writes (`{"info", "messages": [{"info",
/// "parts"}]}`), which is what is read.
pub(crate) mod storage {
    use std::path::{Path, PathBuf};

    use serde_json::{Map, Value};

    /// One session of the storage: its file, its id, and the size of what
    /// it is put together from (its message and part files are read when
    /// it is, see [`export`]).
    pub(crate) struct Session {
        /// The session's own file (`session/<project>/<id>.json`).
        pub(crate) file: PathBuf,
        /// Its id (the file's stem).
        pub(crate) id: String,
        /// The bytes of its session and message files.
        pub(crate) size: u64,
    }

    /// The storage root at or just below `dir` (`storage/` of OpenCode's
    /// data directory), if `dir` is one.
    pub(crate) fn root(dir: &Path) -> Option<PathBuf> {
        let is_root = |d: &Path| {
            ["session", "message", "part"]
                .iter()
                .all(|s| d.join(s).is_dir())
        };
        [dir.to_path_buf(), dir.join("storage")]
            .into_iter()
            .find(|d| is_root(d))
    }

    /// The `.json` files of a directory, sorted by name; none when it is
    /// missing.
    fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in entries {
            let p = e?.path();
            if p.is_file() && p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
        out.sort();
        Ok(out)
    }

    fn read(path: &Path) -> anyhow::Result<Value> {
        let text = std::fs::read(path)?;
        serde_json::from_slice(&text)
            .map_err(|e| anyhow::anyhow!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))
    }

    fn stem(p: &Path) -> String {
        p.file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
    }

    /// Every session of the storage at `root`, in the order of their files.
    pub(crate) fn sessions(root: &Path) -> anyhow::Result<Vec<Session>> {
        let mut projects: Vec<PathBuf> = std::fs::read_dir(root.join("session"))?
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.is_dir())
            .collect();
        projects.sort();
        let mut out = Vec::new();
        for project in projects {
            for file in files(&project)? {
                let id = stem(&file);
                let size = files(&root.join("message").join(&id))?
                    .iter()
                    .chain(std::iter::once(&file))
                    .filter_map(|f| std::fs::metadata(f).ok())
                    .map(|m| m.len())
                    .sum();
                out.push(Session { file, id, size });
            }
        }
        Ok(out)
    }

    /// The session `id` of the storage at `root` (its file `file`), put
    /// together as the export `opencode export` writes, in JSON.
    pub(crate) fn export(root: &Path, file: &Path, id: &str) -> anyhow::Result<Vec<u8>> {
        let mut messages = Vec::new();
        for m in files(&root.join("message").join(id))? {
            let parts = files(&root.join("part").join(stem(&m)))?
                .iter()
                .map(|p| read(p))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut message = Map::new();
            message.insert("info".into(), read(&m)?);
            message.insert("parts".into(), Value::Array(parts));
            messages.push(Value::Object(message));
        }
        let mut export = Map::new();
        export.insert("info".into(), read(file)?);
        export.insert("messages".into(), Value::Array(messages));
        Ok(serde_json::to_vec_pretty(&Value::Object(export))?)
    }
}

/// OpenCode's database (`~/.local/share/opencode/opencode.db`), where it
/// keeps its sessions since January 2026 (the storage folder above stopped
/// being written then): tables `session`, `message` and `part`, a message's
/// and a part's JSON in their `data` column without the ids their row
/// holds. Each session is put together as the export `opencode export`
/// writes, which is what is read.
#[cfg(feature = "databases")]
pub(crate) mod database {
    use serde_json::{Map, Value};

    use crate::format::agents::database::rows;

    /// A column's JSON text, read; an error names the row.
    fn data(row: &Map<String, Value>, what: &str) -> anyhow::Result<Map<String, Value>> {
        let id = row.get("id").and_then(Value::as_str).unwrap_or("?");
        let text = row.get("data").and_then(Value::as_str).unwrap_or("{}");
        match crate::json::parse_exact(text) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => anyhow::bail!("{what} {id}: data is not a JSON object"),
            Err(e) => anyhow::bail!("{what} {id}: data is not JSON: {e}"),
        }
    }

    /// The ids a row holds in its columns, then what its `data` holds.
    fn with_ids(ids: &[(&str, &Value)], data: Map<String, Value>) -> Value {
        let mut out = Map::new();
        for (k, v) in ids {
            out.insert((*k).into(), (*v).clone());
        }
        out.extend(data);
        Value::Object(out)
    }

    /// A JSON column's text, read (kept as text when it is not JSON).
    fn json_text(v: &Value) -> Value {
        match v {
            Value::String(s) => crate::json::parse_exact(s).unwrap_or_else(|_| v.clone()),
            v => v.clone(),
        }
    }

    /// The session's `info`, as OpenCode's `Session.Info` has it, from its row.
    fn info(row: &Map<String, Value>) -> Value {
        let col = |k: &str| row.get(k).filter(|v| !v.is_null());
        let mut out = Map::new();
        for (key, column) in [
            ("id", "id"),
            ("slug", "slug"),
            ("version", "version"),
            ("projectID", "project_id"),
            ("directory", "directory"),
            ("parentID", "parent_id"),
            ("title", "title"),
        ] {
            if let Some(v) = col(column) {
                out.insert(key.into(), v.clone());
            }
        }
        let mut time = Map::new();
        for (key, column) in [
            ("created", "time_created"),
            ("updated", "time_updated"),
            ("compacting", "time_compacting"),
            ("archived", "time_archived"),
        ] {
            if let Some(v) = col(column) {
                time.insert(key.into(), v.clone());
            }
        }
        out.insert("time".into(), Value::Object(time));
        let summary: Map<String, Value> = [
            ("additions", "summary_additions"),
            ("deletions", "summary_deletions"),
            ("files", "summary_files"),
        ]
        .into_iter()
        .filter_map(|(k, c)| Some((k.to_string(), col(c)?.clone())))
        .collect();
        if !summary.is_empty() {
            out.insert("summary".into(), Value::Object(summary));
        }
        if let Some(url) = col("share_url") {
            out.insert("share".into(), serde_json::json!({ "url": url }));
        }
        for key in ["revert", "permission"] {
            if let Some(v) = col(key) {
                out.insert(key.into(), json_text(v));
            }
        }
        Value::Object(out)
    }

    /// The sessions of OpenCode's database, in the order they were
    /// created, with the bytes of their messages' and parts' data.
    pub(crate) fn ids(conn: &rusqlite::Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT id, (SELECT coalesce(sum(length(data)), 0) FROM part WHERE part.session_id = session.id) FROM session ORDER BY time_created, id";
        crate::format::agents::database::ids(conn, sql)
    }

    /// The session `id` of OpenCode's database, as `opencode export` writes it.
    pub(crate) fn session(conn: &rusqlite::Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        let Some(row) = rows(conn, "SELECT * FROM session WHERE id = ?1", Some(id))?.pop() else {
            anyhow::bail!("session {id}: not in the database any more");
        };
        let sid = Value::String(id.to_string());
        let mut parts: std::collections::HashMap<String, Vec<Value>> = Default::default();
        let sql =
            "SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY message_id, id";
        for p in rows(conn, sql, Some(id))? {
            let mid = p.get("message_id").cloned().unwrap_or(Value::Null);
            let pid = p.get("id").cloned().unwrap_or(Value::Null);
            let ids = [("id", &pid), ("sessionID", &sid), ("messageID", &mid)];
            let value = with_ids(&ids, data(&p, "part")?);
            let key = mid.as_str().unwrap_or("").to_string();
            parts.entry(key).or_default().push(value);
        }
        let sql = "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id";
        let mut messages = Vec::new();
        for m in rows(conn, sql, Some(id))? {
            let mid = m.get("id").cloned().unwrap_or(Value::Null);
            let info = with_ids(&[("id", &mid), ("sessionID", &sid)], data(&m, "message")?);
            let own = parts.remove(mid.as_str().unwrap_or("")).unwrap_or_default();
            let mut message = Map::new();
            message.insert("info".into(), info);
            message.insert("parts".into(), Value::Array(own));
            messages.push(Value::Object(message));
        }
        let mut export = Map::new();
        export.insert("info".into(), info(&row));
        export.insert("messages".into(), Value::Array(messages));
        Ok(serde_json::to_vec_pretty(&Value::Object(export))?)
    }
}
