//! A provider's prompt cache, as its documentation describes it: what of a
//! request it reads, what it writes, what it bills as plain input. One rule
//! for every meter: `replay` prices each call of every recipe with it,
//! `serve` prices each request *as it came* with it (what `bill` shows as
//! "as they came"), and `bench/upstream.py`, a loopback that bills like a
//! provider, implements the same documented rules on its own, in Python,
//! with the sizes this module gives (`ctxclean cache-units`): the tests
//! check one against the other.
//!
//! A request is a row of *units*, in the order a cache sees them: its tool
//! definitions, its system prompt, then each item of its list of messages
//! (a message, or a Responses item), and last the tokens that prime the
//! reply (never cached). A unit's size is ctxclean's count of what it
//! says, so that the sizes of a body add up to the count `stats` gives it
//! (its tool definitions included), and its identity is its JSON without
//! `cache_control` markers: a marker says where a prefix is cached, not
//! what it holds, so an agent that moves its marker to the newest message
//! on every call still reads the prefix it wrote.
//!
//! - **Anthropic** (`Rule::Marked`): only a prefix that ends at a marker
//!   is written, when it is at least the model's minimum (1,024 tokens;
//!   2,048 for Claude 3 and 3.5 Haiku; 4,096 for Opus 4.5 and later and
//!   Haiku 4.5), for 5 minutes (an hour with `ttl: "1h"`), renewed when
//!   read. A read is the longest prefix still cached that ends at a marker
//!   or up to 20 units before one. Billed: the read, the write (from the
//!   read to the last marker), and the rest as input. Anthropic looks back
//!   20 *blocks*; units are messages, which is where agents put their
//!   markers (a message's last block).
//! - **Automatic** (OpenAI, and every other provider here): every prefix
//!   of 1,024 tokens or more that ends at a unit is kept for 5 minutes; a
//!   request reads the longest kept, counted in 128-token steps past 1,024.
//!   No write is billed.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::answer::Billed;
use super::unmarked::{self, marker, marker_ttl, seed, FIVE_MINUTES};
use crate::format::Format;
use crate::memo::{ByText, FastMap};
use crate::tokens::Tokenizer;

/// How far before a marker a read may end, in units.
const LOOKBACK: usize = 20;

/// What a request's units are, for the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The tool definitions (`tools`, or `functions`).
    Tools,
    /// The system prompt held beside the list (`system`, `instructions`,
    /// `systemInstruction`).
    System,
    /// Item `n` of the list of messages.
    Item(usize),
}

/// A request as a prompt cache sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Units {
    parts: Vec<Part>,
    /// The key of the prefix that ends with each unit (the model's name,
    /// then each unit's identity, chained).
    keys: Vec<u64>,
    /// The tokens up to the end of each unit.
    ends: Vec<u64>,
    /// Each unit's marker: its lifetime in seconds, when it has one.
    marks: Vec<Option<f64>>,
    /// Every token the request bills as input: the units and the reply's
    /// priming.
    total: u64,
}

/// Units' sizes already counted, by identity: a conversation's history is
/// not counted again on every request. Bounded: past its capacity it
/// starts again empty. Shared between threads: a unit is counted with no
/// lock held, so a large new body counted for one request holds up no
/// other.
pub struct Sizes {
    known: std::sync::RwLock<FastMap<u64, u64>>,
    capacity: usize,
    /// Units' identities by their exact text (see [`Sizes::with_texts`]).
    texts: Option<std::sync::Mutex<ByText<Identity>>>,
}

/// A unit's identity and the longest lifetime a marker in it asks for.
type Identity = (u64, Option<f64>);

impl Sizes {
    /// A memory of at most `capacity` sizes.
    pub fn new(capacity: usize) -> Sizes {
        Sizes {
            known: std::sync::RwLock::new(FastMap::default()),
            capacity: capacity.max(1),
            texts: None,
        }
    }

    /// The same, remembering also the identity of each unit's text walked,
    /// up to about `max_bytes` of texts (past it, it starts again): a text
    /// met again is looked up, not walked (`replay`, where each call's
    /// units are mostly the call before's, in every recipe's body).
    pub fn with_texts(mut self, max_bytes: usize) -> Sizes {
        self.texts = Some(std::sync::Mutex::new(ByText::new(max_bytes)));
        self
    }

