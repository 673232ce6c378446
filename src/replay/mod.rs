//! `ctxclean replay`: recipes run over recorded sessions, call by call, as
//! `ctxclean serve` would have run them.
//!
//! A session's log shows each model call: the point where the model
//! answered. At each, the request the agent sent is the conversation up to
//! it, in its provider's request format; what the model did next is the
//! answer key (see [`evidence`]). Each recipe ([`Contender`]) cleans those
//! requests in order through the proxy's own in-flight call
//! ([`crate::inflight::clean_request`]), its holds carried from call to
//! call, and every call is priced with the provider's prompt cache: the
//! prefix shared with the previous call's body is read from the cache, the
//! rest written to it, the output as logged.

pub mod chart;
pub mod evidence;
mod markers;
mod oracle;
mod price;
mod report;

use std::ffi::OsString;
use std::sync::Arc;

use serde_json::Value;

pub use price::Prices;
pub use report::{first_losses, recall, summarize, Summary, Totals};

use crate::format::{read_document, Document, Format, ReadOptions, Recall};
use crate::inflight::answer::Billed;
use crate::inflight::cache::{Cache, Rule, Sizes, Units};
use crate::inflight::values::ValueMemo;
use crate::inflight::{Holds, Listed};
use crate::ops::Accounting;
use crate::recipe::{Prepared, Recipe};
use crate::tokens::Tokenizer;
use crate::transcript::{Conversation, Role};
use crate::validate::{validate_request, Provider};

/// A recipe replayed: its name, and how it cleans a request.
pub struct Contender {
    /// Its name in tables (`none`, a baseline's, a recipe file's stem).
    pub name: String,
    /// The chain it runs, as `serve` takes it after `--` (empty: none).
    pub chain: String,
    prepared: Option<Prepared>,
    /// Whether a conversation seen before is held, as the proxy holds it.
    hold: bool,
    horizon: Option<usize>,
    /// Not cleaned here: the bodies another proxy forwarded, one file per
    /// call in this folder, named as [`request_file_name`] names them.
    forwarded: Option<std::path::PathBuf>,
    /// The offline optimum, which knows the future (see [`oracle`]): the
    /// share of the evidence it keeps (1: all).
    oracle: Option<f64>,
}

impl Contender {
    /// Requests as they came: what every recipe is measured against.
    pub fn none() -> Contender {
        Contender {
            name: "none".into(),
            chain: String::new(),
            prepared: None,
            hold: false,
            horizon: Some(0),
            forwarded: None,
            oracle: None,
        }
    }

    /// The offline optimum (`--oracle`): results none of whose strings the
    /// model uses again, evicted when that pays over the calls to come; it
    /// knows both, which no proxy can (see [`oracle`]).
    ///
    /// `recall` under 1 (`--oracle-recall`): it may also lose up to
    /// `1 - recall` of each session's evidence, where that saves the most
    /// (see [`oracle::Future::plan`]); a row `oracle 99%`.
    pub fn oracle(recall: f64) -> Contender {
        let (name, chain) = if recall >= 1.0 {
            (
                "oracle".to_string(),
                "(knows the future: evicts dead results and arguments when that pays)".to_string(),
            )
        } else {
            let share = format!("{}%", (recall * 10000.0).round() / 100.0);
            (
                format!("oracle {share}"),
                format!("(knows the future: evicts dead results and arguments when that pays, and loses up to {} of the evidence where that saves the most)",
                    format_args!("{}%", ((1.0 - recall) * 10000.0).round() / 100.0)),
            )
        };
        Contender {
            name,
            chain,
            oracle: Some(recall),
            ..Contender::none()
        }
    }

    /// What another proxy (or `ctxclean serve` itself) forwarded for each
    /// call: the bodies in `dir`, one per call, named as
    /// [`request_file_name`] names them; accounted by the same rules.
    pub fn forwarded(name: &str, dir: &std::path::Path) -> Contender {
        Contender {
            name: name.to_string(),
            chain: format!("(forwarded: {})", dir.display()),
            forwarded: Some(dir.to_path_buf()),
            ..Contender::none()
        }
    }

    /// Whether this is the oracle, not a recipe.
    pub fn is_oracle(&self) -> bool {
        self.oracle.is_some()
    }

    /// Whether these are another proxy's bodies, not a recipe.
    pub fn is_forwarded(&self) -> bool {
        self.forwarded.is_some()
    }

    /// A recipe given as the words of its steps, run as `serve` runs it
    /// (`hold`: conversations held for the cache, with `horizon` as
    /// `--cache-horizon`); one that converts is refused, as in `serve`.
    pub fn new(
        name: &str,
        steps: &[Vec<OsString>],
        tokenizer: Option<&str>,
        hold: bool,
        horizon: Option<usize>,
    ) -> anyhow::Result<Contender> {
        let recipe = Recipe::from_steps_in_flight(steps, None, tokenizer)?;
        Contender::of_recipe(name, steps, recipe, hold, horizon)
    }

