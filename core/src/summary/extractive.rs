//! The offline summary engine: deterministic, no model.
//!
//! The older messages are grouped into turns (a user message and everything
//! up to the next one). Each turn becomes one line:
//!
//! ```text
//! - User: <the request> | Assistant: <the answer> | Tools: sql_query → 50 rows | Keys: src/db.rs, 247
//! ```
//!
//! - the request: the user's first sentence and every question, cleaned of
//!   markdown and with code blocks replaced by `[code: N lines]`;
//! - the answer: the first sentence of the turn's last assistant text, and
//!   every sentence that states a decision or result (`decided`, `will`,
//!   `fixed`, `the answer is`, …), from any assistant message of the turn;
//! - tools: each tool's result as its `[Tool: …]` description heads it
//!   (`50 rows`, `error`);
//! - keys: file paths, URLs, e-mail addresses, code spans, identifiers
//!   (`snake_case`, `camelCase`) and numbers, copied exactly, from what the
//!   user and the assistant wrote.
//!
//! The lines are built as long as the budget allows: if they exceed
//! `--max-summary-tokens`, they are rebuilt shorter (fewer sentences,
//! characters and keys), and as a last resort the oldest lines give way to a
//! `- (N earlier turns omitted)` line. With a summary so far (a rolling
//! summary), its lines come first and are the first to give way.

use super::{Engine, EngineError, Entry, Request};
use crate::tokens::Tokenizer;
use crate::transcript::Role;

/// The offline engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extractive;

impl Engine for Extractive {
    fn name(&self) -> &str {
        "extractive"
    }

    fn model(&self) -> &str {
        ""
    }

    fn summarize(&self, request: &Request<'_>) -> Result<String, EngineError> {
        Ok(summarize(
            request.previous,
            request.entries,
            request.max_summary_tokens,
            request.tokenizer,
        ))
    }
}

/// How much of a turn a line shows.
#[derive(Clone, Copy)]
struct Level {
    ask_chars: usize,
    answer_chars: usize,
    keys: usize,
    tools: usize,
    /// Agent steps listed under a turn (the most recent ones).
    steps: usize,
    step_chars: usize,
}

const LEVELS: [Level; 4] = [
    Level {
        ask_chars: 300,
        answer_chars: 400,
        keys: 12,
        tools: 6,
        steps: 16,
        step_chars: 100,
    },
    Level {
        ask_chars: 160,
        answer_chars: 220,
        keys: 6,
        tools: 3,
        steps: 8,
        step_chars: 60,
    },
    Level {
        ask_chars: 90,
        answer_chars: 120,
        keys: 3,
        tools: 2,
        steps: 0,
        step_chars: 0,
    },
    Level {
        ask_chars: 60,
        answer_chars: 80,
        keys: 2,
        tools: 1,
        steps: 0,
        step_chars: 0,
    },
];

/// Words that mark a sentence as a decision or result worth keeping.
const DECISION_CUES: &[&str] = &[
    "decided",
    "decide",
    "agreed",
    "we will",
    "we'll",
    "i will",
    "i'll",
    "let's",
    "going to",
    "the answer is",
    "the result is",
    "conclusion",
    "therefore",
    "recommend",
    "should",
    "must",
    "fixed",
    "created",
    "updated",
    "changed",
    "renamed",
    "deleted",
    "added",
    "removed",
    "saved",
    "wrote",
    "written",
    "installed",
    "merged",
    "committed",
    "found",
    "failed",
    "succeeded",
    "done",
    "next",
    "total",
];

/// A turn: what the user asked and what followed.
#[derive(Default)]
struct Turn<'a> {
    ask: Option<&'a str>,
    answers: Vec<&'a str>,
    tools: Vec<(String, String)>,
}

/// What a turn's line is made of, worked out once (every level of detail
/// draws on it).
struct Analysed {
    /// The user's sentences, when the turn has a user message.
    ask: Option<Vec<String>>,
    /// The sentences of each assistant message.
    answers: Vec<Vec<String>>,
    /// Tool names and the heads of their results.
    tools: Vec<(String, String)>,
    /// Keys in the user's and the assistant's text, in order, repeats included.
    keys: Vec<String>,
    /// Agent steps: what the assistant said (its first sentence of three
    /// words or more), and the calls it made.
    steps: Vec<(Option<String>, String)>,
}

