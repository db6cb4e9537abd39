//! The operator's routes, on the `--metrics-listen` listener beside `GET /metrics` (never on
//! the public port): `POST /admin/backup` backs the embedded store up while it serves, into
//! `<data-dir>/backups/`, and answers where (`verifier store backup --server` calls it).

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use verifier_store_embedded::EmbeddedStore;

/// What the operator's routes work on.
#[derive(Clone)]
pub struct Admin {
    /// The embedded store, when the server runs on it.
    pub embedded: Option<Arc<EmbeddedStore>>,
    /// The data directory (backups go to its `backups/`).
    pub data_dir: PathBuf,
}

/// The operator's routes.
pub fn router(admin: Admin) -> Router {
    Router::new()
        .route("/admin/backup", post(backup))
        .with_state(admin)
}

fn problem(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

/// A backup of the embedded store, named by the time it was asked for.
async fn backup(State(admin): State<Admin>) -> Response {
    let Some(store) = admin.embedded else {
        return problem(
            StatusCode::CONFLICT,
            "this server runs on DynamoDB: use its point-in-time recovery (docs/operations.md, \"Backups\")".into(),
        );
    };
    let dir = admin.data_dir.join("backups");
    if let Err(e) = verifier_store_embedded::create_private_dir(&dir) {
        return problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot make {}: {e}", dir.display()),
        );
    }
    let now = time::OffsetDateTime::now_utc();
    let name = format!(
        "verifier-{:04}{:02}{:02}T{:02}{:02}{:02}-{:09}.redb",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.nanosecond()
    );
    let started = std::time::Instant::now();
    match store.backup(&dir.join(name)).await {
        Ok(summary) => {
            tracing::info!(
                path = %summary.path.display(),
                bytes = summary.bytes,
                outcomes = summary.outcomes,
                ms = started.elapsed().as_millis() as u64,
                "store backed up"
            );
            axum::Json(summary).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "store backup failed");
            problem(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
    }
}
