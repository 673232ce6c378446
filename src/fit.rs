//! Billed against counted: what a provider billed for each model call a log
//! recorded, fitted against ctxclean's count of the messages that call sent.
//!
//! An agent's log holds the conversation but not all of what each request
//! carried: the system prompt and the tool definitions go with every call
//! and are not in the log. The provider's tokenizer is also not always the
//! one ctxclean counts with (Claude's is not public: ctxclean counts it
//! with o200k as a stand-in). So a log that records each call's usage
//! (Claude Code's `message.usage`, Qwen Code's `usageMetadata`, Open
//! WebUI's `usage`) is fitted, by least squares over its calls, as
//!
//! ```text
//! billed input = fixed + ratio × counted
//! ```
//!
//! where `counted` is ctxclean's count of the messages before the call,
//! and `billed input` counts cache reads and writes as input. The fit turns
//! a budget in the provider's tokens into ctxclean's (`--budget-in
//! billed`); a log without usage takes [`Scale::default_for`].

use serde::Serialize;
use serde_json::{Map, Value};

use crate::format::Format;
use crate::tokens::Tokenizer;
use crate::transcript::Conversation;
use crate::validate::Provider;

/// The fewest calls a fit is made from.
pub const MIN_CALLS: usize = 3;

/// A log's billed input per call, fitted against ctxclean's count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BilledFit {
    /// The calls fitted.
    pub calls: usize,
    /// Tokens billed on every call that the log does not hold (the system
    /// prompt, the tool definitions).
    pub fixed: f64,
    /// Billed tokens per token ctxclean counts.
    pub ratio: f64,
    /// How well the line fits the calls (R², 1 for a perfect fit).
    pub r2: f64,
}

/// The billed input of the call a record answers, and the id that tells
/// the records of one call apart (`None` when each record is its own).
fn call_input(format: Format, rec: &Map<String, Value>) -> Option<(Option<String>, u64)> {
    let n = |u: &Value, k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    match format {
        Format::ClaudeCode => {
            let msg = rec.get("message")?;
            let u = msg.get("usage")?;
            u.get("input_tokens")?;
            let billed = n(u, "input_tokens")
                + n(u, "cache_creation_input_tokens")
                + n(u, "cache_read_input_tokens");
            let id = msg.get("id").and_then(Value::as_str).map(str::to_string);
            Some((id, billed))
        }
        Format::QwenCode => {
            let u = rec.get("usageMetadata")?;
            Some((None, u.get("promptTokenCount")?.as_u64()?))
        }
        Format::KimiCode => {
            // A step's end: its call's input, served from the cache or not.
            let e = rec.get("event").filter(|_| {
                rec.get("type").and_then(Value::as_str) == Some("context.append_loop_event")
            })?;
            let u = e
                .get("usage")
                .filter(|_| e.get("type").and_then(Value::as_str) == Some("step.end"))?;
            u.get("inputOther")?;
            let billed = n(u, "inputOther") + n(u, "inputCacheRead") + n(u, "inputCacheCreation");
            Some((None, billed))
        }
        Format::OpenWebUi => {
            let u = rec.get("usage")?;
            let input = u
                .get("prompt_tokens")
                .or_else(|| u.get("prompt_eval_count"))?;
            Some((None, input.as_u64()?))
        }
        _ => None,
    }
}

/// Each call's (ctxclean's count of the messages before it, billed input),
/// given each message's tokens.
pub fn points(format: Format, conv: &Conversation, per: &[usize]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut counted = 0usize;
    let mut last_record = None;
    for (m, &tokens) in conv.messages.iter().zip(per) {
        let record = m.origin.as_ref().and_then(|o| o.record);
        if let Some(r) = record.filter(|&r| last_record != Some(r)) {
            let input = conv.records[r]
                .value
                .as_ref()
                .and_then(|f| f.peek(|map| call_input(format, map)));
            if let Some((id, billed)) = input {
                // The first record of a call: the messages before it went.
                if id.is_none_or(|id| seen.insert(id)) && billed > 0 {
                    out.push((counted as f64, billed as f64));
                }
            }
        }
        last_record = record;
        counted += tokens;
    }
    out
}

