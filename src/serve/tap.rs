//! An answer read for its usage as it passes to the client: every frame
//! goes on as it came, when it came; a copy (a reference to the same bytes)
//! goes to a thread of the answer's own, which feeds the library's [`Tap`],
//! so that what the tap does (decoding gzip, parsing events) never holds
//! a frame back or slows the proxy's other connections. The request's log
//! line is written when the answer ends (or the client leaves), with what
//! the provider billed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use ctxclean::format::Format;
use ctxclean::inflight::answer::{Read, Tap};
use hyper::body::{Body as HttpBody, Frame};
use hyper::Response;

use super::limits::{Body, BoxError, Stalled};
use super::log::Line;
use super::State;

/// Frames waiting for the tap, at most: past it the tap has fallen behind
/// and gives up (the answer goes on; its usage is not read).
const QUEUE: usize = 64;

/// How an answer ended, as its tap's thread reads it.
const CUT: u8 = 0;
const COMPLETE: u8 = 1;
const BEHIND: u8 = 2;
/// Cut by the proxy: nothing came for --timeout.
const STALLED: u8 = 3;

/// An answer's body, tapped; its line written at its end.
struct Tapped {
    inner: Body,
    /// The frames' way to the tap's thread; dropped at the end.
    frames: Option<SyncSender<Bytes>>,
    ended: Arc<AtomicU8>,
    /// Whether the upstream's body is over.
    inner_done: bool,
    /// The line's writing, which the answer's last frame (or its end)
    /// waits for.
    line: LineWait,
    /// The last frame of a body of known length, held back until the line
    /// is written: a client has the whole answer with it, and need not
    /// wait for the body's end.
    last: Option<Frame<Bytes>>,
}

/// An answer waiting for its log line, so that a client that reads the log
/// after its answer finds the answer's line there: a tapped answer's last
/// byte waits (its line is complete only then), a [`Logged`] answer's
/// first; at most [`WAIT`], since the log may not keep up.
struct LineWait {
    written: Option<tokio::sync::oneshot::Receiver<()>>,
    /// How long the answer waits for the line, at most ([`WAIT`]).
    waited: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl LineWait {
    fn new(written: Option<tokio::sync::oneshot::Receiver<()>>) -> LineWait {
        LineWait {
            written,
            waited: None,
        }
    }

    /// Ready once the line is written, or after [`WAIT`].
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(written) = self.written.as_mut() else {
            return Poll::Ready(());
        };
        let done = Pin::new(written).poll(cx).is_ready();
        let waited = self
            .waited
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WAIT)))
            .as_mut()
            .poll(cx)
            .is_ready();
        if done || waited {
            self.written = None;
            return Poll::Ready(());
        }
        Poll::Pending
    }

    fn is_over(&self) -> bool {
        self.written.is_none()
    }
}

/// What the log's thread calls once a line is written: `tell` told.
fn telling(tell: tokio::sync::oneshot::Sender<()>) -> Option<super::writer::Written> {
    Some(Box::new(move || {
        let _ = tell.send(());
    }))
}

/// An answer whose line is complete (queued for the log): its body begins
/// once the line is written, so that a client that has its answer finds
/// its line in the log.
struct Logged {
    inner: Body,
    line: LineWait,
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.line.poll(cx).is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.line.is_over() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to a request whose line is complete now (a passthrough
/// route, the proxy's own answer, an error): the line queued for the log,
/// the body's first frame waiting for it to be written.
pub(crate) fn logged(state: &State, line: Line, response: Response<Body>) -> Response<Body> {
    let (tell, written) = tokio::sync::oneshot::channel();
    state.finish_then(line, telling(tell));
    response.map(|inner| {
        http_body_util::BodyExt::boxed(Logged {
            inner,
            line: LineWait::new(Some(written)),
        })
    })
}

/// The longest an answer waits for its line: a tap still at work past it
/// (a gzip bomb up to its bound), or a log that does not keep up, writes
/// the line after.
const WAIT: std::time::Duration = std::time::Duration::from_millis(200);

impl Tapped {
    /// The answer ended (`how`): the tap's thread finishes the line.
    fn end(&mut self, how: u8) {
        if self.frames.is_some() {
            // Said before the frames' way closes: the thread reads it then.
            let _ = self
                .ended
                .compare_exchange(CUT, how, Ordering::SeqCst, Ordering::SeqCst);
            self.frames = None;
        }
    }
}

impl HttpBody for Tapped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.inner_done {
            return self.line.poll(cx).map(|()| self.last.take().map(Ok));
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(frames)) = (frame.data_ref(), self.frames.as_ref()) {
                    if let Err(TrySendError::Full(_)) = frames.try_send(data.clone()) {
                        self.end(BEHIND);
                    }
                }
                // A body of known length ends with its last byte: its end
                // is seen here, and that byte waits for the line.
                if self.inner.is_end_stream() {
                    self.end(COMPLETE);
                    self.inner_done = true;
                    if let Poll::Ready(Some(Ok(frame))) = polled {
                        self.last = Some(frame);
                    }
                    return self.poll_frame(cx);
                }
            }
            Poll::Ready(None) => {
                self.end(COMPLETE);
                self.inner_done = true;
                return self.poll_frame(cx);
            }
            Poll::Ready(Some(Err(e))) => match e.downcast_ref::<Stalled>() {
                Some(_) => self.end(STALLED),
                None => self.end(CUT),
            },
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.line.is_over() && self.last.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        // The client left before the end: what came is all there is.
        self.end(CUT);
    }
}