    fn of_recipe(
        name: &str,
        steps: &[Vec<OsString>],
        recipe: Recipe,
        hold: bool,
        horizon: Option<usize>,
    ) -> anyhow::Result<Contender> {
        Ok(Contender {
            name: name.to_string(),
            chain: chain_text(steps),
            prepared: Some(recipe.prepare(Accounting::Full)?),
            hold,
            horizon,
            forwarded: None,
            oracle: None,
        })
    }

    /// A baseline: its method applied to every call on its own, nothing
    /// held, and `trim` cutting to its budget rather than in `serve`'s
    /// steps (what Anthropic's context editing, LangChain's `trim_messages`
    /// and observation masking do on each request).
    pub fn every_call(
        name: &str,
        steps: &[Vec<OsString>],
        tokenizer: Option<&str>,
    ) -> anyhow::Result<Contender> {
        let recipe = Recipe::from_steps_in_flight_unstepped(steps, None, tokenizer)?;
        Contender::of_recipe(name, steps, recipe, false, Some(0))
    }

    fn holds(&self, values: &Arc<ValueMemo>) -> Option<Holds> {
        let p = self.prepared.as_ref()?;
        self.hold.then(|| {
            Holds::new(p.budget(), self.horizon, 16)
                .billed(p.budget_billed())
                .with_value_memo(Arc::clone(values))
        })
    }
}

/// Steps as the chain `serve` takes after `--` (`a --x then b`).
pub fn chain_text(steps: &[Vec<OsString>]) -> String {
    steps
        .iter()
        .map(|s| {
            s.iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" then ")
}

/// One model call of a session, replayed under one recipe.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Call {
    /// Its place among the session's calls (0-based).
    pub call: usize,
    /// The index of the message the model answered with, in the session.
    pub message: usize,
    /// Tokens of the request as the agent sent it.
    pub tokens_in: usize,
    /// Tokens of the request as the recipe sent it.
    pub tokens_sent: usize,
    /// Every input token the provider bills (the tool definitions
    /// included), as [`crate::inflight::cache`] counts them.
    pub billed_in: usize,
    /// Of those, the tokens read from the provider's cache, by its rule
    /// ([`crate::inflight::cache`]).
    pub cache_read: usize,
    /// And the tokens written to it (Anthropic).
    pub cache_write: usize,
    /// Output tokens, as logged (else counted).
    pub output: usize,
    /// What the call costs at the model's prices with caching; `None`
    /// without prices.
    pub dollars: Option<f64>,
    /// Whether the provider would take the body sent.
    pub valid: bool,
    /// Whether the body came valid and went invalid: what the recipe (or
    /// the proxy forwarded) broke, the only invalid body held against it.
    pub made_invalid: bool,
    /// Whether the body was held (the previous one, extended).
    pub held: bool,
    /// The evidence of the call (see [`evidence`]).
    pub evidence: usize,
    /// How much of it the body sent still holds.
    pub kept: usize,
    /// Past the model's context window.
    pub over_window: bool,
    /// The evidence strings lost, the first few.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// What removed the first string lost: the step and the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_by: Option<String>,
}

/// A session replayed under one recipe.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Session {
    /// The input.
    pub source: String,
    /// The conversation's index in it.
    pub index: usize,
    /// The model the session talked to, when the log says.
    pub model: Option<String>,
    /// Its calls, in order (let go of, over a long run, but for the
    /// longest session's: see [`Session::let_go_of_calls`]).
    pub calls: Vec<Call>,
    /// Its calls added up.
    #[serde(skip)]
    pub totals: Totals,
    /// What the replay had to leave out or assume.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Session {
    /// Keeps the session's totals and lets its calls go (what a run over a
    /// folder keeps of each session, so that its memory stays flat).
    pub fn let_go_of_calls(&mut self) {
        self.calls = Vec::new();
    }
}

/// Why a conversation cannot be replayed.
#[derive(Debug)]
pub enum ReplayError {
    /// The log shows no model call (the conversation's index).
    NoCall(usize),
    /// No call's request could be rebuilt from the log (the
    /// conversation's index, and its calls).
    Unreadable(usize, usize),
    /// The engine failed on a request.
    Clean {
        /// The conversation.
        index: usize,
        /// The call.
        call: usize,
        /// What the engine said.
        error: String,
    },
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::NoCall(i) => write!(
                f,
                "conversation {i}: no assistant turn, so no model call to replay"
            ),
            ReplayError::Unreadable(i, n) => write!(
                f,
                "conversation {i}: none of its {n} model call(s) could be rebuilt as a request"
            ),
            ReplayError::Clean { index, call, error } => {
                write!(f, "conversation {index}, call {call}: {error}")
            }
        }
    }
}

impl std::error::Error for ReplayError {}

