//! Cache-stable cleaning: what each conversation was forwarded as last
//! time, and the choice, at each request, between holding it (the previous
//! body with the new messages appended) and cleaning it again.

use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::unmarked::seed;
use super::values::ValueMemo;
use super::{decide_unchecked, worse, Came, Check, Outcome};
use crate::engine::{CleanError, Engine};
use crate::format::{Document, Format};
use crate::tokens::Tokenizer;
use crate::validate::{validate_request as validate, Provider};

/// What a provider charges for a token of a request's input, read from its
/// prompt cache or written to it (sent uncached, where it charges no
/// write). Only the ratio matters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachePrices {
    /// A token the cache serves.
    pub read: f64,
    /// A token it does not (written to the cache, or sent uncached).
    pub write: f64,
    /// A token of a prefix too short to cache (under the model's minimum):
    /// the input price, neither written nor read.
    pub input: f64,
}

impl CachePrices {
    /// For a model the price table does not know: a read at a tenth of a
    /// write, as OpenAI's and Anthropic's current models charge (within a
    /// factor of 1.25).
    pub const DEFAULT: CachePrices = CachePrices {
        read: 0.1,
        write: 1.0,
        input: 1.0,
    };

    /// An amount at these prices, said: in dollars, or, at the default
    /// prices (a model the table does not know), in input tokens' worth.
    pub fn worth(&self, amount: f64) -> String {
        if *self == CachePrices::DEFAULT {
            format!("{amount:.1} input tokens' worth")
        } else {
            format!("${amount:.6}")
        }
    }

    /// A model's prices from the table: its cache read price, and its cache
    /// write price or else its input price; `None` without a read price.
    pub fn of(model: &crate::models::Model) -> Option<CachePrices> {
        let read = model.cache_read?;
        let write = model.cache_write.or(model.input)?;
        let input = model.input.unwrap_or(write);
        (write > 0.0 && read >= 0.0).then_some(CachePrices { read, write, input })
    }
}

/// What a conversation was forwarded as, for its next request.
#[derive(Clone)]
struct Held {
    /// The hash of each message of the request as it came.
    input: Vec<u64>,
    /// Their tokens, each, when known (else empty): what the request as it
    /// came costs is then priced without counting it again.
    input_sizes: Vec<usize>,
    /// The messages forwarded, as their JSON: parsed again only when the
    /// conversation comes back (a parsed message weighs several times its
    /// text, up to 17 times for short ones).
    output: Packed,
    /// Their hashes.
    hashes: Vec<u64>,
    /// Their tokens, each.
    sizes: Vec<usize>,
    /// What it keeps in memory, in bytes (see [`Held::weight`]).
    bytes: usize,
    /// The hash of what opens the conversation.
    opening: u64,
    /// When it went.
    at: std::time::Instant,
    /// The conversation's number (see [`crate::inflight::Outcome::conversation`]).
    conversation: u64,
    /// Tokens of the request as it came.
    came: usize,
    /// What a provider caches before the messages (its tools, its system
    /// prompt): the hash of their text, and their tokens.
    head: (u64, usize),
    /// The rent paid since the conversation was last cleaned: what reading
    /// the tokens the recipe would have taken out cost, request by request.
    rent: f64,
    /// What cleaning again took out when last measured.
    measured: Option<Measured>,
    /// Whether the recipe changed a message as it arrived (then what it
    /// would take out is measured on every request).
    arrival: bool,
    /// What the body forwarded changed of the request as it came (its
    /// report's changes, and what its format could not keep): a held body
    /// is that body extended, so its report names them again, and a
    /// request whose earlier requests were replayed first names what they
    /// took out. Empty when it went as it came.
    said: Arc<Said>,
}

/// What a report says was changed or lost, kept with a held body.
#[derive(Default)]
struct Said {
    changes: Vec<crate::changes::Change>,
    lost: Vec<String>,
}

impl Said {
    /// What it weighs in memory, about.
    fn weight(&self) -> usize {
        const PER_CHANGE: usize = 160;
        self.changes.len() * PER_CHANGE + self.lost.iter().map(|l| l.len() + 24).sum::<usize>()
    }
}

/// What cleaning a held conversation again from its start would take out,
/// measured at one request and trusted for the next ones, so that the
/// proxy cleans a held conversation to know it once in a while, not on
/// every request (a long session's held requests were each cleaned in
/// full: most of the latency a proxy added to them).
///
/// A held request whose rent is estimated is charged what the last
/// measure took out. The conversation is measured again (cleaned from its
/// start, and the rule decides on what it finds) once its body grew by an
/// eighth since ([`Measured::AGAIN_AFTER`]), or the rent estimated reached
/// half the premium measured; the premium grows with the conversation, so
/// the rule is never decided on an estimate. At each measure, the requests
/// estimated since the last are charged what they would have paid had
/// what the recipe takes out grown evenly between the two measures.
///
/// What the recipe takes out can grow at once (a fourth result pushes a
/// large one out of `--keep-last 3`): then an eviction comes up to an
/// eighth of the body later than with a measure on every request. On the
/// long sessions of the benchmark the dollars differ by less than 0.3% of
/// none's either way (`bench/replay.py --long`). A recipe seen to change a
/// message as it arrives (its cleaning then shares the whole previous
/// body) is measured on every request, since what it does there pays at
/// once; so is a conversation from which the recipe would take nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Measured {
    /// The held body's tokens then.
    tokens: usize,
    /// The tokens cleaning again would have taken out.
    saved: usize,
    /// What cleaning again would have cost more than holding, on that
    /// request.
    premium: f64,
    /// The requests held since, their rent estimated from this measure.
    estimated: u32,
}

impl Measured {
    /// A measure stands while the body grows by less than this part of
    /// what it was (an eighth): measuring costs a conversation's cleaning
    /// about 9 times over its life, not once per request.
    const AGAIN_AFTER: usize = 8;

    fn of(prior: &Held, held: &Choice, again: Priced, prices: CachePrices) -> Measured {
        Measured {
            tokens: held.tokens(),
            saved: held.tokens().saturating_sub(again.tokens()),
            premium: again.cost(prior, prices) - held.priced().cost(prior, prices),
            estimated: 0,
        }
    }

    /// What the requests estimated since `last` paid more than their
    /// estimate, had what the recipe takes out grown evenly from that
    /// measure to this one: each was charged what `last` took out.
    fn correction(&self, last: Option<Measured>, prices: CachePrices) -> f64 {
        last.map_or(0.0, |last| {
            let grew = self.saved.saturating_sub(last.saved) as f64;
            let n = f64::from(last.estimated);
            // The k-th of n requests estimated lies k/(n+1) of the way.
            grew * n / 2.0 * prices.read
        })
    }
}

impl Held {
    /// What a hold keeps in memory: its text, its lists, and what the
    /// memory's maps and queue spend on it.
    fn weight(&self) -> usize {
        const BOOKKEEPING: usize = 256;
        let words = self.input.len()
            + self.input_sizes.len()
            + self.hashes.len()
            + self.sizes.len()
            + self.output.ends.len();
        self.output.text.len()
            + words * 8
            + self.said.weight()
            + std::mem::size_of::<Held>()
            + BOOKKEEPING
    }
}

/// A list of JSON values written one after another, and where each ends.
#[derive(Clone, Default)]
struct Packed {
    text: Box<[u8]>,
    ends: Box<[usize]>,
    /// Whether each text is as `serde_json` writes its value (a held body,
    /// which it wrote), not as the client or the engine's writer spelled it:
    /// then a value parsed from it is written back as this very text.
    canonical: bool,
}

impl Packed {
    fn of<V: Borrow<Value>>(items: &[V]) -> Packed {
        let mut text = Vec::new();
        let mut ends = Vec::with_capacity(items.len());
        for v in items {
            serde_json::to_writer(&mut text, v.borrow()).expect("writing to memory");
            ends.push(text.len());
        }
        Packed {
            text: text.into(),
            ends: ends.into(),
            canonical: true,
        }
    }

    /// The items of a list, as their texts (as the engine's writer spelled
    /// them: not [`Packed::canonical`]).
    fn of_texts(items: &[&str]) -> Packed {
        let mut text = Vec::with_capacity(items.iter().map(|t| t.len()).sum());
        let mut ends = Vec::with_capacity(items.len());
        for t in items {
            text.extend_from_slice(t.as_bytes());
            ends.push(text.len());
        }
        Packed {
            text: text.into(),
            ends: ends.into(),
            canonical: false,
        }
    }

    /// Item `i`'s text.
    fn text_of(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        &self.text[start..self.ends[i]]
    }

    /// Item `i`'s value, parsed again (through `memo` when there is one).
    fn value(&self, i: usize, memo: Option<&ValueMemo>) -> Value {
        super::values::parse(memo, self.text_of(i)).expect("written as JSON")
    }
}

/// Conversations held that open alike (two agent runs, or two users, that
/// start "system + hi"): each is told from the others by the longest prefix
/// of its messages, and none is ever sent another's.
const PER_OPENING: usize = 16;

/// Cache-stable cleaning: the conversations cleaned lately, by the hash of
/// what opens them (the system prompt and the first message).
///
/// A provider's prompt cache serves the part of a request that repeats the
/// previous one from its start, at a tenth of the price or less; what
/// follows is written to it at full price or more. When a conversation
/// comes back with messages appended, two bodies can go on: the *held* one
/// (what was forwarded last time, the new messages appended as they came:
/// all of the previous body is served by the cache) and the conversation
/// *cleaned again* by the recipe (fewer tokens, but only its prefix shared
/// with the previous body is served). The proxy forwards the held body
/// unless
///
/// - it passes the budget (`limit`: the recipe's `trim`, which leaves a
///   step of room under it), or
/// - cleaning again has paid for itself, at the model's prices: by *rent
///   or buy* (below), or, with a fixed `horizon`, when it costs less on
///   this request after `horizon` more requests have read the tokens it
///   saves from the cache.
///
/// **Rent or buy.** Cleaning again is a purchase: the body's prefix after
/// the first changed message is written to the cache again (1.25× the
/// input price at Anthropic) instead of read (0.1×), the *premium*. Not
/// cleaning is a rent: every request reads the tokens the recipe would
/// take out. The proxy adds up the rent each held request pays for the
/// tokens the recipe would take out at that request, and cleans again once
/// the rent paid since the last cleaning reaches the premium. It is the
/// ski-rental rule: whatever the number of requests still to come, the
/// conversation pays at most twice what a proxy that knew them would pay
/// for that eviction, and a conversation that ends soon never pays for an
/// eviction it could not pay back. Evictions come in batches (the rent
/// grows with what there is to take out), not on every request.
/// What the recipe would take out is measured by cleaning the
/// conversation from its start once in a while, not on every request
/// (see [`Measured`]).
///
/// With `horizon` 0 no request costs more than holding would have; a
/// conversation the recipe never changes goes on byte for byte.
pub struct Holds {
    limit: Option<usize>,
    /// Whether `limit` is in the provider's tokens (`--budget-in billed`).
    billed: bool,
    /// A fixed horizon in requests (`--cache-horizon`); `None`: rent or buy.
    horizon: Option<f64>,
    capacity: usize,
    max_bytes: usize,
    catalog: crate::models::Catalog,
    held: Mutex<Memory>,
    /// Messages' values parsed before (replay's holds: see
    /// [`super::values`]); `None` in the proxy.
    values: Option<Arc<ValueMemo>>,
}

/// The conversations held, the least recently used first, and what they
/// weigh together.
#[derive(Default)]
struct Memory {
    /// By a hold's own id.
    held: HashMap<u64, Held>,
    /// The holds of each opening.
    by_opening: HashMap<u64, Vec<u64>>,
    order: VecDeque<u64>,
    bytes: usize,
    /// The next hold's id.
    next: u64,
    /// The conversations numbered so far.
    conversations: u64,
}

