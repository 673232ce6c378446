//! The token usage that logs themselves recorded ("as logged"), shown next
//! to ctxclean's own count.
//!
//! - Claude Code: the `result` lines of a `claude -p` run (stream-json, or
//!   the array claude-code-action keeps), summed with their
//!   `total_cost_usd`; else `message.usage` on assistant lines. One API response is
//!   written as several lines that repeat the same usage snapshot, so lines
//!   are deduplicated by `message.id` + `requestId` (by `message.id` alone
//!   when `requestId` is missing), keeping the last snapshot.
//! - Codex: `token_count` events carry cumulative `total_token_usage`; the
//!   last one is the session's. Older rollouts log per-turn `usage` on
//!   `turn.completed` events, which are summed.
//! - Open WebUI: `usage` on assistant messages (OpenAI-style
//!   `prompt_tokens`/`completion_tokens`, or Ollama-style `prompt_eval_count`/
//!   `eval_count`), summed.
//! - Gemini CLI: `tokens` on `gemini` messages, summed.
//! - Cline: `metrics.tokens` on assistant messages of the API history
//!   (`prompt`, `completion`, `cached`), or the `api_req_started` entries
//!   of the UI log (`tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`),
//!   summed.
//! - Goose: the token counts of its session header, or of `goose run`'s
//!   `complete` line.
//! - Qwen Code: `usageMetadata` on assistant lines, summed.
//! - Kimi Code: the `usage` of each step's `step.end` event, summed.
//! - A single answer saved from a provider's API: its `usage` (or
//!   `usageMetadata`), nested counters joined with a dot.
//! - OpenHands: `usage` of each action's `model_response`, once per
//!   response (parallel calls repeat it).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::format::Format;
use crate::transcript::Conversation;

/// Usage as the log recorded it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoggedUsage {
    /// Where the figures come from.
    pub source: String,
    /// How many distinct requests (or records) they cover.
    pub requests: usize,
    /// The counters, by the log's own names.
    pub tokens: BTreeMap<String, u64>,
    /// What the log says the requests cost, in USD, when it says
    /// (`total_cost_usd` of a `claude -p` run's result lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl LoggedUsage {
    fn add(&mut self, usage: &Map<String, Value>, keys: &[&str]) {
        for key in keys {
            if let Some(n) = usage.get(*key).and_then(Value::as_u64) {
                *self.tokens.entry((*key).to_string()).or_default() += n;
            }
        }
    }
}

