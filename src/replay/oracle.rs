//! The offline optimum `replay` sets beside every recipe (`--oracle`): a
//! cleaner that knows the future, which no proxy can be.
//!
//! It evicts only tool results whose strings the model uses again, if at
//! all, from a later copy: a result is *dead* at a call once every string
//! of it that a later call's evidence (see [`super::evidence`]) holds is
//! also in a later message of the request, so the oracle keeps every
//! string the model used next, by construction (the latest copy of a
//! string is never evicted). And it evicts
//! only when that pays over the calls still to come, which it knows: at a
//! call, the results newly dead are evicted together when reading them on
//! every remaining call would cost more than writing again what follows the
//! first of them (the cache's premium: the write price less the read
//! price, per token). Between evictions its bodies are the previous ones
//! extended, as the cache wants them.
//!
//! An evicted result's content becomes `[result evicted: N tokens]`; the
//! call and its result stay paired.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::price::Prices;
use crate::format::Format;
use crate::inflight::cache::{list_key, Part, Sizes, Units};
use crate::tokens::Tokenizer;

/// What the oracle knows of a session: which strings each item of the list
/// holds (by its place: the requests as they came grow by appending), and
/// the last call that uses each string.
#[derive(Clone, Default)]
pub(super) struct Future {
    /// The strings each item holds.
    holds: HashMap<usize, Vec<usize>>,
    /// The items holding each string, in order.
    copies: HashMap<usize, Vec<usize>>,
    /// The last call each string is evidence of.
    last_use: Vec<usize>,
    calls: usize,
}

impl Future {
    /// From the last request as it came (`items`, its list) and each
    /// call's evidence, each string in its written forms.
    pub(super) fn of(items: &[Value], evidence: &[Vec<Vec<String>>]) -> Future {
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let (mut patterns, mut string_of, mut last_use) = (Vec::new(), Vec::new(), Vec::new());
        for (call, strings) in evidence.iter().enumerate() {
            for forms in strings {
                let id = *ids
                    .entry(forms.first().map_or("", String::as_str))
                    .or_insert_with(|| {
                        last_use.push(0);
                        last_use.len() - 1
                    });
                last_use[id] = last_use[id].max(call);
                for form in forms {
                    patterns.push(form.as_str());
                    string_of.push(id);
                }
            }
        }
        let mut future = Future {
            last_use,
            calls: evidence.len(),
            ..Future::default()
        };
        let Ok(ac) = aho_corasick::AhoCorasick::new(&patterns) else {
            return future;
        };
        for (i, item) in items.iter().enumerate() {
            let text = item.to_string();
            let mut found: Vec<usize> = ac
                .find_overlapping_iter(&text)
                .map(|m| string_of[m.pattern().as_usize()])
                .collect();
            found.sort_unstable();
            found.dedup();
            for &s in &found {
                future.copies.entry(s).or_default().push(i);
            }
            future.holds.insert(i, found);
        }
        future
    }

    /// Whether item `i` may go at call `call`, whose request has `items`
    /// items: every string it holds that a call from `call` on uses has a
    /// later copy in that request (the latest copy of a string stays).
    fn dead(&self, i: usize, call: usize, items: usize) -> bool {
        self.holds.get(&i).is_none_or(|strings| {
            strings.iter().all(|&s| {
                self.last_use[s] < call || self.copies[&s].iter().any(|&j| j > i && j < items)
            })
        })
    }
}

/// The oracle's state from call to call: what it knows, and the results it
/// evicted.
pub(super) struct Oracle {
    future: Future,
    evicted: HashSet<usize>,
}

/// The prices the oracle weighs with: per token, reading, and what writing
/// again costs more than reading (Anthropic's 1.25× and 0.1× of the input
/// price without a price table).
fn weights(prices: Option<&Prices>) -> (f64, f64) {
    prices.map_or((0.1, 1.15), |p| (p.read_price(), p.rewrite_premium()))
}

impl Oracle {
    /// The oracle of a session whose future is `future`.
    pub(super) fn new(future: Future) -> Oracle {
        Oracle {
            future,
            evicted: HashSet::new(),
        }
    }

    /// The body the oracle sends at call `call` for the request that came
    /// (`body`), its results evicted as paid.
    pub(super) fn body(
        &mut self,
        call: usize,
        (format, body): (Format, &[u8]),
        tok: &Tokenizer,
        sizes: &Sizes,
        prices: Option<&Prices>,
    ) -> Option<Vec<u8>> {
        let mut value: Map<String, Value> = serde_json::from_slice(body).ok()?;
        let units = Units::of_value(format, &value, tok, sizes);
        let item_tokens: HashMap<usize, u64> = units
            .sizes()
            .filter_map(|(part, n)| match part {
                Part::Item(i) => Some((*i, n)),
                _ => None,
            })
            .collect();
        let list = list_key(format);
        let items = value.get_mut(list)?.as_array_mut()?;
        let candidates: Vec<usize> = (0..items.len())
            .filter(|i| !self.evicted.contains(i) && is_result(format, &items[*i]))
            .filter(|&i| self.future.dead(i, call, items.len()))
            .collect();
        if let Some(&first) = candidates.first() {
            let (read, premium) = weights(prices);
            let saved: u64 = candidates
                .iter()
                .map(|i| item_tokens.get(i).copied().unwrap_or(0))
                .sum();
            let rewritten: u64 = (first..items.len())
                .map(|i| item_tokens.get(&i).copied().unwrap_or(0))
                .sum();
            let remaining = self.future.calls.saturating_sub(call) as f64;
            if saved as f64 * read * remaining > rewritten as f64 * premium {
                self.evicted.extend(candidates);
            }
        }
        if self.evicted.is_empty() {
            return None;
        }
        for &i in &self.evicted {
            if let Some(item) = items.get_mut(i) {
                let n = item_tokens.get(&i).copied().unwrap_or(0);
                evict(format, item, n);
            }
        }
        serde_json::to_vec(&value).ok()
    }
}

/// Whether an item of the list is a tool's result.
fn is_result(format: Format, item: &Value) -> bool {
    match format {
        Format::Anthropic => item["content"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result")),
        Format::Responses => item["type"] == "function_call_output",
        Format::Gemini => false,
        _ => item["role"] == "tool",
    }
}

/// An item's result content replaced by what it was.
fn evict(format: Format, item: &mut Value, tokens: u64) {
    let placeholder = Value::from(format!("[result evicted: {tokens} tokens]"));
    match format {
        Format::Anthropic => {
            for b in item["content"].as_array_mut().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    b["content"] = placeholder.clone();
                }
            }
        }
        Format::Responses => item["output"] = placeholder,
        _ => item["content"] = placeholder,
    }
}