impl Memory {
    fn forget(&mut self, id: u64) {
        if let Some(h) = self.held.remove(&id) {
            self.bytes -= h.bytes;
            if let Some(ids) = self.by_opening.get_mut(&h.opening) {
                ids.retain(|&x| x != id);
                if ids.is_empty() {
                    self.by_opening.remove(&h.opening);
                }
            }
        }
        if let Some(k) = self.order.iter().position(|x| *x == id) {
            self.order.remove(k);
        }
    }
}

/// The hold `list` continues, among those of its opening: the one whose
/// request is the longest prefix of this one's; else, when some are held
/// but none is continued, the first message at which the closest differs
/// (the client changed its history there).
fn continued<'m>(map: &'m Memory, list: &Listed) -> Result<(u64, &'m Held), Option<usize>> {
    let common = |h: &Held| shared(&h.input, &list.hashes);
    let alike: Vec<(u64, &Held)> = map
        .by_opening
        .get(&list.id)
        .into_iter()
        .flatten()
        .filter_map(|id| Some((*id, map.held.get(id)?)))
        .collect();
    let continuing = alike
        .iter()
        .filter(|(_, h)| h.input.len() <= list.hashes.len() && common(h) == h.input.len())
        .max_by_key(|(_, h)| h.input.len());
    match continuing {
        Some(&(id, h)) => Ok((id, h)),
        None => Err(alike.iter().map(|(_, h)| common(h)).max()),
    }
}

/// The length of a value written as JSON, without writing it anywhere.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

/// Whether item `b` of a request's list opens a turn of the model: it is
/// the model's (an assistant message, a Responses call or reasoning item,
/// a Gemini `model` turn) and the item before it is not. The request that
/// the model answered with it was every item before it.
fn turn_starts<V: Borrow<Value>>(format: Format, items: &[V], b: usize) -> bool {
    fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
        crate::json::field(v, key).unwrap_or(&Value::Null)
    }
    let models = |v: &Value| match format {
        Format::Responses => {
            *get(v, "role") == "assistant"
                || matches!(
                    get(v, "type").as_str(),
                    Some(
                        "function_call"
                            | "custom_tool_call"
                            | "reasoning"
                            | "local_shell_call"
                            | "web_search_call"
                            | "file_search_call"
                            | "computer_call"
                    )
                )
        }
        Format::Gemini => *get(v, "role") == "model",
        _ => *get(v, "role") == "assistant",
    };
    b > 0 && b < items.len() && models(items[b].borrow()) && !models(items[b - 1].borrow())
}

/// A request's list of messages, parsed: its key, the body's other keys,
/// and the hash of each message and of the conversation's opening.
#[derive(Clone)]
pub struct Listed {
    key: &'static str,
    body: serde_json::Map<String, Value>,
    /// Its messages, shared with the memo they were parsed through.
    items: Vec<Arc<Value>>,
    hashes: Vec<u64>,
    id: u64,
}

impl Listed {
    /// The request's prompt-cache units, from its messages as listed (not
    /// from its text walked again): what the meter bills it as it came.
    pub(crate) fn units(
        &self,
        format: Format,
        tok: &Tokenizer,
        sizes: &super::cache::Sizes,
    ) -> Option<super::cache::Units> {
        super::cache::Units::of_listed(format, (&self.body, &self.items), tok, sizes)
    }

    /// The list of messages of a request body `raw` of `format` (`None`
    /// when it has none, or an empty one): the same for every recipe.
    pub fn of(format: Format, raw: &[u8]) -> Option<Listed> {
        Listed::of_with(format, raw, None)
    }

    /// [`Listed::of`], the body split at its quotes into its keys and
    /// messages and each message parsed on its own: through `memo` when
    /// one is given (parsed and hashed once for its text: replay lists each
    /// call's request, mostly the messages of the call before). The proxy
    /// and replay list alike: a message is parsed as the reader parses
    /// one, at its own depth. A body that gives a key twice is read whole,
    /// as `serde_json` reads it (the last one stands).
    pub fn of_with(format: Format, raw: &[u8], memo: Option<&ValueMemo>) -> Option<Listed> {
        let key = format.list_key();
        let split = std::str::from_utf8(raw).ok().and_then(|text| {
            let (entries, list) = crate::format::split::entries_and_list(text, key)?;
            Some((entries, list?))
        });
        let Some((entries, list)) = split else {
            return Listed::whole(format, raw);
        };
        // As `serde_json` reads the object: each key in its place, the
        // list's taken out as `remove` takes it out.
        let mut body = serde_json::Map::with_capacity(entries.len());
        for (k, text) in &entries {
            let value = match k == key {
                true => Value::Null,
                false => serde_json::from_str(text).ok()?,
            };
            if body.insert(k.clone(), value).is_some() {
                return Listed::whole(format, raw);
            }
        }
        body.remove(key);
        if list.is_empty() {
            return None;
        }
        let (items, hashes) = match memo {
            Some(memo) => {
                let parsed = |t: &&str| memo.shared(t.as_bytes());
                let items: Vec<Arc<Value>> = list.iter().map(parsed).collect::<Option<_>>()?;
                let hash = |t: &&str| memo.hash(t.as_bytes(), hash_of);
                let hashes: Vec<u64> = list.iter().map(hash).collect::<Option<_>>()?;
                (items, hashes)
            }
            None => {
                let parsed = |t: &&str| serde_json::from_str(t).ok().map(Arc::new);
                let items: Vec<Arc<Value>> = list.iter().map(parsed).collect::<Option<_>>()?;
                let hashes = items.iter().map(|v| hash_of(v)).collect();
                (items, hashes)
            }
        };
        Some(Listed::made(key, body, items, hashes))
    }

    /// The body read whole by `serde_json`, its list taken out.
    fn whole(format: Format, raw: &[u8]) -> Option<Listed> {
        let key = format.list_key();
        let mut body: serde_json::Map<String, Value> = serde_json::from_slice(raw).ok()?;
        let items: Vec<Arc<Value>> = match body.remove(key)? {
            Value::Array(items) if !items.is_empty() => items.into_iter().map(Arc::new).collect(),
            _ => return None,
        };
        let hashes: Vec<u64> = items.iter().map(|v| hash_of(v)).collect();
        Some(Listed::made(key, body, items, hashes))
    }

    /// A list, its conversation known by its opening.
    fn made(
        key: &'static str,
        body: serde_json::Map<String, Value>,
        items: Vec<Arc<Value>>,
        hashes: Vec<u64>,
    ) -> Listed {
        let opening = ["system", "instructions", "systemInstruction"]
            .iter()
            .filter_map(|k| body.get(*k))
            .map(hash_of)
            .fold(hashes[0], |a, b| a.rotate_left(7) ^ b);
        Listed {
            key,
            body,
            items,
            hashes,
            id: opening,
        }
    }

    /// The request of the same conversation that ended before item `b`
    /// (the same body, its list cut there), listed and read.
    fn before(&self, b: usize, format: Format) -> Option<(Listed, Document)> {
        let mut body = self.body.clone();
        let values = self.items[..b].iter().map(|v| Value::clone(v)).collect();
        body.insert(self.key.into(), Value::Array(values));
        let bytes = serde_json::to_vec(&body).ok()?;
        body.remove(self.key);
        let doc = super::read_body(format, bytes, None).ok()?;
        let listed = Listed {
            key: self.key,
            body,
            items: self.items[..b].to_vec(),
            hashes: self.hashes[..b].to_vec(),
            id: self.id,
        };
        Some((listed, doc))
    }
}

/// A message's hash, keyed once per process (a client cannot aim at
/// another's hold by choosing messages whose hash it knows): of its
/// value, walked (no text written for it), every variant and length told
/// apart.
fn hash_of(v: &Value) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = seed().build_hasher();
    // Without `cache_control` markers: Claude Code and Cline move theirs
    // to the newest block on every call, and a conversation that grew is
    // still the same conversation (issue 57).
    super::unmarked::hash_unmarked(v, &mut h);
    h.finish()
}

/// A held body read back as the provider's request, to check it and count
/// it: from the value it was written from (a copy of a value costs far less
/// than parsing its text: `read_value` reads it as `read_document` reads
/// the text, `engine`'s tests hold them to it), its text read only where
/// the value is refused.
/// A held body (`bytes`, of `list`'s keys and `items`) read back: through
/// the records the request as it came was read with, when it was
/// (replay's), else from its value without a copy of it.
fn read_held(
    list: &Listed,
    items: Vec<Cow<'_, Value>>,
    bytes: &[u8],
    format: Format,
    recall: Option<&Arc<crate::format::Recall>>,
) -> Option<Document> {
    let whole = |items: Vec<Value>| {
        let mut body = list.body.clone();
        body.insert(list.key.into(), Value::Array(items));
        debug_assert!(
            serde_json::to_vec(&body).is_ok_and(|b| b == bytes),
            "a held body is written as serde_json writes it"
        );
        read_back(body, bytes, format)
    };
    let Some(recall) = recall else {
        return whole(items.into_iter().map(Cow::into_owned).collect());
    };
    let doc = super::read_body(format, bytes.to_vec(), Some(recall)).ok();
    debug_assert!(
        {
            // Alike but for the seals of records read as text.
            let messages = |d: Option<&Document>| {
                let mut m = d.map(|d| d.conversations[0].messages.clone());
                for o in m.iter_mut().flatten().filter_map(|m| m.origin.as_mut()) {
                    o.seal = 0;
                }
                m
            };
            let values = items.iter().map(|v| v.clone().into_owned()).collect();
            messages(doc.as_ref()) == messages(whole(values).as_ref())
        },
        "a held body reads alike through its records and from its value"
    );
    doc
}

fn read_back(
    body: serde_json::Map<String, Value>,
    bytes: &[u8],
    format: Format,
) -> Option<crate::format::Document> {
    crate::format::read_value("request", Value::Object(body), Some(format))
        .or_else(|| super::read_body(format, bytes.to_vec(), None).ok())
}

/// A text's hash, keyed as [`hash_of`]'s.
fn hash_text(text: &str) -> u64 {
    use std::hash::BuildHasher;
    seed().hash_one(text)
}

/// Tokens of each message, as the cache stores them (its JSON), without
/// the client's cache markers: they move from request to request, and a
/// hold's decisions must not depend on where they were.
fn sizes<V: Borrow<Value>>(items: &[V], tok: &Tokenizer) -> Vec<usize> {
    items.iter().map(|v| size_of(v.borrow(), tok)).collect()
}

/// A message's tokens: its JSON without its markers.
fn size_of(v: &Value, tok: &Tokenizer) -> usize {
    tok.count_text(&super::unmarked::unmarked(v).to_string())
}

/// The same, the messages `prior` forwarded at the same place taken from
/// it instead of counted again (a long conversation is not recounted on
/// every request).
fn sizes_after<V: Borrow<Value>>(
    items: &[V],
    hashes: &[u64],
    prior: Option<&Held>,
    tok: &Tokenizer,
) -> Vec<usize> {
    let shared = prior.map_or(0, |p| shared(&p.hashes, hashes));
    let mut out = prior.map_or_else(Vec::new, |p| p.sizes[..shared].to_vec());
    out.extend(sizes(&items[shared..], tok));
    out
}

/// A body's messages, by their hashes and tokens: what it costs.
#[derive(Clone, Copy)]
struct Priced<'a> {
    hashes: &'a [u64],
    sizes: &'a [usize],
}

impl Priced<'_> {
    fn tokens(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// What it costs after `prior`: its prefix shared with the previous
    /// body read from the cache, the rest written.
    fn cost(&self, prior: &Held, prices: CachePrices) -> f64 {
        let shared = shared(&prior.hashes, self.hashes);
        let read: usize = self.sizes[..shared].iter().sum();
        read as f64 * prices.read + (self.tokens() - read) as f64 * prices.write
    }
}

