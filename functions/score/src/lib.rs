//! The score function: the signed trust score `GET /score/{agent_id}` (paid when the agent
//! has history) and the free history `GET /reputation/{agent_id}`.

use axum::Extension;
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use function_common::reply;
use function_common::respond::{self, PricePath, payment_input};
use std::sync::Arc;
use verifier_service::ClientAddr;
use verifier_service::errors::ApiError;
use verifier_service::listings::Listing;
use verifier_service::score::{DESCRIPTION, reputation, score};
use verifier_service::{Resource, Services};

/// The function's router.
pub fn router(services: Arc<Services>) -> Router {
    Router::new()
        .route(
            "/score/{agent_id}",
            get(score_handler).fallback(method_not_allowed),
        )
        .route(
            "/reputation/{agent_id}",
            get(reputation_handler).fallback(method_not_allowed),
        )
        .with_state(services)
}

/// A path segment that is not valid percent-encoded UTF-8.
fn bad_path() -> ApiError {
    ApiError::InvalidRequest(vec![verifier_engine::FieldProblem::new(
        "agent_id",
        "is not valid percent-encoded UTF-8",
        "Send the agent ID percent-encoded as UTF-8 in the path.",
    )])
}

async fn method_not_allowed(State(s): State<Arc<Services>>) -> Response {
    respond::error(&ApiError::MethodNotAllowed, &s.config)
}

/// `GET /score/{agent_id}` (the path segment arrives URL-decoded).
async fn score_handler(
    State(s): State<Arc<Services>>,
    path: Result<Path<String>, PathRejection>,
    peer: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
) -> Response {
    let Ok(Path(agent_id)) = path else {
        return respond::error(&bad_path(), &s.config);
    };
    let Some(Extension(peer)) = peer else {
        tracing::error!("no client address on the request; the edge must supply it");
        return respond::error(&ApiError::Internal, &s.config);
    };
    let client = s.config.client_key(&peer.0);
    let resource = Resource {
        url: s.config.url("/score/{agent_id}"),
        description: DESCRIPTION,
        listing: Listing::HTTP_SCORE,
        path_param: Some(agent_id.clone()),
    };
    let payment = payment_input(&headers);
    reply(
        score(&s, &client, &agent_id, &payment, resource).await,
        &s.config,
    )
}

/// `GET /reputation/{agent_id}`.
async fn reputation_handler(
    State(s): State<Arc<Services>>,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(agent_id)) = path else {
        return respond::error(&bad_path(), &s.config);
    };
    match reputation(&s, &agent_id).await {
        Ok(body) => respond::json(StatusCode::OK, body, PricePath::NotCharged),
        Err(e) => respond::error(&e, &s.config),
    }
}
