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
//! It evicts the large argument values of the model's own calls by the
//! same rule (a Write's content, an Edit's strings, once each string of
//! them the model uses again has a later copy), in the same batches.
//!
//! An evicted result's content becomes `[result evicted: N tokens]`, an
//! evicted argument value `[argument evicted: N tokens]`; the call and its
//! result stay paired.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::price::Prices;
use crate::format::Format;
use crate::inflight::cache::{Part, Sizes, Units};
use crate::tokens::Tokenizer;

/// What the oracle knows of a session: which strings each item of the list
/// holds (by its place: the requests as they came grow by appending), and
/// the last call that uses each string.
#[derive(Clone, Default)]
pub(super) struct Future {
    /// The strings each item holds.
    holds: HashMap<usize, Vec<usize>>,
    /// The strings each item's large argument values hold (see
    /// [`large_arguments`]), for the items with any.
    args: HashMap<usize, Vec<usize>>,
    /// The items holding each string, in order.
    copies: HashMap<usize, Vec<usize>>,
    /// The last call each string is evidence of.
    last_use: Vec<usize>,
    calls: usize,
    /// The strings each call uses (its evidence).
    uses: Vec<Vec<usize>>,
    /// How many items each call's request has (empty when not known).
    items_at: Vec<usize>,
    /// The tokens of each item, and of its large argument values, about:
    /// what the plan weighs an eviction by.
    tokens: HashMap<usize, u64>,
    arg_tokens: HashMap<usize, u64>,
    /// Items the plan lets go before they are dead, from a call on
    /// (results, then argument values): see [`Future::plan`].
    early: HashMap<usize, usize>,
    early_args: HashMap<usize, usize>,
    /// For the plan: the uses of strings each item (results, `false`, and
    /// argument values, `true`) would lose (call, string); the uses its
    /// budget holds for the items let go, by call; what is left of it.
    lost_uses: HashMap<(usize, bool), Vec<(usize, usize)>>,
    reserved: HashMap<usize, Vec<usize>>,
    budget: usize,
}

impl Future {
    /// From the last request as it came (`items`, its list) and each
    /// call's evidence, each string in its written forms.
    pub(super) fn of(format: Format, items: &[Value], evidence: &[Vec<Vec<String>>]) -> Future {
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let (mut patterns, mut string_of, mut last_use) = (Vec::new(), Vec::new(), Vec::new());
        let mut uses = Vec::with_capacity(evidence.len());
        for (call, strings) in evidence.iter().enumerate() {
            let mut used = Vec::with_capacity(strings.len());
            for forms in strings {
                let id = *ids
                    .entry(forms.first().map_or("", String::as_str))
                    .or_insert_with(|| {
                        last_use.push(0);
                        last_use.len() - 1
                    });
                last_use[id] = last_use[id].max(call);
                used.push(id);
                for form in forms {
                    patterns.push(form.as_str());
                    string_of.push(id);
                }
            }
            uses.push(used);
        }
        let mut future = Future {
            last_use,
            calls: evidence.len(),
            uses,
            ..Future::default()
        };
        let Ok(ac) = aho_corasick::AhoCorasick::new(&patterns) else {
            return future;
        };
        let strings_in = |text: &str| {
            let mut found: Vec<usize> = ac
                .find_overlapping_iter(text)
                .map(|m| string_of[m.pattern().as_usize()])
                .collect();
            found.sort_unstable();
            found.dedup();
            found
        };
        for (i, item) in items.iter().enumerate() {
            let found = strings_in(&item.to_string());
            for &s in &found {
                future.copies.entry(s).or_default().push(i);
            }
            future.holds.insert(i, found);
            let args = large_arguments(format, item);
            if !args.is_empty() {
                // Escaped as a JSON string, as the evidence's forms are.
                let text: Vec<String> = args
                    .into_iter()
                    .map(|a| Value::from(a).to_string())
                    .collect();
                future.args.insert(i, strings_in(&text.join("\n")));
            }
        }
        future
    }

    /// Whether item `i` may go at call `call`, whose request has `items`
    /// items: every string it holds that a call from `call` on uses has a
    /// later copy in that request (the latest copy of a string stays), or
    /// the plan lets it go from an earlier call.
    fn dead(&self, i: usize, call: usize, items: usize) -> bool {
        self.early.get(&i).is_some_and(|&from| call >= from)
            || self
                .holds
                .get(&i)
                .is_none_or(|strings| self.all_later(strings, i, call, items))
    }