/// How many hashes two lists of messages share from their start.
fn shared(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(a, b)| a == b).count()
}

/// What the provider's cache should serve of `choice`, which continues
/// `prior` (`head`: what it caches before the messages, hash and tokens).
fn continuation_of(prior: &Held, choice: &Choice, head: (u64, usize)) -> super::Continuation {
    let shared = shared(&prior.hashes, &choice.hashes);
    super::Continuation {
        shared: choice.sizes[..shared].iter().sum(),
        previous: prior.sizes.iter().sum(),
        since: prior.at.elapsed(),
        previous_came: prior.came,
        head: if prior.head.0 == head.0 { head.1 } else { 0 },
    }
}

/// What cleaning one request takes besides the request: the recipe, the
/// request's format, the tokenizer and the model it goes to.
#[derive(Clone, Copy)]
struct Call<'a> {
    engine: &'a Engine,
    format: Format,
    tok: &'a Tokenizer,
    model: Option<&'a str>,
}

/// A body that could go on, priced.
struct Choice {
    out: Outcome,
    items: Vec<Arc<Value>>,
    /// The items as text, when the body's text was at hand (else written
    /// from `items` when remembered).
    packed: Option<Packed>,
    hashes: Vec<u64>,
    sizes: Vec<usize>,
    /// The rent the conversation goes on with (see [`Holds`]): what it had
    /// paid and this request pays, when held; 0 when cleaned again.
    rent: f64,
    /// The measure it goes on with, when held.
    measured: Option<Measured>,
    /// Whether the recipe was seen to change a message as it arrived.
    arrival: bool,
    /// What the body changed of what came, when known without copying its
    /// report's (a held body: the body before's).
    said: Option<Arc<Said>>,
}

impl Choice {
    /// A body that starts its conversation's rent afresh, unmeasured.
    fn new(out: Outcome, items: Vec<Arc<Value>>, hashes: Vec<u64>, sizes: Vec<usize>) -> Choice {
        Choice {
            out,
            items,
            packed: None,
            hashes,
            sizes,
            rent: 0.0,
            measured: None,
            arrival: false,
            said: None,
        }
    }

    /// Whether this body differs from `held` only at messages from
    /// `from` on (the messages new to this request): the recipe changes
    /// messages as they arrive.
    fn changes_only_after(&self, held: &Choice, from: usize) -> bool {
        let same = shared(&self.hashes, &held.hashes);
        same >= from && self.hashes != held.hashes
    }

    fn tokens(&self) -> usize {
        self.priced().tokens()
    }

    fn priced(&self) -> Priced<'_> {
        Priced {
            hashes: &self.hashes,
            sizes: &self.sizes,
        }
    }
}

impl Holds {
    /// Holds for a recipe whose budget is `limit` tokens (its `trim`, if
    /// any); cleaning again pays when it saves within `horizon` more
    /// requests, or (`None`) by rent or buy; the `capacity` conversations
    /// used last are remembered, as long as their requests weigh
    /// [`Holds::MAX_BYTES`] together.
    pub fn new(limit: Option<usize>, horizon: Option<usize>, capacity: usize) -> Holds {
        Holds {
            limit,
            billed: false,
            horizon: horizon.map(|h| h as f64),
            capacity: capacity.max(1),
            max_bytes: Self::MAX_BYTES,
            catalog: crate::models::Catalog::builtin(),
            held: Mutex::new(Memory::default()),
            values: None,
        }
    }

    /// What the conversations held may keep in memory together, by
    /// default: 256 MiB (the proxy's memory stays flat however
    /// many long conversations pass through it; one forgotten is cleaned
    /// again from the start when it comes back).
    pub const MAX_BYTES: usize = 256 << 20;

    /// The same, its budget in the provider's tokens when `billed` (read
    /// with the ratio learned from the model's answers, see
    /// [`crate::fit::scale_for_model`]).
    pub fn billed(mut self, billed: bool) -> Holds {
        self.billed = billed;
        self
    }

    /// The same, parsing a message's text once and copying its value after,
    /// through `memo` (which other holds may share: see [`super::values`]).
    pub fn with_value_memo(mut self, memo: Arc<ValueMemo>) -> Holds {
        self.values = Some(memo);
        self
    }

