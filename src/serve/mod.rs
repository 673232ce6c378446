//! `ctxclean serve`: the proxy. A thin layer over the library's
//! [`ctxclean::inflight::clean_request`]: it accepts connections (hyper on
//! tokio), routes, forwards, and logs. What a body becomes is the library's.

mod files;
mod handle;
mod limits;
mod log;
mod shape;
mod tap;
mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

pub(crate) use handle::{Tokenizers, Upstream};
use log::Metrics;
use writer::Log;

/// What the proxy was told, checked.
pub(crate) struct Config {
    pub(crate) upstream: Upstream,
    pub(crate) listen: SocketAddr,
    pub(crate) max_body: usize,
    pub(crate) max_connections: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    /// Reading a request's headers, and waiting for the next request on a
    /// kept-alive connection.
    pub(crate) header_timeout: Duration,
    /// A request body making no progress.
    pub(crate) body_timeout: Duration,
    /// Cleaning one request, summaries included.
    pub(crate) clean_timeout: Duration,
    /// How long the provider's prompt cache keeps a prefix unread
    /// (`--cache-lifetime`): a request later than that is a miss of that kind.
    pub(crate) cache_lifetime: Duration,
    pub(crate) dry_run: bool,
    /// The recipe, as the ready line and `--print-config` show it.
    pub(crate) recipe: String,
    /// The caching rule, as `--print-config` shows it.
    pub(crate) caching: String,
    /// `--model`'s prices: every request logged is priced at them.
    pub(crate) prices: Option<ctxclean::replay::Prices>,
}

/// What every request handler shares.
pub(crate) struct State {
    pub(crate) config: Config,
    pub(crate) engine: ctxclean::engine::Engine,
    pub(crate) tokenizers: Tokenizers,
    /// What conversations were cleaned to, so they come back cache-stable.
    pub(crate) holds: ctxclean::inflight::Holds,
    /// The requests as they came, billed as the provider would have.
    pub(crate) as_came: ctxclean::inflight::cache::AsCame,
    pub(crate) client: handle::Client,
    pub(crate) log: Log,
    pub(crate) metrics: Metrics,
    /// Bodies cleaned at once: one per core (cleaning is CPU work; more
    /// would only hold more tokenizers).
    pub(crate) workers: Arc<tokio::sync::Semaphore>,
    /// Requests served at once (`--max-connections`).
    pub(crate) requests: Arc<tokio::sync::Semaphore>,
    /// The bodies being read, in KiB: `--max-body` × [`BODIES`].
    pub(crate) bodies: Arc<tokio::sync::Semaphore>,
    /// Answers whose usage is still being read on a thread of their own
    /// (see `tap`): waited for at the end, so their lines are written.
    pub(crate) taps: std::sync::atomic::AtomicUsize,
}

/// The prefixes (and as many units' sizes) the meter of the requests as
/// they came holds at most: a few megabytes.
const AS_CAME_CAPACITY: usize = 1 << 18;

/// How many bodies of `--max-body` may be held in memory at once, in all.
const BODIES: usize = 4;

/// Open connections, served or idle, per request slot: a connection idle
/// past --header-timeout is closed, so they come and go.
const SOCKETS_PER_SLOT: usize = 4;

/// Cleanings at once: one per core; a recipe that summarizes may wait on
/// its summarizer's server, so it gets four per core, a pool of its own
/// size, so that two summaries waiting do not hold every request.
fn workers(engine: &ctxclean::engine::Engine) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if engine.options().pipeline.names().contains(&"summarize") {
        cores * 4
    } else {
        cores
    }
}

/// How long in-flight requests may run on after SIGTERM or SIGINT.
const DRAIN: Duration = Duration::from_secs(30);

/// How long the end waits for the answers' usage to be read, after the
/// drain (each tap's work is bounded: this is far past it).
const TAPS: Duration = Duration::from_secs(10);

/// How long the end waits for the log to take the lines still queued.
const LOG_CLOSE: Duration = Duration::from_secs(5);

/// Serves until SIGTERM or SIGINT, then lets requests in flight finish (up
/// to [`DRAIN`]).
pub(crate) fn run(
    config: Config,
    engine: ctxclean::engine::Engine,
    tokenizers: Tokenizers,
    holds: ctxclean::inflight::Holds,
    log: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("listening on {}", config.listen))?;
        let client = handle::client(config.connect_timeout)?;
        let state = Arc::new(State {
            log: Log::open(log.as_deref())?,
            metrics: Metrics::default(),
            workers: Arc::new(tokio::sync::Semaphore::new(workers(&engine))),
            requests: Arc::new(tokio::sync::Semaphore::new(config.max_connections)),
            bodies: Arc::new(tokio::sync::Semaphore::new(
                (config.max_body.div_ceil(1024) * BODIES).min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            client,
            tokenizers,
            holds,
            as_came: ctxclean::inflight::cache::AsCame::new(AS_CAME_CAPACITY),
            engine,
            config,
            taps: std::sync::atomic::AtomicUsize::new(0),
        });
        let local = listener.local_addr().context("the listening address")?;
        say!(
            "ctxclean serve: listening on http://{local}, forwarding to {}, recipe: {}{}",
            state.config.upstream,
            state.config.recipe,
            if state.config.dry_run {
                " (dry run: every body forwarded as it came)"
            } else {
                ""
            }
        );
        let (sockets, note) = files::fit(state.config.max_connections, SOCKETS_PER_SLOT);
        if let Some(note) = note {
            say!("{note}");
        }
        accept(listener, state, sockets).await
    })?;
    // Cleaning still running now belongs to requests already answered (past
    // --clean-timeout, forwarded as they came): a summarizer that never
    // answers must not hold the exit for its own --timeout.
    runtime.shutdown_timeout(ABANDONED);
    Ok(())
}