impl Analysed {
    fn new(turn: Turn<'_>) -> Analysed {
        let mut keys = Vec::new();
        if let Some(ask) = turn.ask {
            keys.extend(extract_keys(&without_images(ask)));
        }
        for a in &turn.answers {
            keys.extend(extract_keys(&without_images(a)));
        }
        let answers: Vec<Vec<String>> = turn.answers.iter().map(|a| sentences(a)).collect();
        let steps = turn
            .answers
            .iter()
            .zip(&answers)
            .filter_map(|(text, said)| step_of(text, said))
            .collect();
        Analysed {
            ask: turn.ask.map(sentences),
            answers,
            tools: turn.tools,
            keys,
            steps,
        }
    }
}

/// Summarizes `entries` (after the lines of `previous`) within `max_tokens`.
pub fn summarize(
    previous: Option<&str>,
    entries: &[Entry],
    max_tokens: usize,
    tok: &Tokenizer,
) -> String {
    summarize_with(previous, entries, max_tokens, tok, true)
}

/// [`summarize`]; `shortcut: false` works out every line at every level
/// even when they cannot all fit (the tests compare the two).
fn summarize_with(
    previous: Option<&str>,
    entries: &[Entry],
    max_tokens: usize,
    tok: &Tokenizer,
    shortcut: bool,
) -> String {
    let turns = group(entries);
    let (mut omitted, old_lines) = previous.map(parse_previous).unwrap_or_default();
    // Counting stops as soon as the budget is passed: a long conversation's
    // lines at full detail are many times the budget.
    let fits = |lines: &[String], omitted: usize| {
        tok.count_text_within(&join(lines, omitted), max_tokens)
            .is_some()
    };
    // A turn with a request is a line starting `User:`, a token at least
    // (a word starts a token of its own). With more than twice the budget of
    // them, no level of detail fits every line: only the newest lines are
    // worked out, at the shortest level, as far as they are needed.
    let asks = turns.iter().filter(|t| t.ask.is_some()).count();
    let mut newest = if shortcut && asks > max_tokens.saturating_mul(2) {
        Newest::lazy(old_lines, turns)
    } else {
        let analysed: Vec<Analysed> = turns.into_iter().map(Analysed::new).collect();
        let mut lines = Vec::new();
        for level in LEVELS {
            lines = old_lines.clone();
            lines.extend(analysed.iter().map(|t| line(t, level)));
            if fits(&lines, omitted) {
                return join(&lines, omitted);
            }
        }
        Newest::built(lines)
    };
    // Still too long at the shortest level: the oldest lines give way, as
    // few as can. The newest lines are counted one by one, back to where
    // they stop fitting, to find about where the rest fits (a text's tokens
    // are at most its lines' tokens and newlines); the exact count then
    // decides, on texts about the budget's size.
    let total = newest.total;
    let mut from = total;
    let mut sum = 0;
    while from > 0 {
        let cost = tok.count_text(&newest.from(from - 1)[0]) + 1;
        if sum + cost > max_tokens {
            break;
        }
        from -= 1;
        sum += cost;
    }
    while from < total && !fits(newest.from(from), omitted + from) {
        from += 1;
    }
    while from > 0 && fits(newest.from(from - 1), omitted + from - 1) {
        from -= 1;
    }
    omitted += from;
    let text = join(newest.from(from), omitted);
    super::cut_to(&text, max_tokens, tok)
}

/// The lines of a summary at the shortest level of detail: the previous
/// summary's lines, then one per turn. Built all at once, or from the
/// newest back as far as they are asked for.
struct Newest<'a> {
    old: Vec<String>,
    turns: Vec<Turn<'a>>,
    /// How many lines there are in all.
    total: usize,
    /// The lines built: the last `lines.len()` of them, in order.
    lines: Vec<String>,
}

