//! A blocking client of the Lambda Runtime API
//! (<https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html>): one keep-alive HTTP/1.1
//! connection to `AWS_LAMBDA_RUNTIME_API`, each exchange one `write` of the whole request and
//! the reads of its answer (framed by `Content-Length` or chunked, parsed with `httparse`).
//!
//! Blocking on purpose: a function serves one event at a time, so it waits for the next one in
//! one `read` (no pooled connections, no connection task handing the answer to another).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The Runtime API's path prefix.
const VERSION: &str = "/2018-06-01/runtime";
/// The most an answer's head may take (the Runtime API's are a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;
/// The most an event may take: Lambda's own limit on a synchronous invocation's payload.
const MAX_EVENT: usize = 6 * 1024 * 1024 + 64 * 1024;
/// How long an error report waits for its acknowledgement (Lambda's comes at once): a report
/// nobody acknowledges must not keep a failed function alive.
const REPORT_WAIT: Duration = Duration::from_secs(5);

/// Why the Runtime API could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("AWS_LAMBDA_RUNTIME_API must be set (host:port of the Lambda Runtime API)")]
    Unset,
    #[error("AWS_LAMBDA_RUNTIME_API is not host:port or http://host:port[/path]")]
    Address,
    #[error("the Runtime API cannot be reached: {0}")]
    Io(#[from] std::io::Error),
    #[error("the Runtime API's answer is not valid HTTP/1.1: {0}")]
    Framing(&'static str),
    #[error("the Runtime API answered {status} to {what}")]
    Status { status: u16, what: &'static str },
    #[error("the Runtime API's event has no valid Lambda-Runtime-Aws-Request-Id")]
    RequestId,
}

/// One event handed over by `…/invocation/next`.
#[derive(Debug)]
pub struct Invocation {
    /// `Lambda-Runtime-Aws-Request-Id` (checked to be a safe path segment).
    pub request_id: String,
    /// The event's JSON.
    pub body: Vec<u8>,
}

/// An answer of the Runtime API: status and body (the headers the client needs are read as
/// they are parsed).
struct Answer {
    status: u16,
    request_id: Option<String>,
    body: Vec<u8>,
}

/// The client: where the Runtime API is and the connection to it (opened on first use and
/// again after it closes).
pub struct RuntimeApi {
    authority: String,
    prefix: String,
    connection: Option<Connection>,
}

struct Connection {
    stream: TcpStream,
    /// Bytes read past the previous answer's end.
    buffer: Vec<u8>,
}

impl RuntimeApi {
    /// The client for `AWS_LAMBDA_RUNTIME_API` (Lambda sets `host:port`; a URL with a path
    /// prefix is also taken, as the emulated deployment gives one).
    pub fn from_env() -> Result<Self, ApiError> {
        let value = std::env::var("AWS_LAMBDA_RUNTIME_API").map_err(|_| ApiError::Unset)?;
        Self::new(&value)
    }

    /// The client for `address` (`host:port` or `http://host:port[/path]`).
    pub fn new(address: &str) -> Result<Self, ApiError> {
        let rest = address.trim();
        let rest = rest
            .strip_prefix("http://")
            .unwrap_or(rest)
            .trim_end_matches('/');
        let (authority, prefix) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        let printable = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
        if authority.is_empty()
            || !authority.contains(':')
            || !printable(authority)
            || !printable(prefix)
        {
            return Err(ApiError::Address);
        }
        Ok(RuntimeApi {
            authority: authority.to_owned(),
            prefix: prefix.to_owned(),
            connection: None,
        })
    }

    /// Wait for the next event (`GET …/invocation/next`; no time limit: Lambda answers when
    /// there is one).
    pub fn next_event(&mut self) -> Result<Invocation, ApiError> {
        let path = format!("{}{VERSION}/invocation/next", self.prefix);
        let answer = self.exchange("GET", &path, &[], &[], None)?;
        if answer.status != 200 {
            return Err(ApiError::Status {
                status: answer.status,
                what: "the next event",
            });
        }
        let request_id = answer.request_id.ok_or(ApiError::RequestId)?;
        Ok(Invocation {
            request_id,
            body: answer.body,
        })
    }

    /// Send an event's answer (`POST …/invocation/{id}/response`).
    pub fn respond(&mut self, request_id: &str, body: &[u8]) -> Result<(), ApiError> {
        let path = format!("{}{VERSION}/invocation/{request_id}/response", self.prefix);
        self.accepted(&path, &[], body, "the answer", None)
    }

    /// Report that an event could not be handled (`POST …/invocation/{id}/error`).
    pub fn fail(&mut self, request_id: &str, kind: &str, message: &str) -> Result<(), ApiError> {
        let path = format!("{}{VERSION}/invocation/{request_id}/error", self.prefix);
        self.report(&path, kind, message, "an error")
    }

    /// Report that init failed (`POST …/init/error`); Lambda then logs it and retries init.
    pub fn init_failed(&mut self, kind: &str, message: &str) -> Result<(), ApiError> {
        let path = format!("{}{VERSION}/init/error", self.prefix);
        self.report(&path, kind, message, "an init error")
    }

    /// Send an error report (the Runtime API's error document, its type also as a header),
    /// waiting at most [`REPORT_WAIT`] for the acknowledgement.
    fn report(
        &mut self,
        path: &str,
        kind: &str,
        message: &str,
        what: &'static str,
    ) -> Result<(), ApiError> {
        let body = error_body(kind, message);
        let kind_header = [("Lambda-Runtime-Function-Error-Type", kind)];
        self.accepted(path, &kind_header, &body, what, Some(REPORT_WAIT))
    }

    fn accepted(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        what: &'static str,
        wait: Option<Duration>,
    ) -> Result<(), ApiError> {
        let answer = self.exchange("POST", path, headers, body, wait)?;
        match answer.status {
            200..=299 => Ok(()),
            status => Err(ApiError::Status { status, what }),
        }
    }

    /// One request and its answer (waiting at most `wait` for it, when given). A kept
    /// connection the Runtime API closed while idle is opened again once, when nothing of the
    /// answer had arrived.
    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        wait: Option<Duration>,
    ) -> Result<Answer, ApiError> {
        let mut request = Vec::with_capacity(160 + body.len());
        request.extend_from_slice(method.as_bytes());
        request.push(b' ');
        request.extend_from_slice(path.as_bytes());
        request.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        request.extend_from_slice(self.authority.as_bytes());
        for (name, value) in headers {
            request.extend_from_slice(format!("\r\n{name}: {value}").as_bytes());
        }
        if method == "POST" {
            request.extend_from_slice(b"\r\nContent-Type: application/json");
        }
        request.extend_from_slice(format!("\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);

        let reused = self.connection.is_some();
        match self.try_exchange(&request, wait) {
            Err(Attempt::BeforeAnswer(_)) if reused => {
                self.connection = None;
                self.try_exchange(&request, wait)
                    .map_err(Attempt::into_error)
            }
            other => other.map_err(Attempt::into_error),
        }
    }

    fn try_exchange(&mut self, request: &[u8], wait: Option<Duration>) -> Result<Answer, Attempt> {
        if self.connection.is_none() {
            let stream = TcpStream::connect(&self.authority).map_err(Attempt::BeforeAnswer)?;
            stream.set_nodelay(true).map_err(Attempt::BeforeAnswer)?;
            self.connection = Some(Connection {
                stream,
                buffer: Vec::with_capacity(8 * 1024),
            });
        }
        let Some(connection) = self.connection.as_mut() else {
            return Err(Attempt::BeforeAnswer(
                std::io::ErrorKind::NotConnected.into(),
            ));
        };
        connection
            .stream
            .set_read_timeout(wait)
            .map_err(Attempt::BeforeAnswer)?;
        connection
            .stream
            .write_all(request)
            .map_err(Attempt::BeforeAnswer)?;
        let result = connection.read_answer();
        if !matches!(result, Ok((_, true))) {
            self.connection = None;
        }
        result.map(|(answer, _)| answer)
    }
}

/// How an exchange failed: before any of the answer arrived (the request may be sent again on
/// a new connection) or after.
enum Attempt {
    BeforeAnswer(std::io::Error),
    During(ApiError),
}

impl Attempt {
    fn into_error(self) -> ApiError {
        match self {
            Attempt::BeforeAnswer(e) => ApiError::Io(e),
            Attempt::During(e) => e,
        }
    }
}

impl Connection {
    /// Read one answer; `true` with it when the connection may be used again.
    fn read_answer(&mut self) -> Result<(Answer, bool), Attempt> {
        let head = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&self.buffer) {
                Ok(httparse::Status::Complete(length)) => {
                    break Head::of(&response, length).map_err(Attempt::During)?;
                }
                Ok(httparse::Status::Partial) if self.buffer.len() < MAX_HEAD => {
                    let fresh = self.buffer.is_empty();
                    match self.fill() {
                        Ok(()) => {}
                        Err(e) if fresh => return Err(Attempt::BeforeAnswer(e)),
                        Err(e) => return Err(Attempt::During(e.into())),
                    }
                }
                Ok(httparse::Status::Partial) => {
                    return Err(Attempt::During(ApiError::Framing("head too long")));
                }
                Err(_) => return Err(Attempt::During(ApiError::Framing("head"))),
            }
        };
        self.buffer.drain(..head.length);
        let body = match head.framing {
            Framing::Length(length) => self.take(length),
            Framing::Chunked => self.take_chunked(),
        }
        .map_err(Attempt::During)?;
        Ok((
            Answer {
                status: head.status,
                request_id: head.request_id,
                body,
            },
            head.keep_alive,
        ))
    }

    /// Read more bytes into the buffer; the peer closing is an error.
    fn fill(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let read = self.stream.read(&mut chunk)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(())
    }

    fn take(&mut self, length: usize) -> Result<Vec<u8>, ApiError> {
        if length > MAX_EVENT {
            return Err(ApiError::Framing("body over the event limit"));
        }
        while self.buffer.len() < length {
            self.fill()?;
        }
        let rest = self.buffer.split_off(length);
        Ok(std::mem::replace(&mut self.buffer, rest))
    }

    fn take_chunked(&mut self) -> Result<Vec<u8>, ApiError> {
        let mut body = Vec::new();
        loop {
            let line = self.line()?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size =
                usize::from_str_radix(size, 16).map_err(|_| ApiError::Framing("chunk size"))?;
            if body.len().saturating_add(size) > MAX_EVENT {
                return Err(ApiError::Framing("body over the event limit"));
            }
            if size == 0 {
                // Trailers, if any, end with an empty line.
                while !self.line()?.is_empty() {}
                return Ok(body);
            }
            body.extend_from_slice(&self.take(size)?);
            if !self.line()?.is_empty() {
                return Err(ApiError::Framing("chunk end"));
            }
        }
    }

    /// One CRLF-ended line, without its CRLF.
    fn line(&mut self) -> Result<String, ApiError> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buffer[..at]).into_owned();
                self.buffer.drain(..at + 2);
                return Ok(line);
            }
            if self.buffer.len() > MAX_HEAD {
                return Err(ApiError::Framing("line too long"));
            }
            self.fill()?;
        }
    }
}

