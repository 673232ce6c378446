//! What a replay adds up to: per recipe over the sessions, and where each
//! session first lost evidence.

use super::{evidence, Session};
use crate::changes::Change;
use crate::transcript::Conversation;

/// Message `i` of a request read, named in the body's own terms: its
/// place in the body's list of messages (a user turn of several tool
/// results is one there, where ctxclean reads a message per result), or
/// the system prompt the envelope holds.
fn in_the_body(conv: &Conversation, i: usize) -> String {
    match conv.messages.get(i).and_then(|m| m.origin.as_ref()) {
        Some(o) => match o.record {
            Some(r) => format!("message {r} of the body"),
            None => "the system prompt".into(),
        },
        None => format!("message {i}"),
    }
}

/// What removed evidence string `s` from a request: the step and the
/// message the report names, found by the last message of the request as
/// it came that holds `s`.
pub(super) fn removed_by(conv: &Conversation, s: &str, changes: &[Change], held: bool) -> String {
    let at = holder(conv, s);
    let change = at.and_then(|i| changes.iter().find(|c| c.index == i));
    match (at, change) {
        (Some(i), Some(c)) => format!(
            "{} {} {} ({})",
            c.step.as_deref().unwrap_or("the recipe"),
            c.action.verb(),
            in_the_body(conv, i),
            c.reason
        ),
        _ if held => "held: an earlier call's cleaning took it, and the body was held since".into(),
        (Some(i), None) => format!(
            "{} went with a change the report does not name",
            in_the_body(conv, i)
        ),
        (None, _) => "not found in the request as it came".into(),
    }
}

/// Where the oracle lost `s` (at a recall under 1, it may lose evidence).
pub(super) fn evicted_by_oracle(conv: &Conversation, s: &str) -> String {
    match holder(conv, s) {
        Some(i) => format!(
            "the oracle evicted {} (within the evidence --oracle-recall lets it lose)",
            in_the_body(conv, i)
        ),
        None => "not found in the request as it came".into(),
    }
}

/// The last message of `conv` that holds `s`.
fn holder(conv: &Conversation, s: &str) -> Option<usize> {
    conv.messages.iter().rposition(|m| {
        let mut t = String::new();
        evidence::message_text(m, &mut t);
        evidence::contains(&t, s)
    })
}

/// One recipe over every session replayed.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// The recipe's name.
    pub recipe: String,
    /// Its chain, as `serve` takes it after `--`.
    pub chain: String,
    /// Sessions replayed.
    pub sessions: usize,
    /// Model calls replayed.
    pub calls: usize,
    /// Tokens sent, every call.
    pub tokens_sent: u64,
    /// `tokens_sent` against the requests as they came.
    pub tokens_share: f64,
    /// Dollars with caching, over the sessions whose model has prices;
    /// `None` when none has.
    pub dollars: Option<f64>,
    /// The sessions priced.
    pub priced_sessions: usize,
    /// The share of the input billed that was read from the cache.
    pub cache_read_share: f64,
    /// Bodies the provider would refuse.
    pub invalid: usize,
    /// Of those, the bodies that came valid: the ones the recipe broke.
    pub made_invalid: usize,
    /// Evidence kept over evidence, per session, averaged; and the worst
    /// session's (1 where a session had no evidence).
    pub recall_mean: f64,
    /// The worst session's recall.
    pub recall_worst: f64,
    /// Which session that is.
    pub worst_session: Option<String>,
    /// Calls past the model's context window.
    pub over_window: usize,
    /// Calls whose body was held.
    pub held: usize,
}

/// A session's calls added up: all the tables and the JSON need of them,
/// so that a long run keeps this rather than every call.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Calls.
    pub calls: usize,
    /// Tokens sent.
    pub tokens_sent: u64,
    /// Tokens of the requests as they came.
    pub tokens_in: u64,
    /// Input tokens billed (the tool definitions included).
    pub billed_in: u64,
    /// Of those, read from the cache.
    pub cache_read: u64,
    /// Bodies the provider would refuse.
    pub invalid: usize,
    /// Of those, the bodies that came valid.
    pub made_invalid: usize,
    /// Calls past the window.
    pub over_window: usize,
    /// Calls held.
    pub held: usize,
    /// Dollars, when priced.
    pub dollars: Option<f64>,
    /// Evidence kept, and evidence.
    pub kept: usize,
    /// Evidence.
    pub evidence: usize,
    /// The first call that lost evidence: the call, the string, what
    /// removed it.
    pub first_loss: Option<(usize, String, String)>,
}

