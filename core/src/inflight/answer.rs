//! What the provider billed, read off its answer as the bytes pass by.
//!
//! A [`Tap`] is fed a copy of each chunk of an answer the proxy streams on
//! to its client; it never holds the answer back. It keeps only the line in
//! progress of a stream (server-sent events, or Ollama's NDJSON), or, for
//! an answer in one piece, its bytes up to a bound, and at the end gives the
//! usage the answer carried ([`Billed`]):
//!
//! - OpenAI chat: `usage.prompt_tokens`, `prompt_tokens_details.cached_tokens`,
//!   `completion_tokens` (in a stream, the last chunk's, when the client
//!   asked for `stream_options.include_usage`);
//! - Responses: `usage.input_tokens`, `input_tokens_details.cached_tokens`,
//!   `output_tokens` (in a stream, `response.completed`'s);
//! - Anthropic: `usage.input_tokens`, `cache_read_input_tokens`,
//!   `cache_creation_input_tokens`, `output_tokens` (in a stream,
//!   `message_start`'s, then `message_delta`'s);
//! - Ollama: `prompt_eval_count`, `eval_count` (the `done: true` line);
//! - Gemini: `usageMetadata` (`promptTokenCount`, `cachedContentTokenCount`,
//!   `candidatesTokenCount`).
//!
//! A stream that carries no usage (OpenAI chat without `include_usage`)
//! gives its text, for the caller to count: never billed figures.

use serde_json::Value;

use crate::format::Format;

/// An answer in one piece is read up to this many bytes.
const MAX_WHOLE: usize = 8 << 20;
/// A stream's line longer than this is skipped.
const MAX_LINE: usize = 4 << 20;
/// A stream's text kept for counting, at most.
const MAX_TEXT: usize = 4 << 20;
/// The most tokens of one kind one call can bill: ten times the largest
/// window (2M). Usage past it is not read ("implausible").
pub const MAX_TOKENS: u64 = 20_000_000;
/// A compressed answer is decoded up to this many bytes: past it the tap
/// gives up (a gzip bomb of 1 MB decodes to 1 GB).
const MAX_DECODED: usize = 64 << 20;
/// OpenAI chunks kept unread (see [`Tap::pending`]), at most: past it they
/// are read for their text at once.
const MAX_PENDING: usize = 4 << 20;

/// Whether a line may carry usage: `usage`, `Usage` (Gemini's
/// `usageMetadata`), or with `ollama` its `eval_count`. One search for
/// `sage` turns away most lines (a text delta), the others are looked for
/// only past it; the searches are built once.
fn may_carry_usage(json: &[u8], ollama: bool) -> bool {
    use memchr::memmem::Finder;
    static KEYS: std::sync::OnceLock<[Finder<'static>; 4]> = std::sync::OnceLock::new();
    let [sage, usage, cap, eval] = KEYS.get_or_init(|| {
        ["sage", "usage", "Usage", "eval_count"].map(|k| Finder::new(k.as_bytes()))
    });
    if ollama {
        // Every line of Ollama's has a `message`: its usage is `eval_count`.
        return eval.find(json).is_some();
    }
    sage.find(json).is_some() && (usage.find(json).is_some() || cap.find(json).is_some())
}

/// Tokens as the provider billed them, by kind. `input` is what was
/// neither read from nor written to the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Billed {
    /// Input tokens at the input price.
    pub input: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache (Anthropic).
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
}

impl Billed {
    /// Every input token, however priced.
    pub fn input_total(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Whether a provider could have sent these figures: none is over
    /// [`MAX_TOKENS`].
    pub fn plausible(&self) -> bool {
        [self.input, self.cache_read, self.cache_write, self.output]
            .iter()
            .all(|&n| n <= MAX_TOKENS)
    }
}

/// What an answer's usage fields said, merged in order (a later figure
/// replaces an earlier one).
#[derive(Default, Debug, Clone, Copy)]
struct Seen {
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    output: Option<u64>,
    /// Whether `input` already leaves out what the cache served (Anthropic).
    input_is_uncached: bool,
}

impl Seen {
    fn any(&self) -> bool {
        self.input.is_some() || self.output.is_some()
    }

