//! Reading a request body whole, within the hard size limit and a time limit. Every way it can
//! fail is a client error in the common shape (413 over the limit, 400 cut off or malformed),
//! sent with `Connection: close` since the rest of the body was never read.

use crate::respond;
use axum::body::{Body, Bytes, to_bytes};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use verifier_core::config::ServiceConfig;
use verifier_core::errors::ApiError;

/// A body must arrive within this time (slow or stalled uploads are cut off).
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The whole body, or the error response to send instead.
pub async fn read_body(
    headers: &HeaderMap,
    body: Body,
    config: &ServiceConfig,
) -> Result<Bytes, Response> {
    let limit = config.hard_body_limit;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(respond::error_closing(
            &ApiError::BodyTooLarge { limit },
            config,
        ));
    }
    match tokio::time::timeout(BODY_READ_TIMEOUT, to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Err(_) => Err(respond::error_closing(&ApiError::IncompleteBody, config)),
        Ok(Err(e)) => {
            let too_large = e
                .into_inner()
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
