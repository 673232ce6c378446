//! `ctxclean stats`: what a transcript costs, by role, tool and image.
//!
//! Pure accounting over the model; rendering lives in [`crate::report`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::Document;
use crate::pairs::Pairing;
use crate::tokens::Tokenizer;
use crate::transcript::{Conversation, Message};

/// What `stats` reports beyond the totals.
#[derive(Clone, Debug)]
pub struct StatsSpec {
    /// List every message's tokens.
    pub per_message: bool,
    /// List every tool call with its arguments and result size.
    pub tools: bool,
    /// The token count above which the next call needs a large-context model.
    pub large_context: usize,
    /// How many of the heaviest messages to list.
    pub heaviest: usize,
    /// The model the conversations would be sent to (`--model`): its
    /// context window replaces `large_context`, its prices give dollars.
    pub model: Option<crate::models::Found>,
    /// Draw each conversation's cumulative tokens (`--timeline`, `--svg`).
    pub timeline: bool,
    /// The budget line of the timeline, and where `trim --max-tokens` with
    /// it would cut.
    pub budget: Option<usize>,
}

impl Default for StatsSpec {
    fn default() -> Self {
        StatsSpec {
            per_message: false,
            tools: false,
            large_context: 100_000,
            heaviest: 5,
            model: None,
            timeline: false,
            budget: None,
        }
    }
}

/// Sums over all conversations.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// Number of conversations.
    pub conversations: usize,
    /// Number of messages.
    pub messages: usize,
    /// Tokens, as each conversation counts them (reply priming included).
    pub tokens: usize,
    /// Tool calls.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// Images.
    pub images: usize,
    /// Bytes of opaque payloads (encrypted reasoning, signatures, base64
    /// files), carried but never counted as tokens.
    pub opaque_bytes: usize,
    /// JSONL lines skipped by `--skip-invalid`.
    pub skipped_lines: usize,
    /// With `--model`: USD to send every conversation once, as it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_usd: Option<f64>,
    /// With `--model`: USD of the usage the logs recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_usd: Option<f64>,
    /// With `--model`: the model table entry priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// With `--model`: where the prices come from, and their date.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prices: Vec<crate::models::Source>,
    /// What a directory walk passed over (a FIFO, a device, a broken link,
    /// a link to a directory), a line each: `PATH: passed over: WHY`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<String>,
}

/// Opaque payloads of one kind: how many, and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpaqueCount {
    /// Number of payloads.
    pub payloads: usize,
    /// Their size in bytes, as they stand in the transcript.
    pub bytes: usize,
}

/// Opaque payloads by kind (`encrypted_reasoning`, `signature`, …).
pub type OpaqueByKind = BTreeMap<String, OpaqueCount>;

pub use crate::changes::Count;
pub use crate::pairs::result_tool_name;

/// The cost of one conversation.
#[derive(Clone, Debug, Serialize)]
pub struct ConversationStats {
    /// The input's path, or `-`.
    pub source: String,
    /// The conversation's position in its input.
    pub index: usize,
    /// The 1-based line of its input it starts on.
    #[serde(skip)]
    pub line: usize,
    /// The format it was read as.
    pub format: String,
    /// Number of messages.
    pub messages: usize,
    /// Tokens of the conversation (reply priming included).
    pub tokens: usize,
    /// Messages and tokens per role.
    pub by_role: BTreeMap<String, Count>,
    /// Tool calls made by assistant messages.
    pub tool_calls: usize,
    /// Tool result messages.
    pub tool_results: usize,
    /// Tool results and their tokens per tool name (`?` when a result answers no call).
    pub tool_results_by_tool: BTreeMap<String, Count>,
    /// Images in the content.
    pub images: usize,
    /// Their tokens: 85 each, or by the image rule of `--model` from their
    /// dimensions.
    pub image_tokens: usize,
    /// Images whose size could not be read (remote URLs, unreadable
    /// headers), charged the provider's maximum.
    #[serde(skip_serializing_if = "is_zero")]
    pub images_estimated: usize,
    /// Bytes of opaque payloads: encrypted reasoning, signatures, redacted
    /// thinking, base64 files. A provider carries them but never reads them
    /// as text, so they are not tokens.
    pub opaque_bytes: usize,
    /// The opaque payloads by kind.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub opaque: OpaqueByKind,
    /// The heaviest messages, heaviest first.
    pub heaviest: Vec<MessageTokens>,
    /// What the next model call needs.
    pub routing: Routing,
    /// Every message's tokens (`--per-message`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_message: Option<Vec<MessageTokens>>,
    /// Every tool call in order (`--tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolUse>>,
    /// The usage the log itself recorded (Claude Code, Codex, Open WebUI,
    /// Gemini CLI), next to ctxclean's own count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_logged: Option<crate::usage::LoggedUsage>,
    /// The billed input of each call the log recorded, fitted against
    /// ctxclean's count of the messages before it (see [`crate::fit`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billed_fit: Option<crate::fit::BilledFit>,
    /// With `--model`: what sending the conversation costs, and what the
    /// logged usage cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// With `--timeline` or `--svg`: the tokens after each message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// What reading had to decide (a dangling reference followed another way, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One message's tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MessageTokens {
    /// Position in the conversation.
    pub index: usize,
    /// Its role.
    pub role: String,
    /// Its tokens.
    pub tokens: usize,
}

