//! Writing a [`Document`] back, in the shape and format it came in (or
//! converted with `--to`).
//!
//! Lossless by default: a record whose messages are unchanged is written
//! back as it came, byte for byte in JSONL; a JSON document in which nothing
//! changed is written back byte for byte; otherwise it is re-serialized with
//! the input's indentation. Records no message was read from (Claude Code
//! progress lines, skipped invalid lines) stay where they were.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::dialect::{Dialect, Loss, OutRecord};
use super::{dialect, Document, Format, Layout};
use crate::transcript::{Conversation, Fields, Message};

/// What writing one conversation could not do as asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// What the target format could not express: a conversion's losses, and
    /// messages an operation added that the format cannot take.
    pub losses: Vec<Loss>,
    /// What the writer decided where the input was silent (an output limit
    /// set because the target requires one), told in the report.
    pub notes: Vec<String>,
    /// Each record of the conversation's list as written, in its format;
    /// `None` when it was converted to another format (whose records are
    /// not the input's).
    pub records: Option<Vec<RecordOut>>,
}

/// A record written: which input record it is, and whether it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordOut {
    /// The input record (its position in the conversation's list) it is,
    /// as read or rewritten; `None` for a record an operation added.
    pub input: Option<usize>,
    /// Whether it differs from the input record.
    pub changed: bool,
}

/// Writes a document to `out`, in its source format (lossless), or
/// converted to a request format (see [`super::request`]); returns, per
/// conversation, what could not be written as asked. Converting to a log
/// or export format is refused: those are written only from their own kind.
pub fn write_document<W: Write + ?Sized>(doc: &Document, out: &mut W) -> io::Result<Vec<Written>> {
    match write_changed(doc, Vec::new(), out)? {
        Wrote::All(written) => Ok(written),
        Wrote::Unchanged(written) => {
            out.write_all(
                doc.style
                    .original
                    .as_deref()
                    .map_or(&[][..], |t| t.as_bytes()),
            )?;
            Ok(written)
        }
    }
}

/// [`write_document`] into a buffer, for a document that is done with. A
/// document written back unchanged hands its text over rather than copying
/// it, so a large document's output does not hold it twice: the text is
/// returned, and what is written is `out` followed by it.
pub fn write_document_into(
    doc: &mut Document,
    out: &mut Vec<u8>,
) -> io::Result<(Vec<Written>, Option<Arc<String>>)> {
    // An envelope that holds the messages themselves (a ChatGPT export's
    // tree) is written in place rather than copied: the document is done
    // with, and a copy of a large export's tree would double its memory.
    let taken = if doc.format == doc.source_format {
        let d = dialect(doc.source_format);
        let holds_messages = |e: &mut Map<String, Value>| {
            d.records_path(&restore_path_probe(e))
                .is_some_and(<[_]>::is_empty)
        };
        doc.conversations
            .iter_mut()
            .map(|c| c.envelope.take_if(holds_messages))
            .collect()
    } else {
        Vec::new()
    };
    match write_changed(doc, taken, out)? {
        Wrote::All(written) => Ok((written, None)),
        Wrote::Unchanged(written) => Ok((
            written,
            doc.style.original.take().map(|o| Arc::clone(&o.text)),
        )),
    }
}

/// What [`write_changed`] wrote.
enum Wrote {
    /// Everything.
    All(Vec<Written>),
    /// Nothing of a document in which nothing changed: its original text
    /// (after any byte order mark) is what goes out.
    Unchanged(Vec<Written>),
}

/// `taken`: per conversation, its envelope when it was taken out of the
/// document to be written in place (see [`write_document_into`]).
fn write_changed<W: Write + ?Sized>(
    doc: &Document,
    mut taken: Vec<Option<Map<String, Value>>>,
    out: &mut W,
) -> io::Result<Wrote> {
    let newline: &[u8] = if doc.style.crlf { b"\r\n" } else { b"\n" };
    if doc.format != doc.source_format {
        if !doc.format.is_request() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is written only from {} input (request formats: {})",
                    doc.format,
                    doc.format,
                    Format::REQUEST.map(Format::name).join(", ")
                ),
            ));
        }
        return write_requests(doc, out, newline).map(Wrote::All);
    }
    let rendered: Vec<Rendered> = doc
        .conversations
        .iter()
        .enumerate()
        .map(|(i, conv)| render(doc, i, conv, taken.get_mut(i).and_then(Option::take)))
        .collect();
    let losses = rendered
        .iter()
        .map(|r| Written {
            losses: r.losses.clone(),
            notes: Vec::new(),
            records: Some(
                r.records
                    .iter()
                    .filter(|o| RecordJson::of(o).is_some())
                    .map(|o| RecordOut {
                        input: o.from,
                        changed: o.changed,
                    })
                    .collect(),
            ),
        })
        .collect();
    // A byte order mark is part of the file as it came.
    if doc.style.bom {
        out.write_all(super::read::BOM)?;
    }
    match doc.layout {
        // Whitespace only: written back as it came.
        Layout::Empty => out.write_all(doc.style.tail.as_bytes())?,
        Layout::JsonlRecords => write_record_lines(doc, &rendered, out, newline)?,
        Layout::JsonlConversations => write_conversation_lines(doc, rendered, out, newline)?,
        Layout::Object | Layout::Records | Layout::Conversations | Layout::Wrapped => {
            if doc.style.original.is_some() && rendered.iter().all(|r| r.unchanged) {
                return Ok(Wrote::Unchanged(losses));
            }
            if doc.style.journal {
                write_journal(doc, &rendered, out)?;
                return Ok(Wrote::All(losses));
            }
            if !write_one_line(doc, &rendered, &mut *out)? {
                write_whole(doc, &rendered, out)?;
            }
        }
    }
    Ok(Wrote::All(losses))
}

/// A changed Copilot Chat operation log: one snapshot line of the session
/// as it now is, as VS Code compacts a log.
fn write_journal<W: Write + ?Sized>(
    doc: &Document,
    rendered: &[Rendered],
    out: &mut W,
) -> io::Result<()> {
    let mut session = Vec::new();
    write_whole(doc, rendered, &mut session)?;
    let end = session.trim_ascii_end().len();
    out.write_all(b"{\"kind\":0,\"v\":")?;
    out.write_all(&session[..end])?;
    out.write_all(b"}")?;
    out.write_all(doc.style.tail.as_bytes())
}

/// A JSONL file of records (a Claude Code session): each record's line,
/// as it came when unchanged.
fn write_record_lines<W: Write + ?Sized>(
    doc: &Document,
    rendered: &[Rendered],
    out: &mut W,
    newline: &[u8],
) -> io::Result<()> {
    let mut lines = Lines {
        out,
        newline,
        written: false,
    };
    for (r, conv) in rendered.iter().zip(&doc.conversations) {
        let mut spellings = Lazy::new(|| conv_spellings(conv));
        for rec in &r.records {
            match (&rec.text, RecordJson::of(rec)) {
                (Some(text), _) => lines.text(text)?,
                (None, Some(v)) => {
                    lines.value(&v, spellings.get())?;
                    // A line of a file of mixed line ends keeps its own.
                    let was = rec.from.and_then(|f| conv.records.get(f)?.text.as_deref());
                    if was.is_some_and(|t| t.ends_with('\r')) {
                        lines.out.write_all(b"\r")?;
                    }
                }
                (None, None) => {}
            }
        }
    }
    if lines.written {
        lines.out.write_all(doc.style.tail.as_bytes())?;
    }
    Ok(())
}