/// The parts of conversation `index` before its compactions, each read as
/// a session of its own. A Claude Code or Codex log is read from its last
/// compaction (what the next call carries), but the calls before each
/// compaction were real calls, with the context of their own part: part k
/// runs from compaction k (the summary its calls carried; the log's start
/// for the first) up to the next compaction. Each is read from the log's
/// own lines, named `SOURCE (before compaction K of N)`, with the file's
/// line numbers. Parts that cannot be read or are empty are left out.
pub fn before_compactions(doc: &Document, index: usize) -> Vec<Document> {
    let conv = &doc.conversations[index];
    let bounds = crate::format::compactions(doc.source_format, conv);
    let mut parts = Vec::new();
    let mut start = 0;
    for (k, &end) in bounds.iter().enumerate() {
        let lines = &conv.records[start..end];
        let first_line = lines.first().map_or(1, |r| r.line);
        start = end;
        let mut text = String::new();
        for t in lines.iter().filter_map(|r| r.text.as_deref()) {
            text.push_str(t);
            text.push('\n');
        }
        if text.trim().is_empty() {
            continue;
        }
        let name = format!(
            "{} (before compaction {} of {})",
            doc.source,
            k + 1,
            bounds.len()
        );
        let opts = ReadOptions {
            from: Some(doc.source_format),
            skip_invalid: true,
            chunk: Some(crate::format::ChunkStart {
                line: first_line - 1,
                conversation: 0,
            }),
            recall: None,
        };
        if let Ok(part) = read_document(&name, text.into_bytes(), &opts) {
            parts.push(part);
        }
    }
    parts
}

/// Conversation `index` of `doc` replayed whole under each contender: the
/// parts before its compactions first, in the log's order (see
/// [`before_compactions`]), then what its next call carries; a session per
/// part, or the error that part could not be replayed with, its source
/// named. A part with no model call has none to replay, and so has the
/// conversation itself when its last compaction ends the log. `requests`
/// is given each part (and the conversation) before it is replayed, to
/// write its requests.
pub fn replay_whole(
    doc: &Document,
    index: usize,
    contenders: &[Contender],
    tok: &Tokenizer,
    prices: Option<&Prices>,
    catalog: &crate::models::Catalog,
    requests: &mut dyn FnMut(&Document, usize) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Result<Vec<Session>, String>>> {
    let mut found = Vec::new();
    for part in before_compactions(doc, index) {
        for j in 0..part.conversations.len() {
            requests(&part, j)?;
            match replay(&part, j, contenders, tok, prices, catalog) {
                Err(ReplayError::NoCall(_)) => {}
                r => found.push(r.map_err(|e| format!("{}: {e}", part.source))),
            }
        }
    }
    requests(doc, index)?;
    match replay(doc, index, contenders, tok, prices, catalog) {
        Err(ReplayError::NoCall(_)) if !found.is_empty() => {}
        r => found.push(r.map_err(|e| format!("{}: {e}", doc.source))),
    }
    Ok(found)
}

/// The format a session's requests were sent in.
pub fn request_format(source: Format) -> Format {
    match Provider::for_format(source) {
        Provider::OpenAi => Format::OpenAi,
        Provider::Anthropic => Format::Anthropic,
        Provider::Gemini => Format::Gemini,
        Provider::Responses => Format::Responses,
    }
}

/// The model calls of a conversation: the first message of each run of
/// assistant messages that follows something else (the model answered
/// there), and the end of that run (what it answered).
pub fn calls(conv: &Conversation) -> Vec<(usize, usize)> {
    let msgs = &conv.messages;
    let mut out = Vec::new();
    let mut j = 0;
    while j < msgs.len() {
        if msgs[j].role == Role::Assistant
            && j > 0
            && msgs[..j].iter().any(|m| m.role == Role::User)
        {
            let mut k = j;
            while k < msgs.len() && msgs[k].role == Role::Assistant {
                k += 1;
            }
            out.push((j, k));
            j = k;
        } else {
            j += 1;
        }
    }
    out
}

/// The request the agent sent before message `upto`: the conversation up
/// to it, in `format`; `None` when it holds nothing a request can carry.
#[cfg(test)]
fn request_body(
    doc: &Document,
    conv: &Conversation,
    upto: usize,
    format: Format,
) -> Option<Vec<u8>> {
    request_body_of(doc, conv, upto, format, session_model(conv).as_deref())
}

/// [`request_body`], the model the log's answers name (`session_model`,
/// looked up once per conversation, not once per call) given.
fn request_body_of(
    doc: &Document,
    conv: &Conversation,
    upto: usize,
    format: Format,
    model: Option<&str>,
) -> Option<Vec<u8>> {
    // A capture's or a batch line's envelope (headers, ids, the time) is no
    // part of the request: only the body it wraps is.
    let prefix = Conversation {
        messages: conv.messages[..upto].to_vec(),
        envelope: conv
            .envelope
            .as_ref()
            .map(|e| crate::format::wrapped_body(e).clone()),
        records: Vec::new(),
        line: conv.line,
        text: None,
        notes: Vec::new(),
    };
    let mut shell = Document::of_one(doc.source.clone(), format, doc.source_format, prefix);
    let (out, losses) = crate::format::write::request_text_and_losses(&shell, 0);
    // Parts the request format has no block for (a ChatGPT export's custom
    // instructions, a Bedrock result's JSON) were sent as what they say:
    // their text, as `stats` counts it. Reasoning of turns past stays out,
    // as providers drop it.
    let dropped: std::collections::HashSet<usize> = losses
        .iter()
        .filter(|l| l.what.ends_with(" part"))
        .filter_map(|l| l.index)
        .collect();
    let out = if dropped.is_empty() {
        out?
    } else {
        for m in shell.conversations[0].messages.iter_mut() {
            if m.input_index().is_some_and(|i| dropped.contains(&i)) {
                parts_as_text(m);
            }
        }
        crate::format::write::request_text(&shell, 0)?
    };
    let out = markers::placed(doc.source_format, format, out);
    // A log that keeps the model on its answers (Claude Code's
    // `message.model`) sent it in every request.
    match model {
        Some(model) if out.first() == Some(&b'{') && !names_model(&out) => {
            let mut with = format!("{{\"model\":{},", Value::from(model)).into_bytes();
            with.extend_from_slice(&out[1..]);
            Some(with)
        }
        _ => Some(out),
    }
}

/// A message's parts that are neither text, image nor reasoning, as text
/// parts of the text they hold (`stats`' count of them); a part without
/// text stays as it is.
fn parts_as_text(m: &mut crate::transcript::Message) {
    use crate::transcript::{Content, Part, PartKind};
    let Content::Parts(parts) = &mut m.content else {
        return;
    };
    for p in parts.iter_mut() {
        if !matches!(p.kind, PartKind::Other) || p.is_thinking() {
            continue;
        }
        let alone = Content::Parts(vec![p.clone()]);
        let mut text: Vec<&str> = Vec::new();
        crate::tokens::for_each_text(&alone, |t| text.push(t));
        if !text.is_empty() {
            *p = Part::text_part(text.join("\n"));
        }
    }
}

/// The model a log's answers name (`model` on an assistant message).
fn session_model(conv: &Conversation) -> Option<String> {
    conv.messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| {
            m.fields
                .peek(|f| f.get("model").and_then(Value::as_str).map(str::to_string))
        })
}

