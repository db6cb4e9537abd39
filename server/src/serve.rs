//! `verifier serve`: every function's router merged on one port, on the embedded store.

use crate::cli::ServeOpts;
use crate::keyfile;
use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::http::HeaderValue;
use axum::middleware::{self, Next};
use axum::response::Response;
use function_common::request_metrics::UNMATCHED;
use function_common::respond::{self, ErrorCode, PricePath};
use mcp_function::McpAccess;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use verifier_engine::cost::{Budget, Budgets};
use verifier_engine::{Engine, EngineConfig};
use verifier_facilitator_http::FacilitatorSettings;
use verifier_ports::clock::{Clock, SystemClock};
use verifier_ports::keys::KeySource;
use verifier_ports::store::Store;
use verifier_service::ClientAddr;
use verifier_service::Services;
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;
use verifier_service::metered::{MeteredFacilitator, MeteredStore};
use verifier_service::payments::PaymentGate;
use verifier_service::pool::{PoolConfig, WorkPool};
use verifier_service::telemetry;
use verifier_store_dynamo::DynamoStore;
use verifier_store_embedded::{Durability, EmbeddedStore};

/// Everything the local server is built from.
pub struct LocalServer {
    pub config: ServiceConfig,
    /// Who may call /mcp (hosts and origins).
    pub mcp: McpAccess,
    pub keys: Arc<dyn KeySource>,
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub payments: PaymentGate,
    /// Bytes the compiled-schema cache may hold.
    pub schema_cache_bytes: u64,
    /// The bounded pool of costly verifications.
    pub pool: PoolConfig,
}

impl LocalServer {
    /// The shared services of every router.
    pub fn services(self) -> Arc<Services> {
        let engine = Engine::new(EngineConfig {
            public_url: Some(self.config.public_url.clone()),
            cache_bytes: self.schema_cache_bytes,
            cost_scale_ppm: self.config.cost_scale_ppm,
            ..EngineConfig::default()
        });
        Arc::new(Services {
            config: self.config,
            engine,
            keys: self.keys,
            store: self.store,
            clock: self.clock,
            payments: self.payments,
            pool: WorkPool::new(self.pool),
            listings: Default::default(),
            in_flight: Default::default(),
            free_budget: Default::default(),
            blocks: Default::default(),
        })
    }
}

/// The merged router of every function.
pub fn app(parts: LocalServer) -> Router {
    let mcp = parts.mcp.clone();
    router(parts.services(), &mcp)
}

/// Every function's router on one service, with the client address (the socket peer),
/// request logging, CORS and the 404 fallback.
pub fn router(services: Arc<Services>, mcp: &McpAccess) -> Router {
    let config = Arc::new(services.config.clone());
    let services_for_blocks = services.clone();
    Router::new()
        .merge(verify_function::router(services.clone()))
        .merge(mcp_function::router(services.clone(), mcp))
        .merge(score_function::router(services.clone()))
        .merge(discovery_function::router(services))
        .route_layer(middleware::from_fn_with_state(
            services_for_blocks,
            function_common::client::refuse_blocked,
        ))
        .route_layer(middleware::from_fn(log_request))
        .fallback(move |req: Request| not_found(req, config.clone()))
        .layer(function_common::cors::layer())
        .layer(middleware::from_fn(client_address))
        .layer(middleware::map_response(respond::nosniff))
}

async fn not_found(req: Request, config: Arc<ServiceConfig>) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = respond::error(&ApiError::NotFound, &config);
    finish(started, method, UNMATCHED, response)
}

/// The client address is the socket peer, never a header the client sets.
async fn client_address(mut req: Request, next: Next) -> Response {
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied() {
        req.extensions_mut()
            .insert(ClientAddr(peer.ip().to_string()));
    }
    next.run(req).await
}

/// One log line and the request metrics per request, and its request ID in `x-request-id`.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let route = function_common::request_metrics::route_of(&req);
    let response = next.run(req).await;
    finish(started, method, route, response)
}

/// Count, log and tag an answered request: the log line names the request ID (also sent as
/// `x-request-id`), method, route, status, duration, how it was paid and the error code; never
/// a body, an agent ID, an address or a header the caller sent.
fn finish(
    started: Instant,
    method: &'static str,
    route: &'static str,
    mut response: Response,
) -> Response {
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    telemetry::request(route, status, elapsed.as_secs_f64());
    let path = response
        .extensions()
        .get::<PricePath>()
        .copied()
        .unwrap_or(PricePath::NotCharged);
    let code = response.extensions().get::<ErrorCode>().map_or("", |c| c.0);
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    tracing::info!(
        request_id = %request_id,
        method,
        route,
        status,
        duration_us = elapsed.as_micros() as u64,
        price_path = path.as_str(),
        code,
        "request"
    );
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// A request method as logged: the standard ones by name, any other token as `other` (a method
/// is any token the caller chose, of any length).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const STANDARD: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::PATCH, "PATCH"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    STANDARD
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, name)| name)
}

