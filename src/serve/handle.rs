//! One request: route it, clean its body if its route is one ctxclean
//! rewrites, forward it, and hand the answer back as it comes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ctxclean::format::Format;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::limits::{read_body, Busy, Held, Idle, Unread};
use super::log::Line;
use super::shape::{self, Shape};
use super::State;

pub(crate) use super::limits::Body;

/// The client to the upstream (http or https).
pub(crate) type Client =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>;

/// Tokenizers for the blocking workers, made once and reused.
pub(crate) struct Tokenizers {
    make: Box<dyn Fn() -> anyhow::Result<ctxclean::tokens::Tokenizer> + Send + Sync>,
    idle: Mutex<Vec<ctxclean::tokens::Tokenizer>>,
}

impl State {
    /// A text's tokens, with one of the pool's tokenizers.
    pub(crate) fn count_text(&self, text: &str) -> usize {
        match self.tokenizers.take() {
            Ok(tok) => {
                let n = tok.count_text(text);
                self.tokenizers.give_back(tok);
                n
            }
            Err(_) => text.len().div_ceil(4),
        }
    }
}

impl Tokenizers {
    /// A pool whose tokenizers `make` makes; one is made now, so the first
    /// request does not pay for loading a vocabulary.
    pub(crate) fn new(
        make: impl Fn() -> anyhow::Result<ctxclean::tokens::Tokenizer> + Send + Sync + 'static,
    ) -> anyhow::Result<Tokenizers> {
        let first = make()?;
        Ok(Tokenizers {
            make: Box::new(make),
            idle: Mutex::new(vec![first]),
        })
    }

    fn take(&self) -> anyhow::Result<ctxclean::tokens::Tokenizer> {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        idle.map_or_else(|| (self.make)(), Ok)
    }

    fn give_back(&self, tok: ctxclean::tokens::Tokenizer) {
        if let Ok(mut v) = self.idle.lock() {
            v.push(tok);
        }
    }
}

/// Where requests go: scheme and authority, and a path prefix.
#[derive(Clone, Debug)]
pub(crate) struct Upstream {
    base: Uri,
    prefix: String,
}

impl Upstream {
    /// Parses `--upstream`.
    pub(crate) fn parse(text: &str) -> Result<Upstream, String> {
        let base: Uri = text
            .parse()
            .map_err(|e| format!("--upstream {text}: {e}"))?;
        match (base.scheme_str(), base.authority()) {
            (Some("http" | "https"), Some(_)) => {}
            _ => {
                return Err(format!(
                    "--upstream {text}: an http:// or https:// URL with a host"
                ))
            }
        }
        // Neither would be sent: refused rather than dropped in silence.
        if base.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(
                "--upstream: a URL with user:password@ (the proxy would not send them); let the client send its credentials (Authorization, x-api-key), the proxy forwards them"
                    .to_string(),
            );
        }
        if base.query().is_some() {
            return Err(
                "--upstream: a URL with a query (?…), which the proxy would not send; give the query on the client's requests, the proxy forwards it".to_string(),
            );
        }
        let prefix = base.path().trim_end_matches('/').to_string();
        Ok(Upstream { base, prefix })
    }

    /// The upstream URI of a request's path and query.
    fn join(&self, uri: &Uri) -> Result<Uri, hyper::http::Error> {
        let pq = uri.path_and_query().map_or("/", |p| p.as_str());
        Uri::builder()
            .scheme(self.base.scheme_str().unwrap_or("http"))
            .authority(self.base.authority().map_or("", |a| a.as_str()))
            .path_and_query(format!("{}{pq}", self.prefix))
            .build()
    }
}

/// As the ready line, the log and error answers show it (a URL carrying
/// credentials is refused by [`Upstream::parse`]).
impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = self.base.authority().map_or("", |a| a.as_str());
        let scheme = self.base.scheme_str().unwrap_or("http");
        write!(f, "{scheme}://{host}{}", self.prefix)
    }
}

/// The client, with its connect timeout; https through rustls (ring) and
/// Mozilla's roots.
pub(crate) fn client(connect_timeout: Duration) -> anyhow::Result<Client> {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    http.set_nodelay(true);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https))
}