/// Whether a request body has a `model`.
fn names_model(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Named {
        model: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Named>(body).is_ok_and(|n| n.model.is_some())
}

/// The file the request of call `call` (0-based) of conversation `index`
/// of `source` goes in (`replay --write-requests`), and where a forwarded
/// body for it is looked for (`replay --forwarded`):
/// `STEM-HASH-INDEX-call-NNNN.json`, HASH the first 8 hex digits of the
/// SHA-256 of `source`.
pub fn request_file_name(source: &str, index: usize, call: usize) -> String {
    use sha2::Digest;
    let stem = std::path::Path::new(source)
        .file_stem()
        .map_or("stdin".into(), |s| s.to_string_lossy().into_owned());
    // Agents name every session alike (Kimi Code's `wire.jsonl`): the path
    // tells them apart.
    let hash = sha2::Sha256::digest(source.as_bytes());
    let hash: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{stem}-{hash}-{index}-call-{call:04}.json")
}

/// The request the agent sent at each model call of conversation `index`,
/// as it came (what `replay --write-requests` writes, to send them through
/// `ctxclean serve` and compare).
/// Each with its call's place among the session's calls.
pub fn requests(doc: &Document, index: usize) -> Vec<(usize, Vec<u8>)> {
    let conv = &doc.conversations[index];
    let format = request_format(doc.source_format);
    let model = session_model(conv);
    calls(conv)
        .into_iter()
        .enumerate()
        .filter_map(|(n, (j, _))| {
            Some((n, request_body_of(doc, conv, j, format, model.as_deref())?))
        })
        .collect()
}

fn read_request(format: Format, body: &[u8]) -> Option<Conversation> {
    crate::inflight::read_request(format, body)
        .ok()?
        .conversations
        .into_iter()
        .next()
}

/// One call as it came: its body, read, and its evidence.
struct AsCame {
    body: Vec<u8>,
    /// The body read as the proxy reads it, once for every recipe (its
    /// one conversation: [`AsCame::conv`]).
    read: Document,
    tokens: usize,
    /// Whether the provider would take it.
    valid: bool,
    /// What was found of it (its problems), for every recipe that cleans it.
    known: crate::inflight::Came,
    /// The evidence, and each string as it may be written in a JSON body
    /// (see [`evidence::written_forms`]).
    evidence: Vec<(String, Vec<String>)>,
    /// The body as a JSON value, read once for every forwarded contender
    /// that compares with it.
    value: std::cell::OnceCell<Option<Value>>,
    /// Its list of messages as the holds take it, listed once for every
    /// recipe that holds.
    listed: std::cell::OnceCell<Option<crate::inflight::Listed>>,
    /// Its prompt-cache units, walked once for every contender that sends
    /// it as it came.
    units: std::cell::OnceCell<Option<Units>>,
    output: usize,
}

impl AsCame {
    /// The request's conversation, read.
    fn conv(&self) -> &Conversation {
        &self.read.conversations[0]
    }

    /// The model the request names.
    fn model(&self) -> Option<&str> {
        self.conv()
            .envelope
            .as_ref()
            .and_then(|e| e.get("model"))
            .and_then(Value::as_str)
    }
}

/// Prefixes a contender's cache holds at most (a session's distinct
/// prefixes; past it the cache starts again).
const CACHE_CAPACITY: usize = 1 << 20;
/// Units' sizes remembered at most, across a session's contenders.
const SIZES_CAPACITY: usize = 1 << 20;
/// Bytes of units' texts whose identities are remembered at most, across
/// a session's contenders (see `Sizes::with_texts`).
const TEXTS_BYTES: usize = 64 << 20;
/// Bytes of messages' values the recipes' holds remember at most, across a
/// session's contenders (see `Holds::with_value_memo`).
const VALUES_BYTES: usize = 64 << 20;
/// Bytes of records read (and what was read from them) remembered at most,
/// across a session's calls and contenders.
const RECALL_BYTES: usize = 256 << 20;

fn as_came(
    (doc, conv, model): (&Document, &Conversation, Option<&str>),
    (j, k): (usize, usize),
    (format, recall): (Format, &Arc<Recall>),
    tok: &Tokenizer,
) -> Option<AsCame> {
    let body = request_body_of(doc, conv, j, format, model)?;
    let document = crate::inflight::read_request_recalling(format, &body, recall).ok()?;
    let read = document.conversations.first()?;
    let context = evidence::conversation_text(read);
    let latest_user = conv.messages[..j]
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !m.role.is_result())
        .map(|m| {
            let mut s = String::new();
            evidence::message_text(m, &mut s);
            s
        })
        .unwrap_or_default();
    let mut said = String::new();
    for m in &conv.messages[j..k] {
        evidence::message_text(m, &mut said);
    }
    let output =
        price::logged_output(&conv.messages[j..k]).unwrap_or_else(|| tok.count_text(&said));
    let fixed = evidence::fixed_text(read, &latest_user);
    let evidence = evidence::of_call(&said, &context, &fixed)
        .into_iter()
        .map(|s| {
            let forms = evidence::written_forms(&s);
            (s, forms)
        })
        .collect();
    let known = crate::inflight::Came::new();
    let valid = known
        .problems(&document, format)
        .first()
        .is_some_and(Vec::is_empty);
    Some(AsCame {
        tokens: tok.count_conversation(read),
        valid,
        known,
        evidence,
        body,
        read: document,
        output,
        value: std::cell::OnceCell::new(),
        listed: std::cell::OnceCell::new(),
        units: std::cell::OnceCell::new(),
    })
}

