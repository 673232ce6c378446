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

/// The billed-per-counted ratios a budget is read with. Provider
/// tokenizers run 0.8–1.5× o200k_base on real sessions (Claude's
/// 1.08–1.5); a ratio far outside says the usage is not the whole input
/// (Ollama's `prompt_eval_count` leaves out its KV-cached prefix: 0.03) or
/// not usage at all (an upstream claiming 10⁹ tokens). Such a fit or
/// learned ratio is not used: the default is, and that is said.
pub const PLAUSIBLE_RATIO: std::ops::RangeInclusive<f64> = 0.5..=2.5;

/// The largest fixed part a fit may have: more than any model's window.
pub const PLAUSIBLE_FIXED: f64 = 2_000_000.0;

/// Why a ratio is not used, when it is not plausible.
fn implausible_ratio(ratio: f64) -> Option<String> {
    (!PLAUSIBLE_RATIO.contains(&ratio)).then(|| {
        format!(
            "a ratio of {ratio:.2} is outside {:.1}–{:.1}",
            PLAUSIBLE_RATIO.start(),
            PLAUSIBLE_RATIO.end()
        )
    })
}

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

impl BilledFit {
    /// Why the fit is not used to read a budget, when it is not plausible
    /// (see [`PLAUSIBLE_RATIO`]).
    pub fn implausible(&self) -> Option<String> {
        if let Some(why) = implausible_ratio(self.ratio) {
            return Some(why);
        }
        (!(0.0..=PLAUSIBLE_FIXED).contains(&self.fixed)).then(|| {
            format!(
                "a fixed part of {:.0} tokens is more than any model's window",
                self.fixed
            )
        })
    }
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
    by_model: std::sync::Mutex<std::collections::HashMap<String, Answers>>,
}

impl Learned {
    /// The answers of a model that must be read before its ratio is used;
    /// until then [`Scale::default_for`] holds.
    pub const MIN_ANSWERS: u64 = 5;

    /// One answer: `billed` input tokens for a body ctxclean counted as
    /// `counted` (all of it: tools, system and messages). An answer whose
    /// ratio is not plausible is not learned from, only counted (see
    /// [`PLAUSIBLE_RATIO`]); returns why, then.
    pub fn learn(&self, model: &str, billed: u64, counted: u64) -> Option<String> {
        if billed == 0 || counted == 0 {
            return None;
        }
        let why = implausible_ratio(billed as f64 / counted as f64);
        if let Ok(mut map) = self.by_model.lock() {
            let e = map.entry(model.to_string()).or_default();
            if why.is_some() {
                e.refused = e.refused.saturating_add(1);
            } else {
                e.billed = e.billed.saturating_add(billed);
                e.counted = e.counted.saturating_add(counted);
                e.answers += 1;
            }
        }
        why
    }

    /// The learned ratio of `model`, once enough answers were read; an
    /// error when more of its answers were implausible than not.
    pub fn ratio(&self, model: &str) -> Result<Option<(f64, u64)>, String> {
        let Ok(map) = self.by_model.lock() else {
            return Ok(None);
        };
        let Some(e) = map.get(model) else {
            return Ok(None);
        };
        if e.refused >= Self::MIN_ANSWERS && e.refused > e.answers {
            return Err(format!(
                "{} of its {} answer(s) billed a ratio outside {:.1}–{:.1}",
                e.refused,
                e.refused + e.answers,
                PLAUSIBLE_RATIO.start(),
                PLAUSIBLE_RATIO.end()
            ));
        }
        Ok((e.answers >= Self::MIN_ANSWERS)
            .then(|| (e.billed as f64 / e.counted as f64, e.answers)))
    }
}

/// What was learned of one model.
#[derive(Debug, Default)]
struct Answers {
    billed: u64,
    counted: u64,
    answers: u64,
    refused: u64,
}

/// What this process learned (see [`Learned`]).
pub fn learned() -> &'static Learned {
    static LEARNED: std::sync::OnceLock<Learned> = std::sync::OnceLock::new();
    LEARNED.get_or_init(Learned::default)
}

