//! A request in flight: the body a client sends to a provider, cleaned by
//! the [`Engine`] and checked before it goes on. What `ctxclean serve` (and
//! any front end in the request path) calls once per request.
//!
//! The rule is *never make a request worse*: a body the recipe would make
//! invalid for its provider (a tool result without its call, …), a recipe
//! that failed (a summarizer down), a request whose history is upstream
//! (`previous_response_id`) all go on exactly as they came, and the outcome
//! says why. Bodies that cannot be read are the caller's error to answer.

use crate::changes::ConversationReport;
use crate::engine::{CleanError, Engine};
use crate::format::{read_document, Format, ReadOptions};
use crate::tokens::Tokenizer;
use crate::validate::{validate, Problem, Provider};

/// What to forward.
#[derive(Debug)]
pub struct Outcome {
    /// The cleaned body; `None`: forward the body as it came.
    pub body: Option<Vec<u8>>,
    /// Why the body goes on as it came, when it does and something could
    /// have changed (`None` when nothing needed to).
    pub kept_because: Option<String>,
    /// What the recipe did (or, when the body goes on as it came, would
    /// have done), per conversation.
    pub reports: Vec<ConversationReport>,
    /// The request's `model`, for the log.
    pub model: Option<String>,
}

impl Outcome {
    fn as_it_came(why: Option<String>, reports: Vec<ConversationReport>) -> Outcome {
        Outcome {
            body: None,
            kept_because: why,
            reports,
            model: None,
        }
    }

    /// Whether anything changed in what goes on.
    pub fn rewritten(&self) -> bool {
        self.body.is_some()
    }
}

/// Cleans one request body of `format` (a request format: `openai`,
/// `anthropic`, `responses`, `gemini`). `dry_run`: decide, report, and
/// forward as it came.
///
/// With `holds`, a conversation that comes back longer keeps what it was
/// cleaned to last time, the new messages appended, until the budget of
/// [`Holds`] says to clean it again (see [`Holds`]).
pub fn clean_request(
    engine: &Engine,
    format: Format,
    body: &[u8],
    tok: &Tokenizer,
    dry_run: bool,
    holds: Option<&Holds>,
) -> Result<Outcome, CleanError> {
    let read = ReadOptions {
        from: Some(format),
        ..ReadOptions::default()
    };
    let original = read_document("request", body.to_vec(), &read).map_err(CleanError::Input)?;
    let list = holds.and_then(|h| h.list_of(format, body));
    let model = original
        .conversations
        .first()
        .and_then(|c| c.envelope.as_ref())
        .and_then(|e| e.get("model"))
        .and_then(|m| m.as_str())
        .map(str::to_string);
    let provider = Provider::for_format(format);
    if let (Some(h), Some(list)) = (holds, list.as_ref()) {
        if let Some(mut out) = h.extend(list, &original, format, provider, tok)? {
            if dry_run {
                out.body = None;
                out.kept_because = Some("--dry-run".into());
            }
            out.model = model;
            return Ok(out);
        }
    }
    let mut out = decide(engine, original, format, tok, dry_run)?;
    if let (Some(h), Some(list)) = (holds, list) {
        h.remember(list, &out);
    }
    out.model = model;
    Ok(out)
}

fn decide(
    engine: &Engine,
    original: crate::format::Document,
    format: Format,
    tok: &Tokenizer,
    dry_run: bool,
) -> Result<Outcome, CleanError> {
    let read = ReadOptions {
        from: Some(format),
        ..ReadOptions::default()
    };
    if format == Format::Responses && continues_a_stored_response(&original) {
        return Ok(Outcome::as_it_came(
            Some("previous_response_id: the conversation's history is upstream".into()),
            Vec::new(),
        ));
    }
    let provider = Provider::for_format(format);
    let before: Vec<Vec<Problem>> = original
        .conversations
        .iter()
        .map(|c| validate(c, format, provider))
        .collect();
    let cleaned = match engine.clean_document(original, tok) {
        Ok(c) => c,
        Err(CleanError::Refused(why)) => return Ok(Outcome::as_it_came(Some(why), Vec::new())),
        Err(e) => return Err(e),
    };
    let reports = cleaned.reports.clone();
    if reports.iter().all(|r| r.changes.is_empty()) {
        return Ok(Outcome::as_it_came(None, reports));
    }
    if let Some(why) = failed_step(&reports) {
        return Ok(Outcome::as_it_came(Some(why), reports));
    }
    let bytes = cleaned.bytes();
    let after = read_document("request", bytes.clone(), &read).map_err(CleanError::Input)?;
    for (k, conv) in after.conversations.iter().enumerate() {
        let problems = validate(conv, format, provider);
        if let Some(p) = worse(before.get(k).map_or(&[][..], Vec::as_slice), &problems) {
            let why = format!(
                "the recipe would make it invalid for {}: {}",
                provider.name(),
                p.problem
            );
            return Ok(Outcome::as_it_came(Some(why), reports));
        }
    }
    if dry_run {
        return Ok(Outcome::as_it_came(Some("--dry-run".into()), reports));
    }
    Ok(Outcome {
        body: Some(bytes),
        kept_because: None,
        reports,
        model: None,
    })
}

