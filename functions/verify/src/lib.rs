//! The verify function: `POST /verify/schema` and `POST /verify/deliverable`, and the two
//! discovery documents whose examples are the engine's signed answers (`/llms-full.txt`,
//! `/.well-known/x402.json`; built by the discovery crate, served here where the engine is).
//!
//! [`router`] is what both the Lambda main and the local server run.

mod handler;

use axum::Router;
use axum::routing::post;
use std::sync::Arc;
use verifier_service::Services;

/// The function's router.
pub fn router(services: Arc<Services>) -> Router {
    Router::new()
        .route(
            "/verify/schema",
            post(handler::verify_schema).fallback(handler::method_not_allowed),
        )
        .route(
            "/verify/deliverable",
            post(handler::verify_deliverable).fallback(handler::method_not_allowed),
        )
        .with_state(services.clone())
        .merge(discovery_function::signed_examples_router(services))
}
