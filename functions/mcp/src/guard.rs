//! `/mcp` speaks only in the service's own shapes, and never with the caller's text.
//!
//! Before rmcp sees a request: the body is read whole (413/400 in the error shape), and a body
//! that is not one JSON-RPC message gets its JSON-RPC error here — `-32700` for invalid JSON,
//! `-32600` for a batch, a missing or wrong `jsonrpc`, a method that is not a string, or an `id`
//! that is null, fractional, beyond 64 bits or longer than [`MAX_ID_CHARS`]. After rmcp: an
//! HTTP-level refusal (400, 403, 405, 406, 415: rmcp answers those in plain text, some quoting
//! the caller's header) becomes the error shape with `Content-Type: application/json`, and a
//! JSON-RPC error keeps its code and id but gets the standard message for its code and no `data`
//! — except MCP's unsupported-protocol-version error, whose `data` the spec requires: it keeps
//! the server's own `supported` list and the `requested` version only when that is a plain
//! version token (see [`version_token`]). A `tools/call`'s object arguments go to the tool
//! beside rmcp as the bytes received (the tool parses them as REST parses a body), and its
//! answer comes back the same way ([`crate::handoff`]), so neither is parsed or written a
//! second time.

use crate::handoff::{self, Handoff};
use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use function_common::respond;
use serde_json::{Value, json};
use verifier_engine::json::{JsonError, parse_strict_value};
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;

/// Longest string `id` answered (a JSON-RPC answer repeats the id).
pub const MAX_ID_CHARS: usize = 128;

/// Largest answer of rmcp read back to be checked (tool results are a few kilobytes).
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// The standard message of a JSON-RPC error code (never the caller's text).
pub fn standard_message(code: i64) -> &'static str {
    match code {
        -32700 => "Parse error: the body is not valid JSON",
        -32600 => {
            "Invalid Request: send one JSON-RPC 2.0 request object (no batches, no repeated keys, params as an object)"
        }
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32603 => "Internal error",
        -32002 => "Resource not found",
        -32020 => "The MCP-Protocol-Version header does not match the request",
        -32021 => "Missing required client capability",
        -32022 => "Unsupported protocol version",
        _ => "Request failed",
    }
}

/// A JSON-RPC error answer.
fn rpc_error(status: StatusCode, id: Value, code: i64) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": standard_message(code)},
    });
    respond::json(
        status,
        serde_json::to_vec(&body).unwrap_or_default(),
        respond::PricePath::NotCharged,
    )
}

/// Whether an `id` may be answered as sent: a string of at most [`MAX_ID_CHARS`] characters or
/// an integer within 64 bits (a notification has none).
fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(s) => s.chars().count() <= MAX_ID_CHARS,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// The message, or the refusal of a body that is not one well-formed JSON-RPC message.
fn check_message(bytes: &[u8]) -> Result<Value, Response> {
    let message = match parse_strict_value(bytes) {
        Ok(message) => message,
        // A repeated key: which of its values was meant is unknowable (and the receipt hashes
        // what was sent), as on the REST routes.
        Err(JsonError::DuplicateKey { .. }) => {
            return Err(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600));
        }
        Err(JsonError::Syntax { .. } | JsonError::Truncated) => {
            return Err(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700));
        }
        // Numbers the strict parser refuses are the tool's to answer (naming the field).
        Err(_) => match serde_json::from_slice::<Value>(bytes) {
            Ok(message) => message,
            Err(_) => return Err(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700)),
        },
    };
    match refusal(&message) {
        Some(refused) => Err(refused),
        None => Ok(message),
    }
}

/// The refusal of a parsed message that is not one well-formed JSON-RPC message, if it is not.
fn refusal(message: &Value) -> Option<Response> {
    let Value::Object(map) = message else {
        return Some(rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600));
    };
    let id = map.get("id");
    let id_ok = id.is_none_or(valid_id);
    // MCP's requests and notifications take their params as an object, or none.
    let well_formed = map.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && (map.get("method").is_some_and(Value::is_string)
            || map.contains_key("result")
            || map.contains_key("error"))
        && map.get("params").is_none_or(Value::is_object);
    let echo = || id.filter(|v| valid_id(v)).cloned().unwrap_or(Value::Null);
    if !id_ok || !well_formed {
        return Some(rpc_error(StatusCode::BAD_REQUEST, echo(), -32600));
    }
    // A tool call's arguments are an object (rmcp would answer "method not found").
    let arguments = map.get("params").and_then(|p| p.get("arguments"));
    if map.get("method").and_then(Value::as_str) == Some("tools/call")
        && arguments.is_some_and(|a| !a.is_object())
    {
        return Some(rpc_error(StatusCode::OK, echo(), -32602));
    }
    None
}