impl<'a> Newest<'a> {
    fn built(lines: Vec<String>) -> Newest<'a> {
        Newest {
            old: Vec::new(),
            turns: Vec::new(),
            total: lines.len(),
            lines,
        }
    }

    fn lazy(old: Vec<String>, turns: Vec<Turn<'a>>) -> Newest<'a> {
        Newest {
            total: old.len() + turns.len(),
            old,
            turns,
            lines: Vec::new(),
        }
    }

    /// The lines from the `k`th on.
    fn from(&mut self, k: usize) -> &[String] {
        let first = self.total - self.lines.len();
        if k < first {
            // Built in batches that at least double what is built, so that
            // putting them before the others stays linear; the extra lines
            // are at most as many as were asked for.
            let lo = k.saturating_sub(self.lines.len());
            let shortest = LEVELS[LEVELS.len() - 1];
            let mut batch = Vec::with_capacity(self.total - lo);
            for i in lo..first {
                batch.push(match i.checked_sub(self.old.len()) {
                    None => self.old[i].clone(),
                    Some(t) => line(&Analysed::new(std::mem::take(&mut self.turns[t])), shortest),
                });
            }
            batch.append(&mut self.lines);
            self.lines = batch;
        }
        &self.lines[k - (self.total - self.lines.len())..]
    }
}

fn join(lines: &[String], omitted: usize) -> String {
    let mut out = String::new();
    if omitted > 0 {
        out.push_str(&format!(
            "- ({omitted} earlier {} omitted)",
            if omitted == 1 { "turn" } else { "turns" }
        ));
    }
    for l in lines {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l);
    }
    out
}

/// The lines of a summary so far, and how many turns it already omitted.
fn parse_previous(previous: &str) -> (usize, Vec<String>) {
    let mut omitted = 0;
    let mut lines: Vec<String> = Vec::new();
    for l in previous.lines().filter(|l| !l.trim().is_empty()) {
        let count = l
            .strip_prefix("- (")
            .and_then(|r| r.split_once(" earlier turn"))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        match (count, lines.last_mut()) {
            (Some(n), _) => omitted += n,
            // A step under a turn stays with its turn.
            (None, Some(block)) if l.starts_with("  ") => {
                block.push('\n');
                block.push_str(l);
            }
            (None, _) => lines.push(l.to_string()),
        }
    }
    (omitted, lines)
}

fn group(entries: &[Entry]) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for e in entries {
        if e.role == Role::User {
            turns.push(Turn {
                ask: Some(&e.text),
                ..Turn::default()
            });
            continue;
        }
        if turns.is_empty() {
            turns.push(Turn::default());
        }
        let turn = turns.last_mut().expect("a turn was pushed");
        if e.role.is_result() {
            let name = e.name.clone().unwrap_or_else(|| "tool".to_string());
            turn.tools.push((name, tool_head(&e.text)));
        } else {
            turn.answers.push(&e.text);
        }
    }
    turns
}

/// The head of a `[Tool: …]` description: `50 rows`, `error`, `object {a, b}`.
fn tool_head(text: &str) -> String {
    let inner = text.strip_prefix("[Tool: ").unwrap_or(text);
    let end = inner
        .find(" | ")
        .or_else(|| inner.find(']'))
        .unwrap_or(inner.len());
    cut(&inner[..end], 40)
}

fn line(turn: &Analysed, level: Level) -> String {
    let mut parts = Vec::new();
    let mut shown = String::new();
    if let Some(ask) = &turn.ask {
        let request = request_of(ask, level.ask_chars);
        parts.push(format!("User: {request}"));
        shown.push_str(&request);
    }
    let list_steps = level.steps > 0 && turn.steps.len() >= 2;
    // Listed steps say what happened on the way; the answer is then the
    // last message's alone.
    let answer = if list_steps {
        answer_of(&turn.answers[turn.answers.len() - 1..], level.answer_chars)
    } else {
        answer_of(&turn.answers, level.answer_chars)
    };
    if !answer.is_empty() {
        parts.push(format!("Assistant: {answer}"));
        shown.push_str(&answer);
    }
    // Keys the line already shows are not repeated; the most specific
    // (URLs, paths, code, names) come before numbers.
    let mut keys = turn.keys.clone();
    keys.retain(|k| !contains_word(&shown, k));
    keys.sort_by_key(|k| key_rank(k));
    if !turn.tools.is_empty() && level.tools > 0 {
        let mut shown: Vec<String> = turn
            .tools
            .iter()
            .take(level.tools)
            .map(|(name, head)| format!("{name} → {head}"))
            .collect();
        if turn.tools.len() > level.tools {
            shown.push(format!("{} more", turn.tools.len() - level.tools));
        }
        parts.push(format!("Tools: {}", shown.join("; ")));
    }
    let mut seen = std::collections::HashSet::new();
    keys.retain(|k| seen.insert(k.clone()));
    keys.truncate(level.keys);
    if !keys.is_empty() {
        parts.push(format!("Keys: {}", keys.join(", ")));
    }
    if parts.is_empty() {
        parts.push("(no text)".to_string());
    }
    let mut out = format!("- {}", parts.join(" | "));
    // An agent loop: list its steps (the most recent ones), each with what
    // the assistant said and the tools it called.
    if list_steps {
        let skip = turn.steps.len().saturating_sub(level.steps);
        if skip > 0 {
            out.push_str(&format!("\n  - ({skip} earlier steps)"));
        }
        for (said, calls) in &turn.steps[skip..] {
            out.push_str("\n  - ");
            match said {
                Some(s) => out.push_str(&format!("{} → {calls}", cut(s, level.step_chars))),
                None => out.push_str(&format!("→ {calls}")),
            }
        }
    }
    out
}

