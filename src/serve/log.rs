//! The request log (one JSON line per request: never a body, never a
//! credential) and the Prometheus metrics.

use std::sync::atomic::{AtomicU64, Ordering};

use hyper::{Method, Response};
use serde::Serialize;

use ctxclean::inflight::answer::{Billed, Read};

use super::limits::Body;
use super::State;

fn round(x: f64, digits: i32) -> f64 {
    let k = 10f64.powi(digits);
    (x * k).round() / k
}

/// A path as the log writes it: `;` parameters (where a client may put its
/// key, `;key=…`) left out.
pub(crate) fn loggable(path: &str) -> String {
    match path.split_once(';') {
        Some((head, _)) => format!("{head};…"),
        None => path.to_string(),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// This run of the proxy, as its conversations' ids begin: the second it
/// took its first request (hexadecimal), then 32 random bits, so that two
/// proxies started in one second and writing one log never share an id.
fn run_id() -> &'static str {
    use std::hash::{BuildHasher, Hasher};
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // The standard library seeds each RandomState from the system's
        // random source.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("{secs:x}-{:08x}", h.finish() as u32)
    })
}

/// The prices of a model the table knows.
fn prices_of(model: &str) -> Option<ctxclean::replay::Prices> {
    static CATALOG: std::sync::OnceLock<ctxclean::models::Catalog> = std::sync::OnceLock::new();
    let catalog = CATALOG.get_or_init(ctxclean::models::Catalog::builtin);
    ctxclean::replay::Prices::of(&catalog.find(model).ok()?)
}

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
    /// The conversation, as the proxy's holds tell them apart: this run's
    /// first request (hexadecimal seconds) and the conversation's number in it, the
    /// same on every request that continues it (`ctxclean bill
    /// --by conversation` groups by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    conversation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_before: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_after: Option<usize>,
    /// Tokens of the tool definitions the body carries (in neither count
    /// above; billed with every call).
    #[serde(skip_serializing_if = "is_zero")]
    tokens_tools: usize,
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
    /// ctxclean placed a prompt-cache breakpoint on the body it changed
    /// (an Anthropic body that carried none).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    breakpoint: bool,
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
    /// What the provider billed, as its answer said.
    #[serde(skip_serializing_if = "Option::is_none")]
    billed: Option<Billed>,
    /// `billed`; `counted` (a stream without usage: its output counted by
    /// ctxclean, its input ctxclean's count of the body sent); or why
    /// nothing was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
    /// For `counted`: the output tokens counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_counted: Option<u64>,
    /// Billed input (cache reads and writes included) over ctxclean's
    /// count of the body sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    billed_per_counted: Option<f64>,
    /// The request at the model's prices, as billed (or counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    dollars: Option<f64>,
    /// The request as it came, had every request gone on as it came:
    /// billed by the provider's cache rule in ctxclean's count
    /// (`ctxclean::inflight::cache`), then scaled by what the provider
    /// billed for the body sent over ctxclean's count of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    dollars_as_came: Option<f64>,
    /// Those figures before the scaling, and the count of the body sent.
    #[serde(skip_serializing_if = "Option::is_none", rename = "as_came")]
    pub(crate) metered: Option<ctxclean::inflight::cache::Metered>,
    /// Why the provider's cache served less than this conversation's
    /// previous request predicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_miss: Option<String>,
    /// What the library knew of the conversation (see `cache_miss`).
    #[serde(skip)]
    continuation: Option<ctxclean::inflight::Continuation>,
    #[serde(skip)]
    changed_at: Option<usize>,
    /// The request's cache markers: whether it has `cache_control`, and
    /// whether one asks for an hour.
    #[serde(skip)]
    pub(crate) markers: (bool, bool),
    /// The kind of `cache_miss` (see [`MISSES`]).
    #[serde(skip)]
    miss_kind: Option<&'static str>,
}

