//! `/docs`: Swagger UI from its vendored release (no CDN; only the files the page loads, see
//! `build.rs`), reading `/openapi.json`.
//! `/docs` itself answers the page (no redirect to `/docs/`: behind API Gateway `/docs/` may
//! match no route); a `<base href="docs/">` makes its relative asset links resolve under
//! `/docs/` whatever prefix the API has.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use function_common::respond;
use std::sync::Arc;
use verifier_service::Services;
use verifier_service::errors::ApiError;

/// One file of the page: its name under `/docs/`, media type and bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// A file `build.rs` took from the vendored Swagger UI release.
macro_rules! swagger_ui {
    ($name:literal, $type:literal) => {
        Asset {
            name: $name,
            content_type: $type,
            bytes: include_bytes!(concat!(env!("OUT_DIR"), "/swagger-ui/", $name)),
        }
    };
}

/// The page's files: Swagger UI's own and our start-up script (which names `/openapi.json`).
const ASSETS: &[Asset] = &[
    swagger_ui!("index.html", "text/html; charset=utf-8"),
    swagger_ui!("index.css", "text/css; charset=utf-8"),
    swagger_ui!("swagger-ui.css", "text/css; charset=utf-8"),
    swagger_ui!("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    swagger_ui!("favicon-16x16.png", "image/png"),
    swagger_ui!("favicon-32x32.png", "image/png"),
    swagger_ui!("oauth2-redirect.html", "text/html; charset=utf-8"),
    swagger_ui!("oauth2-redirect.js", "text/javascript; charset=utf-8"),
    Asset {
        name: "swagger-initializer.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../assets/swagger-initializer.js"),
    },
];

/// The file named `tail` (the page itself for an empty tail); with `base`, the page gets a
/// `<base href>` so its relative links resolve under `/docs/`.
fn file(s: &Services, tail: &str, base: Option<&str>) -> Response {
    let name = if tail.is_empty() { "index.html" } else { tail };
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return respond::error(&ApiError::NotFound, &s.config);
    };
    let body = match base {
        Some(base) => String::from_utf8_lossy(asset.bytes)
            .replacen("<head>", &format!("<head>\n    <base href=\"{base}\">"), 1)
            .into_bytes(),
        None => asset.bytes.to_vec(),
    };
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    response
}

/// The `/docs`, `/docs/` and `/docs/{asset}` routes.
pub fn router(services: Arc<Services>) -> Router {
    Router::new()
        .route(
            "/docs",
            get(|State(s): State<Arc<Services>>| async move { file(&s, "", Some("docs/")) })
                .fallback(respond::method_not_allowed),
        )
        .route(
            "/docs/",
            get(|State(s): State<Arc<Services>>| async move { file(&s, "", None) })
                .fallback(respond::method_not_allowed),
        )
        .route(
            "/docs/{*asset}",
            get(
                |State(s): State<Arc<Services>>, Path(asset): Path<String>| async move {
                    file(&s, &asset, None)
                },
            )
            .fallback(respond::method_not_allowed),
        )
        .with_state(services)
}
