//! What a replay adds up to: per recipe over the sessions, and where each
//! session first lost evidence.

use super::{evidence, Session};
use crate::changes::Change;
use crate::transcript::Conversation;

/// What removed evidence string `s` from a request: the step and the
/// message the report names, found by the last message of the request as
/// it came that holds `s`.
pub(super) fn removed_by(conv: &Conversation, s: &str, changes: &[Change], held: bool) -> String {
    let at = conv.messages.iter().rposition(|m| {
        let mut t = String::new();
        evidence::message_text(m, &mut t);
        evidence::contains(&t, s)
    });
    let change = at.and_then(|i| changes.iter().find(|c| c.index == i));
    match (at, change) {
        (Some(i), Some(c)) => format!(
            "{} {} message {i} ({})",
            c.step.as_deref().unwrap_or("the recipe"),
            c.action.verb(),
            c.reason
        ),
        _ if held => "held: an earlier call's cleaning took it, and the body was held since".into(),
        (Some(i), None) => format!("message {i} went with a change the report does not name"),
        (None, _) => "not found in the request as it came".into(),
    }
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
    /// The share of the tokens sent read from the cache.
    pub cache_read_share: f64,
    /// Bodies the provider would refuse.
    pub invalid: usize,
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

/// A session's recall: evidence kept over evidence (1 without evidence).
pub fn recall(s: &Session) -> f64 {
    let (kept, all) = s
        .calls
        .iter()
        .fold((0, 0), |(k, a), c| (k + c.kept, a + c.evidence));
    if all == 0 {
        1.0
    } else {
        kept as f64 / all as f64
    }
}

/// One recipe's sessions added up (`name`, `chain`).
pub fn summarize(name: &str, chain: &str, sessions: &[Session]) -> Summary {
    let calls = sessions.iter().flat_map(|s| &s.calls);
    let mut sum = Summary {
        recipe: name.to_string(),
        chain: chain.to_string(),
        sessions: sessions.len(),
        recall_worst: 1.0,
        ..Summary::default()
    };
    let (mut tokens_in, mut read) = (0u64, 0u64);
    for c in calls {
        sum.calls += 1;
        sum.tokens_sent += c.tokens_sent as u64;
        tokens_in += c.tokens_in as u64;
        read += c.cache_read as u64;
        sum.invalid += usize::from(!c.valid);
        sum.over_window += usize::from(c.over_window);
        sum.held += usize::from(c.held);
        if let Some(d) = c.dollars {
            sum.dollars = Some(sum.dollars.unwrap_or(0.0) + d);
        }
    }
    sum.priced_sessions = sessions.iter().filter(|s| s.model.is_some()).count();
    sum.tokens_share = ratio(sum.tokens_sent, tokens_in);
    sum.cache_read_share = ratio(read, sum.tokens_sent);
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
            let c = s.calls.iter().find(|c| !c.lost.is_empty())?;
            Some((
                format!("{}#{}", s.source, s.index),
                c.call,
                c.lost[0].clone(),
                c.lost_by.clone().unwrap_or_default(),
            ))
        })
        .collect()
}