    fn merge(&mut self, other: Seen) {
        self.input = other.input.or(self.input);
        self.cache_read = other.cache_read.or(self.cache_read);
        self.cache_write = other.cache_write.or(self.cache_write);
        self.output = other.output.or(self.output);
        self.input_is_uncached |= other.input_is_uncached;
    }

    fn billed(&self) -> Billed {
        let read = self.cache_read.unwrap_or(0);
        let write = self.cache_write.unwrap_or(0);
        let input = self.input.unwrap_or(0);
        Billed {
            input: if self.input_is_uncached {
                input
            } else {
                input.saturating_sub(read.saturating_add(write))
            },
            cache_read: read,
            cache_write: write,
            output: self.output.unwrap_or(0),
        }
    }
}

/// A count; a number that is no count (negative, fractional, past 2⁶⁴) is
/// taken as past every bound, so that the usage is refused, not misread.
fn num(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => Some(n.as_u64().unwrap_or(u64::MAX)),
        _ => None,
    }
}

/// The usage one JSON value of an answer (the whole answer, or one event
/// of a stream) carries, for an answer of `format`'s route.
fn usage_in(format: Format, ollama: bool, v: &Value) -> Seen {
    let mut seen = Seen::default();
    if ollama {
        if v.get("done") == Some(&Value::Bool(true)) {
            seen.input = num(v.get("prompt_eval_count"));
            seen.output = num(v.get("eval_count"));
        }
        return seen;
    }
    match format {
        Format::Anthropic => {
            let u = v
                .get("usage")
                .or_else(|| v.get("message").and_then(|m| m.get("usage")));
            if let Some(u) = u.filter(|u| u.is_object()) {
                seen.input = num(u.get("input_tokens"));
                seen.cache_read = num(u.get("cache_read_input_tokens"));
                seen.cache_write = num(u.get("cache_creation_input_tokens"));
                seen.output = num(u.get("output_tokens"));
                seen.input_is_uncached = true;
            }
        }
        Format::Responses => {
            let u = v
                .get("usage")
                .or_else(|| v.get("response").and_then(|r| r.get("usage")));
            if let Some(u) = u.filter(|u| u.is_object()) {
                seen.input = num(u.get("input_tokens"));
                seen.cache_read = num(u.pointer("/input_tokens_details/cached_tokens"));
                seen.output = num(u.get("output_tokens"));
            }
        }
        Format::Gemini => {
            if let Some(u) = v.get("usageMetadata").filter(|u| u.is_object()) {
                seen.input = num(u.get("promptTokenCount"));
                seen.cache_read = num(u.get("cachedContentTokenCount"));
                // Thinking is billed as output, tools' prompts as input.
                let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
                };
                seen.input = sum(seen.input, num(u.get("toolUsePromptTokenCount")));
                seen.output = sum(
                    num(u.get("candidatesTokenCount")),
                    num(u.get("thoughtsTokenCount")),
                );
            }
        }
        _ => {
            if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                seen.input = num(u.get("prompt_tokens"));
                seen.cache_read = num(u.pointer("/prompt_tokens_details/cached_tokens"));
                seen.output = num(u.get("completion_tokens"));
            }
        }
    }
    seen
}

/// The text a streamed OpenAI chat chunk adds (for counting, when the
/// stream carries no usage).
fn streamed_text(v: &Value, out: &mut String) {
    for c in v
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.pointer("/delta/content").and_then(Value::as_str) {
            if out.len() + t.len() <= MAX_TEXT {
                out.push_str(t);
            }
        }
    }
}

/// How an answer comes: in one piece, or as lines.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    Whole,
    Lines,
}

/// What was read of an answer, when it ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// The provider's figures.
    Billed(Billed),
    /// None in the answer; the text it streamed, to count.
    Streamed(String),
    /// Nothing to read (an error answer, a body cut off, an encoding not
    /// read, one past the bound).
    Nothing(&'static str),
}

/// Lines kept unread, a line each, in blocks that are never copied again
/// as they grow (one growing buffer copied all it held at each doubling:
/// a tenth of the tap's time on a 10k-token answer).
#[derive(Default)]
struct Pending {
    blocks: Vec<Vec<u8>>,
    len: usize,
}

