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
pub fn clean_request(
    engine: &Engine,
    format: Format,
    body: &[u8],
    tok: &Tokenizer,
    dry_run: bool,
) -> Result<Outcome, CleanError> {
    let read = ReadOptions {
        from: Some(format),
        ..ReadOptions::default()
    };
    let original = read_document("request", body.to_vec(), &read).map_err(CleanError::Input)?;
    let model = original
        .conversations
        .first()
        .and_then(|c| c.envelope.as_ref())
        .and_then(|e| e.get("model"))
        .and_then(|m| m.as_str())
        .map(str::to_string);
    let mut out = decide(engine, original, format, body, tok, dry_run)?;
    out.model = model;
    Ok(out)
}

fn decide(
    engine: &Engine,
    original: crate::format::Document,
    format: Format,
    body: &[u8],
    tok: &Tokenizer,
    dry_run: bool,
) -> Result<Outcome, CleanError> {
    let read = ReadOptions {
        from: Some(format),
        ..ReadOptions::default()
    };
    if format == Format::Responses && has_previous_response(body) {
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

/// A problem of the cleaned conversation of a kind the original had fewer of.
fn worse<'a>(before: &[Problem], after: &'a [Problem]) -> Option<&'a Problem> {
    let count = |list: &[Problem], code: &str| list.iter().filter(|p| p.code == code).count();
    after
        .iter()
        .find(|p| count(after, p.code) > count(before, p.code))
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

fn has_previous_response(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
        .ok()
        .and_then(|m| m.get("previous_response_id").cloned())
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
        let out = clean_request(&trim(20), Format::OpenAi, CHAT.as_bytes(), &tok, false).unwrap();
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
        let out = clean_request(&trim(10_000), Format::OpenAi, CHAT.as_bytes(), &tok, false);
        let out = out.unwrap();
        assert!(out.body.is_none() && out.kept_because.is_none());
        let dry = clean_request(&trim(20), Format::OpenAi, CHAT.as_bytes(), &tok, true).unwrap();
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
        let out = clean_request(&trim(1), Format::Responses, body, &tok, false).unwrap();
        assert!(out.body.is_none());
        assert!(out.kept_because.unwrap().contains("previous_response_id"));
        let bad = clean_request(&trim(1), Format::OpenAi, b"{\"messages\": [", &tok, false);
        assert!(matches!(bad, Err(CleanError::Input(_))));
    }
}