/// The scale a conversation's budget in billed tokens is read with: its
/// own log's fit; else, for a request naming its model, the ratio learned
/// from that model's answers; else the default for its format. A fit or a
/// ratio that is not plausible is not used, and the scale's source says so.
pub fn scale_for(format: Format, conv: &Conversation, tok: &Tokenizer) -> Scale {
    let mut refused = None;
    if let Some(f) = billed_fit(format, conv, tok) {
        match f.implausible() {
            None => return Scale::of_fit(&f),
            Some(why) => {
                refused = Some(format!(
                    "the fit {:.0} + {:.2} × counted on {} call(s) is not used: {why}",
                    f.fixed, f.ratio, f.calls
                ))
            }
        }
    }
    let model = conv
        .envelope
        .as_ref()
        .and_then(|e| e.get("model"))
        .and_then(Value::as_str);
    let extras = conv.envelope.as_ref().map_or(0, |e| extras(tok, e));
    let mut scale = scale_for_model(format, model, extras);
    if let Some(why) = refused {
        scale.source = format!("{}; {why}", scale.source);
    }
    scale
}

/// The tokens a request bills besides its messages: its tool definitions
/// (`tools`, `functions`), counted as their JSON text. (Its system prompt
/// is a message.)
pub fn extras(tok: &Tokenizer, envelope: &Map<String, Value>) -> usize {
    let body = crate::format::wrap::body(envelope);
    ["tools", "functions"]
        .iter()
        .filter_map(|k| body.get(*k).filter(|v| !v.is_null()))
        .map(|v| tok.count_text(&v.to_string()))
        .sum()
}

/// The ratio learned from `model`'s answers, else the default for `format`;
/// `extras` the tokens the request carries besides its messages (its tool
/// definitions), which bill at the same ratio and so are the fixed part.
pub fn scale_for_model(format: Format, model: Option<&str>, extras: usize) -> Scale {
    let learned = model.map(|m| (m, learned().ratio(m)));
    let mut scale = match learned {
        Some((m, Ok(Some((ratio, n))))) => Scale {
            fixed: 0.0,
            ratio,
            source: format!("learned from {n} answer(s) of {m}"),
        },
        Some((m, Err(why))) => {
            let mut s = Scale::default_for(format);
            s.source = format!(
                "{}; the ratio learned from {m} is not used: {why}",
                s.source
            );
            s
        }
        _ => Scale::default_for(format),
    };
    scale.fixed += extras as f64 * scale.ratio;
    scale
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
        assert_eq!(l.ratio("m"), Ok(None), "too few answers");
        l.learn("m", 1100, 1000);
        let (ratio, n) = l.ratio("m").unwrap().unwrap();
        assert!((ratio - 1.1).abs() < 1e-9);
        assert_eq!(n, Learned::MIN_ANSWERS);
        assert_eq!(l.ratio("other"), Ok(None));
    }

    #[test]
    fn implausible_answers_teach_nothing_and_are_said() {
        let l = Learned::default();
        // Ollama's prompt_eval_count without its cached prefix; an upstream
        // claiming a billion tokens.
        for _ in 0..Learned::MIN_ANSWERS {
            assert!(l.learn("ollama", 30, 1000).is_some());
            // What the proxy learns from, read by every scale.
            assert!(learned().learn("test-liar", 1_000_000_000, 1900).is_some());
        }
        assert!(l.ratio("ollama").is_err());
        let s = scale_for_model(Format::OpenAi, Some("test-liar"), 0);
        assert!(s.is_default(), "{s:?}");
        assert_eq!(s.ratio, 1.0);
        assert!(s.source.contains("not used"), "{}", s.source);
    }

    #[test]
    fn implausible_fits_are_not_used() {
        let flat = BilledFit {
            calls: 9,
            fixed: 290.0,
            ratio: 0.001,
            r2: 1.0,
        };
        assert!(flat.implausible().is_some());
        let huge = BilledFit {
            calls: 9,
            fixed: 0.0,
            ratio: 1.9e9,
            r2: 0.98,
        };
        assert!(huge.implausible().is_some());
        let claude = BilledFit {
            calls: 11,
            fixed: 18_644.0,
            ratio: 1.08,
            r2: 0.94,
        };
        assert!(claude.implausible().is_none());
    }

    #[test]
    fn tools_are_the_fixed_part_at_the_ratio() {
        let s = scale_for_model(Format::Anthropic, None, 1000);
        assert_eq!(s.fixed, 1200.0);
        assert_eq!(s.counted(11_200), 8333);
    }
}
