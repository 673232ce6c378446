//! Reading an input into a [`Document`]: layout and format detection,
//! parsing, and errors that name the file, line and column.
//!
//! A JSON document is split into spans of its text (its lists' elements,
//! its objects' entries), so that a record that is wrong can be located by
//! its byte offset. A large document is first read trusting its spans (see
//! `read_document_with` and `super::split`); JSONL is read
//! line by line, and each record keeps its line's exact text so that an
//! unchanged line is written back byte for byte.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::dialect::Dialect;
use super::keys::Entries;
use super::{detect, dialect, Document, Format, Layout, Style};
use crate::error::{line_col, InputError};
use crate::json::parse_exact;
use crate::transcript::{Conversation, Fields, Line, Message, Origin, Record};

/// How to read inputs.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Force the format instead of detecting it.
    pub from: Option<Format>,
    /// Skip JSONL lines that are blank, comments or malformed instead of
    /// failing; they are counted and kept in place in the output.
    pub skip_invalid: bool,
    /// Read the bytes as a chunk of JSONL lines cut from a larger input (see
    /// [`crate::batch`]): JSONL whatever they look like, with line numbers
    /// and conversation indices counted from where the chunk starts.
    pub chunk: Option<ChunkStart>,
    /// Records read before (see [`super::Recall`]): a record whose text it
    /// holds is not parsed again. A document read with one keeps it, for
    /// the reads of what is written from it.
    pub recall: Option<Arc<super::Recall>>,
}

/// Where a chunk of JSONL lines starts in its input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkStart {
    /// Lines before the chunk.
    pub line: usize,
    /// Conversations before the chunk.
    pub conversation: usize,
}

/// Reads one input. `source` names it in errors (`-` for stdin).
pub fn read_document(
    source: &str,
    bytes: Vec<u8>,
    opts: &ReadOptions,
) -> Result<Document, InputError> {
    read_document_with(source, bytes, opts, true, SPLIT_MEMO)
}

/// [`read_document`]: `trust` lets a document be read trusting its spans
/// first, and spans of `large` bytes or more are split once and trusted.
/// Tests and a fuzz target compare a read that trusts every span with one
/// that never trusts any.
pub(crate) fn read_document_with(
    source: &str,
    bytes: Vec<u8>,
    opts: &ReadOptions,
    trust: bool,
    large: usize,
) -> Result<Document, InputError> {
    let line_offset = opts.chunk.map_or(0, |c| c.line);
    let source_len = bytes.len();
    let bom = bytes.starts_with(BOM);
    let text = decode(source, bytes).map_err(|mut e| {
        e.line += line_offset;
        e
    })?;
    if opts.chunk.is_none()
        && matches!(opts.from, None | Some(Format::CopilotChat))
        && text.trim_start().starts_with("{\"kind\":0")
    {
        if let Some(state) = super::copilot_journal::replay(&text) {
            let state = state.map_err(|(line, why)| InputError::new(source, line, Some(1), why))?;
            return read_journal(source, text, state, bom, opts, trust, large);
        }
    }
    // Looked for once: a document on one line has none, and each search
    // for one would scan all of it.
    let first_newline = memchr::memchr(b'\n', text.as_bytes());
    let style = Style {
        crlf: first_newline.is_some_and(|i| text[..i].ends_with('\r')),
        tail: text[text.trim_end().len()..].to_string(),
        bom,
        ..Style::default()
    };
    let format = opts.from.unwrap_or(Format::OpenAi);
    let doc = Document {
        source: source.to_string(),
        format,
        source_format: format,
        layout: Layout::Empty,
        conversations: Vec::new(),
        skipped: Vec::new(),
        passthrough: Vec::new(),
        first_conversation: opts.chunk.map_or(0, |c| c.conversation),
        source_len,
        style,
    };
    if text.trim().is_empty() {
        return Ok(doc);
    }
    // Shared with the records of a document, which are held as where they
    // lie in it (see `Fields::read`).
    let text = Arc::new(text);
    let read = |trusting: bool, mut doc: Document| -> Result<Document, InputError> {
        let mut reader = Reader {
            deep: opts.chunk.is_none() && deep_export(&text),
            source,
            text: &text,
            opts,
            line_memo: std::cell::Cell::new((0, 1)),
            splits: RefCell::new(HashMap::new()),
            checked: RefCell::new(std::collections::HashSet::new()),
            known: RefCell::new(Vec::new()),
            first_newline,
            trusting,
            large,
            many: std::cell::Cell::new(false),
        };
        if opts.chunk.is_some() || reader.looks_like_jsonl() {
            reader.read_jsonl(&mut doc)?;
        } else {
            let deep = reader.deep;
            crate::json::deep(deep, || reader.read_json(&mut doc)).map_err(|mut e| {
                if e.message.contains("recursion limit exceeded") && recursive_export(&text) {
                    e.message = format!(
                        "a recursive LibreChat export nested deeper than the {} levels \
                         ctxclean reads (about {} replies): export the conversation without \
                         `recursive`",
                        crate::numbers::thousands(DEEP_MAX),
                        crate::numbers::thousands(DEEP_MAX / 2)
                    );
                }
                e
            })?;
            debug_assert!(
                reader.deep || serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(),
                "a document read is valid JSON"
            );
            let mut known = reader.known.take();
            known.sort_unstable_by_key(|k| k.start);
            if let Some((at, key)) = super::keys::duplicate_outside(&text, &known) {
                return Err(reader.error_at(&text[at..], duplicate_message(key)));
            }
            doc.style.indent = first_newline.and_then(|i| detect_indent(&text[i + 1..]));
            doc.style.original = Some(Arc::new(super::Original::new(Arc::clone(&text))));
        }
        doc.style.recall = opts.recall.clone();
        doc.format = doc.source_format;
        doc.style.message_counts = doc.conversations.iter().map(|c| c.messages.len()).collect();
        Ok(doc)
    };
    // A large document is first read trusting its large spans to be valid
    // JSON: they are split at the speed of finding quotes (see
    // `super::split`), and every part of them is still parsed, so that
    // reading succeeds only when all of it is valid. When anything fails,
    // it is read again checking each span as it is split, so that the error
    // is the one `serde_json` gives where it first goes wrong.
    if trust && text.len() >= large && opts.chunk.is_none() {
        if let Ok(doc) = read(true, doc.clone()) {
            return Ok(doc);
        }
    }
    read(false, doc)
}

/// A Copilot Chat operation log, read as the session it makes (see
/// `copilot_journal`); its own text is what an unchanged read writes back.
fn read_journal(
    source: &str,
    text: String,
    state: Value,
    bom: bool,
    opts: &ReadOptions,
    trust: bool,
    large: usize,
) -> Result<Document, InputError> {
    let inner = ReadOptions {
        from: Some(Format::CopilotChat),
        ..opts.clone()
    };
    let bytes = serde_json::to_vec(&state).expect("a replayed session serializes");
    let mut doc = read_document_with(source, bytes, &inner, trust, large).map_err(|e| {
        InputError::new(
            source,
            1,
            None,
            format!("the session this operation log makes: {}", e.message),
        )
    })?;
    doc.source_len = text.len() + if bom { BOM.len() } else { 0 };
    doc.style.tail = text[text.trim_end().len()..].to_string();
    doc.style.crlf = text.contains("\r\n");
    doc.style.bom = bom;
    doc.style.indent = None;
    doc.style.journal = true;
    doc.style.original = Some(Arc::new(super::Original::new(Arc::new(text))));
    Ok(doc)
}

/// Reads `bytes` trusting every span, however small, and checking every
/// span, as [`read_document`] does below [`SPLIT_MEMO`]; panics unless both
/// give the same document (as written back) or the same error. For tests
/// and the fuzz target `read_trusting`.
pub(crate) fn compare_trusting(bytes: &[u8], opts: &ReadOptions) {
    let trusting = read_document_with("t", bytes.to_vec(), opts, true, 0);
    let checking = read_document_with("t", bytes.to_vec(), opts, false, SPLIT_MEMO);
    let written = |d: &Document| {
        let mut out = Vec::new();
        super::write_document(d, &mut out).expect("writing to memory");
        out
    };
    match (trusting, checking) {
        (Ok(a), Ok(b)) => assert!(
            written(&a) == written(&b),
            "trusting and checking reads write different documents"
        ),
        (Err(a), Err(b)) => assert_eq!(
            (a.line, a.column, &a.message),
            (b.line, b.column, &b.message)
        ),
        (a, b) => panic!("trusting: {:?}; checking: {:?}", a.err(), b.err()),
    }
}