    /// `v`'s identity and marker: from the texts walked before, when it is
    /// one and they are remembered.
    fn identity(&self, v: &Json) -> Option<Identity> {
        let (Some(texts), Json::Text(raw)) = (&self.texts, v) else {
            return v.identity();
        };
        let lock = || texts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = lock().get_mut(0, raw.as_bytes()) {
            return Some(*id);
        }
        // Walked with no lock held, as a unit is counted.
        let id = v.identity()?;
        lock().insert(0, raw.as_bytes(), id, 64);
        Some(id)
    }

    fn get_or(&self, key: u64, count: impl FnOnce() -> u64) -> u64 {
        let known = self
            .known
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some(n) = known {
            return n;
        }
        let n = count();
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        if known.len() >= self.capacity {
            known.clear();
        }
        known.insert(key, n);
        n
    }
}

/// The keys of a body's list and system prompt, by format.
fn keys_of(format: Format) -> (&'static str, &'static [&'static str]) {
    let system: &'static [&'static str] = match format {
        Format::Responses => &["instructions"],
        Format::Gemini => &["systemInstruction", "system_instruction"],
        _ => &["system"],
    };
    (format.list_key(), system)
}

impl Units {
    /// The units of request `body` of `format`; `None` for a body that is
    /// not a JSON object. Walked as text: no value is built for a unit
    /// whose size is known, only for one counted.
    pub fn of(format: Format, body: &[u8], tok: &Tokenizer, sizes: &Sizes) -> Option<Units> {
        let text = std::str::from_utf8(body).ok()?;
        let top: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
        let get = |k: &str| top.get(k).map(|raw| Json::Text(raw.get()));
        let list = top
            .get(format.list_key())
            .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok());
        let items: Vec<Json> = list
            .into_iter()
            .flatten()
            .map(|raw| Json::Text(raw.get()))
            .collect();
        Units::of_parts(format, &get, &items, tok, sizes)
    }

    /// [`Units::of`] on a body known to be valid JSON (one `serde_json`
    /// wrote, or a reader read whole): split at the speed of finding its
    /// quotes, not checked byte by byte again. `None` as [`Units::of`]
    /// answers it.
    pub fn of_valid(format: Format, body: &[u8], tok: &Tokenizer, sizes: &Sizes) -> Option<Units> {
        debug_assert!(serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok());
        let text = std::str::from_utf8(body).ok()?;
        let (top, list) = crate::format::split::entries_and_list(text, format.list_key())?;
        // A key said twice is the last one's, as `serde_json` reads it.
        let get = |k: &str| {
            let found = top.iter().rev().find(|(key, _)| key == k);
            found.map(|(_, raw)| Json::Text(raw))
        };
        let items: Vec<Json> = list.into_iter().flatten().map(Json::Text).collect();
        Units::of_parts(format, &get, &items, tok, sizes)
    }

    /// [`Units::of`] on a body parsed as the holds list it: its keys but
    /// its list of messages (`body`), and that list (`items`).
    pub(crate) fn of_listed<V: std::borrow::Borrow<Value>>(
        format: Format,
        (body, items): (&Map<String, Value>, &[V]),
        tok: &Tokenizer,
        sizes: &Sizes,
    ) -> Option<Units> {
        let get = |k: &str| body.get(k).map(Json::Value);
        let items: Vec<Json> = items.iter().map(|v| Json::Value(v.borrow())).collect();
        Units::of_parts(format, &get, &items, tok, sizes)
    }

    /// [`Units::of`] on a body already parsed.
    pub fn of_value(
        format: Format,
        body: &Map<String, Value>,
        tok: &Tokenizer,
        sizes: &Sizes,
    ) -> Units {
        // Its list is looked for under no other key than its own.
        let items = body.get(format.list_key()).and_then(Value::as_array);
        let items = items.map_or(&[][..], Vec::as_slice);
        Units::of_listed(format, (body, items), tok, sizes)
            .expect("a parsed value walks, and its model is read")
    }

    /// The units of a body whose keys `get` gives and whose list of
    /// messages is `items`; `None` when a unit's text is not JSON.
    fn of_parts<'a>(
        format: Format,
        get: &dyn Fn(&str) -> Option<Json<'a>>,
        items: &[Json<'a>],
        tok: &Tokenizer,
        sizes: &Sizes,
    ) -> Option<Units> {
        let (list, system_keys) = keys_of(format);
        let mut units = Units {
            parts: Vec::new(),
            keys: Vec::new(),
            ends: Vec::new(),
            marks: Vec::new(),
            total: 0,
        };
        let model = get("model").and_then(|m| m.string()).unwrap_or_default();
        let mut chain = identity_str(&model);
        let mut add = |units: &mut Units, part: Part, v: &Json, count: &dyn Fn(&Value) -> u64| {
            let (id, mark) = sizes.identity(v)?;
            // A unit's tokens are its format's (how it reads, what an image
            // costs): one memory serves the proxy's every format.
            let salt = part_salt(&part) ^ (format as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
            let n = sizes.get_or(id ^ salt, || count(&v.value()));
            chain = chain.rotate_left(5) ^ id;
            units.total += n;
            units.parts.push(part);
            units.keys.push(chain);
            units.ends.push(units.total);
            units.marks.push(mark);
            Some(())
        };
        let present = |k: &str| get(k).filter(|v| !v.is_null());
        for key in ["tools", "functions"] {
            if let Some(tools) = present(key) {
                add(&mut units, Part::Tools, &tools, &|v| {
                    tok.count_text(&v.to_string()) as u64
                })?;
            }
        }
        for key in system_keys {
            if let Some(system) = present(key) {
                add(&mut units, Part::System, &system, &|v| {
                    let alone = Value::Object(Map::from_iter([
                        (key.to_string(), v.clone()),
                        (list.to_string(), Value::Array(Vec::new())),
                    ]));
                    messages_of(format, &alone, tok)
                })?;
            }
        }
        for (n, item) in items.iter().enumerate() {
            add(&mut units, Part::Item(n), item, &|v| {
                let alone = Value::Object(Map::from_iter([(
                    list.to_string(),
                    Value::Array(vec![v.clone()]),
                )]));
                messages_of(format, &alone, tok)
            })?;
        }
        // Anthropic's top-level `cache_control` marks the last unit.
        let top = get("cache_control").map(|m| marker_ttl(Some(&m.value())));
        if let (Some(ttl), Some(last)) = (top.flatten(), units.marks.last_mut()) {
            *last = Some(last.map_or(ttl, |t| t.max(ttl)));
        }
        units.total += tok.reply_priming() as u64;
        Some(units)
    }

    /// Every token the request bills as input.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Each unit, with its tokens.
    pub fn sizes(&self) -> impl Iterator<Item = (&Part, u64)> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        self.parts
            .iter()
            .zip(self.ends.iter().zip(starts).map(|(end, start)| end - start))
    }
}