/// The upstream's answer on a cleaned route, its line written when it
/// ends; any other answer (the proxy's own, an error) has its line
/// written now.
pub(crate) fn until_ended(
    state: &Arc<State>,
    line: Line,
    response: Response<Body>,
    format: Format,
    ollama: bool,
) -> Response<Body> {
    if !line.answered_by_upstream() || !response.status().is_success() {
        return logged(state, line, response);
    }
    let header = |name: hyper::header::HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let tap = Tap::new(
        format,
        ollama,
        &header(hyper::header::CONTENT_TYPE),
        &header(hyper::header::CONTENT_ENCODING),
    );
    let (frames, received) = sync_channel::<Bytes>(QUEUE);
    let ended = Arc::new(AtomicU8::new(CUT));
    let (tell, written) = tokio::sync::oneshot::channel();
    let reading = Reading {
        tap,
        line,
        state: state.clone(),
        ended: ended.clone(),
        written: tell,
    };
    state.taps.fetch_add(1, Ordering::SeqCst);
    let spawn = |run: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name("ctxclean-tap".into())
            .spawn(run)
            .map(drop)
    };
    if let Err(((reading, _), e)) = on_own_thread(
        (reading, received),
        |(reading, received)| reading.run(&received),
        spawn,
    ) {
        // No thread: the answer still goes on, and its line is written
        // now, its usage not read.
        say!("ctxclean serve: no thread to read an answer's usage: {e}");
        reading.unread("no thread to read the answer's usage");
    }
    response.map(|inner| {
        http_body_util::BodyExt::boxed(Tapped {
            inner,
            frames: Some(frames),
            ended,
            inner_done: false,
            line: LineWait::new(Some(written)),
            last: None,
        })
    })
}

/// `value` handed to `run` on a thread `spawn` starts; when no thread can
/// be had, `value` comes back, with why (so that what it holds is not
/// dropped with the thread that never ran).
fn on_own_thread<T: Send + 'static>(
    value: T,
    run: impl FnOnce(T) + Send + 'static,
    spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> std::io::Result<()>,
) -> Result<(), (T, std::io::Error)> {
    let slot = Arc::new(std::sync::Mutex::new(Some(value)));
    let theirs = Arc::clone(&slot);
    let taken = move || {
        let value = theirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(value) = value {
            run(value);
        }
    };
    spawn(Box::new(taken)).or_else(|e| {
        let left = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        left.map_or(Ok(()), |value| Err((value, e)))
    })
}

/// What an answer's thread holds: the tap, and the line it finishes.
struct Reading {
    tap: Tap,
    line: Line,
    state: Arc<State>,
    ended: Arc<AtomicU8>,
    written: tokio::sync::oneshot::Sender<()>,
}

impl Reading {
    /// Feeds every frame, then, when the answer's side lets go, writes
    /// the line.
    fn run(self, frames: &std::sync::mpsc::Receiver<Bytes>) {
        let Reading {
            mut tap,
            line,
            state,
            ended,
            written,
        } = self;
        while let Ok(bytes) = frames.recv() {
            // Fallen behind: what is queued is let go unread.
            if ended.load(Ordering::SeqCst) != BEHIND {
                tap.feed(&bytes);
            }
        }
        let read = match ended.load(Ordering::SeqCst) {
            BEHIND => Read::Nothing("the proxy fell behind reading the answer's usage"),
            STALLED => Read::Nothing(
                "the answer was cut off: the upstream sent nothing more for --timeout",
            ),
            how => tap.finish(how == COMPLETE),
        };
        finish(line, read, &state, written);
    }

    /// With no thread to read the answer: its line, written now, says why
    /// its usage was not read.
    fn unread(self, why: &'static str) {
        let Reading {
            line,
            state,
            written,
            ..
        } = self;
        finish(line, Read::Nothing(why), &state, written);
    }
}

/// An answer's line, its usage `read`, queued for the log; `written` is
/// told on the log's thread once it is written.
fn finish(mut line: Line, read: Read, state: &State, written: tokio::sync::oneshot::Sender<()>) {
    line.read_usage(read, state);
    state.finish_then(line, telling(written));
    state.taps.fetch_sub(1, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::on_own_thread;

    #[test]
    fn a_value_whose_thread_never_started_comes_back() {
        // Before, the answer's line went down with the thread that could
        // not be had: the log never had it, and nothing counted it.
        let refused = |_: Box<dyn FnOnce() + Send>| Err(std::io::Error::other("no threads left"));
        let (back, e) = on_own_thread(String::from("the line"), drop, refused).unwrap_err();
        assert_eq!(back, "the line");
        assert_eq!(e.to_string(), "no threads left");
        // With a thread, it runs there, once, and nothing comes back.
        let (tx, rx) = std::sync::mpsc::channel();
        let spawn =
            |run: Box<dyn FnOnce() + Send>| std::thread::Builder::new().spawn(run).map(drop);
        on_own_thread(7, move |v| tx.send(v).unwrap(), spawn).unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
        assert!(rx.recv().is_err());
    }
}
