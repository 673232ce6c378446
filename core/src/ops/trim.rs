//! `ctxclean trim`: fit a token budget without ever breaking a tool pair.
//!
//! LangChain's `trim_messages` semantics, with its sharp edges fixed:
//! messages are grouped into units (an assistant message with tool calls
//! together with the results that answer it; every other message alone) and
//! units are kept or dropped whole, so a result never loses its call; the
//! first system message is never removed by `--end-on`; and the active tool
//! cycle at the very end is kept even over budget (llmfy's
//! `safe_trim_messages`), as is a system message that alone exceeds the
//! budget. Both cases are flagged as over budget.
//!
//! Linear time: every message is counted once; runs are grown unit by unit
//! against a running sum. Needs the whole conversation in memory.

use std::ops::Range;

use serde_json::{Map, Value};

use super::Outcome;
use crate::changes::{Action, Change};
use crate::numbers::{plural, thousands};
use crate::pairs::{active_cycle, Pairing};
use crate::tokens::Tokenizer;
use crate::transcript::{Content, Conversation, Message, Part, PartKind, Role};

/// Which end of the conversation to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Keep the most recent messages (and the system message).
    #[default]
    Last,
    /// Keep the first messages.
    First,
}

/// What `trim` keeps.
#[derive(Clone, Debug, Default)]
pub struct TrimSpec {
    /// The budget: the conversation's tokens as `stats` counts them.
    pub max_tokens: Option<usize>,
    /// Which end to keep.
    pub strategy: Strategy,
    /// With `last`: drop units from the front until one starts with these roles.
    pub start_on: Option<Vec<Role>>,
    /// Drop units from the end until one ends with these roles.
    pub end_on: Option<Vec<Role>>,
    /// Treat the first system message like any other (`--no-system`).
    pub no_system: bool,
    /// Cut the first unit that does not fit, if it is a single message.
    pub allow_partial: bool,
    /// At most this many messages besides the system message.
    pub max_messages: Option<usize>,
    /// With `last`, the last N user turns; with `first`, the first N.
    pub max_turns: Option<usize>,
    /// With `last`: the kept messages must open with the user's (Anthropic,
    /// Gemini and the agent logs that go to them). When the run that fits
    /// does not, a short user message, [`placeholder_text`], goes in front
    /// of it, counted in the budget. Set by [`crate::ops::Operation::apply_for`]
    /// for those formats unless `no_placeholder`.
    pub user_first: bool,
    /// `--no-placeholder`: in user-first formats, drop messages up to a real
    /// user message (`--start-on user`) instead of adding a placeholder.
    pub no_placeholder: bool,
    /// `--step`: with `last`, the first unit kept is a checkpoint, one where
    /// the running total of the body's tokens crosses a multiple of this,
    /// so the cut holds while the conversation grows (see [`Last::snap`]).
    pub step: Option<usize>,
    /// Checkpoints every this many tokens instead of every `step` (the
    /// proxy's: a cut keeps close to `max_tokens − step`, and the proxy's
    /// holding, not the checkpoints, keeps the prefix as it grows).
    pub grid: Option<usize>,
    /// `--budget-in billed`: `max_tokens` is in the provider's tokens,
    /// turned into ctxclean's by the conversation's [`crate::fit::scale_for`].
    pub billed: bool,
}

/// `trim` with a budget in the provider's tokens: the budget turned into
/// ctxclean's count by the conversation's scale (its log's fit, what was
/// learned of its model, or the default), said in the report, and in a
/// warning when it is the default.
pub fn in_billed_tokens(
    conv: Conversation,
    spec: &TrimSpec,
    tok: &Tokenizer,
    format: crate::format::Format,
) -> Outcome {
    let Some(billed) = spec.max_tokens else {
        let spec = TrimSpec {
            billed: false,
            ..spec.clone()
        };
        return crate::ops::Operation::apply_for(&spec, conv, tok, format);
    };
    let scale = crate::fit::scale_for(format, &conv, tok);
    let counted = scale.counted(billed);
    // Steps and checkpoints are parts of the budget: scaled with it.
    let part = |n: usize| (n as f64 * counted as f64 / billed.max(1) as f64).ceil() as usize;
    let spec = TrimSpec {
        billed: false,
        max_tokens: Some(counted),
        step: spec.step.map(|s| part(s).max(1)),
        grid: spec.grid.map(|g| part(g).max(1)),
        ..spec.clone()
    };
    let mut out = crate::ops::Operation::apply_for(&spec, conv, tok, format);
    crate::fit::flag_budget(&mut out.flags, billed, counted, &scale);
    out
}

/// The placeholder's text: `[Earlier conversation trimmed: 40 messages,
/// 12,310 tokens]`.
pub fn placeholder_text(messages: usize, tokens: usize) -> String {
    format!(
        "{PLACEHOLDER_PREFIX}{}, {} tokens]",
        plural(messages, "message"),
        thousands(tokens)
    )
}

/// How every placeholder begins.
pub const PLACEHOLDER_PREFIX: &str = "[Earlier conversation trimmed: ";

/// The messages and tokens a placeholder stands for, if `m` is one.
pub fn parse_placeholder(m: &Message) -> Option<(usize, usize)> {
    if m.role != Role::User || m.has_calls() {
        return None;
    }
    let text = match &m.content {
        Content::Text(s) => s.as_str(),
        Content::Parts(parts) => match parts.as_slice() {
            [Part {
                kind: PartKind::Text(s),
                ..
            }] => s.as_str(),
            _ => return None,
        },
        _ => return None,
    };
    let rest = text
        .strip_prefix(PLACEHOLDER_PREFIX)?
        .strip_suffix(" tokens]")?;
    let (n, m) = rest.split_once(", ")?;
    let n = n
        .strip_suffix(" messages")
        .or_else(|| n.strip_suffix(" message"))?;
    let number = |s: &str| -> Option<usize> {
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit() || c == ',') {
            return None;
        }
        s.replace(',', "").parse().ok()
    };
    Some((number(n)?, number(m)?))
}

/// Groups messages into units: an assistant message with tool calls runs
/// to the last result that answers it; a Responses reasoning item goes with
/// the assistant item it produced (OpenAI refuses either without the
/// other); every other message is its own unit.
pub fn units(msgs: &[Message], from: usize) -> Vec<Range<usize>> {
    let pairing = Pairing::new(msgs);
    let mut out = Vec::new();
    let mut i = from;
    while i < msgs.len() {
        let start = i;
        while i + 1 < msgs.len()
            && crate::validate::is_reasoning(&msgs[i])
            && msgs[i + 1].role == crate::transcript::Role::Assistant
        {
            i += 1;
        }
        let mut end = i + 1;
        if msgs[i].has_calls() {
            if let Some(last) = pairing.answers_of(i).max() {
                end = end.max(last + 1);
            }
            // Results of this call that come later pull the unit along; so
            // do results of calls opened inside it.
            let mut j = i + 1;
            while j < end {
                if msgs[j].has_calls() {
                    if let Some(last) = pairing.answers_of(j).max() {
                        end = end.max(last + 1);
                    }
                }
                j += 1;
            }
        }
        out.push(start..end);
        i = end;
    }
    out
}

