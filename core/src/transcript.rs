//! The transcript model every format reads into and writes back from.
//!
//! A [`Message`] holds the parts operations reason about (role, content,
//! tool calls, the id of the call a result answers, a name) in typed fields,
//! and keeps the JSON object it came from in [`Message::fields`], key order
//! included. Writers rebuild a message from its typed fields *on top of* the
//! original object, so a field no operation touched comes out exactly as it
//! went in, unknown fields (`sender`, `agentId`, `chatId`, …) included.
//!
//! Content parts and tool calls carry their own original JSON (`raw`) for the
//! same reason: a part that was not changed is written back verbatim.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Instructions from the application (`system`).
    System,
    /// Instructions for reasoning models (`developer`).
    Developer,
    /// The person (or program) asking.
    User,
    /// The model.
    Assistant,
    /// A tool result (`role: tool`).
    Tool,
    /// A legacy function result (`role: function`).
    Function,
}

impl Role {
    /// Every role, in the order reports list them.
    pub const ALL: [Role; 6] = [
        Role::System,
        Role::Developer,
        Role::User,
        Role::Assistant,
        Role::Tool,
        Role::Function,
    ];

    /// The role as OpenAI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
        }
    }

    /// Parses a role name, accepting LangChain's aliases `human` and `ai`.
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" | "human" => Role::User,
            "assistant" | "ai" => Role::Assistant,
            "tool" => Role::Tool,
            "function" => Role::Function,
            _ => return None,
        })
    }

    /// Whether messages of this role carry tool results.
    pub fn is_result(self) -> bool {
        matches!(self, Role::Tool | Role::Function)
    }

    /// Whether this is an instruction role (system or developer).
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message's content.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// The message has no content field at all.
    Absent,
    /// `"content": null`.
    Null,
    /// A plain string.
    Text(String),
    /// A list of parts.
    Parts(Vec<Part>),
}

impl Content {
    /// The text of the content: the string, or the text parts joined by `\n`.
    pub fn text(&self) -> String {
        self.text_ref().into_owned()
    }

    /// [`Content::text`], borrowed where it is one string (the content's,
    /// or its one text part's): an operation that only reads the text does
    /// not copy it.
    pub fn text_ref(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Content::Absent | Content::Null => Cow::Borrowed(""),
            Content::Text(s) => Cow::Borrowed(s),
            Content::Parts(parts) => {
                let texts: Vec<&str> = parts.iter().filter_map(Part::text).collect();
                match texts[..] {
                    [one] => Cow::Borrowed(one),
                    _ => Cow::Owned(texts.join("\n")),
                }
            }
        }
    }

    /// Whether the content says anything: a string with non-whitespace, or a
    /// list holding a non-text part or a text part with non-whitespace.
    pub fn is_blank(&self) -> bool {
        match self {
            Content::Absent | Content::Null => true,
            Content::Text(s) => s.trim().is_empty(),
            Content::Parts(parts) => parts.iter().all(|p| match &p.kind {
                PartKind::Text(t) => t.trim().is_empty(),
                _ => false,
            }),
        }
    }

    /// The parts, or an empty slice for string and missing content.
    pub fn parts(&self) -> &[Part] {
        match self {
            Content::Parts(p) => p,
            _ => &[],
        }
    }

    /// The images in the content.
    pub fn images(&self) -> impl Iterator<Item = &Image> {
        self.parts().iter().filter_map(|p| match &p.kind {
            PartKind::Image(img) => Some(img),
            _ => None,
        })
    }
}

/// One element of a content list.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// What the part is, as far as operations care.
    pub kind: PartKind,
    /// The part as it came (or as an operation built it); shared, not
    /// copied, when the message is (an operation that changes it writes a
    /// new one).
    pub raw: Arc<Value>,
    /// Its position in the source record's block list, for formats that keep
    /// parts and tool calls in one list (Anthropic, Gemini); `None` when new.
    pub slot: Option<usize>,
}

/// The kinds of content parts operations understand; any other part is kept verbatim.
#[derive(Clone, Debug, PartialEq, Hash)]
pub enum PartKind {
    /// Text (`{"type": "text", "text": …}`, or a bare string in the list).
    Text(String),
    /// An image, by URL, data URL or inline base64.
    Image(Image),
    /// Anything else (audio, files, refusals, …), counted by its text fields.
    Other,
}

impl Part {
    /// A new text part.
    pub fn text_part(text: impl Into<String>) -> Part {
        let text = text.into();
        let mut raw = Map::new();
        raw.insert("type".into(), Value::from("text"));
        raw.insert("text".into(), Value::from(text.clone()));
        Part {
            kind: PartKind::Text(text),
            raw: Value::Object(raw).into(),
            slot: None,
        }
    }

