//! Operations over the transcript model, composed in a [`Pipeline`].
//!
//! An operation is a pure function from a conversation (plus its spec and
//! the tokenizer) to a new conversation and the list of changes it made. It
//! does no I/O and prints nothing; the pipeline counts tokens before and
//! after and builds the report, so accounting stays apart from transforming.
//!
//! Every operation keeps the tool-pair invariant (see [`crate::pairs`]).

pub mod compact_tools;
pub mod filter;
pub mod strings;
pub mod summarize;
pub mod trim;

use serde_json::{Map, Value};

use crate::changes::{Action, Change, ConversationReport, Count, StepCount};
use crate::format::{Document, Format};
use crate::tokens::Tokenizer;
use crate::transcript::{Conversation, Message};

/// What an operation returns.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The conversation after the operation.
    pub conversation: Conversation,
    /// Every message removed, modified or added, with the rule that did it.
    pub changes: Vec<Change>,
    /// Operation-specific flags for the report (`over_budget`, …).
    pub flags: Map<String, Value>,
}

impl Outcome {
    /// An outcome with no flags.
    pub fn new(conversation: Conversation, changes: Vec<Change>) -> Outcome {
        Outcome {
            conversation,
            changes,
            flags: Map::new(),
        }
    }
}

/// One step of a pipeline.
pub trait Operation: Send + Sync {
    /// Applies the operation to one conversation.
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome;

    /// Applies the operation to a conversation that will be written as
    /// `format`, for operations whose output must suit that format's API
    /// (Anthropic and Gemini want the user first). By default, [`Operation::apply`].
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        let _ = format;
        self.apply(conv, tok)
    }

    /// Whether the operation counts tokens (so the vocabulary is worth
    /// loading ahead of time).
    fn counts_tokens(&self) -> bool {
        true
    }

    /// The command that runs it: `filter`, `compact-tools`, `trim`,
    /// `summarize`.
    fn name(&self) -> &'static str;

    /// Whether it gives the same output for the same input, asking no one
    /// (a summary written by a model is neither).
    fn deterministic(&self) -> bool {
        true
    }
}

/// Whether a tool result is an error: flagged so, or reading as one
/// (`compact-tools` describes it as one, `filter --retried-failures` clears
/// what its call wrote).
pub(crate) fn failed(m: &Message) -> bool {
    flagged(m) || failed_text(&m.content.text_ref())
}

/// Whether a result's fields flag it an error (`is_error`).
pub(crate) fn flagged(m: &Message) -> bool {
    m.fields.may_have("is_error") && m.fields.get("is_error") == Some(&Value::Bool(true))
}

/// Whether a result's text says it failed.
pub(crate) fn failed_text(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with("Traceback (most recent call last)")
        || head.starts_with("Error:")
        || head.starts_with("ERROR:")
        || head.starts_with("error:")
        || starts_lowercased(head, "query execution failed")
        || text
            .lines()
            .any(|l| l.starts_with("Error:") || l.contains("Exception:") && l.len() < 300)
}

/// Whether `text` lowercased starts with `prefix` (ASCII), lowercasing only
/// as much of it as the prefix is long, not all of a large result.
fn starts_lowercased(text: &str, prefix: &str) -> bool {
    let mut lower = String::with_capacity(prefix.len() + 4);
    for c in text.chars() {
        if lower.len() >= prefix.len() {
            break;
        }
        lower.extend(c.to_lowercase());
    }
    lower.starts_with(prefix)
}

/// Whether the API a format's transcripts go to requires the first message
/// after the system instructions to be the user's.
pub fn user_first(format: Format) -> bool {
    crate::validate::Provider::for_format(format).user_first()
}

