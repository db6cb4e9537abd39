//! The verify handlers: size limits, parsing, checks, the free allowance, the 402 path.

use crate::respond::{self, PricePath};
use crate::state::VerifyState;
use axum::Extension;
use axum::body::{Body, to_bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;
use verifier_core::clock::{next_utc_midnight, rfc3339_seconds, utc_day};
use verifier_core::errors::ApiError;
use verifier_core::payments::{FreeTrialState, free_trial, payment_required};
use verifier_core::store::{FreeClaim, Outcome, StoreError};
use verifier_core::{ClientAddr, EngineError};

/// `POST /verify/schema`.
pub async fn verify_schema(
    state: State<Arc<VerifyState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, client, headers, body, "/verify/schema").await
}

/// `POST /verify/deliverable`: the same check under a second name.
pub async fn verify_deliverable(
    state: State<Arc<VerifyState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    handle(state, client, headers, body, "/verify/deliverable").await
}

/// `GET /health`.
pub async fn health(State(state): State<Arc<VerifyState>>) -> Response {
    let body = json!({
        "status": "ok",
        "service": "Agent Output Verifier",
        "version": verifier_core::engine::VERIFIER_VERSION,
        "key_version": state.keys.current().key_version(),
    });
    respond::json(
        StatusCode::OK,
        body.to_string().into_bytes(),
        PricePath::NotCharged,
    )
}

/// The fallback of a route asked with the wrong method.
pub async fn method_not_allowed(State(state): State<Arc<VerifyState>>) -> Response {
    respond::error(&ApiError::MethodNotAllowed, &state.config)
}

const DESCRIPTION: &str =
    "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt";

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

fn has_payment(headers: &HeaderMap) -> bool {
    headers.contains_key("payment-signature") || headers.contains_key("x-payment")
}

async fn handle(
    State(state): State<Arc<VerifyState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
    path: &'static str,
) -> Response {
    let config = &state.config;
    let limit = config.hard_body_limit;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return respond::error(&ApiError::BodyTooLarge { limit }, config);
    }
    let Ok(bytes) = to_bytes(body, limit).await else {
        return respond::error(&ApiError::BodyTooLarge { limit }, config);
    };
    let Some(Extension(ClientAddr(client))) = client else {
        tracing::error!("no client address on the request; the edge must supply it");
        return respond::error(&ApiError::Internal, config);
    };
    let now = state.clock.now();
    let day = utc_day(now);
    let resets = rfc3339_seconds(next_utc_midnight(now));

    if bytes.is_empty() {
        // A POST with no body is an x402 discovery probe.
        let used = state.store.free_used(&client, &day).await.unwrap_or(0);
        return demand_payment(&state, path, "Payment required", used, &resets);
    }
    if !is_json(&headers) {
        return respond::error(&ApiError::UnsupportedMediaType, config);
    }
    let request = match state.engine.parse(&bytes) {
        Ok(r) => r,
        Err(e) => return respond::error(&ApiError::InvalidRequest(e.problems), config),
    };
    let signer = state.keys.current();
    let verification = match state.engine.verify(&request, &signer, now) {
        Ok(v) => v,
        Err(EngineError::Invalid(e)) => {
            return respond::error(&ApiError::InvalidRequest(e.problems), config);
        }
        Err(e) => {
            tracing::error!(error = %e, "verification failed internally");
            return respond::error(&ApiError::Internal, config);
        }
    };
    if has_payment(&headers) {
        // Settlement is not wired in yet: a paid request is refused, never answered for free.
        let required = payment_required(
            config,
            path,
            DESCRIPTION,
            config.price_verify_units,
            "payment_settlement_unavailable",
        );
        return respond::payment_required(
            &required,
            [(
                "payment_error",
                json!({"error_code": "payment_settlement_unavailable", "message": "This server does not settle x402 payments yet; nothing was charged. Use the free allowance."}),
            )],
        );
    }
    if bytes.len() > config.free_body_limit {
        let used = state.store.free_used(&client, &day).await.unwrap_or(0);
        return demand_payment(
            &state,
            path,
            "Body over the free size limit; payment required",
            used,
            &resets,
        );
    }
    let outcome = request.records_history().then(|| Outcome {
        agent_id: request.agent_id.clone().unwrap_or_default(),
        verification_id: verification.verification_id.clone(),
        result: if verification.passed { "pass" } else { "fail" }.into(),
        verified_at: verification.verified_at.clone(),
    });
    match state
        .store
        .claim_free(&client, &day, config.free_per_day, outcome)
        .await
    {
        Ok(FreeClaim::Granted { used }) => {
            let mut response = respond::json(StatusCode::OK, verification.body, PricePath::Free);
            let h = response.headers_mut();
            h.insert(
                "free-allowance-remaining",
                HeaderValue::from(config.free_per_day.saturating_sub(used)),
            );
            h.insert(
                "free-allowance-limit",
                HeaderValue::from(config.free_per_day),
            );
            if let Ok(v) = HeaderValue::from_str(&resets) {
                h.insert("free-allowance-resets", v);
            }
            response
        }
        Ok(FreeClaim::Exhausted { used }) => {
            demand_payment(&state, path, "Payment required", used, &resets)
        }
        Err(StoreError::Unavailable) => {
            respond::error(&ApiError::StoreUnavailable { retry_after: 1 }, config)
        }
        Err(e) => {
            tracing::error!(error = %e, "store failed");
            respond::error(&ApiError::StoreUnavailable { retry_after: 2 }, config)
        }
    }
}

fn demand_payment(
    state: &VerifyState,
    path: &str,
    error: &str,
    used: u64,
    resets: &str,
) -> Response {
    let config = &state.config;
    let required = payment_required(config, path, DESCRIPTION, config.price_verify_units, error);
    let trial: Value = free_trial(
        config,
        &FreeTrialState {
            used,
            resets_at: resets,
        },
    );
    respond::payment_required(&required, [("free_trial", trial)])
}
