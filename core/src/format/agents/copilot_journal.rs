//! VS Code Copilot Chat sessions kept as an operation log
//! (`chatSessions/<session>.jsonl`, VS Code 1.10x and later): the first
//! line is the session as it began (`{"kind": 0, "v": {…}}`), each later
//! line a change to it at a path of keys `k`: `kind` 1 sets a value, 2
//! pushes `v`'s elements onto a list (after cutting it to `i` elements
//! when `i` is given), 3 deletes; another `kind` 0 starts over. Replayed,
//! the log is the session a `.json` file holds, and it is read as one
//! (`copilot-chat`).
//!
//! Written back unchanged, the log comes back byte for byte. Changed, it is
//! written as VS Code itself compacts a log: one `kind` 0 line holding the
//! session as it now is.

use serde_json::{Map, Value};

/// What replaying a log found wrong: the line (1-based) and why.
pub(crate) type JournalError = (usize, String);

/// The session a log makes, replayed line by line; `None` when `text` does
/// not open as a Copilot Chat operation log (its first line a `kind` 0
/// snapshot of a chat session). The first line is parsed once, for both.
pub(crate) fn replay(text: &str) -> Option<Result<Value, JournalError>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next()?;
    let Ok(Value::Object(mut first)) = serde_json::from_str::<Value>(first) else {
        return None;
    };
    let session =
        |v: &Value| v.get("requests").is_some_and(Value::is_array) && v.get("version").is_some();
    if first.get("kind").and_then(Value::as_u64) != Some(0)
        || !first.get("v").is_some_and(|v| v.is_object() && session(v))
    {
        return None;
    }
    let mut state = first.remove("v")?;
    for (n, line) in lines {
        let line_no = n + 1;
        let entry: Map<String, Value> = match serde_json::from_str(line) {
            Ok(e) => e,
            Err(e) => return Some(Err((line_no, format!("not a log entry: {e}")))),
        };
        let kind = entry.get("kind").and_then(Value::as_u64);
        if kind == Some(0) {
            state = entry.get("v").cloned().unwrap_or(Value::Null);
            continue;
        }
        if let Err(e) = apply(&mut state, kind, &entry) {
            return Some(Err((line_no, e)));
        }
    }
    Some(Ok(state))
}

/// The value at a path of keys (strings into objects, numbers into lists).
fn at<'a>(mut v: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    for key in path {
        v = match (v, key) {
            (Value::Object(o), Value::String(k)) => o.get_mut(k)?,
            (Value::Array(a), Value::Number(i)) => a.get_mut(usize::try_from(i.as_u64()?).ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// A path (or any values) as an error quotes it: its first keys, each cut
/// to a few dozen characters, and how many there are (a hostile path of
/// 100k keys made an error line of 500 KB).
fn shown(path: &[Value]) -> String {
    const KEYS: usize = 8;
    const CHARS: usize = 40;
    let mut parts: Vec<String> = path
        .iter()
        .take(KEYS)
        .map(|k| {
            let text = k.to_string();
            match text.char_indices().nth(CHARS) {
                Some((at, _)) => format!("{}…", &text[..at]),
                None => text,
            }
        })
        .collect();
    if path.len() > KEYS {
        parts.push(format!("… {} keys in all", path.len()));
    }
    format!("[{}]", parts.join(","))
}

fn apply(state: &mut Value, kind: Option<u64>, entry: &Map<String, Value>) -> Result<(), String> {
    let path = entry
        .get("k")
        .and_then(Value::as_array)
        .filter(|k| !k.is_empty())
        .ok_or("a change without a path (`k`)")?;
    let missing = || format!("no value at {}", shown(path));
    match kind {
        Some(1) => {
            let v = entry.get("v").cloned().unwrap_or(Value::Null);
            let (last, parent) = path.split_last().ok_or_else(missing)?;
            match (at(state, parent).ok_or_else(missing)?, last) {
                (Value::Object(o), Value::String(k)) => {
                    o.insert(k.clone(), v);
                }
                (Value::Array(a), Value::Number(i)) => {
                    let i = i
                        .as_u64()
                        .and_then(|i| usize::try_from(i).ok())
                        .ok_or_else(missing)?;
                    match i.cmp(&a.len()) {
                        std::cmp::Ordering::Less => a[i] = v,
                        std::cmp::Ordering::Equal => a.push(v),
                        std::cmp::Ordering::Greater => return Err(missing()),
                    }
                }
                _ => return Err(missing()),
            }
        }
        Some(2) => {
            let Value::Array(list) = at(state, path).ok_or_else(missing)? else {
                return Err(format!("{} is not a list", shown(path)));
            };
            if let Some(i) = entry.get("i").and_then(Value::as_u64) {
                list.truncate(usize::try_from(i).unwrap_or(usize::MAX));
            }
            if let Some(Value::Array(items)) = entry.get("v") {
                list.extend(items.iter().cloned());
            }
        }
        Some(3) => {
            let (last, parent) = path.split_last().ok_or_else(missing)?;
            match (at(state, parent).ok_or_else(missing)?, last) {
                (Value::Object(o), Value::String(k)) => {
                    o.shift_remove(k);
                }
                (Value::Array(a), Value::Number(i)) => {
                    let i = i
                        .as_u64()
                        .and_then(|i| usize::try_from(i).ok())
                        .ok_or_else(missing)?;
                    if i < a.len() {
                        a.remove(i);
                    }
                }
                _ => return Err(missing()),
            }
        }
        _ => {
            return Err(format!(
                "unknown change kind {}",
                shown(std::slice::from_ref(
                    entry.get("kind").unwrap_or(&Value::Null)
                ))
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_quotes_a_long_path_short() {
        let path: Vec<Value> = (0..100_000)
            .map(|i| Value::from(format!("key{i}")))
            .collect();
        let mut state = serde_json::json!({});
        let entry: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"kind": 1, "k": path, "v": 1})).unwrap();
        let e = apply(&mut state, Some(1), &entry).unwrap_err();
        assert!(e.len() < 400, "{} characters", e.len());
        assert!(e.contains("100000 keys in all"), "{e}");
    }

    #[test]
    fn a_log_replays_to_its_session() {
        let log = concat!(
            r#"{"kind":0,"v":{"version":3,"sessionId":"s","requests":[],"pendingRequests":[]}}"#,
            "\n",
            r#"{"kind":2,"k":["requests"],"v":[{"requestId":"r1","message":{"text":"hi"},"response":[]}]}"#,
            "\n",
            r#"{"kind":2,"k":["requests",0,"response"],"v":[{"value":"partial"}]}"#,
            "\n",
            r#"{"kind":2,"k":["requests",0,"response"],"i":0,"v":[{"value":"hello"}]}"#,
            "\n",
            r#"{"kind":1,"k":["customTitle"],"v":"Greeting"}"#,
            "\n",
            r#"{"kind":3,"k":["pendingRequests"]}"#,
            "\n",
        );
        let s = replay(log).unwrap().unwrap();
        assert_eq!(
            s["requests"][0]["response"],
            serde_json::json!([{"value": "hello"}])
        );
        assert_eq!(s["customTitle"], "Greeting");
        assert!(s.get("pendingRequests").is_none());
        let bad = format!("{log}{{\"kind\":1,\"k\":[\"requests\",5,\"x\"],\"v\":1}}\n");
        assert_eq!(replay(&bad).unwrap().unwrap_err().0, 7);
        assert!(replay(r#"{"kind":0,"v":{"other":1}}"#).is_none());
    }
}
