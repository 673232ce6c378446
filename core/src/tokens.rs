//! Token accounting: one [`Tokenizer`] built once per process and passed down.
//!
//! The recipe, per message, for the tiktoken encodings (`o200k_base`,
//! `cl100k_base`, `p50k_base`, `r50k_base`):
//!
//! ```text
//! 3                                   framing of every message
//! + tokens(role)
//! + tokens(text) of each text part     (a string content is one text part)
//! + tokens(text fields) of other parts (refusals, reasoning summaries, …;
//!                                      never opaque payloads: see [`Opaque`])
//! + tokens(name) + 1                   when a name is set
//! + 3 + tokens(name) + tokens(arguments)   for each tool call
//! + tokens(tool_call_id)               on tool results
//! + 85 for each image                  (never the base64 characters)
//! ```
//!
//! and a conversation costs the sum over its messages + 3 (the reply priming).
//! For plain messages this is OpenAI's published recipe, and the counts match
//! Python tiktoken exactly. Text is encoded as ordinary text: `<|endoftext|>`
//! inside content is counted as the characters it is, not as a special token.
//!
//! Backends: `o200k_base` and `cl100k_base` count over tables laid out at
//! compile time (`vocab`, the only copy of their vocabularies in the binary:
//! a piece longer than 256 bytes is merged there too, through a heap), the
//! text cut into segments at the sure starts of pieces and pre-tokenized by
//! hand where ASCII (see `count_pieces`); `p50k_base` and `r50k_base` over
//! their tables too, behind their own pre-tokenizer (see `legacy`).
//! `bpe-openai` and `tiktoken-rs`'s own encoders are the tests' oracles. Texts of 64
//! bytes or more are counted once per thread and remembered (transcripts
//! repeat their system prompts, tool definitions and results), up to a
//! bounded number of entries.
//!
//! `approx` follows LangChain's `count_tokens_approximately`: per message
//! `ceil(chars / 4) + 3`, where chars counts the Unicode scalar values of the
//! text, the role, the name, the tool_call_id (tool results) and each tool
//! call's name and arguments; 85 per image; no reply priming.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde_json::Value;

use crate::transcript::{Content, Conversation, Message, PartKind, Role};

mod unicode;

/// Tokens charged for every image.
pub const IMAGE_TOKENS: usize = 85;
/// Tokens framing every message (tiktoken recipe).
pub const MESSAGE_OVERHEAD: usize = 3;
/// Tokens priming the reply, once per conversation (tiktoken recipe).
pub const REPLY_PRIMING: usize = 3;
/// Tokens framing every tool call (tiktoken recipe).
pub const TOOL_CALL_OVERHEAD: usize = 3;

/// The encodings ctxclean counts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, o1, o3, GPT-4.1 and later.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo, text-embedding-3.
    Cl100kBase,
    /// Codex and text-davinci-002/003.
    P50kBase,
    /// GPT-3 (davinci).
    R50kBase,
    /// LangChain's character estimate: no vocabulary, very fast.
    Approx,
    /// A Hugging Face `tokenizer.json` (`--tokenizer hf:PATH`), made with
    /// [`Tokenizer::from_hf`].
    Hf,
}

impl Encoding {
    /// Every encoding, as `--tokenizer` lists them.
    pub const ALL: [Encoding; 5] = [
        Encoding::O200kBase,
        Encoding::Cl100kBase,
        Encoding::P50kBase,
        Encoding::R50kBase,
        Encoding::Approx,
    ];

    /// The encoding's name, as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::P50kBase => "p50k_base",
            Encoding::R50kBase => "r50k_base",
            Encoding::Approx => "approx",
            Encoding::Hf => "hf",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Encoding::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown tokenizer '{s}'"))
    }
}

/// Builds what an encoding's first count would otherwise build, e.g. on a
/// thread of its own at start-up: for `o200k_base` and `cl100k_base`, the
/// Unicode classes of the pre-tokenizer, and the pages of the vocabulary's
/// table (read in place, see `crate::vocab`) read in.
pub fn preload(encoding: Encoding) {
    if matches!(encoding, Encoding::O200kBase | Encoding::Cl100kBase) {
        unicode::preload();
        std::hint::black_box(crate::vocab::Vocab::of(encoding == Encoding::Cl100kBase).page_in());
    }
}

/// Counts tokens of texts, messages and conversations.
pub struct Tokenizer {
    encoding: Encoding,
    /// Its vocabulary's name in the memos of texts (see [`memo_key`]): the
    /// encoding's for tiktoken's, one of its own for each Hugging Face
    /// tokenizer loaded (two loaded in one process count each with its own).
    vocab: u64,
    bpe: Option<Backend>,
    /// How images are charged: a provider's rule (`--model`), else the
    /// rule of the document's format ([`Tokenizer::set_format`]), else
    /// [`IMAGE_TOKENS`] each.
    images: Option<crate::images::ImageRule>,
    /// The provider of the document being counted: 0 none, 1 OpenAI, 2
    /// Anthropic, 3 Gemini (atomic, so a tokenizer stays `Sync`).
    format_images: std::sync::atomic::AtomicU8,
}

/// What counts the tokens of a tiktoken encoding.
enum Backend {
    /// `o200k_base` and `cl100k_base`: the compile-time tables
    /// ([`crate::vocab`]), with a pre-tokenizer of our own: a regex per
    /// [`Tokenizer`] (each worker thread builds one), so threads do not
    /// contend for the regex's cache pool.
    Fast(Splitter),
    /// `p50k_base` and `r50k_base`: their tables behind their
    /// pre-tokenizer, compiled once per process (see [`legacy`]).
    Legacy(&'static Legacy),
    /// A Hugging Face tokenizer, and the tokens its chat template adds
    /// (the `hf` feature).
    #[cfg(feature = "hf")]
    Hf(std::sync::Arc<tokenizers::Tokenizer>, Template),
}

/// What a chat template adds around each message, and before the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// ChatML (Qwen, many fine-tunes): `<|im_start|>ROLE\n … <|im_end|>\n`:
    /// 3 tokens and the role's per message; `<|im_start|>assistant\n`
    /// primes the reply.
    ChatMl,
    /// Llama 3: `<|start_header_id|>ROLE<|end_header_id|>\n\n … <|eot_id|>`:
    /// 4 tokens and the role's; `<|begin_of_text|>` once; the assistant
    /// header primes the reply.
    Llama3,
    /// Unknown: OpenAI's recipe (3 per message, 3 for the reply).
    Unknown,
}

impl Template {
    /// The family, told by the special tokens the vocabulary has.
    #[cfg(feature = "hf")]
    fn of(t: &tokenizers::Tokenizer) -> Template {
        let has = |s: &str| t.token_to_id(s).is_some();
        if has("<|im_start|>") && has("<|im_end|>") {
            Template::ChatMl
        } else if has("<|start_header_id|>") && has("<|eot_id|>") {
            Template::Llama3
        } else {
            Template::Unknown
        }
    }

    /// Tokens per message besides its role and content.
    #[cfg_attr(not(feature = "hf"), allow(dead_code))]
    fn per_message(self) -> usize {
        match self {
            Template::ChatMl => 3,
            Template::Llama3 => 4,
            Template::Unknown => MESSAGE_OVERHEAD,
        }
    }

    /// Tokens that prime the reply (and open the conversation).
    #[cfg_attr(not(feature = "hf"), allow(dead_code))]
    fn priming(self) -> usize {
        match self {
            Template::ChatMl => 3,
            Template::Llama3 => 5,
            Template::Unknown => REPLY_PRIMING,
        }
    }

    /// Its name, as `stats` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Template::ChatMl => "chatml",
            Template::Llama3 => "llama3",
            Template::Unknown => "unknown template: OpenAI's per-message recipe",
        }
    }
}

impl Backend {
    /// Tokens of `text`, or `None` as soon as they exceed `limit`.
    fn count(&self, text: &str, limit: usize) -> Option<usize> {
        match self {
            Backend::Fast(splitter) => count_pieces(splitter, text, limit),
            Backend::Legacy(t) => Some(t.count(text)).filter(|&n| n <= limit),
            #[cfg(feature = "hf")]
            Backend::Hf(t, _) => t
                .encode_fast(text, false)
                .ok()
                .map(|e| e.len())
                .filter(|&n| n <= limit),
        }
    }
}

/// Pieces (pre-tokenized words) at most this long are remembered.
const PIECE_MAX_BYTES: usize = 24;
/// The piece memo is cleared when it holds this many pieces.
const PIECE_MAX_ENTRIES: usize = 1 << 18;

/// Pieces this short that are no token are merged again each time they are
/// not in [`Recent`], not remembered: their few look-ups (see
/// [`crate::vocab`]) cost about what a look-up in a memo of a quarter of a
/// million pieces costs, and base64's pieces, which never repeat, filled
/// it. Measured (2026-11-30, medians of 7 to 11 interleaved rounds):
/// base64 24 → 31 MB/s from 4 bytes to 8 (19 with every piece
/// remembered, 31 with none), the other corpora the same within the VM's
/// swing (the high-entropy one 5% slower with no piece remembered).
const SHORT_MERGE: usize = 8;

/// Short pieces by value (up to 15 bytes packed in an integer, with their
/// length), longer ones by text.
#[derive(Default)]
struct PieceMemo {
    /// The short pieces seen last, one per slot by their hash, whatever
    /// their count: the words a text repeats are found here without a
    /// look-up in the vocabulary's table, which is megabytes and misses the
    /// processor's caches.
    recent: Recent,
    packed: std::collections::HashMap<u128, u32, std::hash::BuildHasherDefault<FxHasher>>,
    text: std::collections::HashMap<Box<[u8]>, u32, std::hash::BuildHasherDefault<FxHasher>>,
    /// Segments of 16 bytes or more seen last (see [`Segments`]).
    segments: Segments,
}

/// A direct-mapped cache of the counts of segments of 16 bytes or more:
/// JSON repeats its keys and punctuation between values, and a run of them
/// without a space or a digit is one segment. Each slot holds a segment's
/// keyed hash (see [`keyed_hash`]), its length and its count; a length of
/// 0 is an empty slot. Bounded, and of a size that stays in the
/// processor's caches: a map of every segment seen made text of few repeats
/// (the high-entropy corpus) 18% slower, its look-ups missing the caches.
struct Segments(Box<[(u64, u32, u32)]>);

