//! The MCP function: `POST /mcp`, MCP over Streamable HTTP with rmcp, stateless (no
//! sessions), JSON responses, both protocol eras (the 2025-06-18/2025-11-25 `initialize`
//! handshake and the 2026-07-28 stateless `server/discover`). Tools `verify_schema` and
//! `get_verification_record` run the same calls as their REST twins, share the free
//! allowance by client address, and are paid through the x402 tool-result binding.

pub mod guard;
mod handoff;
mod reply;
mod server;
mod tools;

use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;
use verifier_service::Services;

pub use server::VerifierMcp;

/// Who may talk to the endpoint (DNS-rebinding protection).
#[derive(Debug, Clone, Default)]
pub struct McpAccess {
    /// `Host` values accepted (host or host:port); empty accepts any host (behind API Gateway).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted; a request with any other present Origin gets 403.
    pub allowed_origins: Vec<String>,
}

impl McpAccess {
    /// Loopback hosts plus the public URL's host, and the public URL's origin (for a
    /// loopback public URL, every loopback spelling of it: localhost, 127.0.0.1, [::1]).
    pub fn for_public_url(public_url: &str, extra_origins: &[String]) -> Self {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let base = public_url.trim_end_matches('/');
        let (scheme, authority) = base.split_once("://").unwrap_or(("http", base));
        let authority = authority.split('/').next().unwrap_or(authority);
        hosts.push(authority.to_owned());
        let origin = format!("{scheme}://{authority}");
        let mut origins = vec![origin];
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => (h, Some(p)),
            _ => (authority, None),
        };
        if ["localhost", "127.0.0.1", "[::1]"].contains(&host) {
            for alias in ["localhost", "127.0.0.1", "[::1]"] {
                origins.push(match port {
                    Some(p) => format!("{scheme}://{alias}:{p}"),
                    None => format!("{scheme}://{alias}"),
                });
            }
        }
        origins.extend(extra_origins.iter().cloned());
        McpAccess {
            allowed_hosts: hosts,
            allowed_origins: origins,
        }
    }
}

impl McpAccess {
    /// Behind API Gateway: the public URL's origin plus `extra_origins`; `hosts` as
    /// configured (empty accepts any `Host`: API Gateway only routes its own domains).
    pub fn behind_gateway(public_url: &str, extra_origins: &[String], hosts: &[String]) -> Self {
        McpAccess {
            allowed_hosts: hosts.to_vec(),
            ..McpAccess::for_public_url(public_url, extra_origins)
        }
    }
}

/// The MCP endpoint as a tower service.
pub fn service(
    services: Arc<Services>,
    access: &McpAccess,
) -> StreamableHttpService<VerifierMcp, NeverSessionManager> {
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(services.config.hard_body_limit)
        .with_allowed_origins(access.allowed_origins.clone())
        .enforce_origin_validation();
    config = if access.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(access.allowed_hosts.clone())
    };
    let tools = VerifierMcp::tools_of(&services);
    StreamableHttpService::new(
        move || Ok(VerifierMcp::new(services.clone(), tools.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The function's router: `/mcp` behind its guard ([`guard`]): every answer in the service's
/// shapes, none with the caller's text.
pub fn router(services: Arc<Services>, access: &McpAccess) -> Router {
    let config = Arc::new(services.config.clone());
    Router::new()
        .route_service("/mcp", service(services, access))
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let config = config.clone();
                async move { guard::guard(req, next, &config).await }
            },
        ))
}
