//! Which tool result answers which tool call.
//!
//! Every operation keeps one invariant: no tool result without its call, and
//! no tool call without its result except in the active cycle at the very
//! end. This module pairs them once, so operations, `stats` and the
//! invariant check agree on what a pair is.
//!
//! Pairing rules:
//! - a result with a `tool_call_id` answers the first unanswered call with
//!   that id in the latest message that holds it, preferring one whose name
//!   matches the result's `name` (two calls of one id in a turn, the result
//!   read from inside the second: LibreChat, Open WebUI);
//! - a result without one (legacy `role: function`, local models) answers the
//!   first unanswered id-less call of the latest assistant message with calls,
//!   preferring one whose name matches the result's `name`;
//! - a call is answered once; a second result for it is an orphan.

use std::borrow::Borrow;
use std::collections::VecDeque;

use crate::memo::FastMap;
use crate::transcript::{Message, ToolCall};

/// A tool call: the index of its assistant message and its position there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallRef {
    /// Index of the assistant message.
    pub message: usize,
    /// Index of the call within the message's `tool_calls`.
    pub call: usize,
}

/// The pairing of tool calls and results in one list of messages.
#[derive(Clone, Debug, Default)]
pub struct Pairing {
    /// For each message: the call it answers, if it is a paired result.
    result_of: Vec<Option<CallRef>>,
    /// For each message: for each of its calls, the result message answering it.
    answered_by: Vec<Vec<Option<usize>>>,
}

/// Calls by their id (the first of an id kept; `None` for the first
/// without one): for a writer that finds the call of each entry it wrote
/// before, where a search of the list for each was quadratic in a turn of
/// many calls.
pub(crate) fn calls_by_id(calls: &[ToolCall]) -> FastMap<Option<&str>, &ToolCall> {
    let mut by_id = FastMap::with_capacity_and_hasher(calls.len(), Default::default());
    for c in calls {
        by_id.entry(c.id.as_deref()).or_insert(c);
    }
    by_id
}

/// Calls by their place in the list they were read from (`ToolCall::slot`):
/// each original's own, though two share an id.
pub(crate) fn calls_by_slot(calls: &[ToolCall]) -> FastMap<usize, &ToolCall> {
    calls.iter().filter_map(|c| Some((c.slot?, c))).collect()
}

/// The first call of `queue` not answered yet, the answered ones before it
/// dropped.
fn first_open(
    queue: &mut VecDeque<CallRef>,
    answered_by: &[Vec<Option<usize>>],
) -> Option<CallRef> {
    while let Some(r) = queue.front() {
        if answered_by[r.message][r.call].is_none() {
            return Some(*r);
        }
        queue.pop_front();
    }
    None
}

