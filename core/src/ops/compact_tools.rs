//! `ctxclean compact-tools`: replace heavy tool results with faithful,
//! computed metadata (`[Tool: 247 rows | {...}]`) instead of letting a model
//! paraphrase data. A result is replaced, never removed, so tool pairs stay
//! intact; the last K results are never touched.
//!
//! Works on one conversation at a time.

use serde_json::{Map, Value};

use super::Outcome;
use crate::changes::{Action, Change};
use crate::format::open_webui::unescape;
use crate::memo::FastMap;
use crate::numbers::count;
use crate::pairs::Pairing;
use crate::tokens::Tokenizer;
use crate::transcript::{Content, Conversation, Image, Message, PartKind};

/// What `compact-tools` compacts.
#[derive(Clone, Debug)]
pub struct CompactSpec {
    /// Compact candidates larger than this many tokens.
    pub max_result_tokens: usize,
    /// Then compact the oldest candidates while all results together exceed this.
    pub max_total_tokens: Option<usize>,
    /// The most recent results that are never compacted.
    pub keep_last: usize,
    /// Tools whose results are never compacted.
    pub exclude_tools: Vec<String>,
    /// When set, only these tools' results are compacted.
    pub only_tools: Option<Vec<String>>,
    /// Do nothing unless the conversation has more tokens than this.
    pub trigger_tokens: Option<usize>,
    /// Do nothing unless compaction saves at least this many tokens.
    pub clear_at_least: Option<usize>,
    /// Cut every string longer than this inside every result (recent ones too).
    pub truncate_items: Option<usize>,
    /// How much of a text result the description shows.
    pub preview_chars: usize,
    /// Replace large argument values of compacted results' calls with `"[cleared]"`.
    pub clear_inputs: bool,
}

impl Default for CompactSpec {
    fn default() -> Self {
        CompactSpec {
            max_result_tokens: 256,
            max_total_tokens: None,
            keep_last: 3,
            exclude_tools: Vec::new(),
            only_tools: None,
            trigger_tokens: None,
            clear_at_least: None,
            truncate_items: None,
            preview_chars: 200,
            clear_inputs: false,
        }
    }
}

/// Argument values longer than this (as JSON) are cleared by `--clear-inputs`.
const LARGE_ARGUMENT: usize = 64;
/// Strings in a sample row longer than this are cut with `…`.
const ROW_STRING: usize = 60;
/// Keys that hold the rows of an object result.
const ROW_KEYS: &[&str] = &[
    "results",
    "rows",
    "data",
    "items",
    "records",
    "hits",
    "documents",
    "entries",
    "values",
];

/// Applies `compact-tools` to one conversation.
pub fn compact_tools(conv: Conversation, spec: &CompactSpec, tok: &Tokenizer) -> Outcome {
    let mut conv = conv;
    if spec
        .trigger_tokens
        .is_some_and(|n| tok.count_conversation(&conv) <= n)
    {
        return Outcome::new(conv, Vec::new());
    }
    let Chosen {
        results,
        before,
        compacted,
        not_smaller,
        names,
        call_of,
    } = choose(&conv.messages, spec, tok);
    let mut changes = Vec::new();
    let mut clear_calls = Vec::new();
    let msgs = &mut conv.messages;
    let mut is_compacted = vec![false; msgs.len()];
    // Each result's tokens now: as counted before, and for those replaced,
    // their description's (counted once, when it was chosen).
    let mut after = before.iter().sum::<usize>();
    for Compacted {
        index: i,
        rule,
        message: new,
        before: before_tokens,
        after: after_tokens,
    } in compacted
    {
        is_compacted[i] = true;
        after = after - before_tokens + after_tokens;
        msgs[i] = new;
        changes.push(result_change(
            &msgs[i],
            i,
            rule,
            &names[i],
            before_tokens,
            after_tokens,
        ));
        if spec.clear_inputs {
            if let Some(r) = call_of[i] {
                clear_calls.push(r);
            }
        }
    }
    if let Some(limit) = spec.truncate_items {
        // A description an earlier run made is not cut either.
        let uncut = results
            .iter()
            .copied()
            .filter(|&i| !is_compacted[i] && !is_description(&msgs[i]))
            .collect::<Vec<_>>();
        truncate_results(msgs, uncut.into_iter(), limit, &names, tok, &mut changes);
        // Cut results weigh what they weigh now.
        after = results.iter().map(|&i| tok.count_message(&msgs[i])).sum();
    }
    clear_inputs(msgs, clear_calls, &mut changes);
    changes.sort_by_key(|c| c.index);
    let mut out = Outcome::new(conv, changes);
    out.flags.insert(
        "tool_tokens_before".into(),
        Value::from(before.iter().sum::<usize>()),
    );
    out.flags
        .insert("tool_tokens_after".into(), Value::from(after));
    if not_smaller > 0 {
        out.flags
            .insert("not_smaller".into(), Value::from(not_smaller));
    }
    out
}

