//! The request log (one JSON line per request: never a body, never a
//! credential) and the Prometheus metrics.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use hyper::{Method, Response};
use serde::Serialize;

use super::handle::Body;
use super::State;

/// A request's end: the status of its answer, or `"client closed"` when
/// the client left before it had one.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(untagged)]
pub(crate) enum Status {
    Code(u16),
    Gone(&'static str),
}

/// One request's line.
#[derive(Serialize)]
pub(crate) struct Line {
    /// Seconds since the epoch, with milliseconds.
    time: f64,
    route: &'static str,
    method: String,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_before: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_after: Option<usize>,
    messages_removed: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    steps: Vec<String>,
    /// Whether the body forwarded is not the body that came.
    rewritten: bool,
    /// Why the body went on as it came, when something could have changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kept_because: Option<String>,
    /// A conversation seen before: its previous body held, or cleaned again.
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<String>,
    /// What the command line would warn of: kept over budget, a summary
    /// that fell back, an emptied conversation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    /// The upstream's status, or the proxy's own answer's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) upstream_error: Option<String>,
    /// The proxy's own error answer (400, 413), when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Milliseconds from the whole body read to the request sent on.
    pub(crate) added_ms: f64,
}

impl Line {
    /// The client left before the answer began.
    pub(crate) fn client_closed(&mut self) {
        if self.status.is_none() {
            self.status = Some(Status::Gone("client closed"));
        }
    }

    pub(crate) fn new(route: &'static str, method: &Method, path: &str) -> Line {
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| (d.as_millis() as f64) / 1000.0);
        Line {
            time,
            route,
            method: method.to_string(),
            path: path.to_string(),
            model: None,
            tokens_before: None,
            tokens_after: None,
            messages_removed: 0,
            steps: Vec::new(),
            rewritten: false,
            kept_because: None,
            cache: None,
            warnings: Vec::new(),
            status: None,
            upstream_error: None,
            error: None,
            added_ms: 0.0,
        }
    }

    /// What the library decided for the body.
    pub(crate) fn record(&mut self, outcome: &ctxclean::inflight::Outcome) {
        use ctxclean::changes::Action;
        self.model.clone_from(&outcome.model);
        self.cache.clone_from(&outcome.cache);
        self.warnings = outcome
            .reports
            .iter()
            .flat_map(ctxclean::report::warnings)
            .collect();
        self.rewritten = outcome.rewritten();
        if outcome.kept_because.is_some() {
            self.kept_because.clone_from(&outcome.kept_because);
        }
        let sum = |f: &dyn Fn(&ctxclean::changes::ConversationReport) -> usize| {
            outcome.reports.iter().map(f).sum::<usize>()
        };
        if !outcome.reports.is_empty() {
            self.tokens_before = Some(sum(&|r| r.before.tokens));
            self.tokens_after = Some(sum(&|r| r.after.tokens));
        }
        self.messages_removed = sum(&|r| {
            r.changes
                .iter()
                .filter(|c| c.action == Action::Removed)
                .count()
        });
        for step in outcome
            .reports
            .iter()
            .flat_map(|r| r.changes.iter().filter_map(|c| c.step.as_ref()))
        {
            if !self.steps.contains(step) {
                self.steps.push(step.clone());
            }
        }
    }

    /// The proxy's own error answer, noted.
    pub(crate) fn answer(&mut self, r: Response<Body>) -> Response<Body> {
        self.status = Some(Status::Code(r.status().as_u16()));
        if r.status().is_client_error() {
            self.error = Some(r.status().canonical_reason().unwrap_or("error").into());
        }
        r
    }
}

/// Where lines go.
pub(crate) struct Log(Mutex<Box<dyn Write + Send>>);

impl Log {
    /// `--log FILE` (appended to), else standard error.
    pub(crate) fn open(path: Option<&std::path::Path>) -> anyhow::Result<Log> {
        let w: Box<dyn Write + Send> = match path {
            Some(p) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening the log {}", p.display()))?,
            ),
            None => Box::new(std::io::stderr()),
        };
        Ok(Log(Mutex::new(w)))
    }

    fn write(&self, line: &Line) {
        let Ok(mut text) = serde_json::to_vec(line) else {
            return;
        };
        text.push(b'\n');
        if let Ok(mut w) = self.0.lock() {
            // A log that cannot be written is no reason to stop serving.
            let _ = w.write_all(&text).and_then(|()| w.flush());
        }
    }
}

/// Counters for `GET /metrics`.
#[derive(Default)]
pub(crate) struct Metrics {
    requests: AtomicU64,
    rewritten: AtomicU64,
    kept: AtomicU64,
    refused: AtomicU64,
    upstream_errors: AtomicU64,
    client_closed: AtomicU64,
    tokens_before: AtomicU64,
    tokens_after: AtomicU64,
    added_us: AtomicU64,
}

impl Metrics {
    fn add(&self, line: &Line) {
        let inc = |c: &AtomicU64, n: u64| {
            c.fetch_add(n, Ordering::Relaxed);
        };
        inc(&self.requests, 1);
        inc(
            &self.client_closed,
            u64::from(matches!(line.status, Some(Status::Gone(_)))),
        );
        inc(&self.rewritten, u64::from(line.rewritten));
        inc(&self.kept, u64::from(line.kept_because.is_some()));
        inc(&self.refused, u64::from(line.error.is_some()));
        inc(
            &self.upstream_errors,
            u64::from(line.upstream_error.is_some()),
        );
        inc(&self.tokens_before, line.tokens_before.unwrap_or(0) as u64);
        inc(&self.tokens_after, line.tokens_after.unwrap_or(0) as u64);
        inc(&self.added_us, (line.added_ms * 1000.0) as u64);
    }

    /// The Prometheus text format.
    pub(crate) fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        for (name, help, value) in [
            (
                "ctxclean_requests_total",
                "Requests served.",
                get(&self.requests),
            ),
            (
                "ctxclean_requests_client_closed_total",
                "Requests whose client left before their answer began (forwarded ones may be billed).",
                get(&self.client_closed),
            ),
            (
                "ctxclean_requests_rewritten_total",
                "Requests whose body was cleaned.",
                get(&self.rewritten),
            ),
            (
                "ctxclean_requests_kept_total",
                "Requests forwarded as they came though the recipe had something to say.",
                get(&self.kept),
            ),
            (
                "ctxclean_requests_refused_total",
                "Requests answered 4xx by the proxy.",
                get(&self.refused),
            ),
            (
                "ctxclean_upstream_errors_total",
                "Requests the upstream could not answer.",
                get(&self.upstream_errors),
            ),
            (
                "ctxclean_tokens_before_total",
                "Conversation tokens in the bodies that came.",
                get(&self.tokens_before),
            ),
            (
                "ctxclean_tokens_after_total",
                "Conversation tokens in the bodies forwarded.",
                get(&self.tokens_after),
            ),
        ] {
            out += &format!("# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
        }
        let secs = get(&self.added_us) as f64 / 1e6;
        out += &format!(
            "# HELP ctxclean_added_seconds_total Time ctxclean added to requests.\n# TYPE ctxclean_added_seconds_total counter\nctxclean_added_seconds_total {secs}\n"
        );
        out
    }
}

impl State {
    /// A request is done: its line logged, its figures counted.
    pub(crate) fn finish(&self, line: Line) {
        self.metrics.add(&line);
        self.log.write(&line);
    }
}
