//! Models: context windows and prices, from a snapshot of LiteLLM's
//! `model_prices_and_context_window.json` (MIT) committed in `data/`,
//! reduced to the fields used, and overridable with `--prices FILE`.
//!
//! Lookups tolerate what people type: a provider prefix
//! (`anthropic/claude-sonnet-4-5`), a dated suffix
//! (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`, `gpt-4o-2024-08-06`),
//! `-latest`, and case. Every match says which entry it used.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::tokens::Encoding;

/// The snapshot, as committed.
const SNAPSHOT: &str = include_str!("../data/models.json");

/// The snapshot, parsed once per process.
static SNAPSHOT_PARSED: std::sync::LazyLock<Catalog> = std::sync::LazyLock::new(|| {
    let file: File = serde_json::from_str(SNAPSHOT).expect("the committed snapshot parses");
    Catalog {
        sources: file.meta.into_iter().collect(),
        models: file.models,
    }
});

/// One model's entry: what ctxclean uses of LiteLLM's fields.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Model {
    /// LiteLLM's provider (`openai`, `anthropic`, `vertex_ai-language-models`, …).
    #[serde(default)]
    pub provider: String,
    /// The context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// USD per input token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// USD per output token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// USD per token written to a prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// USD per token read from a prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Whether it takes images.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vision: bool,
}

/// Where the model data came from.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Source {
    /// What the snapshot is.
    pub source: String,
    /// When it was taken.
    pub date: String,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "_meta")]
    meta: Option<Source>,
    models: BTreeMap<String, Model>,
}

/// A model table.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// Where the data came from (and any `--prices` file).
    pub sources: Vec<Source>,
    models: BTreeMap<String, Model>,
}

/// A model found: the name asked for, the entry used, and its data.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Found {
    /// The name given.
    pub asked: String,
    /// The table entry that matched.
    pub name: String,
    /// Its data.
    #[serde(flatten)]
    pub model: Model,
}

impl Catalog {
    /// The committed snapshot.
    pub fn builtin() -> Catalog {
        SNAPSHOT_PARSED.clone()
    }

    /// Where the committed snapshot comes from, without copying its table.
    pub fn builtin_sources() -> Vec<Source> {
        SNAPSHOT_PARSED.sources.clone()
    }

    /// Adds or overrides models from a file: the snapshot's JSON shape
    /// (`{"models": {NAME: {...}}}`, or LiteLLM's own flat map with its field
    /// names), or TOML (`[models.NAME]` tables with the snapshot's fields).
    pub fn load_overrides(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the prices file {}", path.display()))?;
        let models: BTreeMap<String, Model> = if path.extension().is_some_and(|e| e == "toml") {
            #[derive(Deserialize)]
            struct Toml {
                models: BTreeMap<String, Model>,
            }
            toml::from_str::<Toml>(&text)
                .with_context(|| format!("{}: not a prices file", path.display()))?
                .models
        } else {
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", path.display()))?;
            match v.get("models") {
                Some(m) => serde_json::from_value(m.clone()).with_context(|| {
                    format!("{}: \"models\" is not a model table", path.display())
                })?,
                None => litellm_map(&v)
                    .with_context(|| format!("{}: not a LiteLLM price map", path.display()))?,
            }
        };
        self.models.extend(models);
        self.sources.push(Source {
            source: format!("--prices {}", path.display()),
            date: String::new(),
        });
        Ok(())
    }

    /// The number of models.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Finds a model by the name people type; the error lists close names.
    pub fn find(&self, asked: &str) -> Result<Found, Vec<String>> {
        let found = |name: &str| {
            self.models.get(name).map(|m| Found {
                asked: asked.to_string(),
                name: name.to_string(),
                model: m.clone(),
            })
        };
        for candidate in candidates(asked) {
            if let Some(f) = found(&candidate) {
                return Ok(f);
            }
        }
        Err(self.close_to(asked))
    }