/// The UTF-8 byte order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads a document its caller holds already parsed, as [`read_document`]
/// reads the same value written as JSON text on one line: a single
/// conversation object (`{"messages": […]}`), read as `from` or detected.
/// `None` for any other layout and for any fault: the caller then reads
/// the value's text, which locates the error. The Python package reads
/// its dicts this way, without writing and scanning their JSON.
pub fn read_value(source: &str, value: Value, from: Option<Format>) -> Option<Document> {
    let Value::Object(obj) = value else {
        return None;
    };
    if obj.get("messages").is_some_and(|v| !v.is_array()) {
        return None;
    }
    if let Some(format) = from {
        return read_object(source, obj, format, true);
    }
    let top = Value::Object(obj);
    let format = match sampled(&top, 0) {
        Some(sample) => detect::json(&sample),
        None => detect::json(&top),
    };
    match (top, format) {
        (Value::Object(obj), Ok(format)) => read_object(source, obj, format, false),
        _ => None,
    }
}

/// [`read_value`] of an object in `format`.
fn read_object(
    source: &str,
    obj: Map<String, Value>,
    format: Format,
    forced: bool,
) -> Option<Document> {
    let d = dialect(format);
    d.records_path(&obj)?;
    let conv = conversation_from_value(obj, d, format, 1, (forced, false))?;
    let style = Style {
        message_counts: vec![conv.messages.len()],
        ..Style::default()
    };
    Some(Document {
        source: source.to_string(),
        format,
        source_format: format,
        layout: Layout::Object,
        conversations: vec![conv],
        skipped: Vec::new(),
        passthrough: Vec::new(),
        first_conversation: 0,
        source_len: 0,
        style,
    })
}

/// The sample [`Reader::sample`] makes of the value's text (every list
/// above the fourth level cut to its first 50 elements), when it differs
/// from the value; `None` when the value is its own sample.
fn sampled(v: &Value, depth: usize) -> Option<Value> {
    const LIST: usize = 50;
    if depth >= 4 {
        return None;
    }
    match v {
        Value::Array(items) => {
            let cut = items.len() > LIST;
            let inner: Vec<Option<Value>> = items
                .iter()
                .take(LIST)
                .map(|x| sampled(x, depth + 1))
                .collect();
            if !cut && inner.iter().all(Option::is_none) {
                return None;
            }
            let items = items.iter().zip(inner);
            Some(Value::Array(
                items.map(|(x, s)| s.unwrap_or_else(|| x.clone())).collect(),
            ))
        }
        Value::Object(map) => {
            let inner: Vec<Option<Value>> = map.values().map(|x| sampled(x, depth + 1)).collect();
            if inner.iter().all(Option::is_none) {
                return None;
            }
            let entries = map.iter().zip(inner);
            Some(Value::Object(
                entries
                    .map(|((k, x), s)| (k.clone(), s.unwrap_or_else(|| x.clone())))
                    .collect(),
            ))
        }
        _ => None,
    }
}

/// Checks UTF-8 and drops a byte-order mark (the style remembers it).
fn decode(source: &str, mut bytes: Vec<u8>) -> Result<String, InputError> {
    if bytes.starts_with(BOM) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = std::str::from_utf8(&e.as_bytes()[..valid]).unwrap_or_default();
        let (line, col) = line_col(prefix, prefix.len());
        InputError::new(
            source,
            line,
            Some(col),
            "invalid UTF-8 (transcripts must be UTF-8 text)",
        )
    })
}

/// Whether an input that starts with `prefix` (its first bytes, say 64 KiB)
/// is JSONL, as the reader would decide.
pub fn sniff_jsonl(prefix: &[u8]) -> bool {
    let prefix = prefix.strip_prefix(BOM).unwrap_or(prefix);
    // Whole lines only, and only the valid UTF-8 part.
    let end = prefix
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(prefix.len(), |i| i + 1);
    let text = match std::str::from_utf8(&prefix[..end]) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default(),
    };
    looks_like_jsonl(text)
}

/// JSONL when the first non-blank line is a whole JSON object and more
/// follows it, or when it is a single message object.
pub fn looks_like_jsonl(text: &str) -> bool {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    let end = rest.find('\n').unwrap_or(rest.len());
    let first = rest[..end].trim_end();
    if first.starts_with("//") {
        return true;
    }
    // Only the keys are kept: the first line may be a whole document.
    match serde_json::from_str::<TopKeys>(first) {
        Ok(TopKeys::Object(keys)) => {
            !rest[end..].trim().is_empty() || a_record(|k| keys.contains(k))
        }
        Ok(TopKeys::Other) => false,
        // A document spread over several lines; or a broken first line,
        // which reads best as a JSONL error when other lines follow.
        Err(e) => {
            !e.is_eof() && !first.starts_with('[') && rest[end..].trim_start().starts_with('{')
        }
    }
}

/// Whether an object alone on its line is a JSONL record rather than a
/// document, by its keys (`has`): a message of its own (`role`), an
/// agent's record (`type`), or a record that wraps one (`message`: Claude
/// Code's, a ccusage line of usage), and no list of `messages`.
fn a_record(has: impl Fn(&str) -> bool) -> bool {
    (has("role") || has("type") || has("message")) && !has("messages")
}

/// The indentation of a pretty-printed document: the leading whitespace of
/// its first indented line. `rest` is what follows its first line.
fn detect_indent(rest: &str) -> Option<String> {
    rest.lines().find_map(|l| {
        let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        (!ws.is_empty() && ws.len() < l.len()).then_some(ws)
    })
}

/// A JSONL line: its number, its text, and its object (or what is wrong with it).
type JsonlLine<'a> = (usize, &'a str, Result<Fields, InputError>);

struct Reader<'a> {
    source: &'a str,
    /// A LibreChat export nested a level per reply, deeper than
    /// `serde_json`'s limit of 128 (and within [`DEEP_MAX`]): parsed without
    /// the limit, on a stack that grows.
    deep: bool,
    /// The text, shared with the records held as spans of it.
    text: &'a Arc<String>,
    opts: &'a ReadOptions,
    /// The last offset whose line was asked for, and that line: records are
    /// located in increasing order, so counting goes on from there (linear,
    /// not quadratic, in the size of a document).
    line_memo: std::cell::Cell<(usize, usize)>,
    /// Large lists and objects already split into their elements, by span:
    /// detection, descent, the envelope and the records each split the same
    /// ones, and a document of 200 MB took eight passes where one does.
    splits: RefCell<HashMap<(usize, usize), Split<'a>>>,
    /// Large spans that `serde_json` checked as part of a larger one: they
    /// are valid JSON, and split without checking them again.
    checked: RefCell<std::collections::HashSet<(usize, usize)>>,
    /// The spans of records known to hold no key twice (recalled, or
    /// checked as they were remembered): the check of the whole text steps
    /// over them.
    known: RefCell<Vec<std::ops::Range<usize>>>,
    /// Where the text's first newline is.
    first_newline: Option<usize>,
    /// Whether large spans are split without checking them (see
    /// [`read_document`]): every part they are split into must then be
    /// parsed, or split the same way, before reading succeeds.
    trusting: bool,
    /// Whether the conversation being read is one of several in the input
    /// (see [`check_content`]).
    many: std::cell::Cell<bool>,
    /// Spans this long or longer are split once, remembered, and split
    /// without checking when trusted ([`SPLIT_MEMO`], but for tests).
    large: usize,
}

