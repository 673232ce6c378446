//! A request in flight: the body a client sends to a provider, cleaned by
//! the [`Engine`] and checked before it goes on. What `ctxclean serve` (and
//! any front end in the request path) calls once per request.
//!
//! The rule is *never make a request worse*: a body the recipe would make
//! invalid for its provider (a tool result without its call, …), a recipe
//! that failed (a summarizer down), a request whose history is upstream
//! (`previous_response_id`) all go on exactly as they came, and the outcome
//! says why. Bodies that cannot be read are the caller's error to answer.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::changes::ConversationReport;
use crate::engine::{CleanError, Engine};
use crate::format::{Format, ReadOptions, Recall};
use crate::tokens::Tokenizer;
use crate::validate::{validate_request as validate, Problem, Provider};

pub mod answer;
pub mod cache;
mod holds;
mod unmarked;
pub mod values;

pub use holds::{CachePrices, Holds, Listed};

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
    /// For a conversation seen before: whether its previous body was held
    /// (and what was appended) or it was cleaned again, and why.
    pub cache: Option<String>,
    /// For a conversation that continues one held: what the provider's
    /// cache should serve of this body.
    pub continuation: Option<Continuation>,
    /// For a request that opens as a conversation held does but does not
    /// continue it: the first message that differs (the client changed its
    /// history there).
    pub changed_at: Option<usize>,
    /// The conversation, as the holds tell them apart: numbered from 1 in
    /// this process as each is first held, the same number for every
    /// request that continues it (`None` without holds).
    pub conversation: Option<u64>,
    /// Tokens of the tool definitions the request carries: billed with
    /// every call, in no report's count (what a billed-per-counted ratio
    /// must add to the messages').
    pub extras: usize,
    /// Whether ctxclean placed a prompt-cache breakpoint of its own on the
    /// body it changed (see [`cache::with_breakpoint`]).
    pub breakpoint: bool,
}

/// What a continuing conversation's cache should serve, in ctxclean's
/// tokens: the prefix this body shares with the previous body forwarded,
/// that body's whole size, and the time since it went.
#[derive(Debug, Clone, Copy)]
pub struct Continuation {
    /// Tokens of the prefix shared with the previous body forwarded.
    pub shared: usize,
    /// Tokens of the previous body forwarded.
    pub previous: usize,
    /// Since the previous request of the conversation.
    pub since: std::time::Duration,
    /// Tokens of the previous request as it came (its count before
    /// cleaning): what of this request as it came a cache would have
    /// served, had it gone on as it came.
    pub previous_came: usize,
    /// Tokens of what a provider caches before the messages (the tools,
    /// the system prompt) when they are the same as the previous request's;
    /// 0 when they changed. Not in `shared`.
    pub head: usize,
}

impl Outcome {
    fn as_it_came(why: Option<String>, reports: Vec<ConversationReport>) -> Outcome {
        Outcome {
            kept_because: why,
            ..Outcome::of(None, reports, None)
        }
    }

    /// `body` (`None`: the request as it came) with its reports and what
    /// the holds say of it; nothing else known yet.
    fn of(
        body: Option<Vec<u8>>,
        reports: Vec<ConversationReport>,
        cache: Option<String>,
    ) -> Outcome {
        Outcome {
            body,
            kept_because: None,
            reports,
            model: None,
            cache,
            continuation: None,
            changed_at: None,
            conversation: None,
            extras: 0,
            breakpoint: false,
        }
    }

    /// Whether anything changed in what goes on.
    pub fn rewritten(&self) -> bool {
        self.body.is_some()
    }

    /// Every input token of the body that goes on instead, when it
    /// changed: its conversation's count and its tool definitions', which
    /// is what its prompt-cache units add up to (the meter need not walk
    /// it again). `None` when it goes on as it came, or has no report.
    pub fn tokens_sent(&self) -> Option<u64> {
        self.body.as_ref()?;
        self.reports
            .first()
            .map(|r| (r.after.tokens + self.extras) as u64)
    }

