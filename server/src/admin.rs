//! The operator's routes, on the `--metrics-listen` listener beside `GET /metrics` (never on
//! the public port; bind it to loopback or a private network). `verifier store` and
//! `verifier admin` call them with `--server`:
//!
//! - `POST /admin/backup`: back the embedded store up while it serves, into
//!   `<data-dir>/backups/`, and answer where;
//! - `POST /admin/block` / `POST /admin/unblock` (`{"client": CIDR}` or `{"agent": ID}`):
//!   change a block, enforced at once;
//! - `POST /admin/erase-agent` (`{"agent": ID}`): erase an agent's history;
//! - `GET /admin/blocks`, `GET /admin/settlements?since=&until=`: list them.

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use verifier_ports::store::{BlockTarget, Store};
use verifier_service::Services;
use verifier_store_embedded::EmbeddedStore;

/// What the operator's routes work on.
#[derive(Clone)]
pub struct Admin {
    /// The embedded store, when the server runs on it.
    pub embedded: Option<Arc<EmbeddedStore>>,
    /// The data directory (backups go to its `backups/`).
    pub data_dir: PathBuf,
    /// The running service (its store and its blocks).
    pub services: Arc<Services>,
}

/// The operator's routes.
pub fn router(admin: Admin) -> Router {
    Router::new()
        .route("/admin/backup", post(backup))
        .route("/admin/block", post(block))
        .route("/admin/unblock", post(unblock))
        .route("/admin/blocks", get(blocks))
        .route("/admin/erase-agent", post(erase_agent))
        .route("/admin/settlements", get(settlements))
        .with_state(admin)
}

fn problem(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

fn store_problem(e: verifier_ports::store::StoreError) -> Response {
    problem(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}

/// Whom a block names.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    client: Option<String>,
    agent: Option<String>,
}

/// The target of a request body: one client network or one agent ID.
pub fn target_of(target: &Target) -> Result<BlockTarget, String> {
    match (&target.client, &target.agent) {
        (Some(net), None) => verifier_service::blocks::parse_network(net)
            .map(|n| BlockTarget::Client(n.to_string()))
            .ok_or_else(|| "\"client\" must be an address or a CIDR network".to_owned()),
        (None, Some(agent)) => verifier_service::score::check_agent_id(agent)
            .map(|()| BlockTarget::Agent(agent.clone()))
            .map_err(|_| "\"agent\" is not a valid agent ID".to_owned()),
        _ => Err("give exactly one of \"client\" and \"agent\"".to_owned()),
    }
}

async fn set_block(admin: Admin, target: Target, blocked: bool) -> Response {
    let target = match target_of(&target) {
        Ok(t) => t,
        Err(e) => return problem(StatusCode::UNPROCESSABLE_ENTITY, e),
    };
    let s = &admin.services;
    let now = s.clock.now().unix_timestamp();
    match s.store.set_blocked(&target, blocked, now).await {
        Ok(changed) => {
            // Enforced at once here; other servers on a shared table at their next refresh.
            s.blocks.load(s.store.as_ref()).await;
            tracing::warn!(
                kind = match target {
                    BlockTarget::Client(_) => "client",
                    BlockTarget::Agent(_) => "agent",
                },
                blocked,
                changed,
                "an operator changed a block"
            );
            axum::Json(json!({"target": target, "blocked": blocked, "changed": changed}))
                .into_response()
        }
        Err(e) => store_problem(e),
    }
}

async fn block(State(admin): State<Admin>, axum::Json(target): axum::Json<Target>) -> Response {
    set_block(admin, target, true).await
}

async fn unblock(State(admin): State<Admin>, axum::Json(target): axum::Json<Target>) -> Response {
    set_block(admin, target, false).await
}

async fn blocks(State(admin): State<Admin>) -> Response {
    match admin.services.store.blocks().await {
        Ok(list) => axum::Json(list).into_response(),
        Err(e) => store_problem(e),
    }
}

async fn erase_agent(
    State(admin): State<Admin>,
    axum::Json(target): axum::Json<Target>,
) -> Response {
    let Some(agent) = target.agent.filter(|_| target.client.is_none()) else {
        return problem(StatusCode::UNPROCESSABLE_ENTITY, "give \"agent\"".into());
    };
    if verifier_service::score::check_agent_id(&agent).is_err() {
        return problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            "\"agent\" is not a valid agent ID".into(),
        );
    }
    match admin.services.store.erase_agent(&agent).await {
        Ok(outcomes) => {
            tracing::warn!(outcomes, "an operator erased an agent's history");
            axum::Json(json!({"erased_outcomes": outcomes})).into_response()
        }
        Err(e) => store_problem(e),
    }
}

/// `since` and `until` (unix seconds), `limit` (at most 100,000).
#[derive(Deserialize)]
pub struct Period {
    since: Option<i64>,
    until: Option<i64>,
    limit: Option<usize>,
}

async fn settlements(State(admin): State<Admin>, Query(period): Query<Period>) -> Response {
    let limit = period.limit.unwrap_or(100_000).min(100_000);
    let store: &dyn Store = admin.services.store.as_ref();
    match store
        .settlements(
            period.since.unwrap_or(0),
            period.until.unwrap_or(i64::MAX),
            limit,
        )
        .await
    {
        Ok(list) => axum::Json(list).into_response(),
        Err(e) => store_problem(e),
    }
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