fn init_logging(format: &str) {
    // rmcp logs every request's method and protocol version at info: caller text in our logs.
    let mut filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    if let Ok(quiet) = "rmcp=off".parse() {
        filter = filter.add_directive(quiet);
    }
    // No ANSI colour codes where no terminal reads them.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    if format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// The request threads: as asked, else one per CPU less the one the store's writer thread
/// needs (at least one). On two CPUs one request thread serves as many calls per second as two
/// and halves the p99 latency (docs/performance.md).
pub fn worker_threads(asked: Option<u16>) -> usize {
    match asked {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .max(1),
    }
}

/// Run the server until Ctrl-C or SIGTERM.
pub fn run(opts: ServeOpts) -> ExitCode {
    init_logging(&opts.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(opts.worker_threads))
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(serve(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("verifier: {e}");
            ExitCode::from(1)
        }
    }
}

async fn serve(opts: ServeOpts) -> Result<(), Box<dyn std::error::Error>> {
    let keys = keyfile::load_or_create(&opts.data_dir)?;
    // The metrics recorder comes first, so every count from the first request on is kept.
    let metrics = match opts.metrics_listen {
        Some(addr) => {
            let handle = crate::metrics_listener::install()?;
            let listener = tokio::net::TcpListener::bind(addr).await?;
            Some((listener, handle))
        }
        None => None,
    };
    let durability = if opts.durability == "periodic" {
        Durability::Periodic(std::time::Duration::from_millis(
            opts.sync_interval_ms.max(1),
        ))
    } else {
        Durability::Sync
    };
    let mut embedded = None;
    let store: Arc<dyn Store> = match opts.store.as_str() {
        "dynamodb" => {
            let table = opts
                .table
                .as_deref()
                .ok_or("--store dynamodb needs --table (or VERIFIER_TABLE)")?;
            let store = DynamoStore::from_env(table)
                .await
                .with_outcome_retention(opts.outcome_retention_days);
            if opts.create_table {
                store.create_table().await?;
            }
            Arc::new(store)
        }
        _ => {
            let store = Arc::new(
                EmbeddedStore::open_with(&opts.data_dir, durability)?
                    .with_outcome_retention(opts.outcome_retention_days),
            );
            embedded = Some(store.clone());
            store
        }
    };
    let store: Arc<dyn Store> = if metrics.is_some() {
        Arc::new(MeteredStore(store))
    } else {
        store
    };
    let listener = tokio::net::TcpListener::bind(opts.listen).await?;
    let hard_body_limit = opts.max_body_bytes as u64;
    let local = listener.local_addr()?;
    let config = ServiceConfig {
        public_url: opts
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{local}"))
            .trim_end_matches('/')
            .to_owned(),
        free_per_day: opts.free_allowance_per_day.unwrap_or(1000),
        free_total_per_day: opts.free_calls_total_per_day,
        free_body_limit: opts.free_body_limit_bytes.min(opts.max_body_bytes),
        hard_body_limit: opts.max_body_bytes,
        price_verify_units: opts.price_verify_units,
        price_score_units: opts.price_score_units,
        pay_to_base: opts.pay_to_base.clone(),
        pay_to_solana: opts.pay_to_solana.clone(),
        solana_fee_payer: opts.solana_fee_payer.clone(),
        payment_timeout_seconds: 60,
        budgets: Budgets {
            unpaid: Budget::ms_mib(opts.unpaid_cpu_ms, opts.unpaid_memory_mib),
            paid: Budget::ms_mib(opts.paid_cpu_ms, opts.paid_memory_mib),
        }
        .ordered(),
        ipv6_prefix: opts.ipv6_prefix,
        cost_scale_ppm: opts.cost_scale,
        private: false,
    };
    let config = if opts.private {
        config.private(
            opts.free_allowance_per_day
                .unwrap_or(verifier_service::config::UNLIMITED),
        )
    } else {
        config
    };
    if !config.private && config.pay_to_base.is_none() && config.pay_to_solana.is_none() {
        tracing::warn!(
            "no pay-to address configured (VERIFIER_PAY_TO_BASE / VERIFIER_PAY_TO_SOLANA): 402 answers offer no payment option"
        );
    }
    let settings = FacilitatorSettings {
        url: opts.facilitator_url.clone(),
        bearer: opts.facilitator_bearer.clone(),
        key_id: opts.facilitator_key_id.clone(),
        key_secret: opts.facilitator_key_secret.clone(),
    };
    if !config.private
        && let Some(problem) = settings.missing_credentials((
            "--facilitator-key-id (VERIFIER_FACILITATOR_KEY_ID)",
            "--facilitator-key-secret (VERIFIER_FACILITATOR_KEY_SECRET)",
        ))
    {
        tracing::error!("{problem}");
    }
    let facilitator = settings.port()?.map(|f| {
        if metrics.is_some() {
            Arc::new(MeteredFacilitator(f)) as Arc<dyn verifier_ports::facilitator::Facilitator>
        } else {
            f
        }
    });
    let payments = PaymentGate::new(facilitator, opts.solana_fee_payer.clone());
    if config.private {
        tracing::info!("private deployment: no payments offered, no 402 answered");
    } else if payments.configured() {
        payments
            .refresh_supported(config.pay_to_solana.as_deref())
            .await;
    } else {
        tracing::warn!(
            "no facilitator configured (VERIFIER_FACILITATOR_URL): paid requests are refused"
        );
    }
    let key_version = keys.current().key_version().to_owned();
    let config_free_per_day = config.free_per_day;
    let mcp = McpAccess::for_public_url(&config.public_url, &opts.mcp_allowed_origins);
    let mcp_access = mcp.clone();
    let services = LocalServer {
        mcp,
        config,
        keys: Arc::new(keys),
        store,
        clock: Arc::new(SystemClock),
        payments,
        schema_cache_bytes: opts.schema_cache_mib << 20,
        pool: PoolConfig {
            workers: opts
                .heavy_workers
                .map_or_else(|| PoolConfig::default().workers, usize::from),
            per_client: opts.heavy_per_client,
            ..PoolConfig::default()
        },
    }
    .services();
    // The operator's blocks: read now, then every --blocks-refresh-seconds (other servers on the same
    // DynamoDB table may change them; this server's own operator routes apply at once).
    services.blocks.load(services.store.as_ref()).await;
    verifier_service::blocks::BlockList::spawn_refresh(
        &services,
        std::time::Duration::from_secs(opts.blocks_refresh_seconds),
    );
    let app = router(services.clone(), &mcp_access);
    telemetry::signing_key(&key_version);
    let metrics_addr = match metrics {
        Some((listener, handle)) => {
            let addr = listener.local_addr()?;
            let admin = crate::admin::Admin {
                embedded,
                data_dir: opts.data_dir.clone(),
                services: services.clone(),
            };
            tokio::spawn(async move {
                if let Err(e) =
                    crate::metrics_listener::serve(listener, handle, admin, shutdown()).await
                {
                    tracing::error!(error = %e, "the metrics listener failed");
                }
            });
            Some(addr.to_string())
        }
        None => None,
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        listen = %local,
        metrics = metrics_addr.as_deref().unwrap_or("off"),
        store = %opts.store,
        data_dir = %opts.data_dir.display(),
        key_version = %key_version,
        free_per_day = config_free_per_day,
        private = opts.private,
        free_total_per_day = opts.free_calls_total_per_day,
        free_body_limit_bytes = opts.free_body_limit_bytes.min(opts.max_body_bytes),
        max_body_bytes = opts.max_body_bytes,
        unpaid_cpu_ms = opts.unpaid_cpu_ms,
        paid_cpu_ms = opts.paid_cpu_ms,
        trusted_proxy_networks = opts.trusted_proxies.len(),
        "verifier listening"
    );
    let proxies = Arc::new(opts.trusted_proxies.clone());
    crate::listener::serve(listener, app, hard_body_limit, proxies, shutdown()).await?;
    tracing::info!("verifier stopped: connections drained");
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::worker_threads;

    #[test]
    fn caller_chosen_methods_are_logged_as_other() {
        use axum::http::Method;
        assert_eq!(super::method_label(&Method::POST), "POST");
        let long = Method::from_bytes("X".repeat(5000).as_bytes()).expect("a token");
        assert_eq!(super::method_label(&long), "other");
    }

    #[test]
    fn request_threads_leave_a_cpu_to_the_store_writer() {
        assert_eq!(worker_threads(Some(3)), 3);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(worker_threads(None), cpus.saturating_sub(1).max(1));
    }
}