/// A JSONL file of conversations: a line each, with the lines that are not
/// conversations back where they were.
fn write_conversation_lines<W: Write + ?Sized>(
    doc: &Document,
    rendered: Vec<Rendered>,
    out: &mut W,
    newline: &[u8],
) -> io::Result<()> {
    let mut lines = Lines {
        out,
        newline,
        written: false,
    };
    let mut pending = doc.passthrough.iter().peekable();
    for (i, r) in rendered.into_iter().enumerate() {
        while let Some((_, line)) = pending.next_if(|(anchor, _)| *anchor <= i) {
            lines.text(line)?;
        }
        let conv = &doc.conversations[i];
        let text = conv.text.as_deref();
        match (text, text.and_then(|t| splice_span(t, conv, &r))) {
            (Some(text), _) if r.unchanged => lines.text(text)?,
            // Only the records changed: the line around them comes back as
            // it was, byte for byte (a batch line's ids, a capture's
            // headers, their spacing).
            (Some(text), Some(splice)) => {
                lines.start()?;
                let numbers = conv_spellings(conv);
                write_spliced(&mut *lines.out, text, splice, &r, numbers.as_ref())?;
            }
            _ => {
                lines.value(&r.json(doc.layout), conv_spellings(conv).as_ref())?;
                if text.is_some_and(|t| t.ends_with('\r')) {
                    lines.out.write_all(b"\r")?; // mixed line ends: its own
                }
            }
        }
    }
    for (_, line) in pending {
        lines.text(line)?;
    }
    if lines.written {
        lines.out.write_all(doc.style.tail.as_bytes())?;
    }
    Ok(())
}

/// A JSON document, whole, in its own indentation and line ends.
fn write_whole<W: Write + ?Sized>(
    doc: &Document,
    rendered: &[Rendered],
    out: &mut W,
) -> io::Result<()> {
    let value = DocumentJson {
        rendered,
        layout: doc.layout,
        wrapper: doc.style.wrapper.as_ref(),
    };
    let spellings = doc_spellings(doc);
    if doc.style.crlf {
        let mut buf = Vec::new();
        super::numbers::to_writer(
            &mut buf,
            &value,
            doc.style.indent.as_deref(),
            spellings.as_deref(),
        )?;
        out.write_all(&crlf(&buf))?;
    } else {
        // Straight to the output (buffered by the caller): a whole document
        // is never held twice as bytes.
        super::numbers::to_writer(
            &mut *out,
            &value,
            doc.style.indent.as_deref(),
            spellings.as_deref(),
        )?;
    }
    out.write_all(doc.style.tail.as_bytes())
}

/// One conversation, ready to write.
struct Rendered {
    envelope: Option<Map<String, Value>>,
    records: Vec<OutRecord>,
    /// For records that are the values of an object (a ChatGPT `mapping`):
    /// each one's key, in step with `records`.
    keys: Option<Vec<Box<str>>>,
    path: &'static [&'static str],
    unchanged: bool,
    losses: Vec<Loss>,
}

impl Rendered {
    /// The conversation as one JSON value: its envelope with the records in
    /// place, or the bare list of records. Serialized from the rendering as
    /// it stands: records written as they were read are not copied.
    fn json(&self, layout: Layout) -> ConversationJson<'_> {
        ConversationJson {
            rendered: self,
            layout,
        }
    }
}

/// A whole document: one conversation, or a list of them (inside the
/// object that wraps them, for an export that keeps them under a key).
struct DocumentJson<'a> {
    rendered: &'a [Rendered],
    layout: Layout,
    wrapper: Option<&'a (Map<String, Value>, &'static [&'static str])>,
}

/// The conversations of a wrapped export, as a list.
#[derive(Clone, Copy)]
struct ConversationsJson<'a> {
    rendered: &'a [Rendered],
}

impl Serialize for ConversationsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.rendered.len()))?;
        for r in self.rendered {
            seq.serialize_element(&r.json(Layout::Conversations))?;
        }
        seq.end()
    }
}

impl Serialize for DocumentJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if let (Layout::Wrapped, Some((env, path))) = (self.layout, self.wrapper) {
            return EnvelopeJson {
                env,
                path,
                records: ConversationsJson {
                    rendered: self.rendered,
                },
            }
            .serialize(s);
        }
        match (self.layout, self.rendered.first()) {
            (Layout::Conversations, _) | (_, None) => {
                let mut seq = s.serialize_seq(Some(self.rendered.len()))?;
                for r in self.rendered {
                    seq.serialize_element(&r.json(self.layout))?;
                }
                seq.end()
            }
            (layout, Some(r)) => r.json(layout).serialize(s),
        }
    }
}

/// One conversation as written (see [`Rendered::json`]).
struct ConversationJson<'a> {
    rendered: &'a Rendered,
    layout: Layout,
}

impl Serialize for ConversationJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.rendered;
        let records = RecordsJson(&r.records, r.keys.as_deref());
        match &r.envelope {
            // Messages that live in the envelope itself (ChatGPT's tree).
            Some(env) if r.path.is_empty() && r.records.is_empty() => env.serialize(s),
            Some(env)
                if !r.path.is_empty() && (self.layout != Layout::Records || !env.is_empty()) =>
            {
                EnvelopeJson {
                    env,
                    path: r.path,
                    records,
                }
                .serialize(s)
            }
            _ => records.serialize(s),
        }
    }
}

/// An envelope with the records list at `path`: in place of the key's value
/// (the reader left `null` there), or as a last key when the list's own key
/// is missing; nothing is added when a key on the way to it is missing.
struct EnvelopeJson<'a, T: Serialize + Copy = RecordsJson<'a>> {
    env: &'a Map<String, Value>,
    path: &'a [&'a str],
    records: T,
}

impl<T: Serialize + Copy> Serialize for EnvelopeJson<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (first, rest) = match self.path {
            [first, rest @ ..] => (*first, rest),
            [] => return self.env.serialize(s),
        };
        let appended = rest.is_empty() && !self.env.contains_key(first);
        let mut map = s.serialize_map(Some(self.env.len() + usize::from(appended)))?;
        for (k, v) in self.env {
            match v {
                _ if k != first => map.serialize_entry(k, v)?,
                _ if rest.is_empty() => map.serialize_entry(k, &self.records)?,
                Value::Object(inner) => map.serialize_entry(
                    k,
                    &EnvelopeJson {
                        env: inner,
                        path: rest,
                        records: self.records,
                    },
                )?,
                _ => map.serialize_entry(k, v)?,
            }
        }
        if appended {
            map.serialize_entry(first, &self.records)?;
        }
        map.end()
    }
}

/// The records that have a JSON value, as a list, or as an object when
/// they have keys.
#[derive(Clone, Copy)]
struct RecordsJson<'a>(&'a [OutRecord], Option<&'a [Box<str>]>);

impl Serialize for RecordsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let count = self.0.iter().filter_map(RecordJson::of).count();
        if let Some(keys) = self.1 {
            let mut map = s.serialize_map(Some(count))?;
            for (r, k) in self.0.iter().zip(keys) {
                if let Some(r) = RecordJson::of(r) {
                    map.serialize_entry(k, &r)?;
                }
            }
            return map.end();
        }
        let mut seq = s.serialize_seq(Some(count))?;
        for r in self.0.iter().filter_map(RecordJson::of) {
            seq.serialize_element(&r)?;
        }
        seq.end()
    }
}