/// The kinds of cache misses, as `/metrics` counts them.
const MISSES: [&str; 6] = [
    "cleaned_again",
    "client_changed",
    "lifetime",
    "under_minimum",
    "no_marker",
    "unknown",
];

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
            path: loggable(path),
            model: None,
            conversation: None,
            tokens_before: None,
            tokens_after: None,
            tokens_tools: 0,
            messages_removed: 0,
            steps: Vec::new(),
            rewritten: false,
            kept_because: None,
            cache: None,
            breakpoint: false,
            warnings: Vec::new(),
            status: None,
            upstream_error: None,
            error: None,
            added_ms: 0.0,
            billed: None,
            usage: None,
            output_counted: None,
            billed_per_counted: None,
            dollars: None,
            dollars_as_came: None,
            metered: None,
            cache_miss: None,
            continuation: None,
            changed_at: None,
            markers: (false, false),
            miss_kind: None,
        }
    }

    /// The model, when the body did not name it (Gemini's is in the path).
    pub(crate) fn name_model(&mut self, model: &str) {
        if self.model.is_none() {
            self.model = Some(model.to_string());
        }
    }

    /// Whether the answer is the upstream's (not one the proxy gave).
    pub(crate) fn answered_by_upstream(&self) -> bool {
        self.error.is_none()
            && self.upstream_error.is_none()
            && matches!(self.status, Some(Status::Code(_)))
    }

    /// What the answer said the provider billed, priced.
    pub(crate) fn read_usage(&mut self, read: Read, state: &State) {
        // What the provider bills: the messages and the tool definitions.
        let sent = self
            .tokens_after
            .map(|t| (t + self.tokens_tools) as u64)
            .unwrap_or(0);
        let billed = match read {
            Read::Billed(b) => {
                self.usage = Some("billed".into());
                if sent > 0 {
                    self.billed_per_counted = Some(round(b.input_total() as f64 / sent as f64, 4));
                    // What `trim --budget-in billed` reads its budget with.
                    let model = self.model.clone();
                    if let Some(why) = model
                        .and_then(|m| ctxclean::fit::learned().learn(&m, b.input_total(), sent))
                    {
                        self.warnings
                            .push(format!("billed/counted not learned from: {why}"));
                    }
                }
                b
            }
            Read::Streamed(text) => {
                let output = state.count_text(&text) as u64;
                self.usage = Some("counted".into());
                self.output_counted = Some(output);
                Billed {
                    input: sent,
                    output,
                    ..Billed::default()
                }
            }
            Read::Nothing(why) => {
                self.usage = Some(why.into());
                return;
            }
        };
        if self.usage.as_deref() == Some("billed") {
            self.billed = Some(billed);
            let lifetime = state.config.cache_lifetime.as_secs();
            if let Some((kind, why)) = self.miss(&billed, lifetime) {
                self.miss_kind = Some(kind);
                self.cache_miss = Some(why);
            }
        }
        let Some(prices) = state
            .config
            .prices
            .clone()
            .or_else(|| self.model.as_deref().and_then(prices_of))
        else {
            return;
        };
        let dollars = prices.billed(&billed);
        self.dollars = Some(round(dollars, 8));
        // Priced as it came by the provider's rule, over the requests as
        // they came (a body that went unchanged may have cost more or less
        // than it would have: the bodies before it changed the cache), at
        // the ratio the provider billed the body sent at. Not metered (not
        // cleaned: an encoding not read, a cleaning past its timeout): it
        // went as it came, at what it cost.
        let as_came = match self.metered.filter(|m| m.sent > 0) {
            Some(m) => {
                let ratio = billed.input_total() as f64 / m.sent as f64;
                prices.scaled(&m.came, ratio, billed.output)
            }
            _ => dollars,
        };
        self.dollars_as_came = Some(round(as_came, 8));
    }

    /// What the library decided for the body.
    pub(crate) fn record(&mut self, outcome: &ctxclean::inflight::Outcome) {
        use ctxclean::changes::Action;
        self.model.clone_from(&outcome.model);
        self.conversation = outcome.conversation.map(|n| format!("{}.{n}", run_id()));
        self.cache.clone_from(&outcome.cache);
        self.breakpoint = outcome.breakpoint;
        self.tokens_tools = outcome.extras;
        self.continuation = outcome.continuation;
        self.changed_at = outcome.changed_at;
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

    /// Why the cache served less than predicted, with its kind: for a
    /// continuing conversation, against the previous body forwarded; for a
    /// conversation whose history the client changed, that change.
    /// A cache's lifetime for this request: an hour with a `ttl: "1h"`
    /// marker.
    fn lifetime(&self, lifetime: u64) -> u64 {
        if self.markers.1 {
            lifetime.max(3600)
        } else {
            lifetime
        }
    }

    /// The model's minimum cacheable prefix, in billed tokens.
    fn minimum(&self) -> f64 {
        if self.model.as_deref().is_some_and(|m| m.contains("haiku")) {
            2048.0
        } else {
            1024.0
        }
    }

    fn miss(&self, b: &Billed, lifetime: u64) -> Option<(&'static str, String)> {
        let ratio = self.billed_per_counted.unwrap_or(1.0);
        let read = b.cache_read as f64;
        if let Some(at) = self.changed_at {
            return (read < 0.5 * b.input_total() as f64).then(|| {
                ("client_changed", format!("the client changed the conversation at message {at}: it no longer continues the request before"))
            });
        }
        let c = self.continuation?;
        if read >= 0.5 * c.previous as f64 * ratio {
            return None;
        }
        let cleaned = self
            .cache
            .as_deref()
            .filter(|w| w.starts_with("cleaned again"));
        let lifetime = self.lifetime(lifetime);
        let minimum = self.minimum();
        let anthropic = self.route.starts_with("anthropic");
        Some(match cleaned {
            Some(why) if c.shared < c.previous / 2 => ("cleaned_again", format!("ctxclean {why}")),
            _ if c.since.as_secs() > lifetime => (
                "lifetime",
                format!("{} s since the conversation's last request: past the cache's lifetime ({lifetime} s)", c.since.as_secs()),
            ),
            // The cache's prefix is the tools and system prompt, then the
            // messages: the minimum is of all of it.
            _ if ((c.shared + c.head) as f64 * ratio) < minimum => (
                "under_minimum",
                format!("the prefix shared with the last request is under the model's minimum cacheable length ({minimum} tokens)"),
            ),
            _ if anthropic && !self.markers.0 => (
                "no_marker",
                "the request has no cache_control marker: Anthropic caches only a prefix marked so".into(),
            ),
            _ => ("unknown", "the shared prefix predicted a cache read the provider did not bill".into()),
        })
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
    /// Billed tokens by kind: input, cache read, cache write, output.
    billed: [AtomicU64; 4],
    /// Answers whose usage was read: billed, counted, neither.
    usage: [AtomicU64; 3],
    /// Micro-dollars, as billed and as the requests came (estimate).
    dollars_micro: AtomicU64,
    dollars_as_came_micro: AtomicU64,
    /// Cache misses by kind (see [`MISSES`]).
    misses: [AtomicU64; 6],
}

impl Metrics {
    fn add(&self, line: &Line) {
        // Counters saturate: a sum past 2⁶⁴ stays at the top, never wraps.
        let inc = |c: &AtomicU64, n: u64| {
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(n))
            });
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
        if let Some(b) = &line.billed {
            for (c, n) in self
                .billed
                .iter()
                .zip([b.input, b.cache_read, b.cache_write, b.output])
            {
                inc(c, n);
            }
        }
        match line.usage.as_deref() {
            Some("billed") => inc(&self.usage[0], 1),
            Some("counted") => inc(&self.usage[1], 1),
            Some(_) => inc(&self.usage[2], 1),
            None => {}
        }
        if let Some(k) = line
            .miss_kind
            .and_then(|kind| MISSES.iter().position(|m| *m == kind))
        {
            inc(&self.misses[k], 1);
        }
        inc(
            &self.dollars_micro,
            (line.dollars.unwrap_or(0.0) * 1e6) as u64,
        );
        inc(
            &self.dollars_as_came_micro,
            (line.dollars_as_came.unwrap_or(0.0) * 1e6) as u64,
        );
    }

    /// The Prometheus text format, with the lines the log lost.
    pub(crate) fn render(&self, log_lost: u64) -> String {
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
                "ctxclean_log_lines_lost_total",
                "Request lines lost: the log could not be written, or did not keep up (said on standard error).",
                log_lost,
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
        out += "# HELP ctxclean_billed_tokens_total Tokens the upstream's answers said were billed, by kind.\n# TYPE ctxclean_billed_tokens_total counter\n";
        for (kind, c) in ["input", "cache_read", "cache_write", "output"]
            .iter()
            .zip(&self.billed)
        {
            out += &format!(
                "ctxclean_billed_tokens_total{{kind=\"{kind}\"}} {}\n",
                get(c)
            );
        }
        out += "# HELP ctxclean_answers_usage_total Answers by how their usage was read.\n# TYPE ctxclean_answers_usage_total counter\n";
        for (how, c) in ["billed", "counted", "unread"].iter().zip(&self.usage) {
            out += &format!("ctxclean_answers_usage_total{{how=\"{how}\"}} {}\n", get(c));
        }
        out += "# HELP ctxclean_cache_misses_total Continuing conversations the cache served less than predicted, by why.\n# TYPE ctxclean_cache_misses_total counter\n";
        for (why, c) in MISSES.iter().zip(&self.misses) {
            out += &format!("ctxclean_cache_misses_total{{why=\"{why}\"}} {}\n", get(c));
        }
        let billed = get(&self.billed[0]) + get(&self.billed[1]) + get(&self.billed[2]);
        let share = if billed == 0 {
            0.0
        } else {
            get(&self.billed[1]) as f64 / billed as f64
        };
        out += &format!(
            "# HELP ctxclean_dollars_billed_total Dollars billed, at the models' prices.\n# TYPE ctxclean_dollars_billed_total counter\nctxclean_dollars_billed_total {}\n\
             # HELP ctxclean_dollars_as_came_total Dollars the requests as they came would have cost (estimate).\n# TYPE ctxclean_dollars_as_came_total counter\nctxclean_dollars_as_came_total {}\n\
             # HELP ctxclean_cache_read_share Billed input tokens read from the cache, over all billed input.\n# TYPE ctxclean_cache_read_share gauge\nctxclean_cache_read_share {share}\n",
            get(&self.dollars_micro) as f64 / 1e6,
            get(&self.dollars_as_came_micro) as f64 / 1e6,
        );
        let secs = get(&self.added_us) as f64 / 1e6;
        out += &format!(
            "# HELP ctxclean_added_seconds_total Time ctxclean added to requests.\n# TYPE ctxclean_added_seconds_total counter\nctxclean_added_seconds_total {secs}\n"
        );
        out
    }
}

