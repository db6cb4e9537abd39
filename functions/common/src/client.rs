//! The client address: the edge's view of the caller, never a header the caller can set.
//! The local server puts the socket peer in a [`ClientAddr`] extension; on Lambda, the
//! function's main puts `requestContext.http.sourceIp` there.

use axum::extract::Request;
use verifier_core::ClientAddr;

/// The caller's address, if the edge supplied one.
pub fn client_address(req: &Request) -> Option<String> {
    req.extensions().get::<ClientAddr>().map(|c| c.0.clone())
}

/// An address as API Gateway writes it (`sam local` adds a `/32` suffix): the bare IP.
pub fn normalize_source_ip(raw: &str) -> String {
    raw.split('/').next().unwrap_or(raw).trim().to_owned()
}