impl Pairing {
    /// Pairs the calls and results of `messages`.
    pub fn new<M: Borrow<Message>>(messages: &[M]) -> Pairing {
        let messages: Vec<&Message> = messages.iter().map(Borrow::borrow).collect();
        let mut result_of = vec![None; messages.len()];
        let mut answered_by: Vec<Vec<Option<usize>>> = messages
            .iter()
            .map(|m| vec![None; m.calls().len()])
            .collect();
        // Sized for every call at once, and hashed with foldhash (ids are
        // the client's, so seeded): built for each operation of each
        // request, it was a tenth of a replay's pairing in rehashes and
        // SipHash.
        let calls = messages.iter().map(|m| m.calls().len()).sum();
        // Each id's calls in the latest message that holds the id, in order:
        // a result takes the first open one, so two calls of one id in one
        // turn (a model's bug that `validate` names) each take their own
        // result, in order, as a reader of the turn pairs them.
        let mut by_id: FastMap<&str, VecDeque<CallRef>> =
            FastMap::with_capacity_and_hasher(calls, Default::default());
        // And by id and name, for an id a message gives more than one call
        // (rare: nothing more is hashed otherwise): a result whose name one
        // of them has takes the first open one of its name.
        let mut by_id_name: FastMap<(&str, &str), VecDeque<CallRef>> = FastMap::default();
        // The latest message's calls without an id, in order, and by name:
        // a result without an id takes the first open one of its name, else
        // the first open one. Answered calls are dropped from the fronts as
        // they are met, so a turn of many such calls is paired in linear
        // time (a search of the list for each result was quadratic).
        let mut idless: VecDeque<CallRef> = VecDeque::new();
        let mut idless_by_name: FastMap<&str, VecDeque<CallRef>> = FastMap::default();
        for (i, m) in messages.iter().enumerate() {
            if m.has_calls() {
                idless.clear();
                idless_by_name.clear();
                for (c, call) in m.calls().iter().enumerate() {
                    let r = CallRef {
                        message: i,
                        call: c,
                    };
                    match &call.id {
                        Some(id) => {
                            let queue = by_id.entry(id.as_str()).or_default();
                            if queue.back().is_some_and(|q| q.message != i) {
                                queue.clear();
                            }
                            queue.push_back(r);
                            if queue.len() > 1 {
                                // An id this message gives twice: its calls
                                // by name too (the first once the second
                                // comes).
                                let first = (queue.len() == 2).then(|| queue[0]);
                                for q in first.into_iter().chain([r]) {
                                    let name = messages[q.message].calls()[q.call].name.as_str();
                                    let named = by_id_name.entry((id.as_str(), name)).or_default();
                                    if named.back().is_some_and(|n| n.message != i) {
                                        named.clear();
                                    }
                                    named.push_back(q);
                                }
                            }
                        }
                        None => {
                            idless.push_back(r);
                            idless_by_name
                                .entry(call.name.as_str())
                                .or_default()
                                .push_back(r);
                        }
                    }
                }
            }
            if !m.role.is_result() {
                continue;
            }
            let target = match &m.tool_call_id {
                Some(id) => {
                    let id = id.as_str();
                    // Only the latest message's calls of the id: a queue of
                    // its name from an earlier one is stale.
                    let latest = by_id.get(id).and_then(|q| q.back()).map(|r| r.message);
                    let named = (m.name.as_deref())
                        .filter(|_| !by_id_name.is_empty())
                        .and_then(|name| by_id_name.get_mut(&(id, name)))
                        .filter(|q| q.back().map(|r| r.message) == latest)
                        .and_then(|queue| first_open(queue, &answered_by));
                    named.or_else(|| {
                        (by_id.get_mut(id)).and_then(|queue| first_open(queue, &answered_by))
                    })
                }
                None => {
                    let by_name = m
                        .name
                        .as_deref()
                        .and_then(|name| idless_by_name.get_mut(name))
                        .and_then(|queue| first_open(queue, &answered_by));
                    by_name.or_else(|| first_open(&mut idless, &answered_by))
                }
            };
            if let Some(r) = target {
                if answered_by[r.message][r.call].is_none() {
                    answered_by[r.message][r.call] = Some(i);
                    result_of[i] = Some(r);
                }
            }
        }
        Pairing {
            result_of,
            answered_by,
        }
    }

    /// The call a result message answers, if it is a paired result.
    pub fn result_of(&self, message: usize) -> Option<CallRef> {
        self.result_of.get(message).copied().flatten()
    }

    /// The result message answering a call, if any.
    pub fn answer(&self, r: CallRef) -> Option<usize> {
        self.answered_by
            .get(r.message)
            .and_then(|calls| calls.get(r.call))
            .copied()
            .flatten()
    }

    /// The result messages answering any call of `message`.
    pub fn answers_of(&self, message: usize) -> impl Iterator<Item = usize> + '_ {
        self.answered_by
            .get(message)
            .into_iter()
            .flatten()
            .filter_map(|a| *a)
    }

    /// Whether every call of `message` has a result.
    pub fn fully_answered(&self, message: usize) -> bool {
        self.answered_by
            .get(message)
            .is_none_or(|calls| calls.iter().all(Option::is_some))
    }
}

