//! What a backup costs: a store with N outcomes (N from the first argument, default 200,000,
//! across 1,000 agents), its file size, the backup's time and size, and how many outcomes a
//! concurrent writer recorded while the backup ran (readers do not block the writer).
//! `cargo run --release -p verifier-store-embedded --example backup_cost -- 200000`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use verifier_ports::store::{Outcome, Store};
use verifier_store_embedded::{Durability, EmbeddedStore};

fn outcome(i: u64) -> Outcome {
    Outcome {
        agent_id: format!("agent-{:04}", i % 1000),
        verification_id: format!("{:032x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        result: if i.is_multiple_of(3) { "fail" } else { "pass" }.into(),
        verified_at: "2026-12-07T12:00:00.000000+00:00".into(),
        signed_deliverable: None,
        paid: i.is_multiple_of(10),
        checks: 5,
    }
}

#[tokio::main]
async fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(
        EmbeddedStore::open_with(
            dir.path(),
            Durability::Periodic(std::time::Duration::from_millis(50)),
        )
        .expect("store"),
    );
    let filled = Instant::now();
    let mut pending = Vec::new();
    for i in 0..n {
        let store = store.clone();
        pending.push(tokio::spawn(async move { store.record(outcome(i)).await }));
        if pending.len() == 512 {
            for p in pending.drain(..) {
                p.await.expect("task").expect("record");
            }
        }
    }
    for p in pending {
        p.await.expect("task").expect("record");
    }
    println!(
        "filled {n} outcomes in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let file = std::fs::metadata(dir.path().join("verifier.redb"))
        .expect("file")
        .len();

    // A writer keeps recording while the backup runs.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, stop, written) = (store.clone(), stop.clone(), written.clone());
        tokio::spawn(async move {
            let mut i = n;
            while !stop.load(Ordering::Relaxed) {
                store.record(outcome(i)).await.expect("record");
                written.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        })
    };
    let started = Instant::now();
    let summary = store
        .backup(&dir.path().join("backup.redb"))
        .await
        .expect("backup");
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("writer");
    println!(
        "store file {:.1} MB ({:.0} bytes per outcome); backup {:.1} MB, {} outcomes, in {:.2} s; {} outcomes recorded meanwhile",
        file as f64 / 1e6,
        file as f64 / n as f64,
        summary.bytes as f64 / 1e6,
        summary.outcomes,
        took.as_secs_f64(),
        written.load(Ordering::Relaxed)
    );
}