/// A record's JSON: the value built for it, or the object read.
enum RecordJson<'a> {
    Built(&'a Value),
    /// Looked at without keeping it parsed (see [`Fields::peek`]).
    Read(&'a Fields),
}

impl<'a> RecordJson<'a> {
    fn of(r: &'a OutRecord) -> Option<RecordJson<'a>> {
        match (&r.value, &r.kept) {
            (Some(v), _) => Some(RecordJson::Built(v)),
            (None, Some(f)) => Some(RecordJson::Read(f)),
            (None, None) => None,
        }
    }
}

impl RecordJson<'_> {
    /// A record as read: its text, as a `RawValue` of it writes it (a span
    /// holds an object the reader parsed, from its `{` to its `}`).
    fn span(&self) -> Option<&str> {
        let RecordJson::Read(f) = self else {
            return None;
        };
        let text = f.span_text()?;
        debug_assert_eq!(
            serde_json::from_str::<&serde_json::value::RawValue>(text)
                .ok()
                .map(|r| r.get()),
            Some(text),
            "a record's span is the JSON a RawValue of it writes"
        );
        Some(text)
    }
}

impl Serialize for RecordJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RecordJson::Built(v) => v.serialize(s),
            // A record as read is written as its own text (its spacing,
            // escapes and number spellings), even where its neighbours
            // changed.
            RecordJson::Read(f) => match f
                .span_text()
                .and_then(|t| serde_json::from_str::<&serde_json::value::RawValue>(t).ok())
            {
                Some(raw) => raw.serialize(s),
                None => f.peek(|m| m.serialize(s)),
            },
        }
    }
}
/// A record written as it was read: shared with the conversation, not
/// copied.
fn as_read(value: &Fields, text: &Option<crate::transcript::Line>, from: usize) -> OutRecord {
    OutRecord {
        value: None,
        kept: Some(value.clone()),
        text: text.clone(),
        changed: false,
        added: false,
        from: Some(from),
        written: None,
    }
}

/// A record no message is written from: as it was when it held none, else
/// (all its messages gone) what the format keeps of it, if anything.
fn passthrough(
    target: &dyn super::dialect::Dialect,
    conv: &Conversation,
    r: usize,
    out: &mut Vec<OutRecord>,
) {
    let rec = &conv.records[r];
    if rec.messages == 0 {
        out.push(match &rec.value {
            Some(v) => as_read(v, &rec.text, r),
            None => OutRecord {
                value: None,
                kept: None,
                text: rec.text.clone(),
                changed: false,
                added: false,
                from: Some(r),
                written: None,
            },
        });
    } else if let Some(v) = rec.value.as_ref().and_then(|v| target.emptied(v)) {
        // Looked at without keeping it parsed: a removed record of a large
        // document stays its span of the text.
        out.push(OutRecord {
            from: Some(r),
            ..OutRecord::built(Value::Object(v), false)
        });
    }
}

/// A record with the messages of it that are left: as read when nothing
/// changed, else rewritten. Whether it changed. A record the format cannot
/// write back (its `write_record` gives nothing) while messages of it are
/// left is kept as it came, and said in `losses`: never dropped with them.
fn write_group(
    (target, format): (&dyn super::dialect::Dialect, Format),
    conv: &Conversation,
    r: usize,
    group: &[&Message],
    out: &mut Vec<OutRecord>,
    losses: &mut Vec<Loss>,
) -> bool {
    let rec = &conv.records[r];
    let original = rec
        .value
        .as_ref()
        .expect("records with messages are objects");
    let whole = group.len() == rec.messages;
    if whole && target.untouched(original, group) {
        out.push(as_read(original, &rec.text, r));
        return false;
    }
    let key = super::rewritten::key(format, original, group, whole);
    let known = key.as_ref().and_then(super::rewritten::recalled);
    let written = match known {
        Some(known) => Some(known.ok_or(())),
        None => target.write_record(original, group).map(|v| {
            let same = whole && *original == v;
            // A request's record's text too: no format's last pass changes
            // a request's records after they are written.
            let text = (!same && format.is_request())
                .then(|| serde_json::to_string(&v).ok())
                .flatten()
                .map(Arc::from);
            let v = Arc::new(Value::Object(v));
            if let Some(key) = key {
                super::rewritten::remember(key, (!same).then_some((&v, text.clone())));
            }
            if same {
                Err(())
            } else {
                Ok((v, text))
            }
        }),
    };
    match written {
        // Written as it was read.
        Some(Err(())) => {
            out.push(as_read(original, &rec.text, r));
            false
        }
        Some(Ok((v, written))) => {
            out.push(OutRecord {
                from: Some(r),
                written,
                ..OutRecord::built_shared(v, false)
            });
            true
        }
        None => {
            let at = group.iter().find_map(|m| m.input_index());
            losses.push(Loss::at(
                at,
                "change",
                format!(
                    "the {} record at line {} could not be written back changed: kept as it came",
                    record_kind(original),
                    rec.line
                ),
            ));
            out.push(as_read(original, &rec.text, r));
            false
        }
    }
}

/// How a record is named in a loss: its `type`, else "message".
fn record_kind(rec: &Fields) -> &str {
    rec.get("type").and_then(Value::as_str).unwrap_or("message")
}

/// Rebuilds a conversation's records from its messages.
/// An envelope to write: the conversation's own when it was `taken` out
/// of its document, else a copy; its records path; and, to tell whether
/// writing changed it, a digest of a taken one as it came.
type EnvToWrite = (
    Option<Map<String, Value>>,
    &'static [&'static str],
    Option<[u8; 32]>,
);

fn env_to_write(
    doc: &Document,
    conv: &Conversation,
    taken: Option<Map<String, Value>>,
) -> EnvToWrite {
    let before = taken.as_ref().map(digest);
    let env = taken.or_else(|| conv.envelope.clone());
    let path = env
        .as_ref()
        .and_then(|e| dialect(doc.source_format).records_path(&restore_path_probe(e)))
        .unwrap_or(dialect(doc.format).new_path());
    (env, path, before)
}

/// A digest of an envelope as written.
fn digest(env: &Map<String, Value>) -> [u8; 32] {
    use sha2::Digest;
    struct Hashing(sha2::Sha256);
    impl Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(sha2::Sha256::new());
    serde_json::to_writer(&mut h, env).expect("hashing cannot fail");
    h.0.finalize().into()
}

/// For a format whose file picks the branch that is the conversation
/// (Claude Code: its last message line's; LibreChat: its newest
/// message's): a loss when the written file picks another branch than the
/// one kept: a record that holds kept messages off it, or a record of a
/// branch not read now on it. A cut of the end of the branch (`trim
/// --strategy first`) left an abandoned branch's last line the last, and
/// the file, read again, was that branch.
fn branch_moved(target: &dyn Dialect, conv: &Conversation, out: &[OutRecord]) -> Option<Loss> {
    // Only a record removed moves the branch: its links and times stay.
    let removed = out.iter().filter(|o| o.from.is_some()).count() < conv.records.len();
    if !target.picks_active() || !removed {
        return None;
    }
    let written: Vec<Option<&Map<String, Value>>> = out.iter().map(OutRecord::object).collect();
    let read: Vec<Option<&Map<String, Value>>> =
        conv.records.iter().map(|r| r.value.as_deref()).collect();
    let now = target.active(&written);
    let then = target.active(&read);
    let on = |active: &Option<Vec<bool>>, i: usize| active.as_ref().is_none_or(|a| a[i]);
    let holding: std::collections::HashSet<usize> = conv
        .messages
        .iter()
        .filter_map(|m| m.origin.as_ref()?.record)
        .collect();
    let moved = out.iter().enumerate().filter(|(i, o)| {
        let Some(r) = o.from else { return false };
        let (was, is) = (on(&then, r), on(&now, *i));
        // Kept, and off the branch now; or of a branch not read, and a
        // message on the branch now.
        (holding.contains(&r) && !is)
            || (!was
                && is
                && o.object().is_some_and(|m| {
                    target
                        .read_record(&Fields::from(m.clone()))
                        .is_ok_and(|ms| !ms.is_empty())
                }))
    });
    let n = moved.count();
    (n > 0).then(|| {
        Loss::request(
            "the branch kept as the conversation",
            format!(
                "the file picks its branch by its last or newest message, and once the end of the branch kept went it picks another ({} moved on or off it): read again, it is another conversation; keep the branch's end (trim's default --strategy last) to keep it",
                crate::numbers::plural(n, "record"),
            ),
        )
    })
}