impl State {
    /// A request is done: its figures counted, its line queued for the log
    /// (never waited for).
    pub(crate) fn finish(&self, line: Line) {
        self.finish_then(line, None);
    }

    /// [`State::finish`], `written` told once the line is written (or
    /// lost).
    pub(crate) fn finish_then(&self, line: Line, written: Option<super::writer::Written>) {
        self.metrics.add(&line);
        match serde_json::to_vec(&line) {
            Ok(mut text) => {
                text.push(b'\n');
                self.log.write(text, written);
            }
            Err(_) => {
                if let Some(written) = written {
                    written();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxclean::inflight::Continuation;
    use std::time::Duration;

    fn line(before: usize, continuation: Option<Continuation>) -> Line {
        let mut l = Line::new("openai-chat", &Method::POST, "/v1/chat/completions");
        l.tokens_before = Some(before);
        l.tokens_after = Some(before);
        l.billed_per_counted = Some(1.0);
        l.continuation = continuation;
        l
    }

    fn continuing(shared: usize, previous: usize, previous_came: usize) -> Option<Continuation> {
        Some(Continuation {
            shared,
            previous,
            since: Duration::from_secs(10),
            previous_came,
            head: 0,
        })
    }

    fn billed(cache_read: u64) -> Billed {
        Billed {
            input: 100,
            cache_read,
            ..Billed::default()
        }
    }

    #[test]
    fn a_short_shared_prefix_after_a_long_system_prompt_is_not_under_the_minimum() {
        // 300 tokens of messages shared, under the 1,024 minimum; alone they
        // would be the reason of the miss.
        let short = line(5000, continuing(300, 400, 400));
        let why = short.miss(&billed(0), 300).map(|(k, _)| k);
        assert_eq!(why, Some("under_minimum"));
        // After a system prompt of 4,000 tokens that did not change, the
        // cached prefix is 4,300 tokens: another reason.
        let mut long = line(5000, continuing(300, 400, 400));
        if let Some(c) = long.continuation.as_mut() {
            c.head = 4000;
        }
        let why = long.miss(&billed(0), 300).map(|(k, _)| k);
        assert!(why.is_some() && why != Some("under_minimum"), "{why:?}");
    }
}