enum Framing {
    Length(usize),
    Chunked,
}

/// What the client reads from an answer's head.
struct Head {
    status: u16,
    length: usize,
    framing: Framing,
    keep_alive: bool,
    request_id: Option<String>,
}

impl Head {
    fn of(response: &httparse::Response<'_, '_>, length: usize) -> Result<Self, ApiError> {
        let status = response.code.ok_or(ApiError::Framing("status"))?;
        let mut framing = Framing::Length(0);
        let mut keep_alive = response.version == Some(1);
        let mut request_id = None;
        for header in response.headers.iter() {
            let value = std::str::from_utf8(header.value).unwrap_or_default().trim();
            if header.name.eq_ignore_ascii_case("content-length") {
                let length = value
                    .parse()
                    .map_err(|_| ApiError::Framing("content-length"))?;
                framing = Framing::Length(length);
            } else if header.name.eq_ignore_ascii_case("transfer-encoding")
                && value.to_ascii_lowercase().ends_with("chunked")
            {
                framing = Framing::Chunked;
            } else if header.name.eq_ignore_ascii_case("connection") {
                keep_alive = !value.eq_ignore_ascii_case("close");
            } else if header
                .name
                .eq_ignore_ascii_case("lambda-runtime-aws-request-id")
            {
                request_id = safe_segment(value).then(|| value.to_owned());
            }
        }
        Ok(Head {
            status,
            length,
            framing,
            keep_alive,
            request_id,
        })
    }
}