/// The usage a conversation's log recorded, if it recorded any.
pub fn logged_usage(format: Format, conv: &Conversation) -> Option<LoggedUsage> {
    if crate::format::stream::is_stream(conv) {
        let records: Vec<&Map<String, Value>> = conv
            .records
            .iter()
            .filter_map(|r| r.value.as_deref())
            .collect();
        let usage = crate::format::stream::usage(&records)?;
        let figures = crate::format::answer::counters(&usage);
        let usage = LoggedUsage {
            source: format!("the {format} stream's usage"),
            requests: 1,
            tokens: figures.into_iter().collect(),
            cost_usd: None,
        };
        return (!usage.tokens.is_empty()).then_some(usage);
    }
    if let Some(env) = conv.envelope.as_ref() {
        if crate::format::answer::is_answer(Some(env)) {
            let figures = crate::format::answer::usage(env)?;
            let usage = LoggedUsage {
                source: format!("the {format} answer's usage"),
                requests: 1,
                tokens: figures.into_iter().collect(),
                cost_usd: None,
            };
            return (!usage.tokens.is_empty()).then_some(usage);
        }
    }
    if format == Format::AgentsSdk {
        // A run state keeps each model response, its usage with it.
        let responses = conv.envelope.as_ref()?.get("model_responses")?.as_array()?;
        let usage = summed(
            "openai-agents model_responses usage",
            responses.iter().filter_map(|r| r.get("usage")?.as_object()),
            &["input_tokens", "output_tokens", "total_tokens"],
        );
        return (!usage.tokens.is_empty()).then_some(usage);
    }
    if format == Format::Crush {
        return crush(conv);
    }
    if format == Format::GrokCli {
        return grok_cli(conv);
    }
    if format == Format::OpenCode {
        return opencode(conv);
    }
    let values = conv.records.iter().filter_map(|r| r.value.as_deref());
    let usage = match format {
        Format::ClaudeCode => claude_code(values),
        Format::Codex => codex(values),
        Format::OpenWebUi => summed(
            "open-webui message usage",
            values.filter_map(|v| v.get("usage")?.as_object()),
            &[
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
                "prompt_eval_count",
                "eval_count",
            ],
        ),
        Format::Gemini => summed(
            "gemini message tokens",
            values.filter_map(|v| v.get("tokens")?.as_object()),
            &["input", "output", "cached", "thoughts", "tool", "total"],
        ),
        Format::QwenCode => summed(
            "qwen-code usageMetadata",
            values.filter_map(|v| v.get("usageMetadata")?.as_object()),
            &[
                "promptTokenCount",
                "cachedContentTokenCount",
                "candidatesTokenCount",
                "thoughtsTokenCount",
                "totalTokenCount",
            ],
        ),
        Format::Goose => summed(
            "goose session fields, header line or stream complete line",
            values
                .filter(|v| {
                    v.contains_key("working_dir")
                        || v.get("type").and_then(Value::as_str) == Some("complete")
                })
                // A session export holds them in its fields.
                .chain(
                    conv.envelope
                        .as_ref()
                        .filter(|e| e.contains_key("working_dir")),
                ),
            &["input_tokens", "output_tokens", "total_tokens"],
        ),
        Format::KimiCode => summed(
            "kimi-code step.end usage",
            values.filter_map(|v| {
                let e = v.get("event")?;
                (e.get("type")?.as_str()? == "step.end").then_some(())?;
                e.get("usage")?.as_object()
            }),
            &[
                "inputOther",
                "inputCacheRead",
                "inputCacheCreation",
                "output",
            ],
        ),
        Format::OpenHands => openhands(values),
        Format::Cline => cline(values),
        _ => LoggedUsage::default(),
    };
    (!usage.tokens.is_empty()).then_some(usage)
}

/// A Crush session's row: its tokens and cost, the session's totals.
fn crush(conv: &Conversation) -> Option<LoggedUsage> {
    let session = conv.envelope.as_ref()?.get("session")?.as_object()?;
    let mut usage = summed(
        "crush session row (prompt_tokens, completion_tokens, cost)",
        std::iter::once(session),
        &["prompt_tokens", "completion_tokens"],
    );
    usage.cost_usd = session.get("cost").and_then(Value::as_f64);
    (!usage.tokens.is_empty()).then_some(usage)
}

/// An OpenCode session's assistant messages: each model call's tokens
/// (`info.tokens`: input, output, reasoning, and the cache's read and
/// write) and cost, as OpenCode records them.
fn opencode(conv: &Conversation) -> Option<LoggedUsage> {
    let infos: Vec<&Map<String, Value>> = conv
        .records
        .iter()
        .filter_map(|r| r.value.as_deref())
        .filter_map(|r| r.get("info")?.as_object())
        .filter(|i| i.get("role").and_then(Value::as_str) == Some("assistant"))
        .collect();
    let flat: Vec<Map<String, Value>> = infos
        .iter()
        .filter_map(|i| i.get("tokens")?.as_object())
        .map(|t| {
            let mut m = t.clone();
            if let Some(Value::Object(cache)) = t.get("cache") {
                for (k, v) in cache {
                    m.insert(format!("cache_{k}"), v.clone());
                }
            }
            m
        })
        .collect();
    let mut usage = summed(
        "opencode assistant messages (info.tokens, info.cost)",
        flat.iter(),
        &["input", "output", "reasoning", "cache_read", "cache_write"],
    );
    usage.cost_usd = infos
        .iter()
        .filter_map(|i| i.get("cost")?.as_f64())
        .fold(None, |a, c| Some(a.unwrap_or(0.0) + c));
    (!usage.tokens.is_empty()).then_some(usage)
}