/// One agent step, for an assistant message that called tools: its first
/// sentence of three words or more (from `said`, the message's sentences),
/// and `tool(first argument)` per call.
fn step_of(text: &str, said: &[String]) -> Option<(Option<String>, String)> {
    let calls: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[called "))
        .map(|c| {
            let (name, args) = c.split_once('(').unwrap_or((c, ""));
            let arg = first_string_value(args).unwrap_or_default();
            format!("{name}({})", cut(&arg, 40))
        })
        .collect();
    if calls.is_empty() {
        return None;
    }
    let said = said
        .iter()
        .find(|s| s.split_whitespace().count() >= 3)
        .cloned();
    Some((said, calls.join(", ")))
}

/// The first string value in (possibly cut) JSON arguments, whitespace
/// collapsed: `{"path": "src/a.rs", …}` gives `src/a.rs`.
fn first_string_value(args: &str) -> Option<String> {
    let start = args
        .find(": \"")
        .map(|i| i + 3)
        .or_else(|| args.find(":\"").map(|i| i + 2))?;
    let rest = &args[start..];
    let mut out = String::new();
    let mut escaped = false;
    for c in rest.chars() {
        match (escaped, c) {
            (true, 'n') => {
                out.push(' ');
                escaped = false;
            }
            (true, c) => {
                out.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, '"') => break,
            (false, c) => out.push(c),
        }
    }
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    (!out.is_empty()).then_some(out)
}

/// A text without its `[image: …]` placeholders (their media types are not keys).
fn without_images(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[image: ") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find(']')
            .map_or("", |end| &rest[start + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// The user's request: the first sentence and every question.
fn request_of(sentences: &[String], max: usize) -> String {
    let picked: Vec<&str> = sentences
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || s.ends_with('?'))
        .map(|(_, s)| s.as_str())
        .collect();
    fit(&picked, max)
}

/// The answer: the first sentence of the last assistant text, and every
/// sentence stating a decision or a result.
fn answer_of(answers: &[Vec<String>], max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let Some(last) = answers.iter().rev().find(|a| !a.is_empty()) else {
        return String::new();
    };
    // The first sentence that says something ("Yes." does not, alone).
    let first = last
        .iter()
        .find(|s| s.split_whitespace().count() >= 3)
        .or(last.first());
    let mut picked: Vec<String> = first.into_iter().cloned().collect();
    let mut seen: std::collections::HashSet<&str> = first.map(String::as_str).into_iter().collect();
    for a in answers {
        for s in a {
            if decision(s) && seen.insert(s) {
                picked.push(s.clone());
            }
        }
    }
    let refs: Vec<&str> = picked.iter().map(String::as_str).collect();
    fit(&refs, max)
}

/// Whether a sentence states a decision or a result: one of the
/// [`DECISION_CUES`] as whole words, in any case, found in one pass.
fn decision(sentence: &str) -> bool {
    use regex_automata::meta::Regex;
    static CUES: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        let words: Vec<String> = DECISION_CUES
            .iter()
            .map(|c| regex_syntax_escape(c))
            .collect();
        Regex::new(&format!(r"(?i)\b(?:{})\b", words.join("|"))).expect("a valid pattern")
    });
    CUES.is_match(sentence)
}

/// `s` with the regex metacharacters escaped.
fn regex_syntax_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

fn contains_word(haystack: &str, word: &str) -> bool {
    haystack.match_indices(word).any(|(i, _)| {
        let before = haystack[..i].chars().next_back();
        let after = haystack[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Sentences joined while they fit in `max` characters; the first is cut to
/// fit when alone it is too long.
fn fit(sentences: &[&str], max: usize) -> String {
    let mut out = String::new();
    for s in sentences {
        let extra = s.chars().count() + usize::from(!out.is_empty());
        if out.chars().count() + extra <= max {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(s);
        } else if out.is_empty() {
            out = cut(s, max);
            break;
        }
    }
    out
}

/// The sentences of a text, cleaned: code blocks become `[code: N lines]`,
/// tool-call lines and markdown markers go, whitespace collapses.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = 0usize;
    let mut code_lines = 0usize;
    for raw in text.lines() {
        let l = raw.trim();
        if l.starts_with("```") {
            if in_code > 0 {
                out.push(format!("[code: {code_lines} lines]"));
                in_code = 0;
            } else {
                in_code = 1;
                code_lines = 0;
            }
            continue;
        }
        if in_code > 0 {
            code_lines += 1;
            continue;
        }
        if l.starts_with("[called ") || l.is_empty() {
            continue;
        }
        let l = l.trim_start_matches(['#', '>', '*', '-', '•']).trim_start();
        let l = strip_list_number(l);
        let mut start = 0;
        let chars: Vec<(usize, char)> = l.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            let next_is_space = chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace());
            if matches!(c, '.' | '?' | '!') && next_is_space && !is_abbreviation(&l[start..i]) {
                push_sentence(&mut out, &l[start..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        push_sentence(&mut out, &l[start..]);
    }
    if in_code > 0 {
        out.push(format!("[code: {code_lines} lines]"));
    }
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().any(char::is_alphanumeric) {
        out.push(s);
    }
}

/// Whether a sentence so far ends in an abbreviation (`e.g`, `Dr`, `v1`),
/// whose dot does not end it.
fn is_abbreviation(before: &str) -> bool {
    let last = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let lower = last.to_lowercase();
    matches!(
        lower.as_str(),
        "e.g" | "i.e" | "etc" | "vs" | "mr" | "mrs" | "dr" | "no" | "fig" | "approx"
    ) || (last.len() <= 2 && last.chars().all(|c| c.is_ascii_digit()))
}

fn strip_list_number(l: &str) -> &str {
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 3 {
        if let Some(rest) = l[digits..].strip_prefix(". ") {
            return rest;
        }
        if let Some(rest) = l[digits..].strip_prefix(") ") {
            return rest;
        }
    }
    l
}

/// The first `n` characters, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars()
            .take(n.saturating_sub(1))
            .chain(['…'])
            .collect::<String>()
    }
}

/// File paths, URLs, e-mail addresses, code spans, identifiers and numbers
/// in a text, in order of appearance, each once.
pub fn extract_keys<'a>(text: &'a str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    // Each key once, in the order met: found by a set, not a search of the
    // list for each word (quadratic in a text of many distinct keys).
    let mut seen: crate::memo::FastSet<&str> = crate::memo::FastSet::default();
    let mut push = |k: &'a str| {
        if seen.insert(k) {
            keys.push(k.to_string());
        }
    };
    // Code spans first: `like_this()`.
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        if after.starts_with("``") {
            // A fence: skip to its end.
            rest = after
                .find("```")
                .map(|e| &after[e + 3..])
                .and_then(|r| r.find("```").map(|e| &r[e + 3..]))
                .unwrap_or("");
            continue;
        }
        match after.find('`') {
            Some(end) => {
                let span = after[..end].trim();
                if !span.is_empty() && span.chars().count() <= 60 && !span.contains('\n') {
                    push(span);
                }
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    for word in text.split_whitespace() {
        let w = word.trim_matches(|c: char| {
            matches!(
                c,
                '"' | '\''
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '<'
                    | '>'
                    | ','
                    | ';'
                    | '!'
                    | '?'
                    | '*'
                    | '`'
            )
        });
        let w = w.trim_end_matches([':', '.']);
        if w.is_empty() || w.chars().count() > 100 {
            continue;
        }
        if is_url(w) || is_email(w) || is_path(w) || is_identifier(w) || is_number(w) {
            push(w);
        }
    }
    keys
}

/// The order keys are listed in: URLs and paths, then addresses and code,
/// then names, then numbers.
fn key_rank(k: &str) -> u8 {
    if is_url(k) || is_path(k) {
        0
    } else if is_email(k) || k.contains(['(', ' ', '=']) {
        1
    } else if is_number(k) {
        3
    } else {
        2
    }
}

fn is_url(w: &str) -> bool {
    (w.starts_with("http://") || w.starts_with("https://")) && w.len() > 10
}

fn is_email(w: &str) -> bool {
    match w.split_once('@') {
        Some((user, host)) => {
            !user.is_empty()
                && host.contains('.')
                && !host.ends_with('.')
                && user
                    .chars()
                    .all(|c| c.is_alphanumeric() || "._+-".contains(c))
        }
        None => false,
    }
}

fn is_path(w: &str) -> bool {
    if w.contains("://") {
        return false;
    }
    let path_chars = w
        .chars()
        .all(|c| c.is_alphanumeric() || "/\\._-~:@+".contains(c));
    if !path_chars || !w.chars().any(char::is_alphabetic) {
        return false;
    }
    if w.contains("\\n") || w.contains("\\t") {
        return false; // escaped JSON text, not a path
    }
    if (w.contains('/') || w.contains('\\')) && w.len() > 2 && !w.contains("//") {
        let segments: Vec<&str> = w.split(['/', '\\']).filter(|s| !s.is_empty()).collect();
        let has_ext = segments.last().is_some_and(|last| has_extension(last));
        return has_ext
            || segments.len() >= 3
            || w.starts_with('/') && !segments.is_empty()
            || w.starts_with("~/")
            || w.starts_with("./")
            || w.starts_with("../");
    }
    has_extension(w)
}

/// `name.ext` with a lowercase extension of 1–7 characters.
fn has_extension(w: &str) -> bool {
    match w.rsplit_once('.') {
        Some((stem, ext)) => {
            stem.chars().count() >= 2
                && !stem.chars().all(|c| c.is_ascii_digit() || c == '.')
                && (1..=7).contains(&ext.len())
                && ext
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && ext.chars().any(|c| c.is_ascii_lowercase())
        }
        None => false,
    }
}

fn is_identifier(w: &str) -> bool {
    let word_chars = w
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':');
    if !word_chars
        || w.len() < 3
        || !w
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    {
        return false;
    }
    let snake = w.contains('_') && w.chars().any(char::is_alphabetic);
    let camel = w
        .chars()
        .zip(w.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    let call = w.contains("::");
    snake || camel || call
}

fn is_number(w: &str) -> bool {
    let digits = w.chars().filter(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let body = w.trim_start_matches(['$', '€', '£', '#', '+', '-', 'v']);
    let body = body.trim_end_matches(['%', 'k', 'K', 'M', 'G', 'B', 's', 'x']);
    let numeric = !body.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || ".,:-/".contains(c))
        && body.starts_with(|c: char| c.is_ascii_digit());
    let units = ["ms", "MB", "GB", "KB", "kB", "px", "h", "min"]
        .iter()
        .any(|u| {
            w.strip_suffix(u)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        });
    (numeric || units) && (digits >= 2 || w.len() > digits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn e(role: Role, text: &str) -> Entry {
        Entry {
            role,
            name: None,
            text: text.into(),
        }
    }

    fn tool(name: &str, text: &str) -> Entry {
        Entry {
            role: Role::Tool,
            name: Some(name.into()),
            text: text.into(),
        }
    }

    #[test]
    fn keys_are_exact() {
        let keys = extract_keys(
            "Open src/main.rs and https://example.com/a?b=1, then call `parse_args()`. \
             Set max_tokens to 4096 (about 12.5%), mail ops@example.org; see README.md, e.g. 1 or 2. \
             The HttpClient costs $1,200.",
        );
        for k in [
            "src/main.rs",
            "https://example.com/a?b=1",
            "parse_args()",
            "max_tokens",
            "4096",
            "12.5%",
            "ops@example.org",
            "README.md",
            "HttpClient",
            "$1,200",
        ] {
            assert!(keys.contains(&k.to_string()), "{k} missing from {keys:?}");
        }
        assert_eq!(
            without_images("see [image: image/png, 70 bytes] and [image: x]"),
            "see  and "
        );
        for k in ["e.g", "1", "2", "Open", "The"] {
            assert!(!keys.contains(&k.to_string()), "{k} in {keys:?}");
        }
    }

    #[test]
    fn sentences_skip_code_and_markdown() {
        let s = sentences(
            "## Plan\n1. First we read it. Then, e.g. parse it!\n```rust\nfn a() {}\nfn b() {}\n```\n- Done?",
        );
        assert_eq!(
            s,
            [
                "Plan",
                "First we read it.",
                "Then, e.g. parse it!",
                "[code: 2 lines]",
                "Done?"
            ]
        );
    }

    #[test]
    fn one_line_per_turn_with_asks_answers_tools_and_keys() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let entries = [
            e(
                Role::User,
                "How many orders shipped in March? Use the orders table in db/shop.sqlite.",
            ),
            e(
                Role::Assistant,
                "Let me check.\n[called sql_query({\"q\":\"select …\"})]",
            ),
            tool("sql_query", "[Tool: 247 rows | {\"id\": 1}]"),
            e(
                Role::Assistant,
                "247 orders shipped in March. I decided to exclude refunds. More detail follows here.",
            ),
            e(Role::User, "Write it to reports/march.csv please."),
            e(Role::Assistant, "Saved reports/march.csv."),
        ];
        let out = summarize(None, &entries, 1000, &tok);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with("- User: How many orders shipped in March?"));
        assert!(lines[0]
            .contains("Assistant: 247 orders shipped in March. I decided to exclude refunds."));
        assert!(!lines[0].contains("More detail"));
        assert!(lines[0].contains("Tools: sql_query → 247 rows"));
        assert!(lines[0].ends_with("| Keys: db/shop.sqlite"), "{}", lines[0]);
        assert!(!lines[0].contains("called"));
        assert!(lines[1].contains("reports/march.csv"));
        // Deterministic.
        assert_eq!(summarize(None, &entries, 1000, &tok), out);
    }

    #[test]
    fn budget_shortens_then_drops_the_oldest() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut entries = Vec::new();
        for i in 0..200 {
            entries.push(e(
                Role::User,
                &format!("Question number {i} about file_{i}.txt and a long tail of words to make it longer than a line should be in a summary."),
            ));
            entries.push(e(
                Role::Assistant,
                &format!(
                    "Answer {i}: it is fine. We will move on to the next file now, which is fine."
                ),
            ));
        }
        for budget in [2000, 300, 40] {
            let out = summarize(None, &entries, budget, &tok);
            assert!(tok.count_text(&out) <= budget, "{budget}: {out}");
        }
        let out = summarize(None, &entries, 300, &tok);
        assert!(out.starts_with("- ("), "{out}");
        assert!(out.contains("Question number 199"), "the newest stay");
    }

    #[test]
    fn working_out_only_the_newest_lines_changes_nothing() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut entries = Vec::new();
        for i in 0..300 {
            entries.push(e(
                Role::User,
                &format!(
                    "Q{i}: please read src/m{i}.rs, lib/k{i}.py and docs/d{i}.md \
                     carefully and tell me in detail what each of them does and why"
                ),
            ));
            if i % 3 == 0 {
                entries.push(tool("grep", &format!("[Tool: {i} rows]")));
            }
            entries.push(e(
                Role::Assistant,
                &format!("A{i}. Fixed it in src/m{i}.rs."),
            ));
        }
        let previous = "- (4 earlier turns omitted)\n- User: old | Keys: a.rs";
        for budget in [3, 10, 40, 149] {
            for prev in [None, Some(previous)] {
                let fast = summarize_with(prev, &entries, budget, &tok, true);
                let full = summarize_with(prev, &entries, budget, &tok, false);
                assert_eq!(fast, full, "budget {budget}");
                assert!(tok.count_text(&fast) <= budget, "{budget}: {fast}");
            }
        }
    }

    #[test]
    fn rolling_summary_appends_and_counts_omitted_turns() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let previous = "- (3 earlier turns omitted)\n- User: old question";
        let out = summarize(
            Some(previous),
            &[e(Role::User, "New question?")],
            1000,
            &tok,
        );
        assert_eq!(
            out,
            "- (3 earlier turns omitted)\n- User: old question\n- User: New question?"
        );
        let want = "- (4 earlier turns omitted)\n- User: New question?";
        let budget = tok.count_text(want);
        let out = summarize(
            Some(previous),
            &[e(Role::User, "New question?")],
            budget,
            &tok,
        );
        assert_eq!(out, want);
    }
}
