//! The request metrics every transport records the same way: the route label (the route
//! table's own path, or `unmatched`) and a middleware that counts each answered request with
//! its status and duration ([`verifier_service::telemetry::request`]).

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;
use verifier_service::telemetry;

/// The route label of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// A matched path as a label: the route table's `&'static str` for it, else `unmatched`.
pub fn route_label(matched: &str) -> &'static str {
    verifier_service::routes::ROUTES
        .iter()
        .find(|r| r.path == matched)
        .map_or(UNMATCHED, |r| r.path)
}

/// The route label of a request, from axum's matched path.
pub fn route_of(req: &Request) -> &'static str {
    req.extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, |p| route_label(p.as_str()))
}

/// Count an answered request (route, status, duration).
pub async fn count(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_of(&req);
    let response = next.run(req).await;
    telemetry::request(
        route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}