/// Tokens of the messages a one-item (or system-only) body reads as; its
/// JSON's tokens when the format does not read it.
fn messages_of(format: Format, body: &Value, tok: &Tokenizer) -> u64 {
    let bytes = body.to_string().into_bytes();
    match super::read_body(format, bytes, None) {
        Ok(doc) => doc
            .conversations
            .iter()
            .flat_map(|c| &c.messages)
            .map(|m| tok.count_message(m) as u64)
            .sum(),
        Err(_) => tok.count_text(&body.to_string()) as u64,
    }
}

/// A unit's kind, mixed into its size's key: the same JSON as a tool list
/// and as a message counts differently.
fn part_salt(part: &Part) -> u64 {
    match part {
        Part::Tools => 0x9e37_79b9_7f4a_7c15,
        Part::System => 0xc2b2_ae3d_27d4_eb4f,
        Part::Item(_) => 0,
    }
}

/// A unit's JSON: a value parsed, or the text of one.
enum Json<'a> {
    Value(&'a Value),
    Text(&'a str),
}

impl Json<'_> {
    fn is_null(&self) -> bool {
        match self {
            Json::Value(v) => v.is_null(),
            Json::Text(raw) => *raw == "null",
        }
    }

    fn string(&self) -> Option<String> {
        match self {
            Json::Value(v) => v.as_str().map(str::to_string),
            Json::Text(raw) => serde_json::from_str(raw).ok(),
        }
    }

    /// The value, parsed when it is text (a unit to count).
    fn value(&self) -> std::borrow::Cow<'_, Value> {
        match self {
            Json::Value(v) => std::borrow::Cow::Borrowed(v),
            Json::Text(raw) => {
                std::borrow::Cow::Owned(serde_json::from_str(raw).unwrap_or(Value::Null))
            }
        }
    }

    /// Its identity without its `cache_control` markers (keyed as
    /// `holds::hash_of`'s), and its longest marker's lifetime.
    fn identity(&self) -> Option<(u64, Option<f64>)> {
        use std::hash::{BuildHasher, Hasher};
        let mut h = seed().build_hasher();
        let mark = match self {
            Json::Value(v) => {
                unmarked::hash_unmarked(v, &mut h);
                marker(v)
            }
            Json::Text(raw) => unmarked::walk_text(raw, &mut h)?,
        };
        Some((h.finish(), mark))
    }
}