impl Default for Segments {
    fn default() -> Segments {
        Segments(vec![(0, 0, 0); 1 << Segments::BITS].into_boxed_slice())
    }
}

impl Segments {
    const BITS: u32 = 13;

    fn slot(hash: u64) -> usize {
        (hash >> (64 - Segments::BITS)) as usize
    }

    fn get(&self, (hash, len): (u64, u32)) -> Option<u32> {
        let (h, l, c) = self.0[Segments::slot(hash)];
        (h == hash && l == len).then_some(c)
    }

    fn put(&mut self, (hash, len): (u64, u32), count: u32) {
        self.0[Segments::slot(hash)] = (hash, len, count);
    }
}

/// A direct-mapped cache of short pieces' counts: a packed piece (see
/// [`pack`]; never 0) and its count in each slot.
struct Recent(Box<[(u128, u32)]>);

impl Default for Recent {
    fn default() -> Recent {
        Recent(vec![(0, 0); Recent::SLOTS].into_boxed_slice())
    }
}

impl Recent {
    const SLOTS: usize = 1 << 13;

    fn slot(key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 13)) as usize
    }

    fn get(&self, key: u128) -> Option<u32> {
        let (k, c) = self.0[Recent::slot(key)];
        (k == key).then_some(c)
    }

    fn put(&mut self, key: u128, count: u32) {
        self.0[Recent::slot(key)] = (key, count);
    }
}

thread_local! {
    /// Token counts of the short pieces this thread has seen, one memo per
    /// vocabulary (o200k_base, cl100k_base): BPE of a pre-tokenized piece
    /// does not depend on its context, and words repeat. A process may
    /// count with both (the Python package, one call per model).
    static PIECES: std::cell::RefCell<[PieceMemo; 2]> = std::cell::RefCell::new(Default::default());
}

/// A piece of at most 15 bytes as one integer: its bytes and its length.
fn pack(piece: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    buf[..piece.len()].copy_from_slice(piece);
    buf[15] = piece.len() as u8;
    u128::from_le_bytes(buf)
}

/// [`pack`] of `text[at..at + len]`, from one 16-byte read where the text
/// goes on that far.
#[inline]
fn pack_at(text: &[u8], at: usize, len: usize) -> u128 {
    match text.get(at..at + 16) {
        Some(wide) => {
            let wide = u128::from_le_bytes(wide.try_into().expect("16 bytes"));
            let mask = (1u128 << (len * 8)) - 1;
            (wide & mask) | ((len as u128) << 120)
        }
        None => pack(&text[at..at + len]),
    }
}

/// Marks a packed segment (see [`count_pieces`]) apart from a packed piece
/// of the same bytes in [`Recent`]: the top bit of the length byte.
const SEGMENT: u128 = 1 << 127;

/// Counts as `bpe-openai` does (pre-tokenize, then BPE each piece), with
/// short segments' and pieces' counts remembered. A segment runs from one
/// sure start of a piece to the next (see [`segments`]): text repeats its
/// words and its JSON keys with their punctuation, and a segment seen before
/// is counted without cutting it. Pieces are merged over the vocabulary's
/// table (see [`crate::vocab`]), the only copy of the vocabulary in the
/// binary.
fn count_pieces(splitter: &Splitter, text: &str, limit: usize) -> Option<usize> {
    let vocab = crate::vocab::Vocab::of(splitter.cl100k);
    let b = text.as_bytes();
    PIECES.with(|memos| {
        let mut memos = memos.borrow_mut();
        let memo = &mut memos[usize::from(splitter.cl100k)];
        let mut n = 0;
        for (start, end) in segments(text) {
            let key = SegmentKey::of(b, start, end);
            if let Some(c) = memo.segment(&key) {
                n += c as usize;
            } else {
                let mut c = 0;
                for (i, j) in splitter.segment_pieces(&text[..end], start) {
                    c += memo.count_piece(vocab, b, i, j);
                    if n + c > limit {
                        return None;
                    }
                }
                memo.remember_segment(&key, c as u32);
                n += c;
            }
            if n > limit {
                return None;
            }
        }
        Some(n)
    })
}

/// A segment's key in [`PieceMemo`]: a short one by its bytes (in
/// [`Recent`], marked apart from pieces), a long one by its keyed hash and
/// length (in [`Segments`]).
enum SegmentKey {
    Short(u128),
    Long((u64, u32)),
}

impl SegmentKey {
    fn of(b: &[u8], start: usize, end: usize) -> SegmentKey {
        if end - start < 16 {
            SegmentKey::Short(pack_at(b, start, end - start) | SEGMENT)
        } else {
            SegmentKey::Long((keyed_hash(&b[start..end]), (end - start) as u32))
        }
    }
}

impl PieceMemo {
    fn segment(&self, key: &SegmentKey) -> Option<u32> {
        match *key {
            SegmentKey::Short(k) => self.recent.get(k),
            SegmentKey::Long(k) => self.segments.get(k),
        }
    }

    fn remember_segment(&mut self, key: &SegmentKey, count: u32) {
        match *key {
            SegmentKey::Short(k) => self.recent.put(k, count),
            SegmentKey::Long(k) => self.segments.put(k, count),
        }
    }

    /// The tokens of the piece `text[i..j]`, remembered when it is short.
    fn count_piece(
        &mut self,
        vocab: crate::vocab::Vocab,
        text: &[u8],
        i: usize,
        j: usize,
    ) -> usize {
        let bytes = &text[i..j];
        let bpe = |bytes: &[u8]| vocab.count(bytes);
        match bytes.len() {
            // Every byte is a token of a byte-level vocabulary.
            1 => 1,
            2..=15 => {
                let key = pack_at(text, i, bytes.len());
                if let Some(c) = self.recent.get(key) {
                    return c as usize;
                }
                // Most words are one token: found in the table.
                let c = if vocab.is_token(bytes) {
                    1
                } else if bytes.len() <= SHORT_MERGE {
                    vocab.count_not_token(bytes) as u32
                } else if let Some(&c) = self.packed.get(&key) {
                    c
                } else {
                    let c = vocab.count_not_token(bytes) as u32;
                    if self.packed.len() >= PIECE_MAX_ENTRIES {
                        self.packed.clear();
                    }
                    self.packed.insert(key, c);
                    c
                };
                self.recent.put(key, c);
                c as usize
            }
            16..=PIECE_MAX_BYTES => {
                if let Some(&c) = self.text.get(bytes) {
                    return c as usize;
                }
                let c = bpe(bytes);
                if self.text.len() >= PIECE_MAX_ENTRIES {
                    self.text.clear();
                }
                self.text.insert(bytes.into(), c as u32);
                c
            }
            _ => bpe(bytes),
        }
    }
}

/// The pre-tokenizer of `o200k_base` and `cl100k_base`: by hand (ASCII
/// here, any text in `tokens/unicode.rs`), tested against tiktoken's
/// pattern as `bpe-openai` writes it ([`pattern`], [`Splitter::split_regex`]).
struct Splitter {
    /// Whether this is `cl100k_base`'s pattern (else `o200k_base`'s).
    cl100k: bool,
}

/// Which of the patterns end with a look-ahead character.
const LOOKAHEAD: [bool; 3] = [false, true, false];

/// The pattern of `o200k_base` or `cl100k_base`, its negative look-ahead
/// `\s+(?!\S)` rewritten as a positive look-ahead pattern whose last
/// character is dropped from the match, compiled once per process (a few
/// milliseconds): what the pieces cut by hand are tested against.
fn pattern(cl100k: bool) -> &'static regex_automata::meta::Regex {
    static O200K: OnceLock<regex_automata::meta::Regex> = OnceLock::new();
    static CL100K: OnceLock<regex_automata::meta::Regex> = OnceLock::new();
    let cell = if cl100k { &CL100K } else { &O200K };
    cell.get_or_init(|| {
        let pat1 = if cl100k {
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$".to_string()
        } else {
            [
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                "\\p{N}{1,3}",
                " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
                "\\s*[\\r\\n]+",
                "\\s+$",
            ]
            .join("|")
        };
        regex_automata::meta::Regex::new_many(&[pat1.as_str(), "\\s+\\s", "\\s+"])
            .expect("the tiktoken patterns compile")
    })
}

impl Splitter {
    fn new(encoding: Encoding) -> Splitter {
        Splitter {
            cl100k: encoding == Encoding::Cl100kBase,
        }
    }

    /// The pieces of `text`, as counting cuts it: segment by segment (see
    /// [`segments`]), by hand (the same pieces as the regex, several times
    /// faster).
    fn split<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        segments(text).flat_map(move |(start, end)| {
            self.segment_pieces(&text[..end], start)
                .map(move |(i, j)| &text[i..j])
        })
    }

    /// The pieces of the segment of `text` from `start` to its end, as
    /// ranges.
    fn segment_pieces<'a>(&'a self, text: &'a str, start: usize) -> SegmentPieces<'a> {
        let how = if text.as_bytes()[start..].is_ascii() {
            How::Ascii
        } else if one_piece(&text[start..]) {
            How::Whole
        } else {
            How::Unicode
        };
        SegmentPieces {
            splitter: self,
            text,
            pos: start,
            how,
        }
    }

    /// The pieces of `text` as the regex cuts it, whole: the reference.
    fn split_regex<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut last = 0;
        std::iter::from_fn(move || {
            let end = self.regex_piece_end(text, last)?;
            let start = last;
            last = end;
            Some(&text[start..end])
        })
    }

    /// Where the regex's piece of `text` starting at `start` ends (`None`
    /// at the end of `text`).
    fn regex_piece_end(&self, text: &str, start: usize) -> Option<usize> {
        piece_end(pattern(self.cl100k), |p| LOOKAHEAD[p], text, start)
    }
}

/// Where the piece of `text` starting at `start` ends under a pre-tokenizer
/// of several patterns, those for which `lookahead` is true ending with a
/// look-ahead character, dropped from the piece (as `bpe-openai` writes
/// tiktoken's negative look-ahead); `None` at the end of `text`, or when
/// no pattern matches there.
fn piece_end(
    re: &regex_automata::meta::Regex,
    lookahead: impl Fn(usize) -> bool,
    text: &str,
    start: usize,
) -> Option<usize> {
    let input = regex_automata::Input::new(&text[start..]).anchored(regex_automata::Anchored::Yes);
    let m = re.find(input)?;
    let mut end = start + m.range().end;
    if lookahead(m.pattern().as_usize()) {
        let c = text[start..end].chars().next_back()?;
        end -= c.len_utf8();
    }
    (end > start).then_some(end)
}

