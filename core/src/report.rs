//! Reports: what a transforming command changed, and the `stats` tables.
//!
//! Reports are `Serialize` structs (the `--report` and `stats --json`
//! contract) with renderers for people. Nothing here prints: renderers
//! write to any `io::Write`.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::stats::{ConversationStats, Count, FileStats, Totals};

pub use crate::changes::{Action, Change, ConversationReport, ReportRow, StepCount};
pub use crate::numbers::{count, plural, signed, thousands};

/// The `--report` of a transforming command.
#[derive(Clone, Debug, Serialize)]
pub struct TransformReport {
    /// The subcommand.
    pub command: String,
    /// The tokenizer counts were made with.
    pub tokenizer: String,
    /// One entry per conversation, in input order.
    pub conversations: Vec<ConversationReport>,
    /// Sums over all conversations.
    pub total: TransformTotals,
    /// What the run as a whole noticed: that nothing changed and why, a
    /// rule that never matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `then stats --json`: the stats of the result, as `stats --json`
    /// prints them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Box<serde_json::value::RawValue>>,
    /// What the summary line needs, folded over every conversation.
    #[serde(skip)]
    pub tally: Tally,
}

/// Sums over all conversations of a transforming command.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TransformTotals {
    /// Number of conversations.
    pub conversations: usize,
    /// Messages and tokens before.
    pub before: Count,
    /// Messages and tokens after.
    pub after: Count,
    /// Messages removed.
    pub removed: usize,
    /// Messages modified.
    pub modified: usize,
    /// Messages added.
    pub added: usize,
    /// JSONL lines skipped by `--skip-invalid` (kept in place in the output).
    pub skipped_lines: usize,
    /// When only what changed was counted: the tokens the changes made.
    #[serde(skip)]
    pub delta: Option<i64>,
}

/// What the summary line and the run's notes need of every conversation's
/// report, folded as they come: a run over millions of conversations with no
/// `--report` keeps this, not the reports.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// The totals.
    pub total: TransformTotals,
    /// Whether some conversation was not counted for a delta.
    no_delta: bool,
    /// Per rule (a change's reason), per `what`, how many.
    rules: Vec<(String, Vec<(String, usize)>)>,
    /// Results compacted (`max-*` reasons) and items truncated.
    compacted: usize,
    truncated_items: usize,
    /// Sums of numeric flags of compact-tools.
    tool_tokens_before: u64,
    tool_tokens_after: u64,
    /// Results over the limit kept whole: their description is no smaller.
    not_smaller: u64,
    /// Conversations left with no messages.
    emptied: usize,
    /// Conversations over budget, and the first reason.
    over_budget: usize,
    over_reason: Option<String>,
    /// Summaries made: conversations, messages, the engine, from the cache.
    made: usize,
    made_messages: usize,
    engine: Option<String>,
    cached: usize,
    /// Summaries that fell back to truncation: conversations, messages, why.
    truncated: usize,
    truncated_messages: usize,
    truncated_why: Option<String>,
    /// Conversations kept as they were after a failed summary, and why.
    kept: usize,
    kept_why: Option<String>,
    /// Whether a summary failed (kept or fail), and the first skip reason.
    summarize_failed: bool,
    summarize_skipped: Option<String>,
    /// Per --supersede rule: its tool's calls, and those keyed on its argument.
    supersede: Vec<(String, u64, u64)>,
    /// Whether a conversion lost something of a request as a whole.
    lost: bool,
    /// In a chain: each step's tokens removed (a negative number added).
    step_deltas: Vec<i64>,
    /// The first summary cache error.
    pub cache_error: Option<String>,
}