/// A routing hint for the next model call.
#[derive(Clone, Debug, Serialize)]
pub struct Routing {
    /// Images are present: the next call needs a vision-capable model.
    pub needs_vision: bool,
    /// The conversation is larger than `large_context` tokens.
    pub needs_large_context: bool,
    /// The threshold used (`--large-context`, or the context window of
    /// `--model`).
    pub large_context: usize,
    /// The model whose context window it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A conversation's tokens message by message, and a budget.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Timeline {
    /// The tokens of messages 0..=i, for each i (reply priming not included).
    pub cumulative: Vec<usize>,
    /// The budget (`--max-tokens`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    /// The first message `trim --max-tokens BUDGET` keeps after the system
    /// message (`None` when it keeps everything or there is no budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim_keeps_from: Option<usize>,
}

/// Dollars at one model's prices.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cost {
    /// The model table entry whose prices were used.
    pub model: String,
    /// USD to send the conversation as it stands, once, as input.
    pub input_usd: Option<f64>,
    /// USD of the usage the log recorded: input, output, cache writes and
    /// reads at their own rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_usd: Option<f64>,
}

/// One tool call, and the result that answers it.
#[derive(Clone, Debug, Serialize)]
pub struct ToolUse {
    /// Index of the assistant message holding the call.
    pub message: usize,
    /// The call id, if any.
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// Index of the result message, if the call was answered.
    pub result_index: Option<usize>,
    /// Tokens of the result message.
    pub result_tokens: Option<usize>,
    /// Characters of the result's text.
    pub result_chars: Option<usize>,
}

/// Accounts for every conversation of a document.
pub fn stats(doc: &Document, tok: &Tokenizer, spec: &StatsSpec) -> Vec<ConversationStats> {
    doc.conversations
        .iter()
        .enumerate()
        .map(|(index, conv)| {
            conversation_stats(
                conv,
                tok,
                spec,
                &doc.source,
                doc.first_conversation + index,
                doc.source_format,
            )
        })
        .collect()
}