/// The segments of `text`, as `(start, end)`: it is cut at each sure start
/// of a piece, whatever follows it. There are three:
/// - a space whose preceding character is not whitespace: no alternative of
///   either pattern matches a non-space followed by a space (after its
///   first character, letter pieces hold only letters and marks, number
///   pieces digits, punctuation pieces more punctuation and then only `\r`,
///   `\n` or `/`; the others only whitespace);
/// - an ASCII digit whose preceding character is ASCII, not a digit and
///   not whitespace: no alternative takes a digit after its first
///   character but the numbers' `\p{N}{1,3}`, whose digits follow a digit;
/// - an ASCII character that is not a digit, after an ASCII digit: a
///   number piece holds only digits, and no other alternative takes a
///   digit but as its first character.
///
/// JSON's keys and punctuation between the digits of ids, dates and sizes
/// are segments of their own, and repeat. Each segment cut alone gives the
/// pieces the whole text gives: it never ends in whitespace but at the end
/// of the text, so the look-ahead and `$` see what they would in the whole
/// text, and every match that ends within it is one the whole text allows.
fn segments(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= b.len() {
            return None;
        }
        let end = segment_end(text, start);
        let segment = (start, end);
        start = end;
        Some(segment)
    })
}

/// Where the segment of `text` that starts at `start` ends (see
/// [`segments`]).
#[inline]
fn segment_end(text: &str, start: usize) -> usize {
    let b = text.as_bytes();
    // After a digit's run, an ASCII character that is no digit.
    let after_digits = |q: usize| {
        let r = q + b[q..].iter().take_while(|c| c.is_ascii_digit()).count();
        (r < b.len() && b[r] < 0x80).then_some(r).ok_or(r)
    };
    let mut p = start + 1;
    if b[start].is_ascii_digit() {
        match after_digits(start) {
            Ok(r) => return r,
            Err(r) => p = p.max(r),
        }
    }
    loop {
        let Some(q) = find_space_or_digit(b, p) else {
            return b.len();
        };
        let before = b[q - 1];
        if b[q] == b' ' {
            let sure = if before < 0x80 {
                !is(before, WS)
            } else {
                !ends_in_whitespace(&text[..q])
            };
            if sure {
                return q;
            }
            p = q + 1;
        } else if before < 0x80 && !is(before, WS | DIGIT) {
            return q;
        } else {
            match after_digits(q) {
                Ok(r) => return r,
                Err(r) => p = r,
            }
        }
    }
}

/// The first space or ASCII digit in `b` from `p`, eight bytes at a time.
#[inline]
fn find_space_or_digit(b: &[u8], mut p: usize) -> Option<usize> {
    while let Some(word) = b.get(p..p + 8) {
        let found = space_or_digit(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        if found != 0 {
            return Some(p + found.trailing_zeros() as usize / 8);
        }
        p += 8;
    }
    b.get(p..)?
        .iter()
        .position(|&c| c == b' ' || c.is_ascii_digit())
        .map(|k| p + k)
}

/// The high bit of each byte of `w` that is a space or an ASCII digit, and
/// of no byte below the lowest such byte (a borrow may mark bytes above
/// it).
#[inline]
fn space_or_digit(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES << 7;
    let x = w ^ (ONES * u64::from(b' '));
    // The lowest byte of `x` that is zero (a space) has its high bit set
    // here, and no byte below it does.
    let space = x.wrapping_sub(ONES) & !x & HIGH;
    // Bytes strictly between 0x2F and 0x3A ('0' to '9'), each exactly
    // (Bit Twiddling Hacks' `hasbetween`, for bounds of at most 128).
    let low = w & (ONES * 0x7F);
    let digit = (ONES * (0x7F + 0x3A)).wrapping_sub(low) & !w & (low + ONES * (0x7F - 0x2F)) & HIGH;
    space | digit
}

/// How a segment is cut (see [`Splitter::segment_pieces`]).
enum How {
    Ascii,
    Unicode,
    Whole,
}

/// The pieces of one segment, as ranges of `text`, which ends where the
/// segment ends.
struct SegmentPieces<'a> {
    splitter: &'a Splitter,
    text: &'a str,
    pos: usize,
    how: How,
}

impl Iterator for SegmentPieces<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let start = self.pos;
        if start >= self.text.len() {
            return None;
        }
        self.pos = match self.how {
            How::Ascii => ascii_piece_end(self.text.as_bytes(), start, self.splitter.cl100k),
            How::Unicode => unicode::piece_end(self.text, start, self.splitter.cl100k),
            How::Whole => self.text.len(),
        };
        Some((start, self.pos))
    }
}

/// Whether `text` ends in a whitespace character (the regex's `\s`).
fn ends_in_whitespace(text: &str) -> bool {
    text.chars().next_back().is_some_and(char::is_whitespace)
}

/// Whether `part` (a segment) is one piece in both
/// patterns without asking the regex: an optional space, then only CJK
/// ideographs (all letters, `\p{Lo}`), or only pictographs (symbols: no
/// letter, digit, mark or whitespace), which the letter and the punctuation
/// alternatives take whole. Checked against the regex's classes in a test.
fn one_piece(part: &str) -> bool {
    let rest = part.strip_prefix(' ').unwrap_or(part);
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if is_ideograph(c) => chars.all(is_ideograph),
        Some(c) if is_pictograph(c) => chars.all(is_pictograph),
        _ => false,
    }
}

/// CJK Unified Ideographs assigned since Unicode 13 (`\p{Lo}`).
fn is_ideograph(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFC}').contains(&c)
}

/// Pictographs and emoji (`\p{So}`, `\p{Sk}` skin tones, unassigned code
/// points among them), the zero-width joiner of emoji sequences, and the
/// miscellaneous symbols and dingbats before the dingbats' circled digits.
fn is_pictograph(c: char) -> bool {
    ('\u{1F300}'..='\u{1FAFF}').contains(&c)
        || ('\u{2600}'..='\u{2775}').contains(&c)
        || c == '\u{200D}'
}

/// For the fuzz target (`crate::fuzzing::pre_tokenizer`): the pieces the
/// hand-written ASCII pre-tokenizer cuts `text` in, and the regex's, for
/// `o200k_base` and `cl100k_base`.
pub(crate) fn pieces_both_ways(text: &str) -> [(Vec<String>, Vec<String>); 2] {
    [Encoding::O200kBase, Encoding::Cl100kBase].map(|e| {
        let sp = Splitter::new(e);
        let fast = sp.split(text).map(str::to_string).collect();
        let slow = sp.split_regex(text).map(str::to_string).collect();
        (fast, slow)
    })
}

/// The classes of ASCII bytes the pre-tokenizer patterns tell apart (see
/// [`ascii_piece_end`]), one bit each, looked up in [`CLASS`].
const WS: u8 = 1;
const UPPER: u8 = 2;
const LOWER: u8 = 4;
const DIGIT: u8 = 8;
const CRLF: u8 = 16;
const PUNCT: u8 = 32;
const LETTER: u8 = UPPER | LOWER;

static CLASS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = match b {
            b'\r' | b'\n' => WS | CRLF,
            b' ' | b'\t' | 0x0B | 0x0C => WS,
            b'A'..=b'Z' => UPPER,
            b'a'..=b'z' => LOWER,
            b'0'..=b'9' => DIGIT,
            _ => PUNCT,
        };
        c += 1;
    }
    t
};

/// Whether ASCII byte `c` is of any of the classes `f`.
#[inline]
fn is(c: u8, f: u8) -> bool {
    CLASS[usize::from(c & 0x7F)] & f != 0
}