impl Tally {
    /// Folds one conversation's report in.
    pub fn add(&mut self, c: &ConversationReport) {
        let t = &mut self.total;
        t.conversations += 1;
        t.before.messages += c.before.messages;
        t.before.tokens += c.before.tokens;
        t.after.messages += c.after.messages;
        t.after.tokens += c.after.tokens;
        match c.delta {
            Some(d) => *t.delta.get_or_insert(0) += d,
            None => self.no_delta = true,
        }
        for ch in &c.changes {
            match ch.action {
                Action::Removed => t.removed += 1,
                Action::Modified => t.modified += 1,
                Action::Added => t.added += 1,
            }
            if ch.reason.starts_with("max-") {
                self.compacted += 1;
            } else if ch.reason == "truncate-items" {
                self.truncated_items += 1;
            }
            let what = ch
                .detail
                .get("what")
                .and_then(Value::as_str)
                .unwrap_or(ch.action.verb());
            let at = match self.rules.iter().position(|(r, _)| *r == ch.reason) {
                Some(at) => at,
                None => {
                    self.rules.push((ch.reason.clone(), Vec::new()));
                    self.rules.len() - 1
                }
            };
            let whats = &mut self.rules[at].1;
            match whats.iter_mut().find(|(w, _)| w == what) {
                Some((_, n)) => *n += 1,
                None => whats.push((what.to_string(), 1)),
            }
        }
        self.lost |= !c.lost.is_empty();
        let flag = |key: &str| c.flags.get(key);
        let text = |key: &str| flag(key).and_then(Value::as_str);
        let number = |key: &str| flag(key).and_then(Value::as_u64).unwrap_or(0);
        let is = |key: &str| flag(key) == Some(&Value::Bool(true));
        self.tool_tokens_before += number("tool_tokens_before");
        self.tool_tokens_after += number("tool_tokens_after");
        self.not_smaller += number("not_smaller");
        self.emptied += usize::from(is("emptied"));
        if is("over_budget") {
            self.over_budget += 1;
            if self.over_reason.is_none() {
                self.over_reason = text("over_budget_reason").map(str::to_string);
            }
        }
        // `summarizer unreachable: REASON`
        let why = |key: &str| {
            format!(
                "summarizer {}: {}",
                text("failure_kind").unwrap_or("failed"),
                text(key).unwrap_or_default()
            )
        };
        if is("fallback") {
            self.truncated += 1;
            self.truncated_messages += number("summarized_messages") as usize;
            self.truncated_why
                .get_or_insert_with(|| why("fallback_reason"));
        } else if is("summarized") {
            self.made += 1;
            self.made_messages += number("summarized_messages") as usize;
            if self.engine.is_none() {
                self.engine = text("engine").map(str::to_string);
            }
            self.cached += usize::from(text("cache") == Some("hit"));
        }
        if text("summarize_failed").is_some() {
            self.summarize_failed = true;
            if text("on_failure") == Some("keep") {
                self.kept += 1;
                self.kept_why.get_or_insert_with(|| why("summarize_failed"));
            }
        }
        if self.summarize_skipped.is_none() {
            self.summarize_skipped = text("summarize_skipped").map(str::to_string);
        }
        if self.cache_error.is_none() {
            self.cache_error = text("cache_error").map(str::to_string);
        }
        for r in flag("supersede")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let rule = r["rule"].as_str().unwrap_or_default();
            let (calls, keyed) = (
                r["calls"].as_u64().unwrap_or(0),
                r["keyed"].as_u64().unwrap_or(0),
            );
            match self.supersede.iter_mut().find(|(n, _, _)| n == rule) {
                Some((_, c, k)) => {
                    *c += calls;
                    *k += keyed;
                }
                None => self.supersede.push((rule.to_string(), calls, keyed)),
            }
        }
        let mut before = c.before.tokens as i64;
        for (k, s) in c.steps.iter().enumerate() {
            if self.step_deltas.len() <= k {
                self.step_deltas.push(0);
            }
            self.step_deltas[k] += before - s.tokens as i64;
            before = s.tokens as i64;
        }
    }

    /// Folds another tally in (a file's, at its end).
    pub fn merge(&mut self, other: Tally) {
        let (t, o) = (&mut self.total, &other.total);
        t.conversations += o.conversations;
        t.before.messages += o.before.messages;
        t.before.tokens += o.before.tokens;
        t.after.messages += o.after.messages;
        t.after.tokens += o.after.tokens;
        t.removed += o.removed;
        t.modified += o.modified;
        t.added += o.added;
        t.skipped_lines += o.skipped_lines;
        if let Some(d) = o.delta {
            *t.delta.get_or_insert(0) += d;
        }
        self.no_delta |= other.no_delta;
        for (rule, whats) in other.rules {
            let at = match self.rules.iter().position(|(r, _)| *r == rule) {
                Some(at) => at,
                None => {
                    self.rules.push((rule, Vec::new()));
                    self.rules.len() - 1
                }
            };
            for (what, n) in whats {
                match self.rules[at].1.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, m)) => *m += n,
                    None => self.rules[at].1.push((what, n)),
                }
            }
        }
        self.compacted += other.compacted;
        self.truncated_items += other.truncated_items;
        self.tool_tokens_before += other.tool_tokens_before;
        self.tool_tokens_after += other.tool_tokens_after;
        self.not_smaller += other.not_smaller;
        self.emptied += other.emptied;
        self.over_budget += other.over_budget;
        self.over_reason = self.over_reason.take().or(other.over_reason);
        self.made += other.made;
        self.made_messages += other.made_messages;
        self.engine = self.engine.take().or(other.engine);
        self.cached += other.cached;
        self.truncated += other.truncated;
        self.truncated_messages += other.truncated_messages;
        self.truncated_why = self.truncated_why.take().or(other.truncated_why);
        self.kept += other.kept;
        self.kept_why = self.kept_why.take().or(other.kept_why);
        self.summarize_failed |= other.summarize_failed;
        self.summarize_skipped = self.summarize_skipped.take().or(other.summarize_skipped);
        for (rule, calls, keyed) in other.supersede {
            match self.supersede.iter_mut().find(|(n, _, _)| *n == rule) {
                Some((_, c, k)) => {
                    *c += calls;
                    *k += keyed;
                }
                None => self.supersede.push((rule, calls, keyed)),
            }
        }
        self.lost |= other.lost;
        for (k, d) in other.step_deltas.into_iter().enumerate() {
            if self.step_deltas.len() <= k {
                self.step_deltas.push(0);
            }
            self.step_deltas[k] += d;
        }
        self.cache_error = self.cache_error.take().or(other.cache_error);
    }

    /// Counts skipped lines in.
    pub fn skipped(&mut self, lines: usize) {
        self.total.skipped_lines += lines;
    }

    /// The totals, the delta set only when every conversation had one.
    fn totals(&self) -> TransformTotals {
        let mut t = self.total.clone();
        if self.no_delta || t.conversations == 0 {
            t.delta = None;
        }
        t
    }

    /// Whether the run changed nothing at all.
    pub fn unchanged(&self) -> bool {
        let t = &self.total;
        t.removed + t.modified + t.added == 0 && !self.lost
    }

    /// What the run as a whole says: a `--supersede` rule that never
    /// matched, and, when nothing changed, why (`no changes: …`) for
    /// `command` (`chain` when several operations ran).
    pub fn notes(&self, command: &str, chain: bool) -> Vec<String> {
        let mut notes = Vec::new();
        for (rule, calls, keyed) in &self.supersede {
            let (tool, arg) = rule.split_once('=').unwrap_or((rule, "*"));
            if *calls == 0 {
                notes.push(format!(
                    "--supersede {rule}: no conversation calls {tool}; nothing superseded"
                ));
            } else if *keyed == 0 {
                notes.push(format!(
                    "--supersede {rule}: none of the {} to {tool} has an argument `{arg}`; \
                     nothing superseded",
                    plural(*calls as usize, "call")
                ));
            }
        }
        if self.unchanged() && self.total.conversations > 0 {
            let why = match command {
                _ if chain => Some("no step changed anything".to_string()),
                "filter" => Some("no message matched the rules".to_string()),
                "trim" if self.over_budget > 0 => Some(format!(
                    "nothing could be dropped, and {} over budget ({})",
                    plural(self.over_budget, "conversation"),
                    self.over_reason
                        .as_deref()
                        .unwrap_or("kept over the budget")
                )),
                "trim" => Some("every conversation fits the limits".to_string()),
                "compact-tools" if self.tool_tokens_before == 0 => {
                    Some("there are no tool results".to_string())
                }
                "compact-tools" if self.not_smaller > 0 => Some(format!(
                    "{} over --max-result-tokens kept whole: a description would not be smaller",
                    plural(self.not_smaller as usize, "tool result")
                )),
                "compact-tools" => Some(
                    "no tool result was over --max-result-tokens outside the last --keep-last \
                     (or --trigger-tokens, --clear-at-least held it back)"
                        .to_string(),
                ),
                "summarize" if self.summarize_failed => None,
                "summarize" => Some(match &self.summarize_skipped {
                    Some(why) => why.clone(),
                    None => "no conversation is over --threshold".to_string(),
                }),
                _ => None,
            };
            if let Some(why) = why {
                notes.push(format!("no changes: {why}"));
            }
        }
        notes
    }
}

