//! `ctxclean summarize`: past a token threshold, replace old turns with a
//! summary, and never fail the pipeline.
//!
//! At or under the threshold a conversation passes through unchanged. Over
//! it, the output is `[first system] + [summary message] + [recent
//! messages]`:
//!
//! - the first system message is kept; later system messages before the
//!   recent window are dropped (retrieval injections, re-retrieved per query);
//! - the recent window is the last `keep` messages, widened so no tool unit
//!   (see [`super::trim::units`]) is split; when nothing older is left to
//!   summarize, `keep` is halved down to `min_keep`;
//! - the older messages are prepared as [`Entry`] lines (tool results as
//!   their `compact-tools` descriptions, images as placeholders) and given to
//!   the engine, through the cache when there is one;
//! - the summary message holds `[Previous conversation summary]`, the text,
//!   the tool section (`[Tool calls from earlier in conversation]`, one
//!   `- [Tool: …]` line per result) and `[End of summary - recent messages
//!   follow]`.
//!
//! When the engine fails, the summary line becomes `[Earlier conversation
//! truncated: N messages removed]`, the rest stays the same, and the report
//! flags `fallback` with the reason. The reason (a server's URL, its raw
//! error text) is the user's to read, on standard error and in the report:
//! never the model's, in the conversation it is sent next.

use serde_json::{Map, Value};

use super::compact_tools::describe;
use super::trim::units;
use super::Outcome;
use crate::changes::{Action, Change};
use crate::pairs::Pairing;
use crate::summary::cache::Cache;
use crate::summary::{Engine, Entry, Request};
use crate::tokens::Tokenizer;
use crate::transcript::{Conversation, Message, Role};

/// The summary message's first line.
pub const SUMMARY_HEADER: &str = "[Previous conversation summary]";
/// The line that opens the tool section.
pub const TOOLS_HEADER: &str = "[Tool calls from earlier in conversation]";
/// The summary message's last line.
pub const SUMMARY_FOOTER: &str = "[End of summary - recent messages follow]";

/// Which role the summary message takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// A system message after the first system message.
    #[default]
    System,
    /// A user message (for APIs that take one system message only).
    User,
}

/// What happens to a conversation whose summary could not be made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// The older messages are dropped, with a one-line note saying why.
    #[default]
    Truncate,
    /// The conversation is left as it was.
    Keep,
    /// The conversation is flagged `summarize_failed` with `on_failure:
    /// fail`, for the caller to fail the run.
    Fail,
}

/// What `summarize` does.
#[derive(Clone, Debug)]
pub struct SummarizeSpec {
    /// Conversations at or under this many tokens pass through unchanged.
    pub threshold: usize,
    /// The most recent messages kept verbatim.
    pub keep: usize,
    /// How far `keep` may be halved when nothing older is left to summarize.
    pub min_keep: usize,
    /// The summary text's budget in tokens.
    pub max_summary_tokens: usize,
    /// The most tokens an engine is sent.
    pub max_input_tokens: usize,
    /// The summary message's role.
    pub placement: Placement,
    /// The engine's instructions (`{max_tokens}` is replaced).
    pub prompt: String,
    /// How much of a text tool result its description shows.
    pub preview_chars: usize,
    /// The API wants the user first (Anthropic, Gemini): a system summary
    /// followed by a recent window that does not start with the user becomes
    /// a user message.
    pub user_first: bool,
    /// What a failed summary becomes.
    pub on_failure: OnFailure,
    /// `--budget-in billed`: `threshold` is in the provider's tokens, read
    /// with the conversation's [`crate::fit::scale_for`].
    pub billed: bool,
    /// The engine model's context window (`--engine-context`): requests are
    /// made to fit it. When unset, a server's error that names its window
    /// sets it, and the summary is asked again within it.
    pub engine_context: Option<usize>,
}

