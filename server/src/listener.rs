//! The HTTP/1.1 accept loop of the local server: hyper with a header-read timeout (a client
//! that never finishes its headers is dropped), TCP_NODELAY, the socket peer as the client
//! address (or, from a trusted proxy, the client its forwarding headers name), `Connection: close` on an answer given before the request body was read (see
//! [`unread_body`]), and a graceful shutdown that lets in-flight requests finish.

use crate::chunk_watch::ChunkWatch;
use crate::proxies::TrustedProxies;
use crate::unread_body;
use axum::Router;
use axum::extract::Request;
use function_common::body::{BodyAlarm, ConnectionBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceExt;
use verifier_service::ClientAddr;

/// A client must send its complete request headers within this time.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a shutdown waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(15);

/// Serve `app` on `listener` until `shutdown` completes; `body_limit` is the hard body limit
/// (a chunk that cannot fit is answered at once, see [`crate::chunk_watch`]); a request from
/// one of `proxies` names its client in its forwarding headers ([`crate::proxies`]).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    body_limit: u64,
    proxies: Arc<TrustedProxies>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of descriptors and the like: back off briefly, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let client = ClientAddr(peer.ip().to_string());
        let proxies = proxies.clone();
        let alarm = BodyAlarm::new();
        let stream = ChunkWatch::new(stream, body_limit, alarm.clone());
        let requests = Arc::new(AtomicU64::new(0));
        let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
            let client = if proxies.is_empty() {
                client.clone()
            } else {
                ClientAddr(proxies.client(peer.ip(), req.headers()).to_string())
            };
            req.extensions_mut().insert(client);
            req.extensions_mut().insert(ConnectionBody {
                seq: requests.fetch_add(1, Ordering::Relaxed),
                alarm: alarm.clone(),
            });
            let (parts, body) = req.into_parts();
            let (body, end) = unread_body::track(body);
            let answer = app
                .clone()
                .oneshot(Request::from_parts(parts, axum::body::Body::new(body)));
            async move { answer.await.map(|response| end.close_unless_read(response)) }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // Errors here are the client's (reset, malformed request, header timeout).
            let _ = connection.await;
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open when the drain timeout passed");
    }
    Ok(())
}