fn render(
    doc: &Document,
    index: usize,
    conv: &Conversation,
    taken: Option<Map<String, Value>>,
) -> Rendered {
    let target = dialect(doc.format);
    let mut losses = Vec::new();
    let (mut env, path, before) = env_to_write(doc, conv, taken);
    let envelope_msgs: Vec<&Message> = conv
        .messages
        .iter()
        .filter(|m| m.origin.as_ref().is_some_and(|o| o.record.is_none()))
        .collect();
    if let Some(env) = env.as_mut() {
        target.write_envelope(env, &envelope_msgs);
    }
    let mut out: Vec<OutRecord> = Vec::with_capacity(conv.records.len());
    let mut changed = false;
    let mut next = 0; // the next record not yet written or passed

    let passthrough = |r: usize, out: &mut Vec<OutRecord>| passthrough(target, conv, r, out);
    let msgs = write_order(target, &conv.messages);
    let mut i = 0;
    while i < msgs.len() {
        match msgs[i].origin.as_ref().map(|o| o.record) {
            Some(None) => i += 1, // an envelope message, written above
            Some(Some(r)) => {
                let mut j = i + 1;
                while j < msgs.len() && msgs[j].origin.as_ref().and_then(|o| o.record) == Some(r) {
                    j += 1;
                }
                while next < r {
                    changed |= conv.records[next].messages > 0; // a record whose messages all went
                    passthrough(next, &mut out);
                    next += 1;
                }
                let group: Vec<&Message> = msgs[i..j].to_vec();
                changed |=
                    write_group((target, doc.format), conv, r, &group, &mut out, &mut losses);
                next = next.max(r + 1);
                i = j;
            }
            None => {
                let mut j = i + 1;
                while j < msgs.len() && msgs[j].origin.is_none() {
                    j += 1;
                }
                // New messages go right before the next message's record,
                // after the lines that came before it (session metadata, …):
                // the next as it stood when a step added them (their
                // anchor), else the next one now.
                // In storage order, after every record read.
                let anchor = if target.storage_order() {
                    Some(conv.records.len())
                } else {
                    msgs[i].anchor.unwrap_or_else(|| {
                        msgs.get(j)
                            .and_then(|m| m.origin.as_ref())
                            .and_then(|o| o.record)
                    })
                };
                if let Some(r) = anchor {
                    while next < r {
                        passthrough(next, &mut out); // `changed` is set below
                        next += 1;
                    }
                }
                let group: Vec<&Message> = msgs[i..j].to_vec();
                let mut scratch = Map::new();
                let env_ref = env.as_mut().unwrap_or(&mut scratch);
                for v in target.new_records(&group, env_ref, &mut losses) {
                    out.push(OutRecord::built(v, true));
                }
                changed = true;
                i = j;
            }
        }
    }
    while next < conv.records.len() {
        changed |= conv.records[next].messages > 0;
        passthrough(next, &mut out);
        next += 1;
    }
    target.finish(env.as_mut(), &conv.records, &mut out);
    if target.storage_order() {
        target.order_context(env.as_mut(), conv, &out);
    }
    changed |= out.iter().any(|r| r.changed);
    let env_same = match before {
        Some(d) => env.as_ref().map(digest) == Some(d),
        None => env == conv.envelope,
    };
    if changed || !env_same {
        losses.extend(branch_moved(target, conv, &out));
        losses.extend(target.branch_moved(env.as_ref(), &out, conv));
    }
    let unchanged =
        !changed && env_same && doc.style.message_counts.get(index) == Some(&msgs.len());
    let keyed = dialect(doc.source_format)
        .keyed_records()
        .is_some_and(|k| path == [k]);
    let keys = keyed.then(|| {
        out.iter()
            .map(|o| {
                o.from
                    .and_then(|r| conv.records[r].key.clone())
                    .unwrap_or_default()
            })
            .collect()
    });
    Rendered {
        envelope: env,
        records: out,
        keys,
        path,
        unchanged,
        losses,
    }
}

/// The messages in the order their records are written: as they stand,
/// or, for a format that keeps its records in the order they were made
/// ([`Dialect::storage_order`]), by the record each was read from, new ones
/// last.
fn write_order<'a>(target: &dyn Dialect, msgs: &'a [Message]) -> Vec<&'a Message> {
    let mut view: Vec<&Message> = msgs.iter().collect();
    if target.storage_order() {
        view.sort_by_key(|m| match &m.origin {
            Some(o) => o.record.map_or(0, |r| r + 1),
            None => usize::MAX,
        });
    }
    view
}

/// The user's turn put first where the target takes the user's turn first
/// and the conversation opens with the assistant's (a session cut at its
/// summary, an agent that speaks first).
const OPENER: &str = "[Start of conversation]";

/// The messages with [`OPENER`] in front of an assistant's first turn (or
/// after system instructions alone), for the targets that take the user's
/// turn first (Anthropic, Bedrock, Gemini), said in `notes`. A saved answer
/// (the model's side alone) is no exception: written in a request format,
/// it is a request, and those providers refuse one the assistant opens.
fn user_opens<'a>(
    format: Format,
    mut msgs: Vec<&'a Message>,
    opener: &'a Message,
    notes: &mut Vec<String>,
) -> Vec<&'a Message> {
    use crate::transcript::Role;
    if !matches!(format, Format::Anthropic | Format::Bedrock | Format::Gemini) {
        return msgs;
    }
    let first = msgs
        .iter()
        .position(|m| !matches!(m.role, Role::System | Role::Developer));
    let why = match first {
        Some(i) if msgs[i].role == Role::Assistant => "opens with the assistant's",
        None if !msgs.is_empty() => "holds system instructions only",
        _ => return msgs,
    };
    msgs.insert(first.unwrap_or(msgs.len()), opener);
    notes.push(format!(
        "a user message \"{OPENER}\" put first: {format} takes the user's turn first, and the conversation {why}"
    ));
    msgs
}