/// The routes whose bodies are cleaned: their format and error shape.
fn route(method: &Method, path: &str) -> Option<(Format, Shape, &'static str)> {
    if method != Method::POST {
        return None;
    }
    Some(match path.trim_end_matches('/') {
        "/v1/chat/completions" | "/chat/completions" => {
            (Format::OpenAi, Shape::OpenAi, "openai-chat")
        }
        "/v1/messages" => (Format::Anthropic, Shape::Anthropic, "anthropic-messages"),
        "/v1/messages/count_tokens" => (
            Format::Anthropic,
            Shape::Anthropic,
            "anthropic-count-tokens",
        ),
        "/v1/responses" | "/responses" => (Format::Responses, Shape::OpenAi, "openai-responses"),
        "/api/chat" => (Format::OpenAi, Shape::Ollama, "ollama-chat"),
        p if gemini_model(p).is_some() => (Format::Gemini, Shape::Gemini, "gemini-generate"),
        _ => return None,
    })
}

/// The model of a Gemini generation path: `/v1beta/models/{model}:generateContent`
/// or `:streamGenerateContent` (also `/v1/…`, Vertex's
/// `/v1/projects/*/locations/*/publishers/google/models/{model}:…`, and a
/// tuned model's `/v1beta/tunedModels/{model}:…`), as clients write it: a
/// trailing `/`, the colon escaped as `%3A`, `;` parameters after it.
pub(crate) fn gemini_model(path: &str) -> Option<String> {
    let path = path.split(';').next().unwrap_or(path).trim_end_matches('/');
    let path = path.replace("%3A", ":").replace("%3a", ":");
    let (head, method) = path.rsplit_once(':')?;
    if !matches!(method, "generateContent" | "streamGenerateContent") {
        return None;
    }
    let (prefix, model) = head
        .rsplit_once("/models/")
        .or_else(|| head.rsplit_once("/tunedModels/"))?;
    let known = matches!(prefix, "/v1beta" | "/v1" | "/v1alpha")
        || (prefix.starts_with("/v1")
            && prefix.contains("/projects/")
            && prefix.ends_with("/publishers/google"));
    (known && !model.is_empty() && !model.contains('/')).then(|| model.to_string())
}

/// Serves one request; never fails (errors are answers).
pub(crate) async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    busy: Busy,
) -> Result<Response<Body>, std::convert::Infallible> {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    if method == Method::GET && path == "/healthz" {
        return Ok(plain(StatusCode::OK, "text/plain", "ok\n".into()));
    }
    if method == Method::GET && path == "/metrics" {
        let text = state.metrics.render(state.log.lost());
        return Ok(plain(StatusCode::OK, "text/plain; version=0.0.4", text));
    }
    // A slot per request being served, held until its answer has gone out
    // (an idle connection holds none, nor does one still sending the body
    // of a route that is cleaned: a slow drip of clients takes no slot).
    let idle = state.config.body_timeout;
    let Some((format, shape, name)) = route(&method, &path) else {
        let slot = state.requests.clone().acquire_owned().await.ok();
        let mut pending = Pending::new(&state, Line::new("passthrough", &method, &path));
        // Streamed on as it comes: serving from the start.
        busy.serving();
        let req = req.map(|b| Idle::new(b, idle).boxed());
        let response = forward(&state, req, pending.line(), Shape::OpenAi).await;
        let response = super::tap::logged(&state, pending.take(), response);
        return Ok(response.map(|b| Held::new(b, slot, busy).boxed()));
    };
    let mut pending = Pending::new(&state, Line::new(name, &method, &path));
    let mut slot = None;
    let response = rewrite(
        &state,
        req,
        (format, shape),
        pending.line(),
        &busy,
        &mut slot,
    )
    .await;
    // Gemini names the model in the path, not the body.
    if let Some(model) = gemini_model(&path) {
        pending.line().name_model(&model);
    }
    // Its usage is read as the answer passes; its line written at its end.
    let line = pending.take();
    let response = super::tap::until_ended(&state, line, response, format, shape == Shape::Ollama);
    Ok(response.map(|b| Held::new(b, slot, busy).boxed()))
}

/// A request's log line until it is written: when the client leaves first
/// (hyper drops the request's future), it is written with `"status":
/// "client closed"`, so every request the upstream may bill is logged.
struct Pending {
    state: Arc<State>,
    line: Option<Line>,
}

