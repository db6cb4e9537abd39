//! The verify handlers: size limits, content type, parsing, then the verification call.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use function_common::respond::{self, payment_input};
use function_common::{client_address, reply};
use std::sync::Arc;
use verifier_core::errors::ApiError;
use verifier_core::service::verify::{DESCRIPTION, VerifyCall, probe, verify};
use verifier_core::service::{Resource, Services};

/// `POST /verify/schema`.
pub async fn verify_schema(state: State<Arc<Services>>, req: Request) -> Response {
    handle(state, req, "/verify/schema").await
}

/// `POST /verify/deliverable`: the same check under a second name.
pub async fn verify_deliverable(state: State<Arc<Services>>, req: Request) -> Response {
    handle(state, req, "/verify/deliverable").await
}

/// The fallback of a route asked with the wrong method.
pub async fn method_not_allowed(State(s): State<Arc<Services>>) -> Response {
    respond::error(&ApiError::MethodNotAllowed, &s.config)
}

/// A body must arrive within this time (slow or stalled uploads are cut off).
const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn is_json(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        }
    }
}

async fn handle(State(s): State<Arc<Services>>, req: Request, path: &'static str) -> Response {
    let config = &s.config;
    let limit = config.hard_body_limit;
    let Some(client) = client_address(&req) else {
        tracing::error!("no client address on the request; the edge must supply it");
        return respond::error(&ApiError::Internal, config);
    };
    let (parts, body): (_, Body) = req.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return respond::error_closing(&ApiError::BodyTooLarge { limit }, config);
    }
    let read = tokio::time::timeout(BODY_READ_TIMEOUT, to_bytes(body, limit)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Err(_) => return respond::error_closing(&ApiError::IncompleteBody, config),
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
            return respond::error_closing(&error, config);
        }
    };
    let resource = Resource {
        url: config.url(path),
        description: DESCRIPTION,
    };
    if bytes.is_empty() {
        // A POST with no body is an x402 discovery probe.
        return reply(probe(&s, &client, resource).await, config);
    }
    if !is_json(&parts.headers) {
        return respond::error(&ApiError::UnsupportedMediaType, config);
    }
    let request = match s.engine.parse(&bytes) {
        Ok(r) => r,
        Err(e) => return respond::error(&ApiError::InvalidRequest(e.problems), config),
    };
    let payment = payment_input(&parts.headers);
    let call = VerifyCall {
        client: &client,
        request: &request,
        body_len: bytes.len(),
        payment: &payment,
        resource,
    };
    reply(verify(&s, call).await, config)
}