/// What a conversation was cleaned to, for the next request of it.
struct Held {
    /// The hash of each message of the list that was cleaned.
    input: Vec<u64>,
    /// The list it was cleaned to.
    output: Vec<serde_json::Value>,
    /// Its tokens (the conversation as cleaned).
    tokens: usize,
    /// Whether cleaning changed it: a conversation that was left as it
    /// came is not held (its requests go on byte for byte).
    changed: bool,
}

/// Cache-stable cleaning: the conversations cleaned lately, by the hash of
/// what opens them (the system prompt and the first message).
///
/// A provider's prompt cache serves the part of a request that repeats the
/// previous one from its start. When a conversation comes back with
/// messages appended, the request forwarded is what it was cleaned to last
/// time with the new messages appended as they came, so its prefix is the
/// previous request's; only when that would pass `limit` tokens (the
/// recipe's `trim` leaves a step of room under it), or, with no limit, the
/// messages appended since the last cleaning pass `step` tokens, is it
/// cleaned again from the start (one cache miss per step, not per request).
/// The result is checked like any cleaned body.
pub struct Holds {
    limit: Option<usize>,
    step: usize,
    capacity: usize,
    held: std::sync::Mutex<(HashMap<u64, Held>, VecDeque<u64>)>,
}

use std::collections::{HashMap, VecDeque};

/// A request's list of messages, parsed: its key, the body's other keys,
/// and the hash of each message and of the conversation's opening.
pub struct Listed {
    key: &'static str,
    body: serde_json::Map<String, serde_json::Value>,
    items: Vec<serde_json::Value>,
    hashes: Vec<u64>,
    id: u64,
}

