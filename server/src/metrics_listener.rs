//! `--metrics-listen`: the service's metrics ([`verifier_service::telemetry`]) as Prometheus
//! text at `GET /metrics` on a listener of their own, so the public port never shows them; the
//! operator's routes ([`crate::admin`]) are served there too.
//! Histograms are drained by an upkeep task every few seconds (and on each scrape), so their
//! memory stays bounded between scrapes.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::future::Future;
use std::time::Duration;
use verifier_service::telemetry;

/// How often histogram samples are folded into their buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Install the Prometheus recorder as the process's metrics recorder.
pub fn install() -> Result<PrometheusHandle, String> {
    let handle = PrometheusBuilder::new()
        .set_buckets(telemetry::DURATION_BUCKETS)
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())?;
    telemetry::describe();
    Ok(handle)
}

/// The metrics router: `GET /metrics`, the operator's routes ([`crate::admin`]), 404
/// elsewhere.
fn router(handle: PrometheusHandle, admin: crate::admin::Admin) -> Router {
    crate::admin::router(admin)
        .route(
            "/metrics",
            get(move || {
                let handle = handle.clone();
                async move { exposition(&handle) }
            }),
        )
        .fallback(|| async { StatusCode::NOT_FOUND })
}

fn exposition(handle: &PrometheusHandle) -> Response {
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// Serve the metrics on `listener` until `shutdown`, with the upkeep task beside it.
pub async fn serve(
    listener: tokio::net::TcpListener,
    handle: PrometheusHandle,
    admin: crate::admin::Admin,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let upkeep = {
        let handle = handle.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(UPKEEP_EVERY);
            loop {
                every.tick().await;
                handle.run_upkeep();
            }
        })
    };
    let served = axum::serve(listener, router(handle, admin))
        .with_graceful_shutdown(shutdown)
        .await;
    upkeep.abort();
    served
}
