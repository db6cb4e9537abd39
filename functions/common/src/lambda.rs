//! What every Lambda main shares: configuration from the environment (missing configuration
//! fails init loudly — there is no fallback to the embedded store or a local key), the SDK
//! clients, the signing key from SSM (refreshed on an interval), DynamoDB (for the functions
//! with a [`Table`]), the facilitator,
//! and the Runtime API loop ([`crate::runtime`]; the client address is
//! `requestContext.http.sourceIp`, never a header).

use crate::respond;
use crate::runtime::api::{ApiError, RuntimeApi};
use crate::runtime::event::{self, DomainName, EventError};
use crate::runtime::{self as lambda_runtime, Failure};
use axum::Router;
use axum::middleware;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;
use verifier_engine::cost::{Budget, Budgets};
use verifier_engine::{Engine, EngineConfig};
use verifier_facilitator_http::FacilitatorSettings;
use verifier_keys_aws::{KeyParams, SsmKeys};
use verifier_ports::keys::KeySource;
use verifier_ports::no_table::NoTable;
use verifier_ports::store::Store;
use verifier_service::Services;
use verifier_service::config::ServiceConfig;
use verifier_service::payments::PaymentGate;
use verifier_service::pool::{PoolConfig, WorkPool};
use verifier_store_dynamo::DynamoStore;

