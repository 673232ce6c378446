//! Request bodies inside an envelope of their own: batch files and proxy
//! captures. The body is read as its provider's format; every other key
//! of the envelope (ids, method, url, headers, the response) is kept as it
//! came and never counted.
//!
//! | envelope | where the body is | written by |
//! |---|---|---|
//! | `{"custom_id", "method", "url", "body": {model, messages}}` | `body` | OpenAI Batch API input |
//! | `{"custom_id", "params": {model, max_tokens, system, messages}}` | `params` | Anthropic Message Batches |
//! | `{"key", "request": {contents, systemInstruction}}` | `request` | Gemini Batch API |
//! | `{"timestamp", "method", "path", "headers", "body": {…}, "response"}` | `body` | LLM proxies and gateways |
//! | `{"custom_id", "response": {"status_code", "body": {choices}}}` | `response.body` | OpenAI Batch API output |

use serde_json::{Map, Value};

/// The keys that say an object is an envelope around a request body.
const ENVELOPE_KEYS: &[&str] = &["custom_id", "method", "url", "path", "headers", "key"];

/// The path of the request body of an envelope, when `obj` is one.
pub(crate) fn body_path(obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
    let body = |o: &Map<String, Value>, k: &str| o.get(k).is_some_and(Value::is_object);
    let wrapped = |o: &Map<String, Value>| ENVELOPE_KEYS.iter().any(|k| o.contains_key(*k));
    if !wrapped(obj) {
        // A capture's request object: `{"request": {method, path, headers, body}}`.
        return match obj.get("request") {
            Some(Value::Object(r)) if wrapped(r) && body(r, "body") => Some(&["request", "body"]),
            _ => None,
        };
    }
    if body(obj, "body") {
        Some(&["body"])
    } else if obj.contains_key("custom_id") && body(obj, "params") {
        Some(&["params"])
    } else if obj.contains_key("key") && body(obj, "request") {
        Some(&["request"])
    } else {
        None
    }
}

/// The request body of an envelope, or the object itself.
pub fn body(obj: &Map<String, Value>) -> &Map<String, Value> {
    let mut at = obj;
    for key in body_path(obj).unwrap_or_default() {
        match at.get(*key) {
            Some(Value::Object(b)) => at = b,
            _ => return obj,
        }
    }
    at
}

/// The request body of an envelope, or the object itself, to change.
pub(crate) fn body_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let path = body_path(obj).unwrap_or_default();
    let mut at = obj;
    for key in path {
        at = match at.get_mut(*key) {
            Some(Value::Object(b)) => b,
            _ => unreachable!("body_path found objects along the path"),
        };
    }
    at
}

/// The path of a list inside an envelope's body (`["body", "messages"]`),
/// or at the top of a bare body, when the list is there.
pub(crate) fn list_path(obj: &Map<String, Value>, list: &str) -> Option<&'static [&'static str]> {
    let is_list = |o: &Map<String, Value>| o.get(list).is_some_and(Value::is_array);
    let path: &'static [&'static str] = match (body_path(obj), list) {
        (None, _) => return is_list(obj).then(|| top(list)).flatten(),
        (Some(["body"]), "messages") => &["body", "messages"],
        (Some(["body"]), "contents") => &["body", "contents"],
        (Some(["body"]), "input") => &["body", "input"],
        (Some(["params"]), "messages") => &["params", "messages"],
        (Some(["request"]), "contents") => &["request", "contents"],
        (Some(["request", "body"]), "messages") => &["request", "body", "messages"],
        (Some(["request", "body"]), "contents") => &["request", "body", "contents"],
        (Some(["request", "body"]), "input") => &["request", "body", "input"],
        _ => return None,
    };
    is_list(body(obj)).then_some(path)
}

/// The one-key path of a list at the top.
fn top(list: &str) -> Option<&'static [&'static str]> {
    Some(match list {
        "messages" => &["messages"],
        "contents" => &["contents"],
        "input" => &["input"],
        _ => return None,
    })
}

/// The path of the choices of an OpenAI Batch API output line
/// (`response.body.choices`), whose records are `{index, message,
/// finish_reason}`.
pub(crate) fn output_choices(obj: &Map<String, Value>) -> Option<&'static [&'static str]> {
    let choices = obj
        .get("response")?
        .get("body")?
        .get("choices")?
        .as_array()?;
    (obj.contains_key("custom_id") && choices.iter().all(|c| c.get("message").is_some()))
        .then_some(&["response", "body", "choices"][..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn bodies_are_found_in_their_envelopes() {
        let openai = obj(
            r#"{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}"#,
        );
        assert_eq!(
            list_path(&openai, "messages"),
            Some(&["body", "messages"][..])
        );
        let anthropic =
            obj(r#"{"custom_id":"r1","params":{"model":"m","max_tokens":9,"messages":[]}}"#);
        assert_eq!(
            list_path(&anthropic, "messages"),
            Some(&["params", "messages"][..])
        );
        let gemini = obj(r#"{"key":"k","request":{"contents":[]}}"#);
        assert_eq!(
            list_path(&gemini, "contents"),
            Some(&["request", "contents"][..])
        );
        assert_eq!(
            list_path(&obj(r#"{"messages":[]}"#), "messages"),
            Some(&["messages"][..])
        );
        // A body with no such list, and an object that is no envelope.
        assert_eq!(list_path(&gemini, "messages"), None);
        assert_eq!(
            list_path(&obj(r#"{"body":{"messages":[]}}"#), "messages"),
            None
        );
        let capture = obj(
            r#"{"request_id":"q","request":{"method":"POST","path":"/v1/messages","headers":{},"body":{"messages":[]}},"response":{}}"#,
        );
        assert_eq!(
            list_path(&capture, "messages"),
            Some(&["request", "body", "messages"][..])
        );
        let output = obj(
            r#"{"id":"b","custom_id":"r1","response":{"status_code":200,"body":{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}}}"#,
        );
        assert_eq!(
            output_choices(&output),
            Some(&["response", "body", "choices"][..])
        );
    }
}