/// A document converted to a request format: one body per conversation, a
/// JSON document when the input held one conversation in a document (or a
/// log), JSONL otherwise.
fn write_requests<W: Write + ?Sized>(
    doc: &Document,
    out: &mut W,
    newline: &[u8],
) -> io::Result<Vec<Written>> {
    let several = doc.layout == Layout::JsonlConversations || doc.conversations.len() > 1;
    let mut written = Vec::with_capacity(doc.conversations.len());
    let mut bodies = Vec::with_capacity(doc.conversations.len());
    for conv in &doc.conversations {
        let (body, mut w) = request_body(doc, conv, several);
        match body {
            Some(body) => bodies.push(body),
            // No message, no request: nothing is written for it.
            None => w
                .notes
                .push("no message to send: no request body written".into()),
        }
        written.push(w);
    }
    if bodies.is_empty() {
        return Ok(written);
    }
    let spellings = doc_spellings(doc);
    let numbers = spellings.as_deref();
    if several {
        for body in &bodies {
            super::numbers::to_writer(&mut *out, body, None, numbers)?;
            out.write_all(newline)?;
        }
        return Ok(written);
    }
    let mut buf = Vec::new();
    super::numbers::to_writer(&mut buf, &bodies[0], doc.style.indent.as_deref(), numbers)?;
    if doc.style.crlf {
        buf = crlf(&buf);
    }
    out.write_all(&buf)?;
    out.write_all(newline)?;
    Ok(written)
}

/// Conversation `index` of `doc` as the request body of `doc.format` that
/// `--to` writes for it, on one line; `None` when it has no message to
/// send. What replaying a session sends at each call.
pub fn request_text(doc: &Document, index: usize) -> Option<Vec<u8>> {
    request_text_and_losses(doc, index).0
}

/// [`request_text`], with what the request could not carry.
pub fn request_text_and_losses(doc: &Document, index: usize) -> (Option<Vec<u8>>, Vec<Loss>) {
    let conv = &doc.conversations[index];
    let (body, written, texts) = request_body_with(doc, conv, false, true);
    let text = body.and_then(|body| {
        let mut out = Vec::new();
        match (&body, texts) {
            (Value::Object(map), Some(texts)) => write_with_texts(&mut out, map, &texts).ok()?,
            _ => super::numbers::to_writer(&mut out, &body, None, None).ok()?,
        }
        Some(out)
    });
    debug_assert!(
        {
            let (body, _) = request_body(doc, conv, false);
            let mut whole = Vec::new();
            let whole = body.map(|b| {
                super::numbers::to_writer(&mut whole, &b, None, None).expect("to memory");
                whole
            });
            whole == text
        },
        "a request's records written as their texts write as its value does"
    );
    (text, written.losses)
}

/// A body as `serde_json` writes it compactly, its `messages` written as
/// the texts of its records (`texts`) in place of the empty list it holds.
fn write_with_texts(
    out: &mut Vec<u8>,
    body: &Map<String, Value>,
    texts: &[Arc<str>],
) -> io::Result<()> {
    out.push(b'{');
    for (n, (key, value)) in body.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        if key == "messages" {
            out.push(b'[');
            for (k, t) in texts.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(t.as_bytes());
            }
            out.push(b']');
        } else {
            super::numbers::to_writer(&mut *out, value, None, None)?;
        }
    }
    out.push(b'}');
    Ok(())
}

/// The messages with each result right after its call: a result that
/// came turns later (a Roo Code subtask's, in text) cannot stay there in a
/// request, where a call is answered before the conversation goes on.
fn results_after_their_calls<'a>(
    msgs: Vec<&'a Message>,
    losses: &mut Vec<Loss>,
) -> Vec<&'a Message> {
    let pairing = crate::pairs::Pairing::new(&msgs);
    // The call message a late result goes after, by the result's index.
    let mut late: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    // The call messages of the last turn of calls: one, or consecutive
    // ones (Responses writes parallel calls as items of their own).
    let mut group: Vec<usize> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.has_calls() {
            if !(i > 0 && msgs[i - 1].has_calls()) {
                group.clear();
            }
            group.push(i);
        }
        if let Some(r) = pairing.result_of(i).filter(|r| !group.contains(&r.message)) {
            late.entry(r.message).or_default().push(i);
        }
    }
    if late.is_empty() {
        return msgs;
    }
    // In order: the losses are said as the messages stand.
    let moved: std::collections::BTreeSet<usize> = late.values().flatten().copied().collect();
    for &k in &moved {
        losses.push(Loss::at(
            msgs[k].input_index(),
            "place of a late result",
            "moved right after its call, where a request answers it",
        ));
    }
    let mut out = Vec::with_capacity(msgs.len());
    // The late results of the call message just written, which go after
    // its own results.
    let mut pending: Vec<usize> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if moved.contains(&i) {
            continue;
        }
        if !m.role.is_result() {
            out.extend(pending.drain(..).map(|k| msgs[k]));
        }
        out.push(*m);
        if let Some(extra) = late.remove(&i) {
            pending = extra;
        }
    }
    out.extend(pending.into_iter().map(|k| msgs[k]));
    out
}

/// The messages of a conversation a request can carry, and what it cannot
/// (fields its messages do not carry, alternatives, messages without
/// content) said in `losses`.
fn sendable<'a>(
    doc: &Document,
    conv: &'a Conversation,
    losses: &mut Vec<Loss>,
) -> Vec<&'a Message> {
    let source = dialect(doc.source_format);
    for m in &conv.messages {
        let extra = source.extra_keys(m);
        if !extra.is_empty() {
            losses.push(Loss::at(
                m.input_index(),
                format!("field {}", extra.join(", ")),
                format!("{} messages do not carry it", doc.format),
            ));
        }
    }
    let alternatives = source.alternatives(conv);
    for (i, reason) in &alternatives {
        losses.push(Loss::at(
            conv.messages[*i].input_index(),
            "rejected message",
            reason.clone(),
        ));
    }
    let msgs: Vec<&Message> = conv
        .messages
        .iter()
        .enumerate()
        .filter(|(i, _)| !alternatives.iter().any(|(a, _)| a == i))
        .map(|(_, m)| m)
        .collect();
    // A message with nothing a request can carry (a log's usage-only
    // entry) is not written.
    msgs.into_iter()
        .filter(|m| {
            let empty = m.content == crate::transcript::Content::Absent
                && !m.has_calls()
                && !m.role.is_result();
            if empty {
                losses.push(Loss::at(
                    m.input_index(),
                    "message without content",
                    "a request message needs content",
                ));
            }
            !empty
        })
        .collect()
}

/// One conversation as a request body of the target format.
fn request_body(doc: &Document, conv: &Conversation, several: bool) -> (Option<Value>, Written) {
    let (body, written, _) = request_body_with(doc, conv, several, false);
    (body, written)
}

/// The records of a request's messages as their texts (see
/// [`super::dialect::Dialect::new_record_texts`]), when asked for and its
/// format writes them so: the body holds an empty list in their place.
type RecordTexts = Option<Vec<Arc<str>>>;