    /// The same, remembering conversations up to `max_bytes` of memory.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Holds {
        self.max_bytes = max_bytes;
        self
    }

    /// The prices a request for `model` pays.
    pub fn prices(&self, model: Option<&str>) -> CachePrices {
        model
            .and_then(|m| self.catalog.find(m).ok())
            .and_then(|f| CachePrices::of(&f.model))
            .unwrap_or(CachePrices::DEFAULT)
    }

    /// Cleans a request of a conversation, held or again (see [`Holds`]),
    /// and remembers what went on: first the requests that came before it
    /// and these holds did not see (see [`Holds::catch_up`]), so that what
    /// goes on is what one proxy that saw every request forwards.
    pub(super) fn clean(
        &self,
        engine: &Engine,
        list: &Listed,
        (original, known): (Cow<'_, Document>, &Came),
        format: Format,
        tok: &Tokenizer,
        model: Option<&str>,
    ) -> Result<Outcome, CleanError> {
        // How far the hold it continues saw it; else where the client
        // changed a conversation held, found before the replay continues
        // it another way.
        let (seen, changed_at) = match self.held.lock().as_deref() {
            Ok(map) => match continued(map, list) {
                Ok((_, h)) => (h.input.len(), None),
                Err(at) => (0, at),
            },
            Err(_) => (0, None),
        };
        let call = Call {
            engine,
            format,
            tok,
            model,
        };
        let (replayed, caught_up) = self.catch_up(&call, list, seen);
        let mut out = self.clean_one(&call, list, (original, known))?;
        out.changed_at = out.changed_at.or(changed_at);
        if replayed > 0 {
            // This process did not forward the request before it: what
            // the provider's cache holds is not known here.
            out.continuation = None;
        }
        if let Some(note) = caught_up {
            out.cache = Some(match out.cache {
                Some(c) => format!("{c} ({note})"),
                None => note,
            });
        }
        Ok(out)
    }

    /// The most earlier requests [`Holds::catch_up`] replays for one
    /// request: past it, the conversation is cleaned from its start (a
    /// conversation of more model calls than this, new to a proxy, then
    /// misses the cache once).
    pub const CATCH_UP: usize = 256;

    /// The most [`Holds::catch_up`] reads for one request, the earlier
    /// requests' messages added up (256 MiB): a client cannot make one
    /// request cost much more than cleaning its body a few hundred times
    /// over. A real session of 188 calls and 390 KB replays 37 MB, in
    /// about 2.4 s, once per conversation a proxy has not seen.
    pub const CATCH_UP_BYTES: usize = 256 << 20;

    /// Replays through these holds, unanswered, the requests the
    /// conversation of `list` sent before it that they did not see: a
    /// request of an agent's conversation is every message up to a turn of
    /// the model, so each turn of the model in `list` after what the holds
    /// saw last (all of them, when they saw nothing) closes an earlier
    /// request. Holding and cleaning are decided from the requests alone
    /// (tokens, prices, the rent), so a proxy restarted, or a replica
    /// behind a load balancer that saw every other request, forwards the
    /// bytes one proxy that saw each request would: the holds are a memo
    /// of that sequence, not a condition of the cache's hits. `seen`: how
    /// many messages of `list` the hold it continues saw (0 without one).
    /// How many it replayed, and what to say of it (that there were too
    /// many).
    fn catch_up(&self, call: &Call, list: &Listed, seen: usize) -> (usize, Option<String>) {
        let Call { engine, format, .. } = *call;
        // A recipe that asks a model for summaries is not replayed: each
        // replay would be a call to the model, and its summaries differ
        // from one process to the next anyway.
        if !engine.deterministic() {
            return (0, None);
        }
        let turns: Vec<usize> = (seen + 1..list.items.len())
            .filter(|&b| turn_starts(format, &list.items, b))
            .collect();
        if turns.is_empty() {
            return (0, None);
        }
        if turns.len() > Self::CATCH_UP {
            return (
                0,
                Some(format!(
                    "{} earlier requests unseen, more than the {} replayed: cleaned from the start",
                    turns.len(),
                    Self::CATCH_UP
                )),
            );
        }
        // What replaying them reads: each earlier request's messages.
        let mut before = 0usize;
        let mut upto = Vec::with_capacity(list.items.len() + 1);
        for item in &list.items {
            upto.push(before);
            before += json_len(item);
        }
        let replayed_bytes: usize = turns.iter().map(|&b| upto[b]).sum();
        if replayed_bytes > Self::CATCH_UP_BYTES {
            return (0, Some(format!(
                "{} earlier requests unseen, {} MiB to replay, more than {} MiB: cleaned from the start",
                turns.len(),
                replayed_bytes >> 20,
                Self::CATCH_UP_BYTES >> 20
            )));
        }
        let mut replayed = 0;
        for b in turns {
            let Some((earlier, doc)) = list.before(b, format) else {
                break;
            };
            if self
                .clean_one(call, &earlier, (Cow::Owned(doc), &Came::new()))
                .is_err()
            {
                break;
            }
            replayed += 1;
        }
        let note = (replayed > 0).then(|| format!("{replayed} earlier requests replayed first"));
        (replayed, note)
    }

    /// Cleans one request, held or again, and remembers what went on.
    fn clean_one(
        &self,
        call: &Call,
        list: &Listed,
        (original, known): (Cow<'_, Document>, &Came),
    ) -> Result<Outcome, CleanError> {
        let Call {
            engine,
            format,
            tok,
            model,
        } = *call;
        let (prior_id, prior, changed_at) = match self.take(list) {
            Ok((id, h)) => (Some(id), Some(h), None),
            Err(at) => (None, None, at),
        };
        let held = match &prior {
            Some(p) => self.held_body(p, list, (&original, known), format, tok)?,
            None => None,
        };
        let nothing_new = prior
            .as_ref()
            .is_some_and(|p| p.input.len() == list.items.len());
        // A budget in billed tokens covers the tool definitions too.
        let extras = match (
            self.billed && self.limit.is_some(),
            original.conversations.first(),
        ) {
            (true, Some(c)) => c
                .envelope
                .as_ref()
                .map_or(0, |e| crate::fit::extras(tok, e)),
            _ => 0,
        };
        // The tokens of each message as it came, when the hold knows them.
        let mut came = match (&prior, &held) {
            (Some(p), Some(h)) if p.input_sizes.len() == p.input.len() => {
                let mut sizes = p.input_sizes.clone();
                sizes.extend_from_slice(&h.sizes[p.sizes.len()..]);
                Some(sizes)
            }
            _ => None,
        };
        let choice = match (prior.as_ref(), held) {
            (Some(p), Some(h)) if nothing_new && self.fits(&h, format, model, extras) => Choice {
                rent: p.rent,
                measured: p.measured,
                arrival: p.arrival,
                ..h
            },
            (Some(p), Some(h)) if self.fits(&h, format, model, extras) => {
                self.held_or_again(call, p, h, (list, original, known), &mut came)?
            }
            (prior, held) => {
                let (again, check) =
                    self.again(engine, list, (original, known), format, tok, prior)?;
                let mut again = match check {
                    Some(check) => self.checked(again, check, list, prior, tok)?,
                    None => again,
                };
                again.out.cache = match (prior, held) {
                    (None, _) => None,
                    (Some(_), None) => Some(
                        "cleaned again: the previous body, extended, would not be valid".into(),
                    ),
                    (Some(_), Some(_)) => {
                        Some("cleaned again: the previous body, extended, passes the budget".into())
                    }
                };
                again.arrival = prior.is_some_and(|p| p.arrival);
                again
            }
        };
        let head = head_of(&list.body, prior.as_ref(), tok);
        let choice = self.gate(
            choice,
            (list, &mut came),
            prior.as_ref(),
            (format, model, extras),
            head.1,
            tok,
        );
        let continuation = prior.as_ref().map(|p| continuation_of(p, &choice, head));
        let conversation = prior.as_ref().map(|p| p.conversation);
        let mut out = self.remember(list, choice, came, prior_id, (conversation, head));
        out.continuation = continuation;
        out.changed_at = changed_at;
        Ok(out)
    }

    /// A conversation whose held body fits: held, or cleaned again when
    /// that pays. What cleaning again would take out is measured by
    /// cleaning the conversation from its start, but not on every request
    /// (see [`Measured`]).
    fn held_or_again(
        &self,
        call: &Call,
        p: &Held,
        h: Choice,
        (list, original, known): (&Listed, Cow<'_, Document>, &Came),
        came: &mut Option<Vec<usize>>,
    ) -> Result<Choice, CleanError> {
        let (engine, format, tok) = (call.engine, call.format, call.tok);
        let prices = self.prices(call.model);
        if let Some(rent) = self.estimated(p, &h, prices) {
            let mut h = h;
            h.out.cache = h.out.cache.map(|c| {
                format!(
                    "{c}; the rent estimated from what cleaning again took out when last measured"
                )
            });
            return Ok(Choice {
                rent,
                measured: p.measured.map(|m| Measured {
                    estimated: m.estimated + 1,
                    ..m
                }),
                arrival: p.arrival,
                ..h
            });
        }
        let (again, check) = self.again(engine, list, (original, known), format, tok, Some(p))?;
        let measured = Measured::of(p, &h, again.priced(), prices);
        let paid = p.rent + measured.correction(p.measured, prices);
        let arrival = p.arrival || again.changes_only_after(&h, p.hashes.len());
        let hold = |h: Choice, again: &Choice| Choice {
            rent: Self::rent(paid, &h, again.priced(), prices),
            measured: Some(measured),
            ..h
        };
        let mut chosen = match check {
            None => self.cheaper((p, paid), h, again, prices, hold),
            Some(check) => {
                // Held whether the body cleaned again passes its check or
                // not (then what came would go in its place): it is not
                // read back.
                let held_either_way = !self.pays((p, paid), &h, again.priced(), prices) && {
                    let sizes = came.get_or_insert_with(|| {
                        sizes_after(&list.items, &list.hashes, Some(p), tok)
                    });
                    let came = Priced {
                        hashes: &list.hashes,
                        sizes,
                    };
                    !self.pays((p, paid), &h, came, prices)
                };
                if held_either_way {
                    hold(h, &again)
                } else {
                    let again = self.checked(again, check, list, Some(p), tok)?;
                    self.cheaper((p, paid), h, again, prices, hold)
                }
            }
        };
        chosen.arrival = arrival;
        Ok(chosen)
    }

    /// The rent a held body goes on with, without cleaning the
    /// conversation again to measure it, when the last measure still
    /// holds (see [`Measured`]); `None` when it is time to measure again.
    fn estimated(&self, p: &Held, h: &Choice, prices: CachePrices) -> Option<f64> {
        let m = p.measured?;
        if p.arrival || m.saved == 0 || h.tokens() > m.tokens + m.tokens / Measured::AGAIN_AFTER {
            return None;
        }
        let saved = m.saved as f64 * prices.read;
        // Measured again while the estimate is still short of paying (by
        // half the premium), so the rule decides on what it finds.
        let near = match self.horizon {
            Some(horizon) => m.premium < 2.0 * horizon * saved,
            None => m.premium <= 2.0 * (p.rent + saved),
        };
        (!near).then_some(p.rent + saved)
    }

    fn fits(&self, c: &Choice, format: Format, model: Option<&str>, extras: usize) -> bool {
        self.limit.is_none_or(|limit| {
            let limit = if self.billed {
                crate::fit::scale_for_model(format, model, extras).counted(limit)
            } else {
                limit
            };
            c.out
                .reports
                .first()
                .is_none_or(|r| r.after.tokens <= limit)
        })
    }

    /// The held body, or the one cleaned again when that costs less within
    /// the horizon.
    fn cheaper(
        &self,
        (prior, paid): (&Held, f64),
        held: Choice,
        again: Choice,
        prices: CachePrices,
        hold: impl FnOnce(Choice, &Choice) -> Choice,
    ) -> Choice {
        if self.pays((prior, paid), &held, again.priced(), prices) {
            let mut again = again;
            again.out.cache = Some(match self.horizon {
                Some(_) => "cleaned again: it costs less at the model's cache prices".into(),
                None => format!(
                    "cleaned again: the rent paid for what it takes out ({}) reached the cache write it costs",
                    prices.worth(Self::rent(paid, &held, again.priced(), prices))
                ),
            });
            again
        } else {
            hold(held, &again)
        }
    }

    /// Never pay more: the body as it came in place of `choice` (held or
    /// cleaned) when it costs less over the calls expected still to come,
    /// as many as the conversation has had (its turns of the model; the
    /// fixed horizon when one is given), at
    /// the model's prices, a body under the provider's minimum cacheable
    /// length paying the input price on every call (Anthropic: 1,024
    /// tokens, 2,048 or 4,096 for some models; OpenAI: 1,024). A cleaning
    /// that takes a conversation under the minimum can cost more than
    /// sending it whole from the cache. Decided from the requests alone,
    /// as holding is (no clock: a cache's lifetime does not count), only
    /// where what came fits the recipe's budget, and only for a model whose
    /// prices the table knows.
    fn gate(
        &self,
        choice: Choice,
        (list, came): (&Listed, &mut Option<Vec<usize>>),
        prior: Option<&Held>,
        (format, model, extras): (Format, Option<&str>, usize),
        head: usize,
        tok: &Tokenizer,
    ) -> Choice {
        let came_tokens = choice.out.reports.first().map(|r| r.before.tokens);
        let fits = came_tokens.is_some_and(|tokens| {
            self.limit.is_none_or(|limit| {
                tokens
                    <= if self.billed {
                        crate::fit::scale_for_model(format, model, extras).counted(limit)
                    } else {
                        limit
                    }
            })
        });
        // Weighed at a model's own prices only: for one the table does not
        // know, whether and from what length its provider caches is not
        // known either (a local model caches nothing).
        let prices = self.prices(model);
        if choice.out.body.is_none() || !fits || prices == CachePrices::DEFAULT {
            return choice;
        }
        let minimum = super::cache::Rule::of(format, model).minimum() as usize;
        // A fixed horizon (`--cache-horizon`) is the calls to come.
        let calls = self.horizon.unwrap_or_else(|| {
            (1..list.items.len())
                .filter(|&b| turn_starts(format, &list.items, b))
                .count() as f64
                + 1.0
        });
        let expected = |c: Priced| {
            let tokens = c.tokens();
            if tokens + head < minimum {
                return (1.0 + calls) * (tokens + head) as f64 * prices.input;
            }
            let now = prior.map_or(tokens as f64 * prices.write, |p| c.cost(p, prices));
            now + calls * tokens as f64 * prices.read
        };
        // The tokens of each message as it came: known to the hold, or
        // counted past what the previous body shares with it.
        let sizes = came.get_or_insert_with(|| sizes_after(&list.items, &list.hashes, prior, tok));
        let as_came = Priced {
            hashes: &list.hashes,
            sizes,
        };
        let (kept, sent) = (expected(as_came), expected(choice.priced()));
        if kept >= sent {
            return choice;
        }
        let under = choice.tokens() + head < minimum;
        // What the recipe would have done stays in the report, as with
        // --dry-run.
        let cache = Some(format!(
                "as it came: the body cleaned would cost more over the {calls} calls expected ({} against {}{})",
                prices.worth(sent),
                prices.worth(kept),
                if under {
                    format!(": under the model's cache minimum of {minimum} tokens")
                } else {
                    String::new()
                }
            ));
        let out = Outcome {
            kept_because: Some("cleaning it would cost more (see cache)".into()),
            extras: choice.out.extras,
            ..Outcome::of(None, choice.out.reports, cache)
        };
        Choice {
            out,
            items: list.items.clone(),
            packed: None,
            hashes: list.hashes.clone(),
            sizes: sizes.clone(),
            rent: choice.rent,
            measured: choice.measured,
            arrival: choice.arrival,
            said: None,
        }
    }

    /// Whether sending `other` in place of the held body pays: by rent or
    /// buy, or within the fixed horizon.
    fn pays(
        &self,
        (prior, paid): (&Held, f64),
        held: &Choice,
        other: Priced,
        prices: CachePrices,
    ) -> bool {
        let saved = held.tokens().saturating_sub(other.tokens()) as f64 * prices.read;
        let premium = other.cost(prior, prices) - held.priced().cost(prior, prices);
        match self.horizon {
            Some(horizon) => premium < horizon * saved,
            None => premium < 0.0 || (saved > 0.0 && premium <= paid + saved),
        }
    }

    /// The rent a held body goes on with: what was paid, and what this
    /// request pays for the tokens `other` would have taken out.
    fn rent(paid: f64, held: &Choice, other: Priced, prices: CachePrices) -> f64 {
        paid + held.tokens().saturating_sub(other.tokens()) as f64 * prices.read
    }

    /// The conversation cleaned from the start by the recipe, and what is
    /// left to check of its body ([`Check`]) before it may go on.
    fn again(
        &self,
        engine: &Engine,
        list: &Listed,
        (original, known): (Cow<'_, Document>, &Came),
        format: Format,
        tok: &Tokenizer,
        prior: Option<&Held>,
    ) -> Result<(Choice, Option<Check>), CleanError> {
        let (out, check) = decide_unchecked(engine, original.into_owned(), format, tok, known)?;
        Ok((
            choice_of(out, list, prior, (tok, self.values.as_deref())),
            check,
        ))
    }

    /// `again` once its body is checked: what came in its place if the
    /// check fails.
    fn checked(
        &self,
        again: Choice,
        check: Check,
        list: &Listed,
        prior: Option<&Held>,
        tok: &Tokenizer,
    ) -> Result<Choice, CleanError> {
        let out = check.run(again.out)?;
        if out.body.is_some() {
            return Ok(Choice { out, ..again });
        }
        Ok(choice_of(out, list, prior, (tok, self.values.as_deref())))
    }

    /// What the conversation was forwarded as last time, when this request
    /// extends what came then.
    /// The hold this request continues: among those of its opening, the one
    /// whose request is the longest prefix of this one's; with its id.
    fn take(&self, list: &Listed) -> Result<(u64, Held), Option<usize>> {
        let map = self.held.lock().map_err(|_| None)?;
        continued(&map, list).map(|(id, h)| (id, h.clone()))
    }

    /// The previous body with the new messages appended as they came, when
    /// it reads and is no worse for the provider than the body that came.
    fn held_body(
        &self,
        prior: &Held,
        list: &Listed,
        (original, known): (&Document, &Came),
        format: Format,
        tok: &Tokenizer,
    ) -> Result<Option<Choice>, CleanError> {
        let new = &list.items[prior.input.len()..];
        let mut hashes = prior.hashes.clone();
        hashes.extend(&list.hashes[prior.input.len()..]);
        let mut sizes = prior.sizes.clone();
        sizes.extend(self::sizes(new, tok));
        if hashes == list.hashes {
            // What came (each message held is the client's, markers and
            // all): valid as it is, nothing to write or read again.
            let Some(conv) = original.conversations.first() else {
                return Ok(None);
            };
            let tokens = tok.count_conversation(conv);
            let report = held_report(format, (list.items.len(), tokens), conv, tokens);
            let out = Outcome::of(None, vec![report], Some(held_cache(new.len())));
            return Ok(Some(Choice::new(out, list.items.clone(), hashes, sizes)));
        }
        let (mut items, mut texts) =
            with_client_markers(&prior.output, &prior.hashes, list, self.values.as_deref());
        items.extend(new.iter().map(|v| Cow::Borrowed(&**v)));
        texts.resize(items.len(), None);
        // Written as `serde_json` writes the body, each item held as it
        // wrote it before copied rather than written again; then the body
        // is read back: through the records the request as it came was
        // read with when it was (replay's), else from its value without a
        // copy of it.
        let (bytes, packed) = held_bytes(&list.body, list.key, &items, &texts)
            .map_err(|e| CleanError::Write(e.into()))?;
        let doc = read_held(list, items, &bytes, format, original.style.recall.as_ref());
        let Some(mut report) =
            doc.and_then(|d| checked_report(list, (original, known, &d), format, tok))
        else {
            return Ok(None);
        };
        // The body before, extended: what it changed, it changes again.
        report.changes.clone_from(&prior.said.changes);
        report.lost.clone_from(&prior.said.lost);
        let out = Outcome::of(Some(bytes), vec![report], Some(held_cache(new.len())));
        Ok(Some(Choice {
            packed: Some(packed),
            said: Some(Arc::clone(&prior.said)),
            ..Choice::new(out, Vec::new(), hashes, sizes)
        }))
    }

    /// Remembers what a conversation went on as, and hands back its
    /// outcome; the conversations used least recently are forgotten past
    /// the capacity or the weight.
    /// Remembers what went on, in the place of the hold it continued
    /// (`prior`), or as a new hold of its opening (the one of that opening
    /// used least lately goes past [`PER_OPENING`]).
    fn remember(
        &self,
        list: &Listed,
        mut c: Choice,
        came: Option<Vec<usize>>,
        prior: Option<u64>,
        (conversation, head): (Option<u64>, (u64, usize)),
    ) -> Outcome {
        let Ok(mut memory) = self.held.lock() else {
            return c.out;
        };
        let conversation = conversation.unwrap_or_else(|| {
            memory.conversations += 1;
            memory.conversations
        });
        c.out.conversation = Some(conversation);
        if let Some(id) = prior {
            memory.forget(id);
        }
        let alike = memory.by_opening.get(&list.id).map_or(0, Vec::len);
        if alike >= PER_OPENING {
            let oldest = memory.by_opening[&list.id][0];
            memory.forget(oldest);
        }
        let input_sizes = came
            .or_else(|| (c.hashes == list.hashes).then(|| c.sizes.clone()))
            .unwrap_or_default();
        // What the body forwarded changed of what came (nothing when it
        // went as it came).
        let said = match (&c.out.body, c.said.take(), c.out.reports.first()) {
            (None, ..) => Arc::default(),
            (Some(_), Some(said), _) => said,
            (Some(_), None, Some(r)) => Arc::new(Said {
                changes: r.changes.clone(),
                lost: r.lost.clone(),
            }),
            (Some(_), None, None) => Arc::default(),
        };
        let mut entry = Held {
            said,
            input: list.hashes.clone(),
            input_sizes,
            output: c.packed.take().unwrap_or_else(|| Packed::of(&c.items)),
            hashes: c.hashes,
            sizes: c.sizes,
            bytes: 0,
            opening: list.id,
            at: std::time::Instant::now(),
            conversation,
            came: c.out.reports.first().map_or(0, |r| r.before.tokens),
            head,
            rent: c.rent,
            measured: c.measured,
            arrival: c.arrival,
        };
        entry.bytes = entry.weight();
        if entry.bytes > self.max_bytes {
            return c.out;
        }
        let id = memory.next;
        memory.next += 1;
        memory.bytes += entry.bytes;
        memory.held.insert(id, entry);
        memory.by_opening.entry(list.id).or_default().push(id);
        memory.order.push_back(id);
        while memory.order.len() > self.capacity || memory.bytes > self.max_bytes {
            let Some(old) = memory.order.front().copied() else {
                break;
            };
            memory.forget(old);
        }
        c.out
    }
}

/// What the log says of a held body read back (`held`), when it is no
/// worse for the provider than what came (`original`).
fn checked_report(
    list: &Listed,
    (original, known, held): (&Document, &Came, &Document),
    format: Format,
    tok: &Tokenizer,
) -> Option<crate::changes::ConversationReport> {
    let conv = held.conversations.first()?;
    let provider = Provider::for_format(format);
    let before = known.problems(original, format).first();
    if worse(
        before.map_or(&[][..], Vec::as_slice),
        &validate(conv, format, provider),
    )
    .is_some()
    {
        return None;
    }
    let before_tokens = original
        .conversations
        .first()
        .map_or(0, |c| tok.count_conversation(c));
    let after_tokens = tok.count_conversation(conv);
    Some(held_report(
        format,
        (list.items.len(), before_tokens),
        conv,
        after_tokens,
    ))
}

/// The messages held, their `cache_control` markers as the client put
/// them now: a message the same as the client's at its place is the
/// client's, markers and all; any other loses the markers it had when it
/// was forwarded (the client moved them on), so a held body carries no
/// more breakpoints than the request that came.
/// Only the messages not the client's are parsed from what was held.
/// Beside each, its text as held where that is how `serde_json` writes it
/// (see [`held_bytes`]): a held text `serde_json` wrote, of a message
/// unchanged, or of the client's message when neither names a
/// `cache_control` (the two then differ in nothing the hash leaves out).
fn with_client_markers<'a>(
    held: &'a Packed,
    hashes: &[u64],
    list: &'a Listed,
    memo: Option<&ValueMemo>,
) -> (Vec<Cow<'a, Value>>, Vec<Option<&'a [u8]>>) {
    let n = held.ends.len();
    let (mut items, mut texts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let text = held.text_of(i);
        if list.hashes.get(i).is_some_and(|h| Some(h) == hashes.get(i)) {
            let item = &list.items[i];
            let same = held.canonical && !names_marker_text(text) && !names_marker(item);
            texts.push(same.then_some(text));
            items.push(Cow::Borrowed(&**item));
            continue;
        }
        let item = held.value(i, memo);
        match super::unmarked::unmarked(&item) {
            Cow::Owned(bare) => {
                texts.push(None);
                items.push(Cow::Owned(bare));
            }
            Cow::Borrowed(_) => {
                texts.push(held.canonical.then_some(text));
                items.push(Cow::Owned(item));
            }
        }
    }
    (items, texts)
}

/// Whether a value has a `cache_control` key anywhere, live or `null`.
fn names_marker(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "cache_control" || names_marker(v)),
        Value::Array(items) => items.iter().any(names_marker),
        _ => false,
    }
}