/// Applies `trim` to one conversation.
pub fn trim(conv: Conversation, spec: &TrimSpec, tok: &Tokenizer) -> Outcome {
    let mut conv = conv;
    let msgs = std::mem::take(&mut conv.messages);
    // Messages are counted when a run reaches them, once; those a run never
    // reaches (the front of a long conversation with `last`) are not.
    let per = Counts {
        msgs: &msgs,
        tok,
        cache: std::cell::RefCell::new(vec![None; msgs.len()]),
    };
    let budget = spec
        .max_tokens
        .map(|n| n.saturating_sub(tok.reply_priming()));
    // Kept apart, whatever the budget, only when it calls no tool: a
    // system message carrying calls (a log can say so) goes with its
    // results, as any call does, or not at all.
    let system = (!spec.no_system
        && msgs
            .first()
            .is_some_and(|m| m.role.is_instruction() && !m.has_calls()))
    .then_some(0);
    let mut plan = Plan {
        keep: vec![false; msgs.len()],
        reason: vec!["over budget"; msgs.len()],
        partial: None,
        over_budget: None,
        warning: None,
        placeholder: None,
    };
    match spec.strategy {
        Strategy::Last => plan_last(&msgs, &per, budget, system, spec, tok, &mut plan),
        Strategy::First => plan_first(&msgs, &per, budget, system, spec, tok, &mut plan),
    }
    drop(per); // it borrows the messages, which are moved out below
    let mut changes = Vec::new();
    let mut out = Vec::with_capacity(msgs.len() + 1);
    let body = usize::from(system.is_some());
    for (i, m) in msgs.into_iter().enumerate() {
        if !plan.keep[i] {
            changes.push(Change::of(&m, i, Action::Removed, plan.reason[i]));
            continue;
        }
        if i >= body {
            if let Some(text) = plan.placeholder.take() {
                changes.push(Change::new(
                    out.len(),
                    Action::Added,
                    "placeholder: the kept messages do not open with the user's",
                ));
                out.push(Message::new(Role::User, text));
            }
        }
        match plan.partial.take_if(|(p, _)| *p == i) {
            Some((_, cut)) => {
                changes.push(Change::of(
                    &m,
                    i,
                    Action::Modified,
                    "partial: cut to fit the budget",
                ));
                out.push(cut);
            }
            None => out.push(m),
        }
    }
    conv.messages = out;
    let mut flags = Map::new();
    if spec.max_tokens.is_some_and(|n| n < tok.reply_priming()) {
        plan.over_budget = Some("the budget is below the tokens that prime every reply");
    }
    if let Some(reason) = plan.over_budget {
        flags.insert("over_budget".into(), Value::Bool(true));
        flags.insert("over_budget_reason".into(), Value::from(reason));
        flags.insert(
            "kept_tokens".into(),
            Value::from(tok.count_conversation(&conv)),
        );
    }
    if let Some(warning) = plan.warning {
        flags.insert("warning".into(), Value::from(warning));
    }
    Outcome {
        conversation: conv,
        changes,
        flags,
    }
}

/// Token counts of messages, computed on first use.
struct Counts<'a> {
    msgs: &'a [Message],
    tok: &'a Tokenizer,
    cache: std::cell::RefCell<Vec<Option<usize>>>,
}

impl Counts<'_> {
    fn get(&self, i: usize) -> usize {
        if let Some(n) = self.cache.borrow()[i] {
            return n;
        }
        let n = self.tok.count_message(&self.msgs[i]);
        self.cache.borrow_mut()[i] = Some(n);
        n
    }

    fn sum(&self, r: &Range<usize>) -> usize {
        r.clone().map(|i| self.get(i)).sum()
    }

    /// The tokens of `r` if they are at most `limit`; `None` as soon as
    /// they are more (the rest is not counted).
    fn sum_within(&self, r: &Range<usize>, limit: usize) -> Option<usize> {
        let mut total = 0;
        for i in r.clone() {
            let room = limit.checked_sub(total)?;
            let cached = self.cache.borrow()[i];
            let n = match cached {
                Some(n) => n,
                None => {
                    let n = self.tok.count_message_within(&self.msgs[i], room)?;
                    self.cache.borrow_mut()[i] = Some(n);
                    n
                }
            };
            total += n;
        }
        (total <= limit).then_some(total)
    }
}

struct Plan {
    keep: Vec<bool>,
    reason: Vec<&'static str>,
    /// A message cut to fit, and its tokens.
    partial: Option<(usize, Message)>,
    over_budget: Option<&'static str>,
    /// What the user asked for and did not get (never an empty conversation).
    warning: Option<&'static str>,
    /// The text of a user message to put in front of the kept messages.
    placeholder: Option<String>,
}

impl Plan {
    fn keep(&mut self, r: &Range<usize>) {
        for i in r.clone() {
            self.keep[i] = true;
        }
    }

    /// `--allow-partial`: keeps a single-message unit cut to `room` tokens
    /// (never a tool call or result); its tokens, if it could.
    fn cut(
        &mut self,
        msgs: &[Message],
        u: &Range<usize>,
        room: usize,
        keep_end: bool,
        tok: &Tokenizer,
    ) -> Option<usize> {
        let m = &msgs[u.start];
        if u.len() != 1 || m.has_calls() || m.role.is_result() {
            return None;
        }
        let cut = cut_to_fit(m, room, keep_end, tok)?;
        let n = tok.count_message(&cut);
        self.keep(u);
        self.partial = Some((u.start, cut));
        Some(n)
    }

    fn drop(&mut self, r: &Range<usize>, reason: &'static str) {
        for i in r.clone() {
            self.keep[i] = false;
            self.reason[i] = reason;
        }
        if self.partial.as_ref().is_some_and(|(p, _)| r.contains(p)) {
            self.partial = None;
        }
    }

    fn over(&mut self, reason: &'static str) {
        self.over_budget.get_or_insert(reason);
    }
}

fn role_in(m: &Message, roles: &Option<Vec<Role>>) -> bool {
    roles.as_ref().is_none_or(|rs| rs.contains(&m.role))
}

/// Whether a message may open a conversation for an API that wants the
/// user first: the user's own message, not a tool result.
fn opens(m: &Message) -> bool {
    m.role == Role::User
}

/// Whether the user asked for no messages at all.
fn asked_for_none(spec: &TrimSpec) -> bool {
    spec.max_messages == Some(0) || spec.max_turns == Some(0)
}