/// What one contender carries from call to call of a session.
struct Run<'a> {
    contender: &'a Contender,
    holds: Option<Holds>,
    /// The provider's cache, as this contender's requests left it.
    cache: Cache,
    /// For the oracle: what it evicted so far.
    oracle: Option<oracle::Oracle>,
    session: Session,
}

/// Replays conversation `index` of `doc` under each contender, in one
/// pass: each call's request is built, read and its evidence found once,
/// then cleaned by each. `prices`: the model's, else the session's own
/// model is looked up in `catalog`.
pub fn replay(
    doc: &Document,
    index: usize,
    contenders: &[Contender],
    tok: &Tokenizer,
    prices: Option<&Prices>,
    catalog: &crate::models::Catalog,
) -> Result<Vec<Session>, ReplayError> {
    let conv = &doc.conversations[index];
    let points = calls(conv);
    if points.is_empty() {
        return Err(ReplayError::NoCall(doc.first_conversation + index));
    }
    let format = request_format(doc.source_format);
    // Images are charged by the provider of the format sent, as the
    // proxy's engine charges them.
    tok.set_format(format);
    let budgeted = contenders.iter().any(|c| c.oracle.is_some_and(|r| r < 1.0));
    // Each call's request, and each body read back, is mostly the records
    // of the call before: read once.
    let recall = Arc::new(Recall::new(RECALL_BYTES));
    // Every recipe's holds parse the same messages: once for all.
    let values = Arc::new(ValueMemo::new(VALUES_BYTES));
    let future = contenders
        .iter()
        .any(|c| c.oracle.is_some())
        .then(|| future_of(doc, conv, &points, (format, budgeted, &recall), tok));
    let mut runs: Vec<Run> = contenders
        .iter()
        .map(|c| Run {
            contender: c,
            holds: c.holds(&values),
            cache: Cache::new(CACHE_CAPACITY),
            oracle: c.oracle.map(|recall| {
                let mut future = future.clone().unwrap_or_default();
                future.plan(recall);
                oracle::Oracle::new(future)
            }),
            session: Session {
                source: doc.source.clone(),
                index: doc.first_conversation + index,
                model: None,
                calls: Vec::new(),
                totals: Totals::default(),
                notes: Vec::new(),
            },
        })
        .collect();
    let sizes = Sizes::new(SIZES_CAPACITY).with_texts(TEXTS_BYTES);
    let mut found: Option<Option<Prices>> = prices.map(|p| Some(p.clone()));
    let mut left_out = Vec::new();
    let model = session_model(conv);
    for (n, &point) in points.iter().enumerate() {
        let Some(came) = as_came((doc, conv, model.as_deref()), point, (format, &recall), tok)
        else {
            left_out.push(n);
            continue;
        };
        let prices = found.get_or_insert_with(|| Prices::of_body(&came.body, catalog));
        let at = Where {
            source: &doc.source,
            index: doc.first_conversation + index,
            call: n,
        };
        for run in &mut runs {
            let memos = (&sizes, &*values);
            let call = replay_call(run, &came, format, tok, prices.as_ref(), memos, &at).map_err(
                |error| ReplayError::Clean {
                    index: at.index,
                    call: n,
                    error,
                },
            )?;
            run.session.calls.push(Call {
                call: n,
                message: point.0,
                ..call
            });
        }
    }
    if left_out.len() == points.len() {
        return Err(ReplayError::Unreadable(
            doc.first_conversation + index,
            points.len(),
        ));
    }
    let model = found.flatten().map(|p| p.model.clone());
    Ok(runs
        .into_iter()
        .map(|mut r| {
            if !left_out.is_empty() {
                r.session.notes.push(format!(
                    "{} of {} model call(s) left out: their request could not be rebuilt (calls {})",
                    left_out.len(),
                    points.len(),
                    list_of(&left_out)
                ));
            }
            if model.is_none() {
                r.session.notes.push(
                    "no prices for the session's model: dollars left out (--model names one)"
                        .into(),
                );
            }
            r.session.model = model.clone();
            r.session.totals = Totals::of(&r.session.calls);
            r.session
        })
        .collect())
}