/// Whether a format keeps a system message where it stands (after the
/// first one, or anywhere), so that a summary can be one. Request bodies
/// with one system field (Anthropic, Gemini, AI Studio) merge it into the
/// first; agent logs and exports without a system role (Claude Code,
/// Claude.ai, Cline, Grok, LibreChat, pi) write it as a user message. In those
/// a summary is a user message from the start, so that what a step leaves
/// in memory is what the next step would read from its output.
pub fn keeps_system(format: Format) -> bool {
    !matches!(
        format,
        Format::Anthropic
            | Format::Gemini
            | Format::AiStudio
            | Format::ClaudeCode
            | Format::ClaudeAi
            | Format::Cline
            | Format::Grok
            | Format::LibreChat
            | Format::Pi
            | Format::OpenCode
            | Format::Crush
            | Format::QwenCode
            | Format::Goose
            | Format::CopilotChat
    )
}

/// Operations applied in order to every conversation of a document.
#[derive(Default)]
pub struct Pipeline {
    ops: Vec<Box<dyn Operation>>,
}

impl Pipeline {
    /// An empty pipeline: conversations pass through unchanged.
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    /// Whether every operation is [`Operation::deterministic`].
    pub fn deterministic(&self) -> bool {
        self.ops.iter().all(|op| op.deterministic())
    }

    /// Whether any operation counts tokens.
    pub fn counts_tokens(&self) -> bool {
        self.ops.iter().any(|op| op.counts_tokens())
    }

    /// Adds an operation at the end.
    pub fn push(&mut self, op: impl Operation + 'static) -> &mut Pipeline {
        self.ops.push(Box::new(op));
        self
    }

    /// Adds a boxed operation at the end.
    pub fn push_boxed(&mut self, op: Box<dyn Operation>) -> &mut Pipeline {
        self.ops.push(op);
        self
    }

    /// The names of its operations, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.ops.iter().map(|op| op.name()).collect()
    }

    /// Runs the pipeline over every conversation of `doc`, in place, and
    /// reports what changed in each. With `account` false, tokens before and
    /// after are not counted (they read 0): for runs whose report nobody
    /// reads, where counting would be most of the work.
    pub fn run(
        &self,
        doc: &mut Document,
        tok: &Tokenizer,
        account: bool,
    ) -> Vec<ConversationReport> {
        self.run_with(
            doc,
            tok,
            if account {
                Accounting::Full
            } else {
                Accounting::None
            },
        )
    }

    /// [`Pipeline::run`], counting tokens as `accounting` says: with
    /// [`Accounting::Delta`], only the messages that changed are counted and
    /// each report's [`ConversationReport::delta`] holds the difference.
    pub fn run_with(
        &self,
        doc: &mut Document,
        tok: &Tokenizer,
        accounting: Accounting,
    ) -> Vec<ConversationReport> {
        let account = accounting == Accounting::Full;
        let source = doc.source.clone();
        let format = doc.format.name().to_string();
        let convs = std::mem::take(&mut doc.conversations);
        let mut reports = Vec::with_capacity(convs.len());
        for (index, conv) in convs.into_iter().enumerate() {
            // Each message's tokens as it came, by its input position: a
            // message no operation changed is not counted again.
            let came = account.then(|| Came::of(&conv, tok));
            let measure = |c: &Conversation, changes: &[Change]| match &came {
                Some(came) => came.count(c, changes, tok),
                None => Count {
                    messages: c.messages.len(),
                    tokens: 0,
                },
            };
            let before = measure(&conv, &[]);
            let notes = conv.notes.clone();
            let mut changes = Vec::new();
            let mut flags = Map::new();
            let mut conv = conv;
            // Delta: the messages as they came, for counting what changed.
            let original = (accounting == Accounting::Delta && !self.ops.is_empty())
                .then(|| conv.messages.clone());
            // A stream's events are kept as they came (see `format::stream`).
            let kept = crate::format::stream::is_stream(&conv).then(|| conv.clone());
            let mut added = Added::new(&conv);
            let chain = self.ops.len() > 1;
            let mut steps = Vec::new();
            for op in &self.ops {
                let out = op.apply_for(conv, tok, doc.format);
                conv = out.conversation;
                for m in &mut conv.messages {
                    m.mint();
                }
                anchor_new(&mut conv.messages);
                let mut step_changes = out.changes;
                if chain {
                    for c in &mut step_changes {
                        c.step = Some(op.name().to_string());
                    }
                }
                added.after(&conv, step_changes, &mut changes);
                flags.extend(out.flags);
                if chain {
                    let n = measure(&conv, &changes);
                    steps.push(StepCount {
                        step: op.name().to_string(),
                        messages: n.messages,
                        tokens: n.tokens,
                    });
                }
            }
            added.finish(&mut changes);
            if let Some(as_read) = kept.filter(|_| !changes.is_empty()) {
                conv = as_read;
                changes.clear();
                steps.clear();
                flags.clear();
                flags.insert(
                    "warning".into(),
                    Value::from("kept as it was: a streamed answer is not rewritten event by event (convert it with --to first)"),
                );
            }
            let delta = (accounting == Accounting::Delta).then(|| {
                original.map_or(0, |original| {
                    delta(&original, &conv.messages, &changes, tok)
                })
            });
            reports.push(ConversationReport {
                source: source.clone(),
                index: doc.first_conversation + index,
                format: format.clone(),
                before,
                after: measure(&conv, &changes),
                changes,
                notes,
                lost: Vec::new(),
                steps,
                flags,
                delta,
            });
            doc.conversations.push(conv);
        }
        reports
    }
}