/// The index of the assistant message that opens the active tool cycle: the
/// last assistant message with calls, when nothing but its own results
/// follows it.
pub fn active_cycle<M: Borrow<Message>>(messages: &[M], pairing: &Pairing) -> Option<usize> {
    let start = messages.iter().rposition(|m| m.borrow().has_calls())?;
    let all_results = (start + 1..messages.len())
        .all(|i| pairing.result_of(i).is_some_and(|r| r.message == start));
    all_results.then_some(start)
}

/// A broken tool pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairProblem {
    /// A result message (at this index) that answers no call.
    OrphanResult(usize),
    /// A call without a result, outside the active cycle.
    Unanswered(CallRef),
}

/// The broken pairs of a message list: the invariant every operation keeps.
pub fn pair_problems(messages: &[Message]) -> Vec<PairProblem> {
    let pairing = Pairing::new(messages);
    let active = active_cycle(messages, &pairing);
    let mut problems = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.role.is_result() && pairing.result_of(i).is_none() {
            problems.push(PairProblem::OrphanResult(i));
        }
        if Some(i) != active {
            for c in 0..m.calls().len() {
                let r = CallRef {
                    message: i,
                    call: c,
                };
                if pairing.answer(r).is_none() {
                    problems.push(PairProblem::Unanswered(r));
                }
            }
        }
    }
    problems
}

