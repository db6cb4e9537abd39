//! Every API Gateway sample event in `events/` through its function's Lambda handler
//! (`function_common::runtime::event::request_of` → the function's router as `lambda::app` wraps it), with the
//! status, content type, body keys, JSON values and headers `events/manifest.json` expects.

use axum::Router;
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tower::ServiceExt;
use verifier_engine::{Engine, EngineConfig};
use verifier_ports::keys::StaticKeys;
use verifier_receipt::keys::SigningIdentity;
use verifier_service::Services;
use verifier_service::config::ServiceConfig;
use verifier_store_embedded::EmbeddedStore;

const PUBLIC_URL: &str = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com";

fn events_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../events")
}

fn services(dir: &Path) -> Arc<Services> {
    services_with(dir, ServiceConfig::default().free_per_day)
}

fn services_with(dir: &Path, free_per_day: u64) -> Arc<Services> {
    let config = ServiceConfig {
        public_url: PUBLIC_URL.into(),
        pay_to_base: Some("0x1111111111111111111111111111111111111111".into()),
        free_per_day,
        ..ServiceConfig::default()
    };
    Arc::new(Services {
        engine: Engine::new(EngineConfig {
            public_url: Some(PUBLIC_URL.into()),
            ..EngineConfig::default()
        }),
        config,
        keys: Arc::new(StaticKeys::new(
            SigningIdentity::from_seed("events-key", &[5u8; 32]).expect("key"),
            vec![],
        )),
        store: Arc::new(EmbeddedStore::open(dir).expect("store")),
        clock: Arc::new(verifier_ports::clock::SystemClock),
        payments: verifier_service::payments::PaymentGate::new(None, None),
        pool: verifier_service::pool::WorkPool::new(Default::default()),
        listings: Default::default(),
        in_flight: Default::default(),
        free_budget: Default::default(),
        blocks: Default::default(),
    })
}

/// The same services without a table, as discovery's are on Lambda (`WithoutTable`): a
/// discovery route that touched the store would fail here too.
fn without_table(s: &Services) -> Arc<Services> {
    Arc::new(Services {
        engine: Engine::new(EngineConfig {
            public_url: Some(PUBLIC_URL.into()),
            ..EngineConfig::default()
        }),
        config: s.config.clone(),
        keys: s.keys.clone(),
        store: Arc::new(verifier_ports::no_table::NoTable),
        clock: s.clock.clone(),
        payments: verifier_service::payments::PaymentGate::new(None, None),
        pool: verifier_service::pool::WorkPool::new(Default::default()),
        listings: Default::default(),
        in_flight: Default::default(),
        free_budget: Default::default(),
        blocks: Default::default(),
    })
}

/// The router a function's `main.rs` hands to `lambda::run`, wrapped as Lambda serves it.
fn function_app(name: &str, s: &Arc<Services>) -> Router {
    let router = match name {
        "verify" => verify_function::router(s.clone()),
        "score" => score_function::router(s.clone()),
        "discovery" => discovery_function::router(without_table(s)),
        "mcp" => mcp_function::router(
            s.clone(),
            &mcp_function::McpAccess::behind_gateway(PUBLIC_URL, &[], &[]),
        ),
        other => panic!("manifest names an unknown HTTP function {other}"),
    };
    function_common::lambda::app(router, s)
}

fn pointer_matches(body: &Value, pointer: &str, want: &Value) -> Result<(), String> {
    match body.pointer(pointer) {
        Some(got) if got == want => Ok(()),
        Some(got) => Err(format!("{pointer}: {got} != {want}")),
        None => Err(format!("{pointer} is missing")),
    }
}

