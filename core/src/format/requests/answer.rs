//! A single answer from a provider's API, saved as it came back: an
//! Anthropic Messages response, an OpenAI `chat.completion` or Responses
//! `response` object, a Gemini `GenerateContentResponse`. Each is read in
//! its provider's format as the assistant message it holds, its other keys
//! (ids, stop reason, usage) kept as they came; its usage is what `stats`
//! shows "as logged". Opaque parts (signatures, encrypted reasoning,
//! compaction blobs) are the dialects' own and never counted as text.
//!
//! | answer | its message | read by |
//! |---|---|---|
//! | `{"type": "message", "role": "assistant", "content": [...]}` | the object | `anthropic` |
//! | `{"object": "chat.completion", "choices": [{message}]}` | `choices[].message` | `openai` |
//! | `{"object": "response", "output": [items]}` | `output` items | `responses` |
//! | `{"candidates": [{"content": {role, parts}}], "usageMetadata"}` | `candidates[].content` | `gemini` |
//! | `{"output": {"message": {role, content}}, "stopReason", "usage"}` (Bedrock Converse) | `output.message` | `bedrock` |

use serde_json::{Map, Value};

use crate::format::Format;

/// The format of an answer object, when `obj` is one.
pub(crate) fn format_of(obj: &Map<String, Value>) -> Option<Format> {
    let is = |k: &str, v: &str| obj.get(k).and_then(Value::as_str) == Some(v);
    // In a conversation's envelope the list read as records is `null`.
    let list = |k: &str| obj.get(k).is_some_and(|v| v.is_array() || v.is_null());
    if obj.contains_key("messages") || obj.contains_key("contents") || obj.contains_key("input") {
        return None;
    }
    if super::super::bedrock::is_answer(obj) {
        Some(Format::Bedrock)
    } else if is("type", "message") && is("role", "assistant") && list("content") {
        Some(Format::Anthropic)
    } else if is("object", "chat.completion") && list("choices") {
        Some(Format::OpenAi)
    } else if is("object", "response") && list("output") {
        Some(Format::Responses)
    } else if list("candidates")
        && (obj.contains_key("usageMetadata")
            || obj.contains_key("modelVersion")
            || obj.contains_key("responseId"))
    {
        Some(Format::Gemini)
    } else {
        None
    }
}

/// Whether a conversation's envelope is an answer.
pub(crate) fn is_answer(env: Option<&Map<String, Value>>) -> bool {
    env.is_some_and(|e| format_of(e).is_some())
}

/// An answer's usage, as the provider reported it: its counters by name,
/// nested ones joined with a dot (`input_tokens_details.cached_tokens`).
pub(crate) fn usage(env: &Map<String, Value>) -> Option<Vec<(String, u64)>> {
    let usage = env
        .get("usage")
        .or_else(|| env.get("usageMetadata"))?
        .as_object()?;
    Some(counters(usage))
}

/// A usage object's counters, nested ones joined with a dot.
pub(crate) fn counters(usage: &Map<String, Value>) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (k, v) in usage {
        match v {
            Value::Number(n) => out.extend(n.as_u64().map(|n| (k.clone(), n))),
            Value::Object(inner) => out.extend(
                inner
                    .iter()
                    .filter_map(|(k2, v)| Some((format!("{k}.{k2}"), v.as_u64()?))),
            ),
            _ => {}
        }
    }
    out
}