impl Default for SummarizeSpec {
    fn default() -> Self {
        SummarizeSpec {
            threshold: 100_000,
            keep: 10,
            min_keep: 2,
            max_summary_tokens: 1000,
            max_input_tokens: 32_000,
            placement: Placement::System,
            prompt: crate::summary::DEFAULT_PROMPT.to_string(),
            preview_chars: 100,
            user_first: false,
            on_failure: OnFailure::Truncate,
            billed: false,
            engine_context: None,
        }
    }
}

/// The `summarize` operation: a spec, an engine and an optional cache.
pub struct Summarize {
    /// What to do.
    pub spec: SummarizeSpec,
    /// Who writes the summary.
    pub engine: Box<dyn Engine>,
    /// Where summaries are kept between runs.
    pub cache: Option<Cache>,
}

/// Which messages go where.
struct Split {
    /// How many messages open the conversation kept as they are: the first
    /// system message (with its results, when it calls a tool), or none.
    head: usize,
    /// Where the recent window starts.
    window: usize,
    /// Older messages to summarize.
    older: Vec<usize>,
    /// Older system messages, dropped.
    dropped: Vec<usize>,
    /// The `keep` that was used.
    keep: usize,
}

/// Applies `summarize` to one conversation.
pub fn summarize(
    conv: Conversation,
    spec: &SummarizeSpec,
    engine: &dyn Engine,
    cache: Option<&Cache>,
    tok: &Tokenizer,
) -> Outcome {
    let tokens = tok.count_conversation(&conv);
    if tokens <= spec.threshold {
        return Outcome::new(conv, Vec::new());
    }
    let Some(split) = split(&conv.messages, spec) else {
        let mut out = Outcome::new(conv, Vec::new());
        out.flags.insert(
            "summarize_skipped".into(),
            Value::from("nothing older than the recent window to summarize"),
        );
        return out;
    };
    let msgs = &conv.messages;
    let (entries, tool_lines) = prepare(msgs, &split.older, spec.preview_chars);
    let prompt = spec
        .prompt
        .replace("{max_tokens}", &spec.max_summary_tokens.to_string());

    let mut flags = Map::new();
    flags.insert("summarized".into(), Value::Bool(true));
    flags.insert("engine".into(), Value::from(engine.name()));
    if !engine.model().is_empty() {
        flags.insert("model".into(), Value::from(engine.model()));
    }
    flags.insert("kept_recent".into(), Value::from(msgs.len() - split.window));

    let result = summary_text(&prompt, &entries, spec, engine, cache, tok, &mut flags);
    if let (Err(reason), OnFailure::Keep | OnFailure::Fail) = (&result, spec.on_failure) {
        return kept_on_failure(conv, reason, spec.on_failure);
    }
    let removed = split.older.len() + split.dropped.len();
    let first_line = match &result {
        Ok(text) => format!("{SUMMARY_HEADER}\n{}", text.trim()),
        Err(reason) => {
            flags.insert("fallback".into(), Value::Bool(true));
            flags.insert("fallback_reason".into(), Value::from(reason.as_str()));
            flags.insert(
                "failure_kind".into(),
                Value::from(crate::summary::failure_kind(reason)),
            );
            format!(
                "[Earlier conversation truncated: {removed} {} removed]",
                if removed == 1 { "message" } else { "messages" }
            )
        }
    };
    let mut content = first_line;
    if !tool_lines.is_empty() {
        content.push('\n');
        content.push_str(&tool_section(&tool_lines, spec.max_summary_tokens, tok));
    }
    content.push('\n');
    content.push_str(SUMMARY_FOOTER);
    let role = summary_role(spec, msgs.get(split.window), &mut flags);
    let summary = Message::new(role, content);
    flags.insert(
        "summary_tokens".into(),
        Value::from(tok.count_message(&summary)),
    );

    let (conv, changes) = assemble(conv, summary, &split, result.is_ok());
    flags.insert("summarized_messages".into(), Value::from(split.older.len()));
    flags.insert("keep".into(), Value::from(split.keep));
    Outcome {
        conversation: conv,
        changes,
        flags,
    }
}