/// A list's elements or an object's entries, values left unparsed.
#[derive(Clone)]
enum Split<'a> {
    List(Rc<Vec<&'a str>>),
    Object(Rc<Vec<(String, &'a str)>>),
}

/// Spans at least this long are split once and remembered; smaller ones
/// are cheap to split again, and remembering them all could hold a copy of
/// every small conversation's outline.
pub(crate) const SPLIT_MEMO: usize = 64 * 1024;

/// The deepest nesting a recursive LibreChat export may have (two levels a
/// reply: about 2,000 replies, within the 8 MiB stack of a main thread);
/// deeper documents are refused as before.
const DEEP_MAX: usize = 4_096;

/// Whether `text` is a recursive LibreChat export (`"recursive": true` among
/// its first keys) nested deeper than `serde_json`'s limit and within
/// [`DEEP_MAX`].
fn deep_export(text: &str) -> bool {
    recursive_export(text) && (128..=DEEP_MAX).contains(&nesting(text))
}

/// Whether `text` says `"recursive": true` among its first keys.
fn recursive_export(text: &str) -> bool {
    let mut end = text.len().min(4096);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    head.contains("\"recursive\":true") || head.contains("\"recursive\": true")
}

/// The deepest nesting of lists and objects in `text` (strings skipped).
fn nesting(text: &str) -> usize {
    let (mut depth, mut most, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                most = most.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    most
}

impl<'a> Reader<'a> {
    /// What [`check_content`] needs to know: whether the format was named
    /// with --from, and whether this conversation is one of several.
    fn modes(&self) -> (bool, bool) {
        (self.opts.from.is_some(), self.many.get())
    }

    /// `serde_json::from_str`; without the nesting limit for a deep export
    /// (`read_json` runs inside [`crate::json::deep`]).
    fn parse<T: serde::Deserialize<'a>>(&self, raw: &'a str) -> serde_json::Result<T> {
        crate::json::from_str(raw)
    }

    fn offset(&self, part: &str) -> usize {
        (part.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize)
    }

    /// [`looks_like_jsonl`] for the whole input. A document on one line is
    /// its own first line: its keys are read from the entries reading it
    /// splits anyway, not from a pass of its own.
    fn looks_like_jsonl(&self) -> bool {
        let body = self.text.trim();
        let start = self.offset(body);
        let multiline = match self.first_newline {
            Some(i) if i < start => body.contains('\n'),
            Some(i) => i < start + body.len(),
            None => false,
        };
        if !body.starts_with('{') || multiline {
            return looks_like_jsonl(self.text);
        }
        match self.entries(body) {
            Ok(entries) => a_record(|key| entries.iter().any(|(k, _)| k == key)),
            Err(_) => false,
        }
    }

    /// The elements of the list `raw`, split once however often asked.
    fn list(&self, raw: &'a str) -> serde_json::Result<Rc<Vec<&'a str>>> {
        let key = self.span_key(raw);
        if let Some(Split::List(items)) = key.and_then(|k| self.splits.borrow().get(&k).cloned()) {
            return Ok(items);
        }
        let fast = key.and_then(|k| self.unchecked_split(k).then(|| super::split::list(raw)));
        let items = match fast.flatten() {
            Some(items) => items,
            None => {
                let items: Vec<&'a RawValue> = self.parse(raw)?;
                let items: Vec<&'a str> = items.into_iter().map(RawValue::get).collect();
                self.check(items.iter().copied());
                items
            }
        };
        let items = Rc::new(items);
        self.remember(key, Split::List(items.clone()));
        Ok(items)
    }

    /// The entries of the object `raw`, split once however often asked.
    fn entries(&self, raw: &'a str) -> serde_json::Result<Rc<Vec<(String, &'a str)>>> {
        let key = self.span_key(raw);
        if let Some(Split::Object(entries)) =
            key.and_then(|k| self.splits.borrow().get(&k).cloned())
        {
            return Ok(entries);
        }
        let mut lists = Vec::new();
        let fast = key.and_then(|k| {
            self.unchecked_split(k)
                .then(|| super::split::entries(raw, self.large, &mut lists))
        });
        let entries = match fast.flatten() {
            Some(entries) => {
                // Its large lists, split on the way.
                for (span, items) in lists {
                    self.remember(self.span_key(span), Split::List(Rc::new(items)));
                }
                entries
            }
            None => {
                let Entries(entries) = self.parse(raw)?;
                self.check(entries.iter().map(|(_, v)| *v));
                entries
            }
        };
        let entries = Rc::new(entries);
        self.remember(key, Split::Object(entries.clone()));
        Ok(entries)
    }

    /// Keeps the split of a large span (`key` from [`Reader::span_key`]).
    fn remember(&self, key: Option<(usize, usize)>, split: Split<'a>) {
        if let Some(k) = key {
            self.splits.borrow_mut().insert(k, split);
        }
    }

    /// Remembers the large spans among `parts`, which `serde_json` has just
    /// checked: split again, they are split without checking them twice
    /// (see [`super::split`]).
    fn check(&self, parts: impl Iterator<Item = &'a str>) {
        let mut checked = self.checked.borrow_mut();
        checked.extend(parts.filter_map(|p| self.span_key(p)));
    }

    /// Whether the span `key` is split without checking it: it lies inside
    /// one `serde_json` has checked, or the reader is trusting.
    fn unchecked_split(&self, key: (usize, usize)) -> bool {
        self.trusting || self.checked.borrow().contains(&key)
    }

    /// Where a large span of the input lies, whitespace around it aside
    /// (JSON ignores it); `None` for a small one, split again when asked.
    fn span_key(&self, raw: &str) -> Option<(usize, usize)> {
        let raw = raw.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r'));
        (raw.len() >= self.large).then(|| (self.offset(raw), raw.len()))
    }

    /// An error at the start of `part`, a slice of the input text.
    fn error_at(&self, part: &str, message: impl Into<String>) -> InputError {
        let (line, col) = line_col(self.text, self.offset(part));
        InputError::new(self.source, line + self.first_line(), Some(col), message)
    }

    /// What to do about a conversation that is not `format`: name the
    /// format with --from, or, when --from named it, say so.
    fn hint(&self, format: Format) -> String {
        match self.opts.from {
            Some(_) => format!(" (read as {format} because of --from)"),
            None => " (use --from to name its format)".to_string(),
        }
    }

    /// Lines before the text (for a chunk of a larger input).
    fn first_line(&self) -> usize {
        self.opts.chunk.map_or(0, |c| c.line)
    }

    fn line_of(&self, part: &str) -> usize {
        let offset = self.offset(part).min(self.text.len());
        let (from, line) = self.line_memo.get();
        let line = if offset >= from {
            match self.first_newline {
                // No newline before it (a document on one line).
                Some(n) if n < offset => {
                    line + memchr::memchr_iter(b'\n', &self.text.as_bytes()[from..offset]).count()
                }
                _ => line,
            }
        } else {
            line_col(self.text, offset).0
        };
        self.line_memo.set((offset, line));
        line + self.first_line()
    }

    /// A serde error inside `part`.
    fn serde_error(&self, part: &str, e: &serde_json::Error) -> InputError {
        let (base_line, base_col) = line_col(self.text, self.offset(part));
        let line = base_line + e.line().saturating_sub(1) + self.first_line();
        let col = if e.line() <= 1 {
            base_col + e.column().saturating_sub(1)
        } else {
            e.column()
        };
        InputError::new(self.source, line, Some(col.max(1)), serde_message(e))
    }

    fn read_json(&mut self, doc: &mut Document) -> Result<(), InputError> {
        let text = self.text;
        let body = text.trim_start();
        // A sample (lists cut short) is enough to detect the format; the
        // records are parsed once, below.
        let top = self.sample(text, 0)?;
        if !top.is_object() && !top.is_array() {
            return Err(self.error_at(
                body,
                format!(
                    "a JSON {} is not a transcript: expected an object with \"messages\", \
                     an array of messages, or JSONL",
                    kind_of(&top)
                ),
            ));
        }
        if let Some(v) = top.get("messages").filter(|v| !v.is_array()) {
            let Entries(entries) = self.parse(text).map_err(|e| self.serde_error(text, &e))?;
            let at = entries
                .iter()
                .find(|(k, _)| k == "messages")
                .map_or(body, |(_, raw)| raw);
            return Err(self.error_at(
                at,
                format!(
                    "\"messages\" must be a list of message objects, not a JSON {}",
                    kind_of(v)
                ),
            ));
        }
        let format = match self.opts.from {
            Some(f) => f,
            None => detect::json(&top).map_err(|e| self.error_at(body, e))?,
        };
        doc.source_format = format;
        let d = dialect(format);
        match top {
            Value::Object(obj)
                if d.records_path(&obj).is_none() && d.conversations_path(&obj).is_some() =>
            {
                let path = d.conversations_path(&obj).unwrap_or(&[]);
                doc.layout = Layout::Wrapped;
                let raw = self.descend(text, path)?;
                let raws = self.list(raw).map_err(|_| {
                    self.error_at(
                        raw,
                        format!("\"{}\" must be a list of conversations", path.join(".")),
                    )
                })?;
                self.many.set(raws.len() > 1);
                for raw in raws.iter() {
                    let conv = self.conversation(raw, d, format)?;
                    doc.conversations.push(conv);
                }
                let wrapper = self.envelope(text, path)?;
                doc.style.wrapper = Some((wrapper, path));
            }
            Value::Object(obj) => {
                if d.records_path(&obj).is_none() {
                    return Err(self.error_at(
                        body,
                        format!(
                            "not a {format} conversation: it has no list of messages{}",
                            self.hint(format)
                        ),
                    ));
                }
                doc.layout = Layout::Object;
                // The sample is of this very text: not made twice.
                let conv = self.conversation_of(text, d, format, obj)?;
                doc.conversations.push(conv);
            }
            Value::Array(items) => {
                let raws = self.list(text).map_err(|e| self.serde_error(text, &e))?;
                let objects: Vec<&Map<String, Value>> =
                    items.iter().filter_map(Value::as_object).take(50).collect();
                // Gemini's chunks are answers each, and together one.
                let conversations = items
                    .first()
                    .and_then(Value::as_object)
                    .is_some_and(|o| d.records_path(o).is_some())
                    && super::stream::format_of(&objects).is_none();
                if conversations {
                    doc.layout = Layout::Conversations;
                    self.many.set(raws.len() > 1);
                    for raw in raws.iter() {
                        let conv = self.conversation(raw, d, format)?;
                        doc.conversations.push(conv);
                    }
                } else {
                    doc.layout = Layout::Records;
                    let mut conv = Conversation::new(Vec::new());
                    self.records(&raws, (d, format), &mut conv)?;
                    let read = finish(d, &mut conv);
                    check_content(d, format, self.modes(), &conv, read)
                        .map_err(|e| self.error_at(body, e))?;
                    doc.conversations.push(conv);
                }
            }
            _ => unreachable!("checked above"),
        }
        Ok(())
    }

    /// Parses a record object; `raw` points into the input text.
    fn object(&self, raw: &str) -> Result<Map<String, Value>, InputError> {
        match parse_exact(raw) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(self.error_at(
                raw,
                format!("expected an object, found a JSON {}", kind_of(&other)),
            )),
            Err(e) => Err(self.serde_error(raw, &e)),
        }
    }

    /// The value of `raw` with every list (and every large object below the
    /// top) cut to its first elements, enough
    /// to detect a format without parsing a large document twice. Below a
    /// few levels values are parsed whole (serde_json limits their depth).
    ///
    /// Read as a request format (what `serve` reads), nothing is
    /// detected and the sample only tells where the records are, which
    /// their list's first element shows: the lists inside (a request's
    /// messages) are cut to it, and a request in flight is not parsed
    /// twice over its first 50 messages. Other formats' paths look further
    /// into their lists (Zed's first message may be a marker).
    fn sample(&self, raw: &'a str, depth: usize) -> Result<Value, InputError> {
        let request = matches!(
            self.opts.from,
            Some(Format::OpenAi | Format::Anthropic | Format::Responses | Format::Gemini)
        );
        let list = if depth > 0 && request { 1 } else { 50 };
        match raw.trim_start().as_bytes().first() {
            Some(b'[') if depth < 4 => {
                let items = self.list(raw).map_err(|e| self.serde_error(raw, &e))?;
                let sampled = items.iter().take(list).map(|r| self.sample(r, depth + 1));
                Ok(Value::Array(sampled.collect::<Result<_, _>>()?))
            }
            Some(b'{') if depth < 4 => {
                // Below the top, an object of many entries is a map of nodes
                // (a ChatGPT `mapping`, an Open WebUI `history.messages`):
                // its first entries are enough, as a list's are.
                const ENTRIES: usize = 256;
                let entries = self.entries(raw).map_err(|e| self.serde_error(raw, &e))?;
                let take = if depth == 0 { entries.len() } else { ENTRIES };
                let mut map = Map::with_capacity(entries.len().min(take));
                for (k, v) in entries.iter().take(take) {
                    let v = self.sample(v, depth + 1)?;
                    map.insert(k.clone(), v);
                }
                Ok(Value::Object(map))
            }
            _ => self.parse(raw).map_err(|e| self.serde_error(raw, &e)),
        }
    }

    /// The object `part` with the list at `path` left as `null` (unparsed).
    fn envelope(&self, part: &'a str, path: &[&str]) -> Result<Map<String, Value>, InputError> {
        let entries = self.entries(part).map_err(|e| self.serde_error(part, &e))?;
        let mut map = Map::with_capacity(entries.len());
        for (k, raw) in entries.iter() {
            let v = match path {
                [key] if key == k => Value::Null,
                [key, rest @ ..] if key == k => Value::Object(self.envelope(raw, rest)?),
                _ => self.parse(raw).map_err(|e| self.serde_error(raw, &e))?,
            };
            map.insert(k.clone(), v);
        }
        Ok(map)
    }

    /// Reads a conversation object from `part`, a slice of the input text.
    fn conversation(
        &self,
        part: &'a str,
        d: &dyn Dialect,
        format: Format,
    ) -> Result<Conversation, InputError> {
        let sample = match self.sample(part, 0)? {
            Value::Object(map) => map,
            other => {
                return Err(self.error_at(
                    part,
                    format!(
                        "expected a conversation object, found a JSON {}",
                        kind_of(&other)
                    ),
                ))
            }
        };
        self.conversation_of(part, d, format, sample)
    }

    /// Reads a conversation object from `part`, given its sample.
    fn conversation_of(
        &self,
        part: &'a str,
        d: &dyn Dialect,
        format: Format,
        sample: Map<String, Value>,
    ) -> Result<Conversation, InputError> {
        let path = d.records_path(&sample).ok_or_else(|| {
            self.error_at(
                part,
                format!(
                    "no list of messages in this {format} conversation{}",
                    self.hint(format)
                ),
            )
        })?;
        let keyed = d
            .keyed_records()
            .filter(|k| path.is_empty() && sample.get(*k).is_some_and(Value::is_object));
        if let Some(key) = keyed {
            if let Some(conv) = self.keyed(part, d, format, key)? {
                return Ok(conv);
            }
        }
        let (raws, env): (Rc<Vec<&str>>, _) = if path.is_empty() {
            (Rc::default(), self.object(part)?)
        } else {
            let (env, raw) = self.envelope_and_list(part, path)?;
            let raws = self.list(raw).map_err(|_| {
                self.error_at(
                    raw,
                    format!("\"{}\" must be a list of message objects", path.join(".")),
                )
            })?;
            (raws, env)
        };
        let line = self.line_of(part);
        let (messages, notes) = d
            .read_envelope_noted(&env)
            .map_err(|fault| self.error_at(part, fault))?;
        let mut conv = envelope_conversation(env, messages, line);
        conv.notes.extend(notes);
        self.records(&raws, (d, format), &mut conv)?;
        let read = finish(d, &mut conv);
        check_content(d, format, self.modes(), &conv, read).map_err(|e| self.error_at(part, e))?;
        Ok(conv)
    }

    /// Reads a conversation whose records are the values of the object at
    /// `key` (a ChatGPT `mapping`), each held as its span of the text and
    /// parsed only when it is on the conversation's branch; `None` when the
    /// dialect cannot read it so (see [`Dialect::keyed_branch`]).
    fn keyed(
        &self,
        part: &'a str,
        d: &dyn Dialect,
        format: Format,
        key: &str,
    ) -> Result<Option<Conversation>, InputError> {
        let (env, raw) = self.envelope_and_list(part, &[key])?;
        let entries = self.entries(raw).map_err(|e| self.serde_error(raw, &e))?;
        let Some((branch, notes)) = d.keyed_branch(&env, &entries) else {
            return Ok(None);
        };
        let mut conv = envelope_conversation(env, Vec::new(), self.line_of(part));
        conv.records.reserve_exact(entries.len());
        conv.messages.reserve_exact(branch.len());
        let mut on = branch.iter().copied().peekable();
        for (k, (id, raw)) in entries.iter().enumerate() {
            let start = self.offset(raw);
            let rec = Fields::read(self.text, start, start + raw.len());
            let line = self.line_of(raw);
            let first = conv.messages.len();
            if on.next_if_eq(&k).is_some() {
                let parsed = self.record(k, raw)?;
                let msgs = self.read_record(d, k, raw, &parsed)?;
                push_record(&mut conv, rec, None, line, msgs);
                d.seal(&parsed, &mut conv.messages[first..]);
            } else {
                push_record(&mut conv, rec, None, line, Vec::new());
            }
            if let Some(r) = conv.records.last_mut() {
                r.key = Some(id.as_str().into());
            }
        }
        conv.notes.extend(notes);
        let read = finish(d, &mut conv);
        check_content(d, format, self.modes(), &conv, read).map_err(|e| self.error_at(part, e))?;
        Ok(Some(conv))
    }

    /// The object `part` with the list at `path` left as `null`, and the
    /// list's raw text: [`Reader::envelope`] and [`Reader::descend`] in one
    /// pass over each level (a conversation's text is scanned once, not
    /// twice, before its messages are parsed).
    fn envelope_and_list(
        &self,
        part: &'a str,
        path: &[&str],
    ) -> Result<(Map<String, Value>, &'a str), InputError> {
        let entries = self.entries(part).map_err(|e| self.serde_error(part, &e))?;
        let mut map = Map::with_capacity(entries.len());
        let mut found = None;
        for (k, raw) in entries.iter() {
            let v = match path {
                [key] if key == k => {
                    found = Some(*raw);
                    Value::Null
                }
                [key, rest @ ..] if key == k => {
                    let (inner, list) = self.envelope_and_list(raw, rest)?;
                    found = Some(list);
                    Value::Object(inner)
                }
                _ => self.parse(raw).map_err(|e| self.serde_error(raw, &e))?,
            };
            map.insert(k.clone(), v);
        }
        let key = path.first().copied().unwrap_or_default();
        let list = found.ok_or_else(|| self.error_at(part, format!("no \"{key}\"")))?;
        Ok((map, list))
    }

    /// The raw text at a path of keys inside the object `part`, one level at
    /// a time, so that errors inside it can be located.
    fn descend(&self, part: &'a str, path: &[&str]) -> Result<&'a str, InputError> {
        let mut raw: &'a str = part;
        for key in path {
            let entries = self.entries(raw).map_err(|e| self.serde_error(raw, &e))?;
            raw = entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| *v)
                .ok_or_else(|| self.error_at(raw, format!("no \"{key}\"")))?;
        }
        Ok(raw)
    }

    /// Reads the records of a JSON list into `conv`.
    fn records(
        &self,
        raws: &[&str],
        (d, format): (&dyn Dialect, Format),
        conv: &mut Conversation,
    ) -> Result<(), InputError> {
        // Most records hold one message: grown by doubling, a large
        // document's lists would hold up to twice what they need.
        conv.records.reserve_exact(raws.len());
        conv.messages.reserve_exact(raws.len());
        if !d.picks_active() {
            let mut recall = self.opts.recall.as_deref().map(super::Recall::lock);
            // Each record is parsed for its messages and then held as its
            // span of the text: no map per message is kept unless an
            // operation asks for one.
            for (k, &raw) in raws.iter().enumerate() {
                let start = self.offset(raw);
                let span = || Fields::read(self.text, start, start + raw.len());
                let line = self.line_of(raw);
                let first = conv.messages.len();
                if let Some((rec, read)) = recall.as_mut().and_then(|r| r.get(format, raw, span)) {
                    self.known.borrow_mut().push(start..start + raw.len());
                    push_record_sealed(conv, rec, None, line, read);
                    continue;
                }
                let parsed = self.record(k, raw)?;
                let msgs = self.read_record(d, k, raw, &parsed)?;
                let rec = span();
                let msgs = msgs
                    .into_iter()
                    .map(|mut m| {
                        if m.fields.shares(&parsed) {
                            m.fields = rec.clone();
                        }
                        m
                    })
                    .collect();
                push_record(conv, rec.clone(), None, line, msgs);
                // Sealed while the record is parsed: the writer tells them
                // unchanged without parsing it again.
                d.seal(&parsed, &mut conv.messages[first..]);
                // Remembered only without a key twice: a record recalled
                // is not checked for one again.
                if let Some(r) = recall
                    .as_mut()
                    .filter(|_| super::keys::duplicate(raw).is_none())
                {
                    r.put(format, raw, &rec, &conv.messages[first..]);
                    self.known.borrow_mut().push(start..start + raw.len());
                }
            }
            return Ok(());
        }
        let recs = raws
            .iter()
            .enumerate()
            .map(|(k, raw)| self.record(k, raw))
            .collect::<Result<Vec<_>, _>>()?;
        let maps: Vec<_> = recs.iter().map(|r| Some(&**r)).collect();
        let active = active_noted(d, &maps, &mut conv.notes);
        drop(maps);
        for (k, (raw, rec)) in raws.iter().zip(recs).enumerate() {
            if active.as_ref().is_some_and(|a| !a[k]) {
                let line = self.line_of(raw);
                push_record(conv, rec, None, line, Vec::new());
                continue;
            }
            let msgs = self.read_record(d, k, raw, &rec)?;
            let line = self.line_of(raw);
            push_record(conv, rec, None, line, msgs);
        }
        Ok(())
    }

    /// Parses the record at index `k` of a records list.
    fn record(&self, k: usize, raw: &str) -> Result<Fields, InputError> {
        self.object(raw).map(Fields::from).map_err(|e| InputError {
            message: format!("[{k}]: {}", e.message),
            ..e
        })
    }

    /// The messages of the record at index `k`, errors located at it.
    fn read_record(
        &self,
        d: &dyn Dialect,
        k: usize,
        raw: &str,
        rec: &Fields,
    ) -> Result<Vec<Message>, InputError> {
        d.read_record(rec)
            .map_err(|fault| self.error_at(raw, format!("[{k}]: {fault}")))
    }

    fn read_jsonl(&mut self, doc: &mut Document) -> Result<(), InputError> {
        let text = self.text;
        let last_content = text.trim_end().len();
        // Split into lines, parsing each once.
        let mut lines: Vec<JsonlLine<'a>> = Vec::new();
        let mut offset = 0;
        let mut tail = None; // where what follows the last line starts

        // Line ends of both kinds: each line keeps its own `\r` in its text
        // (JSON takes it as whitespace), and lines are joined by `\n`.
        let mixed = {
            let ends = memchr::memchr_iter(b'\n', text[..last_content].as_bytes()).count();
            let crlf = memchr::memmem::find_iter(text[..last_content].as_bytes(), b"\r\n").count();
            crlf > 0 && crlf < ends
        };
        if mixed {
            doc.style.crlf = false;
        }
        for (i, raw_line) in text.split_inclusive('\n').enumerate() {
            let start = offset;
            offset += raw_line.len();
            if start >= last_content {
                break; // trailing blank lines, kept in the style's tail
            }
            let line = raw_line.trim_end_matches('\n');
            let line = if mixed {
                line
            } else {
                line.trim_end_matches('\r')
            };
            tail = Some(start + line.len());
            let line_no = i + 1 + self.opts.chunk.map_or(0, |c| c.line);
            lines.push((
                line_no,
                line,
                self.jsonl_object(line, line_no).map(Fields::from),
            ));
        }
        if let Some(t) = tail {
            doc.style.tail = text[t..].to_string();
        }
        let sample: Vec<&Map<String, Value>> = lines
            .iter()
            .filter_map(|(_, _, r)| r.as_deref().ok())
            .take(50)
            .collect();
        let (format, per_line_conversations) = match self.opts.from {
            Some(f) => (
                f,
                sample
                    .first()
                    .is_some_and(|o| dialect(f).records_path(o).is_some()),
            ),
            None => match detect::jsonl(&sample) {
                Ok(found) => found,
                Err(e) => {
                    let line_no = lines
                        .iter()
                        .find(|(_, _, r)| r.is_ok())
                        .map_or(1, |(n, _, _)| *n);
                    return Err(InputError::new(self.source, line_no, Some(1), e));
                }
            },
        };
        doc.source_format = format;
        if per_line_conversations {
            doc.layout = Layout::JsonlConversations;
            self.read_conversation_lines(lines, format, doc)
        } else {
            doc.layout = Layout::JsonlRecords;
            self.read_record_lines(lines, format, doc)
        }
    }

    /// A JSONL file of conversations, a line each.
    fn read_conversation_lines(
        &mut self,
        lines: Vec<JsonlLine<'a>>,
        format: Format,
        doc: &mut Document,
    ) -> Result<(), InputError> {
        let d = dialect(format);
        self.many.set(lines.len() > 1 || self.opts.chunk.is_some());
        let modes = self.modes();
        for (line_no, line, parsed) in lines {
            // A conversation of another format is not read as this one
            // (its tool calls would be lost).
            let parsed = parsed.and_then(|map| match detect::misfit(format, &map) {
            Some(other) => Err(InputError::new(
                self.source,
                line_no,
                Some(1),
                format!(
                    "this line reads as {other}, the file as {format}: each line must be in the file's format"
                ),
            )),
            None => Ok(map),
        });
            // The line is parsed already: build the conversation from
            // its value, and only when that fails read the text again
            // to locate the error precisely.
            let result = parsed.and_then(|map| {
                match conversation_from_value(map.into_map(), d, format, line_no, modes) {
                    Some(conv) => Ok(conv),
                    None => self.conversation(line, d, format),
                }
            });
            match result {
                Ok(mut conv) => {
                    conv.line = line_no;
                    conv.text = Some(self.line(line));
                    doc.conversations.push(conv);
                }
                Err(err) => {
                    self.skip(err, doc)?;
                    doc.passthrough.push((doc.conversations.len(), line.into()));
                }
            }
        }
        Ok(())
    }

    /// A JSONL file of records making one conversation (a session log).
    fn read_record_lines(
        &mut self,
        lines: Vec<JsonlLine<'a>>,
        format: Format,
        doc: &mut Document,
    ) -> Result<(), InputError> {
        let d = dialect(format);
        let mut conv = Conversation::new(Vec::new());
        let maps: Vec<Option<&Map<String, Value>>> = lines
            .iter()
            .map(|(_, _, r)| r.as_ref().ok().map(|f| &**f))
            .collect();
        let active = active_noted(d, &maps, &mut conv.notes);
        drop(maps);
        for (k, (line_no, line, parsed)) in lines.into_iter().enumerate() {
            if active.as_ref().is_some_and(|a| !a[k]) {
                if let Ok(rec) = parsed {
                    push_record(&mut conv, rec, Some(self.line(line)), line_no, Vec::new());
                    continue;
                }
            }
            let result = parsed.and_then(|rec| match d.read_record(&rec) {
                Ok(msgs) => Ok((rec, msgs)),
                Err(fault) => Err(InputError::new(self.source, line_no, Some(1), fault)),
            });
            match result {
                Ok((rec, msgs)) => {
                    push_record(&mut conv, rec, Some(self.line(line)), line_no, msgs)
                }
                Err(err) => {
                    self.skip(err, doc)?;
                    conv.records.push(Record {
                        value: None,
                        text: Some(self.line(line)),
                        line: line_no,
                        messages: 0,
                        key: None,
                    });
                }
            }
        }
        let read = finish(d, &mut conv);
        if let Err(e) = check_content(d, format, self.modes(), &conv, read) {
            let line = conv.records.first().map_or(1, |r| r.line);
            return Err(InputError::new(self.source, line, Some(1), e));
        }
        doc.conversations.push(conv);
        Ok(())
    }

    /// A line of the text, held as its span (not copied).
    fn line(&self, line: &str) -> Line {
        let start = self.offset(line);
        Line::span(self.text, start, start + line.len())
    }

    fn skip(&self, err: InputError, doc: &mut Document) -> Result<(), InputError> {
        if self.opts.skip_invalid {
            doc.skipped.push(err);
            Ok(())
        } else {
            Err(InputError {
                message: format!("{} (--skip-invalid skips such lines)", err.message),
                ..err
            })
        }
    }

    /// Parses one JSONL line as an object.
    fn jsonl_object(&self, line: &str, line_no: usize) -> Result<Map<String, Value>, InputError> {
        let err = |col: usize, msg: String| InputError::new(self.source, line_no, Some(col), msg);
        if line.trim().is_empty() {
            return Err(err(1, "blank line in JSONL".into()));
        }
        if line.trim_start().starts_with("//") {
            return Err(err(1, "comment line: JSONL has no comments".into()));
        }
        match crate::json::parse_unique(line) {
            Ok(Value::Object(map)) => Ok(map),
            Err(e) if crate::json::is_duplicate(&e) => Err(match super::keys::duplicate(line) {
                Some((at, key)) => err(line[..at].chars().count() + 1, duplicate_message(key)),
                // The same key written two ways (`"a"`, `"\u0061"`).
                None => err(
                    e.column().max(1),
                    "a key twice in one object (once written with escapes): JSON readers \
                     disagree on which one counts, so ctxclean takes neither"
                        .into(),
                ),
            }),
            Ok(other) => Err(err(
                1,
                format!("expected a JSON object, found a JSON {}", kind_of(&other)),
            )),
            Err(e) => Err(err(e.column().max(1), serde_message(&e))),
        }
    }
}

/// A conversation from a parsed conversation object, as
/// [`Reader::conversation`] reads it from text; `None` on any fault (the
/// text path then reports it with its position).
fn conversation_from_value(
    mut obj: Map<String, Value>,
    d: &dyn Dialect,
    format: Format,
    line: usize,
    modes: (bool, bool),
) -> Option<Conversation> {
    let path = d.records_path(&obj)?;
    let list = if path.is_empty() {
        Vec::new()
    } else {
        // Take the list out, leaving `null` in the envelope.
        let mut at = &mut obj;
        for key in &path[..path.len() - 1] {
            at = at.get_mut(*key)?.as_object_mut()?;
        }
        match at.get_mut(path[path.len() - 1])? {
            v @ Value::Array(_) => match std::mem::take(v) {
                Value::Array(items) => items,
                _ => return None,
            },
            _ => return None,
        }
    };
    let mut recs = Vec::with_capacity(list.len());
    for item in list {
        match item {
            Value::Object(map) => recs.push(Fields::from(map)),
            _ => return None,
        }
    }
    let (messages, notes) = d.read_envelope_noted(&obj).ok()?;
    let mut conv = envelope_conversation(obj, messages, line);
    conv.notes.extend(notes);
    let maps: Vec<_> = recs.iter().map(|r| Some(&**r)).collect();
    let active = active_noted(d, &maps, &mut conv.notes);
    drop(maps);
    for (k, rec) in recs.into_iter().enumerate() {
        if active.as_ref().is_some_and(|a| !a[k]) {
            push_record(&mut conv, rec, None, line, Vec::new());
            continue;
        }
        let msgs = d.read_record(&rec).ok()?;
        push_record(&mut conv, rec, None, line, msgs);
    }
    let read = finish(d, &mut conv);
    check_content(d, format, modes, &conv, read).ok()?;
    Some(conv)
}

/// Refuses a conversation in which no message has content: the format
/// matched by its shape, but its messages keep their text under a key this
/// format does not have.
fn check_content(
    d: &dyn Dialect,
    format: Format,
    (forced, many): (bool, bool),
    conv: &Conversation,
    read: bool,
) -> Result<(), String> {
    let Some(key) = d.content_key() else {
        return Ok(());
    };
    let first_keys = || {
        conv.records
            .iter()
            .find_map(|r| r.value.as_ref())
            .map(|v| {
                v.keys()
                    .map(String::as_str)
                    .take(8)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    // A format named with --from that no record is a message of is an
    // error, never an empty conversation written as if it were one; unless
    // the format said why its records make no message (a stream whose
    // chunks do not add up, a Letta agent with nothing in context). So is
    // one conversation of several, with --from or without: the others say
    // what the format is (a JSONL line of them is skipped with
    // --skip-invalid).
    if (forced || many)
        && !read
        && conv.notes.is_empty()
        && conv.records.iter().any(|r| r.value.is_some())
    {
        return Err(format!(
            "no record is a {format} message (the first has: {}){}",
            first_keys(),
            if forced {
                format!(" (read as {format} because of --from)")
            } else {
                String::new()
            }
        ));
    }
    let empty = |m: &Message| {
        m.content == crate::transcript::Content::Absent
            && m.tool_calls.is_none()
            && m.tool_call_id.is_none()
    };
    if conv.messages.is_empty() || !conv.messages.iter().all(empty) {
        return Ok(());
    }
    let keys = first_keys();
    Err(format!(
        "no message has \"{key}\", so it cannot be read as {format} (the first message has: {keys}){}",
        if forced {
            format!(" (read as {format} because of --from)")
        } else {
            "; use --from to name its format".to_string()
        }
    ))
}

/// Ends the reading of a conversation: the dialect's last pass (see
/// [`Dialect::after_read`]), then every message's position and every
/// record's message count made true again. Whether any record was read as
/// a message, before that pass (which may leave out what the agent does not
/// send: Letta's messages out of context) or in it.
fn finish(d: &dyn Dialect, conv: &mut Conversation) -> bool {
    let before = !conv.messages.is_empty();
    d.after_read(conv);
    // Or made in that pass (a stream's chunks put together).
    let read = before || !conv.messages.is_empty();
    for r in &mut conv.records {
        r.messages = 0;
    }
    for (index, m) in conv.messages.iter_mut().enumerate() {
        if let Some(o) = m.origin.as_mut() {
            o.index = index;
            if let Some(r) = o.record {
                conv.records[r].messages += 1;
            }
        }
    }
    read
}

/// [`Dialect::active`] of a conversation's records, and the note on what it
/// passes over ([`Dialect::passed_over_note`]) added to `notes`.
fn active_noted(
    d: &dyn Dialect,
    maps: &[Option<&Map<String, Value>>],
    notes: &mut Vec<String>,
) -> Option<Vec<bool>> {
    let active = d.active(maps)?;
    notes.extend(d.passed_over_note(maps, &active));
    Some(active)
}

/// A conversation holding its envelope and the messages read from it (a
/// system prompt kept outside the message list), before its records.
fn envelope_conversation(
    env: Map<String, Value>,
    mut messages: Vec<Message>,
    line: usize,
) -> Conversation {
    for (sub, m) in messages.iter_mut().enumerate() {
        m.origin = Some(Origin {
            index: sub,
            line,
            record: None,
            sub,
            seal: 0,
        });
    }
    Conversation {
        envelope: Some(env),
        line,
        ..Conversation::new(messages)
    }
}

/// Appends a record and the messages read from it.
fn push_record(
    conv: &mut Conversation,
    rec: Fields,
    text: Option<Line>,
    line: usize,
    msgs: Vec<Message>,
) {
    let msgs = msgs.into_iter().map(|m| (m, 0));
    push_record_sealed(conv, rec, text, line, msgs);
}

/// [`push_record`], each message with its seal (a record recalled: its
/// messages were sealed when it was first read).
fn push_record_sealed(
    conv: &mut Conversation,
    rec: Fields,
    text: Option<Line>,
    line: usize,
    msgs: impl IntoIterator<Item = (Message, u64)>,
) {
    let record = conv.records.len();
    let first = conv.messages.len();
    for (sub, (mut m, seal)) in msgs.into_iter().enumerate() {
        m.origin = Some(Origin {
            index: conv.messages.len(),
            line,
            record: Some(record),
            sub,
            seal,
        });
        conv.messages.push(m);
    }
    let count = conv.messages.len() - first;
    conv.records.push(Record {
        value: Some(rec),
        text,
        line,
        messages: count,
        key: None,
    });
}

/// A serde_json message without its " at line L column C" suffix.
fn serde_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn duplicate_message(key: &str) -> String {
    format!(
        "the key \"{key}\" twice in one object: JSON readers disagree on which one counts \
         (Python's json takes the last), so ctxclean takes neither"
    )
}

/// A JSON value read for the keys of its top object only: everything below
/// them is checked and skipped, not built.
enum TopKeys {
    Object(std::collections::HashSet<String>),
    Other,
}

impl<'de> Deserialize<'de> for TopKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, SeqAccess};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopKeys, A::Error> {
                let mut keys = std::collections::HashSet::new();
                while let Some((k, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                    keys.insert(k);
                }
                Ok(TopKeys::Object(keys))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopKeys, A::Error> {
                while let Some(IgnoredAny) = seq.next_element()? {}
                Ok(TopKeys::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
            fn visit_unit<E>(self) -> Result<TopKeys, E> {
                Ok(TopKeys::Other)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Document, InputError> {
        read_document("t", text.as_bytes().to_vec(), &ReadOptions::default())
    }

    /// A JSONL line is held as where it lies in the input, not copied: a
    /// session log's lines are most of what it holds.
    #[test]
    fn a_jsonl_lines_text_is_its_span_of_the_input() {
        // Where each text starts, counted from the first line's start.
        fn offsets<'t>(texts: impl Iterator<Item = &'t str>) -> Vec<usize> {
            let texts: Vec<&str> = texts.collect();
            let first = texts[0].as_ptr() as usize;
            texts.iter().map(|t| t.as_ptr() as usize - first).collect()
        }
        let lines = [
            r#"{"role":"user","content":"first"}"#,
            r#"{"role":"assistant","content":"second, longer"}"#,
            r#"{"role":"user","content":"third"}"#,
        ];
        // LF and CRLF: a line's text is without its end, and the next
        // starts after it.
        for end in ["\n", "\r\n"] {
            let doc = read(&(lines.join(end) + end)).unwrap();
            assert_eq!(doc.layout, Layout::JsonlRecords);
            let conv = &doc.conversations[0];
            let texts = conv.records.iter().map(|r| r.text.as_deref().unwrap());
            assert_eq!(texts.clone().collect::<Vec<_>>(), lines);
            let mut expected = vec![0];
            for l in &lines[..2] {
                expected.push(expected.last().unwrap() + l.len() + end.len());
            }
            assert_eq!(offsets(texts), expected);
        }
        let convs = [
            r#"{"messages":[{"role":"user","content":"one"}]}"#,
            r#"{"messages":[{"role":"user","content":"two, longer"}]}"#,
        ];
        let doc = read(&(convs.join("\n") + "\n")).unwrap();
        assert_eq!(doc.layout, Layout::JsonlConversations);
        let texts = doc.conversations.iter().map(|c| c.text.as_deref().unwrap());
        assert_eq!(texts.clone().collect::<Vec<_>>(), convs);
        assert_eq!(offsets(texts), [0, convs[0].len() + 1]);
    }

    #[test]
    fn detects_layouts() {
        let layout = |t: &str| read(t).unwrap().layout;
        assert_eq!(layout(""), Layout::Empty);
        assert_eq!(layout(" \n\t"), Layout::Empty);
        assert_eq!(layout(r#"{"messages":[]}"#), Layout::Object);
        assert_eq!(layout("{\n \"messages\": []\n}\n"), Layout::Object);
        assert_eq!(
            layout(r#"[{"role":"user","content":"x"}]"#),
            Layout::Records
        );
        assert_eq!(layout("[]"), Layout::Records);
        assert_eq!(layout(r#"[{"messages":[]}]"#), Layout::Conversations);
        assert_eq!(
            layout(r#"{"role":"user","content":"x"}"#),
            Layout::JsonlRecords
        );
        assert_eq!(
            layout("{\"role\":\"user\",\"content\":\"x\"}\n{\"role\":\"assistant\",\"content\":\"y\"}\n"),
            Layout::JsonlRecords
        );
        assert_eq!(
            layout("{\"messages\":[]}\n{\"messages\":[]}\n"),
            Layout::JsonlConversations
        );
    }

    #[test]
    fn errors_are_located() {
        let e = read("{\"role\":\"user\",\"content\":\"x\"}\n{\"role\":5}\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, Some(1)));
        assert!(
            e.message.contains("\"role\" must be a string"),
            "{}",
            e.message
        );

        let e =
            read("{\"messages\": [\n  {\"role\": \"user\"},\n  {\"content\": 1}\n]}").unwrap_err();
        assert_eq!((e.line, e.column), (3, Some(3)));
        assert!(e.message.starts_with("[1]: "), "{}", e.message);

        let e = read("{\"messages\": [\n  {\"role\": \"user\",}\n]}").unwrap_err();
        assert_eq!(e.line, 2);

        let e = read("5").unwrap_err();
        assert!(e.message.contains("a JSON number is not a transcript"));

        let e = read(r#"{"messages": 5}"#).unwrap_err();
        assert_eq!(e.column, Some(14));
        assert!(
            e.message.contains("\"messages\" must be a list"),
            "{}",
            e.message
        );

        let e = read("{\"role\":\"user\"}\n{\"role\":\"user\"\n{\"role\":\"user\"}\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn invalid_utf8_is_located() {
        let e = read_document(
            "t",
            b"{\"messages\":[\n{\"role\":\"\xff\"}]}".to_vec(),
            &ReadOptions::default(),
        )
        .unwrap_err();
        assert_eq!((e.line, e.column), (2, Some(10)));
        assert!(e.message.contains("UTF-8"));
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let doc = read("\u{feff}{\"role\":\"user\",\"content\":\"a\"}\r\n{\"role\":\"user\",\"content\":\"b\"}\r\n")
            .unwrap();
        assert_eq!(doc.message_count(), 2);
        assert!(doc.style.crlf);
    }

    #[test]
    fn skip_invalid_keeps_lines_in_place() {
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let text = "// note\n{\"role\":\"user\",\"content\":\"a\"}\n\n{oops\n{\"role\":\"user\",\"content\":\"b\"}\n";
        let doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        assert_eq!(doc.skipped.len(), 3);
        assert_eq!(doc.skipped[0].line, 1);
        assert_eq!(doc.skipped[2].line, 4);
        let conv = &doc.conversations[0];
        assert_eq!(conv.messages.len(), 2);
        assert_eq!(conv.records.len(), 5);
        let e = read(text).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("--skip-invalid"));
    }

    /// A document large enough to be read trusting its spans, broken in
    /// many ways: the trusting read fails exactly as the checking one does
    /// (same message, line and column), and succeeds only when it does,
    /// with the same output. (Debug builds also assert that whatever a
    /// trusting read accepts is valid JSON.)
    #[test]
    fn trusting_a_large_document_changes_no_answer() {
        let mut msgs = Vec::new();
        for i in 0..400 {
            msgs.push(format!(
                r#"{{"role":"user","content":"q{i} caf\u00e9 \"quoted\" \\ [{{x}}]"}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{\"a\":[1,2]}}"}}}}]}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"tool","tool_call_id":"c{i}","content":"r{i}"}}"#
            ));
        }
        let shapes = [
            format!(r#"{{"model":"m","messages":[{}],"n":1}}"#, msgs.join(",")),
            format!("[\n{}\n]\n", msgs.join(",\n")),
            format!(
                r#"{{"conversations":[{{"messages":[{}]}}]}}"#,
                msgs.join(",")
            ),
        ];
        let breaks: [&[u8]; 12] = [
            b"", b"[", b"]", b"{", b"}", b"\"", b",", b":", b"\\", b"\x01", b"x", b" ,",
        ];
        let mut seed = 7u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let written = |d: &Document| {
            let mut out = Vec::new();
            crate::format::write_document(d, &mut out).unwrap();
            out
        };
        let mut failed = 0;
        for text in &shapes {
            assert!(text.len() >= SPLIT_MEMO);
            for _ in 0..60 {
                let mut bytes = text.as_bytes().to_vec();
                let at = next(bytes.len());
                let with = breaks[next(breaks.len())];
                // A byte removed, or `with` put in its place or before it.
                let (cut, with) = match next(3) {
                    0 => (1, &b""[..]),
                    1 => (0, with),
                    _ => (1, with),
                };
                let tail = bytes.split_off((at + cut).min(bytes.len()));
                bytes.truncate(at);
                bytes.extend_from_slice(with);
                bytes.extend(tail);
                let opts = ReadOptions::default();
                let trusting = read_document_with("t", bytes.clone(), &opts, true, SPLIT_MEMO);
                let checking = read_document_with("t", bytes, &opts, false, SPLIT_MEMO);
                match (trusting, checking) {
                    (Ok(a), Ok(b)) => assert_eq!(written(&a), written(&b)),
                    (Err(a), Err(b)) => {
                        assert_eq!(
                            (a.line, a.column, &a.message),
                            (b.line, b.column, &b.message)
                        );
                        failed += 1;
                    }
                    (a, b) => panic!("trusting: {:?}; checking: {:?}", a.err(), b.err()),
                }
            }
        }
        assert!(failed > 60, "the breaks should mostly break: {failed}");
    }

    /// Every fixture, and many breakages of each, read trusting every
    /// span (not only those of 64 KiB and more) and checking every span:
    /// in two halves, which run side by side.
    #[test]
    fn trusting_every_span_of_the_fixtures_changes_no_answer() {
        trusting_every_span_of(0);
    }

    #[test]
    fn trusting_every_span_of_the_other_fixtures_changes_no_answer() {
        trusting_every_span_of(1);
    }

    /// The sweep above over every other fixture, from the `half`-th.
    fn trusting_every_span_of(half: usize) {
        let mut files = Vec::new();
        let mut dirs =
            vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path
                    .extension()
                    .is_some_and(|e| e == "json" || e == "jsonl" || e == "traj" || e == "af")
                {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() > 50, "{}", files.len());
        let breaks: [&[u8]; 10] = [
            b"", b"[", b"]", b"{", b"}", b"\"", b",", b":", b"\\", b"\x01",
        ];
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n.max(1)
        };
        let opts = ReadOptions::default();
        for (n, path) in files.into_iter().enumerate() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.len() > 200_000 {
                continue;
            }
            // Each half draws the same breakages of its files as one sweep
            // over all of them did.
            let breakages: Vec<(usize, &[u8], usize)> = (0..20)
                .map(|_| {
                    let at = next(bytes.len());
                    (at, breaks[next(breaks.len())], next(2))
                })
                .collect();
            if n % 2 != half {
                continue;
            }
            compare_trusting(&bytes, &opts);
            for (at, with, skip) in breakages {
                let mut broken = bytes[..at].to_vec();
                broken.extend_from_slice(with);
                broken.extend_from_slice(&bytes[(at + skip).min(bytes.len())..]);
                compare_trusting(&broken, &opts);
            }
        }
    }

    #[test]
    fn detects_indentation() {
        // What follows the first line.
        assert_eq!(detect_indent("    \"a\": 1\n}"), Some("    ".into()));
        assert_eq!(detect_indent("}"), None);
        let indent = |t: &str| read(t).unwrap().style.indent;
        assert_eq!(indent("{\n  \"messages\": []\n}"), Some("  ".into()));
        assert_eq!(indent("{\"messages\": []}"), None);
        assert_eq!(indent("{\"messages\": []}\n"), None);
    }

    /// One conversation of several that makes no message is an error, with
    /// --from as without (found by fuzzing read_auto: a list of Gemini
    /// answers, one with a mangled key, read as an empty conversation
    /// without --from and refused with it).
    #[test]
    fn a_conversation_of_several_without_messages_is_an_error() {
        let answer = |key: &str, text: &str| {
            format!(
                r#"{{"candidates":[{{"{key}":{{"parts":[{{"text":"{text}"}}],"role":"model"}},"index":0}}],"modelVersion":"gemini-2.5-flash"}}"#
            )
        };
        let text = format!(
            "[{},{}]",
            answer("content ", "The capital of"),
            answer("content", " Portugal is Lisbon.")
        );
        let err = read(&text).unwrap_err();
        assert!(
            err.message.contains("no record is a gemini message"),
            "{}",
            err.message
        );
        let from = ReadOptions {
            from: Some(Format::Gemini),
            ..ReadOptions::default()
        };
        let err = read_document("t", text.as_bytes().to_vec(), &from).unwrap_err();
        assert!(
            err.message.contains("no record is a gemini message"),
            "{}",
            err.message
        );
        // Both answers whole, it reads.
        let good = format!("[{},{}]", answer("content", "a"), answer("content", "b"));
        assert_eq!(read(&good).unwrap().conversations.len(), 2);
        // Alone, with --from, it is still refused.
        let alone = format!("[{}]", answer("content ", "x"));
        let err = read_document("t", alone.into_bytes(), &from).unwrap_err();
        assert!(err.message.contains("no record is a"), "{}", err.message);
    }
}