    /// Whether it is a thinking or reasoning block (Anthropic's
    /// `thinking` and `redacted_thinking`, `reasoning`, Kimi's `think`,
    /// Gemini's `thought: true`).
    pub fn is_thinking(&self) -> bool {
        matches!(self.kind, PartKind::Other)
            && (matches!(
                self.raw.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking" | "reasoning" | "think")
            ) || self.raw.get("thought") == Some(&Value::Bool(true)))
    }

    /// The text of a text part.
    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            PartKind::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The part as JSON: `raw`, with the text replaced when an operation changed it.
    pub fn to_value(&self) -> Value {
        match (&self.kind, &*self.raw) {
            (PartKind::Text(t), Value::String(s)) if s != t => Value::String(t.clone()),
            (PartKind::Text(t), Value::Object(map)) => {
                let key = text_key(map);
                match map.get(key) {
                    Some(Value::String(s)) if s == t => Value::clone(&self.raw),
                    _ => {
                        let mut map = map.clone();
                        map.insert(key.to_string(), Value::String(t.clone()));
                        Value::Object(map)
                    }
                }
            }
            _ => Value::clone(&self.raw),
        }
    }

    /// The part as it goes back into a format whose text parts are
    /// `{"text": …}` alone (Gemini's, Bedrock's): text an operation made
    /// in the chat shape (`{"type": "text", "text": …}`, a note in an
    /// image's place) loses the `type` those APIs refuse as an unknown
    /// field.
    pub fn to_value_untyped(&self) -> Value {
        match (&self.kind, self.raw.get("type").and_then(Value::as_str)) {
            (PartKind::Text(t), Some("text")) => serde_json::json!({ "text": t }),
            _ => self.to_value(),
        }
    }
}

/// For tests of writers: the k-th part of `content` replaced by a note in
/// its place, as `filter --strip-processed-images` does an image.
#[cfg(test)]
pub(crate) fn note_in_place(content: &mut Content, k: usize, note: &str) {
    let Content::Parts(parts) = content else {
        panic!("a message of parts");
    };
    let slot = parts[k].slot;
    parts[k] = Part {
        slot,
        ..Part::text_part(note)
    };
}

/// The key that holds a text part's text: `text`, or `value` in LLaMA-Factory's parts.
pub(crate) fn text_key(map: &Map<String, Value>) -> &'static str {
    if !map.contains_key("text") && map.get("value").is_some_and(Value::is_string) {
        "value"
    } else {
        "text"
    }
}

/// What is known about an image without decoding it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Image {
    /// The media type, from a data URL or a `media_type` field, when known.
    pub media_type: Option<String>,
    /// The decoded size of inline data, when the image is inline.
    pub bytes: Option<u64>,
    /// Its width in pixels, from the header of inline data.
    pub width: Option<u32>,
    /// Its height in pixels, from the header of inline data.
    pub height: Option<u32>,
    /// OpenAI's `detail` (`low`, `high`, `auto`), when given.
    pub detail: Option<String>,
}

impl Image {
    /// The placeholder that stands for the image in text:
    /// `[image: MEDIA_TYPE, N bytes]`, or `[image: MEDIA_TYPE]` when the
    /// size is unknown.
    pub fn placeholder(&self) -> String {
        let media = self.media_type.as_deref().unwrap_or("image");
        match self.bytes {
            Some(n) => format!("[image: {media}, {}]", crate::numbers::count(n, "byte")),
            None => format!("[image: {media}]"),
        }
    }

    /// Describes an image from a URL: data URLs give media type and size.
    pub fn from_url(url: &str) -> Image {
        match url.strip_prefix("data:") {
            Some(rest) => {
                let (meta, data) = rest.split_once(',').unwrap_or((rest, ""));
                let media_type = meta.split(';').next().filter(|m| !m.is_empty());
                Image::inline(media_type.map(str::to_string), data)
            }
            None => Image::default(),
        }
    }
}

impl Image {
    /// An inline image: its media type, decoded size and, from its header,
    /// its dimensions.
    pub fn inline(media_type: Option<String>, base64_data: &str) -> Image {
        let dims = image_dimensions(base64_data);
        Image {
            media_type,
            bytes: Some(base64_decoded_len(base64_data)),
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
            detail: None,
        }
    }
}

/// The width and height in an image's header, from its base64 text: only
/// the first bytes are decoded, 1 KiB (enough for PNG, GIF, WebP and most
/// JPEGs), then up to 64 KiB when a JPEG's size sits after its metadata.
/// Every inline image is measured when read, so this stays small.
pub fn image_dimensions(base64_data: &str) -> Option<(u32, u32)> {
    [1024, 64 * 1024]
        .into_iter()
        .find_map(|bytes| dimensions_within(base64_data, bytes / 3 * 4))
}

