//! The discovery function: the documents agents find, price and trust the service by, all
//! generated from the route table, the configuration and the key ring: the agent card, the
//! x402 manifest, the API catalog, llms.txt, the JSON index, the OpenAPI description and the
//! interactive docs (Swagger UI served from the crate, no CDN).
//!
//! Two of them, `/llms-full.txt` and `/.well-known/x402.json`, show the engine's own signed
//! answers to their example requests, so computing them links the schema engine: they are in
//! [`signed_examples_router`], which the verify function serves (it links the engine anyway),
//! and the discovery package stays without it (issue 17's package size).

pub mod card;
pub mod catalog;
mod docs;
mod health;
pub mod index;
pub mod llms;
pub mod openapi;
pub mod registry;
pub mod x402;

pub use verifier_service::examples;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{MethodRouter, get};
use function_common::respond::{self, PricePath, with_type};
use serde_json::Value;
use std::sync::Arc;
use verifier_service::Services;

fn json_doc(v: &Value, content_type: &'static str) -> Response {
    with_type(
        StatusCode::OK,
        content_type,
        serde_json::to_vec_pretty(v).unwrap_or_default(),
    )
}

fn text(body: String) -> Response {
    with_type(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        body.into_bytes(),
    )
}

async fn agent_card(State(s): State<Arc<Services>>) -> Response {
    json_doc(&card::agent_card(&s), "application/json")
}

async fn legacy_agent_card(State(s): State<Arc<Services>>) -> Response {
    json_doc(&card::legacy_agent_card(&s), "application/json")
}

async fn x402_manifest(State(s): State<Arc<Services>>) -> Response {
    json_doc(&x402::manifest(&s), "application/json")
}

async fn x402_origin_manifest(State(s): State<Arc<Services>>) -> Response {
    json_doc(&x402::origin_manifest(&s), "application/json")
}

async fn mcp_registry_entry(State(s): State<Arc<Services>>) -> Response {
    json_doc(&registry::server_json(&s.config), "application/json")
}

async fn api_catalog(State(s): State<Arc<Services>>) -> Response {
    json_doc(&catalog::catalog(&s), catalog::LINKSET)
}

async fn llms_txt(State(s): State<Arc<Services>>) -> Response {
    text(llms::llms_txt(&s))
}

async fn llms_full_txt(State(s): State<Arc<Services>>) -> Response {
    text(llms::llms_full_txt(&s))
}

async fn openapi_json(State(s): State<Arc<Services>>) -> Response {
    json_doc(&openapi::openapi(&s), "application/json")
}

/// `GET /`: JSON when the client asks for it, HTML otherwise.
async fn root(State(s): State<Arc<Services>>, headers: HeaderMap) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"));
    if wants_json {
        respond::json(
            StatusCode::OK,
            serde_json::to_vec_pretty(&index::index_json(&s)).unwrap_or_default(),
            PricePath::NotCharged,
        )
    } else {
        with_type(
            StatusCode::OK,
            "text/html; charset=utf-8",
            index::index_html(&s).into_bytes(),
        )
    }
}

/// A GET route whose other methods get 405 in the error shape.
fn page<H, T>(handler: H) -> MethodRouter<Arc<Services>>
where
    H: axum::handler::Handler<T, Arc<Services>>,
    T: 'static,
{
    get(handler).fallback(respond::method_not_allowed)
}

/// The documents whose examples are the engine's signed answers (served by the verify
/// function; the local server merges both routers).
pub fn signed_examples_router(services: Arc<Services>) -> Router {
    Router::new()
        .route("/.well-known/x402.json", page(x402_origin_manifest))
        .route("/llms-full.txt", page(llms_full_txt))
        .with_state(services)
}

/// The function's router.
pub fn router(services: Arc<Services>) -> Router {
    Router::new()
        .route("/", page(root))
        .route("/health", page(health::health))
        .route("/.well-known/agent-card.json", page(agent_card))
        .route("/.well-known/agent.json", page(legacy_agent_card))
        .route("/.well-known/x402", page(x402_manifest))
        .route("/server.json", page(mcp_registry_entry))
        .route("/.well-known/api-catalog", page(api_catalog))
        .route("/llms.txt", page(llms_txt))
        .route("/openapi.json", page(openapi_json))
        .with_state(services.clone())
        .merge(docs::router(services))
}
