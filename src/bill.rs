//! `ctxclean bill`: the proxy's request log (`serve --log`) added up into
//! the report people read: per day and model, the requests, the tokens
//! billed by kind, the dollars, the share read from the cache, what the
//! requests as they came would have cost (estimate), why caches missed,
//! and billed against counted. A `--dry-run` log reads the same: what the
//! proxy would have saved, with nothing changed.

use std::collections::BTreeMap;

use serde_json::Value;

/// One day and model's figures, or one conversation's (or the totals).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Row {
    /// `YYYY-MM-DD` (UTC), or `total`; by conversation, its first day.
    pub day: String,
    /// The model the requests named (`-` for none); by conversation, the
    /// first one.
    pub model: String,
    /// By conversation: the log's `conversation` (`-` for the requests that
    /// were no conversation the proxy held).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// Requests logged, and of those whose answer's usage was read.
    pub requests: u64,
    /// Requests whose answer's usage was read as billed.
    pub billed_requests: u64,
    /// Billed tokens: input (neither read from nor written to the cache),
    /// cache read, cache write, output.
    pub input: u64,
    /// Tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
    /// Dollars at the model's prices.
    pub dollars: f64,
    /// Dollars the requests as they came would have cost (estimate).
    pub dollars_as_came: f64,
    /// Requests priced (their model has prices, or `--model` priced them):
    /// `dollars` is over these only.
    pub priced: u64,
    /// Of those, the requests with an estimate of their cost as they came
    /// (the others count in `dollars_as_came` as what they cost).
    pub estimated: u64,
    /// ctxclean's count of the bodies sent, and the billed input of the
    /// same requests: their ratio is billed against counted.
    pub counted: u64,
    /// Billed input of the requests counted.
    pub billed_input_counted: u64,
    /// Requests the dry run would have changed (`--dry-run` logs).
    pub dry_run: u64,
    /// Cache misses by reason.
    pub misses: BTreeMap<String, u64>,
}

impl Row {
    /// Of the billed input, the share read from the cache.
    pub fn cache_read_share(&self) -> f64 {
        let all = self.input + self.cache_read + self.cache_write;
        if all == 0 {
            0.0
        } else {
            self.cache_read as f64 / all as f64
        }
    }

    /// Billed input over ctxclean's count, where both are known.
    pub fn billed_per_counted(&self) -> Option<f64> {
        (self.counted > 0).then(|| self.billed_input_counted as f64 / self.counted as f64)
    }

    fn add(&mut self, line: &Value, prices: Option<&crate::replay::Prices>) {
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        // Every line is plausible (see `implausible`): the sums below stay
        // far from overflowing, and saturate if they ever would.
        self.requests = self.requests.saturating_add(1);
        if let Some(b) = line.get("billed") {
            self.billed_requests = self.billed_requests.saturating_add(1);
            let (input, read, write) = (
                n(b.get("input")),
                n(b.get("cache_read")),
                n(b.get("cache_write")),
            );
            self.input = self.input.saturating_add(input);
            self.cache_read = self.cache_read.saturating_add(read);
            self.cache_write = self.cache_write.saturating_add(write);
            self.output = self.output.saturating_add(n(b.get("output")));
            if let Some(c) = line.get("tokens_after").and_then(Value::as_u64) {
                let tools = line
                    .get("tokens_tools")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.counted = self.counted.saturating_add(c + tools);
                self.billed_input_counted = self
                    .billed_input_counted
                    .saturating_add(input + read + write);
            }
        }
        let (dollars, as_came) = priced(line, prices);
        if let Some(d) = dollars {
            self.priced = self.priced.saturating_add(1);
            self.estimated = self.estimated.saturating_add(u64::from(as_came.is_some()));
            self.dollars += d;
            // A request without an estimate cost what it cost.
            self.dollars_as_came += as_came.unwrap_or(d);
        }

        if line.get("kept_because").and_then(Value::as_str) == Some("--dry-run") {
            self.dry_run = self.dry_run.saturating_add(1);
        }
        if let Some(why) = line.get("cache_miss").and_then(Value::as_str) {
            *self.misses.entry(miss_kind(why).into()).or_default() += 1;
        }
    }