fn dimensions_within(base64_data: &str, chars: usize) -> Option<(u32, u32)> {
    use base64::Engine as _;
    // Bytes, not characters: a byte past ASCII (no base64, but a client's
    // to send) made two bytes of a `String`, and the cut below fell inside
    // one (a panic the fuzz target `read_value` found).
    let text: Vec<u8> = base64_data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .take(chars)
        .collect();
    let whole = &text[..text.len() - text.len() % 4];
    let unpadded = &whole[..whole.len() - whole.iter().rev().take_while(|&&b| b == b'=').count()];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(whole)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(unpadded))
        .ok()?;
    let size = imagesize::blob_size(&bytes).ok()?;
    Some((
        u32::try_from(size.width).ok()?,
        u32::try_from(size.height).ok()?,
    ))
}

/// The decoded length of base64 text, without decoding it.
pub fn base64_decoded_len(data: &str) -> u64 {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count() as u64;
    let len = data.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    (len * 3 / 4).saturating_sub(padding)
}

/// A call the assistant asked a tool to make.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The call id, which results refer to; legacy and some local models give none.
    pub id: Option<String>,
    /// The tool (function) name.
    pub name: String,
    /// The arguments as the model wrote them: a JSON text.
    pub arguments: String,
    /// The call as it came; shared, not copied, when the message is.
    pub raw: Arc<Value>,
    /// Its position in the source record's block list (see [`Part::slot`]).
    pub slot: Option<usize>,
}

/// Where a message came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Its position in the input conversation.
    pub index: usize,
    /// The 1-based line of the input it starts on.
    pub line: usize,
    /// The source record it was read from: an element of the records list
    /// (a JSONL line, an array element); `None` for a message held in the
    /// conversation's envelope (Anthropic's top-level `system`, …).
    pub record: Option<usize>,
    /// Which of the messages read from that record it is (a record can hold
    /// several: an Anthropic user turn with tool results and text).
    pub sub: usize,
    /// A digest of the typed fields as read ([`Message::typed_digest`]),
    /// taken when the dialect found them to say exactly what the record
    /// says; 0 when not taken. A writer compares it with the digest of the
    /// message as it is to know, without parsing the record again, that no
    /// operation changed it (see `Dialect::untouched`).
    pub seal: u64,
}

/// Feeds a JSON value to a hasher, every variant and length told apart.
pub(crate) fn hash_value(v: &Value, h: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for i in items {
                hash_value(i, h);
            }
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, v) in map {
                k.hash(h);
                hash_value(v, h);
            }
        }
    }
}

/// A JSON object shared between a record and the message read from it.
///
/// Most formats read a message from a record that is the message object
/// itself; both keep it, and a copy per message would double what a large
/// document holds. Cloning a `Fields` shares the object; changing one (through
/// `DerefMut`) copies it first, so a record keeps what was read while an
/// operation edits its message.
///
/// An object read from a document can also be held as where it lies in the
/// input text ([`Fields::read`]), parsed when first looked at (`Deref`) and
/// kept from then on. Reading and writing look at it through
/// [`Fields::peek`], which parses a copy for the moment without keeping it:
/// a large document read and written back then holds its text, not a map
/// per message besides.
#[derive(Clone, Default)]
pub struct Fields(Arc<Lazy>);

#[derive(Clone, Default)]
struct Lazy {
    /// The object, once parsed (or as built).
    map: OnceLock<Box<Map<String, Value>>>,
    /// Where the object lies in its input, while it is as read.
    source: Option<Source>,
}

/// A span of an input's text holding one JSON object.
#[derive(Clone)]
struct Source {
    text: Arc<String>,
    start: usize,
    end: usize,
}

impl Source {
    fn parse(&self) -> Map<String, Value> {
        let text = &self.text[self.start..self.end];
        match crate::json::parse_object(text) {
            Some(map) => map,
            // `Fields::read` is given spans that were just parsed as objects.
            None => unreachable!("a span read as an object parses as one again"),
        }
    }
}

impl Fields {
    /// An empty object.
    pub fn new() -> Fields {
        Fields::default()
    }

    /// A key's value. One of a few keys is found by comparing the keys in
    /// order (the map's own `get` hashes the key with SipHash first).
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Value> {
        crate::json::get(self, key)
    }

    /// Whether it has a key, found as [`Fields::get`] finds it.
    #[inline]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The object at `start..end` of `text`, parsed when first looked at.
    /// The span must hold a JSON object (the reader has just parsed it).
    pub(crate) fn read(text: &Arc<String>, start: usize, end: usize) -> Fields {
        debug_assert!(crate::json::parse_object(&text[start..end]).is_some());
        Fields(Arc::new(Lazy {
            map: OnceLock::new(),
            source: Some(Source {
                text: Arc::clone(text),
                start,
                end,
            }),
        }))
    }

    /// Calls `f` with the object without keeping it parsed: an object held
    /// as its span of the input is parsed into a copy for the call only.
    pub fn peek<R>(&self, f: impl FnOnce(&Map<String, Value>) -> R) -> R {
        match (self.0.map.get(), &self.0.source) {
            (Some(map), _) => f(map),
            (None, Some(source)) => f(&source.parse()),
            (None, None) => f(&Map::new()),
        }
    }

