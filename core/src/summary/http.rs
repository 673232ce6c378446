//! Summaries from a model over HTTP: Ollama's chat API and the OpenAI chat
//! completions API (OpenAI itself, vLLM, llama.cpp, LM Studio, …), as they
//! are on the wire.
//!
//! - Ollama: `POST {url}/api/chat` with `{"model", "messages", "stream":
//!   false}`; the answer is `message.content`.
//! - OpenAI: `POST {url}/chat/completions` with `{"model", "messages",
//!   "stream": false}` and `Authorization: Bearer KEY` when a key is set; the
//!   answer is `choices[0].message.content`.
//!
//! The messages are the prompt as a system message and the prepared
//! transcript as a user message. Timeouts and 5xx answers are retried twice
//! with backoff; every other failure is returned at once. Redirects are not
//! followed (a POST turned into a GET would summarize nothing): a 3xx answer
//! is a failure. After two conversations in a row failed, the server is not
//! asked again in the run: the rest fall back at once. The API key and the
//! credentials of the URL never appear in a reason or a summary: they are
//! redacted before anything is cut or returned.

use std::io;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Engine, EngineError, Request};

/// Which chat API a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST /api/chat`, answer in `message.content`.
    Ollama,
    /// `POST /chat/completions`, answer in `choices[0].message.content`.
    OpenAi,
}

impl Api {
    /// The server used when no `--url` is given.
    pub fn default_url(self) -> &'static str {
        match self {
            Api::Ollama => "http://localhost:11434",
            Api::OpenAi => "https://api.openai.com/v1",
        }
    }

    /// The model used when no `--model` is given.
    pub fn default_model(self) -> &'static str {
        match self {
            Api::Ollama => "llama3.2",
            Api::OpenAi => "gpt-4o-mini",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Api::Ollama => "ollama",
            Api::OpenAi => "openai",
        }
    }
}

/// An engine that asks a model over HTTP.
pub struct HttpEngine {
    api: Api,
    endpoint: String,
    /// The endpoint as reasons show it: without the URL's credentials.
    shown: String,
    /// What is never shown: the key, the URL's user and password.
    secrets: Vec<String>,
    /// Conversations in a row that failed, and the last reason.
    failures: std::sync::Mutex<(u32, String)>,
    /// The context window the server named in an error; 0 until it does.
    learned: std::sync::atomic::AtomicUsize,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    retries: u32,
    backoff: Duration,
    agent: ureq::Agent,
}