/// What [`choose`] found, before anything changes.
struct Chosen {
    /// The tool results, by index.
    results: Vec<usize>,
    /// Their tokens, in the order of `results`.
    before: Vec<usize>,
    /// The results to replace, and their descriptions.
    compacted: Vec<Compacted>,
    /// Results a rule fired on, kept: their description is no smaller.
    not_smaller: usize,
    /// By message, the tool of each result a change names (those
    /// replaced; with `--truncate-items`, every result); empty for the rest.
    names: Vec<String>,
    /// The call each message answers.
    call_of: Vec<Option<crate::pairs::CallRef>>,
}

/// A result to replace: where, by which rule, with what description, and
/// the tokens of the result and of its description.
struct Compacted {
    index: usize,
    rule: &'static str,
    message: Message,
    before: usize,
    after: usize,
}

/// The tool results a conversation holds, their tokens, and which of them
/// to compact and why.
fn choose(msgs: &[Message], spec: &CompactSpec, tok: &Tokenizer) -> Chosen {
    let pairing = Pairing::new(msgs);
    let results: Vec<usize> = (0..msgs.len())
        .filter(|&i| msgs[i].role.is_result())
        .collect();
    let name_of = |i: usize| -> String {
        crate::pairs::result_tool_name(msgs, &pairing, i)
            .unwrap_or_default()
            .to_string()
    };
    let protected = results.len().saturating_sub(spec.keep_last);
    // A result's tool is looked up only where a rule names tools.
    let by_tool = !spec.exclude_tools.is_empty() || spec.only_tools.is_some();
    let candidates: Vec<usize> = results[..protected]
        .iter()
        .copied()
        .filter(|&i| {
            !is_description(&msgs[i])
                && !is_cut(&msgs[i])
                && (!by_tool || {
                    let name = name_of(i);
                    !spec.exclude_tools.contains(&name)
                        && spec
                            .only_tools
                            .as_ref()
                            .is_none_or(|only| only.contains(&name))
                })
        })
        .collect();
    let before: Vec<usize> = results
        .iter()
        .map(|&i| tok.count_message(&msgs[i]))
        .collect();
    // `results` is in order: a result's place in it is found by halves.
    let tokens_of = |i: usize| before[results.binary_search(&i).unwrap_or(0)];
    let failed_in_record = failed_counts(msgs);
    let described_at =
        |i: usize| described_message(&msgs[i], spec.preview_chars, failed_in_record(i));
    let (fired, mut made) = fire(spec, tok, &candidates, &before, &tokens_of, &described_at);
    // A description that is not smaller than the result is not worth it.
    let fired_count = fired.len();
    let compacted: Vec<Compacted> = fired
        .into_iter()
        .map(|(i, rule)| {
            let message = made.remove(&i).unwrap_or_else(|| described_at(i));
            Compacted {
                index: i,
                rule,
                after: tok.count_message(&message),
                message,
                before: tokens_of(i),
            }
        })
        .filter(|c| c.after < c.before)
        .collect();
    let not_smaller = fired_count - compacted.len();
    let saved: usize = compacted.iter().map(|c| c.before - c.after).sum();
    let compacted = if spec.clear_at_least.is_some_and(|n| saved < n) {
        Vec::new()
    } else {
        compacted
    };
    // The tools of the results a change will name: those replaced, and
    // with `--truncate-items` those left whole.
    let mut names = vec![String::new(); msgs.len()];
    let named: Box<dyn Iterator<Item = usize>> = match spec.truncate_items {
        Some(_) => Box::new(results.iter().copied()),
        None => Box::new(compacted.iter().map(|c| c.index)),
    };
    for i in named {
        names[i] = name_of(i);
    }
    let call_of = (0..msgs.len()).map(|i| pairing.result_of(i)).collect();
    Chosen {
        results,
        before,
        compacted,
        not_smaller,
        names,
        call_of,
    }
}