impl TransformReport {
    /// Builds the report and its totals.
    pub fn new(
        command: &str,
        tokenizer: &str,
        conversations: Vec<ConversationReport>,
        skipped_lines: usize,
    ) -> TransformReport {
        let mut tally = Tally::default();
        for c in &conversations {
            tally.add(c);
        }
        tally.skipped(skipped_lines);
        TransformReport::from_tally(command, tokenizer, conversations, tally)
    }

    /// Builds the report from a tally made as the conversations came, and
    /// the conversations' reports when they were kept (empty when no report
    /// is written).
    pub fn from_tally(
        command: &str,
        tokenizer: &str,
        conversations: Vec<ConversationReport>,
        tally: Tally,
    ) -> TransformReport {
        TransformReport {
            command: command.to_string(),
            tokenizer: tokenizer.to_string(),
            conversations,
            total: tally.totals(),
            notes: Vec::new(),
            stats: None,
            tally,
        }
    }

    /// The tokens of the run for a summary line: `1,643 → 977 tokens` when
    /// every conversation was counted, `−666 tokens` when only what changed
    /// was.
    pub fn tokens(&self) -> String {
        let t = &self.total;
        match t.delta {
            Some(d) => format!("{} tokens", signed(d)),
            None => format!(
                "{} → {} tokens",
                thousands(t.before.tokens),
                thousands(t.after.tokens)
            ),
        }
    }