/// The least-squares line through `points`, when there are enough calls
/// of different sizes.
pub fn fit(points: &[(f64, f64)]) -> Option<BilledFit> {
    let n = points.len();
    if n < MIN_CALLS {
        return None;
    }
    let k = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / k;
    let my = points.iter().map(|p| p.1).sum::<f64>() / k;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= f64::EPSILON * k * (1.0 + mx * mx) {
        return None;
    }
    let ratio = sxy / sxx;
    let fixed = my - ratio * mx;
    let r2 = if syy > 0.0 {
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    } else {
        1.0
    };
    (ratio > 0.0).then_some(BilledFit {
        calls: n,
        fixed: fixed.max(0.0),
        ratio,
        r2,
    })
}

/// The fit of a conversation's recorded usage, if it recorded enough.
pub fn billed_fit(format: Format, conv: &Conversation, tok: &Tokenizer) -> Option<BilledFit> {
    if !records_usage(format) {
        return None;
    }
    let per: Vec<usize> = conv.messages.iter().map(|m| tok.count_message(m)).collect();
    fit(&points(format, conv, &per))
}

/// Whether a format's records can carry a call's usage.
pub fn records_usage(format: Format) -> bool {
    matches!(
        format,
        Format::ClaudeCode | Format::QwenCode | Format::KimiCode | Format::OpenWebUi
    )
}

/// How a budget in the provider's tokens becomes one in ctxclean's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scale {
    /// Billed tokens every call carries besides the messages.
    pub fixed: f64,
    /// Billed tokens per counted token.
    pub ratio: f64,
    /// Where the figures come from, as said in reports.
    pub source: String,
}

impl Scale {
    /// Without a fit: no fixed part, and the ratio of the provider a format
    /// goes to. Claude's tokenizer is not public and its billed input ran
    /// 1.12–1.24× the o200k count on real Claude Code sessions, so 1.2;
    /// the others' tokenizers are o200k-like (OpenAI's is o200k), 1.0.
    pub fn default_for(format: Format) -> Scale {
        let provider = Provider::for_format(format);
        let ratio = if provider == Provider::Anthropic {
            1.2
        } else {
            1.0
        };
        Scale {
            fixed: 0.0,
            ratio,
            source: format!(
                "the default for {} (no usage recorded to fit)",
                provider.name()
            ),
        }
    }

    /// A fit's figures.
    pub fn of_fit(f: &BilledFit) -> Scale {
        Scale {
            fixed: f.fixed,
            ratio: f.ratio,
            source: format!("fitted on {} recorded call(s), R² {:.2}", f.calls, f.r2),
        }
    }

    /// Whether it is a default, not a fit or what was learned.
    pub fn is_default(&self) -> bool {
        self.source.starts_with("the default")
    }

    /// ctxclean's tokens that bill at most `billed` tokens.
    pub fn counted(&self, billed: usize) -> usize {
        ((billed as f64 - self.fixed).max(0.0) / self.ratio).floor() as usize
    }
}

/// A budget of `billed` provider tokens read as `counted` of ctxclean's with
/// `scale`, in a report's flags (`budget_billed`, `budget_counted`,
/// `budget_scale`), and in its warning when the scale is a default.
pub fn flag_budget(flags: &mut Map<String, Value>, billed: usize, counted: usize, scale: &Scale) {
    use crate::numbers::thousands;
    let said = format!(
        "budget in billed tokens: {} billed = {} counted ({} + {:.2} × counted; {})",
        thousands(billed),
        thousands(counted),
        thousands(scale.fixed.round() as usize),
        scale.ratio,
        scale.source
    );
    flags.insert("budget_billed".into(), Value::from(billed));
    flags.insert("budget_counted".into(), Value::from(counted));
    flags.insert("budget_scale".into(), Value::from(said.clone()));
    if scale.is_default() {
        let warning = match flags.get("warning").and_then(Value::as_str) {
            Some(w) => format!("{w}; {said}"),
            None => said,
        };
        flags.insert("warning".into(), Value::from(warning));
    }
}

/// Billed against counted, learned from the answers this process read (the
/// proxy reads each answer's usage): per model, the billed input over
/// ctxclean's count of the bodies sent. A request body holds its system
/// prompt and tools, so there is no fixed part to learn, only the ratio.
#[derive(Debug, Default)]
pub struct Learned {
    by_model: std::sync::Mutex<std::collections::HashMap<String, (u64, u64, u64)>>,
}