/// Where the run of bytes of the classes `f` from `j` ends.
#[inline]
fn run(b: &[u8], mut j: usize, f: u8) -> usize {
    while j < b.len() && is(b[j], f) {
        j += 1;
    }
    j
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `j`: where it ends.
fn contraction(b: &[u8], j: usize) -> Option<usize> {
    if b.get(j) != Some(&b'\'') {
        return None;
    }
    let at = |k: usize| b.get(j + k).map(u8::to_ascii_lowercase);
    match (at(1)?, at(2)) {
        (b's' | b't' | b'm' | b'd', _) => Some(j + 2),
        (b'r' | b'v', Some(b'e')) | (b'l', Some(b'l')) => Some(j + 3),
        _ => None,
    }
}

/// Where the piece starting at `i` of ASCII text `b` ends: the pre-tokenizer
/// patterns worked out for ASCII, alternative by alternative, in the regex's
/// leftmost-first order (`\p{L}` is `[A-Za-z]`, `\p{N}` is `[0-9]`, `\s` is
/// `[\t\n\x0B\x0C\r ]`). Tested against the regex on random ASCII text.
///
/// An alternative that may open with one optional byte (`[^\r\n\p{L}\p{N}]?`
/// before letters, ` ?` before punctuation) is tried from one start only:
/// past that byte when it is there, since from the byte itself, which is
/// neither a letter nor punctuation, the rest cannot match.
fn ascii_piece_end(b: &[u8], i: usize, cl100k: bool) -> usize {
    let n = b.len();
    let c = b[i];
    // Letters, after an optional byte that is no letter, digit or line break.
    let s = if !is(c, CRLF | LETTER | DIGIT) && i + 1 < n {
        i + 1
    } else {
        i
    };
    if cl100k {
        if let Some(e) = contraction(b, i) {
            return e;
        }
        let j = run(b, s, LETTER);
        if j > s {
            return j;
        }
    } else {
        // `[A-Z]*[a-z]+`, else `[A-Z]+[a-z]*`, then a contraction.
        let u = run(b, s, UPPER);
        let l = run(b, u, LOWER);
        if l > s {
            return contraction(b, l).unwrap_or(l);
        }
    }
    // \p{N}{1,3}: a run of digits is read three at a time, never to its
    // end (a run of a million digits was read to its end for each of its
    // pieces: 300 KB of them took 8 s).
    if is(c, DIGIT) {
        return run(&b[..n.min(i + 3)], i, DIGIT);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`)
    let s = if c == b' ' && i + 1 < n { i + 1 } else { i };
    let j = run(b, s, PUNCT);
    if j > s {
        let mut j = run(b, j, CRLF);
        while !cl100k && j < n && (b[j] == b'/' || is(b[j], CRLF)) {
            j += 1;
        }
        return j;
    }
    // What is left starts with whitespace.
    let w = run(b, i, WS);
    // `\s*[\r\n]+`: up to the last line break of the run.
    if let Some(p) = (i..w).rev().find(|&p| is(b[p], CRLF)) {
        return p + 1;
    }
    // `\s+$`
    if w == n {
        return n;
    }
    // `\s+(?!\S)`: all but the last, when there are two or more; else `\s+`.
    if w - i >= 2 {
        w - 1
    } else {
        w.max(i + 1)
    }
}

/// A small, fast hasher for short keys (the Fx hash of rustc).
#[derive(Clone, Copy, Default)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u128(&mut self, v: u128) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let h = (self.0.rotate_left(5) ^ v as u64).wrapping_mul(K);
        self.0 = (h.rotate_left(5) ^ (v >> 64) as u64).wrapping_mul(K);
    }

    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            h = (h.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
        self.0 = h;
    }
}

/// Texts at least this long are remembered once counted.
const MEMO_MIN_BYTES: usize = 64;
/// The memo is cleared when it holds this many texts.
const MEMO_MAX_ENTRIES: usize = 1 << 17;

/// A long text, in the memo: its vocabulary (see [`Tokenizer::vocab`]),
/// hash and length.
type MemoKey = (u64, u64, usize);

/// What the memo knows of a text's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// Exactly so many.
    Exact(usize),
    /// More than so many: counting stopped at a limit (a trim asks whether
    /// a message fits what is left of its budget), and a call with the same
    /// limit or a lower one needs no count again.
    Over(usize),
}

impl Known {
    /// The tokens if at most `limit` (`Some(None)`: more than `limit`);
    /// `None` when this does not tell.
    fn within(self, limit: usize) -> Option<Option<usize>> {
        match self {
            Known::Exact(n) => Some(Some(n).filter(|&n| n <= limit)),
            Known::Over(m) if limit <= m => Some(None),
            Known::Over(_) => None,
        }
    }

    /// What is known after counting within `limit` found `found`.
    fn after(found: Option<usize>, limit: usize, before: Option<Known>) -> Known {
        match (found, before) {
            (Some(n), _) => Known::Exact(n),
            (None, Some(Known::Over(m))) => Known::Over(m.max(limit)),
            (None, _) => Known::Over(limit),
        }
    }
}

thread_local! {
    /// What this thread has counted of long texts.
    static MEMO: std::cell::RefCell<MemoMap> = std::cell::RefCell::new(MemoMap::default());
}

/// Shards of the memo all workers share: a long text one worker counted is
/// not counted again by another (`-j2` would otherwise count every repeated
/// text once per worker).
const SHARDS: usize = 16;

type SharedMemo = std::sync::Mutex<MemoMap>;

/// What is known of texts by their key, which is itself a keyed hash (see
/// [`memo_key`]): looked up with foldhash's fast hasher, not SipHash.
type MemoMap = std::collections::HashMap<MemoKey, Known, foldhash::fast::RandomState>;

static SHARED: std::sync::LazyLock<[SharedMemo; SHARDS]> =
    std::sync::LazyLock::new(|| std::array::from_fn(|_| SharedMemo::default()));

/// The memo's key for a text: a hash keyed with a seed drawn once per
/// process (the same in every thread, so workers share what they counted;
/// no input can be made to collide with another, two texts of one length
/// share a hash with a chance of about 2^-64).
fn memo_key(vocab: u64, text: &str) -> MemoKey {
    (vocab, keyed_hash(text.as_bytes()), text.len())
}

/// A hash of `bytes` keyed with a seed drawn once per process (the same in
/// every thread): no input can be made to collide with another.
fn keyed_hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static SEED: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(Default::default).hash_one(bytes)
}

/// Texts this long, and shorter than [`MEMO_MIN_BYTES`], are remembered in
/// [`SHORT`]. Shorter ones are one segment or a few, each found in the
/// memo of pieces at once; from this length on a segment is cut into its
/// pieces: a tool call's id of 32 random letters is a dozen merges, and
/// it is counted again with its message each time a recipe counts the
/// conversation.
const SHORT_MEMO_MIN_BYTES: usize = 16;

/// A slot of a table of counts ([`SHORT`], [`TINY`]): the key of the text
/// it counts (its default, for an empty slot, is no text's key) and its
/// count.
type Slot<K> = (K, u32);

/// A table of counts per thread, one per slot.
type Slots<K> = std::thread::LocalKey<std::cell::RefCell<Box<[Slot<K>]>>>;

/// A short text's key in [`SHORT`]: its vocabulary, hash and length (see
/// [`memo_key`]); length 0 for an empty slot.
type ShortKey = (u64, u64, u32);

/// A tiny text's key in [`TINY`]: its vocabulary and its bytes as one
/// integer (see [`pack`]; never 0).
type TinyKey = (u64, u128);

thread_local! {
    /// Short texts' counts, one per slot by their hash: bounded, and the
    /// memo of long texts is not filled (and cleared) by them.
    static SHORT: std::cell::RefCell<Box<[Slot<ShortKey>]>> =
        std::cell::RefCell::new(vec![Slot::default(); 1 << 12].into_boxed_slice());

    /// The counts of texts shorter than [`SHORT_MEMO_MIN_BYTES`] (a role,
    /// a call's id, a tool's name: counted with their message every time a
    /// conversation is), one per slot, found by their bytes: through the
    /// memo of pieces each cost about 400 instructions (a replay of 120
    /// calls counted 285,000 of them, a twentieth of its work).
    static TINY: std::cell::RefCell<Box<[Slot<TinyKey>]>> =
        std::cell::RefCell::new(vec![Slot::default(); 1 << 10].into_boxed_slice());
}

/// Tokens of a short text if at most `limit`, through [`SHORT`].
fn short_count(vocab: u64, bpe: &Backend, text: &str, limit: usize) -> Option<usize> {
    let (vocab, hash, len) = memo_key(vocab, text);
    // Each vocabulary's count of a text in a slot of its own.
    let slot = ((hash ^ vocab.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 52) as usize;
    slotted(&SHORT, (slot, (vocab, hash, len as u32)), bpe, text, limit)
}

/// Tokens of a text of 1 to 15 bytes if at most `limit`, through [`TINY`].
fn tiny_count(vocab: u64, bpe: &Backend, text: &str, limit: usize) -> Option<usize> {
    let key = pack(text.as_bytes());
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29) ^ vocab;
    let slot = (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 10)) as usize;
    slotted(&TINY, (slot, (vocab, key)), bpe, text, limit)
}

/// Tokens of `text` if at most `limit`: the count `table` keeps for `key`
/// at `slot`, else counted and kept there (in place of the one before).
fn slotted<K: Copy + Eq + 'static>(
    table: &'static Slots<K>,
    (slot, key): (usize, K),
    bpe: &Backend,
    text: &str,
    limit: usize,
) -> Option<usize> {
    let (seen, count) = table.with(|s| s.borrow()[slot]);
    if seen == key {
        return Some(count as usize).filter(|&n| n <= limit);
    }
    let found = bpe.count(text, limit);
    if let Some(count) = found {
        table.with(|s| s.borrow_mut()[slot] = (key, count as u32));
    }
    found
}

/// Keeps what is known of a text in this thread's memo, cleared when full.
fn remember(key: MemoKey, known: Known) {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MEMO_MAX_ENTRIES {
            m.clear();
        }
        m.insert(key, known);
    });
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("encoding", &self.encoding)
            .finish()
    }
}

/// The GPT-2 family's pre-tokenizer (`p50k_base`, `r50k_base`), tiktoken's
/// `'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s`
/// with its negative look-ahead written as `bpe-openai` writes cl100k's
/// (MIT): a pattern whose last character is dropped from the match.
const LEGACY_PATTERNS: [(&str, bool); 3] = [
    (
        "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+$",
        false,
    ),
    ("\\s+\\s", true),
    ("\\s", false),
];

/// `p50k_base` or `r50k_base`: the vocabulary's compile-time table
/// ([`crate::vocab`]; the special `<|endoftext|>` is not in it: text is
/// counted as ordinary text) and the pre-tokenizer (see
/// [`LEGACY_PATTERNS`]). A piece is merged as tiktoken merges it, long ones
/// through a heap, so a count is O(n log n) in its longest piece where
/// tiktoken's own merge is quadratic (20 MB of one letter took tiktoken-rs
/// 16.5 s and 1 GB).
struct Legacy {
    vocab: crate::vocab::Vocab,
    re: regex_automata::meta::Regex,
}

impl Legacy {
    /// The tokens of `text`: its pieces, each merged.
    fn count(&self, text: &str) -> usize {
        let (mut n, mut last) = (0, 0);
        while last < text.len() {
            // Every character is some piece; were one not, it goes alone.
            let end = piece_end(&self.re, |p| LEGACY_PATTERNS[p].1, text, last)
                .unwrap_or_else(|| last + text[last..].chars().next().map_or(1, char::len_utf8));
            n += self.vocab.count(&text.as_bytes()[last..end]);
            last = end;
        }
        n
    }
}

/// `p50k_base` or `r50k_base`, its pre-tokenizer compiled on first use and
/// kept for the process.
fn legacy(encoding: Encoding) -> anyhow::Result<&'static Legacy> {
    static P50K: OnceLock<Legacy> = OnceLock::new();
    static R50K: OnceLock<Legacy> = OnceLock::new();
    let (cell, p50k) = match encoding {
        Encoding::P50kBase => (&P50K, true),
        Encoding::R50kBase => (&R50K, false),
        _ => anyhow::bail!("{encoding} is not of the GPT-2 family"),
    };
    if let Some(t) = cell.get() {
        return Ok(t);
    }
    let patterns: Vec<&str> = LEGACY_PATTERNS.iter().map(|(p, _)| *p).collect();
    let re = regex_automata::meta::Regex::new_many(&patterns)
        .map_err(|e| anyhow::anyhow!("the {encoding} pre-tokenizer: {e}"))?;
    let vocab = crate::vocab::Vocab::gpt2(p50k);
    Ok(cell.get_or_init(|| Legacy { vocab, re }))
}

impl Tokenizer {
    /// Builds the tokenizer for an encoding (this loads the vocabulary once).
    pub fn new(encoding: Encoding) -> anyhow::Result<Tokenizer> {
        let bpe = match encoding {
            Encoding::O200kBase | Encoding::Cl100kBase => {
                Some(Backend::Fast(Splitter::new(encoding)))
            }
            Encoding::P50kBase | Encoding::R50kBase => Some(Backend::Legacy(legacy(encoding)?)),
            Encoding::Approx => None,
            Encoding::Hf => {
                anyhow::bail!("a Hugging Face tokenizer is made with Tokenizer::from_hf")
            }
        };
        Ok(Tokenizer {
            encoding,
            vocab: encoding as u64,
            bpe,
            images: None,
            format_images: std::sync::atomic::AtomicU8::new(0),
        })
    }

    /// A Hugging Face tokenizer from its `tokenizer.json`, with the
    /// per-message tokens of its chat template family when the vocabulary
    /// tells it (ChatML, Llama 3), else OpenAI's recipe.
    #[cfg(not(feature = "hf"))]
    pub fn from_hf(path: &std::path::Path) -> anyhow::Result<Tokenizer> {
        anyhow::bail!(
            "hf:{}: this ctxclean was built without Hugging Face tokenizers; \
             build it with them: cargo install ctxclean --features hf \
             (or cargo build --release --features hf)",
            path.display()
        )
    }

    /// A Hugging Face tokenizer from its `tokenizer.json`, with the
    /// per-message tokens of its chat template family when the vocabulary
    /// tells it (ChatML, Llama 3), else OpenAI's recipe.
    #[cfg(feature = "hf")]
    pub fn from_hf(path: &std::path::Path) -> anyhow::Result<Tokenizer> {
        let t = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            anyhow::anyhow!("{}: not a Hugging Face tokenizer.json: {e}", path.display())
        })?;
        let template = Template::of(&t);
        /// The next Hugging Face vocabulary's name in the memos, past the
        /// encodings'.
        static LOADED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(16);
        Ok(Tokenizer {
            encoding: Encoding::Hf,
            vocab: LOADED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            bpe: Some(Backend::Hf(std::sync::Arc::new(t), template)),
            images: None,
            format_images: std::sync::atomic::AtomicU8::new(0),
        })
    }

    /// Another tokenizer on the same Hugging Face vocabulary (shared, not
    /// loaded again), for another worker; `None` for other tokenizers.
    pub fn share_hf(&self) -> Option<Tokenizer> {
        match &self.bpe {
            #[cfg(feature = "hf")]
            Some(Backend::Hf(t, template)) => Some(Tokenizer {
                encoding: Encoding::Hf,
                vocab: self.vocab,
                bpe: Some(Backend::Hf(std::sync::Arc::clone(t), *template)),
                images: None,
                format_images: std::sync::atomic::AtomicU8::new(0),
            }),
            _ => None,
        }
    }

    /// The chat template family of a Hugging Face tokenizer.
    pub fn template(&self) -> Option<Template> {
        match &self.bpe {
            #[cfg(feature = "hf")]
            Some(Backend::Hf(_, t)) => Some(*t),
            _ => None,
        }
    }

    /// Tokens every message costs besides its role and content.
    fn message_overhead(&self) -> usize {
        self.template()
            .map_or(MESSAGE_OVERHEAD, Template::per_message)
    }

    /// Charges images by a provider's rule, from their dimensions, instead
    /// of [`IMAGE_TOKENS`] each.
    pub fn with_images(mut self, rule: Option<crate::images::ImageRule>) -> Tokenizer {
        self.images = rule;
        self
    }

    /// Charges images by the rule of `format`'s provider (OpenAI, Anthropic
    /// or Gemini) from now on, unless a model's rule was given
    /// ([`Tokenizer::with_images`]); called per document.
    pub fn set_format(&self, format: crate::format::Format) {
        use crate::format::Format;
        let code = match format {
            Format::Anthropic | Format::ClaudeCode | Format::ClaudeAi | Format::Cline => 2,
            Format::Gemini | Format::AiStudio => 3,
            _ => 1,
        };
        self.format_images
            .store(code, std::sync::atomic::Ordering::Relaxed);
    }

    /// The tokens of one image, and whether they are an estimate.
    pub fn image_tokens(&self, image: &crate::transcript::Image) -> (usize, bool) {
        use crate::images::ImageRule;
        if let Some(rule) = &self.images {
            return rule.tokens(image);
        }
        match self
            .format_images
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            1 => ImageRule::OpenAi {
                base: 85,
                tile: 170,
            }
            .tokens(image),
            2 => ImageRule::Anthropic.tokens(image),
            3 => ImageRule::Gemini.tokens(image),
            _ => (IMAGE_TOKENS, false),
        }
    }

    /// The tokens of a message's images.
    fn images_of(&self, m: &Message) -> usize {
        m.content.images().map(|i| self.image_tokens(i).0).sum()
    }

    /// The encoding this tokenizer counts with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens of a text, encoded as ordinary text. For `approx`, a quarter of
    /// its characters, rounded up.
    pub fn count_text(&self, text: &str) -> usize {
        self.count_text_within(text, usize::MAX)
            .expect("no count exceeds usize::MAX")
    }

    /// Tokens of a text if they are at most `limit`; `None` (found without
    /// counting the rest) when they are more.
    pub fn count_text_within(&self, text: &str, limit: usize) -> Option<usize> {
        if text.is_empty() {
            return Some(0);
        }
        let Some(bpe) = &self.bpe else {
            return Some(text.chars().count().div_ceil(4)).filter(|&n| n <= limit);
        };
        if text.len() < SHORT_MEMO_MIN_BYTES {
            return tiny_count(self.vocab, bpe, text, limit);
        }
        if text.len() < MEMO_MIN_BYTES {
            return short_count(self.vocab, bpe, text, limit);
        }
        let key = memo_key(self.vocab, text);
        let mine = MEMO.with(|m| m.borrow().get(&key).copied());
        if let Some(found) = mine.and_then(|k| k.within(limit)) {
            return found;
        }
        // What another worker counted already.
        let shard = &SHARED[(key.1 as usize) % SHARDS];
        let theirs = shard.lock().ok().and_then(|m| m.get(&key).copied());
        if let Some(k) = theirs {
            if let Some(found) = k.within(limit) {
                remember(key, k);
                return found;
            }
        }
        let found = bpe.count(text, limit);
        let known = Known::after(found, limit, mine.or(theirs));
        remember(key, known);
        if let Ok(mut m) = shard.lock() {
            if m.len() >= MEMO_MAX_ENTRIES / SHARDS {
                m.clear();
            }
            m.insert(key, known);
        }
        found
    }

    /// The longest prefix of `text` (in bytes, on a character boundary) that
    /// has at most `max` tokens.
    pub fn prefix_within(&self, text: &str, max: usize) -> usize {
        if self.count_text(text) <= max {
            return text.len();
        }
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        // The largest k such that text[..bounds[k]] fits; k = 0 always fits.
        let (mut lo, mut hi) = (0, bounds.len());
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if self.count_text(&text[..bounds[mid]]) <= max {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        bounds[lo]
    }

    /// The start (in bytes, on a character boundary) of the longest suffix of
    /// `text` that has at most `max` tokens.
    pub fn suffix_within(&self, text: &str, max: usize) -> usize {
        if self.count_text(text) <= max {
            return 0;
        }
        let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        bounds.push(text.len());
        // The smallest k such that text[bounds[k]..] fits; the last always fits.
        let (mut lo, mut hi) = (0, bounds.len() - 1);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if self.count_text(&text[bounds[mid]..]) <= max {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        bounds[hi]
    }

    /// Tokens of one message (see the module docs for the recipe).
    pub fn count_message(&self, m: &Message) -> usize {
        match &self.bpe {
            Some(_) => self.count_message_bpe(m),
            None => count_message_approx(m) + self.images_of(m),
        }
    }

    fn count_message_bpe(&self, m: &Message) -> usize {
        self.count_message_bpe_within(m, usize::MAX)
            .expect("no count exceeds usize::MAX")
    }

    /// Tokens of one message if they are at most `limit`; `None`, found
    /// without counting the rest, when they are more (`trim` stops counting
    /// once the budget is full).
    pub fn count_message_within(&self, m: &Message, limit: usize) -> Option<usize> {
        match &self.bpe {
            Some(_) => self.count_message_bpe_within(m, limit),
            None => Some(count_message_approx(m) + self.images_of(m)).filter(|&n| n <= limit),
        }
    }

    fn count_message_bpe_within(&self, m: &Message, limit: usize) -> Option<usize> {
        // Its images are charged by the document's provider (set per
        // document): counted each time; the rest is remembered with the
        // message, by vocabulary and per-message overhead.
        let images = self.images_of(m);
        let overhead = self.message_overhead();
        let key = self.vocab | (overhead as u64) << 32;
        if let Some(n) = m.counted(key) {
            return Some(n + images).filter(|&n| n <= limit);
        }
        let mut n = overhead + images;
        let mut add = |text: &str, extra: usize| -> Option<()> {
            n += extra;
            n += self.count_text_within(text, limit.checked_sub(n)?)?;
            (n <= limit).then_some(())
        };
        add(m.role.as_str(), 0)?;
        // Stop at the first text that goes over the limit.
        let mut within = true;
        for_each_text(&m.content, |t| within = within && add(t, 0).is_some());
        if !within {
            return None;
        }
        if let Some(name) = &m.name {
            add(name, 1)?;
        }
        for call in m.calls() {
            add(&call.name, TOOL_CALL_OVERHEAD)?;
            add(&call.arguments, 0)?;
        }
        if m.role.is_result() {
            if let Some(id) = &m.tool_call_id {
                add(id, 0)?;
            }
        }
        m.set_counted(key, n - images);
        Some(n)
    }

    /// Tokens of a conversation: its messages, plus the reply priming for the
    /// tiktoken encodings.
    pub fn count_conversation(&self, c: &Conversation) -> usize {
        let sum: usize = c.messages.iter().map(|m| self.count_message(m)).sum();
        sum + self.reply_priming()
    }

    /// The tokens a conversation costs beyond its messages.
    pub fn reply_priming(&self) -> usize {
        match (self.encoding, self.template()) {
            (Encoding::Approx, _) => 0,
            (_, Some(t)) => t.priming(),
            _ => REPLY_PRIMING,
        }
    }
}

/// LangChain's estimate of a message, its images aside.
fn count_message_approx(m: &Message) -> usize {
    let mut chars = m.role.as_str().chars().count();
    for_each_text(&m.content, |t| chars += t.chars().count());
    if let Some(name) = &m.name {
        chars += name.chars().count();
    }
    if m.role == Role::Tool {
        if let Some(id) = &m.tool_call_id {
            chars += id.chars().count();
        }
    }
    for call in m.calls() {
        chars += call.name.chars().count() + call.arguments.chars().count();
    }
    chars.div_ceil(4) + MESSAGE_OVERHEAD
}

/// Calls `f` with every piece of countable text in the content: the string,
/// each text part, and the text fields of other parts.
pub fn for_each_text<'a>(content: &'a Content, mut f: impl FnMut(&'a str)) {
    match content {
        Content::Absent | Content::Null => {}
        Content::Text(s) => f(s),
        Content::Parts(parts) => {
            for p in parts {
                match &p.kind {
                    PartKind::Text(t) => f(t),
                    PartKind::Image(_) => {}
                    PartKind::Other => walk_other(&p.raw, None, &mut f, &mut |_, _| {}),
                }
            }
        }
    }
}

/// What an opaque payload is: bytes a provider carries but never reads as
/// text, so they cost no tokens (and are reported apart, in bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Opaque {
    /// Encrypted reasoning (Responses and Codex `encrypted_content`).
    EncryptedReasoning,
    /// Signatures of thinking blocks (Anthropic `signature`, Gemini
    /// `thoughtSignature`).
    Signature,
    /// Redacted thinking (Anthropic `redacted_thinking.data`).
    RedactedThinking,
    /// Base64 files, audio and data URLs other than counted images.
    File,
}

