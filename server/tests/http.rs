//! The local server over real HTTP on loopback: allowance exactness under concurrency, the
//! UTC-day reset, errors that never echo input, limits, connections after an early answer, and
//! persistence across restarts.

use serde_json::{Value, json};
use std::sync::Arc;
use time::macros::datetime;
use verifier::serve::{LocalServer, app};
use verifier_ports::clock::{Clock, ManualClock, SystemClock};
use verifier_ports::keys::StaticKeys;
use verifier_ports::store::Store;
use verifier_receipt::keys::SigningIdentity;
use verifier_service::config::ServiceConfig;
use verifier_store_embedded::EmbeddedStore;

const INVOICE: &str = include_str!("../../shared/tests/data/hosted-receipts.json");

fn invoice_request() -> String {
    let data: Value = serde_json::from_str(INVOICE).expect("json");
    data["receipts"][0]["request_body_json"]
        .as_str()
        .expect("body")
        .to_owned()
}

struct Running {
    base: String,
    _dir: tempfile::TempDir,
    store: Arc<EmbeddedStore>,
}

async fn start(free_per_day: u64, clock: Arc<dyn Clock>) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let config = ServiceConfig {
        public_url: format!("http://{addr}"),
        free_per_day,
        free_body_limit: 16 * 1024,
        hard_body_limit: 64 * 1024,
        pay_to_base: Some("0x1111111111111111111111111111111111111111".into()),
        ..ServiceConfig::default()
    };
    let router = app(LocalServer {
        mcp: mcp_function::McpAccess::default(),
        config,
        keys: Arc::new(StaticKeys::new(
            SigningIdentity::from_seed("test-key", &[3u8; 32]).expect("key"),
            vec![],
        )),
        store: store.clone(),
        clock,
        payments: verifier_service::payments::PaymentGate::new(None, None),
        schema_cache_bytes: 8 << 20,
        pool: Default::default(),
    });
    // The local server's own accept loop, as `verifier serve` runs it.
    tokio::spawn(verifier::listener::serve(
        listener,
        router,
        1 << 20,
        Default::default(),
        std::future::pending(),
    ));
    Running {
        base: format!("http://{addr}"),
        _dir: dir,
        store,
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let bytes = r.bytes().await.expect("body");
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowance_is_exact_under_100_concurrent_requests() {
    let server = start(20, Arc::new(SystemClock)).await;
    let client = client();
    let url = format!("{}/verify/schema", server.base);
    let body = invoice_request().replace("test-seller-invoice-agent", "seller-concurrency");
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move { post(&client, &url, body).await }));
    }
    let mut ok = 0;
    let mut paid = 0;
    let mut remaining = Vec::new();
    for t in tasks {
        let (status, headers, _) = t.await.expect("task");
        match status {
            200 => {
                ok += 1;
                remaining.push(
                    headers["free-allowance-remaining"]
                        .to_str()
                        .expect("h")
                        .parse::<u64>()
                        .expect("n"),
                );
            }
            402 => paid += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((ok, paid), (20, 80));
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..20).collect::<Vec<u64>>(),
        "the headers count down 19..0"
    );
    let history = server
        .store
        .history("seller-concurrency", 100)
        .await
        .expect("history");
    assert_eq!(
        history.passes + history.fails,
        20,
        "every answered call is recorded, no other"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_utc_day_resets_the_allowance() {
    let clock = Arc::new(ManualClock::new(datetime!(2026-12-02 23:59:58 UTC)));
    let server = start(2, clock.clone()).await;
    let client = client();
    let url = format!("{}/verify/schema", server.base);
    for expected in [200, 200, 402] {
        let (status, headers, body) = post(&client, &url, invoice_request()).await;
        assert_eq!(status, expected);
        if status == 402 {
            assert_eq!(body["free_trial"]["code"], "free_trial_exhausted");
            assert_eq!(body["free_trial"]["resets_at"], "2026-12-03T00:00:00Z");
            assert!(headers.contains_key("payment-required"));
        } else {
            assert_eq!(headers["free-allowance-resets"], "2026-12-03T00:00:00Z");
        }
    }
    clock.set(datetime!(2026-12-03 00:00:01 UTC));
    let (status, headers, _) = post(&client, &url, invoice_request()).await;
    assert_eq!(status, 200);
    assert_eq!(headers["free-allowance-remaining"], "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_never_echo_a_planted_marker() {
    let server = start(100, Arc::new(SystemClock)).await;
    let client = client();
    let url = format!("{}/verify/schema", server.base);
    let m = "MARKER-c0ffee-91";
    let bad_bodies = vec![
        json!({"task_id": m, "expected_schema": {"type": "object"}}).to_string(),
        json!({"task_id": m.repeat(20), "expected_schema": {}, "submitted_output": 1}).to_string(),
        json!({"task_id": "t", "agent_id": 5, "expected_schema": {"type": m}, "submitted_output": m}).to_string(),
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": 1, m: true}).to_string(),
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": 1, "rules": [{"type": m, "field": m}]}).to_string(),
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": 1, "rules": [{"type": "unique", "field": format!("{m}[0]")}]}).to_string(),
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": 1, "bounds": {format!("{m}..x"): {"min": 1}}}).to_string(),
        json!({"task_id": "t", "expected_schema": {"$ref": format!("http://127.0.0.1:9/{m}.json")}, "submitted_output": 1}).to_string(),
        json!({"task_id": "t", "expected_schema": {"pattern": format!("(?<={m})x")}, "submitted_output": "x"}).to_string(),
        json!({"task_id": "t", "expected_schema": {"$schema": format!("http://{m}/schema")}, "submitted_output": 1}).to_string(),
        format!(r#"{{"task_id": "t", "expected_schema": {{}}, "submitted_output": {{"{m}": 1, "{m}": 2}}}}"#),
        format!(r#"{{"task_id": "{m}", "expected_schema": {{}}, "submitted_output": 9007199254740993}}"#),
        format!(r#"{{"task_id": "{m}", "expected_schema": "#),
        format!(r#"{{"task_id": "{m}" "#),
        format!("[\"{m}\"]"),
    ];
    for body in bad_bodies {
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("send");
        let status = r.status().as_u16();
        let text = r.text().await.expect("text");
        assert_eq!(status, 422, "{body} → {text}");
        assert!(!text.contains("MARKER"), "echoed: {text}");
        let v: Value = serde_json::from_str(&text).expect("error json");
        assert_eq!(v["code"], "invalid_request");
        assert_eq!(v["charged"], false);
        assert!(!v["fields"].as_array().expect("fields").is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_probe_media_type_and_methods() {
    let server = start(100, Arc::new(SystemClock)).await;
    let client = client();
    let url = format!("{}/verify/schema", server.base);
    // Over the hard limit (64 KiB here): 413 stating the limit.
    let big =
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": "x".repeat(70_000)})
            .to_string();
    let (status, _, body) = post(&client, &url, big).await;
    assert_eq!(status, 413);
    assert!(body["message"].as_str().expect("m").contains("65536"));
    // Between the free and hard limits: payment, allowance untouched.
    let mid =
        json!({"task_id": "t", "expected_schema": {}, "submitted_output": "x".repeat(20_000)})
            .to_string();
    let (status, _, body) = post(&client, &url, mid).await;
    assert_eq!(status, 402);
    assert_eq!(body["free_trial"]["remaining_calls_today"], 100);
    // No body: the x402 discovery probe.
    let r = client.post(&url).send().await.expect("send");
    assert_eq!(r.status().as_u16(), 402);
    assert!(r.headers().contains_key("payment-required"));
    // Not JSON.
    let r = client
        .post(&url)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 415);
    // Wrong method and unknown route: the error shape.
    let r = client.get(&url).send().await.expect("send");
    assert_eq!(r.status().as_u16(), 405);
    let v: Value = serde_json::from_slice(&r.bytes().await.expect("bytes")).expect("json");
    assert_eq!(v["code"], "method_not_allowed");
    let r = client
        .get(format!("{}/nope", server.base))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 404);
    // A request carrying a payment is never answered for free.
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .header("payment-signature", "e30=")
        .body(invoice_request())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 402);
    // X-Forwarded-For does not change who the client is.
    let (status, headers, _) = post(&client, &url, invoice_request()).await;
    assert_eq!(status, 200);
    let before: u64 = headers["free-allowance-remaining"]
        .to_str()
        .expect("h")
        .parse()
        .expect("n");
    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .header("x-forwarded-for", "203.0.113.9")
        .body(invoice_request())
        .send()
        .await
        .expect("send");
    assert_eq!(
        r.headers()["free-allowance-remaining"]
            .to_str()
            .expect("h")
            .parse::<u64>()
            .expect("n"),
        before - 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_ids_and_null_agents_leave_no_history() {
    let server = start(100, Arc::new(SystemClock)).await;
    let client = client();
    let url = format!("{}/verify/schema", server.base);
    let (status, _, _) = post(&client, &url, invoice_request()).await;
    assert_eq!(status, 200);
    let h = server
        .store
        .history("test-seller-invoice-agent", 10)
        .await
        .expect("h");
    assert_eq!(h.passes + h.fails, 0);
    let named = invoice_request().replace("test-seller-invoice-agent", "seller-9");
    post(&client, &url, named.clone()).await;
    post(
        &client,
        &format!("{}/verify/deliverable", server.base),
        named,
    )
    .await;
    let h = server.store.history("seller-9", 10).await.expect("h");
    assert_eq!((h.passes, h.fails, h.recent.len()), (0, 2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store_keeps_counts_and_history_across_reopen() {
    use verifier_ports::store::{FreeClaim, Outcome};
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = |n: u32| Outcome {
        agent_id: "seller-restart".into(),
        verification_id: format!("v-{n}"),
        result: if n.is_multiple_of(2) { "pass" } else { "fail" }.into(),
        verified_at: format!("2026-12-02T10:00:0{n}.000000+00:00"),
        signed_deliverable: None,
        paid: false,
        checks: 1,
    };
    {
        let store = EmbeddedStore::open(dir.path()).expect("open");
        for n in 0..3 {
            let claim = store
                .claim_free("10.0.0.1", "2026-12-02", 5, Some(outcome(n)))
                .await
                .expect("claim");
            assert_eq!(
                claim,
                FreeClaim::Granted {
                    used: u64::from(n) + 1
                }
            );
        }
    }
    // The writer thread lets go of the file once the store is dropped.
    let mut reopened = None;
    for _ in 0..100 {
        match EmbeddedStore::open(dir.path()) {
            Ok(s) => {
                reopened = Some(s);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    let store = reopened.expect("reopened");
    assert_eq!(
        store
            .free_used("10.0.0.1", "2026-12-02")
            .await
            .expect("used"),
        3
    );
    let h = store.history("seller-restart", 10).await.expect("history");
    assert_eq!((h.passes, h.fails), (2, 1));
    assert_eq!(
        h.recent
            .iter()
            .map(|o| o.verification_id.as_str())
            .collect::<Vec<_>>(),
        ["v-2", "v-1", "v-0"]
    );
    assert_eq!(
        h.first_seen.as_deref(),
        Some("2026-12-02T10:00:00.000000+00:00")
    );
    assert_eq!(
        store
            .claim_free("10.0.0.1", "2026-12-02", 3, None)
            .await
            .expect("claim"),
        FreeClaim::Exhausted { used: 3 }
    );
}

/// A client for the loopback server (reqwest needs our TLS configuration even for plain HTTP).
fn client() -> reqwest::Client {
    verifier_facilitator_http::tls::reqwest_builder()
        .expect("the TLS configuration")
        .build()
        .expect("an HTTP client")
}

/// Send `request` on `stream` and read one response head and its `Content-Length` body.
async fn exchange(stream: &mut tokio::net::TcpStream, request: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request).await.expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .expect("read");
        assert!(n > 0, "the server closed without answering");
        got.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&got).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let head = text[..end].to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().expect("length"));
            if got.len() >= end + 4 + length {
                let status = head[9..12].parse().expect("status");
                return (status, head);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_before_the_body_is_read_closes_the_connection() {
    let server = start(100, Arc::new(SystemClock)).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    // First, the body has not been sent when the server answers (as when a client's second
    // packet is late): the answer must say the connection closes, or the client reuses a closing
    // one. Then the body sent with the headers but never read by the route: still closed.
    let early: [&[u8]; 2] = [
        b"POST /health HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n",
        b"PUT /verify/schema HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
    ];
    for request in early {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        let (status, head) = exchange(&mut stream, request).await;
        assert_eq!(status, 405);
        assert!(head.contains("connection: close"), "{head}");
    }
    // A request without a body, and one whose body the route reads, keep the connection.
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let (status, head) = exchange(&mut stream, b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(status, 200);
    assert!(!head.contains("connection: close"), "{head}");
    let body = invoice_request();
    let request = format!(
        "POST /verify/schema HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, head) = exchange(&mut stream, request.as_bytes()).await;
    assert_eq!(status, 200);
    assert!(!head.contains("connection: close"), "{head}");
    let (status, _) = exchange(&mut stream, b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert_eq!(status, 200, "the connection stayed open");
}