    /// The exact text of the object in its input, while it is as read
    /// (`None` once changed, or for an object built).
    pub fn span_text(&self) -> Option<&str> {
        let s = self.0.source.as_ref()?;
        Some(&s.text[s.start..s.end])
    }

    /// Where the object lies in `text` (the very text it was read from,
    /// not a copy of it), while it is as read.
    pub(crate) fn span_in(&self, text: &str) -> Option<std::ops::Range<usize>> {
        let s = self.0.source.as_ref()?;
        (s.text.as_ptr() == text.as_ptr() && s.text.len() == text.len()).then_some(s.start..s.end)
    }

    /// The object, copied only when it is shared.
    pub fn into_map(self) -> Map<String, Value> {
        match Arc::try_unwrap(self.0) {
            Ok(lazy) => match (lazy.map.into_inner(), lazy.source) {
                (Some(map), _) => *map,
                (None, Some(source)) => source.parse(),
                (None, None) => Map::new(),
            },
            Err(shared) => Fields(shared).peek(Map::clone),
        }
    }

    /// Whether the object has no key, told from its span without parsing
    /// it while it is as read (a JSON object is empty when only whitespace
    /// lies between its braces): asked of every result by `compact-tools`,
    /// on each request, it parsed each one's whole object.
    pub fn is_empty(&self) -> bool {
        match (self.0.map.get(), &self.0.source) {
            (Some(map), _) => map.is_empty(),
            (None, Some(s)) => s.text[s.start..s.end]
                .trim_matches(|c: char| c == '{' || c == '}' || c.is_ascii_whitespace())
                .is_empty(),
            (None, None) => true,
        }
    }

    /// Whether the object may have `key`: `false` only for an object still
    /// held as its span, whose text names no such key (nor escapes
    /// anything: a key may be spelled with `\u` escapes), told without
    /// parsing it. `compact-tools` asks each result whether it is flagged
    /// an error, on every request.
    pub fn may_have(&self, key: &str) -> bool {
        match (self.0.map.get(), &self.0.source) {
            (None, Some(s)) => {
                let text = &s.text.as_bytes()[s.start..s.end];
                memchr::memmem::find(text, key.as_bytes()).is_some()
                    || memchr::memmem::find(text, b"\\u").is_some()
            }
            _ => true,
        }
    }

    /// Whether two `Fields` are the same shared object (not only equal).
    pub fn shares(&self, other: &Fields) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<Map<String, Value>> for Fields {
    fn from(map: Map<String, Value>) -> Fields {
        Fields(Arc::new(Lazy {
            map: OnceLock::from(Box::new(map)),
            source: None,
        }))
    }
}

impl std::ops::Deref for Fields {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        self.0.map.get_or_init(|| {
            Box::new(
                self.0
                    .source
                    .as_ref()
                    .map(Source::parse)
                    .unwrap_or_default(),
            )
        })
    }
}

impl std::ops::DerefMut for Fields {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        let lazy = Arc::make_mut(&mut self.0);
        if lazy.map.get().is_none() {
            let map = lazy.source.as_ref().map(Source::parse).unwrap_or_default();
            lazy.map = OnceLock::from(Box::new(map));
        }
        // Changed from here on: no longer what the span holds.
        lazy.source = None;
        lazy.map.get_mut().expect("just set")
    }
}

impl PartialEq for Fields {
    fn eq(&self, other: &Fields) -> bool {
        self.shares(other) || self.peek(|a| other.peek(|b| a == b))
    }
}

impl PartialEq<Map<String, Value>> for Fields {
    fn eq(&self, other: &Map<String, Value>) -> bool {
        self.peek(|map| map == other)
    }
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.peek(|map| map.fmt(f))
    }
}

/// The exact text of a JSONL line: its span of the input it was read from,
/// not a copy of it (a session log's lines are most of what it holds).
/// Reads as a `str`; copies share it.
#[derive(Clone)]
pub struct Line {
    text: Arc<String>,
    start: usize,
    end: usize,
}

impl Line {
    /// The line at `start..end` of `text`.
    pub(crate) fn span(text: &Arc<String>, start: usize, end: usize) -> Line {
        debug_assert!(text.get(start..end).is_some());
        Line {
            text: Arc::clone(text),
            start,
            end,
        }
    }
}

impl std::ops::Deref for Line {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text[self.start..self.end]
    }
}

impl PartialEq for Line {
    fn eq(&self, other: &Line) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// A record of the input, as it came: an element of a conversation's
/// records list, or a JSONL line. Records a reader did not read messages
/// from (Claude Code progress lines, skipped invalid lines) are written back
/// in place, untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The record's JSON object; `None` for a line that is not one.
    pub value: Option<Fields>,
    /// The exact text of its JSONL line.
    pub text: Option<Line>,
    /// The 1-based line it starts on.
    pub line: usize,
    /// How many messages were read from it.
    pub messages: usize,
    /// Its key, for a record that is a value of an object of records (a
    /// node of a ChatGPT `mapping`); `None` for an element of a list or a
    /// line.
    pub key: Option<Box<str>>,
}