/// A string's identity, as a unit's (the model's name starts the chain).
fn identity_str(s: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = seed().build_hasher();
    unmarked::hash_str(s, &mut h);
    h.finish()
}

/// How a provider's cache reads and writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Anthropic's: prefixes ending at a marker, of at least `minimum`
    /// tokens.
    Marked {
        /// The model's minimum cacheable prefix, in tokens.
        minimum: u64,
    },
    /// OpenAI's: every prefix of 1,024 tokens or more, read in 128-token
    /// steps.
    Automatic,
}

impl Rule {
    /// The rule of the provider that takes `format`, for `model`.
    pub fn of(format: Format, model: Option<&str>) -> Rule {
        use crate::validate::Provider;
        if Provider::for_format(format) != Provider::Anthropic {
            return Rule::Automatic;
        }
        let m = model.unwrap_or("").to_ascii_lowercase();
        let later_opus = (5..10).any(|v| m.contains(&format!("opus-4-{v}")));
        let minimum = if m.contains("haiku-4") || later_opus {
            4096
        } else if m.contains("haiku") {
            2048
        } else {
            1024
        };
        Rule::Marked { minimum }
    }

    /// The shortest prefix it caches, in tokens.
    pub fn minimum(self) -> u64 {
        match self {
            Rule::Marked { minimum } => minimum,
            Rule::Automatic => AUTOMATIC_MINIMUM,
        }
    }
}

/// OpenAI's shortest cached prefix, in tokens.
const AUTOMATIC_MINIMUM: u64 = 1024;

/// A provider's cache: the prefixes it holds, and until when. Bounded: past
/// its capacity, what has expired is dropped, then everything.
pub struct Cache {
    held: FastMap<u64, f64>,
    capacity: usize,
}

impl Cache {
    /// A cache of at most `capacity` prefixes.
    pub fn new(capacity: usize) -> Cache {
        Cache {
            held: FastMap::default(),
            capacity: capacity.max(1),
        }
    }

    fn alive(&self, key: u64, now: f64) -> bool {
        self.held.get(&key).is_some_and(|&until| until > now)
    }

    fn keep(&mut self, key: u64, until: f64, now: f64) {
        if self.held.len() >= self.capacity && !self.held.contains_key(&key) {
            self.held.retain(|_, t| *t > now);
            if self.held.len() >= self.capacity {
                self.held.clear();
            }
        }
        self.held.insert(key, until);
    }

    /// What the provider bills for `units` sent at `now` (seconds, any
    /// origin), the cache updated as the provider's would be. No output.
    pub fn bill(&mut self, rule: Rule, units: &Units, now: f64) -> Billed {
        let (read, write) = match rule {
            Rule::Marked { minimum } => self.marked(units, minimum, now),
            Rule::Automatic => (self.automatic(units, now), 0),
        };
        Billed {
            input: units.total - read - write,
            cache_read: read,
            cache_write: write,
            output: 0,
        }
    }