/// Accounts for one conversation.
pub fn conversation_stats(
    conv: &Conversation,
    tok: &Tokenizer,
    spec: &StatsSpec,
    source: &str,
    index: usize,
    format: crate::format::Format,
) -> ConversationStats {
    let msgs = &conv.messages;
    let per: Vec<usize> = msgs.iter().map(|m| tok.count_message(m)).collect();
    let tokens = per.iter().sum::<usize>() + tok.reply_priming();
    let pairing = Pairing::new(msgs);
    let Tallies {
        by_role,
        by_tool,
        tool_calls,
        tool_results,
        images,
        image_tokens,
        images_estimated,
        opaque,
    } = tallies(msgs, &per, &pairing, tok);
    let message_tokens = |i: usize| MessageTokens {
        index: i,
        role: msgs[i].role.as_str().to_string(),
        tokens: per[i],
    };
    let mut order: Vec<usize> = (0..msgs.len()).collect();
    order.sort_by(|&a, &b| per[b].cmp(&per[a]).then(a.cmp(&b)));
    let heaviest = order
        .into_iter()
        .take(spec.heaviest)
        .map(message_tokens)
        .collect();
    let tools = spec.tools.then(|| tool_uses(msgs, &pairing, &per));
    let window = spec
        .model
        .as_ref()
        .and_then(|m| m.model.max_input_tokens)
        .map_or(spec.large_context, |w| w as usize);
    let as_logged = crate::usage::logged_usage(format, conv);
    let billed_fit = crate::fit::records_usage(format)
        .then(|| crate::fit::fit(&crate::fit::points(format, conv, &per)))
        .flatten();
    ConversationStats {
        source: source.to_string(),
        index,
        line: conv.line,
        format: format.name().to_string(),
        messages: msgs.len(),
        tokens,
        by_role,
        tool_calls,
        tool_results,
        tool_results_by_tool: by_tool,
        images,
        image_tokens,
        images_estimated,
        opaque_bytes: opaque.values().map(|o| o.bytes).sum(),
        opaque,
        heaviest,
        routing: Routing {
            needs_vision: images > 0,
            needs_large_context: tokens > window,
            large_context: window,
            model: spec.model.as_ref().map(|m| m.name.clone()),
        },
        per_message: spec
            .per_message
            .then(|| (0..msgs.len()).map(message_tokens).collect()),
        tools,
        timeline: spec
            .timeline
            .then(|| timeline(conv, &per, spec.budget, tok)),
        cost: spec.model.as_ref().map(|m| Cost {
            model: m.name.clone(),
            input_usd: m.input_cost(tokens as u64),
            logged_usd: as_logged
                .as_ref()
                .and_then(|u| crate::usage::logged_cost(u, m)),
        }),
        as_logged,
        billed_fit,
        notes: conv.notes.clone(),
    }
}

/// What [`conversation_stats`] sums over the messages.
#[derive(Default)]
struct Tallies {
    by_role: BTreeMap<String, Count>,
    by_tool: BTreeMap<String, Count>,
    tool_calls: usize,
    tool_results: usize,
    images: usize,
    image_tokens: usize,
    images_estimated: usize,
    opaque: OpaqueByKind,
}

fn tallies(msgs: &[Message], per: &[usize], pairing: &Pairing, tok: &Tokenizer) -> Tallies {
    let mut t = Tallies::default();
    for (i, m) in msgs.iter().enumerate() {
        crate::tokens::for_each_opaque(m, |kind, bytes| {
            let o = t.opaque.entry(kind.name().to_string()).or_default();
            o.payloads += 1;
            o.bytes += bytes;
        });
        let c = t.by_role.entry(m.role.as_str().to_string()).or_default();
        c.messages += 1;
        c.tokens += per[i];
        t.tool_calls += m.calls().len();
        t.images += m.content.images().count();
        for img in m.content.images() {
            let (n, estimated) = tok.image_tokens(img);
            t.image_tokens += n;
            t.images_estimated += usize::from(estimated);
        }
        if m.role.is_result() {
            t.tool_results += 1;
            let name = result_tool_name(msgs, pairing, i)
                .unwrap_or("?")
                .to_string();
            let c = t.by_tool.entry(name).or_default();
            c.messages += 1;
            c.tokens += per[i];
        }
    }
    t
}

/// `--tools`: every tool call with its arguments and result size.
fn tool_uses(msgs: &[Message], pairing: &Pairing, per: &[usize]) -> Vec<ToolUse> {
    let mut uses = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        for (c, call) in m.calls().iter().enumerate() {
            let result = pairing.answer(crate::pairs::CallRef {
                message: i,
                call: c,
            });
            uses.push(ToolUse {
                message: i,
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                result_index: result,
                result_tokens: result.map(|r| per[r]),
                result_chars: result.map(|r| msgs[r].content.text().chars().count()),
            });
        }
    }
    uses
}

/// `--timeline`: the cumulative tokens, and where `trim --max-tokens
/// BUDGET` would start keeping.
fn timeline(
    conv: &Conversation,
    per: &[usize],
    budget: Option<usize>,
    tok: &Tokenizer,
) -> Timeline {
    let mut sum = 0;
    let cumulative = per
        .iter()
        .map(|n| {
            sum += n;
            sum
        })
        .collect();
    let trim_keeps_from = budget.and_then(|b| {
        let t = crate::ops::trim::TrimSpec {
            max_tokens: Some(b),
            ..crate::ops::trim::TrimSpec::default()
        };
        let out = crate::ops::trim::trim(conv.clone(), &t, tok);
        out.conversation
            .messages
            .iter()
            .filter(|m| !m.role.is_instruction())
            .find_map(|m| m.input_index())
            .filter(|&k| {
                out.changes
                    .iter()
                    .any(|c| c.action == crate::changes::Action::Removed)
                    && k > 0
            })
    });
    Timeline {
        cumulative,
        budget,
        trim_keeps_from,
    }
}