/// The conversation left as it was (`--on-failure keep|fail`); the flags say
/// why, and what was asked.
fn kept_on_failure(conv: Conversation, reason: &str, on_failure: OnFailure) -> Outcome {
    let mut out = Outcome::new(conv, Vec::new());
    out.flags
        .insert("summarize_failed".into(), Value::from(reason));
    out.flags.insert(
        "failure_kind".into(),
        Value::from(crate::summary::failure_kind(reason)),
    );
    out.flags.insert(
        "on_failure".into(),
        Value::from(if on_failure == OnFailure::Keep {
            "keep"
        } else {
            "fail"
        }),
    );
    out
}

/// The summary's role: `--placement`, except that a system summary before
/// recent messages opening with the assistant goes as the user's where the
/// API wants the user first.
fn summary_role(
    spec: &SummarizeSpec,
    first_recent: Option<&Message>,
    flags: &mut Map<String, Value>,
) -> Role {
    match spec.placement {
        Placement::User => Role::User,
        Placement::System
            if spec.user_first && first_recent.is_some_and(|m| m.role != Role::User) =>
        {
            flags.insert("placement".into(), Value::from("user"));
            flags.insert(
                "placement_reason".into(),
                Value::from(
                    "the recent messages start with the assistant; this API wants the user first",
                ),
            );
            Role::User
        }
        Placement::System => Role::System,
    }
}

/// Assembles [first system] + [summary] + [recent], and the changes.
fn assemble(
    mut conv: Conversation,
    summary: Message,
    split: &Split,
    summarized: bool,
) -> (Conversation, Vec<Change>) {
    let mut summary = Some(summary);
    let msgs = std::mem::take(&mut conv.messages);
    let reason_removed = if summarized {
        "summarized"
    } else {
        "truncated: summarization failed"
    };
    let mut changes = Vec::new();
    let mut out = Vec::with_capacity(msgs.len() - split.window + 2);
    let at = split.head;
    for (i, m) in msgs.into_iter().enumerate() {
        if i < split.head {
            out.push(m);
        } else if i >= split.window {
            out.extend(summary.take());
            out.push(m);
        } else if split.dropped.binary_search(&i).is_ok() {
            changes.push(Change::of(
                &m,
                i,
                Action::Removed,
                "system message before the recent window",
            ));
        } else {
            changes.push(Change::of(&m, i, Action::Removed, reason_removed));
        }
    }
    out.extend(summary.take());
    changes.push(Change::new(at, Action::Added, "summary of older messages"));
    conv.messages = out;
    (conv, changes)
}

/// The tool section: the header and one `- [Tool: …]` line per result,
/// within `max` tokens; when they do not all fit, the most recent lines stay
/// after a `- … N earlier tool results` line.
fn tool_section(lines: &[String], max: usize, tok: &Tokenizer) -> String {
    let mut used = tok.count_text(TOOLS_HEADER) + 12;
    let mut first = lines.len();
    while first > 0 {
        let cost = tok.count_text(&lines[first - 1]) + 2;
        if used + cost > max {
            break;
        }
        used += cost;
        first -= 1;
    }
    let mut out = TOOLS_HEADER.to_string();
    if first > 0 {
        out.push_str(&format!(
            "\n- … {first} earlier tool {}",
            if first == 1 { "result" } else { "results" }
        ));
    }
    for l in &lines[first..] {
        out.push_str("\n- ");
        out.push_str(l);
    }
    out
}