    fn marked(&mut self, u: &Units, minimum: u64, now: f64) -> (u64, u64) {
        let marks: Vec<usize> = (0..u.marks.len())
            .filter(|&i| u.marks[i].is_some())
            .collect();
        let read_at = marks
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK)..=b)
                    .rev()
                    .find(|&j| self.alive(u.keys[j], now))
            })
            .max();
        let read = read_at.map_or(0, |j| u.ends[j]);
        if let Some(j) = read_at {
            let life = u.marks[j].unwrap_or(FIVE_MINUTES);
            self.keep(u.keys[j], now + life, now);
        }
        let Some(&last) = marks.last() else {
            return (read, 0);
        };
        if u.ends[last] < minimum {
            return (read, 0);
        }
        for &b in marks.iter().filter(|&&b| u.ends[b] >= minimum) {
            self.keep(u.keys[b], now + u.marks[b].unwrap_or(FIVE_MINUTES), now);
        }
        (read, u.ends[last].saturating_sub(read))
    }

    fn automatic(&mut self, u: &Units, now: f64) -> u64 {
        const MIN: u64 = AUTOMATIC_MINIMUM;
        let longest = (0..u.keys.len())
            .filter(|&j| u.ends[j] >= MIN && self.alive(u.keys[j], now))
            .map(|j| u.ends[j])
            .max();
        for j in (0..u.keys.len()).filter(|&j| u.ends[j] >= MIN) {
            self.keep(u.keys[j], now + FIVE_MINUTES, now);
        }
        longest.map_or(0, |n| MIN + (n - MIN) / 128 * 128)
    }
}

/// `body` (a request of `format`, `tokens` long) with a `cache_control`
/// breakpoint on the last block of its newest message that can carry one,
/// when its provider caches only what is marked (`rule`), it is at least
/// the model's minimum, and it carries no marker at all (a client that
/// marks chose its own); `None` when it is not to be marked. A string
/// content becomes one text block.
pub fn with_breakpoint(format: Format, body: &[u8], rule: Rule, tokens: usize) -> Option<Vec<u8>> {
    let Rule::Marked { minimum } = rule else {
        return None;
    };
    if format != Format::Anthropic
        || (tokens as u64) < minimum
        || memchr::memmem::find(body, b"\"cache_control\"").is_some()
    {
        return None;
    }
    // Only the newest messages are parsed, and the one marked is written
    // back in its place: the rest of the body goes on byte for byte.
    let text = std::str::from_utf8(body).ok()?;
    let top: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    let messages: Vec<&RawValue> = serde_json::from_str(top.get("messages")?.get()).ok()?;
    for raw in messages.iter().rev() {
        let mut m: Value = serde_json::from_str(raw.get()).ok()?;
        if mark_newest_block(&mut m)? {
            let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
            let end = start + raw.get().len();
            let mut out = Vec::with_capacity(body.len() + 64);
            out.extend_from_slice(&body[..start]);
            serde_json::to_writer(&mut out, &m).ok()?;
            out.extend_from_slice(&body[end..]);
            return Some(out);
        }
    }
    None
}

/// Puts a breakpoint on message `m`'s newest block that takes one:
/// `Some(false)` when it has none (an empty text), `None` when the
/// message is not one to look past (no content, or content of no kind a
/// breakpoint goes on).
fn mark_newest_block(m: &mut Value) -> Option<bool> {
    let marker = || serde_json::json!({"type": "ephemeral"});
    let content = m.get_mut("content")?;
    if let Value::String(text) = content {
        if text.trim().is_empty() {
            return Some(false);
        }
        *content = serde_json::json!([{"type": "text", "text": text, "cache_control": marker()}]);
        return Some(true);
    }
    let blocks = content.as_array_mut()?;
    let markable = blocks.iter_mut().rev().find(|b| {
        matches!(
            b.get("type").and_then(Value::as_str),
            Some("text" | "image" | "document" | "tool_use" | "tool_result")
        )
    });
    if let Some(Value::Object(block)) = markable {
        block.insert("cache_control".into(), marker());
        return Some(true);
    }
    Some(false)
}

/// The requests as they came, billed as the provider would have billed
/// them had every one gone on unchanged: what a proxy sets beside what it
/// sent (`serve`'s "as they came"). One provider's cache for all of them,
/// as a provider keeps one per organization, bounded.
pub struct AsCame {
    cache: std::sync::Mutex<Cache>,
    sizes: Sizes,
}

/// A request metered by [`AsCame::bill_units`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Metered {
    /// The request as it came, billed (no output).
    pub came: Billed,
    /// Every input token of the body sent, in the same count: what the
    /// provider's bill of it is compared with.
    pub sent: u64,
}

impl AsCame {
    /// A meter holding at most `capacity` prefixes and as many sizes.
    pub fn new(capacity: usize) -> AsCame {
        AsCame {
            cache: std::sync::Mutex::new(Cache::new(capacity)),
            sizes: Sizes::new(capacity),
        }
    }