impl Pending {
    const BLOCK: usize = 64 << 10;

    fn push(&mut self, line: &[u8]) {
        let room = self
            .blocks
            .last()
            .is_some_and(|b| b.len() + line.len() < b.capacity());
        if !room {
            self.blocks
                .push(Vec::with_capacity(Self::BLOCK.max(line.len() + 1)));
        }
        let block = self.blocks.last_mut().expect("a block was just made");
        block.extend_from_slice(line);
        block.push(b'\n');
        self.len += line.len() + 1;
    }
}

/// Where a compressed answer decodes to: at most [`MAX_DECODED`] bytes in
/// all, after which every write fails.
#[derive(Default)]
struct Bounded {
    buf: Vec<u8>,
    total: usize,
}

impl Bounded {
    /// Why decoding failed.
    fn why(&self) -> &'static str {
        if self.total > MAX_DECODED {
            "an answer that decodes past the proxy's bound for reading usage"
        } else {
            "a gzip stream that does not decode"
        }
    }
}

impl std::io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.total = self.total.saturating_add(bytes.len());
        if self.total > MAX_DECODED {
            return Err(std::io::Error::other("past the bound"));
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A copy of an answer's bytes, read for its usage as they pass.
pub struct Tap {
    format: Format,
    ollama: bool,
    framing: Framing,
    gunzip: Option<flate2::write::GzDecoder<Bounded>>,
    /// The answer in one piece so far, or the stream's line in progress.
    buf: Vec<u8>,
    skipping: bool,
    /// Whether the last line ended in CR (a LF right after it ends nothing).
    after_cr: bool,
    /// The data of the event in progress (an event stream's `data:` lines).
    data: Vec<u8>,
    seen: Seen,
    text: String,
    /// The JSON of OpenAI chunks whose text is wanted (a stream that has
    /// shown no usage yet), kept as they came, a line each: read for their
    /// text when the stream ends without usage, dropped unread when usage
    /// comes. Reading each as it passed took 5 ms of a 10k-token answer.
    pending: Pending,
    failed: Option<&'static str>,
    /// Whether an OpenAI chat stream's last event (`data: [DONE]`) came:
    /// the answer is whole even if its connection closes before the
    /// upstream's body ends (the openai SDK stops reading at `[DONE]`).
    done: bool,
}

impl Tap {
    /// A tap for an answer on `format`'s route (`ollama`: Ollama's
    /// `/api/chat`), given its `Content-Type` and `Content-Encoding`.
    pub fn new(format: Format, ollama: bool, content_type: &str, encoding: &str) -> Tap {
        let streamed = content_type.contains("event-stream") || content_type.contains("ndjson");
        let (gunzip, failed) = match encoding.trim() {
            "" | "identity" => (None, None),
            "gzip" | "x-gzip" => (
                Some(flate2::write::GzDecoder::new(Bounded::default())),
                None,
            ),
            _ => (None, Some("an encoding the proxy does not read")),
        };
        Tap {
            format,
            ollama,
            framing: if streamed {
                Framing::Lines
            } else {
                Framing::Whole
            },
            gunzip,
            buf: Vec::new(),
            skipping: false,
            after_cr: false,
            data: Vec::new(),
            seen: Seen::default(),
            text: String::new(),
            pending: Pending::default(),
            failed,
            done: false,
        }
    }

    /// A copy of the next chunk.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        match self.gunzip.as_mut() {
            Some(gz) => {
                use std::io::Write;
                if gz.write_all(bytes).is_err() {
                    self.failed = Some(gz.get_ref().why());
                    self.gunzip = None;
                    return;
                }
                let plain = std::mem::take(&mut gz.get_mut().buf);
                self.take(&plain);
            }
            None => self.take(bytes),
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        match self.framing {
            Framing::Whole => {
                if self.buf.len() + bytes.len() > MAX_WHOLE {
                    self.failed = Some("an answer past the proxy's bound for reading usage");
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(bytes);
                }
            }
            Framing::Lines => {
                let mut rest = bytes;
                // Lines end in LF, CR or CRLF (the event stream's rules).
                while let Some(at) = memchr::memchr2(b'\n', b'\r', rest) {
                    let lf_of_crlf = at == 0 && rest[0] == b'\n' && self.after_cr;
                    self.after_cr = rest[at] == b'\r';
                    if !lf_of_crlf {
                        if !self.skipping {
                            if self.buf.is_empty() {
                                // A whole line in this chunk: read in place.
                                self.line(&rest[..at]);
                            } else {
                                self.buf.extend_from_slice(&rest[..at]);
                                let line = std::mem::take(&mut self.buf);
                                self.line(&line);
                                self.buf = line; // its room, for the next
                            }
                        }
                        self.buf.clear();
                        self.skipping = false;
                    }
                    rest = &rest[at + 1..];
                }
                if !rest.is_empty() {
                    self.after_cr = false;
                }
                if !self.skipping {
                    if self.buf.len() + rest.len() > MAX_LINE {
                        self.skipping = true;
                        self.buf = Vec::new();
                    } else {
                        self.buf.extend_from_slice(rest);
                    }
                }
            }
        }
    }

    /// One line of a stream: an NDJSON line is an event; an event stream's
    /// `data:` lines are joined until the blank line that ends the event.
    fn line(&mut self, line: &[u8]) {
        if self.ollama {
            return self.event(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        let Some(d) = line.strip_prefix(b"data:") else {
            return; // `event:`, `id:`, a comment
        };
        let d = d.strip_prefix(b" ").unwrap_or(d);
        if self.data.len() + d.len() >= MAX_LINE {
            self.data.clear();
            return;
        }
        if !self.data.is_empty() {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(d);
    }

    /// The end of an event: its data, read. Data of several lines that is
    /// not one JSON value is read a line at a time (a stream that leaves
    /// out the blank lines between events).
    fn dispatch(&mut self) {
        let data = std::mem::take(&mut self.data);
        if memchr::memchr(b'\n', &data).is_none()
            || serde_json::from_slice::<serde::de::IgnoredAny>(&data).is_ok()
        {
            self.event(&data);
        } else {
            for piece in data.split(|&b| b == b'\n') {
                self.event(piece);
            }
        }
        self.data = data;
        self.data.clear();
    }

    /// One event's JSON.
    fn event(&mut self, json: &[u8]) {
        let json = json.trim_ascii();
        if json.first() != Some(&b'{') {
            self.done |= json == b"[DONE]" && !self.ollama;
            return; // `[DONE]`, a comment, a blank
        }
        // Most events carry no usage: parsed only when they may (or when
        // the text is still wanted).
        let wanted = self.format == Format::OpenAi && !self.ollama && !self.seen.any();
        let may = may_carry_usage(json, self.ollama);
        if wanted && !may {
            if self.pending.len + json.len() >= MAX_PENDING {
                self.read_pending();
            }
            self.pending.push(json);
            return;
        }
        if !may {
            return;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(json) {
            self.seen.merge(usage_in(self.format, self.ollama, &v));
            // Once usage came, the text is not wanted: what was kept
            // unread is dropped below.
            if wanted && !self.seen.any() {
                self.read_pending(); // the text in order
                streamed_text(&v, &mut self.text);
            }
        }
        if self.seen.any() {
            self.pending = Pending::default();
        }
    }

    /// The text of the chunks kept unread: each read for its
    /// `choices[].delta.content` only.
    fn read_pending(&mut self) {
        #[derive(serde::Deserialize)]
        struct Chunk<'a> {
            #[serde(borrow, default)]
            choices: Vec<Choice<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Choice<'a> {
            #[serde(borrow, default)]
            delta: Option<Delta<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Delta<'a> {
            #[serde(borrow, default)]
            content: Option<std::borrow::Cow<'a, str>>,
        }
        let pending = std::mem::take(&mut self.pending);
        for line in pending.blocks.iter().flat_map(|b| b.split(|&c| c == b'\n')) {
            let Ok(chunk) = serde_json::from_slice::<Chunk>(line) else {
                continue;
            };
            for t in chunk
                .choices
                .iter()
                .filter_map(|c| c.delta.as_ref()?.content.as_deref())
            {
                if self.text.len() + t.len() <= MAX_TEXT {
                    self.text.push_str(t);
                }
            }
        }
    }

    /// The answer ended (`complete`: all of it came).
    pub fn finish(mut self, complete: bool) -> Read {
        if let Some(gz) = self.gunzip.take() {
            let why = gz.get_ref().why();
            match gz.finish() {
                Ok(plain) => self.take(&plain.buf),
                Err(_) if self.failed.is_none() => self.failed = Some(why),
                Err(_) => {}
            }
        }
        if self.framing == Framing::Lines && !self.buf.is_empty() && !self.skipping {
            let line = std::mem::take(&mut self.buf);
            self.line(&line);
        }
        if !self.data.is_empty() {
            self.dispatch();
        }
        if self.framing == Framing::Whole && self.failed.is_none() {
            match serde_json::from_slice::<Value>(&self.buf) {
                // Gemini's streamGenerateContent without `alt=sse`: a list.
                Ok(Value::Array(items)) => {
                    for v in &items {
                        self.seen.merge(usage_in(self.format, self.ollama, v));
                    }
                }
                Ok(v) => self.seen.merge(usage_in(self.format, self.ollama, &v)),
                Err(_) if complete => self.failed = Some("an answer that is not JSON"),
                Err(_) => {}
            }
        }
        if self.seen.any() {
            let billed = self.seen.billed();
            if !billed.plausible() {
                return Read::Nothing("implausible: a figure no provider sends");
            }
            return Read::Billed(billed);
        }
        self.read_pending();
        if let Some(why) = self.failed {
            return Read::Nothing(why);
        }
        if !complete && !self.done {
            return Read::Nothing("the answer was cut off");
        }
        match self.framing {
            Framing::Lines if !self.text.is_empty() => Read::Streamed(self.text),
            _ => Read::Nothing("no usage in the answer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(format: Format, ollama: bool, kind: &str, chunks: &[&str]) -> Read {
        let mut t = Tap::new(format, ollama, kind, "");
        for c in chunks {
            t.feed(c.as_bytes());
        }
        t.finish(true)
    }

    #[test]
    fn usage_is_read_from_each_provider_in_one_piece_and_streamed() {
        let anthropic = read(
            Format::Anthropic,
            false,
            "text/event-stream",
            &[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":4000,\"cache_creation_input_tokens\":30,\"output_tokens\":1}}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n",
                "\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":",
                "57}}\n\n",
            ],
        );
        assert_eq!(
            anthropic,
            Read::Billed(Billed {
                input: 12,
                cache_read: 4000,
                cache_write: 30,
                output: 57
            })
        );
        let openai = read(
            Format::OpenAi,
            false,
            "application/json",
            &[
                r#"{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":768}}}"#,
            ],
        );
        assert_eq!(
            openai,
            Read::Billed(Billed {
                input: 232,
                cache_read: 768,
                cache_write: 0,
                output: 9
            })
        );
        let responses = read(
            Format::Responses,
            false,
            "text/event-stream",
            &["event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":10},\"output_tokens\":5}}}\n\n"],
        );
        assert_eq!(
            responses,
            Read::Billed(Billed {
                input: 40,
                cache_read: 10,
                cache_write: 0,
                output: 5
            })
        );
        let ollama = read(
            Format::OpenAi,
            true,
            "application/x-ndjson",
            &["{\"done\":false,\"message\":{\"content\":\"o\"}}\n{\"done\":true,\"prompt_eval_count\":9,\"eval_count\":2}\n"],
        );
        assert_eq!(
            ollama,
            Read::Billed(Billed {
                input: 9,
                cache_read: 0,
                cache_write: 0,
                output: 2
            })
        );
    }

    #[test]
    fn a_stream_without_usage_gives_its_text_and_gzip_is_read() {
        let text = read(
            Format::OpenAi,
            false,
            "text/event-stream",
            &["data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n"],
        );
        assert_eq!(text, Read::Streamed("hello".into()));
        let body = r#"{"usage":{"input_tokens":7,"output_tokens":3}}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, body.as_bytes()).unwrap();
        let zipped = gz.finish().unwrap();
        let mut t = Tap::new(Format::Anthropic, false, "application/json", "gzip");
        for c in zipped.chunks(5) {
            t.feed(c);
        }
        assert_eq!(
            t.finish(true),
            Read::Billed(Billed {
                input: 7,
                output: 3,
                ..Billed::default()
            })
        );
        let cut = Tap::new(Format::Anthropic, false, "application/json", "br");
        assert_eq!(
            cut.finish(true),
            Read::Nothing("an encoding the proxy does not read")
        );
    }

    #[test]
    fn a_stream_the_client_left_after_its_end_is_read_whole() {
        // The openai SDK stops at `[DONE]` and closes the connection: the
        // proxy may see the client leave before the upstream's body ends.
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n";
        let mut left_after = Tap::new(Format::OpenAi, false, "text/event-stream", "");
        left_after.feed(format!("{stream}data: [DONE]\n\n").as_bytes());
        assert_eq!(left_after.finish(false), Read::Streamed("hello".into()));
        // Left before it: what came is not the whole answer.
        let mut left_before = Tap::new(Format::OpenAi, false, "text/event-stream", "");
        left_before.feed(stream.as_bytes());
        assert_eq!(
            left_before.finish(false),
            Read::Nothing("the answer was cut off")
        );
        // `[DONE]` inside a chunk's text ends nothing.
        let mut quoted = Tap::new(Format::OpenAi, false, "text/event-stream", "");
        quoted.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"[DONE]\"}}]}\n\n");
        assert_eq!(
            quoted.finish(false),
            Read::Nothing("the answer was cut off")
        );
    }

    #[test]
    fn gemini_thinking_is_output_and_tools_prompts_input() {
        let gemini = read(
            Format::Gemini,
            false,
            "application/json",
            &[
                r#"{"candidates":[],"usageMetadata":{"promptTokenCount":300,"toolUsePromptTokenCount":20,"candidatesTokenCount":100,"thoughtsTokenCount":5000}}"#,
            ],
        );
        assert_eq!(
            gemini,
            Read::Billed(Billed {
                input: 320,
                output: 5100,
                ..Billed::default()
            })
        );
    }

    #[test]
    fn figures_no_provider_sends_are_refused() {
        for input in [
            "18446744073709551615",
            "18446744073709551616",
            "-5",
            "1e9",
            "2.5",
        ] {
            let body = format!(r#"{{"usage":{{"input_tokens":{input},"output_tokens":3}}}}"#);
            let got = read(Format::Anthropic, false, "application/json", &[&body]);
            assert!(
                matches!(got, Read::Nothing(why) if why.starts_with("implausible")),
                "{input}: {got:?}"
            );
        }
        assert_eq!(
            Billed {
                input: u64::MAX,
                cache_read: u64::MAX,
                ..Billed::default()
            }
            .input_total(),
            u64::MAX
        );
    }

    #[test]
    fn event_streams_end_lines_in_cr_and_join_data_lines() {
        let cr = read(
            Format::Anthropic,
            false,
            "text/event-stream",
            &["event: message_delta\rdata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":4,\"output_tokens\":9}}\r\r"],
        );
        let split = read(
            Format::Anthropic,
            false,
            "text/event-stream",
            &[
                "event: message_delta\r\ndata: {\"type\":\"message_delta\",\r\n",
                "data: \"usage\":{\"input_tokens\":4,\"output_tokens\":9}}\r",
                "\n\r\n",
            ],
        );
        let want = Read::Billed(Billed {
            input: 4,
            output: 9,
            ..Billed::default()
        });
        assert_eq!(cr, want);
        assert_eq!(split, want);
    }

    #[test]
    fn a_gzip_bomb_is_decoded_up_to_the_bound_then_given_up() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let block = vec![b'\n'; 1 << 20];
        for _ in 0..(MAX_DECODED >> 20) + 2 {
            std::io::Write::write_all(&mut gz, &block).unwrap();
        }
        let zipped = gz.finish().unwrap();
        assert!(zipped.len() < 1 << 20, "a bomb: {} bytes", zipped.len());
        let mut t = Tap::new(Format::OpenAi, false, "text/event-stream", "gzip");
        for c in zipped.chunks(16 << 10) {
            t.feed(c);
            assert!(t.buf.capacity() <= MAX_LINE + (1 << 20));
        }
        assert_eq!(
            t.finish(true),
            Read::Nothing("an answer that decodes past the proxy's bound for reading usage")
        );
    }
}