/// Finds the recent window and what lies before it; `None` when nothing
/// older is left to summarize even at `min_keep`.
fn split(msgs: &[Message], spec: &SummarizeSpec) -> Option<Split> {
    // The first system message is kept; one that calls a tool (a log can
    // say so) with its results, or its calls would go unanswered.
    // Units are cut from the front, so those after the first are the
    // units from where it ends.
    let (start, units) = match msgs.first() {
        Some(m) if m.role.is_instruction() && m.has_calls() => {
            let mut all = units(msgs, 0).into_iter();
            (all.next().map_or(1, |u| u.end), all.collect())
        }
        Some(m) if m.role.is_instruction() => (1, units(msgs, 1)),
        _ => (0, units(msgs, 0)),
    };
    let mut keep = spec.keep.max(1);
    loop {
        let target = msgs.len().saturating_sub(keep).max(start);
        // The window starts at the unit that holds `target`.
        let window = units
            .iter()
            .find(|u| u.contains(&target))
            .map_or(msgs.len(), |u| u.start);
        let (dropped, older): (Vec<usize>, Vec<usize>) =
            (start..window).partition(|&i| msgs[i].role.is_instruction());
        if !older.is_empty() {
            return Some(Split {
                head: start,
                window,
                older,
                dropped,
                keep,
            });
        }
        if keep <= spec.min_keep.max(1) {
            return None;
        }
        keep = (keep / 2).max(spec.min_keep.max(1));
    }
}

/// The older messages as engine entries, and the tool section's lines.
fn prepare(msgs: &[Message], older: &[usize], preview: usize) -> (Vec<Entry>, Vec<String>) {
    let pairing = Pairing::new(msgs);
    let mut entries = Vec::with_capacity(older.len());
    let mut tools = Vec::new();
    for &i in older {
        let m = &msgs[i];
        if m.role.is_result() {
            // One line each in the tool section: whitespace collapsed.
            let line = describe(m, preview, 1)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let name = crate::pairs::result_tool_name(msgs, &pairing, i).map(str::to_string);
            tools.push(line.clone());
            entries.push(Entry {
                role: m.role,
                name,
                text: line,
            });
            continue;
        }
        let mut text = m.content.text();
        for img in m.content.images() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&img.placeholder());
        }
        for call in m.calls() {
            if !text.is_empty() {
                text.push('\n');
            }
            let args: String = call.arguments.chars().take(200).collect();
            let more = if call.arguments.chars().count() > 200 {
                "…"
            } else {
                ""
            };
            text.push_str(&format!("[called {}({args}{more})]", call.name));
        }
        entries.push(Entry {
            role: m.role,
            name: m.name.clone(),
            text,
        });
    }
    (entries, tools)
}

/// The summary text from the cache or the engine, or the reason it failed.
/// Records `cache` (`hit`, `extended`, `miss`) in the flags.
fn summary_text(
    prompt: &str,
    entries: &[Entry],
    spec: &SummarizeSpec,
    engine: &dyn Engine,
    cache: Option<&Cache>,
    tok: &Tokenizer,
    flags: &mut Map<String, Value>,
) -> Result<String, String> {
    let keys = cache.map(|_| {
        Cache::keys(
            engine.name(),
            engine.model(),
            prompt,
            spec.max_summary_tokens,
            entries,
        )
    });
    // An entry is used only if it holds what was asked: within the summary
    // budget, in a file no larger than such a summary can be.
    let max_bytes = 4096 + 64 * spec.max_summary_tokens as u64;
    let hit = cache.zip(keys.as_ref()).and_then(|(c, k)| {
        c.lookup(k, max_bytes, |s| {
            tok.count_text_within(s, spec.max_summary_tokens).is_some()
        })
    });
    if let Some(hit) = &hit {
        if hit.covered == entries.len() {
            flags.insert("cache".into(), Value::from("hit"));
            return Ok(hit.summary.clone());
        }
    }
    let (previous, new) = match &hit {
        Some(h) => (Some(h.summary.as_str()), &entries[h.covered..]),
        None => (None, entries),
    };
    if cache.is_some() {
        let state = if hit.is_some() { "extended" } else { "miss" };
        flags.insert("cache".into(), Value::from(state));
    }
    let text = ask(spec, previous, new, engine, tok, flags)?;
    if let (Some(cache), Some(keys)) = (cache, &keys) {
        if let Err(e) = cache.store(
            &keys[entries.len()],
            engine.name(),
            engine.model(),
            entries.len(),
            &text,
        ) {
            flags.insert("cache_error".into(), Value::from(format!("{e:#}")));
        }
    }
    Ok(text)
}

