//! The one error shape of SERVICE.md §9, built in one place. Errors never echo the caller's
//! input and are never charged.

use crate::config::{ServiceConfig, usd};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use verifier_engine::request::FieldProblem;

/// Every non-payment error the service returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 422: the request is invalid (every problem listed).
    #[error("invalid request")]
    InvalidRequest(Vec<FieldProblem>),
    /// 413: the body is over the hard limit.
    #[error("body too large")]
    BodyTooLarge { limit: usize },
    /// 400: the body ended before its declared length (or a chunk was malformed).
    #[error("body incomplete")]
    IncompleteBody,
    /// 415: the body is declared as something other than JSON.
    #[error("unsupported media type")]
    UnsupportedMediaType,
    /// 404: no such route.
    #[error("not found")]
    NotFound,
    /// 405: the route exists with another method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 403: the request's `Origin` or `Host` may not call this endpoint (DNS rebinding).
    #[error("forbidden")]
    Forbidden,
    /// 403: the operator blocked this client's network or the agent the request names.
    #[error("blocked")]
    Blocked,
    /// 406: the request does not accept the answer's media types.
    #[error("not acceptable")]
    NotAcceptable,
    /// 400: an MCP request whose HTTP framing (headers) is not valid.
    #[error("bad request")]
    BadRequest,
    /// 409: an x402 payment identifier already answered another payment or request.
    #[error("payment identifier conflict")]
    PaymentIdConflict,
    /// 503: the store is briefly unavailable.
    #[error("store unavailable")]
    StoreUnavailable { retry_after: u64 },
    /// 503: the payment facilitator could not be reached (nothing was charged).
    #[error("facilitator unavailable")]
    FacilitatorUnavailable { retry_after: u64 },
    /// 429: this client already has as many costly verifications running as it may.
    #[error("too many requests")]
    TooManyRequests { retry_after: u64 },
    /// 429: in a private deployment, this client's verifications for today are used up.
    #[error("allowance exhausted")]
    AllowanceExhausted { limit: u64, retry_after: u64 },
    /// 503: every worker for costly verifications is busy.
    #[error("busy")]
    Busy { retry_after: u64 },
    /// 500: something broke on our side.
    #[error("internal error")]
    Internal,
}

/// The serialized error (SERVICE.md §9).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub code: &'static str,
    pub message: String,
    pub status: u16,
    pub retryable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    pub charged: bool,
    #[schema(value_type = Vec<Object>)]
    pub next_actions: Vec<Value>,
    pub fields: Vec<FieldProblem>,
    #[schema(value_type = Object)]
    pub guidance: Value,
}

/// Every error code with its status and meaning, for llms.txt and the OpenAPI document.
pub const ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "invalid_request",
        422,
        "The request is malformed or breaks a rule; `fields` lists every problem with its fix.",
    ),
    (
        "body_too_large",
        413,
        "The body is over the hard size limit stated in the message.",
    ),
    (
        "body_incomplete",
        400,
        "The connection ended before the body was complete (short Content-Length or broken chunking).",
    ),
    (
        "unsupported_media_type",
        415,
        "The body is declared as something other than application/json.",
    ),
    ("not_found", 404, "No such route."),
    (
        "forbidden",
        403,
        "The request's Origin or Host may not call /mcp (DNS-rebinding protection).",
    ),
    (
        "not_acceptable",
        406,
        "The Accept header must allow application/json and text/event-stream (MCP Streamable HTTP).",
    ),
    (
        "bad_request",
        400,
        "The MCP request's headers are not valid (for example an unsupported MCP-Protocol-Version).",
    ),
    (
        "payment_identifier_conflict",
        409,
        "The x402 payment-identifier `id` was used before with another payment or request; its kept answer belongs to that one.",
    ),
    (
        "method_not_allowed",
        405,
        "The route exists with another method.",
    ),
    (
        "store_unavailable",
        503,
        "The store is briefly unavailable; retry after `retry_after` seconds.",
    ),
    (
        "facilitator_unavailable",
        503,
        "The payment facilitator could not be reached; nothing was charged; retry after `retry_after` seconds.",
    ),
    (
        "too_many_requests",
        429,
        "This client address already has as many costly verifications running as it may; retry after `retry_after` seconds.",
    ),
    (
        "blocked",
        403,
        "The operator of this service blocked the caller's network or the agent the request names; not retryable.",
    ),
    (
        "allowance_exhausted",
        429,
        "A private deployment only: this client's verifications for today are used up; retry after `retry_after` seconds (the next UTC midnight).",
    ),
    (
        "server_busy",
        503,
        "Every worker for costly verifications is busy; nothing was charged; retry after `retry_after` seconds.",
    ),
    (
        "internal_error",
        500,
        "An unexpected failure on our side; retry after `retry_after` seconds.",
    ),
];