    /// Whether item `i`'s large argument values may go at call `call` (as
    /// [`Future::dead`], over the strings they hold).
    fn dead_args(&self, i: usize, call: usize, items: usize) -> bool {
        self.early_args.get(&i).is_some_and(|&from| call >= from)
            || self
                .args
                .get(&i)
                .is_some_and(|strings| self.all_later(strings, i, call, items))
    }

    /// What [`Future::plan`] needs besides the strings: how many items
    /// each call's request has, and the tokens of each result and of each
    /// item's large argument values (about: the item as JSON).
    pub(super) fn weighed(
        mut self,
        format: Format,
        items: &[Value],
        items_at: Vec<usize>,
        tok: &Tokenizer,
    ) -> Future {
        for (i, item) in items.iter().enumerate() {
            if is_result(format, item) {
                self.tokens
                    .insert(i, tok.count_text(&item.to_string()) as u64);
            }
            if self.args.contains_key(&i) {
                self.arg_tokens
                    .insert(i, argument_tokens(format, item, tok));
            }
        }
        self.items_at = items_at;
        self
    }

    /// Lets items go before they are dead, losing at most `1 - recall` of
    /// the session's evidence (its uses of strings, call by call): the
    /// oracle at a recall under 1 (`replay --oracle-recall`).
    ///
    /// A use of a string is lost when the latest copy of it in that call's
    /// request goes (earlier copies are dead while a later one stays),
    /// unless a copy stays that no eviction takes (in a message that is no
    /// result, outside its large argument values). Each result, and each
    /// item's large argument values, may go from its first call on, or
    /// from just after a use that would be lost; each
    /// such time saves reads (its tokens times the calls before it would
    /// be dead anyway) and loses uses. The times of every item are taken
    /// by reads saved per use lost, best first, at most one per item,
    /// while the uses they lose fit the budget; [`Oracle::body`] evicts
    /// them from then on by the same rule as the dead ones, when that
    /// pays. A use the plan counted may still be kept, by an earlier copy
    /// not evicted yet or an item that waited for a batch: at its call it
    /// goes back to the budget, and the items not yet let go are planned
    /// again (see [`Future::settle`]).
    pub(super) fn plan(&mut self, recall: f64) {
        let total: usize = self.uses.iter().map(Vec::len).sum();
        self.budget = ((1.0 - recall) * total as f64).floor() as usize;
        if self.budget == 0 || self.items_at.len() != self.calls {
            return;
        }
        // Where each use would be lost: the item holding the latest copy,
        // unless a copy no eviction takes stays (a message that is no
        // result, outside its large argument values).
        let lasting = |j: usize, s: usize| {
            !self.tokens.contains_key(&j) && !self.args.get(&j).is_some_and(|a| a.contains(&s))
        };
        let mut lost: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
        for (call, used) in self.uses.iter().enumerate() {
            let n = self.items_at[call];
            for &s in used {
                let Some(copies) = self.copies.get(&s) else {
                    continue;
                };
                let present = || copies.iter().take_while(|&&j| j < n);
                if present().any(|&j| lasting(j, s)) {
                    continue;
                }
                if let Some(&j) = present().last() {
                    lost.entry(j).or_default().push((call, s));
                }
            }
        }
        for (map, args) in [(&self.tokens, false), (&self.arg_tokens, true)] {
            for &i in map.keys() {
                let strings = args.then(|| &self.args[&i]);
                let uses: Vec<(usize, usize)> = lost.get(&i).map_or_else(Vec::new, |l| {
                    l.iter()
                        .filter(|(_, s)| strings.is_none_or(|st| st.contains(s)))
                        .copied()
                        .collect()
                });
                if !uses.is_empty() {
                    self.lost_uses.insert((i, args), uses);
                }
            }
        }
        self.replan(0);
    }

    /// [`Future::plan`]'s choice, from call `from` on, of the items not
    /// yet let go, within what is left of the budget.
    fn replan(&mut self, from: usize) {
        // (reads saved per use lost, uses lost, item, from which call, args)
        let mut picks: Vec<(f64, usize, usize, usize, bool)> = Vec::new();
        for ((i, args), uses) in &self.lost_uses {
            let (map, early) = if *args {
                (&self.arg_tokens, &self.early_args)
            } else {
                (&self.tokens, &self.early)
            };
            let t = map.get(i).copied().unwrap_or(0);
            if t <= PLACEHOLDER || early.contains_key(i) {
                continue;
            }
            let calls: Vec<usize> = uses.iter().map(|&(c, _)| c).collect();
            for (ratio, loss, at) in self.times(*i, t, &calls) {
                if at >= from {
                    picks.push((ratio, loss, *i, at, *args));
                }
            }
        }
        picks.sort_by(|a, b| {
            (b.0.total_cmp(&a.0))
                .then(a.2.cmp(&b.2))
                .then(a.4.cmp(&b.4))
                .then(a.3.cmp(&b.3))
        });
        for (_, loss, i, at, args) in picks {
            let early = if args {
                &mut self.early_args
            } else {
                &mut self.early
            };
            if loss <= self.budget && !early.contains_key(&i) {
                self.budget -= loss;
                early.insert(i, at);
                for &(c, s) in &self.lost_uses[&(i, args)] {
                    if c >= at {
                        self.reserved.entry(c).or_default().push(s);
                    }
                }
            }
        }
    }