impl Pending {
    fn new(state: &Arc<State>, line: Line) -> Pending {
        Pending {
            state: state.clone(),
            line: Some(line),
        }
    }

    fn line(&mut self) -> &mut Line {
        self.line.as_mut().expect("until done")
    }

    /// The line, to be written by whoever ends the request.
    fn take(mut self) -> Line {
        self.line.take().expect("until done")
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut line) = self.line.take() {
            line.client_closed();
            self.state.finish(line);
        }
    }
}

/// A rewritten route: read the body, clean it, forward what comes out.
async fn rewrite(
    state: &Arc<State>,
    req: Request<Incoming>,
    (format, shape): (Format, Shape),
    line: &mut Line,
    busy: &Busy,
    slot: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    let config = &state.config;
    // `_held`: the body's share of the memory budget, until it has gone on.
    let (raw, _held) = match read_body(body, config.max_body, config.body_timeout, &state.bodies)
        .await
    {
        Ok(read) => read,
        Err(unread) => {
            let (status, why) = match unread {
                    Unread::TooLarge => (
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("the body is over --max-body ({} bytes)", config.max_body),
                    ),
                    Unread::Stalled(d) => (
                        StatusCode::REQUEST_TIMEOUT,
                        format!(
                            "the body stopped: nothing came for {} s (--body-timeout)",
                            d.as_secs()
                        ),
                    ),
                    Unread::TooSlow(d) => (
                        StatusCode::REQUEST_TIMEOUT,
                        format!(
                            "the body came too slowly: not whole after {} s (--body-timeout, then 1 KiB/s)",
                            d.as_secs()
                        ),
                    ),
                    Unread::Busy => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the bodies being read fill the proxy's memory budget; retry".to_string(),
                    ),
                    Unread::Broken(e) => (
                        StatusCode::BAD_REQUEST,
                        format!("reading the request body: {e}"),
                    ),
                };
            return line.answer(shape::error(shape, status, &why));
        }
    };
    // Read whole: from here the request is served to its end, drain or not,
    // in a slot of its own.
    *slot = state.requests.clone().acquire_owned().await.ok();
    busy.serving();
    let has = |s: &str| memchr::memmem::find(&raw, s.as_bytes()).is_some();
    line.markers = (has("cache_control"), has("\"1h\""));
    if raw.iter().all(u8::is_ascii_whitespace) {
        let why = "the request body is empty: a JSON object is expected";
        return line.answer(shape::error(shape, StatusCode::BAD_REQUEST, why));
    }
    let started = Instant::now();
    let body = match clean(state, &parts.headers, raw.clone(), format, line).await {
        Ok(Some(cleaned)) => {
            parts.headers.remove(CONTENT_ENCODING);
            Bytes::from(cleaned)
        }
        Ok(None) => raw,
        Err((status, why)) => return line.answer(shape::error(shape, status, &why)),
    };
    line.added_ms = started.elapsed().as_secs_f64() * 1000.0;
    parts
        .headers
        .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    let body = Full::new(body).map_err(|never| match never {}).boxed();
    forward(state, Request::from_parts(parts, body), line, shape).await
}

