//! The rows of an agents' SQLite database as JSON: each column's value,
//! the columns that hold JSON decoded (plain, or zstd-compressed within a
//! bound), and the sessions a query lists. The agents' modules put their
//! sessions together from these; `database` opens the file and picks the
//! agent.

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{Map, Value};

/// The first bytes of a zstd frame (how newer Crush versions store a
/// message's parts).
const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A column's value as JSON.
pub(crate) fn json_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => {
            use base64::Engine as _;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
    }
}

/// The most a compressed column of `len` bytes is decoded to: JSON
/// compresses 5–50×, so a thousand times its size (and at least 1 MiB),
/// never more than 256 MiB. A zstd bomb (1 KB that decodes to 1 GB) stops
/// there.
fn max_decoded(len: usize) -> usize {
    len.saturating_mul(1000).clamp(1 << 20, 256 << 20)
}

/// A column that holds JSON, read as it: plain, or zstd-compressed.
pub(crate) fn decoded(v: ValueRef<'_>) -> Result<Value, String> {
    let bytes = match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => b,
        ValueRef::Null => return Ok(Value::Null),
        _ => return Err("neither text nor a blob".into()),
    };
    let plain;
    let json = if bytes.starts_with(&ZSTD) {
        use std::io::Read;
        let mut out = Vec::new();
        let bound = max_decoded(bytes.len());
        ruzstd::decoding::StreamingDecoder::new(bytes)
            .map_err(|e| format!("zstd that does not decode: {e}"))?
            .take(bound as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("zstd that does not decode: {e}"))?;
        if out.len() > bound {
            return Err(format!(
                "zstd of {} bytes that decodes past {} bytes: not read",
                bytes.len(),
                bound
            ));
        }
        plain = out;
        &plain[..]
    } else {
        bytes
    };
    let text = std::str::from_utf8(json).map_err(|e| format!("not UTF-8: {e}"))?;
    ctxclean_core::json::parse_exact(text).map_err(|e| format!("not JSON: {e}"))
}

/// The columns that hold JSON, read as JSON rather than as text.
const JSON_COLUMNS: [&str; 3] = ["parts", "message_json", "content_json"];

/// Each row of `sql` as a JSON object of its columns, the columns that
/// hold JSON decoded; a row whose JSON does not read is an error naming
/// the row (its `id`, or its `seq`) and the column.
pub(crate) fn rows(
    conn: &Connection,
    sql: &str,
    arg: Option<&str>,
) -> anyhow::Result<Vec<Map<String, Value>>> {
    let mut st = conn.prepare(sql)?;
    let names: Vec<String> = st.column_names().map(str::to_string).collect();
    let mut rows = match arg {
        Some(a) => st.query([a])?,
        None => st.query([])?,
    };
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut obj = Map::new();
        for (k, name) in names.iter().enumerate() {
            let v = row.get_ref(k)?;
            let v = if JSON_COLUMNS.contains(&name.as_str()) {
                decoded(v).map_err(|e| {
                    let id = ["id", "seq"].iter().find_map(|k| obj.get(*k)).map_or(
                        "?".to_string(),
                        |v| match v {
                            Value::String(s) => s.clone(),
                            v => v.to_string(),
                        },
                    );
                    anyhow::anyhow!("message {id}: {name} is {e}")
                })?
            } else {
                json_of(v)
            };
            obj.insert(name.clone(), v);
        }
        out.push(obj);
    }
    Ok(out)
}

/// The sessions (ids and the size of what they hold) that `sql` lists:
/// its first column the id, its second a size in bytes.
pub(crate) fn ids(conn: &Connection, sql: &str) -> anyhow::Result<Vec<(String, u64)>> {
    let mut st = conn.prepare(sql)?;
    let rows = st.query_map([], |r| {
        let id = r.get::<_, String>(0)?;
        let size = r.get::<_, Option<i64>>(1)?.unwrap_or(0);
        Ok((id, u64::try_from(size).unwrap_or(0)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_bomb_is_refused_at_its_bound() {
        let plain = vec![b' '; 8 << 20];
        let bomb = ruzstd::encoding::compress_to_vec(
            &plain[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert!(bomb.len() * 1000 < plain.len(), "{} bytes", bomb.len());
        let err = decoded(ValueRef::Blob(&bomb)).unwrap_err();
        assert!(err.contains("decodes past"), "{err}");
        let json = ruzstd::encoding::compress_to_vec(
            &br#"{"parts":[1,2,3]}"#[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decoded(ValueRef::Blob(&json)).unwrap()["parts"][2], 3);
    }
}
