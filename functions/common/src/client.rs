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

/// An address as API Gateway writes it (`sam local` adds a `/32` suffix): the bare IP.
pub fn normalize_source_ip(raw: &str) -> String {
    raw.split('/').next().unwrap_or(raw).trim().to_owned()
}
