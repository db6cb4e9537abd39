//! `/.well-known/api-catalog` (RFC 9727): a linkset pointing at the API's description,
//! documentation, status and the other discovery documents.

use serde_json::{Value, json};
use verifier_service::Services;

/// The media type of the catalog.
pub const LINKSET: &str = "application/linkset+json";

/// The linkset.
pub fn catalog(s: &Services) -> Value {
    let c = &s.config;
    let link = |path: &str, kind: &str| json!([{"href": c.url(path), "type": kind}]);
    json!({
        "linkset": [{
            "anchor": c.url("/"),
            "service-desc": link("/openapi.json", "application/vnd.oai.openapi+json;version=3.1"),
            "service-doc": [
                {"href": c.url("/docs"), "type": "text/html"},
                {"href": c.url("/llms.txt"), "type": "text/plain"},
                {"href": c.url("/llms-full.txt"), "type": "text/plain"}
            ],
            "status": link("/health", "application/json"),
            "service-meta": [
                {"href": c.url("/.well-known/agent-card.json"), "type": "application/json"},
                {"href": c.url("/.well-known/x402"), "type": "application/json"}
            ],
            "item": [
                {"href": c.url("/verify/schema"), "type": "application/json"},
                {"href": c.url("/verify/deliverable"), "type": "application/json"},
                {"href": c.url("/mcp"), "type": "application/json"}
            ]
        }]
    })
}
