//! Denial-of-wallet benchmark: the costliest requests an attacker can build, sent free and
//! unpaid at 32 connections while a legitimate client sends its normal traffic.
//!
//! `cargo run --release -p verifier --example dow -- [--duration 15] [--rate 200]` (run by
//! `scripts/bench.sh`). It starts two `verifier serve` processes from `target/release/verifier`
//! on fresh data directories: one with a large free allowance (the attacker's requests take the
//! free path) and one with none (every request is unpaid: the 402 path). It reports:
//!
//! - per attack kind, the server CPU time of one request (max and mean over sequential sends,
//!   read from `/proc/PID/task/*/schedstat`, nanosecond resolution) on both servers;
//! - the legitimate client's p50/p99 latency and success rate alone, then under attack (fixed
//!   rate, latency counted from each request's scheduled time, so a stall is not hidden);
//! - the attack's mean server CPU per request under load, `/health`'s worst latency during the
//!   attack, and the server's peak RSS (VmHWM).
//!
//! The attacker uses four loopback source addresses (127.0.0.2–5, eight connections each), the
//! legitimate client 127.0.0.1, so per-address limits apply to each as they would in the wild.

use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const INVOICE: &str = include_str!("../../shared/tests/data/hosted-receipts.json");

/// One server process.
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(bin: &Path, allowance: u64) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
            l.local_addr().expect("addr").port()
        };
        let mut child = Command::new(bin)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(dir.path())
            .env("VERIFIER_FREE_ALLOWANCE_PER_DAY", allowance.to_string())
            // The day's free budget would turn a long run's free calls into 402s: no cap here.
            .env("VERIFIER_FREE_CALLS_TOTAL_PER_DAY", "1000000000000")
            .env(
                "VERIFIER_PAY_TO_BASE",
                "0x1111111111111111111111111111111111111111",
            )
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("verifier serve");
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::blocking::Client::builder()
            .use_preconfigured_tls(tls())
            .build()
            .expect("client");
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if client
                .get(format!("{url}/health"))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return Server {
                    child,
                    url,
                    _dir: dir,
                };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the verifier did not start");
    }

    /// The process's CPU time so far, all threads, in nanoseconds.
    fn cpu_ns(&self) -> u64 {
        let tasks = PathBuf::from(format!("/proc/{}/task", self.child.id()));
        std::fs::read_dir(tasks)
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
                    .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// A number from /proc/PID/status (VmHWM and VmRSS in KiB, Threads).
    fn status(&self, key: &str) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(key))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            })
            .unwrap_or(0.0)
    }

    /// VmHWM in MiB.
    fn peak_rss_mib(&self) -> f64 {
        self.status("VmHWM:") / 1024.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The attack: the costliest requests we know how to build, each a JSON body.
fn attacks() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let body = |schema: Value, output: Value| {
        serde_json::to_vec(&json!({"task_id": "t", "agent_id": "rival-agent", "expected_schema": schema, "submitted_output": output, "detail": "compact"}))
            .expect("json")
    };
    // Issue 15, first reproducer: ~8.8 s of CPU before pricing.
    let d1: Vec<Value> = (0..45).map(|_| json!({"$ref": "#/$defs/d0"})).collect();
    let d2: Vec<Value> = (0..45).map(|_| json!({"$ref": "#/$defs/d1"})).collect();
    out.push((
        "word-boundary pattern 45×45 over 30,000 é (62 KB)",
        body(
            json!({"$defs": {"d0": {"pattern": "\\b\\w+\\b$"}, "d1": {"allOf": d1}, "d2": {"allOf": d2}}, "$ref": "#/$defs/d2"}),
            json!("é".repeat(30_000)),
        ),
    ));
    // Second reproducer: ~250 MB of compiled patterns.
    let props: serde_json::Map<String, Value> = (0..100)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "string", "pattern": format!("[a-z]{{20000}}{i}x")}),
            )
        })
        .collect();
    out.push((
        "100 patterns [a-z]{20000}…",
        body(
            json!({"type": "object", "properties": props}),
            json!({"p1": "a"}),
        ),
    ));
    // Third: exponential recursion, 495 bytes.
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!([deep]);
    }
    let branch = json!({"type": "array", "items": {"$ref": "#/$defs/n"}});
    out.push((
        "anyOf recursion over 120 nested arrays (495 B)",
        body(
            json!({"$defs": {"n": {"anyOf": [branch, branch, branch, {"type": "integer"}]}}, "$ref": "#/$defs/n"}),
            deep,
        ),
    ));
    // Our own: 30,000 schema errors to collect and report (within the free size limit).
    out.push((
        "30,000 schema errors (60 KB)",
        body(json!({"items": {"type": "string"}}), json!(vec![1; 30_000])),
    ));
    // 800 unique rules over 6,000 values.
    out.push(("800 unique rules × 6,000 values", {
        let mut v = json!({"task_id": "t", "expected_schema": {}, "submitted_output": {"a": (0..6000).collect::<Vec<_>>()}, "detail": "compact"});
        v["rules"] = json!(vec![json!({"type": "unique", "field": "a[]"}); 800]);
        serde_json::to_vec(&v).expect("json")
    }));
    // A body over the free size limit (unpaid by size): checked in place, never built.
    out.push((
        "900 KB body over the free size limit",
        body(json!({"type": "array"}), json!(vec![0; 450_000])),
    ));
    // Just-free work: patterns and formats over a large output, served when within budget.
    out.push((
        "2,000 emails against a pattern and format (free work)",
        body(
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": {"type": "string", "format": "email", "pattern": "^[a-z0-9.]+@[a-z0-9.]+\\.[a-z]{2,}$"}}),
            json!((0..2000).map(|i| format!("user{i}@mail.example.com")).collect::<Vec<_>>()),
        ),
    ));
    out
}