    /// Up to five names close to `asked`: sharing its longest prefix, then
    /// by edit distance.
    fn close_to(&self, asked: &str) -> Vec<String> {
        let asked = asked.to_lowercase();
        let base = asked.rsplit('/').next().unwrap_or(&asked).to_string();
        let mut scored: Vec<(usize, &String)> = self
            .models
            .keys()
            .filter(|k| !k.contains('/'))
            .map(|k| (distance(&base, k), k))
            .collect();
        scored.sort();
        scored.into_iter().take(5).map(|(_, k)| k.clone()).collect()
    }
}

/// The names to try for what was typed, most specific first.
fn candidates(asked: &str) -> Vec<String> {
    let lower = asked.trim().to_lowercase();
    let mut out = vec![asked.trim().to_string(), lower.clone()];
    let bare = lower.rsplit('/').next().unwrap_or(&lower).to_string();
    if bare != lower {
        out.push(bare.clone());
    }
    for name in [lower, bare] {
        let mut n = name.clone();
        for suffix in ["-latest", ":latest"] {
            if let Some(s) = n.strip_suffix(suffix) {
                n = s.to_string();
            }
        }
        out.push(n.clone());
        if let Some(s) = strip_date(&n) {
            out.push(s);
        }
    }
    // Ollama's own names (`llama3.1`, `llama3.1:8b`, as Open WebUI users
    // type them): the table keeps them as `ollama/NAME` (and `ollama/NAME:TAG`).
    let plain = asked.trim().to_lowercase();
    if !plain.contains('/') {
        out.push(format!("ollama/{plain}"));
        if let Some((name, _tag)) = plain.split_once(':') {
            out.push(format!("ollama/{name}"));
            out.push(name.to_string());
        }
    }
    out.dedup();
    out
}

/// `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`; `gpt-4o-2024-08-06`
/// → `gpt-4o`; `gemini-2.0-flash@001` → `gemini-2.0-flash`.
fn strip_date(name: &str) -> Option<String> {
    if let Some((head, _)) = name.split_once('@') {
        return Some(head.to_string());
    }
    let parts: Vec<&str> = name.split('-').collect();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let n = parts.len();
    if n >= 2 && digits(parts[n - 1], 8) {
        return Some(parts[..n - 1].join("-"));
    }
    if n >= 4 && digits(parts[n - 3], 4) && digits(parts[n - 2], 2) && digits(parts[n - 1], 2) {
        return Some(parts[..n - 3].join("-"));
    }
    None
}

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The fields of a LiteLLM entry that ctxclean reads as prices or sizes.
const PRICE_FIELDS: &[&str] = &[
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_creation_input_token_cost",
    "cache_read_input_token_cost",
    "max_input_tokens",
];

/// LiteLLM's own map, with its field names.
fn litellm_map(v: &serde_json::Value) -> anyhow::Result<BTreeMap<String, Model>> {
    let obj = v.as_object().context("expected a JSON object")?;
    let mut out = BTreeMap::new();
    for (name, e) in obj {
        if name == "sample_spec" {
            continue;
        }
        // A price that is there but not a number is an error, never a
        // price left out in silence.
        for k in PRICE_FIELDS {
            match e.get(*k) {
                None | Some(serde_json::Value::Null | serde_json::Value::Number(_)) => {}
                Some(other) => anyhow::bail!("model \"{name}\": \"{k}\" is {other}, not a number"),
            }
        }
        let num = |k: &str| e.get(k).and_then(serde_json::Value::as_f64);
        out.insert(
            name.clone(),
            Model {
                provider: e
                    .get("litellm_provider")
                    .and_then(|p| p.as_str())
                    .unwrap_or_default()
                    .to_string(),
                max_input_tokens: e.get("max_input_tokens").and_then(|x| x.as_u64()),
                input: num("input_cost_per_token"),
                output: num("output_cost_per_token"),
                cache_write: num("cache_creation_input_token_cost"),
                cache_read: num("cache_read_input_token_cost"),
                vision: e.get("supports_vision").and_then(|x| x.as_bool()) == Some(true),
            },
        );
    }
    Ok(out)
}