    /// At call `call`, with what is evicted by then: each use the budget
    /// holds for this call that a copy still present keeps (an earlier
    /// copy not evicted yet, a plan's item that waited for a batch that
    /// pays) goes back to it, and the items not yet let go are planned
    /// again with it from the next call on. What is lost is then charged
    /// exactly: a use none of whose copies is left.
    fn settle(&mut self, call: usize, evicted: &HashSet<usize>, evicted_args: &HashSet<usize>) {
        let Some(uses) = self.reserved.remove(&call) else {
            return;
        };
        let n = self.items_at.get(call).copied().unwrap_or(0);
        let gone = |j: usize, s: usize| {
            evicted.contains(&j)
                || (evicted_args.contains(&j) && self.args.get(&j).is_some_and(|a| a.contains(&s)))
        };
        let kept = uses
            .iter()
            .filter(|&&s| {
                self.copies
                    .get(&s)
                    .is_some_and(|c| c.iter().take_while(|&&j| j < n).any(|&j| !gone(j, s)))
            })
            .count();
        if kept > 0 {
            self.budget += kept;
            self.replan(call + 1);
        }
    }

    /// For [`Future::plan`]: the calls from which item `i` (of `tokens`)
    /// may go before it is dead, each with its reads saved per use lost
    /// and its uses lost; `uses`: the calls, in order, whose use of a
    /// string it would lose. None when it loses nothing (it is dead when
    /// it is used).
    fn times(&self, i: usize, tokens: u64, uses: &[usize]) -> Vec<(f64, usize, usize)> {
        // The first call whose request holds it (the lengths only grow).
        let born = self.items_at.partition_point(|&n| n <= i);
        let Some(&last) = uses.last().filter(|_| born < self.items_at.len()) else {
            return Vec::new();
        };
        let dead_from = last + 1;
        let mut times: Vec<usize> = std::iter::once(born)
            .chain(uses.iter().map(|&c| c + 1))
            .filter(|&f| f >= born && f < dead_from)
            .collect();
        times.dedup();
        times
            .into_iter()
            .map(|from| {
                let loss = uses.len() - uses.partition_point(|&c| c < from);
                let ratio = tokens as f64 * (dead_from - from) as f64 / loss as f64;
                (ratio, loss, from)
            })
            .collect()
    }

    /// Whether every string of `strings` that a call from `call` on uses
    /// has a copy in an item after `i`, within the request's `items`.
    fn all_later(&self, strings: &[usize], i: usize, call: usize, items: usize) -> bool {
        strings.iter().all(|&s| {
            self.last_use[s] < call || self.copies[&s].iter().any(|&j| j > i && j < items)
        })
    }
}