impl Learned {
    /// The answers of a model that must be read before its ratio is used;
    /// until then [`Scale::default_for`] holds.
    pub const MIN_ANSWERS: u64 = 5;

    /// One answer: `billed` input tokens for a body ctxclean counted as
    /// `counted`.
    pub fn learn(&self, model: &str, billed: u64, counted: u64) {
        if billed == 0 || counted == 0 {
            return;
        }
        if let Ok(mut map) = self.by_model.lock() {
            let e = map.entry(model.to_string()).or_default();
            e.0 += billed;
            e.1 += counted;
            e.2 += 1;
        }
    }

    /// The learned ratio of `model`, once enough answers were read.
    pub fn ratio(&self, model: &str) -> Option<(f64, u64)> {
        let map = self.by_model.lock().ok()?;
        let &(billed, counted, n) = map.get(model)?;
        (n >= Self::MIN_ANSWERS).then(|| (billed as f64 / counted as f64, n))
    }
}

/// What this process learned (see [`Learned`]).
pub fn learned() -> &'static Learned {
    static LEARNED: std::sync::OnceLock<Learned> = std::sync::OnceLock::new();
    LEARNED.get_or_init(Learned::default)
}

/// The scale a conversation's budget in billed tokens is read with: its
/// own log's fit; else, for a request naming its model, the ratio learned
/// from that model's answers; else the default for its format.
pub fn scale_for(format: Format, conv: &Conversation, tok: &Tokenizer) -> Scale {
    if let Some(f) = billed_fit(format, conv, tok) {
        return Scale::of_fit(&f);
    }
    let model = conv
        .envelope
        .as_ref()
        .and_then(|e| e.get("model"))
        .and_then(Value::as_str);
    scale_for_model(format, model)
}

/// The ratio learned from `model`'s answers, else the default for `format`.
pub fn scale_for_model(format: Format, model: Option<&str>) -> Scale {
    match model.and_then(|m| Some((m, learned().ratio(m)?))) {
        Some((m, (ratio, n))) => Scale {
            fixed: 0.0,
            ratio,
            source: format!("learned from {n} answer(s) of {m}"),
        },
        None => Scale::default_for(format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_fitted_and_inverted() {
        let pts: Vec<(f64, f64)> = (1..=5)
            .map(|i| {
                let x = 1000.0 * i as f64;
                (x, 20_000.0 + 1.2 * x)
            })
            .collect();
        let f = fit(&pts).unwrap();
        assert_eq!(f.calls, 5);
        assert!((f.fixed - 20_000.0).abs() < 1e-6, "{f:?}");
        assert!((f.ratio - 1.2).abs() < 1e-9, "{f:?}");
        assert!((f.r2 - 1.0).abs() < 1e-9);
        let s = Scale::of_fit(&f);
        // 100,000 billed = 20,000 fixed + 1.2 × 66,666.
        assert_eq!(s.counted(100_000), 66_666);
        assert_eq!(s.counted(10_000), 0, "under the fixed part: nothing fits");
    }

    #[test]
    fn too_few_or_equal_calls_are_not_fitted() {
        assert!(fit(&[(1.0, 2.0), (2.0, 3.0)]).is_none());
        assert!(fit(&[(5.0, 2.0), (5.0, 3.0), (5.0, 4.0)]).is_none());
    }

    #[test]
    fn defaults_follow_the_provider() {
        assert_eq!(Scale::default_for(Format::ClaudeCode).ratio, 1.2);
        assert_eq!(Scale::default_for(Format::OpenAi).ratio, 1.0);
        assert_eq!(Scale::default_for(Format::OpenAi).counted(1000), 1000);
        assert!(Scale::default_for(Format::OpenAi).is_default());
    }

    #[test]
    fn a_ratio_is_learned_after_enough_answers() {
        let l = Learned::default();
        for _ in 0..Learned::MIN_ANSWERS - 1 {
            l.learn("m", 1100, 1000);
        }
        assert_eq!(l.ratio("m"), None, "too few answers");
        l.learn("m", 1100, 1000);
        let (ratio, n) = l.ratio("m").unwrap();
        assert!((ratio - 1.1).abs() < 1e-9);
        assert_eq!(n, Learned::MIN_ANSWERS);
        assert_eq!(l.ratio("other"), None);
    }
}
