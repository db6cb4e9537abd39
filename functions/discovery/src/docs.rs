//! `/docs`: Swagger UI from the crate's vendored bundle (no CDN), reading `/openapi.json`.
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
use utoipa_swagger_ui::Config;
use verifier_core::errors::ApiError;
use verifier_core::service::Services;

fn config() -> Arc<Config<'static>> {
    static CONFIG: std::sync::OnceLock<Arc<Config<'static>>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| Arc::new(Config::from("/openapi.json")))
        .clone()
}

fn file(s: &Services, tail: &str, base: Option<&str>) -> Response {
    match utoipa_swagger_ui::serve(tail, config()) {
        Ok(Some(f)) => {
            let mut bytes = f.bytes.into_owned();
            if let Some(base) = base
                && !f.gzpipped
            {
                let text = String::from_utf8_lossy(&bytes).replacen(
                    "<head>",
                    &format!("<head>\n    <base href=\"{base}\">"),
                    1,
                );
                bytes = text.into_bytes();
            }
            let mut response = (StatusCode::OK, bytes).into_response();
            let headers = response.headers_mut();
            if let Ok(ct) = HeaderValue::from_str(&f.content_type) {
                headers.insert(header::CONTENT_TYPE, ct);
            }
            if f.gzpipped {
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            response
        }
        Ok(None) => respond::error(&ApiError::NotFound, &s.config),
        Err(e) => {
            tracing::error!(error = %e, "the docs bundle cannot be served");
            respond::error(&ApiError::Internal, &s.config)
        }
    }
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