/// Whether a text `serde_json` wrote may name a `cache_control` key (it
/// writes every key as it is, unescaped).
fn names_marker_text(text: &[u8]) -> bool {
    memchr::memmem::find(text, b"\"cache_control\"").is_some()
}

/// A held body's bytes, as `serde_json::to_vec` writes `body` with the list
/// of `items` at `key` added last, and its items as texts: an item given
/// its text (`texts[i]`, as `serde_json` wrote the same value before) is
/// copied, not written again.
fn held_bytes(
    body: &serde_json::Map<String, Value>,
    key: &str,
    items: &[Cow<'_, Value>],
    texts: &[Option<&[u8]>],
) -> serde_json::Result<(Vec<u8>, Packed)> {
    debug_assert!(!body.contains_key(key) && texts.len() == items.len());
    let mut out = serde_json::to_vec(body)?;
    out.pop(); // its closing brace
    if !body.is_empty() {
        out.push(b',');
    }
    serde_json::to_writer(&mut out, key)?;
    out.extend_from_slice(b":[");
    let mut text = Vec::new();
    let mut ends = Vec::with_capacity(items.len());
    for (i, (item, given)) in items.iter().zip(texts).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let start = out.len();
        match given {
            Some(t) => out.extend_from_slice(t),
            None => serde_json::to_writer(&mut out, item.as_ref())?,
        }
        text.extend_from_slice(&out[start..]);
        ends.push(text.len());
    }
    out.extend_from_slice(b"]}");
    let packed = Packed {
        text: text.into(),
        ends: ends.into(),
        canonical: true,
    };
    Ok((out, packed))
}

/// The body of `out` as a choice: its messages, their hashes and tokens
/// (those of what came when it goes on as it came).
fn choice_of(
    out: Outcome,
    list: &Listed,
    prior: Option<&Held>,
    (tok, memo): (&Tokenizer, Option<&ValueMemo>),
) -> Choice {
    if let Some(c) = memo.and_then(|m| choice_of_text(&out, list, prior, (tok, m))) {
        let (hashes, sizes, packed) = c;
        return Choice {
            packed: Some(packed),
            ..Choice::new(out, Vec::new(), hashes, sizes)
        };
    }
    let listed = out.body.as_deref().and_then(|b| list_of_bytes(list.key, b));
    let (items, hashes) = match listed {
        Some(items) => {
            let hashes = items.iter().map(hash_of).collect();
            (items.into_iter().map(Arc::new).collect(), hashes)
        }
        None => (list.items.clone(), list.hashes.clone()),
    };
    let sizes = sizes_after(&items, &hashes, prior, tok);
    Choice::new(out, items, hashes, sizes)
}

/// The keys a provider caches before the messages, in a request of any
/// of the formats held.
const HEAD_KEYS: [&str; 6] = [
    "tools",
    "system",
    "instructions",
    "systemInstruction",
    "toolConfig",
    "tool_choice",
];

/// What a provider caches before a request's messages (`body`: the
/// request but its messages): the hash of its text and its tokens, taken
/// from `prior` when it is the same.
fn head_of(
    body: &serde_json::Map<String, Value>,
    prior: Option<&Held>,
    tok: &Tokenizer,
) -> (u64, usize) {
    let text: String = HEAD_KEYS
        .iter()
        .filter_map(|k| body.get(*k))
        .map(|v| super::unmarked::unmarked(v).to_string())
        .collect();
    let hash = hash_text(&text);
    match prior {
        Some(p) if p.head.0 == hash => p.head,
        _ => (hash, tok.count_text(&text)),
    }
}

/// What the log says of a held body.
fn held_cache(appended: usize) -> String {
    format!("held: the previous body, {appended} message(s) appended")
}

/// The report of a held body `conv` of `after` tokens: its tokens before
/// and after, nothing done.
fn held_report(
    format: Format,
    (messages, tokens): (usize, usize),
    conv: &crate::transcript::Conversation,
    after: usize,
) -> crate::changes::ConversationReport {
    let count = |messages, tokens| crate::changes::Count { messages, tokens };
    let mut flags = serde_json::Map::new();
    flags.insert("held".into(), Value::Bool(true));
    crate::changes::ConversationReport {
        source: "request".into(),
        index: 0,
        format: format.name().into(),
        before: count(messages, tokens),
        after: count(conv.messages.len(), after),
        changes: Vec::new(),
        notes: Vec::new(),
        lost: Vec::new(),
        steps: Vec::new(),
        flags,
        delta: None,
    }
}

/// [`choice_of`] from the text of the body of `out` (written, valid
/// JSON), its messages' hashes and values through `memo`: each one's
/// hash, the tokens of those after what `prior` forwarded, and their
/// texts. `None` without a body.
fn choice_of_text(
    out: &Outcome,
    list: &Listed,
    prior: Option<&Held>,
    (tok, memo): (&Tokenizer, &ValueMemo),
) -> Option<(Vec<u64>, Vec<usize>, Packed)> {
    let texts = list_texts(list.key, out.body.as_deref()?)?;
    let hashes = texts
        .iter()
        .map(|t| memo.hash(t.as_bytes(), hash_of))
        .collect::<Option<Vec<u64>>>()?;
    let shared = prior.map_or(0, |p| shared(&p.hashes, &hashes));
    let mut sizes = prior.map_or_else(Vec::new, |p| p.sizes[..shared].to_vec());
    for t in &texts[shared..] {
        sizes.push(memo.map(t.as_bytes(), |v| size_of(v, tok))?);
    }
    Some((hashes, sizes, Packed::of_texts(&texts)))
}