    fn merge(&mut self, o: &Row) {
        self.requests = self.requests.saturating_add(o.requests);
        self.billed_requests = self.billed_requests.saturating_add(o.billed_requests);
        self.input = self.input.saturating_add(o.input);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
        self.output = self.output.saturating_add(o.output);
        self.dollars += o.dollars;
        self.dollars_as_came += o.dollars_as_came;
        self.priced = self.priced.saturating_add(o.priced);
        self.estimated = self.estimated.saturating_add(o.estimated);
        self.counted = self.counted.saturating_add(o.counted);
        self.billed_input_counted = self
            .billed_input_counted
            .saturating_add(o.billed_input_counted);
        self.dry_run = self.dry_run.saturating_add(o.dry_run);
        for (k, v) in &o.misses {
            *self.misses.entry(k.clone()).or_default() += v;
        }
    }
}

/// A line's dollars and its estimate as it came: as the proxy logged them,
/// or, with `prices` (`bill --model`), its billed tokens at those prices
/// and its request as it came (`as_came`) priced alike (an older log's
/// estimate scaled alike). `(None, _)`: unpriced.
fn priced(line: &Value, prices: Option<&crate::replay::Prices>) -> (Option<f64>, Option<f64>) {
    let logged = line.get("dollars").and_then(Value::as_f64);
    let as_came = line.get("dollars_as_came").and_then(Value::as_f64);
    let Some(p) = prices else {
        return (logged, logged.and(as_came));
    };
    let Some(b) = line.get("billed") else {
        return (None, None);
    };
    let n = |k: &str| b.get(k).and_then(Value::as_u64).unwrap_or(0);
    let dollars = p.billed(&crate::inflight::answer::Billed {
        input: n("input"),
        cache_read: n("cache_read"),
        cache_write: n("cache_write"),
        output: n("output"),
    });
    let billed_in = n("input") + n("cache_read") + n("cache_write");
    let scaled = match (metered(line), logged, as_came) {
        // The request as it came, billed by the provider's rule: priced
        // at these prices as the proxy priced it at its own.
        (Some((came, sent)), _, _) if sent > 0 => {
            Some(p.scaled(&came, billed_in as f64 / sent as f64, n("output")))
        }
        (_, Some(l), Some(c)) if l > 0.0 => Some(c * dollars / l),
        _ => None,
    };
    (Some(dollars), scaled)
}

/// A line's `as_came`: the request as it came, billed in ctxclean's
/// count, and that count of the body sent.
fn metered(line: &Value) -> Option<(crate::inflight::answer::Billed, u64)> {
    let m = line.get("as_came")?;
    let came = m.get("came")?;
    let n = |k: &str| came.get(k).and_then(Value::as_u64);
    let billed = crate::inflight::answer::Billed {
        input: n("input")?,
        cache_read: n("cache_read")?,
        cache_write: n("cache_write")?,
        output: 0,
    };
    Some((billed, m.get("sent")?.as_u64()?))
}

/// The kind of a `cache_miss` reason, as `/metrics` names it.
fn miss_kind(why: &str) -> &'static str {
    if why.starts_with("ctxclean cleaned again") {
        "cleaned_again"
    } else if why.contains("changed the conversation") {
        "client_changed"
    } else if why.contains("lifetime") {
        "lifetime"
    } else if why.contains("minimum") {
        "under_minimum"
    } else if why.contains("cache_control") {
        "no_marker"
    } else {
        "unknown"
    }
}

/// The day (UTC) of seconds since the epoch.
fn day(secs: f64) -> String {
    let days = (secs / 86_400.0).floor() as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A log added up.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Bill {
    /// Per day and model, in order.
    pub rows: Vec<Row>,
    /// Everything.
    pub total: Row,
    /// Lines that were not request lines (not JSON, not UTF-8, too long,
    /// or without a route).
    pub skipped: u64,
    /// Request lines left out because a figure on them is one no proxy
    /// writes (tokens past [`crate::inflight::answer::MAX_TOKENS`], dollars
    /// that are negative, not finite or past [`MAX_DOLLARS`], a time
    /// outside the years 1970–9999).
    pub implausible: u64,
}

/// The most dollars one request can cost (more than 10⁸ tokens at any
/// price in the table).
pub const MAX_DOLLARS: f64 = 1e5;

/// Why a request line is not added up, when a figure on it is one no
/// proxy writes.
fn implausible(line: &Value) -> Option<&'static str> {
    use crate::inflight::answer::MAX_TOKENS;
    let tokens_ok = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(v) => v.as_u64().is_some_and(|n| n <= MAX_TOKENS),
    };
    let b = line.get("billed");
    for k in ["input", "cache_read", "cache_write", "output"] {
        if !tokens_ok(b.and_then(|b| b.get(k))) {
            return Some("tokens");
        }
    }
    for k in ["tokens_before", "tokens_after", "tokens_tools"] {
        if !tokens_ok(line.get(k)) {
            return Some("tokens");
        }
    }
    for k in ["dollars", "dollars_as_came"] {
        match line.get(k) {
            None | Some(Value::Null) => {}
            Some(v) => {
                if !v.as_f64().is_some_and(|d| (0.0..=MAX_DOLLARS).contains(&d)) {
                    return Some("dollars");
                }
            }
        }
    }
    match line.get("time") {
        None | Some(Value::Null) => None,
        Some(t) => (!t
            .as_f64()
            .is_some_and(|t| (0.0..=253_402_300_799.0).contains(&t)))
        .then_some("time"),
    }
}