    /// The line of a chain: `ctxclean filter→trim: 12 files, 1,234,567 →
    /// 98,765 tokens (filter −210,004, trim −45,686)`; when only what
    /// changed was counted, `ctxclean filter→trim: 12 files, −1,135,802
    /// tokens, 96 messages removed, 3 modified`.
    pub fn chain_summary(&self, steps: &[&str], files: usize) -> String {
        let t = &self.total;
        if t.delta.is_some() {
            let mut line = format!(
                "ctxclean {}: {}, {}, {} removed",
                steps.join("→"),
                plural(files, "file"),
                self.tokens(),
                plural(t.removed, "message")
            );
            if t.modified > 0 {
                line += &format!(", {} modified", thousands(t.modified));
            }
            if t.added > 0 {
                line += &format!(", {} added", thousands(t.added));
            }
            if t.skipped_lines > 0 {
                line += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
            }
            return line;
        }
        let parts: Vec<String> = steps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let d = self.tally.step_deltas.get(k).copied().unwrap_or(0);
                let sign = match d.signum() {
                    1 => "−",
                    -1 => "+",
                    _ => "",
                };
                format!("{s} {sign}{}", thousands(d.unsigned_abs() as usize))
            })
            .collect();
        let mut line = format!(
            "ctxclean {}: {}, {} → {} tokens ({})",
            steps.join("→"),
            plural(files, "file"),
            thousands(t.before.tokens),
            thousands(t.after.tokens),
            parts.join(", ")
        );
        if t.skipped_lines > 0 {
            line += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
        }
        line
    }

    /// The summary by rule, for commands whose changes name what they did
    /// (`what` in the change details), e.g. `ctxclean filter: previous
    /// cycles: 2 tool messages, 3 tool_calls stripped; kept 11 messages`.
    pub fn rule_summary(&self) -> String {
        let mut s = format!("ctxclean {}: ", self.command);
        for (rule, whats) in &self.tally.rules {
            let parts: Vec<String> = whats
                .iter()
                .map(|(w, n)| format!("{} {}", thousands(*n), singular(w, *n)))
                .collect();
            s += &format!("{rule}: {}; ", parts.join(", "));
        }
        s += &format!(
            "kept {}, {}",
            plural(self.total.after.messages, "message"),
            self.tokens()
        );
        if self.tally.emptied > 0 {
            s += &format!(
                ", {} left with no messages",
                plural(self.tally.emptied, "conversation")
            );
        }
        s
    }

    /// The summary of `compact-tools`, e.g.
    /// `ctxclean compact-tools: 12 results compacted, 48,210 → 3,902 tool tokens`.
    pub fn compact_summary(&self) -> String {
        let t = &self.tally;
        let mut s = format!(
            "ctxclean {}: {} compacted, {} → {} tool tokens",
            self.command,
            plural(t.compacted, "result"),
            thousands(t.tool_tokens_before as usize),
            thousands(t.tool_tokens_after as usize)
        );
        if t.truncated_items > 0 {
            s += &format!(", {} truncated", plural(t.truncated_items, "result"));
        }
        s
    }

    /// The summary of `summarize`: `ctxclean summarize: 1 conversation,
    /// 120,400 → 8,310 tokens (96 messages into 1 summary, extractive)`, or
    /// why nothing was.
    pub fn summarize_summary(&self) -> String {
        let t = &self.total;
        let y = &self.tally;
        let mut parts = Vec::new();
        if y.made > 0 {
            let mut part = format!(
                "{} into {}, {}",
                plural(y.made_messages, "message"),
                match y.made {
                    1 => "1 summary".to_string(),
                    n => format!("{} summaries", thousands(n)),
                },
                y.engine.as_deref().unwrap_or_default()
            );
            if y.cached > 0 {
                part += &format!(", {} from the cache", y.cached);
            }
            parts.push(part);
        }
        if y.truncated > 0 {
            parts.push(format!(
                "{} truncated ({})",
                plural(y.truncated_messages, "message"),
                y.truncated_why.as_deref().unwrap_or_default()
            ));
        }
        if y.kept > 0 {
            parts.push(format!(
                "{} kept as {} ({})",
                plural(y.kept, "conversation"),
                if y.kept == 1 { "it was" } else { "they were" },
                y.kept_why.as_deref().unwrap_or_default()
            ));
        }
        if parts.is_empty() {
            return format!(
                "ctxclean summarize: {}, nothing summarized",
                plural(t.conversations, "conversation"),
            );
        }
        let mut s = format!(
            "ctxclean summarize: {}, {} ({})",
            plural(t.conversations, "conversation"),
            self.tokens(),
            parts.join("; ")
        );
        if t.skipped_lines > 0 {
            s += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
        }
        s
    }

    /// Whether the run changed nothing at all.
    pub fn unchanged(&self) -> bool {
        self.tally.unchanged()
    }

    /// The line of a run that changed nothing: `ctxclean trim: no changes:
    /// every conversation fits the limits (3 conversations)`.
    pub fn unchanged_summary(&self, why: &str) -> String {
        let t = &self.total;
        let mut s = format!(
            "ctxclean {}: no changes: {why} ({}",
            self.command,
            plural(t.conversations, "conversation"),
        );
        if t.delta.is_none() {
            s += &format!(", {} tokens", thousands(t.before.tokens));
        }
        if t.skipped_lines > 0 {
            s += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
        }
        s + ")"
    }

    /// The one-line human summary, e.g.
    /// `ctxclean trim: 1 conversation, 14,200 → 7,950 tokens, 9 messages removed`.
    pub fn summary(&self) -> String {
        let t = &self.total;
        if t.delta == Some(0) && t.removed + t.added == 0 {
            // Only counted what changed, and nothing did, or only what a
            // conversion could not carry (convert).
            let mut s = format!(
                "ctxclean {}: {} written",
                self.command,
                plural(t.conversations, "conversation")
            );
            if t.modified > 0 {
                s += &format!(", {} modified", plural(t.modified, "message"));
            }
            if t.skipped_lines > 0 {
                s += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
            }
            return s;
        }
        let mut s = format!(
            "ctxclean {}: {}, {}",
            self.command,
            plural(t.conversations, "conversation"),
            self.tokens()
        );
        for (n, action) in [
            (t.removed, Action::Removed),
            (t.modified, Action::Modified),
            (t.added, Action::Added),
        ] {
            if n > 0 || action == Action::Removed {
                s += &format!(", {} {}", plural(n, "message"), action.verb());
            }
        }
        if t.skipped_lines > 0 {
            s += &format!(", {} skipped", plural(t.skipped_lines, "invalid line"));
        }
        if let Some(reason) = &self.tally.over_reason {
            s += &format!(
                ", {} over budget ({reason})",
                plural(self.tally.over_budget, "conversation")
            );
        }
        s
    }
}