async fn run_event(entry: &Value, apps: &std::collections::HashMap<&str, Router>) -> Vec<String> {
    let file = entry["file"].as_str().expect("file");
    let function = entry["function"].as_str().expect("function");
    let text = std::fs::read_to_string(events_dir().join(file)).expect("event file");
    let request =
        function_common::runtime::event::request_of(text.as_bytes()).expect("an API Gateway event");
    let response = apps[function]
        .clone()
        .oneshot(request)
        .await
        .expect("infallible router");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let mut problems = Vec::new();
    if let Some(want) = entry["expect_status"].as_u64()
        && u64::from(status) != want
    {
        problems.push(format!(
            "status {status} != {want}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
        ));
    }
    if let Some(prefix) = entry["expect_content_type_prefix"].as_str() {
        let ct = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !ct.starts_with(prefix) {
            problems.push(format!(
                "content-type {ct:?} does not start with {prefix:?}"
            ));
        }
    }
    for name in entry["expect_headers"].as_array().into_iter().flatten() {
        let name = name.as_str().expect("header name");
        if !headers.contains_key(name) {
            problems.push(format!("header {name} missing"));
        }
    }
    let needs_json =
        entry.get("expect_json_keys").is_some() || entry.get("expect_json_pointers").is_some();
    if needs_json {
        match serde_json::from_slice::<Value>(&bytes) {
            Err(e) => problems.push(format!("body is not JSON: {e}")),
            Ok(body) => {
                for key in entry["expect_json_keys"].as_array().into_iter().flatten() {
                    let key = key.as_str().expect("key");
                    if body.get(key).is_none() {
                        problems.push(format!("key {key} missing"));
                    }
                }
                for (pointer, want) in entry["expect_json_pointers"]
                    .as_object()
                    .into_iter()
                    .flatten()
                {
                    if let Err(p) = pointer_matches(&body, pointer, want) {
                        problems.push(p);
                    }
                }
            }
        }
    }
    problems
        .into_iter()
        .map(|p| format!("{file} ({function}): {p}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_event_gives_the_expected_answer() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(events_dir().join("manifest.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let dir = tempfile::tempdir().expect("tempdir");
    let s = services(dir.path());
    let apps: std::collections::HashMap<&str, Router> = ["verify", "score", "discovery", "mcp"]
        .into_iter()
        .map(|name| (name, function_app(name, &s)))
        .collect();
    let entries = manifest.as_array().expect("a list");
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in entries {
        if entry["function"] == "rotate-key" {
            continue; // run by functions/rotate-key/tests against moto
        }
        failures.extend(run_event(entry, &apps).await);
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} HTTP events in the manifest");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_event_file_is_in_the_manifest() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(events_dir().join("manifest.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    let listed: std::collections::BTreeSet<String> = manifest
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["file"].as_str().expect("file").to_owned())
        .collect();
    for entry in std::fs::read_dir(events_dir()).expect("events/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".json") && name != "manifest.json" {
            assert!(
                listed.contains(&name),
                "{name} is not in events/manifest.json"
            );
        }
    }
}

/// Every route the functions serve has a sample event (its API Gateway route key), so
/// `cargo lambda invoke` and the handler tests cover each one.
#[test]
fn every_route_has_a_sample_event() {
    let mut route_keys = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(events_dir()).expect("events/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "json") && !path.ends_with("manifest.json") {
            let event: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("event"))
                    .expect("JSON");
            if let Some(key) = event["routeKey"].as_str() {
                route_keys.insert(key.to_owned());
            }
        }
    }
    let missing: Vec<String> = verifier_service::routes::ROUTES
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .filter(|key| !route_keys.contains(key))
        .collect();
    assert!(
        missing.is_empty(),
        "no sample event in events/ for {missing:?}"
    );
}

/// The allowance follows API Gateway's `sourceIp`: an IPv6 caller is its /64, so new addresses
/// in one /64 share one allowance while another /64 has its own; an IPv4 caller is its address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowance_is_per_ipv4_address_and_per_ipv6_network() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = services_with(dir.path(), 1);
    let app = function_app("verify", &s);
    let text =
        std::fs::read_to_string(events_dir().join("verify-schema-pass.json")).expect("event");
    let status_from = |ip: &'static str| {
        let app = app.clone();
        let mut event: Value = serde_json::from_str(&text).expect("event JSON");
        event["requestContext"]["http"]["sourceIp"] = ip.into();
        async move {
            let request = function_common::runtime::event::request_of(event.to_string().as_bytes())
                .expect("event");
            app.oneshot(request)
                .await
                .expect("infallible router")
                .status()
                .as_u16()
        }
    };
    assert_eq!(status_from("2001:db8:1:2::1").await, 200);
    assert_eq!(status_from("2001:db8:1:2:ffff:1234:5678:9abc").await, 402);
    assert_eq!(status_from("2001:db8:1:3::1").await, 200);
    assert_eq!(status_from("198.51.100.7").await, 200);
    assert_eq!(status_from("::ffff:198.51.100.7").await, 402);
    assert_eq!(status_from("198.51.100.8").await, 200);
}
