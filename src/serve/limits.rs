//! What a client may hold of the proxy: a body that stops sending is timed
//! out, bodies being read share one memory budget, and a request holds its
//! slot until its answer has gone out.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// What a body may fail with.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Bodies both ways: streamed through, or built here.
pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, BoxError>;

/// A body that fails when it makes no progress for `idle` (a client that
/// stopped sending in the middle of an upload).
pub(crate) struct Idle<B> {
    inner: B,
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl<B> Idle<B> {
    pub(crate) fn new(inner: B, idle: Duration) -> Idle<B> {
        Idle {
            inner,
            idle,
            sleep: Box::pin(tokio::time::sleep(idle)),
        }
    }
}

/// The error of a body that made no progress in time.
#[derive(Debug)]
pub(crate) struct Stalled(pub(crate) Duration);

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the body stopped: nothing came for {} s",
            self.0.as_secs()
        )
    }
}

impl std::error::Error for Stalled {}

impl<B> HttpBody for Idle<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let deadline = tokio::time::Instant::now() + this.idle;
                this.sleep.as_mut().reset(deadline);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(Stalled(this.idle))))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a connection is serving a request it has read (or is passing
/// on as it streams): at the start of a drain such a connection finishes
/// its answer, and any other (idle, or still sending its request) is
/// closed, after a moment to flush what it wrote last.
#[derive(Clone, Default)]
pub(crate) struct Busy(Arc<std::sync::atomic::AtomicBool>);

impl Busy {
    /// From now until the answer has gone out (see [`Held`]).
    pub(crate) fn serving(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn is_serving(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A body that holds a permit (a request slot) until it is done or
/// dropped, and marks its connection serving until then.
pub(crate) struct Held {
    inner: Body,
    _permit: Option<OwnedSemaphorePermit>,
    busy: Busy,
}

impl Held {
    pub(crate) fn new(inner: Body, permit: Option<OwnedSemaphorePermit>, busy: Busy) -> Held {
        Held {
            inner,
            _permit: permit,
            busy,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.busy
            .0
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The slowest average a request body may come at, in bytes a second,
/// once `--body-timeout` has passed.
pub(crate) const MIN_RATE: f64 = 1024.0;

/// Why a body could not be read.
pub(crate) enum Unread {
    /// The body came slower than [`MIN_RATE`] past its `--body-timeout`:
    /// cut at this time.
    TooSlow(Duration),
    /// Over `--max-body`.
    TooLarge,
    /// The client stopped sending (`--body-timeout`).
    Stalled(Duration),
    /// The bodies being read hold the whole budget already.
    Busy,
    /// The connection failed.
    Broken(String),
}

/// Reads a whole body of at most `max` bytes, a frame at a time, each within
/// `idle`; the bytes held are taken from `budget` (a permit a KiB) and
/// given back when the returned permit is dropped.
pub(crate) async fn read_body<B>(
    body: B,
    max: usize,
    idle: Duration,
    budget: &std::sync::Arc<Semaphore>,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), Unread>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    // A body that says it is larger (its Content-Length) is refused before
    // a byte of it is waited for.
    if body.size_hint().lower() > max as u64 {
        return Err(Unread::TooLarge);
    }
    let mut body = Idle::new(body, idle);
    let mut out = BytesMut::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    let started = tokio::time::Instant::now();
    loop {
        // A body that trickles (a byte every few seconds) is cut as one
        // that stops: past `idle`, it must have come at MIN_RATE on average.
        let allowed = idle + Duration::from_secs_f64(out.len() as f64 / MIN_RATE);
        let Ok(frame) = tokio::time::timeout_at(started + allowed, body.frame()).await else {
            return Err(Unread::TooSlow(allowed));
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| match e.downcast_ref::<Stalled>() {
            Some(s) => Unread::Stalled(s.0),
            None => Unread::Broken(e.to_string()),
        })?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if out.len() + data.len() > max {
            return Err(Unread::TooLarge);
        }
        let want = (out.len() + data.len()).div_ceil(1024) as u32;
        let have = held.as_ref().map_or(0, |p| p.num_permits() as u32);
        if want > have {
            let more = budget
                .clone()
                .try_acquire_many_owned(want - have)
                .map_err(|_| Unread::Busy)?;
            match held.as_mut() {
                Some(p) => p.merge(more),
                None => held = Some(more),
            }
        }
        out.extend_from_slice(&data);
    }
    Ok((out.freeze(), held))
}