/// Which candidates the rules fire on: every one over
/// `--max-result-tokens`, then, oldest first, as many as `--max-total-tokens`
/// needs; with the latter, also the descriptions it made to know the total,
/// by message (none without it).
fn fire(
    spec: &CompactSpec,
    tok: &Tokenizer,
    candidates: &[usize],
    before: &[usize],
    tokens_of: &dyn Fn(usize) -> usize,
    described_at: &dyn Fn(usize) -> Message,
) -> (Vec<(usize, &'static str)>, FastMap<usize, Message>) {
    let mut fired: Vec<(usize, &'static str)> = candidates
        .iter()
        .filter(|&&i| tokens_of(i) > spec.max_result_tokens)
        .map(|&i| (i, "max-result-tokens"))
        .collect();
    let Some(max_total) = spec.max_total_tokens else {
        return (fired, FastMap::default());
    };
    // Each description made once, and what fired found by its index, not
    // by a search of the list (that was quadratic in the results).
    let mut made: FastMap<usize, Message> = FastMap::default();
    let mut total: usize = before.iter().sum();
    for &(i, _) in &fired {
        let new = described_at(i);
        total = total - tokens_of(i) + tok.count_message(&new);
        made.insert(i, new);
    }
    for &i in candidates {
        if total <= max_total {
            break;
        }
        if made.contains_key(&i) {
            continue;
        }
        let new = described_at(i);
        total = total - tokens_of(i) + tok.count_message(&new);
        made.insert(i, new);
        fired.push((i, "max-total-tokens"));
    }
    fired.sort_unstable();
    (fired, made)
}

/// `--truncate-items`: the results left whole get their long lists cut.
fn truncate_results(
    msgs: &mut [Message],
    results: impl Iterator<Item = usize>,
    limit: usize,
    names: &[String],
    tok: &Tokenizer,
    changes: &mut Vec<Change>,
) {
    for i in results {
        let text = msgs[i].content.text();
        if let Some(cut) = truncate(&text, limit) {
            let before_tokens = tok.count_message(&msgs[i]);
            msgs[i] = with_content(&msgs[i], cut);
            changes.push(result_change(
                &msgs[i],
                i,
                "truncate-items",
                &names[i],
                before_tokens,
                tok.count_message(&msgs[i]),
            ));
        }
    }
}

/// `--clear-inputs`: the calls of compacted results lose their arguments.
fn clear_inputs(
    msgs: &mut [Message],
    calls: Vec<crate::pairs::CallRef>,
    changes: &mut Vec<Change>,
) {
    for r in calls {
        let call = &mut msgs[r.message].tool_calls.as_mut().expect("a paired call")[r.call];
        if let Some(cleared) = clear_arguments(&call.arguments) {
            call.arguments = cleared;
            let mut c = Change::of(
                &msgs[r.message],
                r.message,
                Action::Modified,
                "clear-inputs",
            );
            c.detail.insert(
                "tool".into(),
                Value::from(msgs[r.message].calls()[r.call].name.clone()),
            );
            changes.push(c);
        }
    }
}

fn result_change(
    m: &Message,
    i: usize,
    rule: &str,
    tool: &str,
    before: usize,
    after: usize,
) -> Change {
    let mut c = Change::of(m, i, Action::Modified, rule);
    c.detail.insert("tool".into(), Value::from(tool));
    c.detail.insert("tokens_before".into(), Value::from(before));
    c.detail.insert("tokens_after".into(), Value::from(after));
    c
}

/// For each message, how many failed results its source record holds (an
/// Open WebUI assistant message embeds several calls and results).
fn failed_counts(msgs: &[Message]) -> impl Fn(usize) -> usize + '_ {
    // The failed results of each record, counted once when first asked (a
    // scan of the conversation for each result was quadratic).
    let per_record = std::cell::OnceCell::new();
    move |i: usize| {
        let record_of = |m: &Message| m.origin.as_ref().and_then(|o| o.record);
        // Only Open WebUI's embedded results (no fields of their own) share a record.
        let Some(record) = record_of(&msgs[i]).filter(|_| msgs[i].fields.is_empty()) else {
            return 1;
        };
        let counts = per_record.get_or_init(|| {
            let mut counts = FastMap::<usize, usize>::default();
            for m in msgs.iter().filter(|m| m.role.is_result()) {
                if let Some(r) = record_of(m).filter(|_| super::failed(m)) {
                    *counts.entry(r).or_default() += 1;
                }
            }
            counts
        });
        counts.get(&record).copied().unwrap_or(0).max(1)
    }
}

/// Result `m` with its description (see [`describe`]) in place of its
/// content, made once for what it says and how it is described: a
/// recipe applied to each request of a conversation describes the same
/// old results on every one.
fn described_message(m: &Message, preview_chars: usize, failed_in_record: usize) -> Message {
    let make = |m: &Message| with_content(m, describe(m, preview_chars, failed_in_record));
    // The tag tells every way of describing a message apart, exactly.
    const MAX: usize = 1 << 24;
    if preview_chars >= MAX || failed_in_record >= MAX {
        return make(m);
    }
    let flagged = super::flagged(m);
    let tag = 0xde << 56
        | preview_chars as u64
        | (failed_in_record as u64) << 24
        | u64::from(flagged) << 48;
    m.said_as(tag, make)
}

/// The message with its content replaced by `text`, in the content's shape.
fn with_content(m: &Message, text: String) -> Message {
    let content = match &m.content {
        Content::Parts(parts) => {
            // Keep the first text part's shape (and slot); drop the rest.
            let first = parts
                .iter()
                .find(|p| matches!(p.kind, PartKind::Text(_)))
                .cloned();
            match first {
                Some(p) => Content::Parts(vec![crate::transcript::Part {
                    kind: PartKind::Text(text),
                    ..p
                }]),
                None => Content::Parts(vec![crate::transcript::Part::text_part(text)]),
            }
        }
        _ => Content::Text(text),
    };
    m.with_content(content)
}

/// Whether a result already is a description [`describe`] made: a second
/// run leaves it as it is. Described again, it became a description of a
/// description (`[Tool: 2 lines, 230 chars | [Tool: 5 lines, 973 chars |
/// …`), its own figures cut into a preview: not the same output twice.
fn is_description(m: &Message) -> bool {
    let text = m.content.text_ref();
    let text = text.trim();
    text.starts_with("[Tool: ") && text.ends_with(']')
}

/// Whether a result holds what `--truncate-items` cut: its text, or a
/// string of its JSON (a run that kept its description, as no smaller,
/// and cut it). A second run leaves it as the first did, not described now
/// that it is shorter.
fn is_cut(m: &Message) -> bool {
    fn any_cut(v: &Value) -> bool {
        match v {
            Value::String(s) => was_cut(s).is_some(),
            Value::Array(items) => items.iter().any(any_cut),
            Value::Object(map) => map.values().any(any_cut),
            _ => false,
        }
    }
    let text = m.content.text_ref();
    let text = text.trim();
    // A SIMD scan: every candidate of every request is looked at.
    memchr::memmem::find(text.as_bytes(), "…[".as_bytes()).is_some()
        && (was_cut(text).is_some()
            || serde_json::from_str::<Value>(text).is_ok_and(|v| any_cut(&v)))
}

/// The computed description of a result (see the module docs).
pub fn describe(m: &Message, preview_chars: usize, failed_in_record: usize) -> String {
    let text = m.content.text_ref();
    let images: Vec<String> = m.content.images().map(Image::placeholder).collect();
    let mut out = if text.trim().is_empty() && !images.is_empty() {
        String::new()
    } else {
        described(&text, (preview_chars, failed_in_record), super::flagged(m))
    };
    for img in images {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&img);
    }
    out
}

