//! A request answered before its body was read to the end is answered with
//! `Connection: close`.
//!
//! Routes that reject a request early (405, 404, a rate limit) never read its body. hyper then
//! drains what has already arrived and, when the rest has not, closes the connection after the
//! response; but the response head was already sent saying the connection stays open. A client
//! that sent its body in a second packet (Python's HTTP clients do) then reuses a connection the
//! server is closing, and its next request fails with "server disconnected". Saying
//! `Connection: close` in the response itself tells the client not to reuse it (RFC 9112 §9.6).
//! A request whose body was read whole, or that has none, keeps its connection.

use axum::body::Bytes;
use axum::http::{HeaderValue, Response, header};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

/// A request body that records whether it was read to its end.
pub struct TrackedBody {
    inner: Incoming,
    ended: Arc<AtomicBool>,
}

/// Whether the body a [`TrackedBody`] wraps has been read to its end (or was empty).
#[derive(Clone)]
pub struct BodyEnd(Arc<AtomicBool>);

impl BodyEnd {
    /// Add `Connection: close` to `response` unless the request body was read to its end.
    pub fn close_unless_read<B>(&self, mut response: Response<B>) -> Response<B> {
        if !self.0.load(Ordering::Acquire) {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// Wrap `body`; the returned [`BodyEnd`] reports whether it was read to its end.
pub fn track(body: Incoming) -> (TrackedBody, BodyEnd) {
    let ended = Arc::new(AtomicBool::new(body.is_end_stream()));
    (
        TrackedBody {
            inner: body,
            ended: ended.clone(),
        },
        BodyEnd(ended),
    )
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