impl ApiError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest(_) => "invalid_request",
            ApiError::BodyTooLarge { .. } => "body_too_large",
            ApiError::IncompleteBody => "body_incomplete",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Forbidden => "forbidden",
            ApiError::Blocked => "blocked",
            ApiError::NotAcceptable => "not_acceptable",
            ApiError::PaymentIdConflict => "payment_identifier_conflict",
            ApiError::BadRequest => "bad_request",
            ApiError::StoreUnavailable { .. } => "store_unavailable",
            ApiError::FacilitatorUnavailable { .. } => "facilitator_unavailable",
            ApiError::TooManyRequests { .. } => "too_many_requests",
            ApiError::AllowanceExhausted { .. } => "allowance_exhausted",
            ApiError::Busy { .. } => "server_busy",
            ApiError::Internal => "internal_error",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidRequest(_) => 422,
            ApiError::BodyTooLarge { .. } => 413,
            ApiError::IncompleteBody => 400,
            ApiError::UnsupportedMediaType => 415,
            ApiError::NotFound => 404,
            ApiError::MethodNotAllowed => 405,
            ApiError::Forbidden | ApiError::Blocked => 403,
            ApiError::NotAcceptable => 406,
            ApiError::PaymentIdConflict => 409,
            ApiError::BadRequest => 400,
            ApiError::StoreUnavailable { .. }
            | ApiError::FacilitatorUnavailable { .. }
            | ApiError::Busy { .. } => 503,
            ApiError::TooManyRequests { .. } | ApiError::AllowanceExhausted { .. } => 429,
            ApiError::Internal => 500,
        }
    }

    /// Seconds after which a retry may succeed, for retryable errors.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::StoreUnavailable { retry_after }
            | ApiError::FacilitatorUnavailable { retry_after }
            | ApiError::TooManyRequests { retry_after }
            | ApiError::AllowanceExhausted { retry_after, .. }
            | ApiError::Busy { retry_after } => Some(*retry_after),
            ApiError::Internal => Some(1),
            _ => None,
        }
    }

    /// The body of SERVICE.md §9.
    pub fn body(&self, config: &ServiceConfig) -> ErrorBody {
        const NOTHING_CHARGED: &str = "Nothing was charged";
        let (message, next_actions, fields) = match self {
            ApiError::InvalidRequest(problems) => {
                let what: Vec<String> = problems
                    .iter()
                    .map(|p| format!("{} {}", p.field, p.problem))
                    .collect();
                let names: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
                (
                    format!(
                        "The request is invalid: {}. {NOTHING_CHARGED}; fix the field(s) and send it again.",
                        what.join("; ")
                    ),
                    vec![json!({"action": "fix_request_fields", "fields": names})],
                    problems.clone(),
                )
            }
            ApiError::BodyTooLarge { limit } => (
                format!(
                    "The body is larger than the limit of {limit} bytes. {NOTHING_CHARGED}; send a smaller body."
                ),
                vec![json!({"action": "shrink_request", "max_bytes": limit})],
                vec![FieldProblem::new(
                    "body",
                    format!("is larger than {limit} bytes"),
                    format!("Send at most {limit} bytes."),
                )],
            ),
            ApiError::IncompleteBody => (
                format!(
                    "The body ended before it was complete. {NOTHING_CHARGED}; send the whole body again."
                ),
                vec![json!({"action": "resend_request"})],
                vec![FieldProblem::new(
                    "body",
                    "ended before its declared length",
                    "Send the complete body with a correct Content-Length (or valid chunked encoding).",
                )],
            ),
            ApiError::UnsupportedMediaType => (
                format!(
                    "The body must be JSON. {NOTHING_CHARGED}; send it with Content-Type: application/json."
                ),
                vec![json!({"action": "fix_request_fields", "fields": ["content-type"]})],
                vec![FieldProblem::new(
                    "content-type",
                    "is not application/json",
                    "Send Content-Type: application/json.",
                )],
            ),
            ApiError::NotFound => (
                format!("No such route. {NOTHING_CHARGED}; see GET / for the routes."),
                vec![json!({"action": "read_docs", "url": config.url("/")})],
                vec![],
            ),
            ApiError::MethodNotAllowed => (
                format!(
                    "This route does not take that method. {NOTHING_CHARGED}; see GET / for the routes."
                ),
                vec![json!({"action": "read_docs", "url": config.url("/")})],
                vec![],
            ),
            ApiError::Forbidden => (
                format!(
                    "This origin or host may not call /mcp. {NOTHING_CHARGED}; call it from the service's own origin, or ask the operator to allow yours."
                ),
                vec![json!({"action": "read_docs", "url": config.url("/")})],
                vec![],
            ),
            ApiError::Blocked => (
                format!(
                    "The operator of this service blocked this caller's network or the agent the request names. {NOTHING_CHARGED}; ask the operator if you think this is wrong."
                ),
                vec![],
                vec![],
            ),
            ApiError::NotAcceptable => (
                format!(
                    "The request must accept application/json and text/event-stream. {NOTHING_CHARGED}; send Accept: application/json, text/event-stream."
                ),
                vec![json!({"action": "fix_request_fields", "fields": ["accept"]})],
                vec![FieldProblem::new(
                    "accept",
                    "does not allow application/json and text/event-stream",
                    "Send Accept: application/json, text/event-stream.",
                )],
            ),
            ApiError::PaymentIdConflict => (
                format!(
                    "This payment identifier was used with another payment or request. {NOTHING_CHARGED}; use a new id for a new payment, or resend the original payment and request unchanged to get their answer again."
                ),
                vec![json!({"action": "fix_request_fields", "fields": ["payment-identifier"]})],
                vec![FieldProblem::new(
                    "payment-identifier",
                    "was used before with another payment or request",
                    "Generate a new id (16 to 128 characters of A-Z, a-z, 0-9, - and _) for each new payment.",
                )],
            ),
            ApiError::BadRequest => (
                format!(
                    "The MCP request's headers are not valid. {NOTHING_CHARGED}; send a supported MCP-Protocol-Version (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 or 2026-07-28), or none before initializing."
                ),
                vec![json!({"action": "fix_request_fields", "fields": ["mcp-protocol-version"]})],
                vec![FieldProblem::new(
                    "mcp-protocol-version",
                    "is not a protocol version this server speaks, or does not match the request",
                    "Send one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28.",
                )],
            ),
            ApiError::StoreUnavailable { retry_after } => (
                format!(
                    "The store is briefly unavailable. {NOTHING_CHARGED}; retry after {retry_after} s."
                ),
                vec![json!({"action": "retry", "after_seconds": retry_after})],
                vec![],
            ),
            ApiError::FacilitatorUnavailable { retry_after } => (
                format!(
                    "The payment facilitator could not be reached. {NOTHING_CHARGED}; retry after {retry_after} s with the same payment."
                ),
                vec![json!({"action": "retry", "after_seconds": retry_after})],
                vec![],
            ),
            ApiError::TooManyRequests { retry_after } => (
                format!(
                    "This client address already has as many costly verifications running as it may. {NOTHING_CHARGED}; retry after {retry_after} s, or send smaller requests (they are not limited)."
                ),
                vec![json!({"action": "retry", "after_seconds": retry_after})],
                vec![],
            ),
            ApiError::AllowanceExhausted { limit, retry_after } => (
                format!(
                    "This client's {limit} verifications for today are used up. {NOTHING_CHARGED}; retry after {retry_after} s (midnight UTC)."
                ),
                vec![json!({"action": "retry", "after_seconds": retry_after})],
                vec![],
            ),
            ApiError::Busy { retry_after } => (
                format!(
                    "Every worker for costly verifications is busy. {NOTHING_CHARGED}; retry after {retry_after} s."
                ),
                vec![json!({"action": "retry", "after_seconds": retry_after})],
                vec![],
            ),
            ApiError::Internal => (
                format!("Something failed on our side. {NOTHING_CHARGED}; retry shortly."),
                vec![json!({"action": "retry", "after_seconds": 1})],
                vec![],
            ),
        };
        ErrorBody {
            code: self.code(),
            message,
            status: self.status(),
            retryable: self.retry_after().is_some(),
            retry_after: self.retry_after(),
            charged: false,
            next_actions,
            fields,
            guidance: guidance(config),
        }
    }
}

/// What to do, a minimal valid request, the price and the allowance.
pub fn guidance(config: &ServiceConfig) -> Value {
    json!({
        "what_to_do": "POST a JSON object with task_id, expected_schema and submitted_output to /verify/schema; add rules, bounds, enforce_rules, strict_content_check, detail or format_assertion as needed.",
        "minimal_request": {
            "task_id": "task-1",
            "expected_schema": {"type": "object", "required": ["total"]},
            "submitted_output": {"total": 42}
        },
        "price": format!("{} (USDC on Base or Solana, x402 v2) per verification after the free allowance; {} per score lookup with data", usd(config.price_verify_units), usd(config.price_score_units)),
        "free_allowance": format!("{} free verifications per client address per UTC day, shared by REST and MCP", config.free_per_day),
        "docs": config.url("/llms.txt"),
    })
}