/// The index where turn `n` (counted from the end when `from_end`) starts:
/// a turn starts at a user message.
fn turn_bound(msgs: &[Message], body: usize, n: usize, from_end: bool) -> Option<usize> {
    let users: Vec<usize> = (body..msgs.len())
        .filter(|&i| msgs[i].role == Role::User)
        .collect();
    if from_end {
        if n == 0 {
            return Some(msgs.len());
        }
        (users.len() > n).then(|| users[users.len() - n])
    } else {
        users.get(n).copied()
    }
}

/// The messages and tokens before `first` (from `body` on) that a
/// placeholder stands for; an earlier placeholder among them counts for
/// what it stood for, so trimming a trimmed conversation tells the same.
fn removed_before(msgs: &[Message], per: &Counts<'_>, body: usize, first: usize) -> (usize, usize) {
    let (mut n, mut m) = (first - body, per.sum(&(body..first)));
    if first > body {
        if let Some((n0, m0)) = parse_placeholder(&msgs[body]) {
            n = n - 1 + n0;
            m = m - per.get(body) + m0;
        }
    }
    (n, m)
}

fn placeholder_tokens(text: &str, tok: &Tokenizer) -> usize {
    tok.count_message(&Message::new(Role::User, text))
}

fn plan_last(
    msgs: &[Message],
    per: &Counts<'_>,
    budget: Option<usize>,
    system: Option<usize>,
    spec: &TrimSpec,
    tok: &Tokenizer,
    plan: &mut Plan,
) {
    let body = usize::from(system.is_some());
    let units = units(msgs, body);
    let mut last = Last {
        msgs,
        per,
        spec,
        tok,
        body,
        end: units.len(),
        units,
        protected: None,
        avail: None,
        start: 0,
        used: 0,
        partial_tokens: None,
        blocked_by_budget: false,
        blocked_by_messages: false,
    };
    last.end_on(plan);
    last.budget(budget, system, plan);
    last.grow(plan);
    last.snap(plan);
    last.allow_partial(plan);
    last.start_on(plan);
    last.placeholder(plan);
    last.never_nothing(plan);
    last.same_placeholder(plan);
    if let Some(s) = system {
        plan.keep[s] = true;
    }
}

/// `trim --strategy last`: the run of units kept grows from the end; its
/// stages are the methods, in the order [`plan_last`] calls them.
struct Last<'a> {
    msgs: &'a [Message],
    per: &'a Counts<'a>,
    spec: &'a TrimSpec,
    tok: &'a Tokenizer,
    /// The first message after the system message.
    body: usize,
    units: Vec<Range<usize>>,
    /// The unit of the active cycle at the end, if any.
    protected: Option<usize>,
    /// Tokens the body may take.
    avail: Option<usize>,
    /// The units kept: `start..end`.
    start: usize,
    end: usize,
    used: usize,
    /// The tokens of the unit `--allow-partial` cut, while it is first.
    partial_tokens: Option<usize>,
    blocked_by_budget: bool,
    blocked_by_messages: bool,
}