/// What the oracle knows of a session: each call's evidence, and the list
/// of the last request as it came (an extra pass over the calls); with
/// `budgeted`, for an oracle that may lose evidence, also each request's
/// length and each item's tokens.
fn future_of(
    doc: &Document,
    conv: &Conversation,
    points: &[(usize, usize)],
    (format, budgeted, recall): (Format, bool, &Arc<Recall>),
    tok: &Tokenizer,
) -> oracle::Future {
    let mut evidence = Vec::with_capacity(points.len());
    let mut items_at = Vec::with_capacity(points.len());
    let mut last = None;
    let model = session_model(conv);
    let list = format.list_key();
    for &point in points {
        let came = as_came((doc, conv, model.as_deref()), point, (format, recall), tok);
        evidence.push(came.as_ref().map_or_else(Vec::new, |c| {
            c.evidence.iter().map(|(_, forms)| forms.clone()).collect()
        }));
        if budgeted {
            let n = came.as_ref().map_or(0, |c| items_in(&c.body, list));
            items_at.push(n.max(items_at.last().copied().unwrap_or(0)));
        }
        if let Some(c) = came {
            last = Some(c.body);
        }
    }
    let items = last
        .and_then(|b| serde_json::from_slice::<serde_json::Map<String, Value>>(&b).ok())
        .and_then(|mut m| match m.remove(format.list_key()) {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        })
        .unwrap_or_default();
    let future = oracle::Future::of(format, &items, &evidence);
    if budgeted {
        future.weighed(format, &items, items_at, tok)
    } else {
        future
    }
}

/// How many items a request body's `list` has (0 when it is not read).
fn items_in(body: &[u8], list: &str) -> usize {
    serde_json::from_slice::<serde_json::Map<String, Value>>(body)
        .ok()
        .and_then(|m| m.get(list).and_then(Value::as_array).map(Vec::len))
        .unwrap_or(0)
}

/// `0, 3, 4`: the first ten, then `…`.
fn list_of(calls: &[usize]) -> String {
    let mut shown: Vec<String> = calls.iter().take(10).map(usize::to_string).collect();
    if calls.len() > 10 {
        shown.push("…".into());
    }
    shown.join(", ")
}

/// Which call is replayed: for a forwarded body's file name.
struct Where<'a> {
    source: &'a str,
    index: usize,
    call: usize,
}

