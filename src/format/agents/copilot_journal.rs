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

/// Whether `text` opens as a Copilot Chat operation log: its first line a
/// `kind` 0 snapshot of a chat session.
pub(crate) fn is_journal(text: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty());
    let Some(Ok(Value::Object(line))) = first.map(serde_json::from_str::<Value>) else {
        return false;
    };
    line.get("kind").and_then(Value::as_u64) == Some(0)
        && line.get("v").and_then(Value::as_object).is_some_and(|v| {
            v.get("requests").is_some_and(Value::is_array) && v.contains_key("version")
        })
}

/// The session a log makes, replayed line by line.
pub(crate) fn replay(text: &str) -> Result<Value, JournalError> {
    let mut state: Option<Value> = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| (line_no, format!("not a log entry: {e}")))?;
        let kind = entry.get("kind").and_then(Value::as_u64);
        if kind == Some(0) {
            state = Some(entry.get("v").cloned().unwrap_or(Value::Null));
            continue;
        }
        let s = state.as_mut().ok_or_else(|| {
            (
                line_no,
                "a change before the session's first snapshot".to_string(),
            )
        })?;
        apply(s, kind, &entry).map_err(|e| (line_no, e))?;
    }
    state.ok_or((1, "no snapshot of the session (`kind` 0)".to_string()))
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

fn apply(state: &mut Value, kind: Option<u64>, entry: &Map<String, Value>) -> Result<(), String> {
    let path = entry
        .get("k")
        .and_then(Value::as_array)
        .filter(|k| !k.is_empty())
        .ok_or("a change without a path (`k`)")?;
    let missing = || format!("no value at {}", Value::Array(path.clone()));
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
                return Err(format!("{} is not a list", Value::Array(path.clone())));
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
                entry.get("kind").unwrap_or(&Value::Null)
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(is_journal(log));
        let s = replay(log).unwrap();
        assert_eq!(
            s["requests"][0]["response"],
            serde_json::json!([{"value": "hello"}])
        );
        assert_eq!(s["customTitle"], "Greeting");
        assert!(s.get("pendingRequests").is_none());
        let bad = format!("{log}{{\"kind\":1,\"k\":[\"requests\",5,\"x\"],\"v\":1}}\n");
        assert_eq!(replay(&bad).unwrap_err().0, 7);
        assert!(!is_journal(r#"{"kind":0,"v":{"other":1}}"#));
    }
}
