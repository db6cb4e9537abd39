//! `GET /health`: liveness, version, the active key_version and whether the deployment is
//! private (no payments).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use function_common::respond::{self, PricePath};
use serde_json::json;
use std::sync::Arc;
use verifier_service::Services;

/// `GET /health`.
pub async fn health(State(s): State<Arc<Services>>) -> Response {
    let body = json!({
        "status": "ok",
        "service": "Agent Output Verifier",
        "version": verifier_engine::engine::VERIFIER_VERSION,
        "key_version": s.keys.current().key_version(),
        "private": s.config.private,
    });
    respond::json(
        StatusCode::OK,
        body.to_string().into_bytes(),
        PricePath::NotCharged,
    )
}