/// One message of a conversation. What it says ([`Said`]: role, content,
/// calls, call id, name) is read and written through it as through a
/// reference, and shared between its copies until one of them changes it:
/// a document copied for each recipe, a record recalled, a conversation's
/// prefix taken for each call do not copy it. What is derived from what it
/// says (its digest, its tokens) is remembered with it, and forgotten when
/// it changes. Where it sits (its record's fields, its origin, its anchor)
/// is its own.
#[derive(Clone)]
pub struct Message {
    said: Arc<Shared>,
    /// The message's JSON object as it came, in order. The typed fields
    /// (see [`Said`]) take precedence for the keys they model; every other
    /// key is written back from here.
    pub fields: Fields,
    /// Where the message came from; `None` for a message an operation added.
    pub origin: Option<Origin>,
    /// For a message an operation added: a digest of what it said when it
    /// was added, from which a format derives the identity it gives the
    /// message (a Claude Code line's `uuid`). A later step that changes the
    /// message keeps it, so a chain writes what its steps write through
    /// pipes.
    pub minted: Option<[u8; 16]>,
    /// For a message an operation added: the input record it goes before,
    /// as it stood when the message was added (`Some(None)`: at the end).
    /// Set by the pipeline after the step that adds it and kept through
    /// later steps, so that a chain writes it where the same steps through
    /// pipes do, whatever later steps remove around it.
    pub anchor: Option<Option<usize>>,
}

/// What a message says: the typed model a format reads and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
    /// Tool calls of an assistant message; `None` when the field is absent.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// For a tool result, the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// An optional participant (or, for `role: function`, function) name.
    pub name: Option<String>,
}

/// What a message says, and what was derived from it.
struct Shared {
    said: Said,
    /// [`Said::typed_digest`], once asked for.
    digest: OnceLock<u64>,
    /// Its tokens, images aside, and the tokenizer's key that counted them
    /// (see [`crate::tokens::Tokenizer::count_message`]).
    tokens: OnceLock<(u64, usize)>,
    /// What a rewrite made it say, and the rewrite's tag (see
    /// [`Message::said_as`]).
    rewritten: OnceLock<(u64, Arc<Shared>)>,
    /// A value derived from what it says, and the tag of how (see
    /// [`Message::derived`]).
    derived: OnceLock<(u64, Derived)>,
}

/// A value derived from what a message says, of any type.
type Derived = Arc<dyn std::any::Any + Send + Sync>;

impl Clone for Shared {
    /// What it says, to be changed: nothing derived from it carried.
    fn clone(&self) -> Shared {
        Shared::of(self.said.clone())
    }
}

impl Shared {
    fn of(said: Said) -> Shared {
        Shared {
            said,
            digest: OnceLock::new(),
            tokens: OnceLock::new(),
            rewritten: OnceLock::new(),
            derived: OnceLock::new(),
        }
    }
}

/// A message as one value (a struct literal's fields): made into a
/// [`Message`] with `Message::from`, and taken back with
/// [`Message::into_data`].
#[derive(Clone, Debug, PartialEq)]
pub struct MessageData {
    /// See [`Said::role`].
    pub role: Role,
    /// See [`Said::content`].
    pub content: Content,
    /// See [`Said::tool_calls`].
    pub tool_calls: Option<Vec<ToolCall>>,
    /// See [`Said::tool_call_id`].
    pub tool_call_id: Option<String>,
    /// See [`Said::name`].
    pub name: Option<String>,
    /// See [`Message::fields`].
    pub fields: Fields,
    /// See [`Message::origin`].
    pub origin: Option<Origin>,
    /// See [`Message::minted`].
    pub minted: Option<[u8; 16]>,
    /// See [`Message::anchor`].
    pub anchor: Option<Option<usize>>,
}

impl MessageData {
    /// A new message's data, with string content.
    pub fn new(role: Role, text: impl Into<String>) -> MessageData {
        MessageData {
            role,
            content: Content::Text(text.into()),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            fields: Fields::new(),
            origin: None,
            minted: None,
            anchor: None,
        }
    }
}

impl From<MessageData> for Message {
    fn from(d: MessageData) -> Message {
        let said = Said {
            role: d.role,
            content: d.content,
            tool_calls: d.tool_calls,
            tool_call_id: d.tool_call_id,
            name: d.name,
        };
        Message {
            said: Arc::new(Shared::of(said)),
            fields: d.fields,
            origin: d.origin,
            minted: d.minted,
            anchor: d.anchor,
        }
    }
}

impl std::ops::Deref for Message {
    type Target = Said;
    fn deref(&self) -> &Said {
        &self.said.said
    }
}