/// `what` for one item: its counted noun made singular (`tool messages` →
/// `tool message`, `empty assistants removed` → `empty assistant removed`);
/// only nouns this tool counts are touched, never words that merely end in
/// `s` (`this agent`).
fn singular(what: &str, n: usize) -> String {
    const NOUNS: [&str; 12] = [
        "messages",
        "arguments",
        "tool_calls",
        "results",
        "assistants",
        "turns",
        "blocks",
        "images",
        "lines",
        "rows",
        "notices",
        "conversations",
    ];
    if n != 1 {
        return what.to_string();
    }
    let mut done = false;
    what.split(' ')
        .map(|w| {
            if !done && NOUNS.contains(&w) {
                done = true;
                w[..w.len() - 1].to_string()
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The losses of a conversion, for the end of the summary line:
/// `; lost: 3 × thinking part (openai cannot express it), 1 × model gpt-4o
/// (not an anthropic model)`. Empty when nothing was lost.
pub fn loss_summary(losses: &[(String, String, usize)]) -> String {
    if losses.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = losses
        .iter()
        .map(|(what, why, n)| format!("{} × {what} ({why})", thousands(*n)))
        .collect();
    format!("; lost: {}", parts.join(", "))
}

/// Writes `stats` (tables for people, or the `--json` report) entry by
/// entry, as they come, so that a report over millions of conversations
/// needs no more memory than one.
pub struct StatsWriter {
    style: StatsStyle,
    /// The tokenizer's name, for `--jsonl` rows.
    tokenizer: String,
    entries: usize,
    /// The width of the bars of the tables, in characters (0: none).
    bars: usize,
}

/// How `stats` is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsStyle {
    /// Tables for people.
    Table,
    /// One JSON document (`--json`).
    Json,
    /// One [`StatsRow`](crate::stats::StatsRow) per conversation per line
    /// (`--jsonl`), no totals.
    Jsonl,
}

impl StatsWriter {
    /// Starts a report: `by_file` lists files (`"files"` in JSON) instead of
    /// conversations.
    pub fn begin<W: Write + ?Sized>(
        out: &mut W,
        tokenizer: &str,
        style: StatsStyle,
        by_file: bool,
    ) -> io::Result<StatsWriter> {
        let list = if by_file { "files" } else { "conversations" };
        if style == StatsStyle::Json {
            write!(
                out,
                "{{\n  \"tokenizer\": {},\n  \"{list}\": [",
                serde_json::Value::from(tokenizer)
            )?;
        }
        Ok(StatsWriter {
            style,
            tokenizer: tokenizer.to_string(),
            entries: 0,
            bars: 0,
        })
    }

    /// Draws a bar of at most `width` characters beside each role and tool
    /// of the tables: its share of the tokens.
    pub fn with_bars(mut self, width: usize) -> StatsWriter {
        self.bars = width;
        self
    }

    /// Writes one conversation's table or JSON object.
    pub fn conversation<W: Write + ?Sized>(
        &mut self,
        out: &mut W,
        c: &ConversationStats,
    ) -> io::Result<()> {
        match self.style {
            StatsStyle::Json => self.json_entry(out, c),
            StatsStyle::Jsonl => {
                serde_json::to_writer(&mut *out, &c.row(&self.tokenizer))?;
                out.write_all(b"\n")
            }
            StatsStyle::Table => {
                render_conversation(c, self.bars, out)?;
                writeln!(out)
            }
        }
    }

    /// Writes one file's table or JSON object (`--jsonl` has no file rows).
    pub fn file<W: Write + ?Sized>(&mut self, out: &mut W, f: &FileStats) -> io::Result<()> {
        match self.style {
            StatsStyle::Json => self.json_entry(out, f),
            StatsStyle::Jsonl => Ok(()),
            StatsStyle::Table => {
                render_file(f, self.bars, out)?;
                writeln!(out)
            }
        }
    }

    fn json_entry<W: Write + ?Sized>(&mut self, out: &mut W, v: &impl Serialize) -> io::Result<()> {
        let text = serde_json::to_string_pretty(v)?;
        out.write_all(if self.entries == 0 { b"\n" } else { b",\n" })?;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                out.write_all(b"\n")?;
            }
            write!(out, "    {line}")?;
        }
        self.entries += 1;
        Ok(())
    }

    /// Ends the report with the totals.
    pub fn finish<W: Write + ?Sized>(
        self,
        out: &mut W,
        tokenizer: &str,
        total: &Totals,
    ) -> io::Result<()> {
        if self.style == StatsStyle::Jsonl {
            return Ok(());
        }
        if self.style == StatsStyle::Json {
            if self.entries > 0 {
                out.write_all(b"\n  ]")?;
            } else {
                out.write_all(b"]")?;
            }
            let text = serde_json::to_string_pretty(total)?;
            out.write_all(b",\n  \"total\": ")?;
            for (i, line) in text.lines().enumerate() {
                if i > 0 {
                    write!(out, "\n  ")?;
                }
                out.write_all(line.as_bytes())?;
            }
            out.write_all(b"\n}\n")
        } else {
            render_total(total, tokenizer, out)
        }
    }
}

/// The counts of a `stats` total: `3 conversations, 40 messages, 1,725
/// tokens (o200k_base)`.
pub fn total_counts(t: &Totals, tokenizer: &str) -> String {
    format!(
        "{}, {}, {} tokens ({tokenizer})",
        plural(t.conversations, "conversation"),
        plural(t.messages, "message"),
        thousands(t.tokens)
    )
}

/// Invalid lines skipped, as the end of a total: `, 2 invalid lines
/// skipped` (nothing when none were).
pub fn skipped_suffix(lines: usize) -> String {
    if lines == 0 {
        String::new()
    } else {
        format!(", {} skipped", plural(lines, "invalid line"))
    }
}

fn render_total<W: Write + ?Sized>(t: &Totals, tokenizer: &str, out: &mut W) -> io::Result<()> {
    write!(out, "total: {}", total_counts(t, tokenizer))?;
    if t.opaque_bytes > 0 {
        write!(
            out,
            ", {} of opaque payloads (not tokens)",
            plural(t.opaque_bytes, "byte")
        )?;
    }
    out.write_all(skipped_suffix(t.skipped_lines).as_bytes())?;
    if let (Some(usd), Some(model)) = (t.input_usd, &t.model) {
        write!(out, ", {} as input to {model}", crate::models::dollars(usd))?;
        if let Some(logged) = t.logged_usd {
            write!(out, " ({} as logged)", crate::models::dollars(logged))?;
        }
    }
    writeln!(out)?;
    for p in &t.prices {
        writeln!(
            out,
            "prices: {}{}",
            p.source,
            if p.date.is_empty() {
                String::new()
            } else {
                format!(", {}", p.date)
            }
        )?;
    }
    Ok(())
}

/// The table shared by a conversation and a file: messages and tokens by
/// role, the total, tool calls and results, and results by tool.
struct Table<'a> {
    by_role: &'a std::collections::BTreeMap<String, Count>,
    messages: usize,
    tokens: usize,
    tool_calls: usize,
    tool_results: usize,
    images: usize,
    tool_results_by_tool: &'a std::collections::BTreeMap<String, Count>,
    opaque: &'a crate::stats::OpaqueByKind,
    /// The bars' width (0: none).
    bars: usize,
}