/// The tokens of each message of a conversation as it came, by its input
/// position.
struct Came(Vec<Option<usize>>);

impl Came {
    fn of(conv: &Conversation, tok: &Tokenizer) -> Came {
        let mut per = Vec::with_capacity(conv.messages.len());
        for m in &conv.messages {
            if let Some(i) = m.input_index() {
                if per.len() <= i {
                    per.resize(i + 1, None);
                }
                per[i] = Some(tok.count_message(m));
            }
        }
        Came(per)
    }

    /// The count of `conv`, where `changes` say which messages operations
    /// changed: the others are counted as they came.
    fn count(&self, conv: &Conversation, changes: &[Change], tok: &Tokenizer) -> Count {
        let touched: std::collections::HashSet<usize> = changes
            .iter()
            .filter(|c| c.action != Action::Added)
            .map(|c| c.index)
            .collect();
        let sum: usize = conv
            .messages
            .iter()
            .map(|m| {
                m.input_index()
                    .filter(|i| !touched.contains(i))
                    .and_then(|i| self.0.get(i).copied().flatten())
                    .unwrap_or_else(|| tok.count_message(m))
            })
            .sum();
        let tokens = sum + tok.reply_priming();
        debug_assert_eq!(
            tokens,
            tok.count_conversation(conv),
            "unchanged messages count as they came"
        );
        Count {
            messages: conv.messages.len(),
            tokens,
        }
    }
}

/// How much of the token accounting a pipeline run does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Accounting {
    /// Every conversation before and after (for reports).
    #[default]
    Full,
    /// Only the messages that changed: the difference they make.
    Delta,
    /// None: the counts read 0.
    None,
}

/// The tokens a pipeline's changes made: the messages added and modified as
/// they are now, less the messages removed and modified as they came.
fn delta(original: &[Message], now: &[Message], changes: &[Change], tok: &Tokenizer) -> i64 {
    use std::collections::HashSet;
    let (mut removed, mut modified) = (HashSet::new(), HashSet::new());
    for c in changes {
        match c.action {
            Action::Removed => {
                removed.insert(c.index);
            }
            Action::Modified => {
                modified.insert(c.index);
            }
            Action::Added => {}
        }
    }
    if removed.is_empty()
        && modified.is_empty()
        && !changes.iter().any(|c| c.action == Action::Added)
    {
        return 0;
    }
    let mut before = 0usize;
    for m in original {
        if let Some(i) = m.input_index() {
            if removed.contains(&i) || modified.contains(&i) {
                before += tok.count_message(m);
            }
        }
    }
    let mut after = 0usize;
    for m in now {
        match m.input_index() {
            None => after += tok.count_message(m),
            Some(i) if modified.contains(&i) => after += tok.count_message(m),
            Some(_) => {}
        }
    }
    after as i64 - before as i64
}