/// A Grok CLI session's usage events: the tokens of each model call, and
/// its cost in millionths of a dollar.
fn grok_cli(conv: &Conversation) -> Option<LoggedUsage> {
    let events = conv.envelope.as_ref()?.get("usage_events")?.as_array()?;
    let events: Vec<&Map<String, Value>> = events.iter().filter_map(Value::as_object).collect();
    let mut usage = summed(
        "grok-cli usage_events (input_tokens, output_tokens, total_tokens, cost_micros)",
        events.iter().copied(),
        &["input_tokens", "output_tokens", "total_tokens"],
    );
    let micros: Option<i64> = events
        .iter()
        .filter_map(|e| e.get("cost_micros")?.as_i64())
        .fold(None, |a, c| Some(a.unwrap_or(0) + c));
    usage.cost_usd = micros.map(|m| m as f64 / 1e6);
    (!usage.tokens.is_empty()).then_some(usage)
}

fn summed<'a>(
    source: &str,
    usages: impl Iterator<Item = &'a Map<String, Value>>,
    keys: &[&str],
) -> LoggedUsage {
    let mut out = LoggedUsage {
        source: source.to_string(),
        ..LoggedUsage::default()
    };
    for u in usages {
        out.requests += 1;
        out.add(u, keys);
    }
    out
}

const CLAUDE_KEYS: [&str; 4] = [
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
];

fn claude_code<'a>(lines: impl Iterator<Item = &'a Map<String, Value>> + Clone) -> LoggedUsage {
    // A `claude -p` run ends each turn with a result line: its usage and
    // cost are the turn's own totals.
    let results = lines.clone().filter(|l| {
        l.get("type").and_then(Value::as_str) == Some("result")
            && l.get("usage").is_some_and(Value::is_object)
    });
    let mut totals = summed(
        "claude-code result lines (usage, total_cost_usd)",
        results.clone().filter_map(|l| l.get("usage")?.as_object()),
        &CLAUDE_KEYS,
    );
    if totals.requests > 0 {
        totals.cost_usd = results
            .filter_map(|l| l.get("total_cost_usd")?.as_f64())
            .fold(None, |a, c| Some(a.unwrap_or(0.0) + c));
        return totals;
    }
    // Last snapshot per (message.id, requestId), in first-seen order.
    let mut order: Vec<String> = Vec::new();
    let mut last: BTreeMap<String, &Map<String, Value>> = BTreeMap::new();
    for (n, line) in lines.enumerate() {
        let Some(msg) = line.get("message").and_then(Value::as_object) else {
            continue;
        };
        let Some(usage) = msg.get("usage").and_then(Value::as_object) else {
            continue;
        };
        let id = msg.get("id").and_then(Value::as_str);
        let request = line.get("requestId").and_then(Value::as_str);
        let key = match (id, request) {
            (Some(id), Some(req)) => format!("{id}\u{0}{req}"),
            (Some(id), None) => id.to_string(),
            _ => format!("\u{0}line{n}"),
        };
        if last.insert(key.clone(), usage).is_none() {
            order.push(key);
        }
    }
    summed(
        "claude-code message.usage, deduplicated by message.id + requestId",
        order.iter().filter_map(|k| last.get(k).copied()),
        &CLAUDE_KEYS,
    )
}