impl Opaque {
    /// Every kind, in the order reports list them.
    pub const ALL: [Opaque; 4] = [
        Opaque::EncryptedReasoning,
        Opaque::Signature,
        Opaque::RedactedThinking,
        Opaque::File,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Opaque::EncryptedReasoning => "encrypted_reasoning",
            Opaque::Signature => "signature",
            Opaque::RedactedThinking => "redacted_thinking",
            Opaque::File => "file",
        }
    }
}

/// Calls `f` with the kind and size in bytes of every opaque payload of a
/// message: never counted as tokens (see [`Opaque`]).
pub fn for_each_opaque(m: &Message, mut f: impl FnMut(Opaque, usize)) {
    let mut skip = |_: &str| {};
    if let Content::Parts(parts) = &m.content {
        for p in parts {
            match &p.kind {
                PartKind::Other => walk_other(&p.raw, None, &mut skip, &mut f),
                // Text parts may carry a signature beside their text.
                PartKind::Text(_) => opaque_keys_of(&p.raw, &mut f),
                PartKind::Image(_) => {}
            }
        }
    }
    for c in m.calls() {
        opaque_keys_of(&c.raw, &mut f);
    }
}

/// The opaque payload a key holds, given the `type` of the object holding it.
fn opaque_key(key: &str, ty: Option<&str>) -> Option<Opaque> {
    Some(match key {
        "encrypted_content" => Opaque::EncryptedReasoning,
        // Kimi's `think` parts keep the provider's encrypted reasoning.
        "encrypted" if ty == Some("think") => Opaque::EncryptedReasoning,
        "signature" | "thoughtSignature" | "thought_signature" => Opaque::Signature,
        "data" if ty == Some("redacted_thinking") => Opaque::RedactedThinking,
        // A document's plain-text source is text, not a payload.
        "data" if ty == Some("text") => return None,
        "data" | "file_data" => Opaque::File,
        _ => return None,
    })
}

