//! Cursor's chats as the editor keeps them: the `cursorDiskKV` table of its
//! `globalStorage/state.vscdb`, each chat (a composer) put together as the
//! JSON the `cursor-ide` format reads.

/// Cursor's database: each composer put together as `{composer, bubbles}`
/// (see the `cursor-ide` format). Only `composerData:*` and `bubbleId:*`
/// keys are read: the same database holds the editor's settings and its
/// sign-in tokens, which ctxclean never reads.
#[cfg(feature = "databases")]
pub(crate) mod database {
    use rusqlite::{Connection, OptionalExtension};
    use serde_json::{Map, Value};

    /// The prefix of a composer's key.
    const COMPOSER: &str = "composerData:";

    /// The composers that hold messages, in the order they were made, with
    /// the bytes of their bubbles.
    pub(crate) fn ids(conn: &Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT substr(key, 14), \
             (SELECT coalesce(sum(length(b.value)), 0) FROM cursorDiskKV b \
              WHERE b.key >= 'bubbleId:' || substr(a.key, 14) || ':' \
                AND b.key < 'bubbleId:' || substr(a.key, 14) || ';') \
             FROM cursorDiskKV a \
             WHERE a.key >= 'composerData:' AND a.key < 'composerData;' \
               AND json_valid(CAST(a.value AS TEXT)) \
               AND (coalesce(json_array_length(CAST(a.value AS TEXT), '$.fullConversationHeadersOnly'), 0) > 0 \
                 OR coalesce(json_array_length(CAST(a.value AS TEXT), '$.conversation'), 0) > 0) \
             ORDER BY json_extract(CAST(a.value AS TEXT), '$.createdAt'), a.rowid";
        crate::stores::rows::ids(conn, sql)
    }

    /// The JSON value stored at `key`, if any.
    fn value(conn: &Connection, key: &str) -> anyhow::Result<Option<Value>> {
        let mut st = conn.prepare_cached("SELECT value FROM cursorDiskKV WHERE key = ?1")?;
        let got = st
            .query_row([key], |r| Ok(crate::stores::rows::decoded(r.get_ref(0)?)))
            .optional()?;
        match got {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(e)) => anyhow::bail!("{key}: its value is {e}"),
        }
    }

    /// The composer `id` put together: its `composerData` as stored, and its
    /// bubbles in the order of its headers (`fullConversationHeadersOnly`,
    /// each bubble under `bubbleId:<composer>:<bubble>`), or of its inline
    /// `conversation` (older versions), taken out of the composer. A header
    /// whose bubble is not stored is listed under `missing_bubbles`.
    pub(crate) fn session(conn: &Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        let Some(Value::Object(mut composer)) = value(conn, &format!("{COMPOSER}{id}"))? else {
            anyhow::bail!("composer {id}: not in the database any more");
        };
        let mut bubbles = Vec::new();
        let mut missing = Vec::new();
        if let Some(Value::Array(inline)) = composer.shift_remove("conversation") {
            bubbles = inline;
        }
        let headers = composer
            .get("fullConversationHeadersOnly")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if bubbles.is_empty() {
            for h in &headers {
                let Some(bubble) = h.get("bubbleId").and_then(Value::as_str) else {
                    continue;
                };
                match value(conn, &format!("bubbleId:{id}:{bubble}"))? {
                    Some(v @ Value::Object(_)) => bubbles.push(v),
                    _ => missing.push(Value::from(bubble)),
                }
            }
        }
        let mut doc = Map::new();
        doc.insert("composer".into(), Value::Object(composer));
        if !missing.is_empty() {
            doc.insert("missing_bubbles".into(), Value::Array(missing));
        }
        doc.insert("bubbles".into(), Value::Array(bubbles));
        Ok(serde_json::to_vec_pretty(&Value::Object(doc))?)
    }
}