impl std::ops::DerefMut for Message {
    /// What it says, to change: copied first when another copy shares it,
    /// and what was derived from it forgotten.
    fn deref_mut(&mut self) -> &mut Said {
        let shared = Arc::make_mut(&mut self.said);
        shared.digest = OnceLock::new();
        shared.tokens = OnceLock::new();
        shared.rewritten = OnceLock::new();
        shared.derived = OnceLock::new();
        &mut shared.said
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        (Arc::ptr_eq(&self.said, &other.said) || self.said.said == other.said.said)
            && self.fields == other.fields
            && self.origin == other.origin
            && self.minted == other.minted
            && self.anchor == other.anchor
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("role", &self.role)
            .field("content", &self.content)
            .field("tool_calls", &self.tool_calls)
            .field("tool_call_id", &self.tool_call_id)
            .field("name", &self.name)
            .field("fields", &self.fields)
            .field("origin", &self.origin)
            .field("minted", &self.minted)
            .field("anchor", &self.anchor)
            .finish()
    }
}

impl Message {
    /// The message as one value: what it says taken when no other copy
    /// shares it, else copied.
    pub fn into_data(self) -> MessageData {
        let said = match Arc::try_unwrap(self.said) {
            Ok(shared) => shared.said,
            Err(shared) => shared.said.clone(),
        };
        MessageData {
            role: said.role,
            content: said.content,
            tool_calls: said.tool_calls,
            tool_call_id: said.tool_call_id,
            name: said.name,
            fields: self.fields,
            origin: self.origin,
            minted: self.minted,
            anchor: self.anchor,
        }
    }

    /// Whether two messages share what they say (not only say the same).
    pub fn says_as(&self, other: &Message) -> bool {
        Arc::ptr_eq(&self.said, &other.said)
    }

    /// [`Said::typed_digest`], computed once for what it says.
    pub fn typed_digest(&self) -> u64 {
        *self
            .said
            .digest
            .get_or_init(|| self.said.said.typed_digest())
    }

    /// Its tokens, images aside, as counted before by the tokenizer keyed
    /// `key`.
    pub(crate) fn counted(&self, key: u64) -> Option<usize> {
        let found = self.said.tokens.get().filter(|(k, _)| *k == key);
        found.map(|&(_, n)| n)
    }

    /// Remembers its tokens, images aside, as counted by the tokenizer
    /// keyed `key` (the first tokenizer to count what it says is kept).
    pub(crate) fn set_counted(&self, key: u64, tokens: usize) {
        let _ = self.said.tokens.set((key, tokens));
    }

    /// What `rewrite` makes of the message, remembered with what it says
    /// by `tag`: a rewrite that depends on nothing but what the message
    /// says and what `tag` tells apart (an old result described on every
    /// request of a conversation) is made once, and what the copy says is
    /// shared, its tokens and digest with it. Only a rewrite that leaves
    /// the message where it sits (its fields, origin, mint and anchor) is
    /// remembered; one tag is kept per message.
    pub fn said_as(&self, tag: u64, rewrite: impl FnOnce(&Message) -> Message) -> Message {
        if let Some((_, said)) = self.said.rewritten.get().filter(|(t, _)| *t == tag) {
            return Message {
                said: Arc::clone(said),
                fields: self.fields.clone(),
                origin: self.origin.clone(),
                minted: self.minted,
                anchor: self.anchor,
            };
        }
        let made = rewrite(self);
        let in_place = made.fields.shares(&self.fields)
            && made.origin == self.origin
            && made.minted == self.minted
            && made.anchor == self.anchor;
        if in_place {
            let _ = self.said.rewritten.set((tag, Arc::clone(&made.said)));
        }
        made
    }

    /// What `make` derives from what the message says, remembered with it
    /// by `tag` (which tells apart every way of deriving one, and the
    /// type): a writer's record of a message written on every request of
    /// a conversation is made once. One tag is kept per message.
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        tag: u64,
        make: impl FnOnce(&Said) -> T,
    ) -> Arc<T> {
        if let Some((_, found)) = self.said.derived.get().filter(|(t, _)| *t == tag) {
            if let Ok(found) = Arc::clone(found).downcast::<T>() {
                return found;
            }
        }
        let made = Arc::new(make(&self.said.said));
        let _ = self.said.derived.set((tag, Arc::clone(&made) as Derived));
        made
    }

    /// Gives a message an operation added its [`Message::minted`] digest,
    /// once: of its role, text and calls as they are now.
    pub fn mint(&mut self) {
        if self.origin.is_some() || self.minted.is_some() {
            return;
        }
        self.minted = Some(self.said.said.mint_digest());
    }

    /// A new message with string content.
    pub fn new(role: Role, text: impl Into<String>) -> Message {
        Message::from(MessageData::new(role, text))
    }

    /// The message as a result of the call with this id.
    pub fn with_call_id(mut self, id: impl Into<String>) -> Message {
        self.tool_call_id = Some(id.into());
        self
    }

    /// A copy of the message with `content` in place of its own, which is
    /// not copied (it is usually most of the message).
    pub fn with_content(&self, content: Content) -> Message {
        let said = Said {
            role: self.role,
            content,
            tool_calls: self.tool_calls.clone(),
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
        };
        Message {
            said: Arc::new(Shared::of(said)),
            fields: self.fields.clone(),
            origin: self.origin.clone(),
            minted: self.minted,
            anchor: self.anchor,
        }
    }

    /// A field that the typed model does not cover (`sender`, `agentId`, …).
    pub fn extra(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The position of the message in the input, if it came from there.
    pub fn input_index(&self) -> Option<usize> {
        self.origin.as_ref().map(|o| o.index)
    }
}