    /// A request of `format` for `model` whose `units` are known, as it
    /// came at `now` (seconds), billed by its provider's rule; `sent` the
    /// tokens of the body that went instead, when it changed (what
    /// [`Outcome::meter`](super::Outcome::meter) gives it). A
    /// conversation's history is counted once, its new messages each
    /// time, no lock held while counting (see [`Units::of`]).
    pub fn bill_units(
        &self,
        format: Format,
        (units, sent): (&Units, Option<u64>),
        model: Option<&str>,
        now: f64,
    ) -> Metered {
        let sent = sent.unwrap_or(units.total());
        let rule = Rule::of(format, model);
        let came = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bill(rule, units, now);
        Metered { came, sent }
    }

    /// The sizes this meter remembers.
    pub fn sizes(&self) -> &Sizes {
        &self.sizes
    }

    /// Every input token of `body`, as [`AsCame::bill_units`] counts a body:
    /// for a body sent whose count the outcome does not give.
    pub(crate) fn tokens(&self, format: Format, body: &[u8], tok: &Tokenizer) -> Option<u64> {
        Units::of(format, body, tok, &self.sizes).map(|u| u.total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn tok() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase).unwrap()
    }

    fn words(n: usize) -> String {
        (0..n).map(|i| format!("w{i} ")).collect()
    }

    fn units(body: &Value, format: Format) -> Units {
        let sizes = Sizes::new(100);
        Units::of(format, body.to_string().as_bytes(), &tok(), &sizes).unwrap()
    }