/// What the descriptions a thread remembers weigh at most, with the texts
/// they describe: the proxy's cleaning workers each keep theirs.
const DESCRIBED_MAX_BYTES: usize = 4 << 20;

thread_local! {
    /// Descriptions by the text they describe and how (see [`described`]).
    static DESCRIBED: std::cell::RefCell<crate::memo::ByText<String>> =
        std::cell::RefCell::new(crate::memo::ByText::new(DESCRIBED_MAX_BYTES));
}

/// The description of a result's text (`flagged`: its fields say it
/// failed), remembered by the text: a recipe applied to each request of
/// a conversation describes the same old results again on every one, and
/// a description cost about 15,000 instructions (a twentieth of a
/// replay's).
fn described(
    text: &str,
    (preview_chars, failed_in_record): (usize, usize),
    flagged: bool,
) -> String {
    // The tag tells every way of describing a text apart, exactly.
    const MAX: usize = 1 << 24;
    if preview_chars >= MAX || failed_in_record >= MAX {
        return describe_anew(text, (preview_chars, failed_in_record), flagged);
    }
    let tag = preview_chars as u64 | (failed_in_record as u64) << 24 | u64::from(flagged) << 48;
    let known = DESCRIBED.with(|m| m.borrow_mut().get_mut(tag, text.as_bytes()).cloned());
    known.unwrap_or_else(|| {
        let d = describe_anew(text, (preview_chars, failed_in_record), flagged);
        DESCRIBED.with(|m| {
            m.borrow_mut()
                .insert(tag, text.as_bytes(), d.clone(), d.len())
        });
        d
    })
}