impl Said {
    /// A digest of everything the typed model holds (role, content, calls,
    /// call id, name), never 0. Keyed with a seed drawn per process
    /// (foldhash's quality hasher), so an input cannot be made to collide
    /// with an edit of itself: two different states share a digest with a
    /// chance of about 2^-64.
    pub fn typed_digest(&self) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        static KEY: OnceLock<foldhash::quality::RandomState> = OnceLock::new();
        let mut h = KEY.get_or_init(Default::default).build_hasher();
        self.role.as_str().hash(&mut h);
        match &self.content {
            Content::Absent => 0u8.hash(&mut h),
            Content::Null => 1u8.hash(&mut h),
            Content::Text(s) => {
                2u8.hash(&mut h);
                s.hash(&mut h);
            }
            Content::Parts(parts) => {
                3u8.hash(&mut h);
                parts.len().hash(&mut h);
                for p in parts {
                    hash_value(&p.raw, &mut h);
                    (p.slot, &p.kind).hash(&mut h);
                }
            }
        }
        match &self.tool_calls {
            None => 0u8.hash(&mut h),
            Some(calls) => {
                1u8.hash(&mut h);
                calls.len().hash(&mut h);
                for c in calls {
                    (&c.id, &c.name, &c.arguments, c.slot).hash(&mut h);
                    hash_value(&c.raw, &mut h);
                }
            }
        }
        (&self.tool_call_id, &self.name).hash(&mut h);
        h.finish().max(1)
    }

    /// The digest [`Message::mint`] gives: of its role, text and calls
    /// as they are now.
    fn mint_digest(&self) -> [u8; 16] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut put = |s: &str| {
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        put(self.role.as_str());
        put(&self.content.text());
        for c in self.calls() {
            put(&c.name);
            put(&c.arguments);
        }
        let digest = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        out
    }

    /// The tool calls, or an empty slice.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }

    /// Whether this is an assistant message with at least one tool call.
    pub fn has_calls(&self) -> bool {
        !self.calls().is_empty()
    }
}

/// One conversation: its messages and whatever surrounded them in the input.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    /// The messages, in order.
    pub messages: Vec<Message>,
    /// The enclosing JSON object (`{"messages": [...], "model": ...}`), every
    /// key but the records list written back as it came.
    pub envelope: Option<Map<String, Value>>,
    /// The records the messages were read from, in input order.
    pub records: Vec<Record>,
    /// The line (1-based) the conversation starts on.
    pub line: usize,
    /// The exact text of its JSONL line, written back when nothing changed.
    pub text: Option<Line>,
    /// What reading had to decide about the input (a dangling reference
    /// followed another way, …), told in reports and on standard error.
    pub notes: Vec<String>,
}