/// Sequential sends of each attack: the server CPU of one request.
fn cpu_per_request(
    server: &Server,
    attacks: &[(&str, Vec<u8>)],
    runs: usize,
) -> Vec<(u64, u64, u16)> {
    let client = reqwest::blocking::Client::builder()
        .use_preconfigured_tls(tls())
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9)))
        .build()
        .expect("client");
    let url = format!("{}/verify/schema", server.url);
    attacks
        .iter()
        .map(|(_, body)| {
            let (mut max, mut sum, mut status) = (0u64, 0u64, 0u16);
            for _ in 0..runs {
                let before = server.cpu_ns();
                let r = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .expect("answer");
                status = r.status().as_u16();
                let _ = r.bytes();
                // Let the server's threads account the request's tail (writer, drop).
                std::thread::sleep(Duration::from_millis(20));
                let spent = server.cpu_ns().saturating_sub(before);
                max = max.max(spent);
                sum += spent;
            }
            (max, sum / runs as u64, status)
        })
        .collect()
}

#[derive(Default)]
struct Latencies {
    ok: u64,
    failed: u64,
    micros: Vec<u64>,
}

impl Latencies {
    fn pct(&mut self, p: f64) -> f64 {
        if self.micros.is_empty() {
            return f64::NAN;
        }
        self.micros.sort_unstable();
        let i = ((self.micros.len() as f64 - 1.0) * p).round() as usize;
        self.micros[i] as f64 / 1000.0
    }
}

