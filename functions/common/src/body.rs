//! Reading a request body whole, within the hard size limit and a time limit. Every way it can
//! fail is a client error in the common shape (413 over the limit, 400 cut off or malformed),
//! sent with `Connection: close` since the rest of the body was never read.

use crate::respond;
use axum::body::{Body, Bytes, to_bytes};
use axum::http::{header, request::Parts};
use axum::response::Response;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;

/// Raised by the local server's connection reader when a request on the connection declares
/// a chunk larger than the hard body limit (hyper does not tell its handlers chunk sizes, and
/// the chunk would otherwise be waited for until the read timeout).
#[derive(Debug, Default)]
pub struct BodyAlarm {
    /// The sequence number of the request whose body cannot fit (`u64::MAX`: none).
    raised_for: AtomicU64,
    notify: Notify,
}

impl BodyAlarm {
    /// A connection's alarm, not raised.
    pub fn new() -> Arc<Self> {
        Arc::new(BodyAlarm {
            raised_for: AtomicU64::new(u64::MAX),
            notify: Notify::new(),
        })
    }

    /// The body of the connection's request number `seq` (from 0) cannot fit.
    pub fn raise(&self, seq: u64) {
        self.raised_for.store(seq, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Whether the alarm is raised for request `seq`.
    pub fn is_raised(&self, seq: u64) -> bool {
        self.raised_for.load(Ordering::Acquire) == seq
    }

    /// Wait until the alarm is raised for request `seq`.
    pub async fn raised(&self, seq: u64) {
        loop {
            let notified = self.notify.notified();
            if self.raised_for.load(Ordering::Acquire) == seq {
                return;
            }
            notified.await;
        }
    }
}

/// A request's place on its connection (from 0) and the connection's [`BodyAlarm`], as the
/// local server's listener puts them in the request's extensions.
#[derive(Debug, Clone)]
pub struct ConnectionBody {
    pub seq: u64,
    pub alarm: Arc<BodyAlarm>,
}

/// A body must arrive within this time (slow or stalled uploads are cut off).
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The whole body, or the error response to send instead.
pub async fn read_body(
    parts: &Parts,
    body: Body,
    config: &ServiceConfig,
) -> Result<Bytes, Response> {
    let limit = config.hard_body_limit;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(respond::error_closing(
            &ApiError::BodyTooLarge { limit },
            config,
        ));
    }
    let too_large = async {
        match parts.extensions.get::<ConnectionBody>() {
            Some(connection) => connection.alarm.raised(connection.seq).await,
            None => std::future::pending().await,
        }
    };
    let read = tokio::time::timeout(BODY_READ_TIMEOUT, to_bytes(body, limit));
    let read = tokio::select! {
        read = read => read,
        () = too_large => {
            return Err(respond::error_closing(&ApiError::BodyTooLarge { limit }, config));
        }
    };
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Err(_) => Err(respond::error_closing(&ApiError::IncompleteBody, config)),
        Ok(Err(e)) => {
            // A chunk size hyper cannot even read (beyond 64 bits) fails the body at once; the
            // connection's watch saw it first and says it was too large.
            let alarmed = parts
                .extensions
                .get::<ConnectionBody>()
                .is_some_and(|c| c.alarm.is_raised(c.seq));
            let too_large = alarmed
                || e.into_inner()
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some();
            let error = if too_large {
                ApiError::BodyTooLarge { limit }
            } else {
                ApiError::IncompleteBody
            };
            Err(respond::error_closing(&error, config))
        }
    }
}