/// A log being added up, a line at a time (a log of any size is read in
/// one pass, holding only its days and models, or its conversations).
#[derive(Default)]
pub struct Tally {
    by: BTreeMap<(String, String), Row>,
    /// `--model`'s prices, for every line.
    prices: Option<crate::replay::Prices>,
    skipped: u64,
    implausible: u64,
    /// Lines of the proxy's log read (each with its `route`).
    log_lines: u64,
    by_conversation: bool,
    /// By conversation: the order each was first seen in.
    order: Vec<(String, String)>,
}

impl Tally {
    /// A tally with a row per conversation (the log's `conversation`), in
    /// the order each first appears, instead of per day and model.
    pub fn by_conversation() -> Tally {
        Tally {
            by_conversation: true,
            ..Tally::default()
        }
    }

    /// Every line priced at `prices` (`bill --model`), whatever model it
    /// names.
    pub fn priced_at(self, prices: crate::replay::Prices) -> Tally {
        Tally {
            prices: Some(prices),
            ..self
        }
    }

    /// A line that could not be read (not UTF-8, or past the reader's
    /// bound): skipped, as a line that is not JSON is.
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// The lines of the proxy's log read so far (each with its `route`;
    /// those left out as implausible included).
    pub fn log_lines(&self) -> u64 {
        self.log_lines
    }

    /// One line of a log.
    pub fn add(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let Ok(line) = serde_json::from_str::<Value>(text) else {
            self.skipped += 1;
            return;
        };
        if line.get("route").is_none() {
            self.skipped += 1;
            return;
        }
        self.log_lines += 1;
        if implausible(&line).is_some() {
            self.implausible += 1;
            return;
        }
        let d = day(line.get("time").and_then(Value::as_f64).unwrap_or(0.0));
        let model = line
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string();
        let conversation = self.by_conversation.then(|| {
            line.get("conversation")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_string()
        });
        let key = match &conversation {
            Some(c) => (c.clone(), String::new()),
            None => (d.clone(), model.clone()),
        };
        if conversation.is_some() && !self.by.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.by
            .entry(key)
            .or_insert_with(|| Row {
                day: d,
                model,
                conversation,
                ..Row::default()
            })
            .add(&line, self.prices.as_ref());
    }

    /// The bill: the rows in order, and their totals.
    pub fn finish(mut self) -> Bill {
        let rows: Vec<Row> = if self.by_conversation {
            let order = std::mem::take(&mut self.order);
            order.iter().filter_map(|k| self.by.remove(k)).collect()
        } else {
            self.by.into_values().collect()
        };
        let mut total = Row {
            day: "total".into(),
            model: String::new(),
            ..Row::default()
        };
        for r in &rows {
            total.merge(r);
        }
        Bill {
            rows,
            total,
            skipped: self.skipped,
            implausible: self.implausible,
        }
    }
}

/// Adds up the lines of one or more logs.
pub fn bill<'a>(lines: impl IntoIterator<Item = &'a str>) -> Bill {
    let mut t = Tally::default();
    for line in lines {
        t.add(line);
    }
    t.finish()
}