fn hash_of(v: &serde_json::Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

impl Holds {
    /// Holds for a recipe whose budget is `limit` tokens (its `trim`, if
    /// any: held until the budget is reached), else cleaned again every
    /// `step` tokens appended; the last `capacity` conversations are
    /// remembered.
    pub fn new(limit: Option<usize>, step: usize, capacity: usize) -> Holds {
        Holds {
            limit,
            step: step.max(1),
            capacity: capacity.max(1),
            held: std::sync::Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    /// The body's list of messages, if it has one to hold.
    pub fn list_of(&self, format: Format, body: &[u8]) -> Option<Listed> {
        let key = match format {
            Format::Responses => "input",
            Format::Gemini => "contents",
            _ => "messages",
        };
        let mut body: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(body).ok()?;
        let items = match body.remove(key)? {
            serde_json::Value::Array(items) if !items.is_empty() => items,
            _ => return None,
        };
        let hashes: Vec<u64> = items.iter().map(hash_of).collect();
        let opening = ["system", "instructions", "systemInstruction"]
            .iter()
            .filter_map(|k| body.get(*k))
            .map(hash_of)
            .fold(hashes[0], |a, b| a.rotate_left(7) ^ b);
        Some(Listed {
            key,
            body,
            items,
            hashes,
            id: opening,
        })
    }

    /// The conversation as held, with the new messages appended, when it
    /// still fits; `None` to clean it again.
    fn extend(
        &self,
        list: &Listed,
        original: &crate::format::Document,
        format: Format,
        provider: Provider,
        tok: &Tokenizer,
    ) -> Result<Option<Outcome>, CleanError> {
        let (output, tokens, from) = {
            let Ok(map) = self.held.lock() else {
                return Ok(None);
            };
            let Some(h) = map.0.get(&list.id) else {
                return Ok(None);
            };
            if !h.changed
                || h.input.len() > list.hashes.len()
                || list.hashes[..h.input.len()] != h.input[..]
            {
                return Ok(None);
            }
            (h.output.clone(), h.tokens, h.input.len())
        };
        let mut items = output;
        items.extend(list.items[from..].iter().cloned());
        let mut body = list.body.clone();
        body.insert(list.key.into(), serde_json::Value::Array(items));
        let bytes = serde_json::to_vec(&body).map_err(|e| CleanError::Write(e.into()))?;
        let read = ReadOptions {
            from: Some(format),
            ..ReadOptions::default()
        };
        let Ok(doc) = read_document("request", bytes.clone(), &read) else {
            return Ok(None);
        };
        let Some(conv) = doc.conversations.first() else {
            return Ok(None);
        };
        let now = tok.count_conversation(conv);
        let full = match self.limit {
            Some(limit) => now > limit,
            None => now.saturating_sub(tokens) > self.step,
        };
        if full {
            return Ok(None);
        }
        let before = original
            .conversations
            .first()
            .map(|c| validate(c, format, provider));
        if worse(
            before.as_deref().unwrap_or(&[]),
            &validate(conv, format, provider),
        )
        .is_some()
        {
            return Ok(None);
        }
        let count = |messages, tokens| crate::changes::Count { messages, tokens };
        let before_tokens = original
            .conversations
            .first()
            .map_or(0, |c| tok.count_conversation(c));
        let mut flags = serde_json::Map::new();
        flags.insert("held".into(), serde_json::Value::Bool(true));
        let report = crate::changes::ConversationReport {
            source: "request".into(),
            index: 0,
            format: format.name().into(),
            before: count(list.items.len(), before_tokens),
            after: count(conv.messages.len(), now),
            changes: Vec::new(),
            notes: Vec::new(),
            lost: Vec::new(),
            steps: Vec::new(),
            flags,
            delta: None,
        };
        Ok(Some(Outcome {
            body: (from < list.items.len() || report.after != report.before).then_some(bytes),
            kept_because: None,
            reports: vec![report],
            model: None,
        }))
    }

    /// Remembers what a conversation was cleaned to.
    fn remember(&self, list: Listed, out: &Outcome) {
        let (output, changed) = match &out.body {
            Some(b) => match self.list_of_bytes(list.key, b) {
                Some(items) => (items, true),
                None => return,
            },
            None if out.kept_because.is_none() => (Vec::new(), false),
            None => return,
        };
        let tokens = out.reports.first().map_or(0, |r| r.after.tokens);
        let Ok(mut map) = self.held.lock() else {
            return;
        };
        let (held, order) = &mut *map;
        if held
            .insert(
                list.id,
                Held {
                    input: list.hashes,
                    output,
                    tokens,
                    changed,
                },
            )
            .is_none()
        {
            order.push_back(list.id);
            while order.len() > self.capacity {
                if let Some(old) = order.pop_front() {
                    held.remove(&old);
                }
            }
        }
    }

    fn list_of_bytes(&self, key: &str, body: &[u8]) -> Option<Vec<serde_json::Value>> {
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(body).ok()?;
        match map.remove(key)? {
            serde_json::Value::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// A problem of the cleaned conversation of a kind the original had fewer of.
/// Counted once per list, by code: a body of 100k messages may have as many
/// problems (Ollama's calls have no ids).
fn worse<'a>(before: &[Problem], after: &'a [Problem]) -> Option<&'a Problem> {
    let counts = |list: &[Problem]| {
        let mut by_code: HashMap<&'static str, usize> = HashMap::new();
        for p in list {
            *by_code.entry(p.code).or_default() += 1;
        }
        by_code
    };
    let (was, now) = (counts(before), counts(after));
    after
        .iter()
        .find(|p| now[p.code] > was.get(p.code).copied().unwrap_or(0))
}

/// A step that fell back (a summarizer that failed and truncated instead):
/// the request goes on as it came rather than cut without its summary.
fn failed_step(reports: &[ConversationReport]) -> Option<String> {
    reports.iter().find_map(|r| {
        let text = |k: &str| r.flags.get(k).and_then(|v| v.as_str());
        text("fallback_reason")
            .or_else(|| text("summarize_failed"))
            .map(|why| format!("the summarizer failed: {why}"))
    })
}

/// A Responses request that continues a stored response: its history is
/// upstream (read from the document's envelope, not the body again).
fn continues_a_stored_response(doc: &crate::format::Document) -> bool {
    doc.conversations
        .first()
        .and_then(|c| c.envelope.as_ref())
        .and_then(|e| e.get("previous_response_id"))
        .is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Options;
    use crate::ops::trim::TrimSpec;
    use crate::ops::Pipeline;
    use crate::tokens::Encoding;

    fn trim(n: usize) -> Engine {
        let mut p = Pipeline::new();
        p.push(TrimSpec {
            max_tokens: Some(n),
            ..TrimSpec::default()
        });
        Engine::new(Options {
            pipeline: p,
            ..Options::default()
        })
    }

    const CHAT: &str = r#"{"model":"m","stream":true,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"one two three four five six seven eight nine ten"},{"role":"assistant","content":"eleven twelve thirteen fourteen fifteen"},{"role":"user","content":"last"}]}"#;

    #[test]
    fn a_body_over_budget_is_trimmed_and_the_rest_kept() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let out = clean_request(
            &trim(20),
            Format::OpenAi,
            CHAT.as_bytes(),
            &tok,
            false,
            None,
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(out.body.as_ref().unwrap()).unwrap();
        assert_eq!(body["stream"], true);
        assert_eq!(body["model"], "m");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.first().unwrap()["role"], "system");
        assert_eq!(msgs.last().unwrap()["content"], "last");
        assert!(msgs.len() < 4);
    }

    #[test]
    fn an_unchanged_body_and_a_dry_run_go_on_as_they_came() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let out = clean_request(
            &trim(10_000),
            Format::OpenAi,
            CHAT.as_bytes(),
            &tok,
            false,
            None,
        );
        let out = out.unwrap();
        assert!(out.body.is_none() && out.kept_because.is_none());
        let dry =
            clean_request(&trim(20), Format::OpenAi, CHAT.as_bytes(), &tok, true, None).unwrap();
        assert!(dry.body.is_none());
        assert_eq!(dry.kept_because.as_deref(), Some("--dry-run"));
        assert!(dry.reports[0]
            .changes
            .iter()
            .any(|c| c.action == crate::changes::Action::Removed));
    }

    #[test]
    fn a_stored_response_and_an_unreadable_body_are_not_cleaned() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let body = br#"{"model":"m","previous_response_id":"resp_1","input":[{"role":"user","content":"hi"}]}"#;
        let out = clean_request(&trim(1), Format::Responses, body, &tok, false, None).unwrap();
        assert!(out.body.is_none());
        assert!(out.kept_because.unwrap().contains("previous_response_id"));
        let bad = clean_request(
            &trim(1),
            Format::OpenAi,
            b"{\"messages\": [",
            &tok,
            false,
            None,
        );
        assert!(matches!(bad, Err(CleanError::Input(_))));
    }

    #[test]
    fn a_conversation_that_grows_keeps_its_cleaned_prefix_until_the_budget() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut p = Pipeline::new();
        p.push(TrimSpec {
            max_tokens: Some(300),
            step: Some(100),
            ..TrimSpec::default()
        });
        let engine = Engine::new(Options {
            pipeline: p,
            ..Options::default()
        });
        let holds = Holds::new(Some(300), 100, 16);
        let mut msgs = vec![serde_json::json!({"role": "system", "content": "Be brief."})];
        let (mut last, mut kept, mut recleaned) = (None::<Vec<serde_json::Value>>, 0, 0);
        for turn in 0..40 {
            msgs.push(serde_json::json!({"role": "user", "content": format!("question {turn} about the plan")}));
            let body =
                serde_json::to_vec(&serde_json::json!({"model": "m", "messages": msgs})).unwrap();
            let out =
                clean_request(&engine, Format::OpenAi, &body, &tok, false, Some(&holds)).unwrap();
            let sent: serde_json::Value =
                serde_json::from_slice(out.body.as_deref().unwrap_or(&body)).unwrap();
            let sent = sent["messages"].as_array().unwrap().clone();
            let conv = read_document(
                "x",
                serde_json::to_vec(&serde_json::json!({"messages": sent})).unwrap(),
                &ReadOptions::default(),
            )
            .unwrap();
            assert!(
                tok.count_conversation(&conv.conversations[0]) <= 300,
                "turn {turn} over budget"
            );
            match &last {
                Some(prev) if sent.len() > prev.len() && sent[..prev.len()] == prev[..] => {
                    kept += 1
                }
                Some(_) => recleaned += 1,
                None => {}
            }
            last = Some(sent);
            msgs.push(serde_json::json!({"role": "assistant", "content": format!("answer {turn}, in a few words")}));
        }
        // Most requests extend the previous one; a few clean again.
        assert!(
            recleaned > 0 && kept >= 3 * recleaned,
            "kept {kept}, cleaned again {recleaned}"
        );
    }

    #[test]
    fn server_tool_blocks_stay_with_their_results() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let body = br#"{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"search the weather in Paris, Vienna and Rome for me please"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","title":"t","encrypted_content":"abc"}]},{"type":"text","text":"It is sunny."}]},{"role":"user","content":"thanks, and tomorrow?"}]}"#;
        for budget in [10, 25, 40, 200] {
            let out =
                clean_request(&trim(budget), Format::Anthropic, body, &tok, false, None).unwrap();
            let sent: serde_json::Value =
                serde_json::from_slice(out.body.as_deref().unwrap_or(body)).unwrap();
            let text = sent.to_string();
            assert_eq!(
                text.contains("server_tool_use"),
                text.contains("web_search_tool_result"),
                "budget {budget}: {text}"
            );
        }
    }
}
