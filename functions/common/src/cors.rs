//! CORS for browser clients: any origin may call the API; x402 headers are exposed and
//! allowed (x402 HTTP transport: expose PAYMENT-REQUIRED and PAYMENT-RESPONSE, allow
//! PAYMENT-SIGNATURE).

use axum::http::{HeaderName, Method};
use tower_http::cors::{Any, CorsLayer};

/// The CORS layer of every router.
pub fn layer() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            HeaderName::from_static("content-type"),
            HeaderName::from_static("payment-signature"),
            HeaderName::from_static("x-payment"),
            HeaderName::from_static("access-control-expose-headers"),
            HeaderName::from_static("mcp-protocol-version"),
            HeaderName::from_static("mcp-method"),
            HeaderName::from_static("mcp-name"),
            HeaderName::from_static("accept"),
        ])
        .expose_headers([
            HeaderName::from_static("payment-required"),
            HeaderName::from_static("payment-response"),
            HeaderName::from_static("free-allowance-remaining"),
            HeaderName::from_static("free-allowance-limit"),
            HeaderName::from_static("free-allowance-resets"),
        ])
}