impl Totals {
    /// The calls of a session, added up.
    pub fn of(calls: &[super::Call]) -> Totals {
        let mut t = Totals::default();
        for c in calls {
            t.calls += 1;
            t.tokens_sent += c.tokens_sent as u64;
            t.tokens_in += c.tokens_in as u64;
            t.billed_in += c.billed_in as u64;
            t.cache_read += c.cache_read as u64;
            t.invalid += usize::from(!c.valid);
            t.made_invalid += usize::from(c.made_invalid);
            t.over_window += usize::from(c.over_window);
            t.held += usize::from(c.held);
            t.kept += c.kept;
            t.evidence += c.evidence;
            if let Some(d) = c.dollars {
                t.dollars = Some(t.dollars.unwrap_or(0.0) + d);
            }
            if t.first_loss.is_none() && !c.lost.is_empty() {
                t.first_loss = Some((
                    c.call,
                    c.lost[0].clone(),
                    c.lost_by.clone().unwrap_or_default(),
                ));
            }
        }
        t
    }
}

/// A session's recall: evidence kept over evidence (1 without evidence).
pub fn recall(s: &Session) -> f64 {
    let t = &s.totals;
    if t.evidence == 0 {
        1.0
    } else {
        t.kept as f64 / t.evidence as f64
    }
}

/// One recipe's sessions added up (`name`, `chain`).
pub fn summarize(name: &str, chain: &str, sessions: &[Session]) -> Summary {
    let mut sum = Summary {
        recipe: name.to_string(),
        chain: chain.to_string(),
        sessions: sessions.len(),
        recall_worst: 1.0,
        ..Summary::default()
    };
    let (mut tokens_in, mut read, mut billed_in) = (0u64, 0u64, 0u64);
    for t in sessions.iter().map(|s| &s.totals) {
        sum.calls += t.calls;
        sum.tokens_sent += t.tokens_sent;
        tokens_in += t.tokens_in;
        read += t.cache_read;
        billed_in += t.billed_in;
        sum.invalid += t.invalid;
        sum.made_invalid += t.made_invalid;
        sum.over_window += t.over_window;
        sum.held += t.held;
        if let Some(d) = t.dollars {
            sum.dollars = Some(sum.dollars.unwrap_or(0.0) + d);
        }
    }
    sum.priced_sessions = sessions.iter().filter(|s| s.model.is_some()).count();
    sum.tokens_share = ratio(sum.tokens_sent, tokens_in);
    sum.cache_read_share = ratio(read, billed_in);
    let recalls: Vec<(f64, &Session)> = sessions.iter().map(|s| (recall(s), s)).collect();
    if !recalls.is_empty() {
        sum.recall_mean = recalls.iter().map(|(r, _)| r).sum::<f64>() / recalls.len() as f64;
        let (worst, s) = recalls
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("not empty");
        sum.recall_worst = *worst;
        sum.worst_session = Some(format!("{}#{}", s.source, s.index));
    }
    sum
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Each session's first loss under a recipe: the call, the string, what
/// removed it.
pub fn first_losses(sessions: &[Session]) -> Vec<(String, usize, String, String)> {
    sessions
        .iter()
        .filter_map(|s| {
            let (call, string, by) = s.totals.first_loss.clone()?;
            Some((format!("{}#{}", s.source, s.index), call, string, by))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::Action;

    #[test]
    fn a_loss_is_named_by_the_bodys_own_message() {
        // Three tool results in one user turn: one message of the body,
        // three of ctxclean's.
        let body = serde_json::json!({"model": "m", "system": "be brief", "messages": [
            {"role": "user", "content": "look"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "b", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "c", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                {"type": "tool_result", "tool_use_id": "b", "content": "two"},
                {"type": "tool_result", "tool_use_id": "c", "content": "src/found_it.rs"}]},
        ]});
        let doc = crate::inflight::read_request(
            crate::format::Format::Anthropic,
            &serde_json::to_vec(&body).unwrap(),
        )
        .unwrap();
        let conv = &doc.conversations[0];
        let at = conv
            .messages
            .iter()
            .position(|m| m.content.text().contains("found_it"))
            .unwrap();
        assert!(at > 2, "ctxclean reads a message per result: {at}");
        let mut change = Change::new(at, Action::Removed, "over budget");
        change.step = Some("trim".into());
        let changes = [change];
        let by = removed_by(conv, "src/found_it.rs", &changes, false);
        assert_eq!(by, "trim removed message 2 of the body (over budget)");
    }
}