impl HttpEngine {
    /// An engine for `api` at `url` (the server's base URL, e.g.
    /// `http://localhost:11434` or `https://api.openai.com/v1`). `timeout`
    /// bounds each attempt.
    pub fn new(
        api: Api,
        url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> HttpEngine {
        let base = url.trim_end_matches('/');
        let endpoint = match api {
            Api::Ollama => format!("{base}/api/chat"),
            Api::OpenAi => format!("{base}/chat/completions"),
        };
        let (shown, mut secrets) = without_credentials(&endpoint);
        let api_key = api_key.filter(|k| !k.is_empty());
        secrets.extend(api_key.clone());
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("ctxclean/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        HttpEngine {
            api,
            endpoint,
            shown,
            secrets,
            failures: std::sync::Mutex::new((0, String::new())),
            learned: std::sync::atomic::AtomicUsize::new(0),
            model: model.to_string(),
            api_key,
            timeout,
            retries: 2,
            backoff: Duration::from_millis(500),
            agent,
        }
    }

    /// Sets how many times a timeout or 5xx is retried, and the first wait
    /// (doubled before each further retry).
    pub fn retries(mut self, retries: u32, backoff: Duration) -> HttpEngine {
        self.retries = retries;
        self.backoff = backoff;
        self
    }

    /// The URL requests go to, as reasons show it (no credentials).
    pub fn shown_endpoint(&self) -> &str {
        &self.shown
    }

    /// `text` with the key and the URL's credentials replaced.
    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if !secret.is_empty() {
                out = out.replace(secret.as_str(), "[redacted]");
            }
        }
        out
    }

    /// The request body for a summary request.
    /// It names the summary's budget as the answer's limit (`max_tokens`;
    /// Ollama's `num_predict`) and, to Ollama, the context when it is known
    /// (`num_ctx`: Ollama otherwise cuts the input to its default, unsaid).
    pub fn body(&self, request: &Request<'_>) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.prompt},
                {"role": "user", "content": request.input()},
            ],
            "stream": false,
        });
        match self.api {
            Api::OpenAi => body["max_tokens"] = Value::from(request.max_summary_tokens),
            Api::Ollama => {
                let mut options = json!({"num_predict": request.max_summary_tokens});
                if let Some(n) = request.context {
                    options["num_ctx"] = Value::from(n);
                }
                body["options"] = options;
            }
        }
        body
    }

    fn attempt(&self, body: &[u8]) -> Result<String, EngineError> {
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {key}"));
        }
        let mut resp = req.send(body).map_err(|e| self.transport_error(e))?;
        let status = resp.status().as_u16();
        if (300..400).contains(&status) {
            let to = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("nowhere");
            return Err(EngineError::fatal(format!(
                "HTTP {status} from {}: redirected to {}; the summary request is not followed (use the final URL as --url)",
                self.shown,
                self.redact(&without_credentials(to).0)
            )));
        }
        let text = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport_error(e))?;
        // Redacted before anything is cut from it.
        let text = self.redact(&text);
        if !(200..300).contains(&status) {
            let reason = format!("HTTP {status} from {}{}", self.shown, snippet(&text));
            return Err(if status >= 500 {
                EngineError::transient(reason)
            } else {
                EngineError::fatal(reason)
            });
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            EngineError::fatal(format!(
                "malformed answer: not JSON ({e}){}",
                snippet(&text)
            ))
        })?;
        let content = match self.api {
            Api::Ollama => value.pointer("/message/content"),
            Api::OpenAi => value.pointer("/choices/0/message/content"),
        };
        let field = match self.api {
            Api::Ollama => "message.content",
            Api::OpenAi => "choices[0].message.content",
        };
        let content = content
            .and_then(Value::as_str)
            .ok_or_else(|| EngineError::fatal(format!("malformed answer: no {field} string")))?;
        let summary = strip_thinking(content).trim();
        if summary.is_empty() {
            return Err(EngineError::fatal(format!(
                "empty answer ({field} is empty)"
            )));
        }
        Ok(summary.to_string())
    }

    fn transport_error(&self, err: ureq::Error) -> EngineError {
        let at = &self.shown;
        let timed_out = || {
            EngineError::transient(format!(
                "timed out after {} s ({at})",
                self.timeout.as_secs_f64()
            ))
        };
        match err {
            ureq::Error::Timeout(_) => timed_out(),
            ureq::Error::Io(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                EngineError::fatal(format!("connection refused ({at})"))
            }
            ureq::Error::Io(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                timed_out()
            }
            ureq::Error::Io(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::UnexpectedEof
                ) =>
            {
                EngineError::transient(format!("connection closed by the server ({at}): {e}"))
            }
            ureq::Error::HostNotFound => EngineError::fatal(format!("host not found ({at})")),
            ureq::Error::ConnectionFailed => {
                EngineError::fatal(format!("could not connect ({at})"))
            }
            other => EngineError::fatal(format!("{other} ({at})")),
        }
    }
}

impl Engine for HttpEngine {
    fn name(&self) -> &str {
        self.api.name()
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn learned_context(&self) -> Option<usize> {
        match self.learned.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            n => Some(n),
        }
    }

    fn learn_context(&self, n: usize) {
        self.learned.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    fn summarize(&self, request: &Request<'_>) -> Result<String, EngineError> {
        {
            let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
            if failures.0 >= BREAKER {
                return Err(EngineError::fatal(format!(
                    "not asked: the server failed for {} conversations in a row ({})",
                    failures.0, failures.1
                )));
            }
        }
        let result = self.ask(request);
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(_) => *failures = (0, String::new()),
            Err(e) => *failures = (failures.0 + 1, e.reason.clone()),
        }
        result
    }
}

/// After this many conversations in a row failed, the server is not asked
/// again in the run.
const BREAKER: u32 = 2;

