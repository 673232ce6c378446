//! A call's price with the provider's prompt cache.

use serde_json::Value;

use crate::models::{Catalog, Found};
use crate::transcript::Message;

/// A model's prices per token, and its context window.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Prices {
    /// The table's name for the model.
    pub model: String,
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    /// The context window, in tokens, when the table gives it.
    pub window: Option<u64>,
}

impl Prices {
    /// A model's prices: its input price is needed; a cache read without
    /// its own price costs the input price, a cache write likewise (as
    /// OpenAI bills it; Anthropic's table gives 1.25× input).
    pub fn of(found: &Found) -> Option<Prices> {
        let m = &found.model;
        let input = m.input?;
        Some(Prices {
            model: found.name.clone(),
            input,
            output: m.output.unwrap_or(0.0),
            cache_read: m.cache_read.unwrap_or(input),
            cache_write: m.cache_write.unwrap_or(input),
            window: m.max_input_tokens,
        })
    }

    /// The prices of the model a request body names.
    pub(super) fn of_body(body: &[u8], catalog: &Catalog) -> Option<Prices> {
        #[derive(serde::Deserialize)]
        struct Named {
            model: Option<String>,
        }
        let named: Named = serde_json::from_slice(body).ok()?;
        Prices::of(&catalog.find(named.model.as_deref()?).ok()?)
    }

    /// What the provider billed, priced: input at the input price, cache
    /// reads and writes at theirs, output at the output price.
    pub fn billed(&self, b: &crate::inflight::answer::Billed) -> f64 {
        b.input as f64 * self.input
            + b.cache_read as f64 * self.cache_read
            + b.cache_write as f64 * self.cache_write
            + b.output as f64 * self.output
    }

    /// The price of a token read from the cache.
    pub fn read_price(&self) -> f64 {
        self.cache_read
    }

    /// What writing a token again costs more than reading it from the cache
    /// (the cache-write price, or the input price where writes are not
    /// billed apart, less the read price).
    pub fn rewrite_premium(&self) -> f64 {
        (self.cache_write - self.cache_read).max(0.0)
    }

    /// What `came` (input tokens by kind, in another count) costs once
    /// scaled to the provider's count by `ratio`, with `output` tokens.
    pub fn scaled(&self, came: &crate::inflight::answer::Billed, ratio: f64, output: u64) -> f64 {
        let input = came.input as f64 * self.input
            + came.cache_read as f64 * self.cache_read
            + came.cache_write as f64 * self.cache_write;
        input * ratio + output as f64 * self.output
    }
}

/// The output tokens the log recorded for a model call's messages
/// (`usage.output_tokens`, `completion_tokens` or Ollama's `eval_count`):
/// messages of one response (one `id`, as Claude Code splits them) once.
pub(super) fn logged_output(msgs: &[Message]) -> Option<usize> {
    let mut by_id: Vec<(Option<String>, u64)> = Vec::new();
    for m in msgs {
        let (id, n) = m.fields.peek(|f| {
            let usage = f.get("usage").and_then(Value::as_object);
            let n = usage.and_then(|u| {
                ["output_tokens", "completion_tokens", "eval_count"]
                    .iter()
                    .find_map(|k| u.get(*k).and_then(Value::as_u64))
            });
            (f.get("id").and_then(Value::as_str).map(str::to_string), n)
        });
        let Some(n) = n else { continue };
        match by_id.iter_mut().find(|(i, _)| i.is_some() && *i == id) {
            Some((_, seen)) => *seen = (*seen).max(n),
            None => by_id.push((id, n)),
        }
    }
    (!by_id.is_empty()).then(|| by_id.iter().map(|(_, n)| *n as usize).sum())
}