/// [`request_body`], its records as their texts where `texts` asks for
/// them and the format writes them so.
fn request_body_with(
    doc: &Document,
    conv: &Conversation,
    several: bool,
    texts: bool,
) -> (Option<Value>, Written, RecordTexts) {
    let target = dialect(doc.format);
    let mut w = Written::default();
    let msgs = sendable(doc, conv, &mut w.losses);
    if msgs.is_empty() {
        return (None, w, None);
    }
    let msgs = results_after_their_calls(msgs, &mut w.losses);
    let opener = Message::new(crate::transcript::Role::User, OPENER);
    let msgs = user_opens(doc.format, msgs, &opener, &mut w.notes);
    let merged = if super::request::groups_calls(doc.format) {
        super::request::merge_turns(&msgs)
    } else {
        msgs.iter()
            .map(|m| std::borrow::Cow::Borrowed(*m))
            .collect()
    };
    // Calls without an id get one (their results name it), for every
    // target whose results name their call.
    let merged = if doc.format == Format::ShareGpt {
        merged
    } else {
        super::request::name_calls(merged)
    };
    let refs: Vec<&Message> = merged.iter().map(|m| m.as_ref()).collect();
    let mut env = Map::new();
    // Only where the records list is the body's `messages` (OpenAI's).
    let texts = match texts && doc.format == Format::OpenAi {
        true => target.new_record_texts(&refs, &mut w.losses),
        false => None,
    };
    let records = match texts {
        Some(_) => Vec::new(),
        None => target.new_records(&refs, &mut env, &mut w.losses),
    };
    let params =
        super::request::Params::read(doc.source_format, conv.envelope.as_ref(), &mut w.losses);
    let mut fields = Map::new();
    params.write(
        doc.source_format,
        doc.format,
        &mut fields,
        &mut w.losses,
        &mut w.notes,
    );
    let records = Value::Array(records);
    // Each target's keys in the order its documentation writes them.
    let mut body = Map::new();
    let take = |body: &mut Map<String, Value>, from: &mut Map<String, Value>, key: &str| {
        if let Some(v) = from.shift_remove(key) {
            body.insert(key.to_string(), v);
        }
    };
    match doc.format {
        Format::LangChain if !several => return (Some(records), w, None),
        Format::LangChain => {
            body.insert("messages".into(), records);
        }
        Format::Anthropic => {
            take(&mut body, &mut fields, "model");
            take(&mut body, &mut fields, "max_tokens");
            take(&mut body, &mut env, "system");
            body.insert("messages".into(), records);
        }
        Format::Responses => {
            take(&mut body, &mut fields, "model");
            take(&mut body, &mut env, "instructions");
            body.insert("input".into(), records);
        }
        Format::Gemini => {
            take(&mut body, &mut env, "systemInstruction");
            body.insert("contents".into(), records);
        }
        Format::ShareGpt | Format::HfChat => {
            body.insert("conversations".into(), records);
            take(&mut body, &mut env, "system");
        }
        _ => {
            take(&mut body, &mut fields, "model");
            body.insert("messages".into(), records);
        }
    }
    // A field of the same name takes the list's place, as it takes the
    // records' in a body of values.
    let taken = |m: &Map<String, Value>| m.contains_key("messages");
    let texts = texts.filter(|_| !taken(&env) && !taken(&fields));
    body.extend(env);
    body.extend(fields);
    (Some(Value::Object(body)), w, texts)
}

/// The envelope holds `null` where its records list was; dialects find the
/// path by the list, so give them one to find. Like the sample a format was
/// detected from (`Reader::sample`), objects below the top and lists are
/// cut to their first entries: a probe of a 100k-node export is not a
/// copy of it.
fn restore_path_probe(env: &Map<String, Value>) -> Map<String, Value> {
    probe_map(env, 0)
}

fn probe_map(map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    const ENTRIES: usize = 256;
    let take = if depth == 0 { map.len() } else { ENTRIES };
    map.iter()
        .take(take)
        .map(|(k, v)| (k.clone(), probe_value(v, depth + 1)))
        .collect()
}

fn probe_value(v: &Value, depth: usize) -> Value {
    const LIST: usize = 50;
    match v {
        Value::Null => Value::Array(Vec::new()),
        Value::Object(inner) => Value::Object(probe_map(inner, depth)),
        Value::Array(items) => Value::Array(items.iter().take(LIST).cloned().collect()),
        other => other.clone(),
    }
}

/// JSONL lines, separated by the input's line end.
struct Lines<'a, W: Write + ?Sized> {
    out: &'a mut W,
    newline: &'a [u8],
    written: bool,
}

impl<W: Write + ?Sized> Lines<'_, W> {
    fn start(&mut self) -> io::Result<()> {
        if self.written {
            self.out.write_all(self.newline)?;
        }
        self.written = true;
        Ok(())
    }

    fn text(&mut self, text: &str) -> io::Result<()> {
        self.start()?;
        self.out.write_all(text.as_bytes())
    }

    fn value(
        &mut self,
        value: &impl Serialize,
        numbers: Option<&super::numbers::Spellings>,
    ) -> io::Result<()> {
        self.start()?;
        super::numbers::to_writer(&mut *self.out, value, None, numbers)
    }
}

/// What a changed conversation line is spliced at: the span of its records
/// list, when its envelope came through unchanged; or, for a request inside
/// an envelope of its own (a batch line, a proxy capture) whose keys came
/// through unchanged, the span of the body, with the body and the rest of
/// the path to write there. The line around the span comes back as it was.
type Splice<'a> = (
    std::ops::Range<usize>,
    Option<(&'a Map<String, Value>, &'static [&'static str])>,
);

fn splice_span<'a>(text: &str, conv: &Conversation, r: &'a Rendered) -> Option<Splice<'a>> {
    let (new, old) = (r.envelope.as_ref()?, conv.envelope.as_ref()?);
    if r.path.is_empty() {
        return None;
    }
    if new == old {
        let span = list_span(text, conv, r).or_else(|| span_at(text, r.path))?;
        let open = if r.keys.is_some() { '{' } else { '[' };
        return text[span.clone()].starts_with(open).then_some((span, None));
    }
    // Everything but the body must be as it came: compared with the body
    // taken out of both.
    let at = super::wrap::body_path(old)?;
    let without = |m: &Map<String, Value>| {
        let mut m = m.clone();
        let mut cur = &mut m;
        for key in &at[..at.len() - 1] {
            cur = cur.get_mut(*key)?.as_object_mut()?;
        }
        cur.shift_remove(at[at.len() - 1]);
        Some(m)
    };
    if without(new)? != without(old)? {
        return None;
    }
    let body = super::wrap::body(new);
    let rest = r.path.strip_prefix(at)?;
    let span = span_at(text, at)?;
    text[span.clone()]
        .starts_with('{')
        .then_some((span, Some((body, rest))))
}

/// A one-line request (a body or a capture saved as it was sent) whose
/// envelope came through: spliced like a JSONL line, the rest byte for
/// byte. Whether it was written so.
fn write_one_line<W: Write + ?Sized>(
    doc: &Document,
    rendered: &[Rendered],
    out: &mut W,
) -> io::Result<bool> {
    let (Layout::Object, None, false, Some(original), [r]) = (
        doc.layout,
        &doc.style.indent,
        doc.style.crlf,
        &doc.style.original,
        rendered,
    ) else {
        return Ok(false);
    };
    let text = original.trim_end();
    let Some(splice) = splice_span(text, &doc.conversations[0], r) else {
        return Ok(false);
    };
    let numbers = doc_spellings(doc);
    write_spliced(&mut *out, text, splice, r, numbers.as_deref())?;
    out.write_all(doc.style.tail.as_bytes())?;
    Ok(true)
}

/// Writes `text` with the span of a [`Splice`] written anew.
fn write_spliced<W: Write + ?Sized>(
    out: &mut W,
    text: &str,
    (span, inner): Splice<'_>,
    r: &Rendered,
    numbers: Option<&super::numbers::Spellings>,
) -> io::Result<()> {
    out.write_all(&text.as_bytes()[..span.start])?;
    let records = RecordsJson(&r.records, r.keys.as_deref());
    match inner {
        // The body of an envelope, with its records.
        Some((body, rest)) => {
            let body = EnvelopeJson {
                env: body,
                path: rest,
                records,
            };
            super::numbers::to_writer(&mut *out, &body, None, numbers)?
        }
        None if records.1.is_none() => write_list(&mut *out, records.0, numbers)?,
        None => super::numbers::to_writer(&mut *out, &records, None, numbers)?,
    }
    out.write_all(&text.as_bytes()[span.end..])
}

