//! The events the HTTP functions serve — API Gateway HTTP API (payload format 2.0, what the
//! template's routes send) and function URLs, which share that shape — read into an
//! `http::Request` in one pass that borrows from the event, and the function's response
//! written back in the shape API Gateway reads.
//!
//! The caller's address (`requestContext.http.sourceIp`, never a header) is put in the
//! request as a [`ClientAddr`], and the domain the request came through as a [`DomainName`].

use axum::body::Body;
use axum::response::Response;
use base64::Engine as _;
use http::header::{COOKIE, HeaderName, HeaderValue, SET_COOKIE};
use http::{HeaderMap, Method, Request, Uri};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use verifier_service::ClientAddr;

/// The domain name API Gateway received the request on (`requestContext.domainName`).
#[derive(Debug, Clone)]
pub struct DomainName(pub String);

/// Why an event is not a request the functions can serve.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// Not an HTTP API or function URL event (no `requestContext.http`): answered to the
    /// Runtime API as an invocation error.
    #[error("not an API Gateway HTTP API (payload format 2.0) or function URL event")]
    NotHttp,
    /// An HTTP event whose method, path, header or body cannot form a request: answered 400.
    #[error("the HTTP event is malformed: {0}")]
    Malformed(&'static str),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(borrow, default)]
    raw_path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    raw_query_string: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cookies: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow, default)]
    headers: Option<HashMap<Cow<'a, str>, Cow<'a, str>>>,
    #[serde(borrow, default)]
    request_context: Option<Context<'a>>,
    #[serde(borrow, default)]
    body: Option<Cow<'a, str>>,
    #[serde(default)]
    is_base64_encoded: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Context<'a> {
    #[serde(borrow, default)]
    http: Option<HttpContext<'a>>,
    #[serde(borrow, default)]
    domain_name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HttpContext<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    source_ip: Option<Cow<'a, str>>,
}

/// The request an event carries.
pub fn request_of(event: &[u8]) -> Result<Request<Body>, EventError> {
    let event: Event<'_> = serde_json::from_slice(event).map_err(|_| EventError::NotHttp)?;
    let context = event.request_context.ok_or(EventError::NotHttp)?;
    let http = context.http.ok_or(EventError::NotHttp)?;
    let method =
        Method::from_bytes(http.method.as_bytes()).map_err(|_| EventError::Malformed("method"))?;
    let path = event.raw_path.as_deref().unwrap_or("/");
    let uri = match event.raw_query_string.as_deref() {
        Some(query) if !query.is_empty() => Uri::try_from(format!("{path}?{query}")),
        _ => Uri::try_from(path),
    }
    .map_err(|_| EventError::Malformed("path"))?;
    let body = match event.body {
        None => Body::empty(),
        Some(text) if event.is_base64_encoded => Body::from(
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(|_| EventError::Malformed("base64 body"))?,
        ),
        Some(Cow::Borrowed(text)) => Body::from(text.to_owned()),
        Some(Cow::Owned(text)) => Body::from(text),
    };
    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    for (name, value) in event.headers.iter().flatten() {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| EventError::Malformed("header name"))?;
        let value = HeaderValue::from_str(value).map_err(|_| EventError::Malformed("header"))?;
        headers.append(name, value);
    }
    if let Some(cookies) = event.cookies.filter(|c| !c.is_empty()) {
        let joined = cookies.join("; ");
        let value = HeaderValue::from_str(&joined).map_err(|_| EventError::Malformed("cookie"))?;
        headers.insert(COOKIE, value);
    }
    if let Some(ip) = http.source_ip {
        request
            .extensions_mut()
            .insert(ClientAddr(crate::client::normalize_source_ip(&ip)));
    }
    if let Some(domain) = context.domain_name {
        request
            .extensions_mut()
            .insert(DomainName(domain.into_owned()));
    }
    Ok(request)
}

/// API Gateway's reading of a function's answer (payload format 2.0).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    status_code: u16,
    headers: Headers<'a>,
    /// Always written, empty too: readers built on `aws_lambda_events` (cargo-lambda's
    /// emulator) require the field.
    cookies: Vec<Cow<'a, str>>,
    body: Cow<'a, str>,
    is_base64_encoded: bool,
}

/// The response's headers, each name once, repeated values joined with `, ` (payload 2.0 has
/// no multi-value headers); `Set-Cookie` goes to `cookies`.
struct Headers<'a>(&'a HeaderMap);

impl Serialize for Headers<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let names = self.0.keys().filter(|name| *name != SET_COOKIE);
        let mut map = serializer.serialize_map(None)?;
        for name in names {
            let mut values = self.0.get_all(name).iter();
            let Some(first) = values.next() else { continue };
            let mut joined = String::from_utf8_lossy(first.as_bytes()).into_owned();
            for value in values {
                joined.push_str(", ");
                joined.push_str(&String::from_utf8_lossy(value.as_bytes()));
            }
            map.serialize_entry(name.as_str(), &joined)?;
        }
        map.end()
    }
}