/// The oracle's state from call to call: what it knows, and the results it
/// evicted.
pub(super) struct Oracle {
    future: Future,
    evicted: HashSet<usize>,
    /// The items whose large argument values it evicted.
    evicted_args: HashSet<usize>,
    /// The tokens of each item's large argument values, counted once (an
    /// item is the same in every request that holds it).
    arg_tokens: HashMap<usize, u64>,
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
            evicted_args: HashSet::new(),
            arg_tokens: HashMap::new(),
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
        let list = format.list_key();
        let items = value.get_mut(list)?.as_array_mut()?;
        let n = items.len();
        let results: Vec<usize> = (0..n)
            .filter(|i| !self.evicted.contains(i) && is_result(format, &items[*i]))
            .filter(|i| item_tokens.get(i).is_some_and(|&t| t > PLACEHOLDER))
            .filter(|&i| self.future.dead(i, call, n))
            .collect();
        let (future, evicted_args, counted) =
            (&self.future, &self.evicted_args, &mut self.arg_tokens);
        let args: Vec<(usize, u64)> = (0..n)
            .filter(|i| !evicted_args.contains(i) && future.dead_args(*i, call, n))
            .map(|i| {
                let t = *counted
                    .entry(i)
                    .or_insert_with(|| argument_tokens(format, &items[i], tok));
                (i, t)
            })
            .filter(|&(_, t)| t > PLACEHOLDER)
            .collect();
        let first = results.iter().chain(args.iter().map(|(i, _)| i)).min();
        if let Some(&first) = first {
            let (read, premium) = weights(prices);
            let saved: u64 = results
                .iter()
                .map(|i| item_tokens.get(i).copied().unwrap_or(0))
                .chain(args.iter().map(|(_, t)| *t))
                .sum();
            let rewritten: u64 = (first..n)
                .map(|i| item_tokens.get(&i).copied().unwrap_or(0))
                .sum();
            let remaining = self.future.calls.saturating_sub(call) as f64;
            if saved as f64 * read * remaining > rewritten as f64 * premium {
                self.evicted.extend(results);
                self.evicted_args.extend(args.into_iter().map(|(i, _)| i));
            }
        }
        self.future.settle(call, &self.evicted, &self.evicted_args);
        if self.evicted.is_empty() && self.evicted_args.is_empty() {
            return None;
        }
        for &i in &self.evicted {
            if let Some(item) = items.get_mut(i) {
                let n = item_tokens.get(&i).copied().unwrap_or(0);
                evict(format, item, n);
            }
        }
        for &i in &self.evicted_args {
            if let Some(item) = items.get_mut(i) {
                evict_arguments(format, item, tok);
            }
        }
        serde_json::to_vec(&value).ok()
    }
}

/// The tokens of a placeholder, about: what is no larger is never evicted.
const PLACEHOLDER: u64 = 12;

/// Argument values over this many bytes of JSON are large: a Write's
/// content, an Edit's strings (the path, the command stay, as with
/// `filter --moved-past`).
const LARGE_ARGUMENT: usize = 64;

/// Each call's arguments of an item, as an object `f` may change: an
/// OpenAI call's `function.arguments` and a Responses `function_call`'s
/// `arguments` (JSON text, written back when `f` changed them), an
/// Anthropic `tool_use`'s `input`.
fn each_arguments(format: Format, item: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let mut in_text = |text: &mut Value| {
        let Some(Ok(Value::Object(mut args))) = text.as_str().map(serde_json::from_str) else {
            return;
        };
        let before = args.clone();
        f(&mut args);
        if args != before {
            *text = Value::from(Value::Object(args).to_string());
        }
    };
    match format {
        Format::Anthropic => {
            for b in item["content"].as_array_mut().into_iter().flatten() {
                if b["type"] == "tool_use" {
                    if let Some(input) = b["input"].as_object_mut() {
                        f(input);
                    }
                }
            }
        }
        Format::Responses if item["type"] == "function_call" => in_text(&mut item["arguments"]),
        Format::Responses | Format::Gemini => {}
        _ => {
            for call in item["tool_calls"].as_array_mut().into_iter().flatten() {
                in_text(&mut call["function"]["arguments"]);
            }
        }
    }
}

/// The large argument values of an item's calls (their text).
fn large_arguments(format: Format, item: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut item = item.clone();
    each_arguments(format, &mut item, &mut |args| {
        for v in args.values() {
            if let Value::String(text) = v {
                if v.to_string().len() > LARGE_ARGUMENT {
                    out.push(text.clone());
                }
            }
        }
    });
    out
}

/// The tokens of an item's large argument values.
fn argument_tokens(format: Format, item: &Value, tok: &Tokenizer) -> u64 {
    large_arguments(format, item)
        .iter()
        .map(|t| tok.count_text(t) as u64)
        .sum()
}