/// The tool name of a result: its own `name`, else the name of the call it answers.
pub fn result_tool_name<'a, M: std::borrow::Borrow<crate::transcript::Message>>(
    msgs: &'a [M],
    pairing: &Pairing,
    i: usize,
) -> Option<&'a str> {
    msgs[i].borrow().name.as_deref().or_else(|| {
        pairing
            .result_of(i)
            .map(|r| msgs[r.message].borrow().calls()[r.call].name.as_str())
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::transcript::{Content, Role, ToolCall};

    pub(crate) fn call_msg(ids: &[&str]) -> Message {
        let mut m = Message::new(Role::Assistant, "");
        m.content = Content::Null;
        m.tool_calls = Some(
            ids.iter()
                .map(|id| ToolCall {
                    id: (!id.is_empty()).then(|| id.to_string()),
                    name: format!("tool_{id}"),
                    arguments: "{}".into(),
                    raw: serde_json::Value::Null.into(),
                    slot: None,
                })
                .collect(),
        );
        m
    }

    pub(crate) fn result_msg(id: &str) -> Message {
        let mut m = Message::new(Role::Tool, format!("result {id}"));
        m.tool_call_id = (!id.is_empty()).then(|| id.to_string());
        m
    }

    #[test]
    fn pairs_by_id_and_by_order() {
        let msgs = vec![
            Message::new(Role::User, "q"),
            call_msg(&["a", "b"]),
            result_msg("b"),
            result_msg("a"),
            call_msg(&["", ""]),
            result_msg(""),
            result_msg(""),
        ];
        let p = Pairing::new(&msgs);
        assert_eq!(
            p.result_of(2),
            Some(CallRef {
                message: 1,
                call: 1
            })
        );
        assert_eq!(
            p.result_of(3),
            Some(CallRef {
                message: 1,
                call: 0
            })
        );
        assert_eq!(
            p.result_of(5),
            Some(CallRef {
                message: 4,
                call: 0
            })
        );
        assert_eq!(
            p.result_of(6),
            Some(CallRef {
                message: 4,
                call: 1
            })
        );
        assert!(p.fully_answered(1) && p.fully_answered(4));
        assert!(pair_problems(&msgs).is_empty());
    }

    /// An assistant message of calls of one id (`""`: none), named `names`.
    fn named_calls(id: &str, names: &[&str]) -> Message {
        let mut m = call_msg(&vec![id; names.len()]);
        for (c, n) in m.tool_calls.as_mut().unwrap().iter_mut().zip(names) {
            c.name = n.to_string();
        }
        m
    }

    /// A result of `id` (`""`: none) named `name` (`""`: none).
    fn named_result(id: &str, name: &str) -> Message {
        let mut m = result_msg(id);
        m.name = (!name.is_empty()).then(|| name.to_string());
        m
    }

    #[test]
    fn a_result_without_an_id_takes_the_first_open_call_of_its_name_else_the_first_open_one() {
        let named = |names: &[&str]| named_calls("", names);
        let result = |name: &str| named_result("", name);
        let msgs = vec![
            Message::new(Role::User, "q"),
            named(&["read", "list", "read", "grep"]),
            result("grep"),
            result("shell"),
            result("read"),
            result(""),
            result("read"),
        ];
        let p = Pairing::new(&msgs);
        let call = |i: usize| p.result_of(i).map(|r| r.call);
        // By name; a name no call has, or none, takes the first open call.
        assert_eq!(
            [call(2), call(3), call(4), call(5), call(6)],
            [Some(3), Some(0), Some(2), Some(1), None]
        );
    }

    #[test]
    fn finds_orphans_and_unanswered_calls() {
        let msgs = vec![
            result_msg("x"),
            call_msg(&["a"]),
            Message::new(Role::User, "q"),
            call_msg(&["b", "c"]),
            result_msg("b"),
        ];
        assert_eq!(
            pair_problems(&msgs),
            vec![
                PairProblem::OrphanResult(0),
                PairProblem::Unanswered(CallRef {
                    message: 1,
                    call: 0
                })
            ]
        );
        // The active cycle at the end may be partly answered.
        let p = Pairing::new(&msgs);
        assert_eq!(active_cycle(&msgs, &p), Some(3));
    }

    #[test]
    fn a_second_result_for_one_call_is_an_orphan() {
        let msgs = vec![call_msg(&["a"]), result_msg("a"), result_msg("a")];
        assert_eq!(pair_problems(&msgs), vec![PairProblem::OrphanResult(2)]);
    }

    #[test]
    fn two_calls_of_one_id_in_a_turn_take_their_results_in_order() {
        // A model's bug that `validate` names (the id used again). Each call
        // takes its own result, in order: the first result went to the
        // second call, the second result was an orphan and the first call
        // unanswered, so the pairs' repair took a call and a result that
        // formats keeping a result inside its call (OpenCode, LibreChat)
        // could not take apart, and summarizing lost the orphan's text.
        let msgs = vec![
            call_msg(&["a", "a"]),
            result_msg("a"),
            result_msg("a"),
            call_msg(&["a"]),
            result_msg("a"),
        ];
        let p = Pairing::new(&msgs);
        let answer = |message, call| p.answer(CallRef { message, call });
        assert_eq!((answer(0, 0), answer(0, 1)), (Some(1), Some(2)));
        // A later turn's call of the id takes the result after it.
        assert_eq!(answer(3, 0), Some(4));
        assert!(pair_problems(&msgs).is_empty());
    }

    #[test]
    fn a_result_of_an_id_given_twice_takes_the_call_of_its_name() {
        // LibreChat and Open WebUI keep a result inside its call's item: of
        // two calls of one id, the second held the result. It was paired
        // with the first (the first open call of the id), the second left
        // unanswered, and the pairs' repair took the second call with its
        // arguments, its result written into the first.
        let named = |names: &[&str]| named_calls("x", names);
        let result = |name: &str| named_result("x", name);
        let msgs = vec![named(&["bash", "read_file"]), result("read_file")];
        let p = Pairing::new(&msgs);
        let answer = |message, call| p.answer(CallRef { message, call });
        assert_eq!((answer(0, 0), answer(0, 1)), (None, Some(1)));
        // A name no call of the id has: the first open one. And only the
        // latest message that holds the id: an earlier call of its name is
        // no candidate.
        let msgs = vec![
            named(&["bash", "read_file"]),
            result("read_file"),
            named(&["grep"]),
            result("bash"),
            named(&["read_file"]),
            result("other"),
        ];
        let p = Pairing::new(&msgs);
        let answer = |message, call| p.answer(CallRef { message, call });
        assert_eq!(
            (answer(0, 0), answer(2, 0), answer(4, 0)),
            (None, Some(3), Some(5))
        );
    }
}
