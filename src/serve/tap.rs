//! An answer read for its usage as it passes to the client: every frame
//! goes on as it came, when it came; a copy feeds the library's
//! [`Tap`]. The request's log line is written when the answer ends (or
//! the client leaves), with what the provider billed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use ctxclean::format::Format;
use ctxclean::inflight::answer::Tap;
use hyper::body::{Body as HttpBody, Frame};
use hyper::Response;

use super::limits::{Body, BoxError};
use super::log::Line;
use super::State;

/// An answer's body, tapped; its line written at its end.
struct Tapped {
    inner: Body,
    tap: Option<Tap>,
    line: Option<Line>,
    state: Arc<State>,
}

impl Tapped {
    fn end(&mut self, complete: bool) {
        let (Some(tap), Some(mut line)) = (self.tap.take(), self.line.take()) else {
            return;
        };
        let read = tap.finish(complete);
        line.read_usage(read, &self.state);
        self.state.finish(line);
    }
}

impl HttpBody for Tapped {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(tap)) = (frame.data_ref(), self.tap.as_mut()) {
                    tap.feed(data);
                }
                // A body of known length ends with its last byte: hyper
                // does not poll it again, so its end is seen here.
                if self.inner.is_end_stream() {
                    self.end(true);
                }
            }
            Poll::Ready(None) => self.end(true),
            Poll::Ready(Some(Err(_))) => self.end(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        // The client left before the end: what came is all there is.
        self.end(false);
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
        state.finish(line);
        return response;
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
    let state = state.clone();
    response.map(|inner| {
        http_body_util::BodyExt::boxed(Tapped {
            inner,
            tap: Some(tap),
            line: Some(line),
            state,
        })
    })
}