/// How long the exit waits for cleaning whose requests were answered
/// without it.
const ABANDONED: Duration = Duration::from_millis(500);

/// Accepts connections until a signal, then drains. Requests take slots
/// (`--max-connections`); open connections are bounded at `sockets`
/// ([`SOCKETS_PER_SLOT`] a slot, within the open-files limit: see
/// [`files`]), and one silent past --header-timeout is closed, so /healthz
/// and /metrics get in while every slot is busy.
async fn accept(listener: TcpListener, state: Arc<State>, sockets: usize) -> anyhow::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(sockets));
    let mut said: Option<tokio::time::Instant> = None;
    // Each connection holds a receiver; the drain is over when all are gone.
    let (drain, draining) = tokio::sync::watch::channel(false);
    let mut stop = std::pin::pin!(shutdown_signal());
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.context("the connection limit")?,
            () = &mut stop => break,
        };
        let stream = tokio::select! {
            a = listener.accept() => a,
            () = &mut stop => break,
        };
        let (stream, _) = match stream {
            Ok(a) => a,
            // Out of descriptors or memory: the connection waits in the
            // backlog and the listener stays ready, so pause (said at most
            // every few seconds) rather than spin a core.
            Err(e) if files::out_of_resources(&e) => {
                if said.is_none_or(|t| t.elapsed() >= files::SAY_EVERY) {
                    said = Some(tokio::time::Instant::now());
                    say!(
                        "ctxclean serve: cannot accept a connection: {e} ({} open); trying again every {} ms",
                        sockets.saturating_sub(permits.available_permits() + 1),
                        files::ACCEPT_PAUSE.as_millis()
                    );
                }
                tokio::select! {
                    () = tokio::time::sleep(files::ACCEPT_PAUSE) => continue,
                    () = &mut stop => break,
                }
            }
            // A connection reset before it was accepted: the next may do.
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        // A client that takes nothing of its answer for --body-timeout (its
        // window shut, reading nothing) is let go: it would hold its slot,
        // and the upstream's connection, for as long as it likes.
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(state.config.body_timeout));
        let header_timeout = state.config.header_timeout;
        let state = state.clone();
        let busy = limits::Busy::default();
        let serving = busy.clone();
        let service = hyper::service::service_fn(move |req| {
            handle::handle(state.clone(), req, serving.clone())
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(Box::pin(stream)), service);
        tokio::spawn(serve_until_drained(conn, busy, draining.clone(), permit));
    }
    // No new connection from here on: the listening socket goes now, so a
    // client connecting during the drain is refused, not left unanswered.
    drop(listener);
    say!("ctxclean serve: stopping; letting requests in flight finish");
    let _ = drain.send(true);
    drop(draining);
    tokio::select! {
        () = drain.closed() => {}
        () = tokio::time::sleep(DRAIN) => {
            say!("ctxclean serve: requests still in flight after {} s; stopping anyway", DRAIN.as_secs());
        }
    }
    // The answers' usage still being read: their lines, written.
    let until = tokio::time::Instant::now() + TAPS;
    while state.taps.load(std::sync::atomic::Ordering::SeqCst) > 0
        && tokio::time::Instant::now() < until
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The lines still queued, written (a log that takes none is not waited
    // for past LOG_CLOSE).
    tokio::task::block_in_place(|| state.log.close(LOG_CLOSE));
    Ok(())
}

/// A client's connection, its writes timed out.
type ClientStream = std::pin::Pin<Box<tokio_io_timeout::TimeoutStream<tokio::net::TcpStream>>>;

/// Serves a connection; at the drain, one serving a request finishes its
/// answer, and any other (idle, or still sending its request) is closed
/// once what it wrote last has gone out.
async fn serve_until_drained<C>(
    conn: hyper::server::conn::http1::Connection<TokioIo<ClientStream>, C>,
    busy: limits::Busy,
    mut draining: tokio::sync::watch::Receiver<bool>,
    permit: tokio::sync::OwnedSemaphorePermit,
) where
    C: hyper::service::HttpService<hyper::body::Incoming, ResBody = limits::Body>,
{
    /// What an idle or half-sent connection is given to flush at the drain.
    const FLUSH: Duration = Duration::from_secs(1);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = async { drop(draining.wait_for(|d| *d).await) } => {
            conn.as_mut().graceful_shutdown();
            if busy.is_serving() {
                let _ = conn.as_mut().await;
            } else {
                let _ = tokio::time::timeout(FLUSH, conn.as_mut()).await;
            }
        }
    }
    drop(permit);
}

/// SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