/// The messages operations of a pipeline added (summaries), so that a later
/// operation's change to one is told as part of its `added` change: the
/// report's indices keep their meaning (input positions for removed and
/// modified messages, output positions for added ones) over a whole pipeline.
struct Added {
    /// Each message without an input position, in order: its position and
    /// the index of its `added` change in the changes list (`None` for one
    /// that came without a position, built by a library user).
    live: Vec<(usize, Option<usize>)>,
    /// `added` changes whose message a later operation removed.
    gone: Vec<usize>,
}

impl Added {
    /// The messages of `conv` that came without an input position.
    fn new(conv: &Conversation) -> Added {
        let live = conv
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.origin.is_none())
            .map(|(p, _)| (p, None))
            .collect();
        Added {
            live,
            gone: Vec::new(),
        }
    }

    /// Appends an operation's changes to `all`, folding those to added
    /// messages into their `added` change, then finds the added messages in
    /// `conv`, its output: those that were there before and stayed, in
    /// order, and those it added, whose `added` changes give their positions.
    fn after(&mut self, conv: &Conversation, changes: Vec<Change>, all: &mut Vec<Change>) {
        let start = all.len();
        for c in changes {
            let k = c
                .of_added
                .then(|| self.live.iter().position(|&(p, _)| p == c.index))
                .flatten();
            let Some(k) = k else {
                all.push(c);
                continue;
            };
            match (self.live[k].1, c.action) {
                (None, Action::Removed) => {
                    self.live.remove(k);
                    all.push(c);
                }
                (None, _) => all.push(c),
                (Some(at), Action::Removed) => {
                    self.live.remove(k);
                    self.gone.push(at);
                }
                (Some(at), _) => {
                    let then = all[at]
                        .detail
                        .entry("then")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(list) = then {
                        list.push(Value::from(c.reason));
                    }
                }
            }
        }
        let fresh: Vec<(usize, usize)> = all[start..]
            .iter()
            .enumerate()
            .filter(|(_, c)| c.action == Action::Added)
            .map(|(k, c)| (c.index, start + k))
            .collect();
        let mut old = self.live.iter().map(|&(_, at)| at);
        let mut live = Vec::new();
        for (p, m) in conv.messages.iter().enumerate() {
            if m.origin.is_none() {
                let at = match fresh.iter().find(|&&(q, _)| q == p) {
                    Some(&(_, at)) => Some(at),
                    None => old.next().flatten(),
                };
                live.push((p, at));
            }
        }
        self.live = live;
    }

    /// Drops the `added` changes of messages removed again, and gives the
    /// others their final positions.
    fn finish(&self, all: &mut Vec<Change>) {
        for &(p, at) in &self.live {
            if let Some(at) = at {
                all[at].index = p;
            }
        }
        let mut k = 0;
        all.retain(|_| {
            k += 1;
            !self.gone.contains(&(k - 1))
        });
    }
}

impl Operation for trim::TrimSpec {
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        trim::trim(conv, self, tok)
    }

    fn name(&self) -> &'static str {
        "trim"
    }

    /// For formats whose API rejects a conversation whose first message
    /// after the system instructions is not the user's (Anthropic, Gemini
    /// and the logs that go to them), the kept messages open with the user:
    /// a placeholder goes in front when they do not, or, with
    /// `no_placeholder`, messages are dropped up to a user message. An
    /// explicit `--start-on` is left as it is.
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        if self.billed {
            return trim::in_billed_tokens(conv, self, tok, format);
        }
        if user_first(format) && self.start_on.is_none() && self.strategy == trim::Strategy::Last {
            let spec = if self.no_placeholder {
                trim::TrimSpec {
                    start_on: Some(vec![crate::transcript::Role::User]),
                    ..self.clone()
                }
            } else {
                trim::TrimSpec {
                    user_first: true,
                    ..self.clone()
                }
            };
            return trim::trim(conv, &spec, tok);
        }
        trim::trim(conv, self, tok)
    }
}

impl Operation for filter::FilterSpec {
    fn apply(&self, conv: Conversation, _tok: &Tokenizer) -> Outcome {
        filter::filter(conv, self)
    }

    fn counts_tokens(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "filter"
    }
}

impl Operation for compact_tools::CompactSpec {
    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        compact_tools::compact_tools(conv, self, tok)
    }

    fn name(&self) -> &'static str {
        "compact-tools"
    }
}