fn list_of_bytes(key: &str, body: &[u8]) -> Option<Vec<Value>> {
    let mut map: serde_json::Map<String, Value> = serde_json::from_slice(body).ok()?;
    match map.remove(key)? {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// The texts of the items of the list at `key` of `body`, a body written
/// (valid JSON): split at the speed of finding its quotes.
fn list_texts<'a>(key: &str, body: &'a [u8]) -> Option<Vec<&'a str>> {
    debug_assert!(serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok());
    let text = std::str::from_utf8(body).ok()?;
    crate::format::split::entries_and_list(text, key)?.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Options;
    use crate::format::{read_document, ReadOptions};
    use crate::inflight::clean_request;
    use crate::ops::compact_tools::CompactSpec;
    use crate::ops::Pipeline;
    use crate::tokens::Encoding;
    use serde_json::json;

    /// A held body is written as `serde_json` writes it, each item held as
    /// it wrote it copied: the client's message without a marker, and a
    /// cleaned one unchanged. A message that names a `cache_control` (live,
    /// or `null`) on either side, or a text the engine's writer spelled, is
    /// written again.
    #[test]
    fn a_held_body_copies_only_what_serde_json_wrote_of_the_same_value() {
        let marker = json!({"type": "ephemeral"});
        let held_items = vec![
            json!({"role": "user", "content": "fix the test"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "x\u{1}y", "cache_control": marker}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "[Tool: 3 lines]"}]}),
            json!({"role": "user", "content": "n\u{e9}e"}),
            json!({"role": "assistant", "content": 1E5}),
        ];
        // The client now: its first message as held, its second without
        // the marker (moved on), its third as it came (not the cleaned
        // one), its fourth with a `null` marker, its fifth as held.
        let came = [
            held_items[0].clone(),
            json!({"role": "assistant", "content": [{"type": "text", "text": "x\u{1}y"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "a long result"}]}),
            json!({"role": "user", "content": "n\u{e9}e", "cache_control": null}),
            held_items[4].clone(),
            json!({"role": "user", "content": "next", "cache_control": marker}),
        ];
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!("m"));
        body.insert("stream".into(), json!(true));
        let list = Listed {
            key: "messages",
            body: body.clone(),
            hashes: came.iter().map(hash_of).collect(),
            items: came.iter().cloned().map(Arc::new).collect(),
            id: 0,
        };
        let hashes: Vec<u64> = held_items.iter().map(hash_of).collect();
        for canonical in [true, false] {
            let held = Packed {
                canonical,
                ..Packed::of(&held_items)
            };
            let (mut items, mut texts) = with_client_markers(&held, &hashes, &list, None);
            let copied: Vec<bool> = texts.iter().map(Option::is_some).collect();
            let expected = if canonical {
                // The client's first and fifth; the second's marker moved;
                // the third is the cleaned one, unmarked; the fourth names
                // a `cache_control`.
                vec![true, false, true, false, true]
            } else {
                vec![false; 5]
            };
            assert_eq!(copied, expected);
            items.push(Cow::Borrowed(&came[5]));
            texts.push(None);
            let (bytes, packed) = held_bytes(&body, "messages", &items, &texts).unwrap();
            let mut whole = body.clone();
            let values = items.iter().map(|v| v.clone().into_owned()).collect();
            whole.insert("messages".into(), Value::Array(values));
            assert_eq!(
                String::from_utf8(bytes).unwrap(),
                serde_json::to_string(&whole).unwrap()
            );
            assert_eq!(packed.ends.len(), items.len());
            for (i, item) in items.iter().enumerate() {
                assert_eq!(
                    packed.text_of(i),
                    serde_json::to_vec(item.as_ref()).unwrap()
                );
            }
        }
        let (bytes, _) = held_bytes(
            &serde_json::Map::new(),
            "messages",
            &[Cow::Owned(json!(1))],
            &[None],
        )
        .unwrap();
        assert_eq!(bytes, br#"{"messages":[1]}"#);
    }

    fn compact() -> Engine {
        let mut p = Pipeline::new();
        p.push(CompactSpec {
            max_result_tokens: 50,
            keep_last: 1,
            ..CompactSpec::default()
        });
        Engine::new(Options {
            pipeline: p,
            ..Options::default()
        })
    }

    fn words(n: usize, w: &str) -> String {
        (0..n).map(|i| format!("{w}{i} ")).collect()
    }

    /// A request of an agent: the task, then each call and its result.
    fn body(steps: &[(&str, usize)]) -> Vec<u8> {
        let mut msgs = vec![json!({"role": "user", "content": "fix the failing test"})];
        for (k, (text, result)) in steps.iter().enumerate() {
            let id = format!("call_{k}");
            msgs.push(json!({"role": "assistant", "content": text, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            msgs.push(
                json!({"role": "tool", "tool_call_id": id, "content": words(*result, "line")}),
            );
        }
        serde_json::to_vec(&json!({"model": "gpt-4.1", "messages": msgs})).unwrap()
    }

    /// A held body is read back from its value as from its text: on every
    /// fixture a request format reads, each conversation, its problems and
    /// its tokens are the same.
    #[test]
    fn a_held_body_read_back_from_its_value_is_the_one_read_from_its_text() {
        use crate::inflight::tests::{fixture_files, REQUEST_FORMATS};
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let mut compared = 0;
        for path in fixture_files() {
            let Ok(Value::Object(body)) =
                serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap())
            else {
                continue;
            };
            let bytes = serde_json::to_vec(&body).unwrap();
            for format in REQUEST_FORMATS {
                let read = ReadOptions {
                    from: Some(format),
                    ..ReadOptions::default()
                };
                let Ok(text) = read_document("request", bytes.clone(), &read) else {
                    continue;
                };
                let name = format!("{} as {}", path.display(), format.name());
                let value = read_back(body.clone(), &bytes, format).expect(&name);
                let (a, b) = (&value.conversations[0], &text.conversations[0]);
                // Their origin's seal (a hash of the text a message was
                // read from, for writing it back) is the one difference.
                let unsealed = |c: &crate::transcript::Conversation| {
                    let mut m = c.messages.clone();
                    m.iter_mut()
                        .filter_map(|m| m.origin.as_mut())
                        .for_each(|o| o.seal = 0);
                    m
                };
                assert_eq!(unsealed(a), unsealed(b), "{name}");
                let provider = Provider::for_format(format);
                assert_eq!(
                    format!("{:?}", validate(a, format, provider)),
                    format!("{:?}", validate(b, format, provider)),
                    "{name}"
                );
                assert_eq!(
                    tok.count_conversation(a),
                    tok.count_conversation(b),
                    "{name}"
                );
                compared += 1;
            }
        }
        assert!(compared >= 20, "{compared} request bodies");
    }

    fn run(holds: &Holds, engine: &Engine, b: &[u8]) -> Outcome {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        clean_request(engine, Format::OpenAi, b, &tok, false, Some(holds)).unwrap()
    }

    #[test]
    fn the_tools_a_provider_caches_before_the_messages_are_counted_while_they_stay() {
        let engine = compact();
        let holds = Holds::new(None, Some(0), 16);
        let with_tools = |steps: &[(&str, usize)], tool: &str| {
            let mut v: Value = serde_json::from_slice(&body(steps)).unwrap();
            v["tools"] = json!([{"type": "function", "function": {"name": tool,
                "description": words(300, "describe"), "parameters": {"type": "object"}}}]);
            serde_json::to_vec(&v).unwrap()
        };
        run(&holds, &engine, &with_tools(&[("look", 10)], "read"));
        let same = run(
            &holds,
            &engine,
            &with_tools(&[("look", 10), ("next", 10)], "read"),
        );
        let head = same.continuation.unwrap().head;
        assert!(head > 300, "the tools, unchanged: {head} tokens");
        let changed = run(
            &holds,
            &engine,
            &with_tools(&[("look", 10), ("next", 10), ("more", 10)], "grep"),
        );
        assert_eq!(changed.continuation.unwrap().head, 0, "the tools changed");
    }

    #[test]
    fn what_moves_on_the_wire_call_to_call_is_not_the_conversation() {
        // OpenAI's `prompt_cache_key`, `user` and `metadata` may change from
        // call to call: the conversation is still held, and the held body
        // carries this request's values.
        let engine = compact();
        let holds = Holds::new(None, Some(0), 16);
        let with = |steps: &[(&str, usize)], key: &str| {
            let mut v: Value = serde_json::from_slice(&body(steps)).unwrap();
            v["prompt_cache_key"] = json!(key);
            v["user"] = json!(format!("user-{key}"));
            v["metadata"] = json!({"call": key});
            serde_json::to_vec(&v).unwrap()
        };
        // The first request's old result is compacted; the second is held
        // (the previous body, extended), which differs from what came.
        let first = run(&holds, &engine, &with(&[("look", 2000), ("next", 10)], "a"));
        assert!(first.body.is_some());
        let steps = [("look", 2000), ("next", 10), ("more", 10)];
        let out = run(&holds, &engine, &with(&steps, "b"));
        assert!(
            out.cache.as_deref().is_some_and(|c| c.starts_with("held")),
            "{:?}",
            out.cache
        );
        let v: Value = serde_json::from_slice(&out.body.expect("the held body")).unwrap();
        assert_eq!(
            (
                v["prompt_cache_key"].clone(),
                v["user"].clone(),
                v["metadata"]["call"].clone()
            ),
            (json!("b"), json!("user-b"), json!("b"))
        );
    }

    #[test]
    fn a_conversation_keeps_its_number_while_it_continues() {
        let engine = compact();
        let holds = Holds::new(None, Some(0), 16);
        let a1 = run(&holds, &engine, &body(&[("look", 10)]));
        let other = serde_json::to_vec(&json!({"model": "gpt-4.1",
            "messages": [{"role": "user", "content": "another task"}]}))
        .unwrap();
        let b1 = run(&holds, &engine, &other);
        let a2 = run(&holds, &engine, &body(&[("look", 10), ("next", 10)]));
        assert_eq!(a1.conversation, Some(1));
        assert_eq!(b1.conversation, Some(2));
        assert_eq!(a2.conversation, Some(1), "continued: the same number");
    }

    #[test]
    fn cleaning_again_happens_when_it_pays_and_not_before() {
        let engine = compact();
        let holds = Holds::new(None, Some(0), 16);
        // A large result, then a short step: compacting the large one
        // rewrites little and saves much on this very request.
        let first = run(&holds, &engine, &body(&[("look", 2000)]));
        assert!(first.body.is_none(), "the newest result is kept");
        let second = run(&holds, &engine, &body(&[("look", 2000), ("next", 10)]));
        assert!(second.body.is_some());
        assert!(second
            .cache
            .as_deref()
            .unwrap()
            .starts_with("cleaned again"));

        // A result followed by a long answer the cut would rewrite: held,
        // since cleaning again costs more on this request.
        let holds = Holds::new(None, Some(0), 16);
        let long = words(3000, "because");
        let answered = |more: bool| {
            let mut b: serde_json::Value = serde_json::from_slice(&body(&[("look", 200)])).unwrap();
            let msgs = b["messages"].as_array_mut().unwrap();
            msgs.push(json!({"role": "assistant", "content": long}));
            msgs.push(json!({"role": "user", "content": "go on"}));
            if more {
                msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
                msgs.push(json!({"role": "tool", "tool_call_id": "call_9", "content": "ok"}));
            }
            serde_json::to_vec(&b).unwrap()
        };
        assert!(run(&holds, &engine, &answered(false)).body.is_none());
        let out = run(&holds, &engine, &answered(true));
        assert!(out.body.is_none(), "{:?}", out.cache);
        assert!(out.cache.as_deref().unwrap().starts_with("held"));
        // The same with a horizon long enough for the saving to pay.
        let patient = Holds::new(None, Some(1000), 16);
        run(&patient, &engine, &answered(false));
        let out = run(&patient, &engine, &answered(true));
        assert!(out.body.is_some(), "{:?}", out.cache);
    }

    /// A result of 2,000 words the recipe would compact, a long answer a
    /// cleaning would write again, then `n` turns of a call each, its
    /// result `result(k)`.
    fn after_a_long_answer(n: usize, result: impl Fn(usize) -> String) -> Vec<u8> {
        let mut b: Value = serde_json::from_slice(&body(&[("look", 2000)])).unwrap();
        let msgs = b["messages"].as_array_mut().unwrap();
        msgs.push(json!({"role": "assistant", "content": words(3000, "because")}));
        for k in 0..n {
            msgs.push(json!({"role": "user", "content": format!("go on {k}")}));
            msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_x{k}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            msgs.push(
                json!({"role": "tool", "tool_call_id": format!("call_x{k}"), "content": result(k)}),
            );
        }
        serde_json::to_vec(&b).unwrap()
    }

    #[test]
    fn rent_or_buy_cleans_again_once_the_reads_paid_for_the_write() {
        // A result of 2,000 words the recipe would compact, then a long
        // answer a cleaning would write again: not worth it on one request,
        // worth it once enough requests have read the result.
        let engine = compact();
        let holds = Holds::new(None, None, 16);
        let turns = |n: usize| after_a_long_answer(n, |_| "ok".into());
        let caches: Vec<String> = (0..40)
            .map(|n| run(&holds, &engine, &turns(n)).cache.unwrap_or_default())
            .collect();
        let first = caches.iter().position(|c| c.starts_with("cleaned again"));
        // Held for a while (each request pays rent), then cleaned once,
        // saying why; held again after.
        let first = first.unwrap_or_else(|| panic!("never cleaned again: {caches:?}"));
        assert!(first > 2, "{caches:?}");
        assert!(
            caches[1..first].iter().all(|c| c.starts_with("held")),
            "{caches:?}"
        );
        assert!(caches[first].contains("rent paid"), "{}", caches[first]);
        assert!(caches[first + 1].starts_with("held"), "{caches:?}");
        // A fixed horizon of 0 never pays a premium: held throughout.
        let strict = Holds::new(None, Some(0), 16);
        let kept = (0..40).all(|n| {
            let out = run(&strict, &engine, &turns(n));
            n == 0 || out.cache.as_deref().is_some_and(|c| c.starts_with("held"))
        });
        assert!(kept);
    }

    /// Holds that parse each message's text once (replay's) forward what
    /// holds that parse it every time do, held or cleaned again, whatever
    /// their memo's bound.
    #[test]
    fn holds_with_a_memo_of_values_forward_what_holds_without_do() {
        let engine = compact();
        let turns = |n: usize| after_a_long_answer(n, |k| words(300 + k, "seen"));
        let holds = [
            Holds::new(None, None, 16),
            Holds::new(None, None, 16).with_value_memo(Arc::new(ValueMemo::new(64 << 20))),
            Holds::new(None, None, 16).with_value_memo(Arc::new(ValueMemo::new(4096))),
        ];
        let mut cleaned = 0;
        for n in 0..40 {
            let outs: Vec<(Option<Vec<u8>>, Option<String>)> = holds
                .iter()
                .map(|h| {
                    let out = run(h, &engine, &turns(n));
                    (out.body, out.cache)
                })
                .collect();
            assert!(outs[1] == outs[0] && outs[2] == outs[0], "request {n}");
            cleaned += usize::from(
                outs[0]
                    .1
                    .as_deref()
                    .is_some_and(|c| c.starts_with("cleaned again")),
            );
        }
        assert!(cleaned > 0);
    }

    #[test]
    fn a_held_conversation_is_measured_once_in_a_while_and_cleaned_on_a_measure() {
        // A result the recipe compacts once a later one comes, a long
        // answer a cleaning must write again, then many small steps: held,
        // most requests' rent estimated from the last measure (the
        // conversation is not cleaned from its start each time), and
        // cleaned again once it pays, on a measure.
        let engine = compact();
        let holds = Holds::new(None, None, 16);
        let mut b: Value = serde_json::from_slice(&body(&[("look", 1000)])).unwrap();
        b["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "assistant", "content": words(8000, "because")}));
        run(&holds, &engine, &serde_json::to_vec(&b).unwrap());
        // Each request the agent sends: up to its user's message, then up
        // to the result of the call the model made.
        let mut caches = Vec::new();
        for k in 0..60 {
            let id = format!("call_x{k}");
            let turn = [
                json!({"role": "user", "content": format!("go on {k}")}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}),
                json!({"role": "tool", "tool_call_id": id, "content": "ok"}),
            ];
            for (upto, m) in turn.into_iter().enumerate() {
                b["messages"].as_array_mut().unwrap().push(m);
                if upto != 1 {
                    let bytes = serde_json::to_vec(&b).unwrap();
                    caches.push(run(&holds, &engine, &bytes).cache.unwrap_or_default());
                }
            }
        }
        let estimated = caches
            .iter()
            .filter(|c| c.contains("rent estimated"))
            .count();
        assert!(estimated > 10, "{caches:?}");
        // Each decision to clean (cleaned again, or kept as it came since
        // that would cost more) was taken on a measure, never on an
        // estimate; one was cleaned again.
        let decided: Vec<&String> = caches.iter().filter(|c| !c.starts_with("held")).collect();
        assert!(
            decided.iter().any(|c| c.starts_with("cleaned again")),
            "{caches:?}"
        );
        assert!(
            decided.iter().all(|c| !c.contains("estimated")),
            "{caches:?}"
        );
    }

    #[test]
    fn a_recipe_that_changes_what_arrives_is_measured_on_every_request() {
        // Every result compacted as it comes (no result kept whole): each
        // request's newest result is cleaned at once, never held whole on
        // an estimate.
        let mut p = Pipeline::new();
        p.push(CompactSpec {
            max_result_tokens: 50,
            keep_last: 0,
            ..CompactSpec::default()
        });
        let engine = Engine::new(Options {
            pipeline: p,
            ..Options::default()
        });
        let holds = Holds::new(None, None, 16);
        let mut steps = vec![];
        for k in 0..30 {
            steps.push(("step", 400 + k));
            let out = run(&holds, &engine, &body(&steps));
            let cache = out.cache.clone().unwrap_or_default();
            assert!(!cache.contains("estimated"), "{k}: {cache}");
            let sent: Value = serde_json::from_slice(&out.body.expect("cleaned")).unwrap();
            let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
            assert!(
                !last["content"].as_str().unwrap().contains("line399"),
                "{k}: the newest result went whole: {cache}"
            );
        }
    }

    #[test]
    fn the_requests_estimated_are_charged_as_if_what_is_taken_out_grew_evenly() {
        let prices = CachePrices {
            read: 0.5,
            write: 1.0,
            input: 1.0,
        };
        let at = |saved, estimated| Measured {
            tokens: 1000,
            saved,
            premium: 10.0,
            estimated,
        };
        // Four requests charged 100 each; it was 300 at the fifth: they
        // are charged 140, 180, 220 and 260 (+400 tokens read).
        assert_eq!(at(300, 0).correction(Some(at(100, 4)), prices), 200.0);
        assert_eq!(at(300, 0).correction(None, prices), 0.0);
        // What is taken out never shrinks the rent paid.
        assert_eq!(at(50, 0).correction(Some(at(100, 4)), prices), 0.0);
    }

    #[test]
    fn a_conversation_the_recipe_never_changes_goes_on_byte_for_byte() {
        let engine = compact();
        let holds = Holds::new(None, Some(2), 16);
        let mut steps = Vec::new();
        for k in 0..20 {
            steps.push(("step", 5 + k));
            let out = run(&holds, &engine, &body(&steps));
            assert!(out.body.is_none() && out.kept_because.is_none(), "{k}");
        }
    }

    /// The bytes that go on for a request: the body cleaned, or as it came.
    fn sent(holds: &Holds, engine: &Engine, b: &[u8]) -> (Vec<u8>, String) {
        let out = run(holds, engine, b);
        let cache = out.cache.clone().unwrap_or_default();
        (out.body.unwrap_or_else(|| b.to_vec()), cache)
    }

    #[test]
    fn a_restarted_proxy_and_replicas_forward_what_one_proxy_forwards() {
        // Issue 57: an agent's requests, each every message before a turn
        // of the model. A large result the recipe compacts once a later
        // one comes, then a long answer that cleaning again must write
        // again: held while the rent adds up, request by request, then
        // cleaned in one batch. A proxy that missed requests would add up
        // less rent, and one restarted would clean at once.
        let call = |id: &str| {
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        };
        let result =
            |id: &str, text: String| json!({"role": "tool", "tool_call_id": id, "content": text});
        let mut all = vec![
            json!({"role": "user", "content": "fix the failing test"}),
            call("c0"),
            result("c0", words(2000, "line")),
            json!({"role": "assistant", "content": words(3000, "because")}),
            json!({"role": "user", "content": "go on"}),
        ];
        for k in 1..40 {
            let id = format!("c{k}");
            all.push(call(&id));
            all.push(result(&id, format!("ok {k}")));
        }
        let requests: Vec<Vec<u8>> = (1..=all.len())
            .filter(|&b| b == all.len() || all[b]["role"] == "assistant")
            .map(|b| {
                serde_json::to_vec(&json!({"model": "gpt-4.1", "messages": all[..b]})).unwrap()
            })
            .collect();
        let engine = compact();
        let fresh = || Holds::new(None, None, 16);
        let one = fresh();
        let alone: Vec<(Vec<u8>, String)> =
            requests.iter().map(|b| sent(&one, &engine, b)).collect();
        // Not vacuous: held at times, cleaned again at others.
        let caches: Vec<&str> = alone.iter().map(|(_, c)| c.as_str()).collect();
        assert!(
            caches.iter().skip(1).any(|c| c.starts_with("held")),
            "{caches:?}"
        );
        assert!(
            caches
                .iter()
                .skip(1)
                .any(|c| c.starts_with("cleaned again")),
            "{caches:?}"
        );
        assert!(alone.iter().zip(&requests).any(|((s, _), b)| s != b));
        // Two replicas, round robin: each sees every other request.
        let replicas = [fresh(), fresh()];
        for (n, b) in requests.iter().enumerate() {
            let (bytes, cache) = sent(&replicas[n % 2], &engine, b);
            assert!(bytes == alone[n].0, "request {n}: {cache} / {}", alone[n].1);
        }
        // Restarted after 9 requests: the new one has seen none.
        let (before, after) = (fresh(), fresh());
        for (n, b) in requests.iter().enumerate() {
            let proxy = if n < 9 { &before } else { &after };
            let (bytes, cache) = sent(proxy, &engine, b);
            assert!(bytes == alone[n].0, "request {n}: {cache} / {}", alone[n].1);
        }
    }

    #[test]
    fn a_held_body_names_what_the_body_before_it_changed() {
        // The large result is compacted once a later one comes; the
        // request after that is held: the body before, extended. Its
        // report (the proxy's log line) names the result compacted, as
        // the body before's did, and so does a proxy that never saw the
        // requests before it and replayed them first.
        let engine = compact();
        let steps = [("look", 2000), ("next", 10), ("more", 10)];
        let modified = |out: &Outcome| -> Vec<usize> {
            out.reports[0]
                .changes
                .iter()
                .filter(|c| c.action == crate::changes::Action::Modified)
                .map(|c| c.index)
                .collect()
        };
        let holds = Holds::new(None, None, 16);
        run(&holds, &engine, &body(&steps[..1]));
        let cleaned = run(&holds, &engine, &body(&steps[..2]));
        assert!(cleaned.body.is_some());
        assert_eq!(modified(&cleaned), [2], "{:?}", cleaned.cache);
        let held = run(&holds, &engine, &body(&steps));
        let cache = held.cache.clone().unwrap_or_default();
        assert!(cache.starts_with("held") && held.body.is_some(), "{cache}");
        assert_eq!(modified(&held), [2], "{cache}");

        let unseen = run(&Holds::new(None, None, 16), &engine, &body(&steps));
        let cache = unseen.cache.clone().unwrap_or_default();
        assert!(cache.contains("earlier requests replayed first"), "{cache}");
        assert_eq!(unseen.body, held.body, "{cache}");
        assert_eq!(modified(&unseen), [2], "{cache}");
    }

    #[test]
    fn a_conversation_of_too_many_unseen_requests_is_cleaned_from_its_start() {
        let chat = |turns: usize| {
            let mut msgs = vec![json!({"role": "user", "content": "open"})];
            for k in 0..turns {
                msgs.push(json!({"role": "assistant", "content": format!("answer {k}")}));
                msgs.push(json!({"role": "user", "content": format!("question {k}")}));
            }
            serde_json::to_vec(&json!({"model": "m", "messages": msgs})).unwrap()
        };
        let engine = compact();
        let out = run(&Holds::new(None, None, 16), &engine, &chat(Holds::CATCH_UP));
        let cache = out.cache.unwrap_or_default();
        assert!(
            cache.contains("256 earlier requests replayed first"),
            "{cache}"
        );
        let out = run(
            &Holds::new(None, None, 16),
            &engine,
            &chat(Holds::CATCH_UP + 1),
        );
        let cache = out.cache.unwrap_or_default();
        assert!(
            cache.contains("257 earlier requests unseen, more than the 256 replayed"),
            "{cache}"
        );
    }

    #[test]
    fn a_cleaning_that_costs_more_than_what_came_does_not_go() {
        // Claude Haiku 4.5 caches prefixes of 4,096 tokens and more: what
        // came (about 5,000) is read from the cache at a tenth of the
        // price; cleaned (about 3,600) it would be sent uncached, every call.
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let request = |more: bool| {
            let mut msgs = vec![
                json!({"role": "user", "content": words(1400, "w")}),
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c0", "name": "read", "input": {}}]}),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c0", "content": words(600, "line")}]}),
            ];
            if more {
                msgs.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {}}]}));
                msgs.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}));
            }
            serde_json::to_vec(
                &json!({"model": "claude-haiku-4-5", "max_tokens": 64, "messages": msgs}),
            )
            .unwrap()
        };
        let engine = compact();
        let send = |holds: &Holds, b: &[u8]| {
            clean_request(&engine, Format::Anthropic, b, &tok, false, Some(holds)).unwrap()
        };
        let holds = Holds::new(None, None, 16);
        assert!(
            send(&holds, &request(false)).body.is_none(),
            "nothing to clean yet"
        );
        let out = send(&holds, &request(true));
        let report = &out.reports[0];
        assert!(
            report.before.tokens > 4096 && report.after.tokens < 4096,
            "{} -> {}",
            report.before.tokens,
            report.after.tokens
        );
        assert!(out.body.is_none(), "{:?}", out.cache);
        let cache = out.cache.unwrap_or_default();
        assert!(
            cache.starts_with("as it came: the body cleaned would cost more")
                && cache.contains("under the model's cache minimum of 4096 tokens"),
            "{cache}"
        );
        // Sonnet caches from 1,024 tokens: the same cleaning goes.
        let sonnet = |b: Vec<u8>| {
            String::from_utf8(b)
                .unwrap()
                .replace("claude-haiku-4-5", "claude-sonnet-4-5")
                .into_bytes()
        };
        let holds = Holds::new(None, None, 16);
        send(&holds, &sonnet(request(false)));
        let out = send(&holds, &sonnet(request(true)));
        assert!(out.body.is_some(), "{:?}", out.cache);
    }

    /// Split at its quotes, each message parsed on its own (by the proxy)
    /// or through a memo of values (by replay), a body lists as
    /// `serde_json` reads it whole: the same keys in the same order (the
    /// list's taken out as `remove` takes it), messages, hashes and
    /// opening; the same refusals; a key given twice read as `serde_json`
    /// reads it. Through the memo twice: parsed, then found.
    #[test]
    fn a_body_listed_through_a_memo_lists_as_read_whole() {
        let bodies = [
            (
                Format::OpenAi,
                r#"{"messages":[{"role":"user","content":"a\u00e9"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"model":"m","stream":true,"n":1.5E3}"#,
            ),
            (
                Format::OpenAi,
                r#" { "model" : "m" , "messages" : [ {"role":"user","content":"a","cache_control":{"type":"ephemeral"}} ] } "#,
            ),
            (
                Format::OpenAi,
                r#"{"model":"a","messages":[{"role":"user","content":"x"}],"model":"b"}"#,
            ),
            (
                Format::OpenAi,
                r#"{"messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}"#,
            ),
            (Format::OpenAi, r#"{"model":"m","messages":[]}"#),
            (
                Format::OpenAi,
                r#"{"model":"m","messages":{"role":"user"}}"#,
            ),
            (Format::OpenAi, r#"{"model":"m"}"#),
            (Format::OpenAi, r#"[{"role":"user","content":"x"}]"#),
            (
                Format::OpenAi,
                r#"{"model":"m","messages":[{"role":"user","content":"x"}]} x"#,
            ),
            (
                Format::Anthropic,
                r#"{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":9}"#,
            ),
            (
                Format::Responses,
                r#"{"instructions":"i","input":[{"role":"user","content":"x"},{"type":"function_call_output","call_id":"c","output":"o"}],"model":"gpt-5"}"#,
            ),
            (
                Format::Gemini,
                r#"{"contents":[{"role":"user","parts":[{"text":"x"}]}],"systemInstruction":{"parts":[{"text":"s"}]}}"#,
            ),
        ];
        let memo = ValueMemo::new(1 << 20);
        for (format, body) in bodies {
            let whole = Listed::whole(format, body.as_bytes());
            for round in 0..3 {
                let split = match round {
                    0 => Listed::of(format, body.as_bytes()),
                    _ => Listed::of_with(format, body.as_bytes(), Some(&memo)),
                };
                let seen = |l: &Option<Listed>| {
                    l.as_ref().map(|l| {
                        let body = serde_json::to_string(&l.body).unwrap();
                        (body, l.items.clone(), l.hashes.clone(), l.id)
                    })
                };
                assert_eq!(seen(&split), seen(&whole), "{body} (round {round})");
            }
        }
        // A message nested deeper than `serde_json` reads a whole body, as
        // the reader reads it: listed by the proxy and by replay alike.
        let deep = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"x","extra":{}{}}}]}}"#,
            "[".repeat(126),
            "]".repeat(126)
        );
        assert!(read_document("t", deep.clone().into_bytes(), &ReadOptions::default()).is_ok());
        assert!(Listed::whole(Format::OpenAi, deep.as_bytes()).is_none());
        let by_proxy = Listed::of(Format::OpenAi, deep.as_bytes()).unwrap();
        let by_replay = Listed::of_with(Format::OpenAi, deep.as_bytes(), Some(&memo)).unwrap();
        assert_eq!(
            (&by_proxy.items, &by_proxy.hashes),
            (&by_replay.items, &by_replay.hashes)
        );
    }

    #[test]
    fn memory_holds_the_conversations_used_last_within_its_weight() {
        let engine = compact();
        let chat = |who: &str, turns: usize| {
            let mut msgs =
                vec![json!({"role": "user", "content": format!("{who} opens the chat")})];
            for k in 0..turns {
                msgs.push(json!({"role": "assistant", "content": format!("answer {k}")}));
                msgs.push(json!({"role": "user", "content": format!("question {k}")}));
            }
            serde_json::to_vec(&json!({"model": "m", "messages": msgs})).unwrap()
        };
        // What holding a request that went on as it came weighs.
        let weight_of = |b: &[u8]| {
            let list = Listed::of(Format::OpenAi, b).unwrap();
            let n = list.items.len();
            Held {
                input: list.hashes.clone(),
                input_sizes: vec![0; n],
                output: Packed::of(&list.items),
                hashes: list.hashes,
                sizes: vec![0; n],
                bytes: 0,
                opening: 0,
                at: std::time::Instant::now(),
                conversation: 0,
                came: 0,
                head: (0, 0),
                rent: 0.0,
                measured: None,
                arrival: false,
                said: Arc::default(),
            }
            .weight()
        };
        // Room for a, grown to 2 turns, and two more of 1 turn: not for a
        // fourth.
        let cap = weight_of(&chat("a", 2)) + 3 * weight_of(&chat("a", 1)) - 1;
        let holds = Holds::new(None, Some(2), 100).with_max_bytes(cap);
        // Remembered: held, nothing replayed; new (or forgotten): its
        // earlier request (the opening alone) replayed first.
        let held = |out: &Outcome| {
            out.cache
                .as_deref()
                .is_some_and(|c| c.starts_with("held") && !c.contains("replayed"))
        };
        let new = |out: &Outcome| {
            out.cache
                .as_deref()
                .is_some_and(|c| c.contains("earlier requests replayed first"))
        };
        for who in ["a", "b", "c"] {
            let out = run(&holds, &engine, &chat(who, 1));
            assert!(new(&out), "{who} is new: {:?}", out.cache);
        }
        assert!(
            held(&run(&holds, &engine, &chat("a", 2))),
            "a is remembered"
        );
        // d pushes out the one used least recently: b, not a.
        run(&holds, &engine, &chat("d", 1));
        let b = run(&holds, &engine, &chat("b", 2));
        assert!(new(&b), "b was forgotten: {:?}", b.cache);
        assert!(
            held(&run(&holds, &engine, &chat("a", 3))),
            "a was used lately"
        );
        let weight = holds.held.lock().unwrap().bytes;
        assert!(weight <= cap, "{weight}");
    }

    #[test]
    fn conversations_that_open_alike_are_held_each() {
        // Issue 39: two runs opening "system + hi" took each other's hold;
        // 0 of 80 requests were held.
        let engine = compact();
        let chat = |who: &str, turns: usize| {
            let mut msgs = vec![
                json!({"role": "system", "content": "You are an agent."}),
                json!({"role": "user", "content": "hi"}),
            ];
            for k in 0..turns {
                msgs.push(json!({"role": "assistant", "content": format!("{who}'s answer {k}")}));
                msgs.push(json!({"role": "user", "content": format!("{who}'s question {k}")}));
            }
            serde_json::to_vec(&json!({"model": "m", "messages": msgs})).unwrap()
        };
        let holds = Holds::new(None, Some(2), 100);
        let held = |out: &Outcome| out.cache.as_deref().is_some_and(|c| c.starts_with("held"));
        let mut count = 0;
        for turns in 1..6 {
            for who in ["a", "b", "c"] {
                let out = run(&holds, &engine, &chat(who, turns));
                if turns > 1 {
                    assert!(held(&out), "{who} at {turns}: {:?}", out.cache);
                    count += 1;
                }
                // Never another's messages.
                if let Some(body) = &out.body {
                    let text = String::from_utf8_lossy(body);
                    for other in ["a", "b", "c"].iter().filter(|o| **o != who) {
                        assert!(!text.contains(&format!("{other}'s")), "{who} got {other}'s");
                    }
                }
            }
        }
        assert_eq!(count, 12);
    }

    #[test]
    fn prices_come_from_the_table_or_the_default() {
        let holds = Holds::new(None, Some(0), 1);
        let sonnet = holds.prices(Some("claude-sonnet-4-5"));
        assert!(
            (sonnet.write / sonnet.read - 12.5).abs() < 0.01,
            "{sonnet:?}"
        );
        let gpt = holds.prices(Some("gpt-4.1"));
        assert!(gpt.read < gpt.write);
        assert_eq!(holds.prices(Some("no-such-model")), CachePrices::DEFAULT);
        assert_eq!(holds.prices(None), CachePrices::DEFAULT);
    }
}