    /// Request `came` of `format`, which this outcome decided, metered by
    /// `as_came` at `now` (seconds): billed as it came, beside the tokens
    /// of what went instead (from this outcome, or counted when it has no
    /// report). `None` for a body that is not a JSON object.
    pub fn meter(
        &self,
        as_came: &cache::AsCame,
        format: Format,
        came: &[u8],
        tok: &Tokenizer,
        now: f64,
    ) -> Option<cache::Metered> {
        tok.set_format(format);
        let units = cache::Units::of(format, came, tok, as_came.sizes())?;
        self.meter_units(as_came, format, &units, tok, now)
    }

    /// [`Outcome::meter`] of a request whose units are known.
    fn meter_units(
        &self,
        as_came: &cache::AsCame,
        format: Format,
        units: &cache::Units,
        tok: &Tokenizer,
        now: f64,
    ) -> Option<cache::Metered> {
        let sent = match self.body.as_deref() {
            None => None,
            Some(body) => Some(
                self.tokens_sent()
                    .or_else(|| as_came.tokens(format, body, tok))?,
            ),
        };
        Some(as_came.bill_units(format, (units, sent), self.model.as_deref(), now))
    }
}

/// [`clean_request`], and the request as it came metered by `as_came` at
/// `now` (seconds), as [`Outcome::meter`] meters it: the proxy's one call
/// per request. With holds, the meter takes the request's messages as the
/// holds listed them, and does not walk its text again.
pub fn clean_and_meter(
    (engine, holds): (&Engine, Option<&Holds>),
    format: Format,
    body: &[u8],
    tok: &Tokenizer,
    dry_run: bool,
    (as_came, now): (&cache::AsCame, f64),
) -> Result<(Outcome, Option<cache::Metered>), CleanError> {
    // Images count by the request's provider from the first count on: a
    // worker's tokenizer keeps the rule of the request it served before.
    tok.set_format(format);
    let original = read_request(format, body)?;
    let listed = holds.and_then(|_| Listed::of(format, body));
    let units = listed
        .as_ref()
        .and_then(|l| l.units(format, tok, as_came.sizes()));
    let out = clean_listed_request(
        engine,
        format,
        (Cow::Owned(original), listed.as_ref(), &Came::new()),
        tok,
        dry_run,
        holds,
    )?;
    let metered = match &units {
        Some(units) => out.meter_units(as_came, format, units, tok, now),
        None => out.meter(as_came, format, body, tok, now),
    };
    Ok((out, metered))
}

/// Cleans one request body of `format` (a request format: `openai`,
/// `anthropic`, `responses`, `gemini`). `dry_run`: decide, report, and
/// forward as it came.
///
/// With `holds`, a conversation that comes back longer is forwarded as it
/// was last time with the new messages appended, unless the budget or the
/// model's cache prices say to clean it again (see [`Holds`]).
pub fn clean_request(
    engine: &Engine,
    format: Format,
    body: &[u8],
    tok: &Tokenizer,
    dry_run: bool,
    holds: Option<&Holds>,
) -> Result<Outcome, CleanError> {
    let original = read_request(format, body)?;
    clean_read_request(engine, format, body, original, tok, dry_run, holds)
}

/// A request body as [`clean_request`] reads it.
pub fn read_request(format: Format, body: &[u8]) -> Result<crate::format::Document, CleanError> {
    read_body(format, body.to_vec(), None).map_err(CleanError::Input)
}

/// [`read_request`] with the records `recall` holds read from it instead of
/// parsed, and the rest put in it. What is written from the document is
/// read back with it too (`replay`, where each call's records are mostly
/// the call before's).
pub fn read_request_recalling(
    format: Format,
    body: &[u8],
    recall: &Arc<Recall>,
) -> Result<crate::format::Document, CleanError> {
    read_body(format, body.to_vec(), Some(recall)).map_err(CleanError::Input)
}

/// Spans of a request body this long or longer (the body, its list of
/// messages, a large message) are split once and trusted on a first read,
/// as a large document's are (see `format::read`): each part is still
/// parsed, so the read succeeds only where all of it is valid, and a body
/// it fails on is read again checking every span, for the error it always
/// had. A body is one conversation: what the split remembers is its outline.
const REQUEST_SPLIT: usize = 8 * 1024;