/// The most rows a timeline takes: longer conversations are drawn in
/// ranges of messages.
const TIMELINE_ROWS: usize = 24;

/// A conversation's cumulative tokens, one row per message or range of
/// messages, with the budget line and where `trim` would cut.
fn render_timeline<W: Write + ?Sized>(
    t: &crate::stats::Timeline,
    width: usize,
    out: &mut W,
) -> io::Result<()> {
    let n = t.cumulative.len();
    if n == 0 {
        return Ok(());
    }
    let total = t.cumulative[n - 1];
    let scale = total.max(t.budget.unwrap_or(0)).max(1);
    writeln!(out, "  timeline (tokens so far):")?;
    let step = n.div_ceil(TIMELINE_ROWS);
    let mut budget_drawn = false;
    let mut cut_drawn = false;
    let mut start = 0;
    while start < n {
        let end = (start + step).min(n);
        if let Some(k) = t.trim_keeps_from {
            if !cut_drawn && k < end {
                writeln!(
                    out,
                    "    {:<14}✂ trim --max-tokens {} keeps #{k} onward",
                    "",
                    thousands(t.budget.unwrap_or(0))
                )?;
                cut_drawn = true;
            }
        }
        let at = t.cumulative[end - 1];
        if let Some(b) = t.budget {
            if !budget_drawn && at > b {
                writeln!(out, "    {:<14}── budget {} ──", "", thousands(b))?;
                budget_drawn = true;
            }
        }
        let label = if end - start == 1 {
            format!("#{start}")
        } else {
            format!("#{start}–{}", end - 1)
        };
        writeln!(
            out,
            "    {label:<10}{:>11}  {}",
            thousands(at),
            bar(at, scale, width)
        )?;
        start = end;
    }
    Ok(())
}

/// An SVG chart of each conversation's cumulative tokens, with its budget
/// line and where `trim` would cut: one panel per conversation, stacked.
pub fn timeline_svg(conversations: &[(String, crate::stats::Timeline)]) -> String {
    const W: f64 = 720.0;
    const H: f64 = 220.0;
    const PAD: f64 = 48.0;
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let height = H * conversations.len().max(1) as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" \
         viewBox=\"0 0 {W} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (k, (title, t)) in conversations.iter().enumerate() {
        let top = H * k as f64;
        let n = t.cumulative.len();
        let total = t.cumulative.last().copied().unwrap_or(0);
        let scale = total.max(t.budget.unwrap_or(0)).max(1) as f64;
        let x = |i: usize| PAD + (W - 2.0 * PAD) * (i as f64 + 1.0) / (n.max(1) as f64);
        let y = |v: usize| top + H - PAD + -(H - 2.0 * PAD) * (v as f64 / scale);
        svg += &format!(
            "<g class=\"conversation\">\n<text x=\"{PAD}\" y=\"{}\">{} · {} messages · {} tokens</text>\n",
            top + 20.0,
            esc(title),
            n,
            thousands(total)
        );
        svg += &format!(
            "<line class=\"axis\" x1=\"{PAD}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#999\"/>\n",
            top + H - PAD,
            W - PAD
        );
        let points: Vec<String> = t
            .cumulative
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{:.1},{:.1}", x(i), y(v)))
            .collect();
        svg += &format!(
            "<polyline class=\"tokens\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>\n",
            points.join(" ")
        );
        if let Some(b) = t.budget {
            svg += &format!(
                "<line class=\"budget\" x1=\"{PAD}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n\
                 <text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\" fill=\"#d62728\">budget {3}</text>\n",
                y(b),
                W - PAD,
                y(b) - 4.0,
                thousands(b)
            );
        }
        if let Some(cut) = t.trim_keeps_from {
            let cx = x(cut) - (W - 2.0 * PAD) / (n.max(1) as f64);
            svg += &format!(
                "<line class=\"cut\" x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"#2ca02c\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#2ca02c\">trim keeps #{cut} onward</text>\n",
                top + PAD,
                top + H - PAD,
                cx + 4.0,
                top + PAD + 12.0
            );
        }
        svg += "</g>\n";
    }
    svg += "</svg>\n";
    svg
}

/// A bar of `part` out of `whole` in `width` characters, in eighths.
pub fn bar(part: usize, whole: usize, width: usize) -> String {
    const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    if width == 0 || whole == 0 {
        return String::new();
    }
    let eighths = (part as u128 * width as u128 * 8).div_ceil(whole as u128) as usize;
    let eighths = eighths.min(width * 8);
    let mut s = "█".repeat(eighths / 8);
    s += EIGHTHS[eighths % 8];
    s
}