    #[test]
    fn the_units_add_up_to_what_stats_counts() {
        let tok = tok();
        let body = serde_json::json!({
        "model": "claude-sonnet-4-5", "system": "be brief",
        "tools": [{"name": "read", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": [{"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x y z"},
                {"type": "text", "text": "and?"}]},
        ]});
        let u = units(&body, Format::Anthropic);
        let doc =
            crate::inflight::read_request(Format::Anthropic, body.to_string().as_bytes()).unwrap();
        let envelope = doc.conversations[0].envelope.as_ref().unwrap();
        let counted =
            tok.count_conversation(&doc.conversations[0]) + crate::fit::extras(&tok, envelope);
        assert_eq!(u.total(), counted as u64);
        let parts: Vec<&Part> = u.sizes().map(|(p, _)| p).collect();
        assert_eq!(
            parts,
            [
                &Part::Tools,
                &Part::System,
                &Part::Item(0),
                &Part::Item(1),
                &Part::Item(2)
            ]
        );
    }

    /// A body split as valid JSON has the units of the same body checked,
    /// its units' identities walked or remembered from their texts: every
    /// fixture that is a JSON object, in each request format, as it is
    /// spelled and as `serde_json` writes it, and bodies with a key said
    /// twice.
    #[test]
    fn a_valid_body_split_has_the_units_of_one_checked() {
        use crate::inflight::tests::{fixture_files, REQUEST_FORMATS};
        let tok = tok();
        let mut compared = 0;
        let mut bodies: Vec<Vec<u8>> = vec![
            br#"{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}"#.to_vec(),
            br#"{"model":"x","model":"gpt-4.1","messages":[] , "tools" : [ {"type":"function"} ] }"#.to_vec(),
            br#"{"messages":null,"system":"s"}"#.to_vec(),
        ];
        for path in fixture_files() {
            let bytes = std::fs::read(&path).unwrap();
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                if v.is_object() {
                    bodies.push(serde_json::to_vec(&v).unwrap());
                    bodies.push(bytes);
                }
            }
        }
        // Sizes and texts remembered across all the bodies and formats (a
        // unit's size is its format's), and a bound that makes the memory
        // of texts start again often.
        let (remembering, small) = (
            Sizes::new(1 << 16).with_texts(64 << 20),
            Sizes::new(1 << 16).with_texts(4096),
        );
        for body in &bodies {
            for format in REQUEST_FORMATS {
                let (a, b) = (Sizes::new(1 << 16), Sizes::new(1 << 16));
                let checked = Units::of(format, body, &tok, &a);
                for _ in 0..2 {
                    assert!(checked == Units::of_valid(format, body, &tok, &remembering));
                    assert!(checked == Units::of_valid(format, body, &tok, &small));
                }
                assert!(
                    checked == Units::of_valid(format, body, &tok, &b),
                    "{}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                );
                compared += usize::from(checked.is_some());
            }
        }
        assert!(compared > 200, "{compared}");
    }

    /// A body walked as text has the units, keys and markers of the same
    /// body parsed, however it is spelled, in every request format.
    #[test]
    fn a_body_walked_as_text_has_the_units_of_its_value() {
        let tok = tok();
        let bodies = [
            (
                Format::Anthropic,
                r#"{ "model" : "claude-sonnet-4-5", "cache_control": {"type":"ephemeral","ttl":"1h"},
                  "system": [{"type":"text","text":"be \u0062rief","cache_control":{"type":"ephemeral"}}],
                  "tools": [{"name":"read","input_schema":{"type":"object","properties":{"n":{"type":"number","maximum":1e3}}}}],
                  "messages": [ {"role":"user","content":"hi \"there\""},
                    {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"n":-2.50}}]},
                    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","cache_control":{"type":"ephemeral"}}]} ] }"#,
            ),
            (
                Format::OpenAi,
                r#"{"model":"gpt-4.1","tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"functions":null,
                  "messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"q"}]},
                  {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
                  {"role":"tool","tool_call_id":"c","content":"12345678901234567890123"}]}"#,
            ),
            (
                Format::Responses,
                r#"{"model":"gpt-5","instructions":"i","input":[{"role":"user","content":"u"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}"#,
            ),
            (
                Format::Gemini,
                r#"{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]}]}"#,
            ),
            (Format::OpenAi, r#"{"messages": "not a list", "model": 7}"#),
        ];
        for (format, text) in bodies {
            let sizes = Sizes::new(100);
            let walked = Units::of(format, text.as_bytes(), &tok, &sizes).unwrap();
            let value: Map<String, Value> = serde_json::from_str(text).unwrap();
            let fresh = Sizes::new(100);
            assert_eq!(
                walked,
                Units::of_value(format, &value, &tok, &fresh),
                "{text}"
            );
            assert_eq!(
                walked,
                Units::of_value(format, &value, &tok, &sizes),
                "{text}"
            );
            // And as the holds list it (the proxy's meter): the same units.
            if let Some(listed) = crate::inflight::Listed::of(format, text.as_bytes()) {
                let listed = listed.units(format, &tok, &Sizes::new(100));
                assert_eq!(Some(&walked), listed.as_ref(), "{text}");
            } else {
                assert_eq!(text, r#"{"messages": "not a list", "model": 7}"#);
            }
        }
        assert!(Units::of(Format::OpenAi, b"[1]", &tok, &Sizes::new(1)).is_none());
        assert!(Units::of(Format::OpenAi, b"{\"messages\": [", &tok, &Sizes::new(1)).is_none());
    }

    #[test]
    fn a_moving_marker_reads_the_prefix_it_wrote() {
        // As Claude Code sends them: every message in blocks, the newest
        // block marked.
        let history: Vec<Value> = (0..6)
            .map(|i| {
                serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"},
                "content": [{"type": "text", "text": words(300)}]})
            })
            .collect();
        let marked = |n: usize| {
            let mut msgs = history[..n].to_vec();
            msgs[n - 1]["content"][0]["cache_control"] = serde_json::json!({"type": "ephemeral"});
            serde_json::json!({"model": "claude-sonnet-4-5", "messages": msgs})
        };
        let rule = Rule::of(Format::Anthropic, Some("claude-sonnet-4-5"));
        let mut cache = Cache::new(100);
        let first = units(&marked(5), Format::Anthropic);
        let b1 = cache.bill(rule, &first, 0.0);
        assert_eq!((b1.cache_read, b1.cache_write), (0, first.ends[4]));
        // The next call marks its newest message: the prefix written is
        // read though its marker moved.
        let second = units(&marked(6), Format::Anthropic);
        let b2 = cache.bill(rule, &second, 10.0);
        assert_eq!(b2.cache_read, first.ends[4]);
        assert_eq!(b2.cache_write, second.ends[5] - first.ends[4]);
        assert_eq!(b2.input_total(), second.total());
        // Past its lifetime nothing is read.
        let b3 = cache.bill(rule, &second, 10.0 + 301.0);
        assert_eq!(b3.cache_read, 0);
        // Without a marker Anthropic caches nothing.
        let plain = units(
            &serde_json::json!({"model": "claude-sonnet-4-5", "messages": history}),
            Format::Anthropic,
        );
        let b4 = Cache::new(100).bill(rule, &plain, 0.0);
        assert_eq!(b4.input, plain.total());
    }

    #[test]
    fn openai_reads_prefixes_in_steps_of_128_past_1024() {
        let msgs: Vec<Value> = (0..8)
            .map(|i| serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": words(200)}))
            .collect();
        let body = |n: usize| serde_json::json!({"model": "gpt-4o", "messages": msgs[..n]});
        let mut cache = Cache::new(100);
        let a = units(&body(7), Format::OpenAi);
        assert_eq!(cache.bill(Rule::Automatic, &a, 0.0).cache_read, 0);
        let b = units(&body(8), Format::OpenAi);
        let read = cache.bill(Rule::Automatic, &b, 1.0).cache_read;
        let shared = a.ends[6];
        assert_eq!(read, 1024 + (shared - 1024) / 128 * 128);
        // Another model shares nothing.
        let other = units(
            &serde_json::json!({"model": "gpt-4.1", "messages": msgs}),
            Format::OpenAi,
        );
        assert_eq!(cache.bill(Rule::Automatic, &other, 2.0).cache_read, 0);
    }

    #[test]
    fn a_breakpoint_goes_on_the_newest_block_of_an_unmarked_body() {
        let rule = Rule::of(Format::Anthropic, Some("claude-sonnet-4-5"));
        let body = serde_json::json!({"model": "claude-sonnet-4-5", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "hello"}]},
            {"role": "user", "content": "go on"}]});
        let bytes = body.to_string().into_bytes();
        let marked: Value = serde_json::from_slice(
            &with_breakpoint(Format::Anthropic, &bytes, rule, 5000).unwrap(),
        )
        .unwrap();
        assert_eq!(
            marked["messages"][2]["content"],
            serde_json::json!([{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            marked["messages"].as_array().unwrap()[..2],
            body["messages"].as_array().unwrap()[..2]
        );
        // A thinking block takes none: the block before it does.
        let thinking = serde_json::json!({"model": "m", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"},
                {"type": "thinking", "thinking": "t", "signature": "s"}]}]});
        let marked: Value = serde_json::from_slice(
            &with_breakpoint(
                Format::Anthropic,
                thinking.to_string().as_bytes(),
                rule,
                5000,
            )
            .unwrap(),
        )
        .unwrap();
        assert!(marked["messages"][1]["content"][0]
            .get("cache_control")
            .is_some());
        assert!(marked["messages"][1]["content"][1]
            .get("cache_control")
            .is_none());
        // Only the message marked is written again: the rest of the body
        // goes on byte for byte, spaces and all.
        let spaced = "{ \"model\" : \"m\",\n  \"messages\": [ {\"role\": \"user\", \"content\": \"q\"} ,\n {\"role\":\"assistant\", \"content\": \"a\"} ] ,\"max_tokens\": 9 }";
        let marked = with_breakpoint(Format::Anthropic, spaced.as_bytes(), rule, 5000).unwrap();
        assert_eq!(
            String::from_utf8(marked).unwrap(),
            "{ \"model\" : \"m\",\n  \"messages\": [ {\"role\": \"user\", \"content\": \"q\"} ,\n \
             {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"cache_control\":{\"type\":\"ephemeral\"}}]} ] ,\"max_tokens\": 9 }"
        );
        // Under the minimum, a client's own marker, another provider: none.
        assert!(with_breakpoint(Format::Anthropic, &bytes, rule, 500).is_none());
        let theirs = br#"{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}"#;
        assert!(with_breakpoint(Format::Anthropic, theirs, rule, 5000).is_none());
        assert!(with_breakpoint(Format::OpenAi, &bytes, Rule::Automatic, 5000).is_none());
    }

    #[test]
    fn a_full_cache_starts_again_rather_than_grow() {
        let mut cache = Cache::new(3);
        for k in 0..10 {
            cache.keep(k, 100.0, 0.0);
            assert!(cache.held.len() <= 3);
        }
        let sizes = Sizes::new(2);
        for k in 0..10 {
            sizes.get_or(k, || k);
            assert!(sizes.known.read().unwrap().len() <= 2);
        }
    }
}