/// The cleaned body, `None` to forward the body as it came, or why the
/// request is refused (400; 413 for a gzip body that decodes past
/// --max-body).
async fn clean(
    state: &Arc<State>,
    headers: &HeaderMap,
    raw: Bytes,
    format: Format,
    line: &mut Line,
) -> Result<Option<Vec<u8>>, (StatusCode, String)> {
    let bad = |why: String| (StatusCode::BAD_REQUEST, why);
    let plain = match headers
        .get(CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?"))
    {
        None | Some("identity") => raw,
        Some(enc) if enc.eq_ignore_ascii_case("gzip") => {
            match gunzip(&raw, state.config.max_body) {
                Ok(b) => Bytes::from(b),
                Err((too_large, e)) => {
                    let status = if too_large {
                        StatusCode::PAYLOAD_TOO_LARGE
                    } else {
                        StatusCode::BAD_REQUEST
                    };
                    return Err((
                        status,
                        format!("the body says Content-Encoding: gzip, but {e}"),
                    ));
                }
            }
        }
        Some(enc) => {
            line.kept_because = Some(format!(
                "Content-Encoding: {enc} is not read; forwarded as it came"
            ));
            return Ok(None);
        }
    };
    // --clean-timeout counts from here: the wait for a free worker too,
    // so a request queued behind others' cleaning goes on as it came in
    // time, not after them.
    let deadline = tokio::time::Instant::now() + state.config.clean_timeout;
    let worker = match tokio::time::timeout_at(deadline, state.workers.clone().acquire_owned())
        .await
    {
        Ok(Ok(worker)) => worker,
        Ok(Err(_)) => return Ok(None),
        Err(_) => {
            line.kept_because = Some(format!(
                "no cleaning worker was free within --clean-timeout ({} s: every one busy); forwarded as it came",
                state.config.clean_timeout.as_secs()
            ));
            return Ok(None);
        }
    };
    let st = state.clone();
    // The worker's slot goes with the work: a client that leaves does not
    // stop a cleaning under way, and it counts until it ends.
    let work = tokio::task::spawn_blocking(move || {
        let _worker = worker;
        let tok = st.tokenizers.take()?;
        // What the request as it came would have cost is metered beside
        // the cleaning: billed by the provider's rule, whatever went on.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let out = ctxclean::inflight::clean_and_meter(
            (&st.engine, Some(&st.holds)),
            format,
            &plain,
            &tok,
            st.config.dry_run,
            (&st.as_came, now),
        );
        st.tokenizers.give_back(tok);
        anyhow::Ok(out)
    });
    // Past --clean-timeout the body goes on as it came; the work finishes
    // on its own, keeping its slot until then.
    let Ok(done) = tokio::time::timeout_at(deadline, work).await else {
        line.kept_because = Some(format!(
            "cleaning took longer than --clean-timeout ({} s, a summarizer that does not answer?); forwarded as it came",
            state.config.clean_timeout.as_secs()
        ));
        return Ok(None);
    };
    let (outcome, metered) = match done {
        Ok(Ok(Ok(done))) => done,
        Ok(Ok(Err(e))) => return Err(bad(shape::input_error(&e))),
        Ok(Err(e)) => return Err(bad(format!("ctxclean could not count tokens: {e:#}"))),
        Err(_) => {
            line.kept_because =
                Some("cleaning failed inside ctxclean; forwarded as it came".into());
            return Ok(None);
        }
    };
    line.record(&outcome);
    line.metered = metered;
    Ok(outcome.body)
}

/// The gzip body decoded, or why not (and whether it is for being over
/// `max`).
fn gunzip(raw: &[u8], max: usize) -> Result<Vec<u8>, (bool, String)> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut dec = flate2::read::GzDecoder::new(raw).take(max as u64 + 1);
    dec.read_to_end(&mut out)
        .map_err(|e| (false, format!("it does not decode: {e}")))?;
    if out.len() > max {
        return Err((
            true,
            format!("it decodes to more than --max-body ({max} bytes)"),
        ));
    }
    Ok(out)
}

/// Forwards a request and hands back the upstream's answer as it comes.
async fn forward(
    state: &Arc<State>,
    req: Request<Body>,
    line: &mut Line,
    shape: Shape,
) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    parts.uri = match state.config.upstream.join(&parts.uri) {
        Ok(u) => u,
        Err(e) => {
            return line.answer(shape::error(
                shape,
                StatusCode::BAD_REQUEST,
                &format!("the request's path: {e}"),
            ))
        }
    };
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(HOST);
    let sent = state.client.request(Request::from_parts(parts, body));
    let answer = match tokio::time::timeout(state.config.timeout, sent).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let why = format!(
                "the upstream {} could not be reached: {}",
                state.config.upstream,
                root_cause(&e)
            );
            line.upstream_error = Some(why.clone());
            return line.answer(shape::error(shape, StatusCode::BAD_GATEWAY, &why));
        }
        Err(_) => {
            let why = format!(
                "the upstream {} did not answer within {} s",
                state.config.upstream,
                state.config.timeout.as_secs()
            );
            line.upstream_error = Some(why.clone());
            return line.answer(shape::error(shape, StatusCode::GATEWAY_TIMEOUT, &why));
        }
    };
    let (mut parts, body) = answer.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    line.status = Some(super::log::Status::Code(parts.status.as_u16()));
    // An answer that stops coming (an upstream that hangs mid-stream, a
    // network gone silent) is cut past --timeout without a byte: it would
    // hold its slot, both connections and its tap's thread for ever.
    Response::from_parts(parts, Idle::new(body, state.config.timeout).boxed())
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Hop-by-hop headers (RFC 9110, 7.6.1): `Connection`, the headers it
/// names, and the ones that are always hop-by-hop, go no further.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