impl Last<'_> {
    fn tokens(&self, r: &Range<usize>) -> usize {
        self.per.sum(r)
    }

    /// Whether units `a..b` hold a message that is not an instruction.
    fn says(&self, a: usize, b: usize) -> bool {
        (a..b).any(|k| !self.msgs[self.units[k].start].role.is_instruction())
    }

    fn starts_on(&self, k: usize) -> bool {
        role_in(&self.msgs[self.units[k].start], &self.spec.start_on)
    }

    /// Whether a placeholder goes in front of unit `k`.
    fn needs_placeholder(&self, k: usize) -> bool {
        self.spec.user_first && k > 0 && !opens(&self.msgs[self.units[k].start])
    }

    /// The placeholder in front of unit `k`.
    fn placeholder_for(&self, k: usize) -> String {
        let (n, m) = removed_before(self.msgs, self.per, self.body, self.units[k].start);
        placeholder_text(n, m)
    }

    /// What a placeholder in front of unit `k` would cost.
    fn reserve(&self, k: usize) -> usize {
        if self.needs_placeholder(k) {
            placeholder_tokens(&self.placeholder_for(k), self.tok)
        } else {
            0
        }
    }

    /// --end-on: drop units from the end (never the system message); the
    /// active cycle at the end of what is left (the output's end, so a
    /// second run protects what the first did) is protected.
    fn end_on(&mut self, plan: &mut Plan) {
        let (msgs, units) = (self.msgs, &self.units);
        while self.end > 0 && !role_in(&msgs[units[self.end - 1].end - 1], &self.spec.end_on) {
            self.end -= 1;
            plan.drop(&units[self.end], "end-on");
        }
        // Nothing left that speaks (or, with no system message kept apart,
        // nothing at all) while something was there.
        let none_left = (!self.says(0, self.end) && self.says(0, units.len()))
            || (self.body == 0 && self.end == 0 && !units.is_empty());
        if none_left && !asked_for_none(self.spec) {
            // Nothing ends on those roles: trim as if --end-on were not
            // given rather than leave nothing.
            self.end = units.len();
            plan.drop(&(self.body..msgs.len()), "over budget");
            plan.warning = Some(
                "no message ends on the --end-on roles; the conversation's last messages were kept rather than none",
            );
        }
        let units = &self.units;
        self.protected = (self.end > 0).then(|| self.end - 1).filter(|&u| {
            let kept = &msgs[..units[u].end];
            active_cycle(kept, &Pairing::new(kept)).is_some_and(|a| units[u].contains(&a))
        });
        self.start = self.end;
    }

    /// What the body may take: the budget less the system message.
    fn budget(&mut self, budget: Option<usize>, system: Option<usize>, plan: &mut Plan) {
        let system_tokens = system.map_or(0, |s| self.per.get(s));
        self.avail = budget.map(|b| b.saturating_sub(system_tokens));
        if let (Some(b), Some(_)) = (budget, system) {
            if system_tokens > b {
                plan.over("the system message alone exceeds the budget");
                self.avail = Some(0);
            }
        }
    }

    /// Grows the run from the end, unit by unit, while it fits.
    fn grow(&mut self, plan: &mut Plan) {
        let spec = self.spec;
        // Turns are counted in what --end-on left, as the budget is: a
        // second run, which starts from that, counts the same turns.
        let left = self
            .end
            .checked_sub(1)
            .map_or(self.body, |u| self.units[u].end);
        let min_start = spec
            .max_turns
            .map(|n| turn_bound(&self.msgs[..left], self.body, n, true).unwrap_or(self.body));
        let mut count = 0usize;
        while self.start > 0 {
            let u = &self.units[self.start - 1];
            let is_protected = Some(self.start - 1) == self.protected;
            // Counted only as far as the budget goes.
            let within = self.avail.map(|a| {
                a.checked_sub(self.used)
                    .and_then(|room| self.per.sum_within(u, room))
            });
            let fits_tokens = within.is_none_or(|w| w.is_some());
            let fits_messages = spec.max_messages.is_none_or(|n| count + u.len() <= n);
            let fits_turns = min_start.is_none_or(|m| u.start >= m);
            if !(is_protected || fits_tokens && fits_messages && fits_turns) {
                self.blocked_by_budget = !fits_tokens && fits_messages && fits_turns;
                self.blocked_by_messages = !fits_messages;
                if !fits_messages {
                    plan.drop(&(self.units[0].start..u.end), "max-messages");
                }
                if !fits_turns {
                    plan.drop(&(self.units[0].start..u.end), "max-turns");
                }
                break;
            }
            if is_protected && self.avail.is_some_and(|a| self.tokens(u) > a) {
                plan.over("the active tool cycle exceeds the budget");
            }
            self.used += self.tokens(u);
            count += u.len();
            self.start -= 1;
        }
        for u in &self.units[self.start..self.end] {
            plan.keep(u);
        }
    }

    /// --step: the run starts at the first checkpoint at or after where it
    /// would: a unit where the running total of the body's tokens crosses a
    /// multiple of the step. Checkpoints depend only on what comes before
    /// them, so while the conversation grows the run keeps its start (and
    /// a provider's prompt cache its prefix) until the budget pushes the cut
    /// past the next one. Never past the active cycle or the last unit.
    fn snap(&mut self, plan: &mut Plan) {
        let Some(step) = self.spec.step.filter(|_| self.start > 0) else {
            return;
        };
        let limit = self.protected.unwrap_or(self.end.saturating_sub(1));
        // What may stay: a step below the budget, so that what is kept can
        // grow by a step before the cut has to move again.
        let room = self.avail.map(|a| a.saturating_sub(step));
        let total: usize = self.units[..self.end].iter().map(|u| self.per.sum(u)).sum();
        // Unit k is a checkpoint when the tokens before it are in another
        // step than the tokens before the unit before it (the first unit is one).
        // A step larger than what fits under the budget has no checkpoint
        // that leaves the room: then the first unit that does.
        let (mut before, mut last_step) = (0usize, None);
        let (mut checkpoint, mut first_fit) = (None, None);
        for (k, u) in self.units.iter().enumerate().take(limit + 1) {
            let at = before / self.spec.grid.unwrap_or(step).max(1);
            let fits = room.is_none_or(|r| total - before <= r);
            if k >= self.start && fits && first_fit.is_none() {
                first_fit = Some(k);
            }
            if k >= self.start && last_step != Some(at) && fits {
                checkpoint = Some(k);
                break;
            }
            last_step = Some(at);
            before += self.per.sum(u);
        }
        let checkpoint = checkpoint.or(first_fit).or(Some(limit));
        let Some(k) = checkpoint.filter(|&k| k > self.start) else {
            return;
        };
        for u in &self.units[self.start..k] {
            plan.drop(u, "over budget");
            self.used -= self.per.sum(u);
        }
        self.start = k;
        self.blocked_by_budget = false;
    }

    /// --allow-partial: cut the first unit that does not fit.
    fn allow_partial(&mut self, plan: &mut Plan) {
        if !(self.spec.allow_partial && self.blocked_by_budget && self.start > 0) {
            return;
        }
        let room = self
            .avail
            .unwrap_or(usize::MAX)
            .saturating_sub(self.used)
            .saturating_sub(self.reserve(self.start - 1));
        if let Some(n) = plan.cut(self.msgs, &self.units[self.start - 1], room, true, self.tok) {
            self.start -= 1;
            self.used += n;
            self.partial_tokens = Some(n);
        }
    }

    /// --start-on: drop units from the front of the run; an active cycle
    /// that does not start as asked goes back to the message before it
    /// that does.
    fn start_on(&mut self, plan: &mut Plan) {
        while self.start < self.end
            && Some(self.start) != self.protected
            && !self.starts_on(self.start)
        {
            plan.drop(&self.units[self.start], "start-on");
            let t = self.tokens(&self.units[self.start]);
            self.used -= self.partial_tokens.take().unwrap_or(t);
            self.start += 1;
        }
        if !(self.spec.start_on.is_some()
            && self.start < self.end
            && Some(self.start) == self.protected
            && !self.starts_on(self.start))
        {
            return;
        }
        if let Some(j) = (0..self.start).rev().find(|&j| self.starts_on(j)) {
            for u in &self.units[j..self.start] {
                plan.keep(u);
                self.used += self.per.sum(u);
            }
            plan.partial = None;
            self.start = j;
            if self.avail.is_some_and(|a| self.used > a) {
                plan.over("the active tool cycle and the message it answers exceed the budget");
            }
        }
    }

    /// User-first formats: a placeholder opens a run that the user does
    /// not, and is paid for with the run's first units when it does not fit.
    fn placeholder(&mut self, plan: &mut Plan) {
        if !(self.start < self.end && self.needs_placeholder(self.start)) {
            return;
        }
        let (mut n, mut m) =
            removed_before(self.msgs, self.per, self.body, self.units[self.start].start);
        loop {
            let text = placeholder_text(n, m);
            let cost = placeholder_tokens(&text, self.tok);
            let fits = self.avail.is_none_or(|a| self.used + cost <= a);
            if fits || Some(self.start) == self.protected {
                if !fits {
                    plan.over("the active tool cycle exceeds the budget");
                }
                plan.placeholder = Some(text);
                break;
            }
            let u = self.units[self.start].clone();
            plan.drop(&u, "over budget");
            let t = self.tokens(&u);
            self.used -= self.partial_tokens.take().unwrap_or(t);
            n += u.len();
            m += t;
            self.start += 1;
            if self.start == self.end || !self.needs_placeholder(self.start) {
                break;
            }
        }
    }

    /// Never nothing: when no message fits, the last unit is kept (cut with
    /// --allow-partial) and the conversation flagged.
    fn never_nothing(&mut self, plan: &mut Plan) {
        let (start, end) = (self.start, self.end);
        if start == end
            && end > 0
            && self.body == 0
            && !self.says(0, end)
            && !asked_for_none(self.spec)
        {
            // Only instructions, none kept as the system message (--no-system,
            // LangChain's include_system=False): the last stays, said.
            let k = end - 1;
            plan.keep(&self.units[k]);
            let kept = self.tokens(&self.units[k].clone());
            if self.avail.is_some_and(|a| kept > a) {
                plan.over("not even the last message fits the budget");
            } else {
                plan.over("only instructions, and none kept as the system message: the last was kept rather than none");
            }
            self.start = k;
            return;
        }
        if !(!self.says(start, end) && self.says(0, end) && !asked_for_none(self.spec)) {
            return;
        }
        let units = &self.units;
        let mut k = (0..end)
            .rev()
            .find(|&k| !self.msgs[units[k].start].role.is_instruction())
            .expect("a message that is not an instruction");
        let mut why = if self.blocked_by_messages {
            "not even the last message (with its tool results) fits --max-messages"
        } else {
            "not even the last message fits the budget"
        };
        if self.spec.start_on.is_some() {
            // The shortest tail that starts as asked, if there is one.
            match (0..end).rev().find(|&j| self.starts_on(j)) {
                Some(j) => {
                    k = j;
                    why = "no run of messages that starts on the --start-on roles fits the budget";
                }
                None => {
                    plan.warning = Some(
                        "no message starts on the --start-on roles; the last message was kept rather than none",
                    );
                }
            }
        }
        let reserve = self.reserve(k);
        let room = self.avail.unwrap_or(usize::MAX).saturating_sub(reserve);
        // --allow-partial cuts the first unit kept (`k`) to what the units
        // after it leave, as it cuts the first unit that does not fit.
        let rest = if k + 1 < end {
            self.tokens(&(units[k + 1].start..units[end - 1].end))
        } else {
            0
        };
        let cut = (self.spec.allow_partial && rest <= room)
            .then(|| plan.cut(self.msgs, &units[k], room - rest, true, self.tok))
            .flatten()
            .map(|n| n + rest);
        for u in &units[k..end] {
            plan.keep(u);
        }
        let kept = cut.unwrap_or_else(|| self.tokens(&(units[k].start..units[end - 1].end)));
        if self.avail.is_some_and(|a| kept + reserve > a) || self.blocked_by_messages {
            plan.over(why);
        }
        if self.needs_placeholder(k) {
            plan.placeholder = Some(self.placeholder_for(k));
        }
        self.start = k;
    }

    /// An earlier placeholder that says the same stays as it was.
    fn same_placeholder(&self, plan: &mut Plan) {
        let Some(text) = &plan.placeholder else {
            return;
        };
        let before = self.units[self.start].start - 1; // a placeholder stands for something
        if before >= self.body
            && parse_placeholder(&self.msgs[before]).is_some()
            && self.msgs[before].content.text() == *text
        {
            plan.keep[before] = true;
            plan.placeholder = None;
        }
    }
}