/// Records as a list, written as `to_writer` writes [`RecordsJson`]
/// compactly, a record as read copied from its span: `serde_json` read
/// each span again (as a `RawValue`) only to write it as it is, a tenth of
/// the work of writing a cleaned request.
fn write_list<'a, W: Write + ?Sized>(
    out: &mut W,
    records: &'a [OutRecord],
    numbers: Option<&super::numbers::Spellings>,
) -> io::Result<()> {
    out.write_all(b"[")?;
    let json = |o: &'a OutRecord| Some((RecordJson::of(o)?, o.written.as_deref()));
    for (k, (r, written)) in records.iter().filter_map(json).enumerate() {
        if k > 0 {
            out.write_all(b",")?;
        }
        // A record rewritten before, as it was written then, where no
        // number is spelled back.
        let written = written.filter(|_| numbers.is_none());
        debug_assert!(written.is_none_or(|w| matches!(r, RecordJson::Built(v)
            if serde_json::to_string(v).is_ok_and(|t| t == w))));
        match (r.span(), written) {
            (Some(text), _) | (None, Some(text)) => out.write_all(text.as_bytes())?,
            (None, None) => super::numbers::to_writer(&mut *out, &r, None, numbers)?,
        }
    }
    out.write_all(b"]")
}

/// The span of the list of records at a top-level key (`r.path`), from
/// where its first and last records lie in `text` (the text they were read
/// from), and the key before it: [`span_at`] splits the text up to the
/// list's end, a pass over all of it. `None` where that is not told so.
fn list_span(text: &str, conv: &Conversation, r: &Rendered) -> Option<std::ops::Range<usize>> {
    let ([key], None) = (r.path, &r.keys) else {
        return None;
    };
    let first = conv.records.first()?.value.as_ref()?.span_in(text)?;
    let last = conv.records.last()?.value.as_ref()?.span_in(text)?;
    let b = text.as_bytes();
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let before = |mut i: usize| {
        while i > 0 && ws(b[i - 1]) {
            i -= 1;
        }
        i
    };
    let open = before(first.start).checked_sub(1)?;
    let mut end = last.end;
    while end < b.len() && ws(b[end]) {
        end += 1;
    }
    let colon = before(open).checked_sub(1)?;
    let quoted = format!("\"{key}\"");
    let named = text[..before(colon)].ends_with(&quoted);
    let span = open..end + 1;
    (b[open] == b'[' && b.get(end) == Some(&b']') && b[colon] == b':' && named).then(|| {
        debug_assert_eq!(Some(span.clone()), span_at(text, r.path), "{key}");
        span
    })
}

/// The span of the value at a path of keys in a JSON object's text (text
/// that was read, so valid: stepped over at the speed of finding quotes,
/// not parsed again).
fn span_at(text: &str, path: &[&str]) -> Option<std::ops::Range<usize>> {
    let mut at = 0..text.len();
    for key in path {
        let entries = super::split::entries(&text[at.clone()], usize::MAX, &mut Vec::new())?;
        let raw = entries.into_iter().find(|(k, _)| k == key)?.1;
        let start = raw.as_ptr() as usize - text.as_ptr() as usize;
        at = start..start + raw.len();
    }
    Some(at)
}

/// How the input spelled the numbers of a conversation that the parser
/// spells otherwise (see [`super::numbers`]): found in its original text,
/// only when it is written anew.
fn conv_spellings(conv: &Conversation) -> Option<super::numbers::Spellings> {
    match &conv.text {
        Some(text) => super::numbers::scan(text),
        None => {
            let texts: Vec<&str> = conv
                .records
                .iter()
                .filter_map(|r| r.text.as_deref())
                .collect();
            super::numbers::scan(&texts.join("\n"))
        }
    }
}

/// The spellings of a whole document: its original text, or its
/// conversations' texts.
fn doc_spellings(doc: &Document) -> Option<Cow<'_, super::numbers::Spellings>> {
    match &doc.style.original {
        Some(original) => original.spellings().map(Cow::Borrowed),
        None => {
            let mut texts: Vec<&str> = Vec::new();
            for c in &doc.conversations {
                texts.extend(c.text.as_deref());
                texts.extend(c.records.iter().filter_map(|r| r.text.as_deref()));
            }
            super::numbers::scan(&texts.join("\n")).map(Cow::Owned)
        }
    }
}

/// A value computed on first use.
struct Lazy<T, F: FnOnce() -> T> {
    value: Option<T>,
    make: Option<F>,
}

impl<T, F: FnOnce() -> T> Lazy<T, F> {
    fn new(make: F) -> Self {
        Lazy {
            value: None,
            make: Some(make),
        }
    }
}

impl<S, F: FnOnce() -> Option<S>> Lazy<Option<S>, F> {
    fn get(&mut self) -> Option<&S> {
        if let Some(make) = self.make.take() {
            self.value = Some(make());
        }
        self.value.as_ref().and_then(Option::as_ref)
    }
}