/// An SVG chart of dollars per day: billed, against the estimate of the
/// requests as they came.
pub fn svg(b: &Bill) -> String {
    let mut days: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for r in &b.rows {
        let d = days.entry(r.day.as_str()).or_default();
        d.0 += r.dollars;
        d.1 += r.dollars_as_came;
    }
    let (w, h, pad) = (720.0, 320.0, 56.0);
    let top = days
        .values()
        .map(|d| d.0.max(d.1))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let n = days.len().max(1) as f64;
    let slot = (w - 2.0 * pad) / n;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{pad}\" y=\"24\" font-size=\"14\">Dollars per day: billed (blue), and the requests as they came (grey, estimate)</text>\n\
         <line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#999\"/>\n\
         <text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">${top:.2}</text>\n",
        h - pad,
        w - pad,
        pad - 4.0,
        pad + 4.0
    );
    for (k, (d, (billed, came))) in days.iter().enumerate() {
        let x = pad + slot * k as f64;
        let bar = |v: f64| (h - 2.0 * pad) * v / top;
        let bw = (slot * 0.35).max(1.0);
        out += &format!(
            "<rect class=\"as-came\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"#bbb\"><title>{d}: ${came:.4} as they came</title></rect>\n\
             <rect class=\"billed\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"#1f77b4\"><title>{d}: ${billed:.4} billed</title></rect>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{d}</text>\n",
            x + slot * 0.1,
            h - pad - bar(*came),
            bar(*came),
            x + slot * 0.1 + bw,
            h - pad - bar(*billed),
            bar(*billed),
            x + slot * 0.5,
            h - pad + 16.0
        );
    }
    out += "</svg>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_by_conversation_follow_the_order_they_began_in() {
        let log = [
            r#"{"time":1795702232,"route":"openai-chat","model":"gpt-4o","conversation":"a.2","dollars":0.5}"#,
            r#"{"time":1795702233,"route":"openai-chat","model":"gpt-4o","conversation":"a.1","dollars":0.25}"#,
            r#"{"time":1795788700,"route":"openai-chat","model":"gpt-4o-mini","conversation":"a.2","dollars":1.0}"#,
            r#"{"time":1795788701,"route":"openai-chat","model":"gpt-4o","status":502}"#,
        ];
        let mut t = Tally::by_conversation();
        for l in log {
            t.add(l);
        }
        let b = t.finish();
        let rows: Vec<(Option<&str>, &str, &str, u64, f64)> = b
            .rows
            .iter()
            .map(|r| {
                let c = r.conversation.as_deref();
                (c, r.day.as_str(), r.model.as_str(), r.requests, r.dollars)
            })
            .collect();
        assert_eq!(
            rows,
            [
                (Some("a.2"), "2026-11-26", "gpt-4o", 2, 1.5),
                (Some("a.1"), "2026-11-26", "gpt-4o", 1, 0.25),
                (Some("-"), "2026-11-27", "gpt-4o", 1, 0.0),
            ]
        );
        assert_eq!(b.total.requests, 4);
        assert!((b.total.dollars - 1.75).abs() < 1e-12);
    }

    #[test]
    fn days_are_utc_calendar_days() {
        assert_eq!(day(0.0), "1970-01-01");
        assert_eq!(day(1_795_702_232.6), "2026-11-26");
        assert_eq!(day(951_782_400.0), "2000-02-29");
    }

    #[test]
    fn the_totals_are_the_sum_of_the_log() {
        let log = [
            r#"{"time":1795702232,"route":"anthropic-messages","model":"claude-sonnet-4-5","tokens_after":1000,"billed":{"input":100,"cache_read":900,"cache_write":50,"output":10},"usage":"billed","dollars":0.01,"dollars_as_came":0.02,"cache_miss":"the request has no cache_control marker: …"}"#,
            r#"{"time":1795702233,"route":"anthropic-messages","model":"claude-sonnet-4-5","tokens_after":500,"billed":{"input":500,"cache_read":0,"cache_write":0,"output":5},"usage":"billed","dollars":0.005}"#,
            "not json",
            r#"{"time":1795788700,"route":"openai-chat","model":"gpt-4o","status":502}"#,
        ];
        let b = bill(log);
        assert_eq!(b.skipped, 1);
        assert_eq!(b.rows.len(), 2);
        let t = &b.total;
        assert_eq!((t.requests, t.billed_requests), (3, 2));
        assert_eq!(
            (t.input, t.cache_read, t.cache_write, t.output),
            (600, 900, 50, 15)
        );
        assert!((t.dollars - 0.015).abs() < 1e-12 && (t.dollars_as_came - 0.025).abs() < 1e-12);
        assert_eq!(t.misses.get("no_marker"), Some(&1));
        assert!((t.billed_per_counted().unwrap() - 1550.0 / 1500.0).abs() < 1e-9);
        assert!((t.cache_read_share() - 900.0 / 1550.0).abs() < 1e-9);
    }
}