/// The error shape for an HTTP-level refusal of rmcp's.
fn refusal_of(status: StatusCode) -> ApiError {
    match status.as_u16() {
        400 => ApiError::BadRequest,
        403 => ApiError::Forbidden,
        404 => ApiError::NotFound,
        405 => ApiError::MethodNotAllowed,
        406 => ApiError::NotAcceptable,
        413 => ApiError::BodyTooLarge { limit: 0 },
        415 => ApiError::UnsupportedMediaType,
        _ => ApiError::Internal,
    }
}

/// A JSON-RPC error answer of rmcp's with the standard message for its code and no `data`;
/// `None` when the answer is not a JSON-RPC error.
fn standard_error(bytes: &[u8]) -> Option<Vec<u8>> {
    if is_result(bytes) {
        return None;
    }
    // Otherwise scanned, not built into values: whether the message has a top-level `error`
    // member (one inside a result's content does not count).
    #[derive(serde::Deserialize)]
    struct Envelope {
        error: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Envelope>(bytes).ok()?.error?;
    let mut answer: Value = serde_json::from_slice(bytes).ok()?;
    let error = answer.get_mut("error")?.as_object_mut()?;
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    error.insert("message".into(), standard_message(code).into());
    let data = error.remove("data");
    if code == UNSUPPORTED_PROTOCOL_VERSION {
        error.insert("data".into(), version_data(data.as_ref()));
    }
    serde_json::to_vec(&answer).ok()
}

/// Whether rmcp's answer is a result, read from its first members as rmcp writes them
/// (`{"jsonrpc":"2.0","id":<id>,"result":…`) without reading the result itself (tool results
/// are most answers, and kilobytes long). Any other layout answers `false`, and the caller
/// scans the whole message.
fn is_result(bytes: &[u8]) -> bool {
    result_at(bytes).is_some()
}

/// Where the result of rmcp's answer starts (after `"result":`), read as [`is_result`] reads.
fn result_at(bytes: &[u8]) -> Option<usize> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &[u8] = br#","result":"#;
    let rest = bytes.strip_prefix(HEAD)?;
    let mut ids = serde_json::Deserializer::from_slice(rest).into_iter::<serde::de::IgnoredAny>();
    ids.next()?.ok()?;
    let after_id = HEAD.len() + ids.byte_offset();
    bytes[after_id..]
        .starts_with(RESULT)
        .then_some(after_id + RESULT.len())
}

