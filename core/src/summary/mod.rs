//! Summary engines for `ctxclean summarize`: what turns older messages into
//! a summary text.
//!
//! The operation ([`crate::ops::summarize`]) prepares the older messages as
//! [`Entry`] lines (tool results already described as `[Tool: …]`, images as
//! placeholders) and hands them to an [`Engine`]:
//!
//! - [`extractive::Extractive`]: offline and deterministic, no model;
//! - [`http::HttpEngine`]: Ollama's `/api/chat` or any OpenAI-compatible
//!   `/chat/completions`, as they are on the wire.
//!
//! [`cache::Cache`] stores summaries on disk under a hash of what they
//! summarize, so reruns make no request and a grown transcript only adds its
//! new messages to the summary of its older prefix (a rolling summary).
//!
//! Engines do I/O (HTTP, files) but never print.

pub mod cache;
pub mod extractive;
pub mod http;

use std::fmt;

use crate::tokens::Tokenizer;
use crate::transcript::Role;

/// The summary prompt used unless `--prompt-file` replaces it. `{max_tokens}`
/// is replaced by the summary budget.
pub const DEFAULT_PROMPT: &str = "\
You are summarizing the earlier part of a conversation between a user and an AI assistant, \
so that the assistant can continue the conversation without the original messages.

Write a concise summary of at most {max_tokens} tokens with these sections:
Intent: what the user wants overall, with the constraints and preferences they stated.
Summary: what was asked, answered, done and decided, in order.
Artifacts: file paths, URLs, names, identifiers, numbers and code that later turns may need, copied exactly.
Next steps: what was still open or about to happen.

When statements contradict each other, the most recent one wins. Tool results appear as \
[Tool: …] descriptions of the data; never invent their contents. When a summary so far is \
given, fold the new messages into it and return the whole updated summary. Reply with the \
summary only.";

/// One older message, prepared for an engine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Who said it.
    pub role: Role,
    /// The tool (for results and calls) or participant name, if any.
    pub name: Option<String>,
    /// Its text: message text, `[Tool: …]` lines, image placeholders, and
    /// `called NAME(ARGS)` lines for tool calls.
    pub text: String,
}

impl Entry {
    /// The entry as a transcript line for a model: `user: text`,
    /// `tool (search): [Tool: 3 rows | …]`.
    pub fn render(&self) -> String {
        match &self.name {
            Some(name) => format!("{} ({name}): {}", self.role.as_str(), self.text),
            None => format!("{}: {}", self.role.as_str(), self.text),
        }
    }
}

/// What an engine is asked to summarize.
pub struct Request<'a> {
    /// The instructions, `{max_tokens}` already replaced.
    pub prompt: &'a str,
    /// The summary of the messages before `entries` (a rolling summary), if any.
    pub previous: Option<&'a str>,
    /// The messages to summarize, oldest first.
    pub entries: &'a [Entry],
    /// The summary's budget in tokens.
    pub max_summary_tokens: usize,
    /// The most tokens the model is sent; the middle of a longer input is cut.
    pub max_input_tokens: usize,
    /// Counts tokens.
    pub tokenizer: &'a Tokenizer,
    /// The engine model's context window in tokens, when known
    /// (`--engine-context`, or learned from the server's error): named in
    /// the request where the API takes it (Ollama's `num_ctx`).
    pub context: Option<usize>,
}

impl Request<'_> {
    /// The input a model is sent after the prompt: the summary so far, then
    /// the messages, one per paragraph, bounded by `max_input_tokens` (the
    /// middle is cut with a marker).
    pub fn input(&self) -> String {
        let mut text = String::new();
        if let Some(previous) = self.previous {
            text.push_str("Summary so far:\n");
            text.push_str(previous.trim_end());
            text.push_str("\n\nNew messages to fold into the summary:\n\n");
        } else {
            text.push_str("Conversation to summarize:\n\n");
        }
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                text.push_str("\n\n");
            }
            text.push_str(&e.render());
        }
        cut_middle(&text, self.max_input_tokens, self.tokenizer)
    }

    /// Tokens of the messages being summarized (for progress messages).
    pub fn tokens(&self) -> usize {
        self.entries
            .iter()
            .map(|e| self.tokenizer.count_text(&e.text))
            .sum()
    }
}