/// The event's answer: the response's status, headers and body (text when it is UTF-8 and
/// not content-encoded, base64 otherwise).
pub async fn answer_of(response: Response) -> Result<Vec<u8>, axum::Error> {
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await?;
    let encoded = parts.headers.contains_key(http::header::CONTENT_ENCODING);
    let (body, is_base64_encoded) = match std::str::from_utf8(&bytes) {
        Ok(text) if !encoded => (Cow::Borrowed(text), false),
        _ => (
            Cow::Owned(base64::engine::general_purpose::STANDARD.encode(&bytes)),
            true,
        ),
    };
    let cookies = parts
        .headers
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        .collect();
    let answer = Answer {
        status_code: parts.status.as_u16(),
        headers: Headers(&parts.headers),
        cookies,
        body,
        is_base64_encoded,
    };
    Ok(serde_json::to_vec(&answer).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    async fn body_of(request: Request<Body>) -> Vec<u8> {
        request
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec()
    }

    #[tokio::test]
    async fn an_http_api_event_is_its_request() {
        let event = json!({
            "version": "2.0", "rawPath": "/verify/schema", "rawQueryString": "a=1&b=%20",
            "cookies": ["s=1", "t=2"],
            "headers": {"content-type": "application/json", "x-forwarded-for": "203.0.113.9"},
            "requestContext": {"domainName": "abc.execute-api.us-east-1.amazonaws.com",
                               "http": {"method": "POST", "sourceIp": "198.51.100.7/32"}},
            "body": "{\"task_id\":\"té\"}", "isBase64Encoded": false
        });
        let request = request_of(event.to_string().as_bytes()).expect("request");
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.uri(), "/verify/schema?a=1&b=%20");
        assert_eq!(request.headers()["content-type"], "application/json");
        assert_eq!(request.headers()["cookie"], "s=1; t=2");
        // The address is the request context's, never the forwarded-for header.
        assert_eq!(
            request
                .extensions()
                .get::<ClientAddr>()
                .map(|a| a.0.as_str()),
            Some("198.51.100.7")
        );
        assert_eq!(
            request
                .extensions()
                .get::<DomainName>()
                .map(|d| d.0.as_str()),
            Some("abc.execute-api.us-east-1.amazonaws.com")
        );
        assert_eq!(body_of(request).await, "{\"task_id\":\"té\"}".as_bytes());
    }

    #[tokio::test]
    async fn a_base64_body_is_decoded() {
        let event = json!({"rawPath": "/mcp", "body": "eyJhIjoxfQ==", "isBase64Encoded": true,
                           "requestContext": {"http": {"method": "POST"}}});
        let request = request_of(event.to_string().as_bytes()).expect("request");
        assert_eq!(body_of(request).await, b"{\"a\":1}");
    }

    #[test]
    fn other_events_and_malformed_ones_are_told_apart() {
        for other in [
            &b"{}"[..],
            b"[1]",
            b"not json",
            br#"{"requestContext":{"stage":"x"}}"#,
        ] {
            assert!(matches!(request_of(other), Err(EventError::NotHttp)));
        }
        for (event, what) in [
            (
                json!({"rawPath": "/a b", "requestContext": {"http": {"method": "GET"}}}),
                "path",
            ),
            (
                json!({"rawPath": "/", "requestContext": {"http": {"method": "G T"}}}),
                "method",
            ),
            (
                json!({"rawPath": "/", "headers": {"bad name": "x"}, "requestContext": {"http": {"method": "GET"}}}),
                "header name",
            ),
            (
                json!({"rawPath": "/", "body": "%%%", "isBase64Encoded": true, "requestContext": {"http": {"method": "GET"}}}),
                "base64 body",
            ),
        ] {
            match request_of(event.to_string().as_bytes()) {
                Err(EventError::Malformed(got)) => assert_eq!(got, what),
                _ => panic!("{event} should be malformed ({what})"),
            }
        }
    }

    #[tokio::test]
    async fn an_answer_is_written_as_api_gateway_reads_it() {
        let response = Response::builder()
            .status(402)
            .header("content-type", "application/json")
            .header("vary", "origin")
            .header("vary", "accept")
            .header("set-cookie", "a=1")
            .body(Body::from("{\"error\":\"payment_required\"}"))
            .expect("response");
        let answer: Value =
            serde_json::from_slice(&answer_of(response).await.expect("answer")).expect("JSON");
        assert_eq!(
            answer,
            json!({"statusCode": 402, "headers": {"content-type": "application/json", "vary": "origin, accept"},
                   "cookies": ["a=1"], "body": "{\"error\":\"payment_required\"}", "isBase64Encoded": false})
        );
        let binary = Response::builder()
            .header("content-encoding", "gzip")
            .body(Body::from(vec![0x1f, 0x8b, 0xff]))
            .expect("response");
        let answer: Value =
            serde_json::from_slice(&answer_of(binary).await.expect("answer")).expect("JSON");
        assert_eq!(
            (answer["body"].as_str(), answer["isBase64Encoded"].as_bool()),
            (Some("H4v/"), Some(true))
        );
        assert_eq!(answer["cookies"], json!([]));
    }
}