/// MCP's "unsupported protocol version" error code.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Whether `text` is a plain version token (`2025-11-25`, `draft-1.0`): 1 to 32 characters of
/// ASCII letters, digits, `.`, `-` and `_`. Only such a requested version is repeated.
pub fn version_token(text: &str) -> bool {
    (1..=32).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The `data` of an unsupported-version error: the versions rmcp supports and the requested
/// one when it is a [`version_token`].
fn version_data(data: Option<&Value>) -> Value {
    let tokens = |v: Option<&Value>| -> Vec<Value> {
        v.and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter(|x| x.as_str().is_some_and(version_token))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    let supported = tokens(data.and_then(|d| d.get("supported")));
    let mut out = serde_json::Map::new();
    if let Some(requested) = data
        .and_then(|d| d.get("requested"))
        .and_then(Value::as_str)
        .filter(|r| version_token(r))
    {
        out.insert("requested".into(), requested.into());
    }
    out.insert("supported".into(), supported.into());
    Value::Object(out)
}

/// The guard around rmcp's service.
pub async fn guard(req: Request, next: Next, config: &ServiceConfig) -> Response {
    if req.method() != axum::http::Method::POST {
        return allow_post(respond::error(&ApiError::MethodNotAllowed, config));
    }
    let (mut parts, body) = req.into_parts();
    let bytes = match function_common::body::read_body(&parts, body, config).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let json_body = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json_body {
        return respond::error(&ApiError::UnsupportedMediaType, config);
    }
    parts
        .extensions
        .insert(verifier_service::ReceivedBytes(bytes.len()));
    let Some(arguments) = handoff::arguments_of(&bytes) else {
        if let Err(refused) = check_message(&bytes) {
            return refused;
        }
        let answer = next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
        return restate(answer, config).await;
    };
    let envelope = handoff::without_arguments(&bytes, arguments.clone());
    let id = match check_message(&envelope) {
        Ok(message) => message.get("id").cloned().unwrap_or(Value::Null),
        Err(refused) => return refused,
    };
    let handoff = Handoff::with_arguments(bytes.slice(arguments));
    parts.extensions.insert(handoff.clone());
    parts
        .headers
        .insert(header::CONTENT_LENGTH, envelope.len().into());
    let answer = next
        .run(Request::from_parts(parts, Body::from(envelope)))
        .await;
    if let Some(code) = handoff.take_refusal()
        && ran(&answer)
    {
        return rpc_error(StatusCode::BAD_REQUEST, id, code);
    }
    match handoff.take_answer() {
        Some(result) => answer_with(answer, &result, config).await,
        None => restate(answer, config).await,
    }
}

/// Whether rmcp's answer is in JSON.
fn is_json(answer: &Response) -> bool {
    answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"))
}

/// Whether rmcp's answer is the tool's (a 200 in JSON: rmcp's checks let the call run).
fn ran(answer: &Response) -> bool {
    answer.status() == StatusCode::OK && is_json(answer)
}

/// rmcp's response with the tool's answer put in place of its marks ([`handoff::fill`]), when
/// rmcp answered the call with a result (the tool ran: every check of rmcp's let it through);
/// otherwise rmcp's answer, restated.
async fn answer_with(answer: Response, result: &[u8], config: &ServiceConfig) -> Response {
    if !ran(&answer) {
        return restate(answer, config).await;
    }
    let (mut parts, body) = answer.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ANSWER_BYTES).await else {
        return respond::error(&ApiError::Internal, config);
    };
    let filled = result_at(&bytes).and_then(|at| {
        handoff::fill(&bytes, at, result).or_else(|| {
            tracing::warn!("the MCP result's marks were not found; writing it from its parts");
            handoff::fill_parsed(&bytes, result)
        })
    });
    let Some(filled) = filled else {
        // rmcp answered an error after the tool ran (it never does).
        tracing::error!("the MCP answer had no place for the tool's result");
        return restate(Response::from_parts(parts, Body::from(bytes)), config).await;
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(filled))
}

/// rmcp's answer, in our shapes.
async fn restate(answer: Response, config: &ServiceConfig) -> Response {
    let status = answer.status();
    let is_json = is_json(&answer);
    if !status.is_success() && !is_json {
        let error = refusal_of(status);
        let response = respond::error(&error, config);
        return if error == ApiError::MethodNotAllowed {
            allow_post(response)
        } else {
            response
        };
    }
    if !is_json {
        return answer;
    }
    let (parts, body) = answer.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ANSWER_BYTES).await else {
        return respond::error(&ApiError::Internal, config);
    };
    match standard_error(&bytes) {
        Some(restated) => {
            let mut response = Response::from_parts(parts, Body::from(restated));
            response.headers_mut().remove(header::CONTENT_LENGTH);
            response
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

fn allow_post(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::ALLOW, axum::http::HeaderValue::from_static("POST"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(r: &Response) -> u16 {
        r.status().as_u16()
    }

    #[test]
    fn bodies_that_are_not_one_json_rpc_message_are_refused_without_their_text() {
        for (body, status) in [
            (&b"{not json"[..], 400),
            (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 400),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
                400,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1267650600228229401496703205376,\"method\":\"ping\"}",
                400,
            ),
            (b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", 400),
            (b"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", 400),
            (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", 400),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}",
                400,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                400,
            ),
        ] {
            let r = check_message(body).expect_err("refused");
            assert_eq!(code_of(&r), status);
        }
        let long_id = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{}\",\"method\":\"ping\"}}",
            "x".repeat(200)
        );
        assert!(check_message(long_id.as_bytes()).is_err());
        for ok in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\"}",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
        ] {
            assert!(check_message(ok).is_ok());
        }
    }

    #[test]
    fn the_unsupported_version_error_keeps_its_data_but_only_plain_tokens() {
        let rmcp = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"requested":"1999-01-01","supported":["2026-07-28"]}}}"#;
        let out: Value =
            serde_json::from_slice(&standard_error(rmcp).expect("error")).expect("json");
        assert_eq!(
            out["error"]["data"],
            json!({"requested": "1999-01-01", "supported": ["2026-07-28"]})
        );
        let marked = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x","data":{"requested":"<b>ECHO</b>","supported":["2026-07-28"]}}}"#;
        let out: Value =
            serde_json::from_slice(&standard_error(marked).expect("error")).expect("json");
        assert_eq!(out["error"]["data"], json!({"supported": ["2026-07-28"]}));
        assert_eq!(out["error"]["message"], "Unsupported protocol version");
    }

    #[test]
    fn rpc_errors_keep_their_code_and_id_but_not_the_callers_text() {
        let rmcp = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"<b>ECHO</b>","data":{"x":"<b>"}}}"#;
        let restated: Value =
            serde_json::from_slice(&standard_error(rmcp).expect("an error")).expect("json");
        assert_eq!(
            restated,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found"}})
        );
        assert!(standard_error(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#).is_none());
        assert!(is_result(br#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#));
        assert!(is_result(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#));
        assert!(!is_result(
            br#"{"jsonrpc":"2.0","id":"a\",\"result\":","error":{}}"#
        ));
        // A result that mentions an error in its content is a result.
        assert!(
            standard_error(
                br#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"error":"x","flags":[{"severity":"error"}]}}}"#
            )
            .is_none()
        );
    }
}