/// A request body of `format` read as the proxy reads it (see
/// [`REQUEST_SPLIT`]).
pub(crate) fn read_body(
    format: Format,
    body: Vec<u8>,
    recall: Option<&Arc<Recall>>,
) -> Result<crate::format::Document, crate::InputError> {
    let read = ReadOptions {
        from: Some(format),
        recall: recall.cloned(),
        ..ReadOptions::default()
    };
    crate::format::read::read_document_with("request", body, &read, true, REQUEST_SPLIT)
}

/// [`clean_request`] on a body already read by [`read_request`]
/// (`original`): what `ctxclean replay` calls for each recipe, the body read
/// once for all of them (a read document costs about six times what a
/// copy of it does).
pub fn clean_read_request(
    engine: &Engine,
    format: Format,
    body: &[u8],
    original: crate::format::Document,
    tok: &Tokenizer,
    dry_run: bool,
    holds: Option<&Holds>,
) -> Result<Outcome, CleanError> {
    let listed = holds.and_then(|_| Listed::of(format, body));
    clean_listed_request(
        engine,
        format,
        (Cow::Owned(original), listed.as_ref(), &Came::new()),
        tok,
        dry_run,
        holds,
    )
}

/// [`clean_read_request`] on the body read by [`read_request`] and listed
/// by [`Listed::of`] (`None` without holds), with what was found of it
/// ([`Came`], of this request only): what `ctxclean replay` calls for each
/// recipe, the body read, listed and checked once for all of them and lent
/// to each. The read body is copied only where it is cleaned (a recipe
/// without holds, or holds that clean again): a request held goes on
/// without a copy of it.
pub fn clean_listed_request(
    engine: &Engine,
    format: Format,
    (original, listed, came): (Cow<'_, crate::format::Document>, Option<&Listed>, &Came),
    tok: &Tokenizer,
    dry_run: bool,
    holds: Option<&Holds>,
) -> Result<Outcome, CleanError> {
    // Before anything is counted (a held body is counted without the
    // engine, which sets it too).
    tok.set_format(format);
    let model = original
        .conversations
        .first()
        .and_then(|c| c.envelope.as_ref())
        .and_then(|e| e.get("model"))
        .and_then(|m| m.as_str())
        .map(str::to_string);
    let extras = original
        .conversations
        .first()
        .and_then(|c| c.envelope.as_ref())
        .map_or(0, |e| crate::fit::extras(tok, e));
    let listed = holds.zip(listed);
    let stored = format == Format::Responses && continues_a_stored_response(&original);
    let mut out = match listed {
        Some((h, list)) if !stored => h.clean(
            engine,
            list,
            (original, came),
            format,
            tok,
            model.as_deref(),
        )?,
        _ => decide(engine, original.into_owned(), format, tok, came)?,
    };
    // A body ctxclean changed, for a provider that caches only what is
    // marked and carrying no marker: a breakpoint on its newest block, so
    // that the next request reads what this one writes.
    if let Some(body) = out.body.as_deref() {
        let tokens = out.reports.first().map_or(0, |r| r.after.tokens) + extras;
        let rule = cache::Rule::of(format, model.as_deref());
        if let Some(marked) = cache::with_breakpoint(format, body, rule, tokens) {
            out.body = Some(marked);
            out.breakpoint = true;
        }
    }
    if dry_run && out.body.take().is_some() {
        out.kept_because = Some("--dry-run".into());
    }
    out.model = model;
    out.extras = extras;
    Ok(out)
}

fn decide(
    engine: &Engine,
    original: crate::format::Document,
    format: Format,
    tok: &Tokenizer,
    came: &Came,
) -> Result<Outcome, CleanError> {
    match decide_unchecked(engine, original, format, tok, came)? {
        (out, Some(check)) => check.run(out),
        (out, None) => Ok(out),
    }
}

/// [`decide`] up to the cleaned body, with what is left to check of it
/// (`None` when the outcome is final: nothing to check).
fn decide_unchecked(
    engine: &Engine,
    original: crate::format::Document,
    format: Format,
    tok: &Tokenizer,
    came: &Came,
) -> Result<(Outcome, Option<Check>), CleanError> {
    if format == Format::Responses && continues_a_stored_response(&original) {
        let why = "previous_response_id: the conversation's history is upstream";
        return Ok((Outcome::as_it_came(Some(why.into()), Vec::new()), None));
    }
    let provider = Provider::for_format(format);
    let recall = original.style.recall.clone();
    let before = came.problems(&original, format).to_vec();
    let reasoned: Vec<_> = original
        .conversations
        .iter()
        .map(crate::validate::calls_after_reasoning)
        .collect();
    let cleaned = match engine.clean_document(original, tok) {
        Ok(c) => c,
        Err(CleanError::Refused(why)) => {
            return Ok((Outcome::as_it_came(Some(why), Vec::new()), None))
        }
        Err(e) => return Err(e),
    };
    let reports = cleaned.reports.clone();
    if reports.iter().all(|r| r.changes.is_empty()) {
        return Ok((Outcome::as_it_came(None, reports), None));
    }
    if let Some(why) = failed_step(&reports) {
        return Ok((Outcome::as_it_came(Some(why), reports), None));
    }
    let out = Outcome::of(Some(cleaned.bytes()), reports, None);
    let check = Check {
        format,
        provider,
        before,
        reasoned,
        recall,
    };
    Ok((out, Some(check)))
}

/// What is left to check of a cleaned body before it may go on: that it
/// reads back, and is no worse for its provider than what came.
/// What a request as it came was found to be, once however many recipes
/// clean it (replay cleans each call's request once for each): its
/// problems for its format's provider, by conversation. One per request
/// as read, handed with it to each cleaning of it, never to another's.
#[derive(Debug, Default)]
pub struct Came {
    problems: std::cell::OnceCell<Vec<Vec<Problem>>>,
}

impl Came {
    /// Nothing found yet.
    pub fn new() -> Came {
        Came::default()
    }

    /// The problems `validate_request` finds in each conversation of
    /// `original` (the request this is of) for `format`'s provider.
    pub fn problems(&self, original: &crate::format::Document, format: Format) -> &[Vec<Problem>] {
        self.problems.get_or_init(|| {
            let provider = Provider::for_format(format);
            original
                .conversations
                .iter()
                .map(|c| validate(c, format, provider))
                .collect()
        })
    }
}

struct Check {
    format: Format,
    provider: Provider,
    before: Vec<Vec<Problem>>,
    reasoned: Vec<std::collections::HashSet<String>>,
    /// What the original was read with.
    recall: Option<Arc<Recall>>,
}

impl Check {
    /// `out` (a cleaned body) if it passes, else the request as it came,
    /// with why.
    fn run(self, out: Outcome) -> Result<Outcome, CleanError> {
        let bytes = out.body.clone().unwrap_or_default();
        let after =
            read_body(self.format, bytes, self.recall.as_ref()).map_err(CleanError::Input)?;
        for (k, conv) in after.conversations.iter().enumerate() {
            let problems = validate(conv, self.format, self.provider);
            let lost = self
                .reasoned
                .get(k)
                .and_then(|needed| crate::validate::reasoning_lost(conv, needed));
            let worse = worse(self.before.get(k).map_or(&[][..], Vec::as_slice), &problems);
            if let Some(p) = worse.or(lost.as_ref()) {
                let why = format!(
                    "the recipe would make it invalid for {}: {}",
                    self.provider.name(),
                    p.problem
                );
                return Ok(Outcome::as_it_came(Some(why), out.reports));
            }
        }
        Ok(out)
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

    pub(crate) use crate::testing::fixture_files;

    /// Each request format to read a fixture as.
    pub(crate) const REQUEST_FORMATS: [Format; 4] = [
        Format::OpenAi,
        Format::Anthropic,
        Format::Responses,
        Format::Gemini,
    ];

    /// A request body read trusting its large spans first reads as the
    /// checking read does: on every fixture of 8 KiB or more, in each
    /// request format, whole, cut short and with a byte broken three
    /// quarters in, the same document written back, or the same
    /// error at the same line and column.
    #[test]
    fn a_body_read_trusting_its_spans_reads_as_one_checked() {
        let mut compared = (0, 0);
        for path in fixture_files() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.len() < REQUEST_SPLIT {
                continue;
            }
            let cut = bytes[..bytes.len() * 2 / 3].to_vec();
            let mut broken = bytes.clone();
            broken[bytes.len() * 3 / 4] = b'}';
            for (body, format) in [bytes, cut, broken]
                .iter()
                .flat_map(|b| REQUEST_FORMATS.map(|f| (b, f)))
            {
                let read = ReadOptions {
                    from: Some(format),
                    ..ReadOptions::default()
                };
                let name = format!("{} as {}", path.display(), format.name());
                let checked = crate::format::read_document("request", body.clone(), &read);
                match (read_body(format, body.clone(), None), checked) {
                    (Ok(a), Ok(b)) => {
                        let written = |d: &crate::format::Document| {
                            let mut out = Vec::new();
                            crate::format::write_document(d, &mut out).unwrap();
                            out
                        };
                        assert!(written(&a) == written(&b), "{name}");
                        compared.0 += 1;
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(
                            (a.line, a.column, &a.message),
                            (b.line, b.column, &b.message),
                            "{name}"
                        );
                        compared.1 += 1;
                    }
                    (a, b) => panic!("{name}: {:?} against {:?}", a.err(), b.err()),
                }
            }
        }
        assert!(compared.0 >= 10 && compared.1 >= 50, "{compared:?}");
    }

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

    /// The proxy's workers reuse their tokenizers: one that last served
    /// another route (or none) counts a request's images, in its budget and
    /// in its meter, by the rule of the request's provider.
    #[test]
    fn images_count_by_the_request_s_provider_whatever_the_tokenizer_served_before() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let url = format!("data:image/png;base64,{png}");
        let words = (0..300).map(|i| format!("w{i} ")).collect::<String>();
        let bodies = [
            (
                Format::OpenAi,
                serde_json::json!({"model": "gpt-4.1", "messages": [
                {"role": "user", "content": [{"type": "text", "text": words}, {"type": "image_url", "image_url": {"url": url}}]},
                {"role": "assistant", "content": words}, {"role": "user", "content": "last"}]}),
            ),
            (
                Format::Anthropic,
                serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": [
                {"role": "user", "content": [{"type": "text", "text": words},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]},
                {"role": "assistant", "content": words}, {"role": "user", "content": "last"}]}),
            ),
            (
                Format::Responses,
                serde_json::json!({"model": "gpt-5", "input": [
                {"role": "user", "content": [{"type": "input_text", "text": words}, {"type": "input_image", "image_url": url}]},
                {"role": "assistant", "content": words}, {"role": "user", "content": "last"}]}),
            ),
            (
                Format::Gemini,
                serde_json::json!({"contents": [
                {"role": "user", "parts": [{"text": words}, {"inlineData": {"mimeType": "image/png", "data": png}}]},
                {"role": "model", "parts": [{"text": words}]}, {"role": "user", "parts": [{"text": "last"}]}]}),
            ),
        ];
        for (format, body) in &bodies {
            let body = body.to_string();
            let seen: Vec<_> = [
                None,
                Some(Format::OpenAi),
                Some(Format::Anthropic),
                Some(Format::Gemini),
            ]
            .into_iter()
            .map(|before| {
                let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
                if let Some(f) = before {
                    tok.set_format(f);
                }
                let (engine, holds) = (trim(400), Holds::new(Some(400), None, 4));
                let (out, metered) = clean_and_meter(
                    (&engine, Some(&holds)),
                    *format,
                    body.as_bytes(),
                    &tok,
                    false,
                    (&cache::AsCame::new(16), 0.0),
                )
                .unwrap();
                let tokens: Vec<_> = out
                    .reports
                    .iter()
                    .map(|r| (r.before.tokens, r.after.tokens))
                    .collect();
                (out.body, tokens, metered)
            })
            .collect();
            assert!(
                seen.iter().all(|s| *s == seen[0]),
                "{format:?}: {:?}",
                seen.iter().map(|s| (&s.1, &s.2)).collect::<Vec<_>>()
            );
        }
    }

    /// What the meter takes for a body sent, from the outcome, is what
    /// walking that body gives, in every request format, tools included.
    #[test]
    fn the_tokens_sent_are_the_sent_body_s_units() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let words = |n: usize| (0..n).map(|i| format!("w{i} ")).collect::<String>();
        let bodies = [
            (
                Format::OpenAi,
                serde_json::json!({"model": "gpt-4.1", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": words(200)},
                    {"role": "assistant", "content": words(200)}, {"role": "user", "content": "last"}]}),
            ),
            (
                Format::Anthropic,
                serde_json::json!({"model": "claude-sonnet-4-5", "system": "s", "max_tokens": 9,
                "tools": [{"name": "read", "input_schema": {"type": "object"}}],
                "messages": [{"role": "user", "content": words(200)}, {"role": "assistant", "content": words(200)},
                    {"role": "user", "content": [{"type": "text", "text": "last"}]}]}),
            ),
            (
                Format::Responses,
                serde_json::json!({"model": "gpt-5", "instructions": "i", "input": [{"role": "user", "content": words(200)},
                    {"role": "assistant", "content": words(200)}, {"role": "user", "content": "last"}]}),
            ),
            (
                Format::Gemini,
                serde_json::json!({"systemInstruction": {"parts": [{"text": "s"}]}, "contents": [
                    {"role": "user", "parts": [{"text": words(200)}]}, {"role": "model", "parts": [{"text": words(200)}]},
                    {"role": "user", "parts": [{"text": "last"}]}]}),
            ),
        ];
        for (format, body) in bodies {
            let body = body.to_string();
            let out =
                clean_request(&trim(300), format, body.as_bytes(), &tok, false, None).unwrap();
            let sent = out.body.as_deref().expect("over budget: trimmed");
            let meter = cache::AsCame::new(100);
            assert_eq!(
                out.tokens_sent(),
                meter.tokens(format, sent, &tok),
                "{format:?}"
            );
            // The proxy's call, with holds (its meter takes the units of
            // the messages as listed): the same body, billed as the text
            // walked would be, on a first request and on one held.
            let holds = Holds::new(Some(300), None, 16);
            let (by_text, by_list) = (cache::AsCame::new(100), cache::AsCame::new(100));
            for now in [0.0, 1.0] {
                let engine = trim(300);
                let (o, metered) = clean_and_meter(
                    (&engine, Some(&holds)),
                    format,
                    body.as_bytes(),
                    &tok,
                    false,
                    (&by_list, now),
                )
                .unwrap();
                assert_eq!(o.body.as_deref(), Some(sent), "{format:?}");
                let walked = o.meter(&by_text, format, body.as_bytes(), &tok, now);
                assert!(metered.is_some(), "{format:?}");
                assert_eq!(metered, walked, "{format:?} at {now}");
            }
        }
    }

    /// What was found of a request (its problems, checked once) serves
    /// every recipe that cleans it: each goes on as it does alone, and the
    /// problems are those `validate_request` finds.
    #[test]
    fn what_was_found_of_a_request_serves_every_recipe() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let orphan = CHAT.replacen(
            r#"{"role":"user","content":"last"}"#,
            r#"{"role":"tool","tool_call_id":"nowhere","content":"r"},{"role":"user","content":"last"}"#,
            1,
        );
        assert_ne!(orphan, CHAT);
        for body in [CHAT.to_string(), orphan] {
            let doc = read_request(Format::OpenAi, body.as_bytes()).unwrap();
            let known = Came::new();
            let problems = known.problems(&doc, Format::OpenAi).to_vec();
            let provider = Provider::for_format(Format::OpenAi);
            assert_eq!(
                problems,
                vec![validate(&doc.conversations[0], Format::OpenAi, provider)]
            );
            for budget in [20, 300, 5] {
                let shared = clean_listed_request(
                    &trim(budget),
                    Format::OpenAi,
                    (Cow::Borrowed(&doc), None, &known),
                    &tok,
                    false,
                    None,
                )
                .unwrap();
                let alone = clean_request(
                    &trim(budget),
                    Format::OpenAi,
                    body.as_bytes(),
                    &tok,
                    false,
                    None,
                )
                .unwrap();
                assert_eq!(shared.body, alone.body, "{budget}");
                assert_eq!(shared.kept_because, alone.kept_because, "{budget}");
            }
        }
    }

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
        // Nothing sent instead: the meter counts the body as it came.
        assert_eq!(out.tokens_sent(), None);
        let dry =
            clean_request(&trim(20), Format::OpenAi, CHAT.as_bytes(), &tok, true, None).unwrap();
        assert!(dry.body.is_none());
        assert_eq!(dry.tokens_sent(), None);
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
        let holds = Holds::new(Some(300), Some(0), 16);
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
            let conv = crate::format::read_document(
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
