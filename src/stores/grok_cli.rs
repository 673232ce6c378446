//! Grok CLI's sessions as stored on disk: its SQLite database, each session
//! put together as the JSON the `grok-cli` format reads.

/// Grok CLI's database: each session put together as `{session,
/// usage_events, messages}` of its rows (see the `grok-cli` format).
#[cfg(feature = "databases")]
pub(crate) mod database {
    use serde_json::{Map, Value};

    /// The sessions of Grok CLI's database, in the order they were created,
    /// with the bytes of their messages.
    pub(crate) fn ids(conn: &rusqlite::Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT id, (SELECT coalesce(sum(length(message_json)), 0) FROM messages WHERE messages.session_id = sessions.id) FROM sessions ORDER BY created_at, rowid";
        crate::stores::rows::ids(conn, sql)
    }

    fn has_table(conn: &rusqlite::Connection, t: &str) -> bool {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n > 0)
    }

    /// The session `id` of Grok CLI's database put together: its row, its
    /// usage events, and its messages in order with its latest compaction in
    /// their place.
    pub(crate) fn session(conn: &rusqlite::Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        use crate::stores::rows::rows;
        let Some(session) = rows(conn, "SELECT * FROM sessions WHERE id = ?1", Some(id))?.pop()
        else {
            anyhow::bail!("session {id}: not in the database any more");
        };
        let mut messages = rows(
            conn,
            "SELECT * FROM messages WHERE session_id = ?1 ORDER BY seq",
            Some(id),
        )?;
        let compaction = if has_table(conn, "compactions") {
            let sql = "SELECT * FROM compactions WHERE session_id = ?1 ORDER BY id DESC LIMIT 1";
            rows(conn, sql, Some(id))?.pop()
        } else {
            None
        };
        let usage = if has_table(conn, "usage_events") {
            let sql = "SELECT * FROM usage_events WHERE session_id = ?1 ORDER BY id";
            rows(conn, sql, Some(id))?
        } else {
            Vec::new()
        };
        if let Some(c) = compaction {
            let first = c.get("first_kept_seq").and_then(Value::as_i64).unwrap_or(0);
            let at = messages
                .iter()
                .position(|m| {
                    m.get("seq")
                        .and_then(Value::as_i64)
                        .is_some_and(|s| s >= first)
                })
                .unwrap_or(messages.len());
            let mut rec = Map::new();
            rec.insert("compaction".into(), Value::Object(c));
            messages.insert(at, rec);
        }
        let mut doc = Map::new();
        doc.insert("session".into(), Value::Object(session));
        doc.insert(
            "usage_events".into(),
            Value::Array(usage.into_iter().map(Value::Object).collect()),
        );
        doc.insert(
            "messages".into(),
            Value::Array(messages.into_iter().map(Value::Object).collect()),
        );
        Ok(serde_json::to_vec_pretty(&Value::Object(doc))?)
    }
}