/// The body another proxy forwarded for a call, as serde_json writes it
/// (so that evidence is looked for as in every other body), its
/// `cache_control` markers kept (they say what the provider caches); the
/// body as it came when it is the same JSON; and its tokens.
fn forwarded_body(
    dir: &std::path::Path,
    at: &Where,
    came: &AsCame,
    format: Format,
    tok: &Tokenizer,
) -> Result<(Vec<u8>, usize), String> {
    let path = dir.join(request_file_name(at.source, at.index, at.call));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a JSON body: {e}", path.display()))?;
    let came_value = came
        .value
        .get_or_init(|| serde_json::from_slice(&came.body).ok());
    if came_value.as_ref() == Some(&value) {
        return Ok((came.body.clone(), came.tokens));
    }
    let body = serde_json::to_vec(&value).expect("writing to memory");
    let conv = read_request(format, &body)
        .ok_or_else(|| format!("{}: not a {} request", path.display(), format.name()))?;
    Ok((body, tok.count_conversation(&conv)))
}

/// One call under one contender.
fn replay_call(
    run: &mut Run,
    came: &AsCame,
    format: Format,
    tok: &Tokenizer,
    prices: Option<&Prices>,
    (sizes, values): (&Sizes, &ValueMemo),
    at: &Where,
) -> Result<Call, String> {
    let oracle_body = run
        .oracle
        .as_mut()
        .and_then(|o| o.body(at.call, (format, &came.body), tok, sizes, prices));
    let (sent, tokens_sent, held, changes) =
        match (&run.contender.prepared, &run.contender.forwarded) {
            _ if oracle_body.is_some() => {
                let body = oracle_body.expect("just checked");
                let tokens =
                    read_request(format, &body).map_or(came.tokens, |c| tok.count_conversation(&c));
                (Some(body), tokens, false, Vec::new())
            }
            (_, Some(dir)) => {
                let (body, tokens) = forwarded_body(dir, at, came, format, tok)?;
                (Some(body), tokens, false, Vec::new())
            }
            (None, None) => (None, came.tokens, false, Vec::new()),
            (Some(p), None) => {
                let listed = run.holds.as_ref().and_then(|_| {
                    came.listed
                        .get_or_init(|| Listed::of_with(format, &came.body, Some(values)))
                        .as_ref()
                });
                // Borrowed: the holds copy it only to clean again, and
                // a recipe without holds only to clean.
                let read = (std::borrow::Cow::Borrowed(&came.read), listed, &came.known);
                let out = p
                    .clean_listed_request(format, read, run.holds.as_ref())
                    .map_err(|e| e.to_string())?;
                let tokens = out.reports.first().map_or(came.tokens, |r| r.after.tokens);
                let held = out.cache.as_deref().is_some_and(|c| c.starts_with("held"));
                let changes = out.reports.into_iter().flat_map(|r| r.changes).collect();
                (out.body, tokens, held, changes)
            }
        };
    let body = sent.as_deref().unwrap_or(&came.body);
    // Every call within the cache's lifetime: the log's pauses are not
    // replayed. Every body here is JSON: read whole as it came, and written
    // by `serde_json` or read back as it went.
    let walked;
    let units = if sent.is_none() {
        came.units
            .get_or_init(|| Units::of_valid(format, body, tok, sizes))
            .as_ref()
    } else {
        walked = Units::of_valid(format, body, tok, sizes);
        walked.as_ref()
    };
    let billed = units.map_or_else(Billed::default, |u| {
        run.cache.bill(Rule::of(format, came.model()), u, 0.0)
    });
    let text = std::str::from_utf8(body).unwrap_or_default();
    // ctxclean never forwards a body worse than it came: one that came
    // valid goes on valid. One that came invalid, or that another proxy
    // forwarded, is checked as sent.
    let forwarded = run.contender.forwarded.is_some();
    let valid = (came.valid && !forwarded)
        || sent
            .as_deref()
            .and_then(|b| read_request(format, b))
            .is_some_and(|c| validate_request(&c, format, Provider::for_format(format)).is_empty());
    // Looked for as written in the body, escaped as JSON.
    let lost: Vec<String> = came
        .evidence
        .iter()
        .filter(|(_, forms)| !evidence::holds(text, forms))
        .map(|(s, _)| s.clone())
        .collect();
    let lost_by = lost.first().map(|s| {
        if forwarded {
            format!("not in the body {} forwarded", run.contender.name)
        } else if run.oracle.is_some() {
            report::evicted_by_oracle(came.conv(), s)
        } else {
            report::removed_by(came.conv(), s, &changes, held)
        }
    });
    Ok(Call {
        tokens_in: came.tokens,
        tokens_sent,
        billed_in: billed.input_total() as usize,
        cache_read: billed.cache_read as usize,
        cache_write: billed.cache_write as usize,
        output: came.output,
        dollars: prices.map(|p| {
            p.billed(&Billed {
                output: came.output as u64,
                ..billed
            })
        }),
        valid,
        made_invalid: came.valid && !valid,
        held,
        evidence: came.evidence.len(),
        kept: came.evidence.len() - lost.len(),
        over_window: prices
            .and_then(|p| p.window)
            .is_some_and(|w| tokens_sent as u64 > w),
        lost: lost.into_iter().take(5).collect(),
        lost_by,
        ..Call::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    /// Every part the reader reads is in the body replay rebuilds (issue
    /// 56), but reasoning of turns past (providers drop it): on every
    /// fixture, each call's body counts at least 90% of its messages.
    #[test]
    fn every_part_read_is_in_the_bodies() {
        use crate::transcript::{Content, PartKind};
        // What these logs hold is no part of any request: the lines a UI
        // showed, the answers a preference dataset rejected, images named
        // by a path on another machine.
        let not_requests = [
            "cline/ui_messages.json",
            "hf-chat/minimind-dpo.jsonl",
            "llama-factory/v1_multimodal_demo.jsonl",
        ];
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut paths = Vec::new();
        fn walk(d: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out)
                } else {
                    out.push(p)
                }
            }
        }
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut paths,
        );
        let mut lost = Vec::new();
        let mut checked = 0;
        for p in paths {
            let name = p.display().to_string();
            if not_requests.iter().any(|n| name.ends_with(n)) {
                continue;
            }
            let Ok(doc) = read_document(&name, std::fs::read(&p).unwrap(), &ReadOptions::default())
            else {
                continue;
            };
            let format = request_format(doc.source_format);
            for conv in &doc.conversations {
                for (j, _) in calls(conv) {
                    let Some(body) = request_body(&doc, conv, j, format) else {
                        continue;
                    };
                    let Ok(read) = crate::inflight::read_request(format, &body) else {
                        continue;
                    };
                    let got = tok.count_conversation(&read.conversations[0]);
                    let want: usize = conv.messages[..j]
                        .iter()
                        .map(|m| {
                            let mut m = m.clone();
                            if let Content::Parts(parts) = &mut m.content {
                                parts.retain(|p| {
                                    !p.is_thinking() && !matches!(p.kind, PartKind::Image(_))
                                });
                            }
                            tok.count_message(&m)
                        })
                        .sum();
                    checked += 1;
                    if (got as f64) < 0.9 * want as f64 {
                        lost.push(format!(
                            "{name} call at message {j}: {got} of {want} tokens"
                        ));
                    }
                }
            }
        }
        assert!(checked > 500, "{checked} calls checked");
        assert!(lost.is_empty(), "{lost:#?}");
    }

    #[test]
    fn parts_a_request_has_no_block_for_are_sent_as_their_text() {
        let doc = read_document(
            "chatgpt",
            std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/fixtures/exports/chatgpt-modern.json"
            ))
            .unwrap(),
            &ReadOptions::default(),
        )
        .unwrap();
        let conv = &doc.conversations[0];
        let (j, _) = calls(conv)[0];
        let body = request_body(&doc, conv, j, Format::OpenAi).unwrap();
        let text = String::from_utf8(body).unwrap();
        // The custom instructions the app sent as the system prompt.
        assert!(
            text.contains("The user is an SRE.") && text.contains("Answer concisely."),
            "{text}"
        );
    }

    #[test]
    fn the_system_prompt_is_read_from_the_cache_when_only_the_messages_changed() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let sizes = Sizes::new(100);
        let system = "You are a careful agent. ".repeat(300);
        let body = |first: &str, system: &str| {
            serde_json::to_vec(&serde_json::json!({
                "model": "gpt-4o", "messages": [{"role": "system", "content": system},
                    {"role": "user", "content": first}, {"role": "assistant", "content": "ok"}],
            }))
            .unwrap()
        };
        let units = |b: Vec<u8>, sizes: &Sizes| Units::of(Format::OpenAi, &b, &tok, sizes).unwrap();
        let mut cache = Cache::new(100);
        let a = units(body("one", &system), &sizes);
        assert_eq!(cache.bill(Rule::Automatic, &a, 0.0).cache_read, 0);
        // Same system, first message changed: the system is served.
        let b = units(body("two", &system), &sizes);
        let read = cache.bill(Rule::Automatic, &b, 1.0).cache_read;
        assert!(read >= 1024 && read < b.total(), "{read} of {}", b.total());
        // Everything the same: all of it, to the last 128-token step.
        assert!(cache.bill(Rule::Automatic, &b, 2.0).cache_read > b.total() - 128);
        // The system changed: nothing.
        let c = units(body("one", "other"), &sizes);
        assert_eq!(cache.bill(Rule::Automatic, &c, 3.0).cache_read, 0);
    }
}