fn plan_first(
    msgs: &[Message],
    per: &Counts<'_>,
    budget: Option<usize>,
    system: Option<usize>,
    spec: &TrimSpec,
    tok: &Tokenizer,
    plan: &mut Plan,
) {
    let units = units(msgs, 0);
    let tokens = |r: &Range<usize>| per.sum(r);
    let max_end = spec.max_turns.and_then(|n| turn_bound(msgs, 0, n, false));
    let (mut used, mut count, mut end) = (0usize, 0usize, 0usize);
    let mut blocked_by_budget = false;
    let mut blocked_by_messages = false;
    while end < units.len() {
        let u = &units[end];
        let is_system = system == Some(u.start);
        let fits_tokens = budget.is_none_or(|b| used + tokens(u) <= b);
        let fits_messages = is_system || spec.max_messages.is_none_or(|n| count + u.len() <= n);
        let fits_turns = max_end.is_none_or(|m| u.end <= m);
        if is_system && !fits_tokens {
            plan.over("the system message alone exceeds the budget");
        } else if !(fits_tokens && fits_messages && fits_turns) {
            blocked_by_budget = !fits_tokens && fits_messages && fits_turns;
            blocked_by_messages = !fits_messages;
            let rest = u.start..msgs.len();
            if !fits_messages {
                plan.drop(&rest, "max-messages");
            } else if !fits_turns {
                plan.drop(&rest, "max-turns");
            }
            break;
        }
        used += tokens(u);
        if !is_system {
            count += u.len();
        }
        plan.keep(u);
        end += 1;
    }
    // An instruction is not cut when nothing said would come before it and
    // something said comes after: the rule below keeps that message, and
    // cutting both would cut two (and a rerun would cut again).
    let says_in = |a: usize, b: usize| (a..b).any(|k| !msgs[units[k].start].role.is_instruction());
    let lone_instruction = end < units.len()
        && msgs[units[end].start].role.is_instruction()
        && !says_in(0, end)
        && says_in(end + 1, units.len());
    if spec.allow_partial && blocked_by_budget && end < units.len() && !lone_instruction {
        let room = budget.unwrap_or(usize::MAX).saturating_sub(used);
        if plan.cut(msgs, &units[end], room, false, tok).is_some() {
            end += 1;
        }
    }
    // --end-on: drop trailing units (never the system message).
    let full = end;
    let partial = plan.partial.clone();
    while end > 0
        && !role_in(&msgs[units[end - 1].end - 1], &spec.end_on)
        && system != Some(units[end - 1].start)
    {
        end -= 1;
        plan.drop(&units[end], "end-on");
    }
    // Never nothing: when no message but instructions is kept, the first
    // one is (cut with --allow-partial), with what comes before it.
    let says = |a: usize, b: usize| (a..b).any(|k| !msgs[units[k].start].role.is_instruction());
    if says(0, units.len()) && !says(0, end) && !asked_for_none(spec) {
        if says(0, full) {
            // --end-on took everything: keep what fit.
            for u in &units[..full] {
                plan.keep(u);
            }
            plan.partial = partial;
            plan.warning = Some(
                "no message ends on the --end-on roles; the conversation's first messages were kept rather than none",
            );
            return;
        }
        let last = (end..units.len())
            .find(|&k| !msgs[units[k].start].role.is_instruction())
            .expect("a message that is not an instruction");
        let before: usize = (0..units[end].start)
            .filter(|&i| plan.keep[i])
            .map(|i| match &plan.partial {
                Some((p, cut)) if *p == i => tok.count_message(cut),
                _ => per.get(i),
            })
            .sum();
        let room = budget.unwrap_or(usize::MAX).saturating_sub(before);
        let cut = (spec.allow_partial && last == end)
            .then(|| plan.cut(msgs, &units[end], room, false, tok))
            .flatten();
        for u in &units[end..=last] {
            plan.keep(u);
        }
        let kept = cut.unwrap_or_else(|| tokens(&(units[end].start..units[last].end)));
        if budget.is_some_and(|b| before + kept > b) || blocked_by_messages {
            plan.over(if blocked_by_messages {
                "not even the first message (with its tool results) fits --max-messages"
            } else {
                "not even the first message fits the budget"
            });
        }
    }
}

