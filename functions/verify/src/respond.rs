//! Turning errors and payment demands into HTTP responses (shared by every function).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;
use verifier_core::config::ServiceConfig;
use verifier_core::errors::ApiError;

/// How a request was paid for, recorded on the response for the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PricePath {
    Free,
    Paid,
    PaymentRequired,
    NotCharged,
}

impl PricePath {
    /// The name the log uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PricePath::Free => "free",
            PricePath::Paid => "paid",
            PricePath::PaymentRequired => "payment_required",
            PricePath::NotCharged => "not_charged",
        }
    }
}

/// A JSON response.
pub fn json(status: StatusCode, body: Vec<u8>, path: PricePath) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.extensions_mut().insert(path);
    response
}

/// The §9 error response.
pub fn error(e: &ApiError, config: &ServiceConfig) -> Response {
    let body = serde_json::to_vec(&e.body(config)).unwrap_or_default();
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(status, body, PricePath::NotCharged);
    if let Some(after) = e.retry_after() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(after));
    }
    response
}

/// A 402 with the `PAYMENT-REQUIRED` header and the requirements (plus extras) in the body.
pub fn payment_required(
    required: &Value,
    extra: impl IntoIterator<Item = (&'static str, Value)>,
) -> Response {
    let mut body = required.clone();
    for (k, v) in extra {
        body[k] = v;
    }
    let mut response = json(
        StatusCode::PAYMENT_REQUIRED,
        serde_json::to_vec(&body).unwrap_or_default(),
        PricePath::PaymentRequired,
    );
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&verifier_core::payments::encode_header(required)) {
        headers.insert("payment-required", v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
