//! Crush's sessions as stored on disk: its SQLite database, each session put
//! together as the JSON the `crush` format reads.

/// Crush's database: each session put together as `{session, messages}` of
/// its rows (see the `crush` format).
#[cfg(feature = "databases")]
pub(crate) mod database {
    use serde_json::{Map, Value};

    /// The sessions of Crush's database (tables `sessions` and `messages`), in
    /// the order they were created, with the bytes of their messages' parts.
    pub(crate) fn ids(conn: &rusqlite::Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT id, (SELECT coalesce(sum(length(parts)), 0) FROM messages WHERE messages.session_id = sessions.id) FROM sessions ORDER BY created_at, rowid";
        crate::stores::rows::ids(conn, sql)
    }

    /// The session `id` of Crush's database put together: its row, and its
    /// messages in order (a message's `parts` column JSON or zstd-compressed
    /// JSON).
    pub(crate) fn session(conn: &rusqlite::Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        use crate::stores::rows::rows;
        let Some(session) = rows(conn, "SELECT * FROM sessions WHERE id = ?1", Some(id))?.pop()
        else {
            anyhow::bail!("session {id}: not in the database any more");
        };
        let messages = rows(
            conn,
            "SELECT * FROM messages WHERE session_id = ?1 ORDER BY created_at, rowid",
            Some(id),
        )?;
        let mut doc = Map::new();
        doc.insert("session".into(), Value::Object(session));
        doc.insert(
            "messages".into(),
            Value::Array(messages.into_iter().map(Value::Object).collect()),
        );
        Ok(serde_json::to_vec_pretty(&Value::Object(doc))?)
    }
}