impl Found {
    /// The image rule of a model: its family, and OpenAI's per-model constants.
    pub fn image_rule(&self) -> Option<crate::images::ImageRule> {
        match self.family() {
            "anthropic" => Some(crate::images::ImageRule::Anthropic),
            "gemini" => Some(crate::images::ImageRule::Gemini),
            "openai" => {
                let n = self.name.as_str();
                Some(if n.starts_with("gpt-4o-mini") {
                    crate::images::ImageRule::OpenAi {
                        base: 2833,
                        tile: 5667,
                    }
                } else if n.starts_with("o1") || n.starts_with("o3") {
                    crate::images::ImageRule::OpenAi {
                        base: 75,
                        tile: 150,
                    }
                } else {
                    crate::images::ImageRule::OpenAi {
                        base: 85,
                        tile: 170,
                    }
                })
            }
            _ => None,
        }
    }

    /// The provider family: `openai`, `anthropic`, `gemini`, or another.
    pub fn family(&self) -> &str {
        let p = self.model.provider.as_str();
        if p == "anthropic" || p.contains("anthropic") || self.name.starts_with("claude") {
            "anthropic"
        } else if p.starts_with("vertex_ai") || p == "gemini" || self.name.starts_with("gemini") {
            "gemini"
        } else if p == "openai" || p == "azure" || p == "text-completion-openai" {
            "openai"
        } else {
            p
        }
    }

    /// The tokenizer that counts for it: OpenAI's own for OpenAI models
    /// (`o200k_base` for GPT-4o and later, `cl100k_base` for GPT-4 and
    /// GPT-3.5); `o200k_base` as an estimate for every other provider, whose
    /// tokenizers are not public.
    pub fn encoding(&self) -> (Encoding, bool) {
        let n = self.name.as_str();
        if self.family() == "openai" {
            if n.starts_with("gpt-4o")
                || n.starts_with("gpt-4.1")
                || n.starts_with("gpt-4.5")
                || n.starts_with("gpt-5")
                || n.starts_with("chatgpt-4o")
                || n.starts_with('o')
            {
                return (Encoding::O200kBase, true);
            }
            if n.starts_with("gpt-4") || n.starts_with("gpt-3.5") {
                return (Encoding::Cl100kBase, true);
            }
        }
        (Encoding::O200kBase, false)
    }

    /// USD for `tokens` input tokens, when the table has a price.
    pub fn input_cost(&self, tokens: u64) -> Option<f64> {
        self.model.input.map(|p| p * tokens as f64)
    }
}