fn cline<'a>(records: impl Iterator<Item = &'a Map<String, Value>>) -> LoggedUsage {
    let mut history = LoggedUsage {
        source: "cline message metrics".into(),
        ..LoggedUsage::default()
    };
    let mut ui = LoggedUsage {
        source: "cline ui api_req_started".into(),
        ..LoggedUsage::default()
    };
    for r in records {
        if let Some(t) = r
            .get("metrics")
            .and_then(|m| m.get("tokens"))
            .and_then(Value::as_object)
        {
            history.requests += 1;
            history.add(t, &["prompt", "completion", "cached"]);
        }
        if r.get("say").and_then(Value::as_str) == Some("api_req_started") {
            let Some(req) = r
                .get("text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Map<String, Value>>(t).ok())
            else {
                continue;
            };
            ui.requests += 1;
            ui.add(
                &req,
                &["tokensIn", "tokensOut", "cacheWrites", "cacheReads"],
            );
        }
    }
    if history.requests > 0 {
        history
    } else {
        ui
    }
}

fn openhands<'a>(events: impl Iterator<Item = &'a Map<String, Value>>) -> LoggedUsage {
    let mut seen = std::collections::HashSet::new();
    let usages = events.filter_map(|e| {
        let response = e.get("tool_call_metadata")?.get("model_response")?;
        let id = response.get("id").and_then(Value::as_str).unwrap_or("");
        if !id.is_empty() && !seen.insert(id.to_string()) {
            return None;
        }
        response.get("usage")?.as_object()
    });
    summed(
        "openhands model_response usage, once per response",
        usages,
        &[
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ],
    )
}

fn codex<'a>(lines: impl Iterator<Item = &'a Map<String, Value>>) -> LoggedUsage {
    let keys = [
        "input_tokens",
        "cached_input_tokens",
        "output_tokens",
        "reasoning_output_tokens",
        "total_tokens",
    ];
    let mut total: Option<&Map<String, Value>> = None;
    let mut events = 0;
    let mut turns = LoggedUsage {
        source: "codex turn.completed usage".into(),
        ..LoggedUsage::default()
    };
    for line in lines {
        let Some(payload) = line.get("payload").and_then(Value::as_object) else {
            continue;
        };
        match payload.get("type").and_then(Value::as_str) {
            Some("token_count") => {
                if let Some(t) = payload
                    .get("info")
                    .and_then(|i| i.get("total_token_usage"))
                    .and_then(Value::as_object)
                {
                    total = Some(t);
                    events += 1;
                }
            }
            Some("turn.completed") => {
                if let Some(u) = payload.get("usage").and_then(Value::as_object) {
                    turns.requests += 1;
                    turns.add(u, &keys);
                }
            }
            _ => {}
        }
    }
    match total {
        Some(t) => {
            let mut out = LoggedUsage {
                source: "codex token_count (last total_token_usage)".into(),
                requests: events,
                ..LoggedUsage::default()
            };
            out.add(t, &keys);
            out
        }
        None => turns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{read_document, ReadOptions};

    #[test]
    fn claude_code_snapshots_are_deduplicated_keeping_the_last() {
        let text = r#"{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"hi"}}
{"type":"assistant","sessionId":"s","uuid":"a1","requestId":"r1","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"…","signature":"x"}],"usage":{"input_tokens":10,"output_tokens":2}}}
{"type":"assistant","sessionId":"s","uuid":"a2","requestId":"r1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":10,"output_tokens":30}}}
{"type":"assistant","sessionId":"s","uuid":"a3","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"again"}],"usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":100}}}
"#;
        let doc =
            read_document("s.jsonl", text.as_bytes().to_vec(), &ReadOptions::default()).unwrap();
        let u = logged_usage(doc.source_format, &doc.conversations[0]).unwrap();
        assert_eq!(u.requests, 2);
        assert_eq!(u.tokens["input_tokens"], 15);
        assert_eq!(u.tokens["output_tokens"], 37);
        assert_eq!(u.tokens["cache_read_input_tokens"], 100);
    }

    #[test]
    fn codex_uses_the_last_cumulative_total() {
        let text = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"output_tokens":40,"total_tokens":340}}}}
"#;
        let doc =
            read_document("r.jsonl", text.as_bytes().to_vec(), &ReadOptions::default()).unwrap();
        let u = logged_usage(doc.source_format, &doc.conversations[0]).unwrap();
        assert_eq!(u.tokens["input_tokens"], 300);
        assert_eq!(u.tokens["total_tokens"], 340);
    }
}

/// Logged usage split the way providers bill it, whatever the log called
/// its counters: input read fresh, cache writes, cache reads, and output
/// (reasoning included). Anthropic's logs (Claude Code, Cline) keep cached
/// input apart from the input, OpenAI's and Gemini's (Codex, OpenHands,
/// Gemini CLI, Open WebUI) inside it, so it is taken out first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Billed {
    /// Input tokens not read from a cache.
    pub input_tokens: u64,
    /// Input tokens written to a cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from a cache.
    pub cache_read_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
}