/// An item's large argument values replaced by what they were.
fn evict_arguments(format: Format, item: &mut Value, tok: &Tokenizer) {
    each_arguments(format, item, &mut |args| {
        for v in args.values_mut() {
            if let Value::String(text) = v {
                if Value::from(text.as_str()).to_string().len() > LARGE_ARGUMENT {
                    *v = Value::from(format!(
                        "[argument evicted: {} tokens]",
                        tok.count_text(text)
                    ));
                }
            }
        }
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_is_dead_only_once_its_strings_have_later_copies() {
        // A string with a backslash in it, as a shell command writes it:
        // found in the arguments as the body escapes them.
        let s = r"\n=== After resolve ===";
        let command = format!("python3 -c 'print(\"{s}\")' && echo the run is over and done");
        let call = |id: &str| {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
                "type": "function", "function": {"name": "bash",
                "arguments": serde_json::json!({"command": command}).to_string()}}]})
        };
        let items = vec![
            serde_json::json!({"role": "user", "content": "go"}),
            call("a"),
            serde_json::json!({"role": "tool", "tool_call_id": "a", "content": "done"}),
            call("b"),
            serde_json::json!({"role": "tool", "tool_call_id": "b", "content": "done"}),
        ];
        // Call 3 (the last) uses the string; calls 0 to 2 do not.
        let forms = crate::replay::evidence::written_forms(s);
        let evidence = vec![vec![], vec![], vec![], vec![forms]];
        let future = Future::of(Format::OpenAi, &items, &evidence);
        assert!(future.dead_args(1, 3, 5), "its copy at item 3 stays");
        assert!(!future.dead_args(3, 3, 5), "the last copy is not dead");
        assert!(!future.dead_args(1, 3, 3), "no copy within the request yet");
        // Nothing used from call 4 on: dead, copy or not.
        assert!(future.dead_args(3, 4, 5));
        assert!(!future.dead_args(2, 0, 5), "a result has no arguments");
    }

    #[test]
    fn the_plan_spends_the_evidence_it_may_lose_where_it_saves_most() {
        let words = |w: &str| vec![w; 60].join(" ");
        let call = |id: &str| {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
                "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        };
        let result = |id: &str, s: &str| {
            let content = format!("{s} {}", words("filler"));
            serde_json::json!({"role": "tool", "tool_call_id": id, "content": content})
        };
        let (a, b) = ("alpha_value_1234", "beta_value_5678");
        let items = vec![
            serde_json::json!({"role": "user", "content": "go"}),
            call("a"),
            result("a", a),
            call("b"),
            result("b", b),
        ];
        // Call 0 sees the user's message, call 1 the first result, calls 2
        // to 4 everything. Calls 2 and 3 use `a`, call 4 uses `b`: each
        // result is the only copy of its string, so neither is ever dead
        // before its last use.
        let items_at = vec![1, 3, 5, 5, 5];
        let forms = crate::replay::evidence::written_forms;
        let evidence = vec![
            vec![],
            vec![],
            vec![forms(a)],
            vec![forms(a)],
            vec![forms(b)],
        ];
        let tok = Tokenizer::new(crate::tokens::Encoding::O200kBase).unwrap();
        let future = Future::of(Format::OpenAi, &items, &evidence).weighed(
            Format::OpenAi,
            &items,
            items_at,
            &tok,
        );
        assert!(!future.dead(2, 1, 3) && !future.dead(4, 2, 5));
        let planned = |recall: f64| {
            let mut f = future.clone();
            f.plan(recall);
            let mut early: Vec<(usize, usize)> = f.early.into_iter().collect();
            early.sort();
            early
        };
        // Nothing may be lost: nothing goes early.
        assert_eq!(planned(1.0), vec![]);
        // One use of three: `b`'s result from call 2 (three calls of reads
        // for one use) before `a`'s from call 3 (one call for one use).
        assert_eq!(planned(0.5), vec![(4, 2)]);
        // All three: `a`'s result from its first call (three calls of
        // reads for two uses), and `b`'s.
        assert_eq!(planned(0.0), vec![(2, 1), (4, 2)]);
        let mut all = future.clone();
        all.plan(0.0);
        assert!(all.dead(2, 1, 3) && all.dead(4, 2, 5) && !all.dead(4, 1, 3));
        // `a`'s result not evicted yet at call 2: its use there is kept and
        // goes back to the budget; evicted by call 3, the use there is lost.
        assert_eq!(all.budget, 0);
        let none = HashSet::new();
        all.settle(2, &none, &none);
        assert_eq!(all.budget, 1);
        all.settle(3, &HashSet::from([2]), &none);
        assert_eq!(all.budget, 1);
        assert!(all.reserved.is_empty() || all.reserved.keys().all(|&c| c > 3));

        // A copy no eviction takes (the user's own message) keeps `a`:
        // nothing of the budget goes to its result.
        let mut kept = items.clone();
        kept[0] = serde_json::json!({"role": "user", "content": format!("go, find {a}")});
        let mut f = Future::of(Format::OpenAi, &kept, &evidence).weighed(
            Format::OpenAi,
            &kept,
            vec![1, 3, 5, 5, 5],
            &tok,
        );
        f.plan(0.0);
        assert_eq!(f.early.into_iter().collect::<Vec<_>>(), vec![(4, 2)]);
    }
}