/// The legitimate client: `rate` requests per second for `duration`, from 127.0.0.1.
async fn legitimate(url: String, body: Vec<u8>, rate: u64, duration: Duration) -> Latencies {
    let client = verifier_facilitator_http::tls::reqwest_builder()
        .expect("the TLS configuration")
        .local_address(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .pool_max_idle_per_host(64)
        .build()
        .expect("client");
    let results = Arc::new(std::sync::Mutex::new(Latencies::default()));
    let start = tokio::time::Instant::now();
    let every = Duration::from_nanos(1_000_000_000 / rate.max(1));
    let total = duration.as_nanos() / every.as_nanos();
    let mut tasks = Vec::new();
    for i in 0..total as u32 {
        let scheduled = start + every * i;
        tokio::time::sleep_until(scheduled).await;
        let (client, url, body, results) =
            (client.clone(), url.clone(), body.clone(), results.clone());
        tasks.push(tokio::spawn(async move {
            let answer = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            let ok = match answer {
                Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                Err(_) => false,
            };
            let micros = scheduled.elapsed().as_micros() as u64;
            if let Ok(mut l) = results.lock() {
                if ok {
                    l.ok += 1;
                } else {
                    l.failed += 1;
                }
                l.micros.push(micros);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    std::mem::take(&mut *results.lock().expect("results"))
}

/// The attacker: 32 connections (four source addresses × eight) sending the attacks in turn
/// until `stop`; counts requests by status class.
async fn attacker(
    url: String,
    attacks: Arc<Vec<(&'static str, Vec<u8>)>>,
    stop: Arc<AtomicBool>,
) -> [u64; 6] {
    let counts: Arc<[AtomicU64; 6]> = Arc::new(Default::default());
    let mut tasks = Vec::new();
    for source in 2..6u8 {
        let client = verifier_facilitator_http::tls::reqwest_builder()
            .expect("the TLS configuration")
            .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, source)))
            .build()
            .expect("client");
        for conn in 0..8usize {
            let (client, url, attacks, stop, counts) = (
                client.clone(),
                url.clone(),
                attacks.clone(),
                stop.clone(),
                counts.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut i = conn;
                while !stop.load(Ordering::Relaxed) {
                    let body = attacks[i % attacks.len()].1.clone();
                    i += 1;
                    let slot = match client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                    {
                        Ok(r) => {
                            let s = r.status().as_u16();
                            let _ = r.bytes().await;
                            match s {
                                200 => 0,
                                402 => 1,
                                422 => 2,
                                429 => 3,
                                _ => 4,
                            }
                        }
                        Err(_) => 5,
                    };
                    counts[slot].fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    std::array::from_fn(|i| counts[i].load(Ordering::Relaxed))
}

/// `/health` every 50 ms until `stop`: the worst latency seen, in ms.
async fn health_watch(url: String, stop: Arc<AtomicBool>) -> f64 {
    let client = verifier_facilitator_http::tls::reqwest_builder()
        .expect("the TLS configuration")
        .build()
        .expect("client");
    let mut worst = 0f64;
    while !stop.load(Ordering::Relaxed) {
        let t = Instant::now();
        let _ = client.get(format!("{url}/health")).send().await;
        worst = worst.max(t.elapsed().as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worst
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let duration = Duration::from_secs(arg("--duration", 15));
    let rate = arg("--rate", 200);
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/verifier");
    let invoice: Value = serde_json::from_str(INVOICE).expect("receipts");
    let legit_body = invoice["receipts"][0]["request_body_json"]
        .as_str()
        .expect("the invoice example")
        .replace("test-seller-invoice-agent", "seller-bench")
        .into_bytes();
    let attacks = attacks();

    println!("== CPU of one request, sent alone (server CPU, all threads; 10 sends each)");
    println!(
        "| attack | bytes | free path: status, max, mean | unpaid (402) path: status, max, mean |"
    );
    println!("|---|---|---|---|");
    let free = Server::start(&bin, 1_000_000_000);
    let unpaid = Server::start(&bin, 0);
    let on_free = cpu_per_request(&free, &attacks, 10);
    let on_unpaid = cpu_per_request(&unpaid, &attacks, 10);
    let mut worst_unpaid = 0u64;
    for (i, (name, body)) in attacks.iter().enumerate() {
        let (fmax, fmean, fs) = on_free[i];
        let (umax, umean, us) = on_unpaid[i];
        // Every request here is either unpaid or refused: none is a paid answer.
        worst_unpaid = worst_unpaid.max(umax).max(if fs == 200 { 0 } else { fmax });
        println!(
            "| {name} | {} | {fs}, {:.2} ms, {:.2} ms | {us}, {:.2} ms, {:.2} ms |",
            body.len(),
            fmax as f64 / 1e6,
            fmean as f64 / 1e6,
            umax as f64 / 1e6,
            umean as f64 / 1e6
        );
    }
    println!(
        "worst server CPU of one refused or unpaid request: {:.2} ms",
        worst_unpaid as f64 / 1e6
    );
    drop(unpaid);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let url = format!("{}/verify/schema", free.url);
    let cpu0 = free.cpu_ns();
    let mut alone = runtime.block_on(legitimate(url.clone(), legit_body.clone(), rate, duration));
    let legit_cpu_per_request =
        free.cpu_ns().saturating_sub(cpu0) / (alone.ok + alone.failed).max(1);
    println!(
        "\n== legitimate client alone: {rate}/s for {} s: p50 {:.2} ms, p99 {:.2} ms, {} ok, {} failed",
        duration.as_secs(),
        alone.pct(0.5),
        alone.pct(0.99),
        alone.ok,
        alone.failed
    );

    let stop = Arc::new(AtomicBool::new(false));
    let attacks = Arc::new(attacks);
    let cpu1 = free.cpu_ns();
    // The attacker runs on its own runtime (and thread), so its load does not delay the
    // legitimate client's own scheduling in this process.
    let attack_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("attack runtime");
    let attack = attack_runtime.spawn(attacker(url.clone(), attacks.clone(), stop.clone()));
    let health = attack_runtime.spawn(health_watch(free.url.clone(), stop.clone()));
    std::thread::sleep(Duration::from_millis(500));
    let mut under = runtime.block_on(legitimate(url.clone(), legit_body.clone(), rate, duration));
    stop.store(true, Ordering::Relaxed);
    let (counts, health) = attack_runtime.block_on(async {
        (
            attack.await.unwrap_or_default(),
            health.await.unwrap_or(f64::NAN),
        )
    });
    let spent = free.cpu_ns().saturating_sub(cpu1);
    let attack_requests: u64 = counts.iter().sum();
    let attack_cpu = spent.saturating_sub(legit_cpu_per_request * (under.ok + under.failed));
    let (p99_alone, p99_under) = (alone.pct(0.99), under.pct(0.99));
    println!(
        "== under attack (32 connections from 4 addresses): p50 {:.2} ms, p99 {:.2} ms ({:.2}× alone), {} ok, {} failed ({:.2} % success)",
        under.pct(0.5),
        p99_under,
        p99_under / p99_alone,
        under.ok,
        under.failed,
        100.0 * under.ok as f64 / (under.ok + under.failed).max(1) as f64
    );
    println!(
        "   attack requests: {attack_requests} (200: {}, 402: {}, 422: {}, 429: {}, other: {}, failed: {}); mean server CPU per attack request {:.3} ms",
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        counts[4],
        counts[5],
        attack_cpu as f64 / attack_requests.max(1) as f64 / 1e6
    );
    println!("   /health worst latency during the attack: {health:.1} ms");
    println!(
        "   server peak RSS (VmHWM): {:.1} MiB; after: RSS {:.1} MiB, {} threads",
        free.peak_rss_mib(),
        free.status("VmRSS:") / 1024.0,
        free.status("Threads:")
    );
}

/// Our TLS configuration for the blocking clients (the async ones start from
/// `verifier_facilitator_http::tls::reqwest_builder`): reqwest has no crypto provider of its own.
fn tls() -> rustls::ClientConfig {
    verifier_facilitator_http::tls::client_config().expect("the TLS configuration")
}