/// Dollars as people read them: `$0.0123`, `$1.23`, `$1,234.56`.
pub fn dollars(usd: f64) -> String {
    if usd == 0.0 {
        return "$0".to_string();
    }
    if usd.abs() < 1.0 {
        return format!("${usd:.4}");
    }
    let cents = (usd * 100.0).round() as i64;
    format!(
        "${}.{:02}",
        crate::numbers::thousands((cents / 100).unsigned_abs() as usize),
        (cents % 100).abs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_loads_and_names_its_source() {
        let c = Catalog::builtin();
        assert!(c.len() > 1000, "{}", c.len());
        assert!(c.sources[0].source.contains("LiteLLM"));
        assert_eq!(c.sources[0].date, "2026-11-28");
    }

    #[test]
    fn the_models_agents_log_are_priced() {
        // Codex logs name the Responses API's models; Claude Code logs
        // name dated snapshots (issue 56: 5 of 18 files were priced).
        let c = Catalog::builtin();
        for name in [
            "gpt-5-codex",
            "gpt-5.3-codex",
            "gpt-5.1-codex-mini",
            "claude-sonnet-4-5-20250929",
            "claude-opus-4-5-20251101",
        ] {
            let m = c
                .find(name)
                .unwrap_or_else(|close| panic!("{name}: {close:?}"));
            assert!(
                m.model.input.is_some() && m.model.cache_read.is_some(),
                "{name}"
            );
        }
    }

    #[test]
    fn lookups_tolerate_what_people_type() {
        let c = Catalog::builtin();
        for (asked, name) in [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
            ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("Claude-Sonnet-4-5", "claude-sonnet-4-5"),
            ("gpt-4o", "gpt-4o"),
            ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
            ("gpt-4o-1999-01-01", "gpt-4o"),
            ("claude-sonnet-4-5-29990101", "claude-sonnet-4-5"),
            ("gpt-4o-latest", "gpt-4o"),
        ] {
            assert_eq!(c.find(asked).unwrap().name, name, "{asked}");
        }
        let close = c.find("claude-sonet-4-5").unwrap_err();
        assert!(
            close.contains(&"claude-sonnet-4-5".to_string()),
            "{close:?}"
        );
    }

    #[test]
    fn families_and_tokenizers() {
        let c = Catalog::builtin();
        let f = |n: &str| c.find(n).unwrap();
        assert_eq!(f("claude-sonnet-4-5").family(), "anthropic");
        assert_eq!(f("gpt-4o").family(), "openai");
        assert_eq!(f("gemini-2.5-pro").family(), "gemini");
        assert_eq!(f("gpt-4o").encoding(), (Encoding::O200kBase, true));
        assert_eq!(f("gpt-4").encoding(), (Encoding::Cl100kBase, true));
        assert_eq!(
            f("claude-sonnet-4-5").encoding(),
            (Encoding::O200kBase, false)
        );
    }

    #[test]
    fn prices_are_per_token_in_dollars() {
        let c = Catalog::builtin();
        let s = c.find("claude-sonnet-4-5").unwrap();
        assert_eq!(s.model.input, Some(3e-6));
        assert_eq!(s.model.max_input_tokens, Some(200_000));
        assert!((s.input_cost(1_000_000).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(dollars(0.0), "$0");
        assert_eq!(dollars(0.004929), "$0.0049");
        assert_eq!(dollars(3.0), "$3.00");
        assert_eq!(dollars(1234.567), "$1,234.57");
    }

    #[test]
    fn overrides_add_and_replace_models() {
        let dir = std::env::temp_dir().join(format!("ctxclean-prices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let toml = dir.join("p.toml");
        std::fs::write(
            &toml,
            "[models.my-llama]\nprovider = \"ollama\"\ninput = 0.0\nmax_input_tokens = 8192\n\n\
             [models.gpt-4o]\nprovider = \"openai\"\ninput = 0.000001\n",
        )
        .unwrap();
        let mut c = Catalog::builtin();
        c.load_overrides(&toml).unwrap();
        assert_eq!(
            c.find("my-llama").unwrap().model.max_input_tokens,
            Some(8192)
        );
        assert_eq!(c.find("gpt-4o").unwrap().model.input, Some(1e-6));
        let json = dir.join("p.json");
        std::fs::write(
            &json,
            r#"{"x-model": {"litellm_provider": "openai", "input_cost_per_token": 2e-6}}"#,
        )
        .unwrap();
        c.load_overrides(&json).unwrap();
        assert_eq!(c.find("x-model").unwrap().model.input, Some(2e-6));
        assert!(c.sources.last().unwrap().source.contains("p.json"));
        // Issue 29: a price that is not a number was ignored in silence.
        std::fs::write(
            &json,
            r#"{"x-model": {"litellm_provider": "openai", "input_cost_per_token": "abc"}}"#,
        )
        .unwrap();
        let err = format!("{:#}", c.load_overrides(&json).unwrap_err());
        assert!(err.contains("p.json"), "{err}");
        assert!(
            err.contains("x-model") && err.contains("input_cost_per_token"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