impl HttpEngine {
    fn ask(&self, request: &Request<'_>) -> Result<String, EngineError> {
        let body = serde_json::to_vec(&self.body(request))
            .map_err(|e| EngineError::fatal(format!("encoding the request: {e}")))?;
        let mut wait = self.backoff;
        let mut attempt = 0;
        loop {
            match self.attempt(&body) {
                Ok(summary) => return Ok(self.redact(&summary)),
                Err(e) if e.retryable && attempt < self.retries => {
                    attempt += 1;
                    std::thread::sleep(wait);
                    wait *= 2;
                }
                Err(mut e) => {
                    if attempt > 0 {
                        let s = if attempt == 1 { "retry" } else { "retries" };
                        e.reason += &format!(", after {attempt} {s}");
                    }
                    e.reason = self.redact(&e.reason);
                    return Err(e);
                }
            }
        }
    }
}

/// A URL without its user and password (`http://user:pass@host/` →
/// `http://[redacted]@host/`), and the credentials taken out.
fn without_credentials(url: &str) -> (String, Vec<String>) {
    let Some(scheme_end) = url.find("://") else {
        return (url.to_string(), Vec::new());
    };
    let rest = &url[scheme_end + 3..];
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..host_end].rfind('@') else {
        return (url.to_string(), Vec::new());
    };
    let userinfo = &rest[..at];
    let secrets = userinfo
        .split(':')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .chain(std::iter::once(userinfo.to_string()))
        .collect();
    (
        format!("{}[redacted]@{}", &url[..scheme_end + 3], &rest[at + 1..]),
        secrets,
    )
}

/// `: FIRST 200 CHARS OF A BODY` for error messages, or nothing when empty.
fn snippet(body: &str) -> String {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return String::new();
    }
    let cut: String = flat.chars().take(200).collect();
    let more = if flat.chars().count() > 200 {
        "…"
    } else {
        ""
    };
    format!(": {cut}{more}")
}

/// A reasoning model's answer without its leading `<think>…</think>` block.
fn strip_thinking(content: &str) -> &str {
    let trimmed = content.trim_start();
    match trimmed.strip_prefix("<think>") {
        Some(rest) => match rest.find("</think>") {
            Some(end) => &rest[end + "</think>".len()..],
            None => content,
        },
        None => content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_thinking() {
        let e = HttpEngine::new(
            Api::Ollama,
            "http://h:1/",
            "m",
            None,
            Duration::from_secs(1),
        );
        assert_eq!(e.shown_endpoint(), "http://h:1/api/chat");
        let e = HttpEngine::new(
            Api::OpenAi,
            "http://h:1/v1",
            "m",
            Some(String::new()),
            Duration::from_secs(1),
        );
        assert_eq!(e.shown_endpoint(), "http://h:1/v1/chat/completions");
        assert!(e.api_key.is_none(), "an empty key sends no header");
        assert_eq!(strip_thinking("<think>hm</think>\nSummary"), "\nSummary");
        assert_eq!(strip_thinking("Summary"), "Summary");
        assert_eq!(snippet("  "), "");
        assert_eq!(snippet("a\n b"), ": a b");
    }

    #[test]
    fn credentials_never_show() {
        let (shown, secrets) = without_credentials("http://user:s3cret@h:1/v1?x=1");
        assert_eq!(shown, "http://[redacted]@h:1/v1?x=1");
        assert!(secrets.contains(&"s3cret".to_string()));
        assert_eq!(without_credentials("http://h:1/a@b").0, "http://h:1/a@b");
        let e = HttpEngine::new(
            Api::OpenAi,
            "http://user:s3cret@h:1/v1",
            "m",
            Some("sk-abcdef123456".into()),
            Duration::from_secs(1),
        );
        assert_eq!(
            e.shown_endpoint(),
            "http://[redacted]@h:1/v1/chat/completions"
        );
        // Redacted before a cut: a key across the 200th character never
        // shows in part.
        let body = format!("{}Bearer sk-abcdef123456 and s3cret", "x".repeat(190));
        let cut = snippet(&e.redact(&body));
        assert!(!cut.contains("sk-abc") && !cut.contains("s3cret"), "{cut}");
    }
}