fn render_table<W: Write + ?Sized>(t: &Table<'_>, out: &mut W) -> io::Result<()> {
    writeln!(out, "  {:<14}{:>9}{:>11}", "role", "messages", "tokens")?;
    for role in crate::transcript::Role::ALL {
        if let Some(n) = t.by_role.get(role.as_str()) {
            let b = bar(n.tokens, t.tokens, t.bars);
            writeln!(
                out,
                "  {:<14}{:>9}{:>11}{}",
                role.as_str(),
                thousands(n.messages),
                thousands(n.tokens),
                if b.is_empty() {
                    String::new()
                } else {
                    format!("  {b}")
                }
            )?;
        }
    }
    writeln!(
        out,
        "  {:<14}{:>9}{:>11}",
        "total",
        thousands(t.messages),
        thousands(t.tokens)
    )?;
    writeln!(
        out,
        "  tool calls: {}, tool results: {}, images: {}",
        thousands(t.tool_calls),
        thousands(t.tool_results),
        thousands(t.images)
    )?;
    for (name, n) in t.tool_results_by_tool {
        let b = bar(n.tokens, t.tokens, t.bars);
        writeln!(
            out,
            "    {:<24}{:>6} {:<8}{:>9} tokens{}",
            name,
            thousands(n.messages),
            if n.messages == 1 { "result" } else { "results" },
            thousands(n.tokens),
            if b.is_empty() {
                String::new()
            } else {
                format!("  {b}")
            }
        )?;
    }
    if !t.opaque.is_empty() {
        let kinds: Vec<String> = t
            .opaque
            .iter()
            .map(|(kind, o)| {
                format!(
                    "{} {}, {}",
                    thousands(o.payloads),
                    kind.replace('_', " "),
                    plural(o.bytes, "byte")
                )
            })
            .collect();
        writeln!(out, "  opaque (not tokens): {}", kinds.join(" · "))?;
    }
    Ok(())
}

fn render_file<W: Write + ?Sized>(f: &FileStats, bars: usize, out: &mut W) -> io::Result<()> {
    writeln!(
        out,
        "{} · {} · {}",
        f.source,
        plural(f.conversations, "conversation"),
        if f.format.is_empty() {
            "empty"
        } else {
            &f.format
        }
    )?;
    render_table(
        &Table {
            by_role: &f.by_role,
            messages: f.messages,
            tokens: f.tokens,
            tool_calls: f.tool_calls,
            tool_results: f.tool_results,
            images: f.images,
            tool_results_by_tool: &f.tool_results_by_tool,
            opaque: &f.opaque,
            bars,
        },
        out,
    )?;
    if f.skipped_lines > 0 {
        writeln!(
            out,
            "  skipped: {}",
            plural(f.skipped_lines, "invalid line")
        )?;
    }
    Ok(())
}

fn render_conversation<W: Write + ?Sized>(
    c: &ConversationStats,
    bars: usize,
    out: &mut W,
) -> io::Result<()> {
    writeln!(
        out,
        "{} · conversation {} · {}",
        c.source, c.index, c.format
    )?;
    render_table(
        &Table {
            by_role: &c.by_role,
            messages: c.messages,
            tokens: c.tokens,
            tool_calls: c.tool_calls,
            tool_results: c.tool_results,
            images: c.images,
            tool_results_by_tool: &c.tool_results_by_tool,
            opaque: &c.opaque,
            bars,
        },
        out,
    )?;
    if c.images > 0
        && (c.image_tokens != c.images * crate::tokens::IMAGE_TOKENS || c.images_estimated > 0)
    {
        let mut line = format!("  image tokens: {}", thousands(c.image_tokens));
        if c.images_estimated > 0 {
            line += &format!(
                " ({} of unknown size, charged the most)",
                plural(c.images_estimated, "image")
            );
        }
        writeln!(out, "{line}")?;
    }
    if let Some(t) = &c.timeline {
        render_timeline(t, bars.max(20), out)?;
    }
    if !c.heaviest.is_empty() {
        let list: Vec<String> = c
            .heaviest
            .iter()
            .map(|m| format!("#{} {} {}", m.index, m.role, thousands(m.tokens)))
            .collect();
        writeln!(out, "  heaviest: {}", list.join(" · "))?;
    }
    for note in &c.notes {
        writeln!(out, "  note: {note}")?;
    }
    render_next_call(c, out)?;
    if let Some(tools) = &c.tools {
        render_tools(tools, out)?;
    }
    if let Some(per) = &c.per_message {
        writeln!(out, "  per message:")?;
        for m in per {
            writeln!(
                out,
                "    #{:<6}{:<12}{:>9}",
                m.index,
                m.role,
                thousands(m.tokens)
            )?;
        }
    }
    Ok(())
}

/// The next call's needs (vision, window), its cost, and the usage logged.
fn render_next_call<W: Write + ?Sized>(c: &ConversationStats, out: &mut W) -> io::Result<()> {
    let r = &c.routing;
    writeln!(
        out,
        "  next call: {}, {} {}{} tokens",
        if r.needs_vision {
            "needs a vision model"
        } else {
            "text only"
        },
        match (&r.model, r.needs_large_context) {
            (Some(_), true) => "over the window of",
            (Some(_), false) => "within the window of",
            (None, true) => "needs a large context: over",
            (None, false) => "within",
        },
        r.model.as_ref().map_or(String::new(), |m| format!("{m}, ")),
        thousands(r.large_context)
    )?;
    if let Some(cost) = &c.cost {
        let mut line = match cost.input_usd {
            Some(usd) => format!(
                "  cost: {} to send it as input to {}",
                crate::models::dollars(usd),
                cost.model
            ),
            None => format!("  cost: no input price for {}", cost.model),
        };
        if let Some(usd) = cost.logged_usd {
            line += &format!("; the logged usage cost {}", crate::models::dollars(usd));
        }
        writeln!(out, "{line}")?;
    }
    if let Some(u) = &c.as_logged {
        let figures: Vec<String> = u
            .tokens
            .iter()
            .map(|(k, n)| format!("{k} {}", thousands(*n as usize)))
            .collect();
        let cost = u
            .cost_usd
            .map(|usd| format!(" · cost {}", crate::models::dollars(usd)))
            .unwrap_or_default();
        writeln!(
            out,
            "  as logged: {}{cost} ({}, {})",
            figures.join(" · "),
            u.source,
            plural(u.requests, "record")
        )?;
    }
    if let Some(f) = &c.billed_fit {
        let unused = f
            .implausible()
            .map(|why| format!("; not used for --budget-in billed: {why}"))
            .unwrap_or_default();
        writeln!(
            out,
            "  billed per call: {} + {:.2} × counted (fitted on {}, R² {:.2}; the fixed part is what each call sent that the log does not hold{unused})",
            thousands(f.fixed.round() as usize),
            f.ratio,
            plural(f.calls, "call"),
            f.r2
        )?;
    }
    Ok(())
}