impl Operation for summarize::Summarize {
    fn name(&self) -> &'static str {
        "summarize"
    }

    /// Only the offline summarizer: a model's summary differs run to run.
    fn deterministic(&self) -> bool {
        self.engine.name() == "extractive"
    }

    fn apply(&self, conv: Conversation, tok: &Tokenizer) -> Outcome {
        summarize::summarize(
            conv,
            &self.spec,
            self.engine.as_ref(),
            self.cache.as_ref(),
            tok,
        )
    }

    /// For Anthropic and Gemini transcripts, the summary becomes a user
    /// message when the recent messages do not start with the user's.
    /// A conversation whose format cannot take the summary (a message
    /// tree of an export, a preference row) is left as it is, with a
    /// warning: summarizing it would remove the older turns and lose the
    /// summary that replaces them.
    fn apply_for(&self, conv: Conversation, tok: &Tokenizer, format: Format) -> Outcome {
        if !self.spec.billed {
            return summarize_for(self, &self.spec, conv, tok, format);
        }
        let scale = crate::fit::scale_for(format, &conv, tok);
        let counted = scale.counted(self.spec.threshold);
        let spec = summarize::SummarizeSpec {
            threshold: counted,
            billed: false,
            ..self.spec.clone()
        };
        let mut out = summarize_for(self, &spec, conv, tok, format);
        crate::fit::flag_budget(&mut out.flags, self.spec.threshold, counted, &scale);
        out
    }
}

/// `summarize` by `spec` for a conversation of `format` (see
/// [`Operation::apply_for`] of [`summarize::Summarize`]).
fn summarize_for(
    op: &summarize::Summarize,
    spec: &summarize::SummarizeSpec,
    conv: Conversation,
    tok: &Tokenizer,
    format: Format,
) -> Outcome {
    if !crate::format::dialect(format).takes_new_messages(&conv)
        && tok.count_conversation(&conv) > spec.threshold
    {
        let why = format!("{format} conversations of this shape cannot take a new message");
        let mut out = Outcome::new(conv, Vec::new());
        out.flags
            .insert("summarize_skipped".into(), Value::from(why.as_str()));
        out.flags.insert(
            "warning".into(),
            Value::from(format!("kept as it was, not summarized ({why})")),
        );
        return out;
    }
    let placement = if keeps_system(format) {
        spec.placement
    } else {
        summarize::Placement::User
    };
    let spec = summarize::SummarizeSpec {
        user_first: user_first(format),
        placement,
        ..spec.clone()
    };
    summarize::summarize(conv, &spec, op.engine.as_ref(), op.cache.as_ref(), tok)
}