fn plain(status: StatusCode, kind: &'static str, text: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_cleaned_are_the_providers_chat_routes() {
        let post = Method::POST;
        assert_eq!(
            route(&post, "/v1/chat/completions").map(|r| r.2),
            Some("openai-chat")
        );
        assert_eq!(
            route(&post, "/v1/messages").map(|r| r.0),
            Some(Format::Anthropic)
        );
        assert_eq!(
            route(&post, "/v1/messages/count_tokens").map(|r| r.2),
            Some("anthropic-count-tokens")
        );
        assert_eq!(
            route(&post, "/v1/responses").map(|r| r.0),
            Some(Format::Responses)
        );
        assert_eq!(route(&post, "/api/chat").map(|r| r.2), Some("ollama-chat"));
        assert!(route(&post, "/v1/embeddings").is_none());
        assert!(route(&post, "/api/generate").is_none());
        assert!(route(&Method::GET, "/v1/messages").is_none());
    }

    #[test]
    fn gemini_paths_name_their_model_however_they_are_written() {
        let post = Method::POST;
        for path in [
            "/v1beta/models/gemini-2.5-pro:generateContent",
            "/v1beta/models/gemini-2.5-pro:generateContent/",
            "/v1beta/models/gemini-2.5-pro%3AgenerateContent",
            "/v1beta/models/gemini-2.5-pro%3astreamGenerateContent",
            "/v1beta/models/gemini-2.5-pro:generateContent;key=SECRET",
            "/v1beta/tunedModels/gemini-2.5-pro:generateContent",
        ] {
            assert_eq!(
                gemini_model(path).as_deref(),
                Some("gemini-2.5-pro"),
                "{path}"
            );
            assert_eq!(
                route(&post, path).map(|r| r.0),
                Some(Format::Gemini),
                "{path}"
            );
        }
        assert!(gemini_model("/v1beta/models/gemini:countTokens").is_none());
        assert!(gemini_model("/other/models/gemini:generateContent").is_none());
        let logged = crate::serve::log::loggable("/v1beta/models/g:generateContent;key=SECRET");
        assert!(!logged.contains("SECRET"), "{logged}");
    }

    #[test]
    fn the_upstream_keeps_its_path_prefix() {
        let up = Upstream::parse("https://openrouter.ai/api/").unwrap();
        let uri: Uri = "/v1/chat/completions?x=1".parse().unwrap();
        assert_eq!(
            up.join(&uri).unwrap().to_string(),
            "https://openrouter.ai/api/v1/chat/completions?x=1"
        );
        let plain = Upstream::parse("http://localhost:11434").unwrap();
        assert_eq!(
            plain
                .join(&"/api/chat".parse().unwrap())
                .unwrap()
                .to_string(),
            "http://localhost:11434/api/chat"
        );
        // Credentials or a query in the URL would not be sent: refused,
        // and the refusal never shows the secret (issue 39).
        for url in [
            "https://user:sk-secret@example.com/api",
            "https://example.com/api?token=sk-secret",
        ] {
            let err = Upstream::parse(url).err().unwrap();
            assert!(!err.contains("sk-secret"), "{err}");
        }
        assert_eq!(plain.to_string(), "http://localhost:11434");
        assert!(Upstream::parse("localhost:11434").is_err());
        assert!(Upstream::parse("ftp://x").is_err());
    }

    #[test]
    fn hop_by_hop_headers_go_no_further() {
        let mut h = HeaderMap::new();
        h.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-private"),
        );
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert("x-private", HeaderValue::from_static("1"));
        h.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        h.insert("authorization", HeaderValue::from_static("Bearer k"));
        h.insert("x-api-key", HeaderValue::from_static("k"));
        strip_hop_by_hop(&mut h);
        let left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["authorization", "x-api-key"]);
    }
}