/// Why a function cannot start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{0} must be set")]
    Missing(&'static str),
    #[error("{0} is not a valid number")]
    Number(&'static str),
    #[error("the signing key cannot be loaded: {0}")]
    Keys(#[from] verifier_keys_aws::SsmKeyError),
    #[error("the facilitator configuration is invalid: {0}")]
    Facilitator(String),
    #[error("{0}")]
    Tls(#[from] verifier_aws_sdk::TlsError),
}

fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required(name: &'static str) -> Result<String, InitError> {
    var(name).ok_or(InitError::Missing(name))
}

fn number(name: &'static str, default: u64) -> Result<u64, InitError> {
    var(name).map_or(Ok(default), |v| {
        v.trim().parse().map_err(|_| InitError::Number(name))
    })
}

/// A comma-separated list (empty when unset).
fn list(name: &'static str) -> Vec<String> {
    var(name)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The function's memory in MiB (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, set by Lambda).
fn function_memory_mib() -> u64 {
    var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256)
}

/// The ceilings: as configured, with the paid memory ceiling never above half the function's
/// memory (so no input can run a function out of memory).
fn lambda_budgets(defaults: &Budgets) -> Result<Budgets, InitError> {
    let half = function_memory_mib() / 2;
    let budgets = Budgets {
        unpaid: Budget::ms_mib(
            number("VERIFIER_UNPAID_CPU_MS", defaults.unpaid.cpu_ns / 1_000_000)?,
            number(
                "VERIFIER_UNPAID_MEMORY_MIB",
                defaults.unpaid.mem_bytes >> 20,
            )?,
        ),
        paid: Budget::ms_mib(
            number("VERIFIER_PAID_CPU_MS", defaults.paid.cpu_ns / 1_000_000)?,
            number("VERIFIER_PAID_MEMORY_MIB", defaults.paid.mem_bytes >> 20)?.min(half),
        ),
    };
    Ok(budgets.ordered())
}

/// The compiled-schema cache: an eighth of the function's memory unless configured.
fn schema_cache_bytes() -> Result<u64, InitError> {
    Ok(number("VERIFIER_SCHEMA_CACHE_MIB", function_memory_mib() / 8)?.max(1) << 20)
}

/// The functions' configuration, read from the environment the SAM template sets.
#[derive(Debug, Clone)]
pub struct LambdaSettings {
    pub table: String,
    pub keys: KeyParams,
    pub key_refresh: Duration,
    /// How often the operator's blocks are read again (`VERIFIER_BLOCKS_REFRESH_SECONDS`,
    /// default 60; one query of the table each time).
    pub blocks_refresh: Duration,
    /// Days an agent's outcome is kept (`VERIFIER_OUTCOME_RETENTION_DAYS`; 0: for good).
    pub outcome_retention_days: u32,
    /// Base URL for documents and receipts; none: `https://` + the API's domain name, learnt
    /// from the first request (the template cannot name its own API URL without a cycle).
    pub public_url: Option<String>,
    pub config: ServiceConfig,
    pub facilitator_url: Option<String>,
    pub facilitator_key_id: Option<String>,
    /// Name of the SecureString holding the facilitator API key secret.
    pub facilitator_key_secret_param: Option<String>,
    /// Extra `Origin` values MCP accepts (the public URL's origin always is).
    pub mcp_allowed_origins: Vec<String>,
    /// `Host` values MCP accepts; empty: any (API Gateway only routes its own domains).
    pub mcp_allowed_hosts: Vec<String>,
    /// Whether metrics are written (`VERIFIER_METRICS_NAMESPACE` set): the store and the
    /// facilitator are then timed.
    pub metered: bool,
}

impl LambdaSettings {
    /// Read the settings; every required variable missing is an error.
    pub fn from_env() -> Result<Self, InitError> {
        let defaults = ServiceConfig::default();
        let hard = number("VERIFIER_MAX_BODY_BYTES", defaults.hard_body_limit as u64)? as usize;
        let config = ServiceConfig {
            public_url: String::new(),
            free_per_day: number("VERIFIER_FREE_ALLOWANCE_PER_DAY", defaults.free_per_day)?,
            free_total_per_day: number(
                "VERIFIER_FREE_CALLS_TOTAL_PER_DAY",
                defaults.free_total_per_day,
            )?,
            free_body_limit: (number(
                "VERIFIER_FREE_BODY_LIMIT_BYTES",
                defaults.free_body_limit as u64,
            )? as usize)
                .min(hard),
            hard_body_limit: hard,
            price_verify_units: number("VERIFIER_PRICE_VERIFY_UNITS", defaults.price_verify_units)?,
            price_score_units: number("VERIFIER_PRICE_SCORE_UNITS", defaults.price_score_units)?,
            pay_to_base: var("VERIFIER_PAY_TO_BASE"),
            pay_to_solana: var("VERIFIER_PAY_TO_SOLANA"),
            solana_fee_payer: var("VERIFIER_SOLANA_FEE_PAYER"),
            payment_timeout_seconds: defaults.payment_timeout_seconds,
            budgets: lambda_budgets(&defaults.budgets)?,
            ipv6_prefix: u8::try_from(
                number("VERIFIER_IPV6_PREFIX", u64::from(defaults.ipv6_prefix))?.clamp(16, 128),
            )
            .unwrap_or(defaults.ipv6_prefix),
            cost_scale_ppm: match var("VERIFIER_COST_SCALE") {
                Some(text) => verifier_service::config::cost_scale_ppm(&text)
                    .ok_or(InitError::Number("VERIFIER_COST_SCALE (0.0001 to 1000)"))?,
                None => defaults.cost_scale_ppm,
            },
            private: false,
        };
        let private = match var("VERIFIER_PRIVATE").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(InitError::Number("VERIFIER_PRIVATE (true or false)")),
        };
        let config = if private {
            let allowance = config.free_per_day;
            config.private(allowance)
        } else {
            config
        };
        if !private && config.pay_to_base.is_none() && config.pay_to_solana.is_none() {
            tracing::error!(
                "no pay-to address: set VERIFIER_PAY_TO_BASE or VERIFIER_PAY_TO_SOLANA (the template's PayToBase, PayToSolana), or VERIFIER_PRIVATE=true; 402 answers offer no payment option"
            );
        }
        Ok(LambdaSettings {
            table: required("VERIFIER_TABLE")?,
            keys: KeyParams {
                signing: required("VERIFIER_SIGNING_KEY_PARAM")?,
                ring: required("VERIFIER_PUBLIC_KEYS_PARAM")?,
            },
            key_refresh: Duration::from_secs(number("VERIFIER_KEY_REFRESH_SECONDS", 300)?.max(10)),
            blocks_refresh: Duration::from_secs(
                number("VERIFIER_BLOCKS_REFRESH_SECONDS", 60)?.max(1),
            ),
            outcome_retention_days: u32::try_from(number("VERIFIER_OUTCOME_RETENTION_DAYS", 0)?)
                .map_err(|_| InitError::Number("VERIFIER_OUTCOME_RETENTION_DAYS"))?,
            public_url: var("VERIFIER_PUBLIC_URL"),
            config,
            facilitator_url: var("VERIFIER_FACILITATOR_URL"),
            facilitator_key_id: var("VERIFIER_FACILITATOR_KEY_ID"),
            facilitator_key_secret_param: var("VERIFIER_FACILITATOR_KEY_SECRET_PARAM"),
            mcp_allowed_origins: list("VERIFIER_MCP_ALLOWED_ORIGINS"),
            mcp_allowed_hosts: list("VERIFIER_MCP_ALLOWED_HOSTS"),
            metered: var("VERIFIER_METRICS_NAMESPACE").is_some(),
        })
    }
}

/// Everything built once at init, before the public URL is known.
pub struct Init {
    pub settings: LambdaSettings,
    pub keys: Arc<SsmKeys>,
    pub store: Arc<dyn Store>,
    pub facilitator: FacilitatorSettings,
    /// The facilitator client every [`Init::services`] shares (its CDP key secret is
    /// replaced when the key refresh finds a new one in SSM).
    pub facilitator_client: Option<Arc<verifier_facilitator_http::HttpFacilitator>>,
    /// The Solana fee payer: configured, or learnt from the facilitator at init.
    pub solana_fee_payer: Option<String>,
}

impl Init {
    /// Build the SDK clients, load the key and the facilitator secret (one SSM call), start
    /// the refresh, and learn the Solana fee payer when Solana is offered and none is
    /// configured (one facilitator call, bounded by
    /// [`SUPPORTED_WAIT`](verifier_service::payments::gate::SUPPORTED_WAIT)). `T`: the store.
    pub async fn new<T: Table>(settings: LambdaSettings) -> Result<Self, InitError> {
        let sdk = verifier_aws_sdk::aws_sdk_config().await?;
        let ssm = aws_sdk_ssm::Client::new(&sdk);
        let asked = std::time::Instant::now();
        let loaded = SsmKeys::load_with_secret(
            &ssm,
            &settings.keys,
            settings.facilitator_key_secret_param.as_deref(),
        )
        .await;
        verifier_service::telemetry::dependency(
            verifier_service::telemetry::Dependency::Ssm,
            loaded.is_ok(),
            asked.elapsed().as_secs_f64(),
        );
        let (keys, key_secret) = loaded?;
        verifier_service::telemetry::key_adopted(keys.current().key_version());
        let facilitator = FacilitatorSettings {
            url: settings.facilitator_url.clone(),
            bearer: None,
            key_id: settings.facilitator_key_id.clone(),
            key_secret: key_secret.clone(),
        };
        if !settings.config.private
            && let Some(problem) = facilitator.missing_credentials((
                "VERIFIER_FACILITATOR_KEY_ID (the template's FacilitatorKeyId)",
                "VERIFIER_FACILITATOR_KEY_SECRET_PARAM (FacilitatorKeySecretParamName)",
            ))
        {
            tracing::error!("{problem}");
        }
        // Fail at init on a broken facilitator configuration, not on the first paid call.
        let facilitator_client = facilitator
            .facilitator()
            .map_err(InitError::Facilitator)?
            .map(Arc::new);
        let credentials = facilitator_client.as_ref().map(|f| f.credentials());
        let secret = settings
            .facilitator_key_secret_param
            .clone()
            .zip(key_secret.clone());
        keys.spawn_refresh_with_secret(
            ssm.clone(),
            settings.keys.clone(),
            settings.key_refresh,
            secret,
            |refresh| {
                verifier_service::telemetry::dependency(
                    verifier_service::telemetry::Dependency::Ssm,
                    refresh.ok,
                    refresh.seconds,
                );
                if let Some(version) = refresh.changed_to {
                    tracing::info!(key_version = %version, "signing with the rotated key");
                    verifier_service::telemetry::key_adopted(&version);
                }
            },
            move |secret| match credentials.as_ref().map(|c| c.replace_cdp_secret(secret)) {
                Some(Ok(())) => tracing::info!("the facilitator's API key secret was refreshed"),
                Some(Err(e)) => tracing::error!(error = %e, "the facilitator's refreshed API key secret was refused"),
                None => {}
            },
        );
        let payments = PaymentGate::new(
            facilitator_client
                .clone()
                .map(|f| f as Arc<dyn verifier_ports::facilitator::Facilitator>),
            settings.config.solana_fee_payer.clone(),
        );
        payments
            .refresh_supported(settings.config.pay_to_solana.as_deref())
            .await;
        let store = T::store(&sdk, &settings.table, settings.outcome_retention_days);
        Ok(Init {
            store: if settings.metered {
                Arc::new(verifier_service::metered::MeteredStore(store))
            } else {
                store
            },
            keys,
            facilitator,
            facilitator_client,
            solana_fee_payer: payments.fee_payer(),
            settings,
        })
    }

    /// The services for a public URL.
    pub async fn services(&self, public_url: &str) -> Result<Arc<Services>, InitError> {
        let config = ServiceConfig {
            public_url: public_url.trim_end_matches('/').to_owned(),
            ..self.settings.config.clone()
        };
        let facilitator = self.facilitator_client.clone().map(|f| {
            let f = f as Arc<dyn verifier_ports::facilitator::Facilitator>;
            if self.settings.metered {
                Arc::new(verifier_service::metered::MeteredFacilitator(f))
                    as Arc<dyn verifier_ports::facilitator::Facilitator>
            } else {
                f
            }
        });
        let payments = PaymentGate::new(facilitator, self.solana_fee_payer.clone());
        let services = Arc::new(Services {
            // Warmed up at init by the functions that verify (`run` with `SchemaEngine`).
            engine: Engine::without_warm_up(EngineConfig {
                public_url: Some(config.public_url.clone()),
                cache_bytes: schema_cache_bytes()?,
                cost_scale_ppm: config.cost_scale_ppm,
                ..EngineConfig::default()
            }),
            config,
            keys: self.keys.clone(),
            store: self.store.clone(),
            clock: Arc::new(verifier_ports::clock::SystemClock),
            payments,
            // One invocation at a time per instance: one worker, no queue to speak of.
            pool: WorkPool::new(PoolConfig {
                workers: 1,
                per_client: 1,
                wait: Duration::from_secs(1),
                share_wait: Duration::from_secs(1),
                // Nobody waits behind the one request an instance serves.
                watch_overruns: false,
            }),
            listings: Default::default(),
            in_flight: Default::default(),
            free_budget: Default::default(),
            blocks: Default::default(),
        });
        // The operator's blocks: read now (one query of the table), then every interval.
        services.blocks.load(services.store.as_ref()).await;
        verifier_service::blocks::BlockList::spawn_refresh(&services, self.settings.blocks_refresh);
        Ok(services)
    }
}

/// A function's router as Lambda serves it (the client address comes with the request,
/// [`event::request_of`]): blocked clients refused, CORS, and a 404 in the error shape for routes of other functions.
pub fn app(router: Router, services: &Arc<Services>) -> Router {
    let config = Arc::new(services.config.clone());
    router
        .route_layer(middleware::from_fn_with_state(
            services.clone(),
            crate::client::refuse_blocked,
        ))
        .route_layer(middleware::from_fn(crate::request_metrics::count))
        .fallback(move || {
            let config = config.clone();
            async move {
                let started = std::time::Instant::now();
                let response =
                    respond::error(&verifier_service::errors::ApiError::NotFound, &config);
                verifier_service::telemetry::request(
                    crate::request_metrics::UNMATCHED,
                    404,
                    started.elapsed().as_secs_f64(),
                );
                response
            }
        })
        .layer(crate::cors::layer())
        .layer(middleware::map_response(respond::nosniff))
}

/// The public URL a request came through: `https://` + `requestContext.domainName` (the
/// `Host` header when the event names none).
pub fn public_url_of<B>(req: &http::Request<B>) -> String {
    let domain = req.extensions().get::<DomainName>().map(|d| d.0.clone());
    let host = domain.or_else(|| {
        req.headers()
            .get("host")
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
    });
    format!("https://{}", host.unwrap_or_else(|| "localhost".into()))
}

/// What a function prepares at init besides its configuration, keys and clients: a type
/// ([`SchemaEngine`] or [`Nothing`]), not a value, so each function's `run` is compiled with
/// its own warm-up and a function that warms nothing up does not link what the warm-up runs
/// (with a runtime value the score package linked the whole schema engine: 5.1 MB zipped
/// instead of 3.8).
pub trait WarmUp {
    /// The work, run on a blocking thread while init waits on SSM; `None`: nothing.
    const WORK: Option<fn()>;
}

/// The schema library's first compile (`engine::warm_up`), so no verification pays for it.
#[derive(Debug, Clone, Copy)]
pub struct SchemaEngine;

impl WarmUp for SchemaEngine {
    const WORK: Option<fn()> = Some(verifier_engine::engine::warm_up);
}

/// Nothing: the function compiles no caller's schema.
#[derive(Debug, Clone, Copy)]
pub struct Nothing;

impl WarmUp for Nothing {
    const WORK: Option<fn()> = None;
}

/// The store a function's services carry: a type, as [`WarmUp`] is, so a function without
/// a table does not link the DynamoDB client (0.2 MB of discovery's zipped package).
pub trait Table {
    /// The store over the table `name`.
    fn store(sdk: &aws_config::SdkConfig, name: &str, retention_days: u32) -> Arc<dyn Store>;
}

/// The DynamoDB table: verify, score and mcp.
#[derive(Debug, Clone, Copy)]
pub struct Dynamo;

impl Table for Dynamo {
    fn store(sdk: &aws_config::SdkConfig, name: &str, retention_days: u32) -> Arc<dyn Store> {
        Arc::new(
            DynamoStore::new(aws_sdk_dynamodb::Client::new(sdk), name)
                .with_outcome_retention(retention_days),
        )
    }
}

/// No table: discovery, whose documents read and write nothing (its IAM policy grants no
/// DynamoDB action); a store call fails, saying so ([`NoTable`]). `VERIFIER_TABLE` is still
/// required of it, as of every function: the settings are shared and the template sets it.
#[derive(Debug, Clone, Copy)]
pub struct WithoutTable;

impl Table for WithoutTable {
    fn store(_sdk: &aws_config::SdkConfig, _name: &str, _retention_days: u32) -> Arc<dyn Store> {
        Arc::new(NoTable)
    }
}

/// Why a function stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Init(#[from] InitError),
    #[error("the async runtime cannot start: {0}")]
    Runtime(#[from] std::io::Error),
    #[error(transparent)]
    RuntimeApi(#[from] ApiError),
}

/// Run a function on Lambda: init (failing loudly, and reported to the Runtime API), then
/// serve every event with the router `build` makes (built on the first request when the
/// public URL is not configured). `W`: what init warms up; `T`: the store.
///
/// A current-thread async runtime serves; the wait for the next event is a blocking read
/// ([`RuntimeApi`], [`lambda_runtime::serve`]).
pub fn run<W, T, F>(_warm_up: W, _table: T, build: F) -> Result<(), RunError>
where
    W: WarmUp,
    T: Table,
    F: Fn(Arc<Services>, &LambdaSettings) -> Router,
{
    init_tracing();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut api = RuntimeApi::from_env()?;
    let started = runtime.block_on(async {
        let emf = init_metrics();
        let settings = LambdaSettings::from_env()?;
        let warming = W::WORK.map(tokio::task::spawn_blocking);
        let init = Init::new::<T>(settings).await?;
        if let Some(task) = warming
            && let Err(e) = task.await
        {
            tracing::warn!(error = %e, "the schema library's warm-up failed; the first compile pays for it");
        }
        let app = match init.settings.public_url.clone() {
            Some(url) => {
                let services = init.services(&url).await?;
                Some(self::app(build(services.clone(), &init.settings), &services))
            }
            None => None,
        };
        Ok::<_, InitError>((init, app, emf))
    });
    let (init, mut app, emf) = match started {
        Ok(started) => started,
        Err(e) => {
            tracing::error!(error = %e, "init failed");
            if let Err(report) = api.init_failed("Runtime.InitError", &e.to_string()) {
                tracing::error!(error = %report, "the init error could not be reported");
            }
            return Err(e.into());
        }
    };
    lambda_runtime::serve(&runtime, api, |invocation| {
        let request = match event::request_of(&invocation.body) {
            Ok(request) => request,
            Err(EventError::NotHttp) => {
                return Err(Failure {
                    kind: "UnsupportedEvent",
                    message: EventError::NotHttp.to_string(),
                });
            }
            Err(malformed @ EventError::Malformed(_)) => {
                tracing::warn!(error = %malformed, "event refused");
                let refusal = respond::error(
                    &verifier_service::errors::ApiError::BadRequest,
                    &init.settings.config,
                );
                return runtime
                    .block_on(event::answer_of(refusal))
                    .map_err(unanswerable);
            }
        };
        runtime.block_on(async {
            let router = match &app {
                Some(router) => router.clone(),
                None => {
                    let services =
                        init.services(&public_url_of(&request))
                            .await
                            .map_err(|e| Failure {
                                kind: "Runtime.InitError",
                                message: e.to_string(),
                            })?;
                    let router = self::app(build(services.clone(), &init.settings), &services);
                    app = Some(router.clone());
                    router
                }
            };
            let response = match router.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            if let Some(emf) = emf {
                verifier_aws_sdk::emf::flush(emf);
            }
            event::answer_of(response).await.map_err(unanswerable)
        })
    })?;
    Ok(())
}

/// A response body that could not be read (none of ours fails).
fn unanswerable(e: axum::Error) -> Failure {
    Failure {
        kind: "Runtime.ResponseBody",
        message: e.to_string(),
    }
}

/// The metrics as CloudWatch Embedded Metric Format lines on stdout
/// ([`verifier_aws_sdk::emf::install`]); described, and this cold start counted.
fn init_metrics() -> Option<&'static metrics_cloudwatch_embedded::Collector> {
    let collector = verifier_aws_sdk::emf::install()?;
    verifier_service::telemetry::describe();
    verifier_service::telemetry::cold_start();
    Some(collector)
}

/// Logs as the Lambda runtime's default subscriber writes them (`AWS_LAMBDA_LOG_LEVEL` or
/// `RUST_LOG`, `AWS_LAMBDA_LOG_FORMAT=JSON`), with rmcp held to warnings: at info it logs each
/// request's method and protocol version, text the caller chose.
pub fn init_tracing() {
    let level = var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|| var("RUST_LOG"))
        .unwrap_or_else(|| "info".into());
    let mut filter = tracing_subscriber::EnvFilter::try_new(level.to_lowercase())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    if let Ok(quiet) = "rmcp=off".parse() {
        filter = filter.add_directive(quiet);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .without_time();
    let json = var("AWS_LAMBDA_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