/// The opaque payloads held directly by an object's known keys.
fn opaque_keys_of(v: &Value, f: &mut impl FnMut(Opaque, usize)) {
    let Value::Object(map) = v else { return };
    let ty = map.get("type").and_then(Value::as_str);
    for (k, v) in map {
        if let (Some(kind), Value::String(s)) = (opaque_key(k, ty), v) {
            f(kind, s.len());
        }
    }
}

/// Walks a part ctxclean has no model for: every string value is text
/// (`on_text`) but the `type` tags, ids, and opaque payloads (`on_opaque`):
/// encrypted reasoning, signatures, redacted thinking, base64 data and data
/// URLs, which a model never reads as text.
fn walk_other<'a>(
    v: &'a Value,
    ty: Option<&str>,
    on_text: &mut impl FnMut(&'a str),
    on_opaque: &mut impl FnMut(Opaque, usize),
) {
    match v {
        Value::String(s) if is_binary_payload(s) => on_opaque(Opaque::File, s.len()),
        Value::String(s) => on_text(s),
        Value::Array(items) => items
            .iter()
            .for_each(|i| walk_other(i, ty, on_text, on_opaque)),
        Value::Object(map) => {
            let ty = map.get("type").and_then(Value::as_str).or(ty);
            for (k, v) in map {
                if matches!(k.as_str(), "type" | "id" | "content_type") {
                    continue;
                }
                match (opaque_key(k, ty), v) {
                    (Some(kind), Value::String(s)) => on_opaque(kind, s.len()),
                    (Some(_), Value::Null) => {}
                    _ => walk_other(v, ty, on_text, on_opaque),
                }
            }
        }
        _ => {}
    }
}

/// Whether a string is a data URL or a long run of base64 (standard or
/// URL-safe, as Fernet tokens are).
pub fn is_binary_payload(s: &str) -> bool {
    s.starts_with("data:")
        || (s.len() >= 256
            && !s.contains(' ')
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r')
            }))
}

#[cfg(test)]
mod ascii_split_tests {
    use super::*;
    use proptest::prelude::*;

    fn both(text: &str, e: Encoding) -> (Vec<String>, Vec<String>) {
        static O200K: std::sync::OnceLock<Splitter> = std::sync::OnceLock::new();
        static CL100K: std::sync::OnceLock<Splitter> = std::sync::OnceLock::new();
        let cell = if e == Encoding::Cl100kBase {
            &CL100K
        } else {
            &O200K
        };
        let sp = cell.get_or_init(|| Splitter::new(e));
        let fast: Vec<String> = sp.split(text).map(str::to_string).collect();
        let slow: Vec<String> = sp.split_regex(text).map(str::to_string).collect();
        (fast, slow)
    }