fn crlf(buf: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len() + buf.len() / 16);
    let mut last = 0;
    for &b in buf {
        // A record written as its own text keeps its CRLF.
        if b == b'\n' && last != b'\r' {
            out.push(b'\r');
        }
        out.push(b);
        last = b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, ReadOptions};
    use crate::transcript::Content;

    fn roundtrip(text: &str, edit: impl FnOnce(&mut Document)) -> String {
        let opts = ReadOptions {
            skip_invalid: true,
            ..ReadOptions::default()
        };
        let mut doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        edit(&mut doc);
        let mut out = Vec::new();
        write_document(&doc, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A request written from its records' texts (each made once for what
    /// its message says) is the request written from its value, and loses
    /// the same, on every fixture as an OpenAI request, written again and
    /// again; and where a field takes the list's name.
    #[test]
    fn a_request_from_its_records_texts_is_the_one_from_its_value() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let mut dirs = vec![root];
        let mut checked = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let Ok(bytes) = std::fs::read(&path) else {
                    continue;
                };
                let Ok(mut doc) = read_document("t", bytes, &ReadOptions::default()) else {
                    continue;
                };
                doc.format = Format::OpenAi;
                for k in 0..doc.conversations.len() {
                    let (body, w) = request_body(&doc, &doc.conversations[k], false);
                    let whole = body.map(|b| {
                        let mut out = Vec::new();
                        super::super::numbers::to_writer(&mut out, &b, None, None).unwrap();
                        out
                    });
                    for _ in 0..2 {
                        let (text, losses) = request_text_and_losses(&doc, k);
                        assert_eq!(text, whole, "{}", path.display());
                        assert_eq!(losses, w.losses, "{}", path.display());
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked} conversations");
        // `messages` given again as a field of another format's envelope:
        // it stands, as in a value.
        let text = r#"{"model":"m","input":[{"role":"user","content":"hi"}],"messages":[]}"#;
        let opts = ReadOptions {
            from: Some(Format::Responses),
            ..ReadOptions::default()
        };
        let mut doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        doc.format = Format::OpenAi;
        let (body, _) = request_body(&doc, &doc.conversations[0], false);
        let body = serde_json::to_vec(&body.unwrap()).unwrap();
        assert_eq!(request_text(&doc, 0).unwrap(), body);
        assert!(body.windows(13).any(|w| w == br#""messages":[]"#));
    }

    /// A changed list is spliced into the text around it, found from its
    /// records' places (and checked against a split of the text in test
    /// builds), whatever the spaces around it and its records.
    #[test]
    fn a_changed_list_is_spliced_where_it_lies() {
        let text = concat!(
            r#"{ "model" : "m", "messages" :  [ {"role":"user","content":"a"} ,"#,
            r#"   {"role":"assistant","content":"b"} 	 ] ,"x": [1, 2]}"#
        );
        let out = roundtrip(text, |d| {
            d.conversations[0].messages[1].content = Content::Text("c".into())
        });
        assert_eq!(
            out,
            concat!(
                r#"{ "model" : "m", "messages" :  [{"role":"user","content":"a"},"#,
                r#"{"role":"assistant","content":"c"}] ,"x": [1, 2]}"#
            )
        );
    }

    /// A record rewritten is remembered by the record and by everything of
    /// its messages a writer reads: each edit, made again and again on one
    /// thread in turns, writes what it writes on a thread that remembers
    /// nothing.
    #[test]
    fn a_record_rewritten_again_is_written_as_edited() {
        let head = concat!(
            r#"{"model":"m","messages":[{"role":"user","content":"go"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"#,
        );
        // A number the writer spells back as the input did, and none.
        let texts = [
            format!(
                r#"{head}{{"role":"tool","tool_call_id":"c1","content":"a long result","x":1E5}}]}}"#
            ),
            format!(
                r#"{head}{{"role":"tool","tool_call_id":"c1","content":"a long result","x":[1,{{}}]}}]}}"#
            ),
        ];
        type Edit = fn(&mut Message);
        let edits: [Edit; 5] = [
            |m| m.content = Content::Text("[Tool: 3 words]".into()),
            |m| m.content = Content::Text("[Tool: other]".into()),
            |m| m.name = Some("f".into()),
            |m| m.tool_call_id = Some("c2".into()),
            |_| {},
        ];
        for text in texts {
            let write =
                |edit: Edit| roundtrip(&text, |d| edit(&mut d.conversations[0].messages[2]));
            let fresh: Vec<String> = std::thread::scope(|s| {
                let spawned: Vec<_> = edits.iter().map(|&e| s.spawn(move || write(e))).collect();
                spawned.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(fresh[4], text);
            assert!(fresh[0].contains("[Tool: 3 words]") && fresh[0].contains(r#""x":"#));
            for _ in 0..3 {
                for (k, &e) in edits.iter().enumerate() {
                    assert_eq!(write(e), fresh[k], "edit {k} of {text}");
                }
            }
        }
    }

    /// Late results moved after their calls are said in the order of the
    /// messages, every time (they were said in a hash set's order, which
    /// changed from run to run).
    #[test]
    fn late_results_moved_are_said_in_order() {
        let mut msgs = vec![r#"{"role":"user","content":"go"}"#.to_string()];
        for k in 0..6 {
            msgs.push(format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"a{k}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"assistant","content":"meanwhile {k}"}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"b{k}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"tool","tool_call_id":"a{k}","content":"late"}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"tool","tool_call_id":"b{k}","content":"on time"}}"#
            ));
        }
        let text = format!(r#"{{"messages":[{}]}}"#, msgs.join(","));
        let doc = read_document("t", text.into_bytes(), &ReadOptions::default()).unwrap();
        for _ in 0..20 {
            let (body, losses) = request_text_and_losses(&doc, 0);
            assert!(body.is_some());
            let at: Vec<Option<usize>> = losses
                .iter()
                .filter(|l| l.what == "place of a late result")
                .map(|l| l.index)
                .collect();
            assert_eq!(at, (0..6).map(|k| Some(4 + 5 * k)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn unchanged_inputs_come_back_byte_for_byte() {
        for text in [
            "",
            "{\n    \"model\": \"x\",\n    \"messages\": [ {\"role\": \"user\", \"content\": \"\\u00e9\"} ]\n}\n",
            "[{\"role\":\"user\",\"content\":\"hi\"}]",
            "{\"role\": \"user\", \"content\": \"a\"}\r\n{\"role\":\"assistant\",\"content\":1.0e3}\r\n",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"id\":1}\n{\"messages\":[]}\n",
            "// comment\n{\"role\":\"user\",\"content\":\"a\"}\n{bad\n{\"role\":\"user\",\"content\":\"b\"}\n",
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}\n\n",
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}",
            "[]  \n\n",
            " \n\t",
            // A byte order mark, as Windows tools write it (see issue 13).
            "\u{feff}{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\r\n",
            "\u{feff}{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"b\"}\n",
        ] {
            assert_eq!(roundtrip(text, |_| {}), text);
        }
    }

    #[test]
    fn changed_documents_keep_indentation_and_order() {
        let text = "{\n  \"model\": \"m\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"a\"},\n    {\"role\": \"user\", \"content\": \"b\"}\n  ],\n  \"tools\": []\n}\n";
        let out = roundtrip(text, |d| {
            d.conversations[0].messages.remove(0);
        });
        // The message kept comes back as its own text, in the document's
        // indentation.
        assert_eq!(
            out,
            "{\n  \"model\": \"m\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"b\"}\n  ],\n  \"tools\": []\n}\n"
        );
    }

    #[test]
    fn changed_jsonl_lines_are_rewritten_others_kept() {
        let text = "{\"role\": \"user\", \"content\": \"a\"}\n//c\n{\"role\": \"user\", \"content\": \"b\"}\n";
        let out = roundtrip(text, |d| {
            d.conversations[0].messages[1].content = Content::Text("B".into());
        });
        assert_eq!(
            out,
            "{\"role\": \"user\", \"content\": \"a\"}\n//c\n{\"role\":\"user\",\"content\":\"B\"}\n"
        );
        let out = roundtrip(text, |d| {
            d.conversations[0].messages.remove(0);
        });
        assert_eq!(out, "//c\n{\"role\": \"user\", \"content\": \"b\"}\n");
    }

    #[test]
    fn added_messages_go_where_they_stand() {
        let text =
            "{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"user\",\"content\":\"u\"}\n";
        let out = roundtrip(text, |d| {
            let m = crate::transcript::Message::new(crate::transcript::Role::System, "summary");
            d.conversations[0].messages.insert(1, m);
        });
        assert_eq!(
            out,
            "{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"system\",\"content\":\"summary\"}\n{\"role\":\"user\",\"content\":\"u\"}\n"
        );
    }

    /// A record its format cannot write back changed, while its message is
    /// left, is kept as it came and said: never dropped with the message
    /// (a Codex line was, found by fuzzing).
    #[test]
    fn a_record_the_format_cannot_rewrite_is_kept_and_said() {
        let text = concat!(
            r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"xyz"}"#,
            "\n",
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            "\n"
        );
        let opts = ReadOptions {
            from: Some(Format::Responses),
            ..ReadOptions::default()
        };
        let mut doc = read_document("t", text.as_bytes().to_vec(), &opts).unwrap();
        // A reasoning item's block turned to text: Responses has no way to
        // write that back into the item.
        doc.conversations[0].messages[0].content = Content::Text("plain".into());
        let mut out = Vec::new();
        let written = write_document(&doc, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains(r#""encrypted_content":"xyz""#), "{out}");
        assert!(out.contains(r#""text":"hi""#), "{out}");
        let said: Vec<&str> = written[0]
            .losses
            .iter()
            .map(|l| l.reason.as_str())
            .collect();
        assert!(
            said.iter()
                .any(|r| r.contains("could not be written back changed")),
            "{said:?}"
        );
    }
}