/// Anchors each message a step added, once: before the input record of
/// the next message read from the input, as the step left them (or at the
/// end), where writing the step's output would have put it. Later steps
/// that remove messages around it do not move it (see
/// [`Message::anchor`](crate::transcript::Message::anchor)).
fn anchor_new(msgs: &mut [crate::transcript::Message]) {
    let mut next = None;
    for m in msgs.iter_mut().rev() {
        match m.origin.as_ref().map(|o| o.record) {
            Some(Some(r)) => next = Some(r),
            Some(None) => {}
            None => {
                if m.anchor.is_none() {
                    m.anchor = Some(next);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, ReadOptions};
    use crate::ops::summarize::{Summarize, SummarizeSpec};
    use crate::summary::extractive::Extractive;
    use crate::tokens::Encoding;

    #[test]
    fn a_prefix_lowercased_is_found_as_in_the_whole_text_lowercased() {
        let prefix = "query execution failed";
        for text in [
            "Query Execution Failed: table t",
            "QUERY EXECUTION FAILED",
            "query execution faile",
            "query execution failed",
            "",
            "İquery execution failed",
            "\u{212A}uery execution failed",
            "QUERY EXECUTION FAILEΣ",
            "ΣΣΣ query execution failed",
            "query\u{0130}execution failed",
        ] {
            assert_eq!(
                starts_lowercased(text, prefix),
                text.to_lowercase().starts_with(prefix),
                "{text:?}"
            );
        }
    }

    fn document() -> Document {
        let mut msgs = vec![serde_json::json!({"role": "system", "content": "Be brief."})];
        for i in 0..8 {
            msgs.push(serde_json::json!({"role": "user", "content": format!("Question {i}: how many rows are in table t{i}?")}));
            msgs.push(serde_json::json!({"role": "assistant", "content": format!("Table t{i} has {i}00 rows.")}));
        }
        let text = serde_json::json!({ "messages": msgs }).to_string();
        read_document("t.json", text.into_bytes(), &ReadOptions::default()).unwrap()
    }

    fn summarize() -> Summarize {
        Summarize {
            spec: SummarizeSpec {
                threshold: 10,
                keep: 4,
                ..SummarizeSpec::default()
            },
            engine: Box::new(Extractive),
            cache: None,
        }
    }

    fn trim(max_tokens: usize, allow_partial: bool) -> trim::TrimSpec {
        trim::TrimSpec {
            max_tokens: Some(max_tokens),
            strategy: trim::Strategy::Last,
            start_on: None,
            end_on: None,
            no_system: false,
            allow_partial,
            max_messages: None,
            max_turns: None,
            user_first: false,
            no_placeholder: false,
            step: None,
            grid: None,
            billed: false,
        }
    }

    fn run(p: Pipeline) -> (Conversation, Vec<Change>) {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut doc = document();
        let mut reports = p.run(&mut doc, &tok, false);
        (doc.conversations.remove(0), reports.remove(0).changes)
    }

    #[test]
    fn a_later_cut_of_a_summary_is_told_in_its_added_change() {
        let mut p = Pipeline::new();
        p.push(summarize()).push(trim(110, true));
        let (conv, changes) = run(p);
        let summary = conv.messages.iter().position(|m| m.origin.is_none());
        let added: Vec<_> = changes
            .iter()
            .filter(|c| c.action == Action::Added)
            .collect();
        assert_eq!(added.len(), 1, "{changes:?}");
        assert_eq!(Some(added[0].index), summary);
        assert_eq!(
            added[0].detail["then"],
            serde_json::json!(["partial: cut to fit the budget"])
        );
        // No change names a message by its position in the intermediate
        // transcript: every removal is of an input message, once.
        let removed: Vec<usize> = changes
            .iter()
            .filter(|c| c.action == Action::Removed)
            .map(|c| c.index)
            .collect();
        let mut unique = removed.clone();
        unique.dedup();
        assert_eq!(removed, unique);
        assert!(changes.iter().all(|c| !c.of_added));
    }

    #[test]
    fn a_summary_removed_again_is_not_reported_at_all() {
        let mut p = Pipeline::new();
        p.push(summarize()).push(trim(30, false));
        let (conv, changes) = run(p);
        assert!(conv.messages.iter().all(|m| m.origin.is_some()));
        assert!(changes.iter().all(|c| c.action == Action::Removed));
        // Every input message not in the output is reported removed, once.
        let kept: Vec<usize> = conv
            .messages
            .iter()
            .filter_map(|m| m.input_index())
            .collect();
        let mut told: Vec<usize> = changes.iter().map(|c| c.index).collect();
        told.sort_unstable();
        let expected: Vec<usize> = (0..17).filter(|i| !kept.contains(i)).collect();
        assert_eq!(told, expected);
    }

    #[test]
    fn a_summary_of_a_summary_is_one_added_message() {
        let mut p = Pipeline::new();
        p.push(summarize()).push(Summarize {
            spec: SummarizeSpec {
                threshold: 10,
                keep: 2,
                ..SummarizeSpec::default()
            },
            engine: Box::new(Extractive),
            cache: None,
        });
        let (conv, changes) = run(p);
        let added: Vec<_> = changes
            .iter()
            .filter(|c| c.action == Action::Added)
            .collect();
        assert_eq!(added.len(), 1, "{changes:?}");
        assert_eq!(added[0].index, 1);
        assert!(conv.messages[1].origin.is_none());
        assert_eq!(conv.messages.len(), 4);
    }
}