    #[test]
    fn known_pieces() {
        for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in [
                "Hello world, don't STOP'LL now!\n\n  2024-03-01 \t x\r\n",
                "  leading and trailing  ",
                "{\"rows\": [{\"id\": 1}]} // a/b/c\n",
                "'s 'S 'll 're HTTPServer isOK x'd",
                "\x0b\x0c\x01\x7f end",
                "x\u{b2}3 \u{663}4 a1b22c333d4444 \u{e9}5 e\u{301}6 _7 '8 \t9 \n0",
                "12 3\u{663} 4\u{b2} 5\u{e9} 6\u{301} 7\n8\t9'0_1 22a333-4444.",
                "",
                " ",
                "\n",
            ] {
                let (fast, slow) = both(text, e);
                assert_eq!(fast, slow, "{e:?} {text:?}");
            }
        }
    }

    #[test]
    fn one_thread_counting_with_both_vocabularies_counts_each_right() {
        // The memo of short pieces is per vocabulary: a piece counted with
        // o200k_base first is counted again with cl100k_base.
        let text = "Hello world, it's 2024 and I'm here: the_quick_brown_fox!\n";
        let alone = |e: Encoding| {
            std::thread::spawn(move || Tokenizer::new(e).unwrap().count_text(text))
                .join()
                .unwrap()
        };
        let (o200k, cl100k) = (alone(Encoding::O200kBase), alone(Encoding::Cl100kBase));
        let a = Tokenizer::new(Encoding::O200kBase).unwrap();
        let b = Tokenizer::new(Encoding::Cl100kBase).unwrap();
        assert_eq!(a.count_text(text), o200k);
        assert_eq!(b.count_text(text), cl100k);
        assert_eq!(a.count_text(text), o200k);
        assert_ne!(o200k, cl100k, "a text the vocabularies count differently");
    }

    #[test]
    fn known_mixed_pieces() {
        for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in [
                "data 数据 query 数据数据 the 😀 x 👨\u{200D}👩\u{200D}👧 👍🏽 ✅ end",
                "数据 at the start, and at the end 数据",
                "café naïve Ελληνικά's don\u{2019}t 数据query query数据 e\u{301} x",
                "a\u{3000}b \u{3000}c \u{a0} d\u{a0} e ❤\u{FE0F} f ①23 ⑩ ٣٤٥٦ 12345",
                "line\n数据\n\n 数据 .\n 😀/\n  😀  数据  ",
                "数据",
                " 数据",
                "😀 ",
            ] {
                let (fast, slow) = both(text, e);
                assert_eq!(fast, slow, "{e:?} {text:?}");
            }
        }
    }

    /// What [`one_piece`] takes whole is of the classes it says.
    #[test]
    fn ideographs_are_letters_and_pictographs_are_symbols() {
        let class = |pattern: &str| regex_automata::meta::Regex::new(pattern).unwrap();
        let (letter, symbol) = (class(r"^\p{Lo}$"), class(r"^[^\s\p{L}\p{N}\p{M}]$"));
        let mut buf = [0u8; 4];
        for c in ('\u{4E00}'..='\u{9FFC}').filter(|&c| is_ideograph(c)) {
            assert!(letter.is_match(c.encode_utf8(&mut buf).as_bytes()), "{c:?}");
        }
        let pictographs = ('\u{200D}'..='\u{200D}')
            .chain('\u{2600}'..='\u{2775}')
            .chain('\u{1F300}'..='\u{1FAFF}');
        for c in pictographs {
            assert!(is_pictograph(c));
            assert!(symbol.is_match(c.encode_utf8(&mut buf).as_bytes()), "{c:?}");
        }
        assert!(!is_pictograph('\u{2776}') && !is_ideograph('\u{9FFD}'));
    }

    #[test]
    fn spaces_and_digits_are_found_eight_bytes_at_a_time_as_one_by_one() {
        let slow = |b: &[u8], p: usize| {
            b[p..]
                .iter()
                .position(|&c| c == b' ' || c.is_ascii_digit())
                .map(|k| p + k)
        };
        let text = b"ab cdefghij  klmnopqrstuvwxyz/0123456789:; x\x80 \xa0 !\xb0\xb9\x30";
        for p in 0..=text.len() {
            assert_eq!(find_space_or_digit(text, p), slow(text, p), "{p}");
        }
        assert_eq!(find_space_or_digit(b"", 0), None);
        // Every byte value at every place of a word, among bytes that are
        // neither, and among bytes that are: the lowest found is exact.
        for fill in [b'a', 0xFF, 0x2F, 0x3A, 0x1F, 0x21, 0xB0, b'7', b' '] {
            for at in 0..8 {
                for v in 0..=255u8 {
                    let mut word = [fill; 8];
                    word[at] = v;
                    assert_eq!(
                        find_space_or_digit(&word, 0),
                        slow(&word, 0),
                        "{fill} {at} {v}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_piece_packed_from_a_wide_read_is_packed_as_alone() {
        let text = b"0123456789abcdefghijklmnopqrstuv";
        for at in 0..text.len() {
            for len in 2..16.min(text.len() - at + 1) {
                assert_eq!(
                    pack_at(text, at, len),
                    pack(&text[at..at + len]),
                    "{at} {len}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Text that mixes ASCII with other scripts is cut by hand and by
        /// the regex in turns, as the regex cuts it whole.
        #[test]
        fn mixed_pieces_equal_the_regex(text in "([a-zA-Z']{1,6}|[0-9]{1,5}|[ \t\n\r]{1,3}|[.,/!(\"]{1,2}|[数据查询😀🚀👍🏽✅①٣\u{200D}\u{FE0F}\u{301}\u{A0}\u{3000}\u{2019}éÉαΩ]{1,4}){0,30}") {
            for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let (fast, slow) = both(&text, e);
                prop_assert_eq!(fast, slow, "{:?} {:?}", e, text);
            }
        }

        #[test]
        fn ascii_pieces_equal_the_regex(text in r#"[aZbY09 \t\r\n\x0b\x0c'sStTrReEvVmMlLdD./\\\-"{}:,!?_\x01\x7f]{0,40}"#) {
            for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let (fast, slow) = both(&text, e);
                prop_assert_eq!(fast, slow, "{:?} {:?}", e, text);
            }
        }

        /// Digits beside letters, marks, other digits and whitespace, ASCII
        /// and not: a segment is cut before an ASCII digit.
        #[test]
        fn digits_among_any_letters_are_cut_as_the_regex_cuts_them(text in "[a0-9 \t\n'_\u{b2}\u{663}\u{e9}\u{301}\u{3000}\u{4e00}]{0,40}") {
            for (fast, slow) in pieces_both_ways(&text) {
                prop_assert_eq!(&fast, &slow);
                prop_assert_eq!(fast.concat(), text.as_str());
            }
        }

        /// Text of every class the patterns tell apart, cut by hand
        /// (`tokens/unicode.rs`) as the regex cuts it: letters upper,
        /// lower, title, modifier and other, marks after anything, digits
        /// and numbers of other scripts, Unicode spaces and line breaks,
        /// the long s of contractions, characters past U+FFFF.
        #[test]
        fn any_script_is_cut_as_the_regex_cuts_it(text in "[aZ1 \t\r\n'sSlLdD/.\u{a0}\u{b2}\u{c9}\u{e9}\u{17f}\u{1c5}\u{2b0}\u{301}\u{345}\u{5d0}\u{663}\u{903}\u{2028}\u{212a}\u{216b}\u{3000}\u{3002}\u{4e00}\u{ab}\u{bb}\u{1d400}\u{1d167}\u{1d7d8}\u{10400}\u{1f600}\u{e000}\u{378}]{0,40}") {
            for (fast, slow) in pieces_both_ways(&text) {
                prop_assert_eq!(&fast, &slow, "{:?}", text);
                prop_assert_eq!(fast.concat(), text.as_str());
            }
        }

        /// Any characters at all.
        #[test]
        fn any_characters_are_cut_as_the_regex_cuts_them(chars in proptest::collection::vec(any::<char>(), 0..30)) {
            let text: String = chars.into_iter().collect();
            for (fast, slow) in pieces_both_ways(&text) {
                prop_assert_eq!(&fast, &slow, "{:?}", text);
            }
        }

        /// What the fuzz target checks (`fuzzing::pre_tokenizer`), on any
        /// ASCII.
        #[test]
        fn any_ascii_is_cut_as_the_regex_cuts_it(data in proptest::collection::vec(0u8..128, 0..300)) {
            let text = std::str::from_utf8(&data).unwrap();
            for (fast, slow) in pieces_both_ways(text) {
                prop_assert_eq!(&fast, &slow);
                prop_assert_eq!(fast.concat(), text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{MessageData, Part, ToolCall};

    /// Copies share what a message says until one changes it; what was
    /// derived from it (its digest, its tokens by each tokenizer) is
    /// remembered with it and forgotten by the copy that changed.
    #[test]
    fn a_copy_changed_is_digested_and_counted_anew() {
        let (o200k, cl100k) = (
            Tokenizer::new(Encoding::O200kBase).unwrap(),
            Tokenizer::new(Encoding::Cl100kBase).unwrap(),
        );
        let m = Message::new(Role::Tool, "short").with_call_id("c1");
        let (digest, tokens) = (m.typed_digest(), o200k.count_message(&m));
        let mut copy = m.clone();
        assert!(copy.says_as(&m) && copy == m);
        assert_eq!(cl100k.count_message(&copy), cl100k.count_message(&m));
        copy.content = crate::transcript::Content::Text(
            "a much longer text than before, said twice".repeat(2),
        );
        assert!(!copy.says_as(&m) && copy != m);
        let fresh = Message::new(Role::Tool, copy.content.text()).with_call_id("c1");
        assert_eq!(copy.typed_digest(), fresh.typed_digest());
        assert_ne!(copy.typed_digest(), digest);
        for tok in [&o200k, &cl100k] {
            assert_eq!(tok.count_message(&copy), tok.count_message(&fresh));
        }
        assert!(o200k.count_message(&copy) > tokens);
        // The original still says what it said.
        assert_eq!(
            (m.typed_digest(), o200k.count_message(&m)),
            (digest, tokens)
        );
        assert_eq!(m.content.text(), "short");
        // A message no copy shares forgets too, changed in place.
        let mut alone = Message::new(Role::User, "one");
        let before = (alone.typed_digest(), o200k.count_message(&alone));
        alone.content = crate::transcript::Content::Text("one, two and three".into());
        let fresh = Message::new(Role::User, "one, two and three");
        assert_ne!((alone.typed_digest(), o200k.count_message(&alone)), before);
        assert_eq!(alone.typed_digest(), fresh.typed_digest());
        assert_eq!(o200k.count_message(&alone), o200k.count_message(&fresh));
        // Where a copy sits is its own: no copy of what it says.
        let mut placed = m.clone();
        placed.fields = crate::transcript::Fields::from(serde_json::Map::from_iter([(
            "k".to_string(),
            Value::from(1),
        )]));
        assert!(placed.says_as(&m) && placed != m);
        let data = placed.into_data();
        assert_eq!(Message::from(data).extra("k"), Some(&Value::from(1)));
    }

    fn o200k() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase).unwrap()
    }

    #[test]
    fn a_long_run_of_digits_is_cut_three_at_a_time_without_reading_it_again() {
        // Read to its end for each of its pieces, 300 KB of digits took 8 s
        // in a release build; these 3 MB, a day in this debug one.
        let text = "7".repeat(3_000_000);
        for e in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let t = Tokenizer::new(e).unwrap();
            assert_eq!(t.count_text(&text), 1_000_000, "{e:?}");
            assert_eq!(t.count_text(&format!("{text}1 x")), 1_000_002, "{e:?}");
        }
    }

    #[test]
    fn short_texts_remembered_count_as_counted_from_scratch() {
        // Texts of 1 to 15 bytes (the memo of tiny texts) and of 16 to 63
        // (the memo of short texts), under two vocabularies in turn in one
        // thread, within limits and not: each answer is the one a count
        // from scratch gives.
        std::thread::spawn(|| {
            let tokenizers = [
                Tokenizer::new(Encoding::O200kBase).unwrap(),
                Tokenizer::new(Encoding::Cl100kBase).unwrap(),
            ];
            let texts = [
                "call_00_FR3SG89l8ms1ysgYy6lMty91",
                "toolu_01XyZ9aBcDeFgHiJkLmNoPqR",
                "<returncode>0</returncode>\n<output>\n</output>",
                "    naïve café — déjà vu, 日本語のテキスト",
                "0123456789abcdef",
                "assistant",
                "tool",
                "call_5",
                "日本語の",
                "  déjà vu 🙂",
                "x",
                "0123456789abcde",
            ];
            let mut differ = false;
            for round in 0..3 {
                for text in texts {
                    assert!((1..MEMO_MIN_BYTES).contains(&text.len()));
                    let exact = tokenizers
                        .each_ref()
                        .map(|t| t.bpe.as_ref().unwrap().count(text, usize::MAX).unwrap());
                    differ |= exact[0] != exact[1];
                    for (t, n) in tokenizers.iter().zip(exact) {
                        let limits = [round, n - 1, n, n + 1, usize::MAX];
                        for limit in limits {
                            let want = Some(n).filter(|&n| n <= limit);
                            assert_eq!(
                                t.count_text_within(text, limit),
                                want,
                                "{text:?} within {limit}"
                            );
                        }
                    }
                }
            }
            assert!(differ, "the two vocabularies count some text apart");
            // More tiny texts than the memo has slots, twice over: each
            // taken from a slot is the text that is there.
            for _ in 0..2 {
                for i in 0..3000 {
                    let text = format!("{}x{i} ", ["", " ", "日"][i % 3]);
                    for t in &tokenizers {
                        let exact = t.bpe.as_ref().unwrap().count(&text, usize::MAX);
                        assert_eq!(t.count_text_within(&text, usize::MAX), exact, "{text:?}");
                    }
                }
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_text_counted_within_a_limit_is_remembered_as_over_it() {
        // A text nothing else counts: nothing is remembered of it yet. Each
        // answer is the one a count from scratch (no memo) gives.
        std::thread::spawn(|| {
            let t = Tokenizer::new(Encoding::O200kBase).unwrap();
            let text = "a sentence only this test counts, said again. ".repeat(40);
            let bpe = t.bpe.as_ref().unwrap();
            let exact = bpe.count(&text, usize::MAX).unwrap();
            assert!(exact > 300);
            for (limit, want) in [
                (100, None),
                (50, None),
                (100, None),
                (exact - 1, None),
                (exact, Some(exact)),
                (10, None),
                (exact + 5, Some(exact)),
            ] {
                assert_eq!(t.count_text_within(&text, limit), want, "within {limit}");
            }
            assert_eq!(
                Known::after(None, 30, Some(Known::Over(80))),
                Known::Over(80)
            );
            assert_eq!(Known::Over(80).within(81), None);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn plain_message_follows_openai_recipe() {
        let t = o200k();
        let m = Message::new(Role::User, "Hello, world!");
        // 3 framing + "user" (1) + "Hello, world!" (4)
        assert_eq!(t.count_message(&m), 3 + 1 + 4);
        let c = Conversation::new(vec![m]);
        assert_eq!(t.count_conversation(&c), 3 + 1 + 4 + 3);
    }

    #[test]
    fn special_tokens_count_as_text() {
        let t = o200k();
        assert!(t.count_text("<|endoftext|>") > 1);
    }

    #[test]
    fn name_adds_one_more_token() {
        let t = o200k();
        let mut m = Message::new(Role::User, "hi");
        let without = t.count_message(&m);
        m.name = Some("alice".into());
        assert_eq!(t.count_message(&m), without + t.count_text("alice") + 1);
    }

    #[test]
    fn images_cost_a_fixed_amount_never_their_base64() {
        let t = o200k();
        let big = format!("data:image/png;base64,{}", "A".repeat(100_000));
        let raw = serde_json::json!({"type": "image_url", "image_url": {"url": big}});
        let m = Message::from(MessageData {
            content: Content::Parts(vec![
                Part::text_part("look"),
                Part {
                    kind: PartKind::Image(crate::transcript::Image::from_url(&big)),
                    raw: raw.into(),
                    slot: None,
                },
            ]),
            ..MessageData::new(Role::User, "")
        });
        assert_eq!(t.count_message(&m), 3 + 1 + 1 + IMAGE_TOKENS);
    }

    #[test]
    fn tool_calls_and_results_are_counted() {
        let t = o200k();
        let mut call = Message::new(Role::Assistant, "");
        call.content = Content::Null;
        call.tool_calls = Some(vec![ToolCall {
            id: Some("call_1".into()),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
            raw: Value::Null.into(),
            slot: None,
        }]);
        let expected = 3
            + t.count_text("assistant")
            + 3
            + t.count_text("get_weather")
            + t.count_text(r#"{"city":"Paris"}"#);
        assert_eq!(t.count_message(&call), expected);
        let mut result = Message::new(Role::Tool, "18C");
        result.tool_call_id = Some("call_1".into());
        assert_eq!(
            t.count_message(&result),
            3 + t.count_text("tool") + t.count_text("18C") + t.count_text("call_1")
        );
    }

    #[test]
    fn approx_matches_langchain_example() {
        // LangChain: SystemMessage("sys prompt " * 10) -> 32.
        let t = Tokenizer::new(Encoding::Approx).unwrap();
        let m = Message::new(Role::System, "sys prompt ".repeat(10));
        assert_eq!(t.count_message(&m), 32);
        assert_eq!(t.count_conversation(&Conversation::new(vec![m])), 32);
    }

    #[test]
    fn approx_counts_unicode_scalars() {
        let t = Tokenizer::new(Encoding::Approx).unwrap();
        // "user" (4) + "héllo" (5) = 9 chars -> ceil(9/4) + 3 = 6
        assert_eq!(t.count_message(&Message::new(Role::User, "héllo")), 6);
    }

    #[test]
    fn binary_payloads_are_recognised() {
        assert!(is_binary_payload("data:audio/wav;base64,AAAA"));
        assert!(is_binary_payload(&"QUJD".repeat(100)));
        assert!(is_binary_payload(&format!(
            "gAAAAAB{}",
            "pvRw-4EHb_LJ91".repeat(30)
        )));
        assert!(!is_binary_payload("a short sentence"));
    }
}

/// Two Hugging Face vocabularies in one process (the Python package, one
/// tokenizer per model) count each with its own: the memo of texts does not
/// serve one's counts to the other.
#[cfg(all(test, feature = "hf"))]
mod hf_tests {
    use super::*;

    #[test]
    fn two_hugging_face_vocabularies_keep_their_own_counts() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/tokens/hf-chatml.json");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        // The same vocabulary without its merges: every byte a token.
        json["model"]["merges"] = serde_json::json!([]);
        let dir = std::env::temp_dir().join(format!("ctxclean-hf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bare = dir.join("tokenizer.json");
        std::fs::write(&bare, serde_json::to_vec(&json).unwrap()).unwrap();
        let (merged, unmerged) = (
            Tokenizer::from_hf(&path).unwrap(),
            Tokenizer::from_hf(&bare).unwrap(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        // Long texts (the memo of long texts) and short ones.
        for text in [
            "the tokenizer counts these words the same way every time, said again and again",
            "call_00_FR3SG89l8ms1ysgYy6lMty91",
        ] {
            let a = merged.count_text(text);
            let b = unmerged.count_text(text);
            assert!(a < b, "{text:?}: merged {a}, unmerged {b}");
            assert_eq!(merged.count_text(text), a);
            // A share of a vocabulary is the same vocabulary.
            assert_eq!(unmerged.share_hf().unwrap().count_text(text), b);
        }
    }
}

#[cfg(test)]
mod vocab_tests {
    use super::*;
    use proptest::prelude::*;

    /// Counts through the compile-time tables against `tiktoken-rs`, the
    /// oracle (its vocabulary, its regex pre-tokenizer, its own merge).
    fn agree(text: &str) {
        for (e, oracle) in [
            (
                Encoding::O200kBase,
                tiktoken_rs::o200k_base_singleton() as &tiktoken_rs::CoreBPE,
            ),
            (Encoding::Cl100kBase, tiktoken_rs::cl100k_base_singleton()),
        ] {
            let ours = Tokenizer::new(e).unwrap();
            assert_eq!(
                ours.count_text(text),
                oracle.encode_ordinary(text).len(),
                "{e:?} {text:?}"
            );
        }
    }

    #[test]
    fn known_texts() {
        for text in [
            "Hello world, don't STOP'LL now!\n\n  2024-03-01 \t x\r\n",
            "supercalifragilisticexpialidocious antidisestablishmentarianism",
            "日本語のテキストと中文文本，还有한국어 텍스트",
            "👨‍👩‍👧‍👦 family 🏳️‍🌈 flag e\u{301} combining ﷽",
            "αβγ Ελληνικά кириллица עברית العربية हिन्दी ไทย",
            "fn main() { let x: Vec<u8> = vec![0xff; 1024]; }",
            &"a".repeat(300),
            &"ab".repeat(200),
            &"1234567890".repeat(40),
            &" ".repeat(500),
            &"😀".repeat(100),
            // Pieces over 256 bytes: merged through the heap, or as runs
            // of one byte (`vocab::runs`).
            &"a".repeat(20_000),
            &"=".repeat(3000),
            &format!("{}{}", "[".repeat(700), "]".repeat(700)),
            &format!("{}b{}", "A".repeat(4100), "A".repeat(90)),
            &format!(" {}{}", "-".repeat(1000), "=".repeat(999)),
            &"*".repeat(777),
            &"thequickbrownfox".repeat(300),
            &"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo".repeat(40),
            &"中文文本".repeat(200),
            &format!(" {}", "xyzzy".repeat(500)),
        ] {
            agree(text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn any_text(text in "\\PC{0,200}") {
            agree(&text);
        }

        #[test]
        fn long_pieces(text in "[a-zA-Z]{257,3000}|[0-9a-f]{300,900}|[\\p{Han}]{100,600}") {
            agree(&text);
        }

        /// Base64: short mixed-case pieces, merged again each time (see
        /// `SHORT_MERGE`), over the table's pairs, filter and slots.
        #[test]
        fn base64(text in "[A-Za-z0-9+/]{1,400}={0,2}") {
            agree(&text);
        }

        #[test]
        fn words_and_runs(text in "([a-zA-Z]{1,30}|[0-9]{1,12}|[ \\t\\n]{1,8}|[.,;:'\"!?(){}]{1,4}|[à-ÿ]{1,6}|[一-龥]{1,5}){1,40}") {
            agree(&text);
        }
    }
}

#[cfg(test)]
mod legacy_tests {
    use super::*;
    use proptest::prelude::*;

    /// `p50k_base` and `r50k_base` through `bpe` against `tiktoken-rs`, the
    /// oracle (its regex with the look-ahead, its own merge).
    fn agree(text: &str) {
        for (e, oracle) in [
            (
                Encoding::P50kBase,
                tiktoken_rs::p50k_base_singleton() as &tiktoken_rs::CoreBPE,
            ),
            (Encoding::R50kBase, tiktoken_rs::r50k_base_singleton()),
        ] {
            let ours = Tokenizer::new(e).unwrap();
            assert_eq!(
                ours.count_text(text),
                oracle.encode_ordinary(text).len(),
                "{e:?} {text:?}"
            );
        }
    }

    #[test]
    fn known_texts() {
        for text in [
            "",
            "hello world",
            "  leading and trailing  ",
            "tabs\t\tand\n\nnewlines\r\n \n",
            "I'm sure they'll've done it's",
            "IT'S LOUD'S",
            "numbers 123456789 3.14159 -42",
            "emoji 😀🎉 and 漢字 and кириллица",
            "<|endoftext|> is text here",
            "   x",
            "\n x",
            "x   ",
            "fn main() {\n    println!(\"hi\");\n}\n",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            " \u{a0}\u{2003}x",
            // Pieces over 256 bytes: merged through the heap.
            &"a".repeat(3000),
            &"=".repeat(2000),
            &format!("{}{}", "[".repeat(600), "]".repeat(600)),
            &format!(" {}", "thequickbrownfox".repeat(100)),
            &"中文文本".repeat(150),
            &" ".repeat(700),
        ] {
            agree(text);
        }
        // Real text: every fixture transcript, in pieces.
        let mut files =
            vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures")];
        let mut seen = 0;
        while let Some(p) = files.pop() {
            if p.is_dir() {
                files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let mut rest = text.as_str();
            while !rest.is_empty() && seen < 4 << 20 {
                let mut end = rest.len().min(4000);
                while !rest.is_char_boundary(end) {
                    end -= 1;
                }
                agree(&rest[..end]);
                seen += end;
                rest = &rest[end..];
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn any_text(text in "[ a-zA-Z0-9'\\n\\t.,!?é漢😀\\u{a0}-]{0,200}") {
            agree(&text);
        }
    }
}