/// `--tools`: every call, its arguments and its result's size.
fn render_tools<W: Write + ?Sized>(tools: &[crate::stats::ToolUse], out: &mut W) -> io::Result<()> {
    writeln!(out, "  tool calls in order:")?;
    for t in tools {
        let args = shorten(&t.arguments, 60);
        match (t.result_index, t.result_tokens, t.result_chars) {
            (Some(i), Some(tokens), Some(chars)) => writeln!(
                out,
                "    #{} {} {} → #{}, {} tokens, {} chars",
                t.message,
                t.name,
                args,
                i,
                thousands(tokens),
                thousands(chars)
            )?,
            _ => writeln!(out, "    #{} {} {} → no result", t.message, t.name, args)?,
        }
    }
    Ok(())
}

/// The first `max` characters of a one-line rendering of `s`, with `…`.
fn shorten(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        flat.chars().take(max - 1).chain(['…']).collect()
    }
}

/// What a conversation's report flags say is worth a warning: over budget,
/// a rule that could not hold, a summary that fell back to truncation, an
/// emptied conversation.
pub fn warnings(c: &ConversationReport) -> Vec<String> {
    let text = |key: &str| c.flags.get(key).and_then(|v| v.as_str());
    let mut out = Vec::new();
    if c.flags.get("over_budget") == Some(&serde_json::Value::Bool(true)) {
        let kept = c
            .flags
            .get("kept_tokens")
            .and_then(|v| v.as_u64())
            .map_or(c.after.tokens, |n| n as usize);
        out.push(format!(
            "over budget ({}): {} tokens kept",
            text("over_budget_reason").unwrap_or("kept over the budget"),
            thousands(kept)
        ));
    }
    if let Some(w) = text("warning") {
        out.push(w.to_string());
    }
    let kind = text("failure_kind").unwrap_or("failed");
    if let Some(reason) = text("fallback_reason") {
        out.push(format!(
            "older messages truncated (summarizer {kind}: {reason})"
        ));
    }
    if let (Some(reason), Some("keep")) = (text("summarize_failed"), text("on_failure")) {
        out.push(format!(
            "kept as it was, not summarized (summarizer {kind}: {reason})"
        ));
    }
    if let Some(reason) = text("emptied_reason") {
        out.push(format!("no messages left ({reason})"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    #[test]
    fn numbers_get_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(14200), "14,200");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn summary_line_reads_like_the_contract() {
        let conv = ConversationReport {
            source: "-".into(),
            index: 0,
            format: "openai".into(),
            before: Count {
                messages: 20,
                tokens: 14200,
            },
            after: Count {
                messages: 11,
                tokens: 7950,
            },
            notes: Vec::new(),
            lost: Vec::new(),
            steps: Vec::new(),
            changes: (0..9)
                .map(|i| Change::new(i, Action::Removed, "over budget"))
                .collect(),
            flags: Map::new(),
            delta: None,
        };
        let r = TransformReport::new("trim", "o200k_base", vec![conv], 0);
        assert_eq!(
            r.summary(),
            "ctxclean trim: 1 conversation, 14,200 → 7,950 tokens, 9 messages removed"
        );
    }

    #[test]
    fn bars_are_shares_in_eighths() {
        assert_eq!(bar(1, 2, 10), "█████");
        assert_eq!(bar(1, 2, 1), "▌");
        assert_eq!(bar(0, 10, 10), "");
        assert_eq!(bar(10, 10, 4), "████");
        assert_eq!(bar(5, 0, 4), "");
        assert_eq!(bar(1, 1000, 20), "▏", "a sliver still shows");
    }

    #[test]
    fn one_item_reads_singular() {
        assert_eq!(singular("tool messages", 1), "tool message");
        assert_eq!(singular("tool messages", 2), "tool messages");
        assert_eq!(
            singular("empty assistants removed", 1),
            "empty assistant removed"
        );
        assert_eq!(
            singular("messages not addressed to this agent", 1),
            "message not addressed to this agent"
        );
        assert_eq!(singular("tool_calls stripped", 1), "tool_call stripped");
        assert_eq!(count(1u64, "row"), "1 row");
        assert_eq!(count(0u64, "row"), "0 rows");
        assert_eq!(count(1234u64, "line"), "1234 lines");
    }

    #[test]
    fn shorten_keeps_one_line() {
        assert_eq!(shorten("{\n  \"a\": 1\n}", 20), "{ \"a\": 1 }");
        assert_eq!(shorten("abcdef", 4), "abc…");
    }
}