/// The message cut to fit `room` tokens: whole blocks go first, then lines of
/// text; `keep_end` keeps the last ones, else the first. `None` when not even
/// one line fits.
fn cut_to_fit(m: &Message, room: usize, keep_end: bool, tok: &Tokenizer) -> Option<Message> {
    let fits = |c: &Message| tok.count_message(c) <= room;
    let with = |content: Content| m.with_content(content);
    match &m.content {
        Content::Text(s) => {
            let cut = cut_text(s, keep_end, |t| fits(&with(Content::Text(t.to_string()))))?;
            Some(with(Content::Text(cut)))
        }
        Content::Parts(parts) => {
            let n = parts.len();
            for k in (1..=n).rev() {
                let kept: Vec<Part> = if keep_end {
                    parts[n - k..].to_vec()
                } else {
                    parts[..k].to_vec()
                };
                let candidate = with(Content::Parts(kept));
                if fits(&candidate) {
                    return (k < n).then_some(candidate);
                }
            }
            // Not even one block fits: cut the text of the nearest one.
            let edge = if keep_end { &parts[n - 1] } else { &parts[0] };
            let PartKind::Text(t) = &edge.kind else {
                return None;
            };
            let cut = cut_text(t, keep_end, |c| {
                fits(&with(Content::Parts(vec![Part {
                    kind: PartKind::Text(c.to_string()),
                    ..edge.clone()
                }])))
            })?;
            Some(with(Content::Parts(vec![Part {
                kind: PartKind::Text(cut),
                ..edge.clone()
            }])))
        }
        _ => None,
    }
}