/// Whether `id` can stand in a request path as it is (Lambda's are UUIDs).
fn safe_segment(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The Runtime API's error document.
fn error_body(kind: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "errorType": kind, "errorMessage": message }))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::TcpListener;

    /// A Runtime API stand-in: answers each request read on each accepted connection with the
    /// next of `answers`, and hands back what it was sent.
    fn serve(
        answers: Vec<Vec<u8>>,
        close_after_each: bool,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut answers = answers.into_iter();
            'accept: for stream in listener.incoming() {
                let stream = stream.expect("accept");
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut writer = stream;
                loop {
                    let mut head = String::new();
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).expect("read") == 0 {
                            continue 'accept;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().expect("length");
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("body");
                    seen.push(format!("{head}{}", String::from_utf8_lossy(&body)));
                    let Some(answer) = answers.next() else {
                        return seen;
                    };
                    writer.write_all(&answer).expect("write");
                    if answers.len() == 0 {
                        return seen;
                    }
                    if close_after_each {
                        continue 'accept;
                    }
                }
            }
            seen
        });
        (address, handle)
    }

    fn event(id: &str, body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nLambda-Runtime-Aws-Request-Id: {id}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    const ACCEPTED: &[u8] =
        b"HTTP/1.1 202 Accepted\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}\n";

    #[test]
    fn events_and_answers_share_one_connection() {
        let (address, server) = serve(
            vec![
                event("a-1", "{\"x\":1}"),
                ACCEPTED.to_vec(),
                event("b-2", "{}"),
            ],
            false,
        );
        let mut api = RuntimeApi::new(&format!("http://{address}/.rt/verify")).expect("address");
        let first = api.next_event().expect("event");
        assert_eq!(
            (first.request_id.as_str(), first.body.as_slice()),
            ("a-1", &b"{\"x\":1}"[..])
        );
        api.respond("a-1", b"{\"statusCode\":200}")
            .expect("accepted");
        let second = api.next_event().expect("event");
        assert_eq!(second.request_id, "b-2");
        drop(api);
        let seen = server.join().expect("server");
        assert!(
            seen[0].starts_with("GET /.rt/verify/2018-06-01/runtime/invocation/next HTTP/1.1\r\n")
        );
        assert!(seen[1].starts_with(
            "POST /.rt/verify/2018-06-01/runtime/invocation/a-1/response HTTP/1.1\r\n"
        ));
        assert!(
            seen[1].ends_with("\r\n\r\n{\"statusCode\":200}"),
            "{}",
            seen[1]
        );
    }

    #[test]
    fn a_chunked_event_and_a_closed_connection_are_read() {
        let chunked = b"HTTP/1.1 200 OK\r\nLambda-Runtime-Aws-Request-Id: c-3\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n".to_vec();
        let (address, server) = serve(vec![chunked, event("d-4", "{}")], true);
        let mut api = RuntimeApi::new(&address).expect("host:port");
        assert_eq!(api.next_event().expect("chunked").body, b"{\"a\":1}");
        // The stand-in closed the connection after its answer: the next request opens another.
        assert_eq!(api.next_event().expect("reconnected").request_id, "d-4");
        drop(api);
        assert_eq!(server.join().expect("server").len(), 2);
    }

    #[test]
    fn errors_are_reported_in_the_runtime_api_shape() {
        let (address, server) = serve(vec![ACCEPTED.to_vec(), ACCEPTED.to_vec()], false);
        let mut api = RuntimeApi::new(&address).expect("address");
        api.fail("e-5", "UnsupportedEvent", "not an HTTP API event")
            .expect("accepted");
        api.init_failed("Runtime.InitError", "VERIFIER_TABLE must be set")
            .expect("accepted");
        drop(api);
        let seen = server.join().expect("server");
        assert!(seen[0].starts_with("POST /2018-06-01/runtime/invocation/e-5/error HTTP/1.1\r\n"));
        assert!(seen[0].contains("\r\nLambda-Runtime-Function-Error-Type: UnsupportedEvent\r\n"));
        // Compared as JSON: the workspace build keeps serde_json's keys in insertion order.
        let (_, body) = seen[0].split_once("\r\n\r\n").expect("a body");
        let body: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(
            body,
            serde_json::json!({"errorType": "UnsupportedEvent", "errorMessage": "not an HTTP API event"})
        );
        assert!(seen[1].starts_with("POST /2018-06-01/runtime/init/error HTTP/1.1\r\n"));
    }

    #[test]
    fn an_unsafe_request_id_or_a_refusal_is_an_error() {
        let (address, _server) = serve(
            vec![
                event("../x", "{}"),
                b"HTTP/1.1 500 Internal\r\nContent-Length: 0\r\n\r\n".to_vec(),
            ],
            false,
        );
        let mut api = RuntimeApi::new(&address).expect("address");
        assert!(matches!(api.next_event(), Err(ApiError::RequestId)));
        assert!(matches!(
            api.next_event(),
            Err(ApiError::Status { status: 500, .. })
        ));
    }

    #[test]
    fn addresses() {
        assert!(RuntimeApi::new("127.0.0.1:9001").is_ok());
        assert!(RuntimeApi::new("http://127.0.0.1:9001/.rt/mcp/").is_ok());
        for bad in ["", "http://", "localhost", "127.0.0.1:9001/a b"] {
            assert!(RuntimeApi::new(bad).is_err(), "{bad}");
        }
    }
}
