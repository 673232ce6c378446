//! Zed's agent threads as stored on disk: `threads/threads.db` in Zed's data
//! directory, each thread put together as the JSON the `zed` format reads.

/// Zed's database: each thread its payload (`data`, zstd-compressed JSON or
/// plain JSON as `data_type` says) with `row`, the table's other columns;
/// a unit message (`"Resume"`) as `{"Resume": null}`.
#[cfg(feature = "databases")]
pub(crate) mod database {
    use rusqlite::{Connection, OptionalExtension};
    use serde_json::{Map, Value};

    /// The threads, oldest update first, with the bytes of their payloads.
    pub(crate) fn ids(conn: &Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT id, length(data) FROM threads ORDER BY updated_at, rowid";
        crate::stores::rows::ids(conn, sql)
    }

    /// The thread `id` put together: its payload, and `row`.
    pub(crate) fn session(conn: &Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        let mut st = conn.prepare("SELECT * FROM threads WHERE id = ?1")?;
        let names: Vec<String> = st.column_names().map(str::to_string).collect();
        let got = st
            .query_row([id], |r| {
                let mut row = Map::new();
                let mut payload = None;
                for (k, name) in names.iter().enumerate() {
                    let v = r.get_ref(k)?;
                    if name == "data" {
                        payload = Some(crate::stores::rows::decoded(v));
                    } else {
                        row.insert(name.clone(), crate::stores::rows::json_of(v));
                    }
                }
                Ok((row, payload))
            })
            .optional()?;
        let Some((row, payload)) = got else {
            anyhow::bail!("thread {id}: not in the database any more");
        };
        let mut doc = match payload {
            Some(Ok(Value::Object(p))) => p,
            Some(Ok(_)) => anyhow::bail!("thread {id}: its data is JSON but not an object"),
            Some(Err(e)) => anyhow::bail!("thread {id}: its data is {e}"),
            None => anyhow::bail!("thread {id}: no data column"),
        };
        // A unit message (`"Resume"`) is a bare string in Zed's list: put
        // together as an object of its name (`{"Resume": null}`), a record
        // like the others.
        if let Some(Value::Array(ms)) = doc.get_mut("messages") {
            for m in ms.iter_mut() {
                if let Value::String(name) = m {
                    let mut o = Map::new();
                    o.insert(std::mem::take(name), Value::Null);
                    *m = Value::Object(o);
                }
            }
        }
        doc.insert("row".into(), Value::Object(row));
        Ok(serde_json::to_vec_pretty(&Value::Object(doc))?)
    }
}
