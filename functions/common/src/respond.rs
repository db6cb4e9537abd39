//! Turning a call's [`Reply`] (and errors) into HTTP responses, the same for every function.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;
use verifier_service::payments::{PaymentInput, encode_header};
use verifier_service::{Billing, PaymentDemand, Reply};

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

/// A response with a body and content type.
pub fn with_type(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.extensions_mut().insert(PricePath::NotCharged);
    response
}

/// A JSON response.
pub fn json(status: StatusCode, body: Vec<u8>, path: PricePath) -> Response {
    let mut response = with_type(status, "application/json", body);
    response.extensions_mut().insert(path);
    response
}

/// The error code of an error response, recorded on it for the request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub &'static str);

/// The §9 error response (counted by its code).
pub fn error(e: &ApiError, config: &ServiceConfig) -> Response {
    verifier_service::telemetry::refusal(e.code());
    let body = serde_json::to_vec(&e.body(config)).unwrap_or_default();
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(status, body, PricePath::NotCharged);
    response.extensions_mut().insert(ErrorCode(e.code()));
    if let Some(after) = e.retry_after() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(after));
    }
    response
}

/// An error sent before the request body was read to its end: the connection cannot carry
/// another request, so the response says `Connection: close` and clients do not reuse it.
pub fn error_closing(e: &ApiError, config: &ServiceConfig) -> Response {
    let mut response = error(e, config);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn insert(headers: &mut HeaderMap, name: &'static str, value: String) {
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(name, v);
    }
}

/// A 402: `PAYMENT-REQUIRED` (base64 of the PaymentRequired), the requirements plus
/// `free_trial` and `payment_error` in the body, and `PAYMENT-RESPONSE` after a failed
/// settlement.
pub fn payment_required(demand: &PaymentDemand) -> Response {
    let mut response = json(
        StatusCode::PAYMENT_REQUIRED,
        serde_json::to_vec(&demand.body()).unwrap_or_default(),
        PricePath::PaymentRequired,
    );
    let headers = response.headers_mut();
    insert(headers, "payment-required", encode_header(&demand.required));
    if let Some(settlement) = &demand.settlement {
        insert(headers, "payment-response", encode_header(settlement));
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The HTTP response of a call's reply.
pub fn reply(r: Reply, config: &ServiceConfig) -> Response {
    match r {
        Reply::Answer(answer) => {
            let path = match &answer.billing {
                Billing::Free { .. } => PricePath::Free,
                Billing::Paid(_) => PricePath::Paid,
                Billing::NotCharged => PricePath::NotCharged,
            };
            let mut response = json(StatusCode::OK, answer.body, path);
            let h = response.headers_mut();
            match answer.billing {
                Billing::Free {
                    remaining,
                    limit,
                    resets_at,
                } if limit != verifier_service::config::UNLIMITED => {
                    h.insert("free-allowance-remaining", HeaderValue::from(remaining));
                    h.insert("free-allowance-limit", HeaderValue::from(limit));
                    insert(h, "free-allowance-resets", resets_at);
                }
                Billing::Paid(settlement) => {
                    insert(h, "payment-response", encode_header(&settlement));
                }
                Billing::Free { .. } | Billing::NotCharged => {}
            }
            response
        }
        Reply::PaymentRequired(demand) => payment_required(&demand),
        Reply::Error(e) => error(&e, config),
    }
}

/// The payment a request carries: `PAYMENT-SIGNATURE`, or the legacy `X-PAYMENT`.
/// An empty header carries no payment.
pub fn payment_input(headers: &HeaderMap) -> PaymentInput {
    headers
        .get("payment-signature")
        .or_else(|| headers.get("x-payment"))
        .filter(|v| !v.as_bytes().iter().all(u8::is_ascii_whitespace))
        .map_or(PaymentInput::None, |v| {
            PaymentInput::Header(String::from_utf8_lossy(v.as_bytes()).into_owned())
        })
}

/// The fallback of a route asked with the wrong method: 405 in the common error shape.
pub async fn method_not_allowed(
    axum::extract::State(s): axum::extract::State<std::sync::Arc<verifier_service::Services>>,
) -> Response {
    error(&ApiError::MethodNotAllowed, &s.config)
}

/// `X-Content-Type-Options: nosniff` on an answer (every answer of the service gets it, so no
/// browser guesses a type the service did not declare).
pub async fn nosniff(mut response: Response) -> Response {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