/// [`described`], not looked up.
fn describe_anew(
    text: &str,
    (preview_chars, failed_in_record): (usize, usize),
    flagged: bool,
) -> String {
    if flagged || super::failed_text(text) {
        if failed_in_record > 1 {
            format!("[Tool: {failed_in_record} failed queries]")
        } else {
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            format!("[Tool: error | {}]", cut_chars(first, preview_chars))
        }
    } else {
        match parse_json(text) {
            Some(v) => describe_json(&v, text, preview_chars),
            None => describe_text(text, preview_chars),
        }
    }
}

fn describe_text(text: &str, preview_chars: usize) -> String {
    let lines = text.lines().count().max(1);
    let chars = text.chars().count();
    format!(
        "[Tool: {}, {} | {}]",
        count(lines as u64, "line"),
        count(chars as u64, "char"),
        cut_chars(text, preview_chars)
    )
}

fn describe_json(v: &Value, text: &str, preview_chars: usize) -> String {
    let rows = match v {
        Value::Array(items) => Some(items),
        Value::Object(map) => ROW_KEYS
            .iter()
            .filter_map(|k| map.get(*k).and_then(Value::as_array))
            .next()
            .or_else(|| {
                let arrays: Vec<&Vec<Value>> = map.values().filter_map(Value::as_array).collect();
                (arrays.len() == 1).then(|| arrays[0])
            }),
        _ => None,
    };
    match (rows, v) {
        (Some(rows), _) => match rows.first() {
            Some(first) => format!(
                "[Tool: {} | {}]",
                count(rows.len() as u64, "row"),
                sample(first)
            ),
            None => "[Tool: 0 rows]".to_string(),
        },
        (None, Value::Object(map)) => {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            format!(
                "[Tool: object {{{}}} | {}]",
                keys.join(", "),
                count(text.chars().count() as u64, "char")
            )
        }
        (None, _) => describe_text(text, preview_chars),
    }
}