impl Billed {
    /// The split of `u`'s counters.
    pub fn of(u: &LoggedUsage) -> Billed {
        let n = |k: &str| u.tokens.get(k).copied().unwrap_or(0);
        let less = |a: u64, b: u64| a.saturating_sub(b);
        if u.tokens.contains_key("cache_creation_input_tokens")
            && u.tokens.contains_key("input_tokens")
        {
            // Claude Code: separate counters.
            Billed {
                input_tokens: n("input_tokens"),
                cache_write_tokens: n("cache_creation_input_tokens"),
                cache_read_tokens: n("cache_read_input_tokens"),
                output_tokens: n("output_tokens"),
            }
        } else if u.tokens.contains_key("tokensIn") {
            // Cline's api_req_started: Anthropic's counters.
            Billed {
                input_tokens: n("tokensIn"),
                cache_write_tokens: n("cacheWrites"),
                cache_read_tokens: n("cacheReads"),
                output_tokens: n("tokensOut"),
            }
        } else if u.tokens.contains_key("cached_input_tokens") {
            // Codex: cached input is part of the input.
            Billed {
                input_tokens: less(n("input_tokens"), n("cached_input_tokens")),
                cache_write_tokens: 0,
                cache_read_tokens: n("cached_input_tokens"),
                output_tokens: n("output_tokens"),
            }
        } else if u.tokens.contains_key("input") {
            // Gemini CLI: cached inside input; tool tokens are input,
            // thoughts are billed as output.
            Billed {
                input_tokens: less(n("input"), n("cached")) + n("tool"),
                cache_write_tokens: 0,
                cache_read_tokens: n("cached"),
                output_tokens: n("output") + n("thoughts"),
            }
        } else if u.tokens.contains_key("promptTokenCount") {
            // A Gemini answer's usageMetadata: cached inside the prompt,
            // thoughts billed as output.
            Billed {
                input_tokens: less(n("promptTokenCount"), n("cachedContentTokenCount"))
                    + n("toolUsePromptTokenCount"),
                cache_write_tokens: 0,
                cache_read_tokens: n("cachedContentTokenCount"),
                output_tokens: n("candidatesTokenCount") + n("thoughtsTokenCount"),
            }
        } else if u.tokens.contains_key("input_tokens") && !u.tokens.contains_key("prompt_tokens") {
            // A Responses answer: cached inside the input, reasoning inside
            // the output.
            let cached = n("input_tokens_details.cached_tokens");
            Billed {
                input_tokens: less(n("input_tokens"), cached),
                cache_write_tokens: 0,
                cache_read_tokens: cached,
                output_tokens: n("output_tokens"),
            }
        } else if u.tokens.contains_key("prompt") {
            // Cline's message metrics.
            Billed {
                input_tokens: less(n("prompt"), n("cached")),
                cache_write_tokens: 0,
                cache_read_tokens: n("cached"),
                output_tokens: n("completion"),
            }
        } else {
            // OpenAI-shaped (OpenHands, Open WebUI, a chat.completion) or
            // Ollama's counters.
            let cached = n("cache_read_input_tokens") + n("prompt_tokens_details.cached_tokens");
            Billed {
                input_tokens: less(n("prompt_tokens") + n("prompt_eval_count"), cached),
                cache_write_tokens: n("cache_creation_input_tokens"),
                cache_read_tokens: cached,
                output_tokens: n("completion_tokens") + n("eval_count"),
            }
        }
    }
}

/// USD of the usage a log recorded at `model`'s prices: each part of the
/// [`Billed`] split at its own rate (cache rates default to the input
/// rate). `None` when the model has no input price.
pub fn logged_cost(u: &LoggedUsage, model: &crate::models::Found) -> Option<f64> {
    let m = &model.model;
    let input = m.input?;
    let output = m.output.unwrap_or(0.0);
    let write = m.cache_write.unwrap_or(input);
    let read = m.cache_read.unwrap_or(input);
    let b = Billed::of(u);
    Some(
        b.input_tokens as f64 * input
            + b.cache_write_tokens as f64 * write
            + b.cache_read_tokens as f64 * read
            + b.output_tokens as f64 * output,
    )
}

