//! The embedded store keeps the free allowance's rows of a day and the two after it, as
//! DynamoDB's TTL does: claims two days later drop the older rows, a bounded number per group,
//! a replay of the journal drops the same ones, and a store written before keeps its counts.

use std::path::Path;
use std::time::Duration;
use verifier_ports::store::{FreeClaim, Store};
use verifier_store_embedded::{Durability, EmbeddedStore};

fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_checkpoints(dir, Durability::Sync, Duration::from_secs(3600))
        .expect("store opens")
}

fn client(n: usize) -> String {
    format!("198.51.100.{n}")
}

async fn claim(store: &EmbeddedStore, client: &str, day: &str) -> FreeClaim {
    store
        .claim_free(client, day, 1000, None)
        .await
        .expect("claim")
}

/// How many of clients `0..n` still have a row (one call used) on `day`.
async fn rows_left(store: &EmbeddedStore, day: &str, n: usize) -> usize {
    let mut left = 0;
    for i in 0..n {
        if store.free_used(&client(i), day).await.expect("read") > 0 {
            left += 1;
        }
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_drops_the_days_before_the_two_it_keeps_and_nothing_newer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for day in ["2026-12-01", "2026-12-02", "2026-12-03"] {
        for i in 0..3 {
            claim(&store, &client(i), day).await;
        }
    }
    // Claims on the 3rd kept the 1st (it is kept through the 3rd).
    assert_eq!(rows_left(&store, "2026-12-01", 3).await, 3);
    assert_eq!(
        claim(&store, &client(9), "2026-12-04").await,
        FreeClaim::Granted { used: 1 }
    );
    assert_eq!(rows_left(&store, "2026-12-01", 3).await, 0);
    assert_eq!(rows_left(&store, "2026-12-02", 3).await, 3);
    assert_eq!(rows_left(&store, "2026-12-03", 3).await, 3);
    // A day's own count goes on where it was.
    assert_eq!(
        claim(&store, &client(0), "2026-12-03").await,
        FreeClaim::Granted { used: 2 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_drops_at_most_64_rows_more_than_its_claims() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for i in 0..300 {
        claim(&store, &client(i), "2026-11-20").await;
    }
    // Each claim below is a group of one (awaited in turn): it drops 65 old rows.
    let mut expected = 300;
    for i in 0..4 {
        claim(&store, &client(i), "2026-12-06").await;
        expected -= 65;
        assert_eq!(rows_left(&store, "2026-11-20", 300).await, expected);
    }
    claim(&store, &client(4), "2026-12-06").await;
    assert_eq!(rows_left(&store, "2026-11-20", 300).await, 0);
    assert_eq!(rows_left(&store, "2026-12-06", 5).await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_journal_drops_the_rows_its_first_application_dropped() {
    let live = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    let store = open(live.path());
    for i in 0..100 {
        claim(&store, &client(i), "2026-11-20").await;
    }
    drop(store);
    let store = open(live.path());
    // What the disk holds of the B-tree: its last durable commit (at open).
    std::fs::copy(
        live.path().join("verifier.redb"),
        crashed.path().join("verifier.redb"),
    )
    .expect("copy");
    claim(&store, &client(0), "2026-12-06").await;
    assert_eq!(rows_left(&store, "2026-11-20", 100).await, 35);
    std::fs::copy(
        live.path().join("verifier.journal"),
        crashed.path().join("verifier.journal"),
    )
    .expect("copy");
    let recovered = open(crashed.path());
    assert_eq!(rows_left(&recovered, "2026-11-20", 100).await, 35);
    assert_eq!(
        recovered
            .free_used(&client(0), "2026-12-06")
            .await
            .expect("read"),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_written_before_days_were_kept_apart_keeps_its_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The allowance table as stores before kept it: `client|day` → calls used.
    {
        let db = redb::Database::create(dir.path().join("verifier.redb")).expect("db");
        let txn = db.begin_write().expect("write");
        {
            let old: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("allowance");
            let mut table = txn.open_table(old).expect("table");
            table.insert("10.0.0.1|2026-12-06", 7).expect("insert");
            table
                .insert("2001:db8:1::/64|2026-12-05", 2)
                .expect("insert");
        }
        txn.commit().expect("commit");
    }
    let store = open(dir.path());
    assert_eq!(
        store
            .free_used("10.0.0.1", "2026-12-06")
            .await
            .expect("read"),
        7
    );
    assert_eq!(
        store
            .free_used("2001:db8:1::/64", "2026-12-05")
            .await
            .expect("read"),
        2
    );
    assert_eq!(
        claim(&store, "10.0.0.1", "2026-12-06").await,
        FreeClaim::Granted { used: 8 }
    );
    drop(store);
    // Moved once: opening again finds the same counts.
    let store = open(dir.path());
    assert_eq!(
        store
            .free_used("10.0.0.1", "2026-12-06")
            .await
            .expect("read"),
        8
    );
}
