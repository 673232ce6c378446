//! Amazon Q Developer CLI's conversations as it keeps them: the
//! `conversations` table of `amazon-q/data.sqlite3` in the user's local
//! data directory, one conversation per working directory (`key`, its
//! path; `value`, the JSON the `amazon-q` format reads).

/// Amazon Q's database: each row's `value`. Only the `conversations` table
/// is read: the same database holds the CLI's state and its sign-in
/// tokens (`auth_kv`), which ctxclean never reads.
#[cfg(feature = "databases")]
pub(crate) mod database {
    use rusqlite::{Connection, OptionalExtension};
    use serde_json::{Map, Value};

    /// The conversations, in the order they were first saved, with the
    /// bytes of each.
    pub(crate) fn ids(conn: &Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT key, length(value) FROM conversations ORDER BY rowid";
        crate::stores::rows::ids(conn, sql)
    }

    /// The conversation of the directory `key` put together: its value as
    /// stored, and, from versions before 1.13, each `[user, assistant]`
    /// pair of its history as the entry later versions write (`{user,
    /// assistant, request_metadata: null}`).
    pub(crate) fn session(conn: &Connection, key: &str) -> anyhow::Result<Vec<u8>> {
        let mut st = conn.prepare("SELECT value FROM conversations WHERE key = ?1")?;
        let got = st
            .query_row([key], |r| Ok(crate::stores::rows::decoded(r.get_ref(0)?)))
            .optional()?;
        let mut state = match got {
            None => anyhow::bail!("conversation {key}: not in the database any more"),
            Some(Ok(Value::Object(o))) => o,
            Some(Ok(_)) => anyhow::bail!("conversation {key}: its value is JSON but not an object"),
            Some(Err(e)) => anyhow::bail!("conversation {key}: its value is {e}"),
        };
        if let Some(Value::Array(history)) = state.get_mut("history") {
            for entry in history.iter_mut() {
                if let Value::Array(pair) = entry {
                    let mut pair = std::mem::take(pair).into_iter();
                    let mut o = Map::new();
                    o.insert("user".into(), pair.next().unwrap_or(Value::Null));
                    o.insert("assistant".into(), pair.next().unwrap_or(Value::Null));
                    o.insert("request_metadata".into(), Value::Null);
                    *entry = Value::Object(o);
                }
            }
        }
        Ok(serde_json::to_vec_pretty(&Value::Object(state))?)
    }
}