#[cfg(test)]
mod cost_tests {
    use super::*;
    use crate::models::Catalog;

    fn usage(pairs: &[(&str, u64)]) -> LoggedUsage {
        LoggedUsage {
            source: "test".into(),
            requests: 1,
            tokens: pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            cost_usd: None,
        }
    }

    #[test]
    fn cached_input_is_priced_once_whichever_way_the_log_counts_it() {
        let c = Catalog::builtin();
        let gpt = c.find("gpt-4o").unwrap(); // 2.5e-6 in, 1e-5 out, 1.25e-6 cached
                                             // Codex: cached input inside input_tokens.
        let codex = usage(&[
            ("input_tokens", 1000),
            ("cached_input_tokens", 600),
            ("output_tokens", 100),
        ]);
        let want = 400.0 * 2.5e-6 + 600.0 * 1.25e-6 + 100.0 * 1e-5;
        assert!((logged_cost(&codex, &gpt).unwrap() - want).abs() < 1e-12);
        // Gemini CLI: thoughts are output.
        let pro = c.find("gemini-2.5-pro").unwrap(); // 1.25e-6 in, 1e-5 out, 1.25e-7 cached
        let gemini = usage(&[
            ("input", 1000),
            ("cached", 200),
            ("output", 50),
            ("thoughts", 30),
        ]);
        let want = 800.0 * 1.25e-6 + 200.0 * 1.25e-7 + 80.0 * 1e-5;
        assert!((logged_cost(&gemini, &pro).unwrap() - want).abs() < 1e-12);
        // Claude Code: separate counters.
        let sonnet = c.find("claude-sonnet-4-5").unwrap();
        let cc = usage(&[
            ("input_tokens", 10),
            ("cache_creation_input_tokens", 1000),
            ("cache_read_input_tokens", 10_000),
            ("output_tokens", 100),
        ]);
        let want = 10.0 * 3e-6 + 1000.0 * 3.75e-6 + 10_000.0 * 3e-7 + 100.0 * 1.5e-5;
        assert!((logged_cost(&cc, &sonnet).unwrap() - want).abs() < 1e-12);
    }

    #[test]
    fn saved_answers_are_priced_by_their_providers_counters() {
        let c = Catalog::builtin();
        let gpt = c.find("gpt-4o").unwrap();
        // Responses: cached inside the input, reasoning inside the output.
        let responses = usage(&[
            ("input_tokens", 1000),
            ("input_tokens_details.cached_tokens", 600),
            ("output_tokens", 100),
            ("output_tokens_details.reasoning_tokens", 80),
        ]);
        let want = 400.0 * 2.5e-6 + 600.0 * 1.25e-6 + 100.0 * 1e-5;
        assert!((logged_cost(&responses, &gpt).unwrap() - want).abs() < 1e-12);
        // Chat completions: cached inside the prompt.
        let chat = usage(&[
            ("prompt_tokens", 1000),
            ("prompt_tokens_details.cached_tokens", 600),
            ("completion_tokens", 100),
        ]);
        assert!((logged_cost(&chat, &gpt).unwrap() - want).abs() < 1e-12);
        // Gemini's usageMetadata: thoughts are output.
        let pro = c.find("gemini-2.5-pro").unwrap();
        let gemini = usage(&[
            ("promptTokenCount", 1000),
            ("cachedContentTokenCount", 200),
            ("candidatesTokenCount", 50),
            ("thoughtsTokenCount", 30),
            ("totalTokenCount", 1080),
        ]);
        let want = 800.0 * 1.25e-6 + 200.0 * 1.25e-7 + 80.0 * 1e-5;
        assert!((logged_cost(&gemini, &pro).unwrap() - want).abs() < 1e-12);
    }
}
