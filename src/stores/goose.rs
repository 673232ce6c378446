//! Goose's sessions as stored on disk: its `sessions.db`, each session put
//! together as the JSON the `goose` format reads.

/// Goose's `sessions.db`: each session put together as `goose session
/// export` writes it.
#[cfg(feature = "databases")]
pub(crate) mod database {
    use serde_json::{Map, Value};

    /// A `sessions.db` column of Goose's as the key `goose session export`
    /// writes it under, its JSON read: `recipe_json` is `recipe`.
    fn export_key(column: &str) -> &str {
        column.strip_suffix("_json").unwrap_or(column)
    }

    /// A timestamp as SQLite's `CURRENT_TIMESTAMP` writes it
    /// (`2026-01-27 10:00:00`), as Goose's export writes it
    /// (`2026-01-27T10:00:00Z`); any other text as it is.
    fn export_time(v: Value) -> Value {
        match v {
            Value::String(s) if s.len() == 19 && s.as_bytes()[10] == b' ' => {
                Value::String(format!("{}T{}Z", &s[..10], &s[11..]))
            }
            v => v,
        }
    }

    /// A column that holds JSON text, read as JSON (kept as text when it is
    /// not JSON).
    fn json_text(v: Value) -> Value {
        match v {
            Value::String(s) => ctxclean_core::json::parse_exact(&s).unwrap_or(Value::String(s)),
            v => v,
        }
    }

    /// The fields of `goose session export`, in its order (Goose's `Session`),
    /// from a session's row: `name` (or the older `description`), the
    /// `*_json` columns read under their names without it, `conversation` and
    /// `message_count` in their places; a column Goose adds later goes last.
    const EXPORT_ORDER: [&str; 23] = [
        "id",
        "working_dir",
        "name",
        "user_set_name",
        "session_type",
        "created_at",
        "updated_at",
        "extension_data",
        "total_tokens",
        "input_tokens",
        "output_tokens",
        "accumulated_total_tokens",
        "accumulated_input_tokens",
        "accumulated_output_tokens",
        "schedule_id",
        "recipe",
        "user_recipe_values",
        "conversation",
        "message_count",
        "provider_name",
        "model_config",
        "tenant_id",
        "user_id",
    ];

    fn export_fields(row: Map<String, Value>, conversation: Vec<Value>) -> Map<String, Value> {
        let mut fields = Map::new();
        let description = row.get("description").cloned();
        for (k, v) in row {
            let v = match k.as_str() {
                "description" => continue,
                "created_at" | "updated_at" => export_time(v),
                "extension_data" => json_text(v),
                k if k.ends_with("_json") => json_text(v),
                "user_set_name" => match v {
                    Value::Number(n) => Value::Bool(n.as_i64() != Some(0)),
                    v => v,
                },
                _ => v,
            };
            fields.insert(export_key(&k).to_string(), v);
        }
        if fields
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            if let Some(d) = description {
                fields.insert("name".into(), d);
            }
        }
        fields.insert("message_count".into(), Value::from(conversation.len()));
        fields.insert("conversation".into(), Value::Array(conversation));
        let mut doc = Map::new();
        for k in EXPORT_ORDER {
            if let Some(v) = fields.remove(k) {
                doc.insert(k.into(), v);
            }
        }
        doc.extend(fields);
        doc
    }

    /// The sessions of Goose's `sessions.db`, in the order they were created,
    /// with the bytes of their messages.
    pub(crate) fn ids(conn: &rusqlite::Connection) -> anyhow::Result<Vec<(String, u64)>> {
        let sql = "SELECT id, (SELECT coalesce(sum(length(content_json)), 0) FROM messages WHERE messages.session_id = sessions.id) FROM sessions ORDER BY created_at, rowid";
        crate::stores::rows::ids(conn, sql)
    }

    /// A message row of `sessions.db` as Goose's `Message` serializes it:
    /// `{id, role, created, content, metadata}`.
    fn export_message(m: Map<String, Value>) -> Value {
        let mut msg = Map::new();
        if let Some(id) = m.get("message_id").filter(|v| !v.is_null()) {
            msg.insert("id".into(), id.clone());
        }
        msg.insert("role".into(), m.get("role").cloned().unwrap_or(Value::Null));
        msg.insert(
            "created".into(),
            m.get("created_timestamp").cloned().unwrap_or(Value::Null),
        );
        msg.insert(
            "content".into(),
            m.get("content_json").cloned().unwrap_or(Value::Null),
        );
        let metadata = m.get("metadata_json").cloned().map(json_text);
        msg.insert("metadata".into(), metadata.unwrap_or(Value::Null));
        Value::Object(msg)
    }

    /// The session `id` of Goose's `sessions.db` (`~/.local/share/goose/sessions/`)
    /// put together as `goose session export` writes it: the session's fields,
    /// its `conversation` and `message_count`.
    pub(crate) fn session(conn: &rusqlite::Connection, id: &str) -> anyhow::Result<Vec<u8>> {
        use crate::stores::rows::rows;
        let Some(row) = rows(conn, "SELECT * FROM sessions WHERE id = ?1", Some(id))?.pop() else {
            anyhow::bail!("session {id}: not in the database any more");
        };
        let messages = rows(
            conn,
            "SELECT * FROM messages WHERE session_id = ?1 ORDER BY timestamp, id",
            Some(id),
        )?;
        let conversation = messages.into_iter().map(export_message).collect();
        let doc = export_fields(row, conversation);
        Ok(serde_json::to_vec_pretty(&Value::Object(doc))?)
    }
}