/// What kind of failure a reason tells: `unreachable` when the server could
/// not be reached or did not answer in time, `failed` when it answered but
/// gave no summary (an HTTP error, an empty or malformed answer).
pub fn failure_kind(reason: &str) -> &'static str {
    const UNREACHABLE: [&str; 5] = [
        "connection refused",
        "timed out",
        "host not found",
        "could not connect",
        "connection closed",
    ];
    // `not asked: the server failed for 2 conversations in a row (REASON)`
    let reason = match reason.strip_prefix("not asked: ") {
        Some(rest) => rest.split_once('(').map_or(rest, |(_, inner)| inner),
        None => reason,
    };
    if UNREACHABLE.iter().any(|p| reason.starts_with(p)) {
        "unreachable"
    } else {
        "failed"
    }
}

/// Why an engine gave no summary: a short reason for the fallback line and
/// the report (never containing the API key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// What went wrong, e.g. `connection refused (http://localhost:11434)`.
    pub reason: String,
    /// Whether trying again may help (timeouts, 5xx).
    pub retryable: bool,
}

impl EngineError {
    /// An error that retrying will not fix.
    pub fn fatal(reason: impl Into<String>) -> EngineError {
        EngineError {
            reason: reason.into(),
            retryable: false,
        }
    }

    /// An error worth retrying.
    pub fn transient(reason: impl Into<String>) -> EngineError {
        EngineError {
            reason: reason.into(),
            retryable: true,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for EngineError {}

/// Turns prepared messages into a summary text.
pub trait Engine: Send + Sync {
    /// The engine's name: `extractive`, `ollama`, `openai`.
    fn name(&self) -> &str;
    /// The model it asks (empty for `extractive`); part of the cache key.
    fn model(&self) -> &str;
    /// Summarizes `request.entries` (folded into `request.previous`, if any).
    fn summarize(&self, request: &Request<'_>) -> Result<String, EngineError>;
    /// The context window its server named in an error earlier in this
    /// run, if it did: the next conversations are asked within it at once,
    /// not refused first, each.
    fn learned_context(&self) -> Option<usize> {
        None
    }
    /// Remembers the window its server named (see
    /// [`Engine::learned_context`]).
    fn learn_context(&self, _n: usize) {}
}

/// `text` itself when it has at most `max` tokens; otherwise its head and
/// tail, each about half of `max`, around a marker saying what was cut.
pub fn cut_middle(text: &str, max: usize, tok: &Tokenizer) -> String {
    let total = tok.count_text(text);
    if total <= max {
        return text.to_string();
    }
    let half = max.saturating_sub(20) / 2;
    let head_end = tok.prefix_within(text, half);
    let tail_start = tok.suffix_within(text, half).max(head_end);
    let cut = tok.count_text(&text[head_end..tail_start]);
    format!(
        "{}\n\n[… {cut} tokens cut from the middle of the conversation …]\n\n{}",
        text[..head_end].trim_end(),
        text[tail_start..].trim_start()
    )
}

/// `text` cut to at most `max` tokens, with `…` when cut.
pub fn cut_to(text: &str, max: usize, tok: &Tokenizer) -> String {
    if tok.count_text(text) <= max {
        return text.to_string();
    }
    let end = tok.prefix_within(text, max.saturating_sub(1));
    format!("{}…", text[..end].trim_end())
}

/// The context window a server's error names, when it names one: OpenAI's,
/// vLLM's and llama-cpp-python's "maximum context length is N tokens",
/// llama.cpp's `"n_ctx": N`.
pub fn context_from_error(reason: &str) -> Option<usize> {
    let number_after = |marker: &str| -> Option<usize> {
        let at = reason.find(marker)? + marker.len();
        let digits: String = reason[at..]
            .trim_start_matches([' ', ':', '"', '\\'])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok().filter(|n| *n > 0)
    };
    number_after("maximum context length is ").or_else(|| number_after("n_ctx"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    #[test]
    fn middle_cut_keeps_both_ends_within_budget() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let text: String = (0..2000)
            .map(|i| format!("line {i} says hello\n"))
            .collect();
        let out = cut_middle(&text, 400, &tok);
        assert!(tok.count_text(&out) <= 400, "{}", tok.count_text(&out));
        assert!(out.starts_with("line 0 says"));
        assert!(out.trim_end().ends_with("line 1999 says hello"));
        assert!(out.contains("tokens cut from the middle"));
        assert_eq!(cut_middle("short", 400, &tok), "short");
    }

    #[test]
    fn cut_to_respects_the_budget() {
        let tok = Tokenizer::new(Encoding::O200kBase).unwrap();
        let text = "word ".repeat(500);
        let out = cut_to(&text, 50, &tok);
        assert!(tok.count_text(&out) <= 50);
        assert!(out.ends_with('…'));
        assert_eq!(cut_to("two words", 50, &tok), "two words");
    }
}
