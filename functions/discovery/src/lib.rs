//! The discovery function: the documents agents find, price and trust the service by, all
//! generated from the route table, the configuration and the key ring.

mod health;

use axum::Router;
use axum::routing::get;
use function_common::respond;
use std::sync::Arc;
use verifier_core::service::Services;

/// The function's router.
pub fn router(services: Arc<Services>) -> Router {
    Router::new()
        .route(
            "/health",
            get(health::health).fallback(respond::method_not_allowed),
        )
        .with_state(services)
}
