//! The HTTP layer: arbitrary bytes as one HTTP/1.1 connection to the real router of
//! `verifier serve` (every route, on an embedded store in a temp dir), served by hyper as the
//! local server does (`server/src/listener.rs`), over an in-memory duplex stream. No response
//! may have a 5xx status, checked twice: on the router's answers (the service wrapper) and on
//! the status lines of the bytes written back. Nothing may panic.
//!
//! Its first finding, fixed: POST /mcp whose body could not be read (a malformed chunk, fewer
//! bytes than Content-Length) was answered 500 by rmcp; the /mcp router now reads the body
//! itself first and answers 400/413 in the common error shape.

#![no_main]

use axum::Router;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;
use tower::ServiceExt;
use verifier::serve::{LocalServer, app};
use verifier_ports::clock::SystemClock;
use verifier_ports::keys::StaticKeys;
use verifier_receipt::SigningIdentity;
use verifier_service::ClientAddr;
use verifier_service::config::ServiceConfig;
use verifier_service::payments::PaymentGate;
use verifier_store_embedded::EmbeddedStore;

/// A hung connection is a finding too (libFuzzer's own -timeout is the backstop).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

struct Fixture {
    runtime: Runtime,
    router: Router,
    _dir: tempfile::TempDir,
}

/// What the router answered on one connection.
#[derive(Default)]
struct Seen {
    /// The highest status.
    worst: AtomicU16,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // The multi-thread flavor, as in the server: large verifications use block_in_place.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        // The store fsyncs every commit: on tmpfs when there is one, so fsync costs nothing.
        let dir = match std::path::Path::new("/dev/shm").is_dir() {
            true => tempfile::tempdir_in("/dev/shm"),
            false => tempfile::tempdir(),
        }
        .expect("tempdir");
        let store = EmbeddedStore::open(dir.path()).expect("store");
        let config = ServiceConfig {
            public_url: "http://127.0.0.1:8080".into(),
            // Every verification is free (a real, signed answer, not a 402)...
            free_per_day: 1 << 40,
            free_total_per_day: 1 << 40,
            free_body_limit: 16 * 1024,
            hard_body_limit: 64 * 1024,
            pay_to_base: Some("0x1111111111111111111111111111111111111111".into()),
            ..ServiceConfig::default()
        };
        let router = app(LocalServer {
            mcp: mcp_function::McpAccess::for_public_url(&config.public_url, &[]),
            config,
            keys: Arc::new(StaticKeys::new(
                SigningIdentity::from_seed("fuzz", &[7u8; 32]).expect("key"),
                vec![],
            )),
            store: Arc::new(store),
            clock: Arc::new(SystemClock),
            // ...and payments (X-PAYMENT headers) are refused without a facilitator.
            payments: PaymentGate::new(None, None),
            schema_cache_bytes: 8 << 20,
        pool: Default::default(),
        });
        Fixture {
            runtime,
            router,
            _dir: dir,
        }
    })
}

/// Serve `input` as one connection; return the bytes written back.
async fn connection(router: Router, input: Vec<u8>) -> Vec<u8> {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let seen_all = Arc::new(Seen::default());
    let seen = seen_all.clone();
    let client_addr = ClientAddr("192.0.2.7".into());
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        // As the listener does: the socket peer as the client address.
        req.extensions_mut().insert(client_addr.clone());
        let router = router.clone();
        let seen = seen.clone();
        let req = req.map(axum::body::Body::new);
        async move {
            let response = router.oneshot(req).await?;
            seen.worst
                .fetch_max(response.status().as_u16(), Ordering::Relaxed);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(verifier::listener::HEADER_READ_TIMEOUT)
        .keep_alive(true)
        // The client below closes its side after the input: answer what was sent anyway.
        .half_close(true);
    let served = tokio::spawn(async move {
        let _ = builder
            .serve_connection(TokioIo::new(server), service)
            .await;
    });
    let (read_half, mut write_half) = tokio::io::split(&mut client);
    let write = async move {
        let _ = write_half.write_all(&input).await;
        let _ = write_half.shutdown().await;
    };
    let read = async move {
        let mut out = Vec::new();
        let mut read_half = read_half;
        let _ = read_half.read_to_end(&mut out).await;
        out
    };
    let (_, out) = tokio::time::timeout(CONNECTION_TIMEOUT, async { tokio::join!(write, read) })
        .await
        .expect("the connection hung");
    served.await.expect("the connection task panicked");
    let worst = seen_all.worst.load(Ordering::Relaxed);
    assert!(worst < 500, "the router answered {worst}");
    out
}

/// The status codes of the responses in `out`, in order, as far as they can be framed
/// (a response to HEAD has a Content-Length but no body: framing stops where it goes wrong,
/// which the router-side check above covers).
fn statuses(mut out: &[u8]) -> Vec<u16> {
    let mut codes = Vec::new();
    while !out.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(head)) = response.parse(out) else {
            break;
        };
        let Some(code) = response.code else { break };
        codes.push(code);
        let header = |name: &str| {
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
        };
        let rest = &out[head..];
        if (100..200).contains(&code) || code == 204 || code == 304 {
            out = rest;
        } else if header("transfer-encoding").is_some_and(|t| t.ends_with("chunked")) {
            match skip_chunked(rest) {
                Some(n) => out = &rest[n..],
                None => break,
            }
        } else if let Some(len) = header("content-length") {
            match len.parse::<usize>() {
                Ok(n) if n <= rest.len() => out = &rest[n..],
                _ => break,
            }
        } else {
            break;
        }
    }
    codes
}

/// The length of a chunked body at the start of `b`, trailers included.
fn skip_chunked(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line_end = at + b[at..].windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&b[at..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let end = at + b[at..].windows(2).position(|w| w == b"\r\n")?;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some(at);
                }
            }
        }
        at = at.checked_add(size)?.checked_add(2)?;
        if at > b.len() {
            return None;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let out = f
        .runtime
        .block_on(connection(f.router.clone(), data.to_vec()));
    let on_wire = statuses(&out).into_iter().filter(|&c| c >= 500).count();
    assert_eq!(on_wire, 0, "{on_wire} 5xx response(s) on the wire");
});