/// The most lines of `s` (split after each newline, newlines kept) that
/// pass `fits`, taken from its end or its start. Binary search: lines only
/// add tokens, so fitting is monotone in the number of lines.
fn cut_text(s: &str, keep_end: bool, fits: impl Fn(&str) -> bool) -> Option<String> {
    let lines: Vec<&str> = s.split_inclusive('\n').collect();
    let n = lines.len();
    let take = |k: usize| -> String {
        if keep_end {
            lines[n - k..].concat()
        } else {
            lines[..k].concat()
        }
    };
    let (mut lo, mut hi) = (0, n); // lo fits (trivially 0), hi is the upper bound
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&take(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (lo > 0 && lo < n).then(|| take(lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::{call_msg, result_msg};
    use crate::tokens::Encoding;

    fn approx() -> Tokenizer {
        Tokenizer::new(Encoding::Approx).unwrap()
    }

    fn msg(role: Role, text: &str) -> Message {
        Message::new(role, text)
    }

    fn roles(out: &Outcome) -> Vec<&'static str> {
        out.conversation
            .messages
            .iter()
            .map(|m| m.role.as_str())
            .collect()
    }

    fn run(msgs: Vec<Message>, spec: TrimSpec) -> Outcome {
        trim(Conversation::new(msgs), &spec, &approx())
    }

    /// One turn of a growing conversation: a question and its answer.
    fn exchange(turn: usize) -> [Message; 2] {
        [
            msg(
                Role::User,
                &format!("question {turn}: how does step {turn} go on"),
            ),
            msg(
                Role::Assistant,
                &format!("answer {turn}: it goes on like the one before"),
            ),
        ]
    }

    /// The first message kept of each turn of a growing conversation, and
    /// whether every one fit.
    fn cuts_as_it_grows(spec: &TrimSpec) -> (Vec<usize>, bool) {
        let mut msgs = vec![msg(Role::System, "You answer in one line.")];
        let (mut firsts, mut fit) = (Vec::new(), true);
        for turn in 0..60 {
            msgs.extend(exchange(turn));
            let out = run(msgs.clone(), spec.clone());
            let text = out.conversation.messages[1].content.text();
            let first = msgs.iter().position(|m| m.content.text() == text).unwrap();
            firsts.push(first);
            fit &= approx().count_conversation(&out.conversation) <= spec.max_tokens.unwrap();
        }
        (firsts, fit)
    }

    #[test]
    fn a_step_holds_the_cut_while_the_conversation_grows() {
        let plain = budget(400);
        let stepped = TrimSpec {
            step: Some(100),
            ..budget(400)
        };
        let moves = |firsts: &[usize]| firsts.windows(2).filter(|w| w[0] != w[1]).count();
        let (plain_firsts, plain_fit) = cuts_as_it_grows(&plain);
        let (stepped_firsts, stepped_fit) = cuts_as_it_grows(&stepped);
        assert!(plain_fit && stepped_fit);
        // Without a step the cut moves on almost every turn once over
        // budget; with one, only when a block goes.
        assert!(moves(&plain_firsts) > 30, "{plain_firsts:?}");
        assert!(
            moves(&stepped_firsts) * 3 < moves(&plain_firsts),
            "{stepped_firsts:?}"
        );
        // It keeps less than without a step: a step of room to grow into.
        assert!(stepped_firsts
            .iter()
            .zip(&plain_firsts)
            .all(|(s, p)| s >= p));
    }

    #[test]
    fn a_finer_grid_keeps_close_to_the_budget_less_a_step() {
        // Checkpoints every step: what a cut keeps lands anywhere between
        // nothing and the room (400 − 200); every step / 8 (the proxy's),
        // within a grid of the room, however long the conversation.
        let kept = |grid: Option<usize>, turns: usize| {
            let mut msgs = vec![msg(Role::System, "You answer in one line.")];
            for turn in 0..turns {
                msgs.extend(exchange(turn));
            }
            let spec = TrimSpec {
                step: Some(200),
                grid,
                ..budget(400)
            };
            approx().count_conversation(&run(msgs, spec).conversation)
        };
        let coarse: Vec<usize> = (20..80).map(|t| kept(None, t)).collect();
        let fine: Vec<usize> = (20..80).map(|t| kept(Some(25), t)).collect();
        assert!(coarse.iter().any(|&k| k < 100), "{coarse:?}");
        assert!(fine.iter().all(|&k| (150..=200).contains(&k)), "{fine:?}");
    }

    #[test]
    fn a_step_larger_than_fits_still_leaves_its_room() {
        // Checkpoints every 350 tokens of a 400-token budget: none leaves
        // the 350 of room once the conversation is past 400, so the cut
        // goes to the first message that does (without it, nothing was cut
        // below the budget and the cut moved every turn).
        let spec = TrimSpec {
            step: Some(350),
            ..budget(400)
        };
        let mut msgs = vec![msg(Role::System, "You answer in one line.")];
        for turn in 0..40 {
            msgs.extend(exchange(turn));
        }
        let whole = approx().count_conversation(&Conversation::new(msgs.clone()));
        assert!(whole > 400);
        let out = run(msgs, spec);
        let kept = approx().count_conversation(&out.conversation);
        assert!(kept <= 50 + 30, "{kept}");
        assert!(out.conversation.messages.len() > 1);
    }

    fn budget(n: usize) -> TrimSpec {
        TrimSpec {
            max_tokens: Some(n),
            ..TrimSpec::default()
        }
    }

    // With `approx`, a message of role `user` and 4 chars of text costs
    // ceil(8 / 4) + 3 = 5 tokens; no reply priming.

    #[test]
    fn keeps_the_system_message_and_the_latest_that_fit() {
        let msgs = vec![
            msg(Role::System, "sys!"),
            msg(Role::User, "aaaa"),
            msg(Role::Assistant, "bbbb"),
            msg(Role::User, "cccc"),
        ];
        let out = run(msgs, budget(11));
        assert_eq!(roles(&out), ["system", "user"]);
        assert_eq!(out.changes.len(), 2);
        assert!(out.changes.iter().all(|c| c.reason == "over budget"));
        assert!(out.flags.is_empty());
    }

    #[test]
    fn a_system_message_that_calls_a_tool_goes_with_its_results() {
        // Found by the `operations` fuzz target: a log whose first message,
        // a system message, carries calls. Kept apart as the system message,
        // it lost its results to the budget and its calls went unanswered.
        let mut sys = call_msg(&["c1"]);
        sys.role = Role::System;
        sys.content = Content::Text("You are a careful assistant, and you called this.".into());
        let msgs = vec![
            sys,
            result_msg("c1"),
            msg(Role::User, "aaaa"),
            msg(Role::Assistant, "bbbb"),
        ];
        for max in [5, 11, 40, 1000] {
            let out = run(msgs.clone(), budget(max));
            let kept = &out.conversation.messages;
            assert!(
                crate::pairs::pair_problems(kept).is_empty(),
                "budget {max}: {:?}",
                roles(&out)
            );
            // The call and its result stay or go together.
            assert_eq!(
                kept.iter().any(|m| !m.calls().is_empty()),
                kept.iter().any(|m| m.tool_call_id.is_some()),
                "budget {max}"
            );
        }
        assert_eq!(run(msgs, budget(1000)).conversation.messages.len(), 4);
    }

    #[test]
    fn a_budget_below_the_reply_priming_is_flagged() {
        // Found by the property test: an empty conversation still costs the
        // 3 tokens that prime the reply.
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let out = trim(Conversation::new(Vec::new()), &budget(0), &tok);
        assert_eq!(out.flags["over_budget"], true);
    }

    #[test]
    fn empty_and_system_only() {
        let out = run(Vec::new(), budget(5));
        assert!(out.conversation.messages.is_empty());
        let out = run(vec![msg(Role::System, "s")], budget(100));
        assert_eq!(roles(&out), ["system"]);
    }

    #[test]
    fn a_system_message_over_budget_is_kept_and_flagged() {
        let msgs = vec![msg(Role::System, &"x".repeat(100)), msg(Role::User, "hi")];
        let out = run(msgs, budget(10));
        // Never nothing but the system message: the last message stays too.
        assert_eq!(roles(&out), ["system", "user"]);
        assert_eq!(out.flags["over_budget"], true);
        assert_eq!(
            out.flags["over_budget_reason"],
            "the system message alone exceeds the budget"
        );
    }

    #[test]
    fn tool_units_go_whole_never_orphaning_a_result() {
        // LangChain's orphan case: [S, H, AI(call), Tool, AI, H] with a small budget.
        let msgs = vec![
            msg(Role::System, "s"),
            msg(Role::User, "question"),
            call_msg(&["c1", "c2"]),
            result_msg("c1"),
            result_msg("c2"),
            msg(Role::Assistant, "answer"),
            msg(Role::User, "thanks"),
        ];
        for b in 0..80 {
            let out = run(msgs.clone(), budget(b));
            assert!(
                crate::pairs::pair_problems(&out.conversation.messages).is_empty(),
                "budget {b}"
            );
        }
        let out = run(msgs, budget(20));
        assert_eq!(roles(&out), ["system", "assistant", "user"]);
    }

    #[test]
    fn the_active_cycle_is_kept_over_budget() {
        let msgs = vec![
            msg(Role::User, "go"),
            call_msg(&["c1"]),
            Message::new(Role::Tool, "x".repeat(400)).with_call_id("c1"),
        ];
        let out = run(msgs, budget(10));
        assert_eq!(roles(&out), ["assistant", "tool"]);
        assert_eq!(
            out.flags["over_budget_reason"],
            "the active tool cycle exceeds the budget"
        );
        // An unanswered call at the end is an active cycle too.
        let out = run(
            vec![
                msg(Role::User, "go"),
                call_msg(&["c1", "c2"]),
                result_msg("c1"),
            ],
            budget(3),
        );
        assert_eq!(roles(&out), ["assistant", "tool"]);
    }

    #[test]
    fn max_turns_counts_the_turns_end_on_left_so_a_second_run_changes_nothing() {
        // The turns after the tool cycle go with --end-on tool; counted
        // among the turns, they pushed the question out of --max-turns 1 on
        // the first run, and a second run (without them) cut it to fit.
        let msgs = vec![
            msg(
                Role::User,
                &"why does the build fail on the second core\n".repeat(8),
            ),
            call_msg(&["c1"]),
            result_msg("c1"),
            msg(Role::User, "and now?"),
            msg(Role::Assistant, "now it builds"),
        ];
        let spec = TrimSpec {
            end_on: Some(vec![Role::Tool]),
            max_turns: Some(1),
            allow_partial: true,
            ..budget(40)
        };
        let once = run(msgs, spec.clone());
        assert_eq!(
            roles(&once),
            ["user", "assistant", "tool"],
            "{:?} {:?}",
            once.changes,
            once.flags
        );
        assert!(approx().count_conversation(&once.conversation) <= 40);
        let twice = run(once.conversation.messages.clone(), spec);
        assert_eq!(twice.conversation.messages, once.conversation.messages);
        assert!(twice.changes.is_empty(), "{:?}", twice.changes);
    }

    #[test]
    fn end_on_and_start_on() {
        let msgs = vec![
            msg(Role::System, "s"),
            msg(Role::User, "u1"),
            msg(Role::Assistant, "a1"),
            msg(Role::User, "u2"),
            msg(Role::Assistant, "a2"),
        ];
        let spec = TrimSpec {
            end_on: Some(vec![Role::User]),
            ..budget(1000)
        };
        let out = run(msgs.clone(), spec);
        assert_eq!(roles(&out), ["system", "user", "assistant", "user"]);
        assert_eq!(out.changes[0].reason, "end-on");
        // end-on that matches nothing would leave nothing: it is ignored,
        // with a warning.
        let spec = TrimSpec {
            end_on: Some(vec![Role::Tool]),
            ..budget(1000)
        };
        let out = run(msgs.clone(), spec);
        assert_eq!(
            roles(&out),
            ["system", "user", "assistant", "user", "assistant"]
        );
        assert!(out.flags["warning"].as_str().unwrap().contains("--end-on"));
        // Unless nothing was asked for.
        let spec = TrimSpec {
            end_on: Some(vec![Role::Tool]),
            max_messages: Some(0),
            ..budget(1000)
        };
        assert_eq!(roles(&run(msgs.clone(), spec)), ["system"]);
        // start-on applies even when everything fits.
        let spec = TrimSpec {
            start_on: Some(vec![Role::Assistant]),
            ..budget(1000)
        };
        assert_eq!(
            roles(&run(msgs, spec)),
            ["system", "assistant", "user", "assistant"]
        );
    }

    #[test]
    fn first_strategy() {
        let msgs = vec![
            msg(Role::System, "s"),
            msg(Role::User, "aaaa"),
            msg(Role::Assistant, "bbbb"),
            msg(Role::User, "cccc"),
        ];
        let spec = TrimSpec {
            strategy: Strategy::First,
            end_on: Some(vec![Role::User]),
            ..budget(16)
        };
        assert_eq!(roles(&run(msgs, spec)), ["system", "user"]);
    }

    #[test]
    fn message_and_turn_limits() {
        let msgs = vec![
            msg(Role::System, "s"),
            msg(Role::User, "u1"),
            msg(Role::Assistant, "a1"),
            msg(Role::User, "u2"),
            call_msg(&["c"]),
            result_msg("c"),
            msg(Role::Assistant, "a2"),
        ];
        let spec = TrimSpec {
            max_messages: Some(3),
            ..TrimSpec::default()
        };
        let out = run(msgs.clone(), spec);
        assert_eq!(roles(&out), ["system", "assistant", "tool", "assistant"]);
        assert!(out.changes.iter().all(|c| c.reason == "max-messages"));
        let spec = TrimSpec {
            max_turns: Some(1),
            ..TrimSpec::default()
        };
        assert_eq!(
            roles(&run(msgs, spec)),
            ["system", "user", "assistant", "tool", "assistant"]
        );
    }

    #[test]
    fn partial_keeps_the_last_lines() {
        let msgs = vec![
            msg(Role::User, "line one\nline two\nline three\n"),
            msg(Role::User, "end"),
        ];
        let spec = TrimSpec {
            allow_partial: true,
            ..budget(13)
        };
        let out = run(msgs, spec);
        assert_eq!(out.conversation.messages[0].content.text(), "line three\n");
        assert_eq!(out.changes[0].action, Action::Modified);
        let spec = TrimSpec {
            allow_partial: true,
            strategy: Strategy::First,
            ..budget(8)
        };
        let out = run(
            vec![msg(Role::User, "line one\nline two\nline three\n")],
            spec,
        );
        assert_eq!(out.conversation.messages[0].content.text(), "line one\n");
    }

    fn user_first(n: usize) -> TrimSpec {
        TrimSpec {
            user_first: true,
            ..budget(n)
        }
    }

    fn agent_session() -> Vec<Message> {
        vec![
            msg(Role::System, "sys!"),
            msg(Role::User, &"please fix the build ".repeat(20)),
            call_msg(&["c1"]),
            result_msg("c1"),
            msg(Role::Assistant, "fixed the first error"),
            call_msg(&["c2"]),
            result_msg("c2"),
            msg(Role::Assistant, "the build passes now"),
        ]
    }

    #[test]
    fn a_tail_that_does_not_open_with_the_user_gets_a_placeholder() {
        let tok = approx();
        let out = trim(Conversation::new(agent_session()), &user_first(60), &tok);
        let m = &out.conversation.messages;
        assert_eq!(m[0].role, Role::System);
        assert_eq!(m[1].role, Role::User);
        let (n, t) = parse_placeholder(&m[1]).expect("a placeholder");
        assert_eq!(n, 8 - (m.len() - 1)); // every message trimmed, counted
        assert!(t > 0);
        assert!(tok.count_conversation(&out.conversation) <= 60, "{m:?}");
        let added: Vec<_> = out
            .changes
            .iter()
            .filter(|c| c.action == Action::Added)
            .collect();
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].index, 1);
        assert!(out.flags.is_empty(), "{:?}", out.flags);
        // Without user_first: OpenAI's rules, no placeholder.
        let out = run(agent_session(), budget(60));
        assert!(out
            .conversation
            .messages
            .iter()
            .all(|m| parse_placeholder(m).is_none()));
        assert_eq!(out.conversation.messages[1].role, Role::Assistant);
    }

    #[test]
    fn never_empty_and_flagged_when_nothing_fits() {
        let tok = approx();
        for b in 0..40 {
            let out = trim(Conversation::new(agent_session()), &user_first(b), &tok);
            let m = &out.conversation.messages;
            assert!(m.len() >= 3, "budget {b}: {m:?}");
            assert_eq!(m[1].role, Role::User, "budget {b}");
            let over = tok.count_conversation(&out.conversation) > b;
            assert_eq!(
                out.flags.get("over_budget").is_some(),
                over,
                "budget {b}: {:?}",
                out.flags
            );
            assert!(crate::pairs::pair_problems(m).is_empty());
        }
        let out = run(agent_session(), budget(6));
        assert_eq!(roles(&out), ["system", "assistant"]);
        assert_eq!(
            out.flags["over_budget_reason"],
            "not even the last message fits the budget"
        );
        // --max-messages 0 asks for nothing.
        let spec = TrimSpec {
            max_messages: Some(0),
            ..user_first(1000)
        };
        assert_eq!(roles(&run(agent_session(), spec)), ["system"]);
    }

    #[test]
    fn trimming_a_trimmed_conversation_changes_nothing() {
        let tok = approx();
        for b in 0..200 {
            let spec = TrimSpec {
                allow_partial: b % 2 == 1,
                ..user_first(b)
            };
            let once = trim(Conversation::new(agent_session()), &spec, &tok);
            let twice = trim(once.conversation.clone(), &spec, &tok);
            assert_eq!(
                once.conversation.messages, twice.conversation.messages,
                "budget {b}"
            );
            assert!(twice.changes.is_empty(), "budget {b}: {:?}", twice.changes);
        }
    }

    #[test]
    fn explicit_start_on_drops_to_the_user_and_keeps_the_last_one() {
        let spec = TrimSpec {
            start_on: Some(vec![Role::User]),
            ..budget(40)
        };
        let out = run(agent_session(), spec);
        // The only user message is far over budget: kept, with what follows.
        assert_eq!(out.conversation.messages.len(), 8);
        assert_eq!(
            out.flags["over_budget_reason"],
            "no run of messages that starts on the --start-on roles fits the budget"
        );
    }

    #[test]
    fn placeholders_read_back() {
        for (n, t) in [(1, 0), (2, 999), (40, 1_234_567)] {
            let m = Message::new(Role::User, placeholder_text(n, t));
            assert_eq!(parse_placeholder(&m), Some((n, t)));
        }
        assert_eq!(
            placeholder_text(1, 12),
            "[Earlier conversation trimmed: 1 message, 12 tokens]"
        );
        assert!(parse_placeholder(&msg(Role::User, "[Earlier conversation trimmed: x]")).is_none());
        assert!(parse_placeholder(&msg(Role::Assistant, &placeholder_text(1, 1))).is_none());
    }
}