/// A row as Python prints JSON (`{"a": 1, "b": "x"}`), long strings cut with `…`.
fn sample(v: &Value) -> String {
    match v {
        Value::String(s) => Value::from(cut_chars(s, ROW_STRING)).to_string(),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), sample(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Array(items) => {
            let shown: Vec<String> = items.iter().take(5).map(sample).collect();
            let more = if items.len() > 5 { ", …" } else { "" };
            format!("[{}{more}]", shown.join(", "))
        }
        other => other.to_string(),
    }
}

/// The first `n` characters, with `…` when cut.
fn cut_chars(s: &str, n: usize) -> String {
    // Walks the first `n + 1` characters, not the whole text.
    match s.char_indices().nth(n) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// JSON in a result: as it is, HTML-escaped, double-encoded as a JSON
/// string, or inside a code fence.
pub fn parse_json(text: &str) -> Option<Value> {
    let t = text.trim();
    let fenced = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .map(str::trim);
    let unescaped = unescape(t);
    for candidate in [Some(t), fenced, Some(unescaped.as_str())]
        .into_iter()
        .flatten()
    {
        if let Ok(mut v) = serde_json::from_str::<Value>(candidate) {
            // Double-encoded: a string that holds JSON.
            while let Value::String(s) = &v {
                match serde_json::from_str::<Value>(s) {
                    Ok(inner @ (Value::Object(_) | Value::Array(_) | Value::String(_))) => {
                        v = inner
                    }
                    _ => break,
                }
            }
            if v.is_object() || v.is_array() {
                return Some(v);
            }
        }
    }
    None
}

/// Cuts every string longer than `limit` (in a JSON result) or the text
/// itself, with `…[N chars]`; `None` when nothing was long.
fn truncate(text: &str, limit: usize) -> Option<String> {
    fn cut(s: &str, limit: usize) -> Option<String> {
        // Cut before: its head, and the original's length, kept.
        let (head, n) = match was_cut(s) {
            Some((head, n)) => (head, n.to_string()),
            None => (s, s.chars().count().to_string()),
        };
        let first: String = head.chars().take(limit + 1).collect();
        (first.chars().count() > limit).then(|| {
            let kept: String = first.chars().take(limit).collect();
            format!("{kept}…[{n} chars]")
        })
    }
    fn walk(v: &mut Value, limit: usize) -> bool {
        match v {
            Value::String(s) => match cut(s, limit) {
                Some(c) => {
                    *s = c;
                    true
                }
                None => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |acc, i| walk(i, limit) | acc),
            Value::Object(map) => map.values_mut().fold(false, |acc, i| walk(i, limit) | acc),
            _ => false,
        }
    }
    if let Ok(mut v @ (Value::Object(_) | Value::Array(_))) =
        serde_json::from_str::<Value>(text.trim())
    {
        return walk(&mut v, limit).then(|| v.to_string());
    }
    cut(text, limit)
}

/// A string [`truncate`] cut before: its first characters and the
/// original's length (`abcd…[6 chars]`: `abcd`, `6`). Cut again, it keeps
/// that length, not its own: the same output twice, and the original's
/// size said.
fn was_cut(s: &str) -> Option<(&str, &str)> {
    let (head, tail) = s.rsplit_once('…')?;
    let n = tail.strip_prefix('[')?.strip_suffix(" chars]")?;
    crate::numbers::is_digits(n).then_some((head, n))
}

/// Arguments with large values replaced by `"[cleared]"`, still valid JSON.
fn clear_arguments(arguments: &str) -> Option<String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return None;
    };
    let mut changed = false;
    let cleared: Map<String, Value> = map
        .into_iter()
        .map(|(k, v)| {
            if v.to_string().len() > LARGE_ARGUMENT {
                changed = true;
                (k, Value::from("[cleared]"))
            } else {
                (k, v)
            }
        })
        .collect();
    changed.then(|| Value::Object(cleared).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Part, Role};

    /// A text described again, in another way or the same, is described as
    /// it is asked each time: the memo tells the ways apart.
    #[test]
    fn a_text_described_again_is_described_as_asked() {
        let texts = [
            "line one\nline two, and more after it",
            "{\"rows\":[{\"a\":1},{\"a\":2},{\"a\":3}]}",
            "Error: boom\n  at somewhere",
        ];
        for _ in 0..2 {
            for text in texts {
                for preview in [3, 10, 1 << 24] {
                    for failed in [0, 1, 3] {
                        for flagged in [false, true] {
                            let how = (preview, failed);
                            assert_eq!(
                                described(text, how, flagged),
                                describe_anew(text, how, flagged),
                                "{text:?} {how:?} {flagged}"
                            );
                        }
                    }
                }
            }
        }
        let plain = |preview, flagged| described(texts[0], (preview, 0), flagged);
        assert_ne!(plain(3, false), plain(10, false));
        assert_ne!(plain(3, false), plain(3, true));
    }

    fn result(text: &str) -> Message {
        Message::new(Role::Tool, text).with_call_id("c")
    }

    /// A result described again, in another way or the same, wherever it
    /// sits, is described as it would be anew: what is remembered with
    /// what it says tells the ways apart, and the copy sits where asked.
    #[test]
    fn a_result_described_again_is_described_as_anew() {
        let said = result("Error: boom\n  at somewhere, with a longer line after it");
        let text = said.content.text();
        let mut flagged = said.clone();
        flagged.fields = crate::transcript::Fields::from(serde_json::Map::from_iter([(
            "is_error".to_string(),
            Value::Bool(true),
        )]));
        let mut elsewhere = said.clone();
        elsewhere.anchor = Some(Some(3));
        let anew = |m: &Message, p: usize, f: usize| with_content(m, describe(m, p, f));
        for _ in 0..2 {
            for m in [&said, &flagged, &elsewhere] {
                for (p, f) in [(10, 1), (30, 1), (10, 4), (1 << 24, 1)] {
                    let d = described_message(m, p, f);
                    assert_eq!(d, anew(m, p, f), "{p} {f}");
                    assert_eq!(d.typed_digest(), anew(m, p, f).typed_digest());
                }
            }
        }
        // The results themselves say what they said.
        assert_eq!(said.content.text(), text);
        assert!(flagged.says_as(&said) && elsewhere.says_as(&said));
    }

    fn d(text: &str) -> String {
        describe(&result(text), 200, 1)
    }

    #[test]
    fn rows_errors_objects_text() {
        let rows = r#"{"results": [{"diagnosis": "Malignant neoplasm of bronchus and lung, unspecified site of the body", "count": 5}, {"diagnosis": "Flu", "count": 9}]}"#;
        assert_eq!(
            d(rows),
            r#"[Tool: 2 rows | {"diagnosis": "Malignant neoplasm of bronchus and lung, unspecified site of…", "count": 5}]"#
        );
        assert_eq!(
            d(r#"[{"a": 1}, {"a": 2}, {"a": 3}]"#),
            r#"[Tool: 3 rows | {"a": 1}]"#
        );
        assert_eq!(
            d("query execution failed: relation \"visit\" does not exist\nLINE 1"),
            "[Tool: error | query execution failed: relation \"visit\" does not exist]"
        );
        assert_eq!(
            d("Traceback (most recent call last):\n  File \"x\""),
            "[Tool: error | Traceback (most recent call last):]"
        );
        assert_eq!(
            d(r#"{"status": "ok", "id": 7}"#),
            r#"[Tool: object {status, id} | 25 chars]"#
        );
        assert_eq!(
            d("line one\nline two"),
            "[Tool: 2 lines, 17 chars | line one\nline two]"
        );
        assert_eq!(
            describe(&result(&"x".repeat(300)), 10, 1),
            "[Tool: 1 line, 300 chars | xxxxxxxxxx…]"
        );
    }

    #[test]
    fn a_description_is_not_described_again() {
        assert!(is_description(&result(&d("line one\nline two"))));
        assert!(is_description(&result(&d("[{\"a\": 1}]"))));
        assert!(!is_description(&result("[Tool: not closed")));
        assert!(!is_description(&result("a result [Tool: x]")));
        assert!(!is_description(&result("line one\nline two")));
    }

    #[test]
    fn json_in_every_wrapping() {
        let html = "{&quot;results&quot;: [{&quot;a&quot;: 1}]}";
        assert_eq!(d(html), r#"[Tool: 1 row | {"a": 1}]"#);
        let double = serde_json::to_string(r#"{"rows": [{"a": 1}, {"a": 2}]}"#).unwrap();
        assert_eq!(d(&double), r#"[Tool: 2 rows | {"a": 1}]"#);
        assert_eq!(
            d("```json\n[{\"a\": 1}]\n```"),
            r#"[Tool: 1 row | {"a": 1}]"#
        );
        assert_eq!(d("not { json"), "[Tool: 1 line, 10 chars | not { json]");
    }

    #[test]
    fn errors_flagged_and_images() {
        let mut m = result("it broke");
        m.fields.insert("is_error".into(), Value::Bool(true));
        assert_eq!(describe(&m, 200, 1), "[Tool: error | it broke]");
        let img = Part {
            kind: PartKind::Image(crate::transcript::Image::from_url(
                "data:image/png;base64,iVBORw0KGgo=",
            )),
            raw: Value::Null.into(),
            slot: None,
        };
        let mut m = result("");
        m.content = Content::Parts(vec![Part::text_part("### Result"), img]);
        assert_eq!(
            describe(&m, 200, 1),
            "[Tool: 1 line, 10 chars | ### Result] [image: image/png, 8 bytes]"
        );
    }

    #[test]
    fn truncation_and_cleared_inputs() {
        assert_eq!(
            truncate(r#"{"a": "abcdef", "b": 1}"#, 3).as_deref(),
            Some(r#"{"a":"abc…[6 chars]","b":1}"#)
        );
        assert_eq!(truncate("abcdef", 4).as_deref(), Some("abcd…[6 chars]"));
        assert_eq!(truncate("abc", 4), None);
        // What was cut is not cut again: its length is the original's.
        assert_eq!(truncate("abcd…[6 chars]", 4), None);
        assert_eq!(truncate("ab…[6 chars]", 4), None);
        assert_eq!(
            truncate(r#"{"a":"abc…[6 chars]","b":1}"#, 3),
            None,
            "JSON whose strings were cut"
        );
        // Cut at a larger limit before: cut again at this one.
        assert_eq!(
            truncate("abcdef…[9 chars]", 4).as_deref(),
            Some("abcd…[9 chars]"),
            "the original's length kept"
        );
        assert_eq!(
            truncate("abcd…[many chars]", 4).as_deref(),
            Some("abcd…[17 chars]")
        );
        let args = format!(r#"{{"path": "a.py", "code": "{}"}}"#, "x".repeat(100));
        assert_eq!(
            clear_arguments(&args).as_deref(),
            Some(r#"{"path":"a.py","code":"[cleared]"}"#)
        );
    }
}