/// The summary of `new`, folded into `previous`: asked within the engine's
/// context when it is known (given, or learned from an earlier request of
/// this run); when it is not and the server refuses the request for its
/// length, naming its window, asked again within that, which the engine
/// keeps for the conversations after this one.
fn ask(
    spec: &SummarizeSpec,
    previous: Option<&str>,
    new: &[Entry],
    engine: &dyn Engine,
    tok: &Tokenizer,
    flags: &mut Map<String, Value>,
) -> Result<String, String> {
    let learned = spec
        .engine_context
        .is_none()
        .then(|| engine.learned_context())
        .flatten();
    let said = |flags: &mut Map<String, Value>, n: usize, from: &str| {
        flags.insert("engine_context".into(), Value::from(n));
        flags.insert("engine_context_from".into(), Value::from(from));
    };
    if let Some(n) = learned {
        said(flags, n, "the server's error to an earlier request");
    }
    let known = spec.engine_context.or(learned);
    let first = ask_within(spec, known, previous, new, engine, tok, flags);
    match first {
        Err(e) if known.is_none() => {
            let Some(n) = crate::summary::context_from_error(&e) else {
                return Err(e);
            };
            engine.learn_context(n);
            said(flags, n, "the server's error");
            ask_within(spec, Some(n), previous, new, engine, tok, flags)
        }
        other => other,
    }
}

/// What a request holds besides its messages and the summary so far: the
/// chat template's tokens, roughly.
const REQUEST_OVERHEAD: usize = 64;

/// The summary asked in one request, or, within a context of `n` tokens,
/// in as many as it takes: each chunk of messages folded into the summary
/// so far, the summary's budget at most an eighth of the window. Tokens are
/// counted here with the conversation's tokenizer, not the engine model's,
/// which may count a quarter more: requests are sized to three quarters of
/// the window.
fn ask_within(
    spec: &SummarizeSpec,
    context: Option<usize>,
    previous: Option<&str>,
    new: &[Entry],
    engine: &dyn Engine,
    tok: &Tokenizer,
    flags: &mut Map<String, Value>,
) -> Result<String, String> {
    let Some(n) = context else {
        let prompt = spec
            .prompt
            .replace("{max_tokens}", &spec.max_summary_tokens.to_string());
        let request = Request {
            prompt: &prompt,
            previous,
            entries: new,
            max_summary_tokens: spec.max_summary_tokens,
            max_input_tokens: spec.max_input_tokens,
            tokenizer: tok,
            context: None,
        };
        let text = engine.summarize(&request).map_err(|e| e.reason)?;
        return Ok(crate::summary::cut_to(
            text.trim(),
            spec.max_summary_tokens,
            tok,
        ));
    };
    let summary_max = spec.max_summary_tokens.min(n / 8).max(16);
    let usable = n / 4 * 3;
    if summary_max < spec.max_summary_tokens {
        flags.insert(
            "max_summary_tokens_within_context".into(),
            Value::from(summary_max),
        );
    }
    let prompt = spec
        .prompt
        .replace("{max_tokens}", &summary_max.to_string());
    // The prompt, the answer, the summary so far, the template.
    let fixed = tok.count_text(&prompt) + 2 * summary_max + REQUEST_OVERHEAD;
    let Some(budget) = usable.checked_sub(fixed).filter(|b| *b >= REQUEST_OVERHEAD) else {
        return Err(format!(
            "the engine's context of {n} tokens leaves no room for the messages beside the prompt ({} tokens) and the summary ({summary_max} tokens)",
            tok.count_text(&prompt)
        ));
    };
    let budget = budget.min(spec.max_input_tokens);
    let chunks = chunks(new, budget, tok);
    if chunks.len() > 1 {
        flags.insert("chunks".into(), Value::from(chunks.len()));
    }
    let mut summary = previous.map(str::to_string);
    for chunk in &chunks {
        let request = Request {
            prompt: &prompt,
            previous: summary.as_deref(),
            entries: chunk,
            max_summary_tokens: summary_max,
            max_input_tokens: budget + summary_max + REQUEST_OVERHEAD,
            tokenizer: tok,
            context: Some(n),
        };
        let text = engine.summarize(&request).map_err(|e| e.reason)?;
        summary = Some(crate::summary::cut_to(text.trim(), summary_max, tok));
    }
    Ok(summary.unwrap_or_default())
}