impl Conversation {
    /// A conversation of the given messages, with no envelope.
    pub fn new(messages: Vec<Message>) -> Conversation {
        Conversation {
            messages,
            envelope: None,
            records: Vec::new(),
            line: 1,
            text: None,
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_url_images_give_media_type_and_size() {
        let img = Image::from_url("data:image/png;base64,iVBORw0KGgo=");
        assert_eq!(img.media_type.as_deref(), Some("image/png"));
        assert_eq!(img.bytes, Some(8));
        assert_eq!(Image::from_url("https://x/cat.png"), Image::default());
    }

    #[test]
    fn an_inline_image_s_text_past_ascii_is_no_image_and_no_panic() {
        // Its bytes 41 41 41 C2 A0: read as characters, the cut after four
        // fell inside one.
        assert_eq!(image_dimensions("AAA\u{a0}"), None);
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        assert_eq!(image_dimensions(png), Some((1, 1)));
        let img = Image::inline(Some("image/png".into()), "Ä\u{a0}Ä");
        assert_eq!((img.width, img.height), (None, None));
    }

    #[test]
    fn blank_content() {
        assert!(Content::Null.is_blank());
        assert!(Content::Text(" \n".into()).is_blank());
        assert!(!Content::Text("hi".into()).is_blank());
        assert!(Content::Parts(vec![Part::text_part("  ")]).is_blank());
        let img = Part {
            kind: PartKind::Image(Image::default()),
            raw: Value::Null.into(),
            slot: None,
        };
        assert!(!Content::Parts(vec![img]).is_blank());
    }

    #[test]
    fn changed_text_part_keeps_other_keys() {
        let raw: Value = serde_json::from_str(
            r#"{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}"#,
        )
        .unwrap();
        let mut part = Part {
            kind: PartKind::Text("a".into()),
            raw: raw.clone().into(),
            slot: None,
        };
        assert_eq!(part.to_value(), raw);
        part.kind = PartKind::Text("b".into());
        assert_eq!(
            serde_json::to_string(&part.to_value()).unwrap(),
            r#"{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}"#
        );
    }

    #[test]
    fn fields_are_shared_until_changed() {
        let map: Map<String, Value> =
            serde_json::from_str(r#"{"role":"user","content":"a","sender":"x"}"#).unwrap();
        let record = Fields::from(map.clone());
        let mut message = record.clone();
        assert!(message.shares(&record));
        // Reading does not copy; changing does, and the record keeps what was read.
        assert_eq!(message.get("sender"), Some(&Value::from("x")));
        assert!(message.shares(&record));
        message.shift_remove("sender");
        assert!(!message.shares(&record));
        assert_eq!(record, map);
        assert!(!message.contains_key("sender"));
        assert_eq!(record.clone().into_map(), map);
    }

    #[test]
    fn fields_read_from_a_span_are_parsed_when_asked() {
        let text = Arc::new(r#"[{"role":"user","content":"a","sender":"x"}]"#.to_string());
        let end = text.len() - 1;
        let record = Fields::read(&text, 1, end);
        let map: Map<String, Value> = serde_json::from_str(&text[1..end]).unwrap();
        // Peeking parses a copy for the moment: nothing is kept.
        assert_eq!(record.peek(|m| m.len()), 3);
        assert!(record.0.map.get().is_none());
        assert_eq!(record, map);
        assert!(record.0.map.get().is_none());
        // Looking through Deref parses it once and keeps it.
        let mut message = record.clone();
        assert_eq!(message.get("sender"), Some(&Value::from("x")));
        assert!(record.0.map.get().is_some() && message.shares(&record));
        // Changing copies it, and the copy no longer stands for the span.
        message.shift_remove("sender");
        assert!(!message.shares(&record) && message.0.source.is_none());
        assert_eq!(record, map);
        assert_eq!(message.clone().into_map().len(), 2);
        assert_eq!(Fields::read(&text, 1, end).into_map(), map);
    }

    /// A span that names no key `k` has none, told without parsing it; one
    /// that names it, or escapes anything (a key may be spelled so), may.
    #[test]
    fn whether_fields_read_from_a_span_may_have_a_key_is_told_without_parsing_them() {
        for (span, may) in [
            (r#"{"role":"tool","content":"ok"}"#, false),
            (r#"{"role":"tool","is_error":true}"#, true),
            (r#"{"role":"tool","content":"is_error"}"#, true),
            (r#"{"role":"tool","is\u005ferror":true}"#, true),
            (r#"{"role":"tool","content":"\u00e9"}"#, true),
        ] {
            let text = Arc::new(format!("[{span}]"));
            let fields = Fields::read(&text, 1, text.len() - 1);
            assert_eq!(fields.may_have("is_error"), may, "{span}");
            assert!(fields.0.map.get().is_none(), "{span} was parsed");
            // Whenever it has the key, it may.
            assert!(fields.may_have("is_error") || !fields.contains_key("is_error"));
            // Parsed, or built, it may have any key.
            assert!(fields.may_have("is_error"));
            assert!(Fields::new().may_have("is_error"));
        }
    }

    #[test]
    fn whether_fields_read_from_a_span_are_empty_is_told_without_parsing_them() {
        for (span, empty) in [
            ("{}", true),
            ("{ \n\t }", true),
            (r#"{"a":1}"#, false),
            (r#"{"}":{}}"#, false),
            (r#"{ "": "" }"#, false),
        ] {
            let text = Arc::new(format!("[{span}]"));
            let fields = Fields::read(&text, 1, text.len() - 1);
            assert_eq!(fields.is_empty(), empty, "{span}");
            assert!(fields.0.map.get().is_none(), "{span} was parsed");
            // As parsed, and once changed, it says what the map says.
            let _ = fields.get("a");
            assert_eq!(fields.is_empty(), empty, "{span}");
            let mut changed = fields.clone();
            changed.insert("b".into(), Value::Null);
            assert!(!changed.is_empty());
        }
        assert!(Fields::new().is_empty());
    }

    #[test]
    fn roles_parse_with_aliases() {
        assert_eq!(Role::parse("human"), Some(Role::User));
        assert_eq!(Role::parse("ai"), Some(Role::Assistant));
        assert_eq!(Role::parse("bot"), None);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
    }
}
