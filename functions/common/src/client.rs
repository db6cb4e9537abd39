//! The client address: the edge's view of the caller, never a header the caller can set.
//! The local server puts the socket peer in a [`ClientAddr`] extension; on Lambda, the
//! function's main puts `requestContext.http.sourceIp` there.

use axum::extract::Request;
use verifier_service::ClientAddr;
use verifier_service::config::ServiceConfig;

/// The caller as the allowance and the pool count it (an IPv4 address, an IPv6 network), if
/// the edge supplied its address.
pub fn client_address(req: &Request, config: &ServiceConfig) -> Option<String> {
    req.extensions()
        .get::<ClientAddr>()
        .map(|c| config.client_key(&c.0))
}

/// Refuse a request whose client the operator blocked (403 `blocked`), before any work.
pub async fn refuse_blocked(
    axum::extract::State(s): axum::extract::State<std::sync::Arc<verifier_service::Services>>,
    req: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    // Nothing blocked (the usual case): no client key is made for the check.
    if !s.blocks.is_empty()
        && let Some(client) = client_address(&req, &s.config)
        && s.blocks.client_blocked(&client)
    {
        return crate::respond::error(&verifier_service::errors::ApiError::Blocked, &s.config);
    }
    next.run(req).await
}

/// An address as API Gateway writes it (`sam local` adds a `/32` suffix): the bare IP.
pub fn normalize_source_ip(raw: &str) -> String {
    raw.split('/').next().unwrap_or(raw).trim().to_owned()
}