/// The entries in runs of at most `budget` tokens each (an entry over it
/// alone, its middle cut to fit), in order.
fn chunks(entries: &[Entry], budget: usize, tok: &Tokenizer) -> Vec<Vec<Entry>> {
    let mut out: Vec<Vec<Entry>> = Vec::new();
    let mut current: Vec<Entry> = Vec::new();
    let mut used = 0;
    for e in entries {
        // Its role's label and the blank line between entries.
        let cost = tok.count_text(&e.text) + 8;
        if cost > budget {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
                used = 0;
            }
            let mut cut = e.clone();
            cut.text = crate::summary::cut_middle(&e.text, budget.saturating_sub(8), tok);
            out.push(vec![cut]);
            continue;
        }
        if used + cost > budget && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push(e.clone());
        used += cost;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::pair_problems;
    use crate::summary::extractive::Extractive;
    use crate::summary::EngineError;
    use crate::tokens::Encoding;
    use crate::transcript::{Content, ToolCall};

    fn call(id: &str, name: &str) -> Message {
        let mut m = Message::new(Role::Assistant, "");
        m.tool_calls = Some(vec![ToolCall {
            id: Some(id.into()),
            name: name.into(),
            arguments: "{}".into(),
            raw: Value::Null.into(),
            slot: None,
        }]);
        m
    }

    fn conversation() -> Conversation {
        let mut msgs = vec![Message::new(Role::System, "You are helpful.")];
        for i in 0..6 {
            msgs.push(Message::new(Role::User, format!("Question {i}?")));
            msgs.push(call(&format!("c{i}"), "lookup"));
            msgs.push(
                Message::new(Role::Tool, format!("[{{\"row\": {i}}}, {{\"row\": 2}}]"))
                    .with_call_id(format!("c{i}")),
            );
            msgs.push(Message::new(Role::Assistant, format!("Answer {i}.")));
            if i == 1 {
                msgs.push(Message::new(Role::System, "Retrieved context."));
            }
        }
        Conversation::new(msgs)
    }

    fn spec() -> SummarizeSpec {
        SummarizeSpec {
            threshold: 10,
            keep: 6,
            ..SummarizeSpec::default()
        }
    }

    struct Failing;

    impl Engine for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn summarize(&self, _: &Request<'_>) -> Result<String, EngineError> {
            Err(EngineError::fatal("connection refused (http://x)"))
        }
    }

    #[test]
    fn under_the_threshold_nothing_changes() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let conv = conversation();
        let spec = SummarizeSpec {
            threshold: 100_000,
            ..spec()
        };
        let out = summarize(conv.clone(), &spec, &Extractive, None, &tok);
        assert_eq!(out.conversation.messages, conv.messages);
        assert!(out.changes.is_empty());
    }

    #[test]
    fn a_system_message_that_calls_a_tool_keeps_its_results() {
        // As `trim` had it (the `operations` fuzz target): a first system
        // message carrying a call, kept apart while its result was
        // summarized, left the call unanswered.
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut conv = conversation();
        let mut first = call("s1", "load_profile");
        first.role = Role::System;
        first.content = Content::Text("You are helpful; the profile is loaded below.".into());
        conv.messages[0] = first;
        conv.messages.insert(
            1,
            Message::new(Role::Tool, "{\"name\": \"Ada\"}").with_call_id("s1"),
        );
        let out = summarize(conv, &spec(), &Extractive, None, &tok);
        let msgs = &out.conversation.messages;
        assert!(pair_problems(msgs).is_empty(), "{:?}", pair_problems(msgs));
        assert_eq!(msgs[0].role, Role::System, "the system message stays first");
        assert_eq!(
            msgs[1].tool_call_id.as_deref(),
            Some("s1"),
            "with its result"
        );
        assert!(out
            .changes
            .iter()
            .any(|c| c.reason == "summary of older messages"));
    }

    #[test]
    fn system_summary_recent_and_whole_units() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let out = summarize(conversation(), &spec(), &Extractive, None, &tok);
        let msgs = &out.conversation.messages;
        assert_eq!(msgs[0].content.text(), "You are helpful.");
        let summary = msgs[1].content.text();
        assert_eq!(msgs[1].role, Role::System);
        assert!(summary.starts_with("[Previous conversation summary]\n- User: Question 0?"));
        assert!(summary.contains(
            "[Tool calls from earlier in conversation]\n- [Tool: 2 rows | {\"row\": 0}]"
        ));
        assert!(summary.ends_with("[End of summary - recent messages follow]"));
        assert!(!summary.contains("Retrieved context"));
        // keep 6 lands on a tool result: the window widens to its call.
        assert!(msgs[2].has_calls(), "{msgs:#?}");
        assert_eq!(msgs.len(), 2 + 7);
        assert!(pair_problems(msgs).is_empty());
        assert!(out
            .changes
            .iter()
            .any(|c| c.reason == "system message before the recent window"));
        assert_eq!(out.flags["summarized_messages"], 17);
    }

    /// A server of a small window: a request over `window` tokens (as
    /// its own tokenizer counts: a quarter more than ours) is refused as
    /// llama-cpp-python refuses it; others get a summary of what they held.
    struct SmallWindow {
        window: usize,
        asked: std::sync::Mutex<Vec<usize>>,
        learned: std::sync::atomic::AtomicUsize,
    }

    impl Engine for SmallWindow {
        fn name(&self) -> &str {
            "small"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn learned_context(&self) -> Option<usize> {
            Some(self.learned.load(std::sync::atomic::Ordering::Relaxed)).filter(|&n| n > 0)
        }
        fn learn_context(&self, n: usize) {
            self.learned.store(n, std::sync::atomic::Ordering::Relaxed);
        }
        fn summarize(&self, r: &Request<'_>) -> Result<String, EngineError> {
            let tokens = r.tokenizer.count_text(r.prompt) + r.tokenizer.count_text(&r.input());
            let theirs = tokens * 5 / 4;
            self.asked.lock().unwrap().push(theirs);
            if theirs + r.max_summary_tokens > self.window {
                return Err(EngineError::fatal(format!(
                    "HTTP 400 from http://127.0.0.1:1/v1/chat/completions: {{\"error\":{{\"message\":\"This model's maximum context length is {} tokens. However, you requested {theirs} tokens ({theirs} in the messages, None in the completion). Please reduce the length of the messages or completion.\"}}}}",
                    self.window
                )));
            }
            let folded = r.previous.map_or(0, |p| p.len());
            Ok(format!(
                "summary of {} entries after {folded} bytes",
                r.entries.len()
            ))
        }
    }

    fn long_conversation() -> Conversation {
        let mut msgs = vec![Message::new(Role::System, "You are helpful.")];
        for i in 0..40 {
            msgs.push(Message::new(
                Role::User,
                format!(
                    "Question {i}: {}",
                    "why does the cache miss on cold start? ".repeat(12)
                ),
            ));
            msgs.push(Message::new(
                Role::Assistant,
                format!(
                    "Answer {i}: {}",
                    "because the key includes the build id. ".repeat(12)
                ),
            ));
        }
        Conversation::new(msgs)
    }

    #[test]
    fn a_small_window_named_in_an_error_is_summarized_in_chunks_that_fit() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let engine = SmallWindow {
            window: 2048,
            asked: Default::default(),
            learned: Default::default(),
        };
        let out = summarize(long_conversation(), &spec(), &engine, None, &tok);
        assert!(out.flags.get("fallback").is_none(), "{:?}", out.flags);
        assert_eq!(out.flags["engine_context"], 2048);
        assert_eq!(out.flags["engine_context_from"], "the server's error");
        assert!(out.flags["chunks"].as_u64().unwrap() > 2, "{:?}", out.flags);
        assert_eq!(out.flags["max_summary_tokens_within_context"], 256);
        let asked = engine.asked.lock().unwrap().clone();
        // The first request, whole, was refused; every later one fit.
        assert!(asked[0] > 2048);
        assert!(asked[1..].iter().all(|t| t + 256 <= 2048), "{asked:?}");
        let summary = out.conversation.messages[1].content.text();
        assert!(summary.contains("summary of"), "{summary}");
        // The next conversation of the run is asked within the window at
        // once: no request refused first.
        let before = asked.len();
        let out = summarize(long_conversation(), &spec(), &engine, None, &tok);
        assert!(out.flags.get("fallback").is_none(), "{:?}", out.flags);
        assert_eq!(
            out.flags["engine_context_from"],
            "the server's error to an earlier request"
        );
        let asked = engine.asked.lock().unwrap().clone();
        assert!(asked[before..].iter().all(|t| t + 256 <= 2048), "{asked:?}");
    }

    #[test]
    fn a_window_too_small_for_the_prompt_is_a_failure_said_plainly() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let engine = SmallWindow {
            window: 256,
            asked: Default::default(),
            learned: Default::default(),
        };
        let s = SummarizeSpec {
            engine_context: Some(256),
            ..spec()
        };
        let out = summarize(long_conversation(), &s, &engine, None, &tok);
        let reason = out.flags["fallback_reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the engine's context of 256 tokens leaves no room"),
            "{reason}"
        );
        assert!(engine.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn context_windows_are_read_from_servers_errors() {
        use crate::summary::context_from_error;
        assert_eq!(
            context_from_error("HTTP 400 from x: {\"error\":{\"message\":\"This model's maximum context length is 2048 tokens. However, you requested 4996 tokens\"}}"),
            Some(2048)
        );
        assert_eq!(
            context_from_error("HTTP 400 from x: {\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}"),
            Some(4096)
        );
        assert_eq!(context_from_error("connection refused (http://x)"), None);
    }

    #[test]
    fn failure_falls_back_to_truncation() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let out = summarize(conversation(), &spec(), &Failing, None, &tok);
        let summary = out.conversation.messages[1].content.text();
        assert!(
            summary.starts_with(
                "[Earlier conversation truncated: 18 messages removed]\n[Tool calls from earlier in conversation]\n"
            ),
            "{summary}"
        );
        assert_eq!(out.flags["fallback"], true);
        // The reason is the report's, not the model's.
        assert!(!summary.contains("http://x"), "{summary}");
        assert_eq!(
            out.flags["fallback_reason"],
            "connection refused (http://x)"
        );
        assert!(pair_problems(&out.conversation.messages).is_empty());
    }

    #[test]
    fn keep_halves_until_something_is_older() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let conv = Conversation::new(vec![
            Message::new(Role::User, "a ".repeat(50)),
            Message::new(Role::Assistant, "b ".repeat(50)),
            Message::new(Role::User, "c"),
            Message::new(Role::Assistant, "d"),
        ]);
        let out = summarize(conv.clone(), &spec(), &Extractive, None, &tok);
        // 6 → 3: the first message is older.
        assert_eq!(out.flags["keep"], 3);
        assert_eq!(out.conversation.messages.len(), 4);
        assert_eq!(out.conversation.messages[0].role, Role::System);
        let spec = SummarizeSpec {
            min_keep: 4,
            ..spec()
        };
        let out = summarize(conv.clone(), &spec, &Extractive, None, &tok);
        assert_eq!(out.conversation.messages, conv.messages);
        assert!(out.flags.contains_key("summarize_skipped"));
    }

    #[test]
    fn user_placement() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let spec = SummarizeSpec {
            placement: Placement::User,
            ..spec()
        };
        let out = summarize(conversation(), &spec, &Extractive, None, &tok);
        assert_eq!(out.conversation.messages[1].role, Role::User);
    }
}