impl Totals {
    /// Adds one file's sums.
    pub fn add_file(&mut self, f: &FileStats) {
        self.conversations += f.conversations;
        self.messages += f.messages;
        self.tokens += f.tokens;
        self.tool_calls += f.tool_calls;
        self.tool_results += f.tool_results;
        self.images += f.images;
        self.opaque_bytes += f.opaque_bytes;
        self.skipped_lines += f.skipped_lines;
        if let Some(usd) = f.input_usd {
            *self.input_usd.get_or_insert(0.0) += usd;
        }
        if let Some(usd) = f.logged_usd {
            *self.logged_usd.get_or_insert(0.0) += usd;
        }
    }
}

/// The cost of one input file: its conversations summed (`stats --by file`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileStats {
    /// The input's path, or `-`.
    pub source: String,
    /// The format it was read as.
    pub format: String,
    /// Number of conversations.
    pub conversations: usize,
    /// Number of messages.
    pub messages: usize,
    /// Tokens, summed over the conversations (reply priming included).
    pub tokens: usize,
    /// Messages and tokens per role.
    pub by_role: BTreeMap<String, Count>,
    /// Tool calls.
    pub tool_calls: usize,
    /// Tool results.
    pub tool_results: usize,
    /// Tool results and their tokens per tool name.
    pub tool_results_by_tool: BTreeMap<String, Count>,
    /// Images.
    pub images: usize,
    /// Bytes of opaque payloads (not tokens).
    pub opaque_bytes: usize,
    /// The opaque payloads by kind.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub opaque: OpaqueByKind,
    /// JSONL lines skipped by `--skip-invalid`.
    pub skipped_lines: usize,
    /// With `--model`: USD to send every conversation once, as it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_usd: Option<f64>,
    /// With `--model`: USD of the usage the log recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_usd: Option<f64>,
}

impl FileStats {
    /// Empty stats for `source`.
    pub fn new(source: &str) -> FileStats {
        FileStats {
            source: source.to_string(),
            ..FileStats::default()
        }
    }

