//! The verify function: `POST /verify/schema`, `POST /verify/deliverable` and `GET /health`.
//!
//! [`router`] is what both the Lambda main and the local server run.

pub mod respond;
mod state;
mod verify;

pub use state::VerifyState;

use axum::Router;
use axum::routing::{get, post};
use std::sync::Arc;

/// The routes this function serves.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/verify/schema"),
    ("POST", "/verify/deliverable"),
    ("GET", "/health"),
];

/// The function's router.
pub fn router(state: Arc<VerifyState>) -> Router {
    Router::new()
        .route(
            "/verify/schema",
            post(verify::verify_schema).fallback(verify::method_not_allowed),
        )
        .route(
            "/verify/deliverable",
            post(verify::verify_deliverable).fallback(verify::method_not_allowed),
        )
        .route(
            "/health",
            get(verify::health).fallback(verify::method_not_allowed),
        )
        .with_state(state)
}
