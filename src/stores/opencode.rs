//! OpenCode's sessions as stored on disk: the storage folder and
//! `opencode.db`, each session put together as the export `opencode export`
//! writes, which the `opencode` format reads.

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

    use crate::stores::rows::rows;

    /// A column's JSON text, read; an error names the row.
    fn data(row: &Map<String, Value>, what: &str) -> anyhow::Result<Map<String, Value>> {
        let id = row.get("id").and_then(Value::as_str).unwrap_or("?");
        let text = row.get("data").and_then(Value::as_str).unwrap_or("{}");
        match ctxclean_core::json::parse_exact(text) {
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
            Value::String(s) => ctxclean_core::json::parse_exact(s).unwrap_or_else(|_| v.clone()),
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
        crate::stores::rows::ids(conn, sql)
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