    /// Adds one conversation.
    pub fn add(&mut self, c: &ConversationStats) {
        if self.format.is_empty() {
            self.format = c.format.clone();
        }
        self.conversations += 1;
        self.messages += c.messages;
        self.tokens += c.tokens;
        for (role, n) in &c.by_role {
            let e = self.by_role.entry(role.clone()).or_default();
            e.messages += n.messages;
            e.tokens += n.tokens;
        }
        self.tool_calls += c.tool_calls;
        self.tool_results += c.tool_results;
        for (tool, n) in &c.tool_results_by_tool {
            let e = self.tool_results_by_tool.entry(tool.clone()).or_default();
            e.messages += n.messages;
            e.tokens += n.tokens;
        }
        self.images += c.images;
        self.opaque_bytes += c.opaque_bytes;
        for (kind, o) in &c.opaque {
            let e = self.opaque.entry(kind.clone()).or_default();
            e.payloads += o.payloads;
            e.bytes += o.bytes;
        }
        if let Some(cost) = &c.cost {
            if let Some(usd) = cost.input_usd {
                *self.input_usd.get_or_insert(0.0) += usd;
            }
            if let Some(usd) = cost.logged_usd {
                *self.logged_usd.get_or_insert(0.0) += usd;
            }
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One line of `stats --jsonl`: a conversation's figures, flat and with the
/// same keys and types on every line, so that a table engine (Spark's
/// `read.json`, DuckDB's `read_json`, pandas) reads them as typed columns.
/// Its JSON Schema is `schema/stats-row.json`.
#[derive(Clone, Debug, Serialize)]
pub struct StatsRow<'a> {
    /// The input's path, or `-`.
    pub source: &'a str,
    /// The conversation's position in its input.
    pub index: usize,
    /// The 1-based line of its input it starts on (for a JSONL dataset of
    /// one conversation per line: its line).
    pub line: usize,
    /// The format it was read as.
    pub format: &'a str,
    /// The tokenizer the counts were made with.
    pub tokenizer: &'a str,
    /// Number of messages.
    pub messages: usize,
    /// Tokens (reply priming included).
    pub tokens: usize,
    /// Messages and tokens of every role, present whether or not it occurs.
    pub by_role: ByRole,
    /// Tool results and their tokens per tool name, by name.
    pub by_tool: Vec<ToolCount>,
    /// Tool calls made by assistant messages.
    pub tool_calls: usize,
    /// Tool result messages.
    pub tool_results: usize,
    /// Images in the content.
    pub images: usize,
    /// Their tokens.
    pub image_tokens: usize,
    /// Images whose size could not be read, charged the provider's maximum.
    pub images_estimated: usize,
    /// Bytes of opaque payloads (not tokens).
    pub opaque_bytes: usize,
    /// Images are present: the next call needs a vision-capable model.
    pub needs_vision: bool,
    /// Over the large-context threshold (or `--model`'s window).
    pub needs_large_context: bool,
    /// Model calls (or records) the log's own usage covers; 0 when the log
    /// recorded none, and then the four counters below are 0.
    pub logged_requests: usize,
    /// Logged input tokens not read from a cache.
    pub logged_input_tokens: u64,
    /// Logged input tokens written to a cache.
    pub logged_cache_write_tokens: u64,
    /// Logged input tokens read from a cache.
    pub logged_cache_read_tokens: u64,
    /// Logged output tokens, reasoning included.
    pub logged_output_tokens: u64,
    /// With `--model`: the model priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    /// With `--model`: USD to send the conversation once, as input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_usd: Option<f64>,
    /// With `--model`: USD of the logged usage (0 when nothing was logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_usd: Option<f64>,
    /// What reading had to decide.
    pub notes: &'a [String],
}

/// Messages and tokens of every role.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ByRole {
    /// `system`.
    pub system: Count,
    /// `developer`.
    pub developer: Count,
    /// `user`.
    pub user: Count,
    /// `assistant`.
    pub assistant: Count,
    /// `tool`.
    pub tool: Count,
    /// `function`.
    pub function: Count,
}

/// One tool's results.
#[derive(Clone, Debug, Serialize)]
pub struct ToolCount {
    /// The tool name (`?` when a result answers no call).
    pub tool: String,
    /// Result messages.
    pub results: usize,
    /// Their tokens.
    pub tokens: usize,
}

impl ConversationStats {
    /// Its `stats --jsonl` row, counted with `tokenizer`.
    pub fn row<'a>(&'a self, tokenizer: &'a str) -> StatsRow<'a> {
        let mut by_role = ByRole::default();
        for (role, n) in &self.by_role {
            let slot = match role.as_str() {
                "system" => &mut by_role.system,
                "developer" => &mut by_role.developer,
                "user" => &mut by_role.user,
                "assistant" => &mut by_role.assistant,
                "tool" => &mut by_role.tool,
                _ => &mut by_role.function,
            };
            slot.messages += n.messages;
            slot.tokens += n.tokens;
        }
        let billed = self
            .as_logged
            .as_ref()
            .map(crate::usage::Billed::of)
            .unwrap_or_default();
        StatsRow {
            source: &self.source,
            index: self.index,
            line: self.line,
            format: &self.format,
            tokenizer,
            messages: self.messages,
            tokens: self.tokens,
            by_role,
            by_tool: self
                .tool_results_by_tool
                .iter()
                .map(|(tool, n)| ToolCount {
                    tool: tool.clone(),
                    results: n.messages,
                    tokens: n.tokens,
                })
                .collect(),
            tool_calls: self.tool_calls,
            tool_results: self.tool_results,
            images: self.images,
            image_tokens: self.image_tokens,
            images_estimated: self.images_estimated,
            opaque_bytes: self.opaque_bytes,
            needs_vision: self.routing.needs_vision,
            needs_large_context: self.routing.needs_large_context,
            logged_requests: self.as_logged.as_ref().map_or(0, |u| u.requests),
            logged_input_tokens: billed.input_tokens,
            logged_cache_write_tokens: billed.cache_write_tokens,
            logged_cache_read_tokens: billed.cache_read_tokens,
            logged_output_tokens: billed.output_tokens,
            model: self.cost.as_ref().map(|c| c.model.as_str()),
            input_usd: self.cost.as_ref().and_then(|c| c.input_usd),
            logged_usd: self.cost.as_ref().map(|c| c.logged_usd.unwrap_or(0.0)),
            notes: &self.notes,
        }
    }
}
