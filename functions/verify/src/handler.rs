//! The verify handlers: size limits, content type, then the verification call (which parses
//! the body, on the bounded pool when it is large).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use function_common::body::read_body;
use function_common::respond::{self, payment_input};
use function_common::{client_address, reply};
use std::sync::Arc;
use verifier_service::errors::ApiError;
use verifier_service::listings::Listing;
use verifier_service::pricing::HEAVY_BODY_BYTES;
use verifier_service::telemetry::Transport;
use verifier_service::verify::{BodyCall, DESCRIPTION, probe, verify_body};
use verifier_service::{Resource, Services};

/// `POST /verify/schema`.
pub async fn verify_schema(state: State<Arc<Services>>, req: Request) -> Response {
    handle(state, req, "/verify/schema").await
}

/// `POST /verify/deliverable`: the same check under a second name.
pub async fn verify_deliverable(state: State<Arc<Services>>, req: Request) -> Response {
    handle(state, req, "/verify/deliverable").await
}

/// The fallback of a route asked with the wrong method.
pub async fn method_not_allowed(State(s): State<Arc<Services>>) -> Response {
    respond::error(&ApiError::MethodNotAllowed, &s.config)
}

fn is_json(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        }
    }
}

async fn handle(State(s): State<Arc<Services>>, req: Request, path: &'static str) -> Response {
    let config = &s.config;
    let Some(client) = client_address(&req, config) else {
        tracing::error!("no client address on the request; the edge must supply it");
        return respond::error(&ApiError::Internal, config);
    };
    let (parts, body): (_, Body) = req.into_parts();
    // A large body counts against its client's share of the costly-request pool before it is
    // read, so no address has more of them in flight than its share.
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    let share = match declared {
        Some(n) if n > HEAVY_BODY_BYTES && n <= config.hard_body_limit => {
            match s.pool.share_waiting(&client).await {
                Ok(share) => Some(share),
                Err(e) => return respond::error_closing(&e, config),
            }
        }
        _ => None,
    };
    let bytes = match read_body(&parts, body, config).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let resource = Resource {
        url: config.url(path),
        description: DESCRIPTION,
        listing: Listing::HTTP_VERIFY,
        path_param: None,
    };
    if bytes.is_empty() {
        // A POST with no body is an x402 discovery probe.
        return reply(probe(&s, &client, resource).await, config);
    }
    if !is_json(&parts.headers) {
        return respond::error(&ApiError::UnsupportedMediaType, config);
    }
    let payment = payment_input(&parts.headers);
    let call = BodyCall {
        client: &client,
        size: bytes.len(),
        transport: Transport::Rest,
        body: bytes,
        payment: &payment,
        resource,
        share,
    };
    reply(verify_body(&s, call).await, config)
}
