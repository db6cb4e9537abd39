//! The embedded store's journal (`--durability sync`): an answered write is on disk before
//! its answer even when the B-tree's commit is not. An unclean stop is what a crash leaves: the
//! B-tree as of its last durable commit, plus the journal; opening the store replays the
//! journal, once.

use std::path::Path;
use std::time::Duration;
use verifier_ports::store::{FreeClaim, Outcome, PaidAnswer, PaymentState, Store};
use verifier_store_embedded::{Durability, EmbeddedStore};

const DAY: &str = "2026-12-05";

fn outcome(agent: &str, pass: bool) -> Outcome {
    Outcome {
        agent_id: agent.into(),
        verification_id: uuid::Uuid::new_v4().to_string(),
        result: if pass { "pass" } else { "fail" }.into(),
        verified_at: "2026-12-05T10:00:00.000000+00:00".into(),
        signed_deliverable: None,
        paid: false,
        checks: 3,
    }
}

/// A store whose checkpoints never come on their own during a test.
fn open(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_checkpoints(dir, Durability::Sync, Duration::from_secs(3600))
        .expect("store opens")
}

fn copy(from: &Path, to: &Path, file: &str) {
    std::fs::copy(from.join(file), to.join(file)).expect("copy");
}

/// Five claims (four granted: the limit is four), one outcome of another agent, a payment
/// claimed and moved to `settling`, and a paid answer kept.
async fn writes(store: &EmbeddedStore) {
    for i in 0..5 {
        let claim = store
            .claim_free("203.0.113.7", DAY, 4, Some(outcome("seller-a", i != 2)))
            .await
            .expect("claim");
        assert_eq!(
            claim,
            if i < 4 {
                FreeClaim::Granted { used: i + 1 }
            } else {
                FreeClaim::Exhausted { used: 4 }
            }
        );
    }
    store
        .record(outcome("seller-b", true))
        .await
        .expect("record");
    assert!(
        store
            .claim_payment("base:0xpay", i64::MAX / 2)
            .await
            .expect("claim")
    );
    assert!(
        store
            .advance_payment("base:0xpay", PaymentState::Claimed, PaymentState::Settling)
            .await
            .expect("advance")
    );
    let answer = PaidAnswer {
        fingerprint: "f".into(),
        body: "{\"result\":\"pass\"}".into(),
        settlement: "{}".into(),
    };
    store
        .keep_paid_answer("pay-1", &answer, i64::MAX / 2)
        .await
        .expect("keep");
}

/// What `writes` leaves, read back.
async fn assert_written(store: &EmbeddedStore) {
    assert_eq!(store.free_used("203.0.113.7", DAY).await.expect("read"), 4);
    let a = store.history("seller-a", 10).await.expect("history");
    assert_eq!((a.passes, a.fails, a.checks, a.recent.len()), (3, 1, 12, 4));
    let b = store.history("seller-b", 10).await.expect("history");
    assert_eq!((b.passes, b.fails), (1, 0));
    // The claim is there (a second one is a replay) and in the state it was moved to.
    assert!(
        !store
            .claim_payment("base:0xpay", i64::MAX / 2)
            .await
            .expect("claim")
    );
    assert!(
        store
            .advance_payment("base:0xpay", PaymentState::Settling, PaymentState::Settled)
            .await
            .expect("advance")
    );
    let kept = store.paid_answer("pay-1", 0).await.expect("read");
    assert_eq!(
        kept.map(|a| a.body),
        Some("{\"result\":\"pass\"}".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclean_stop_loses_no_answered_write_and_a_replay_counts_once() {
    let live = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    let store = open(live.path());
    // What the disk holds of the B-tree: its last durable commit (at open).
    copy(live.path(), crashed.path(), "verifier.redb");
    writes(&store).await;
    // Every write was answered, so the journal holds it.
    copy(live.path(), crashed.path(), "verifier.journal");
    let recovered = open(crashed.path());
    assert_written(&recovered).await;
    drop(recovered);
    // Entries the B-tree already holds are not applied again: the same journal copied over
    // the recovered store changes nothing.
    copy(live.path(), crashed.path(), "verifier.journal");
    let reopened = open(crashed.path());
    assert_eq!(
        reopened.free_used("203.0.113.7", DAY).await.expect("read"),
        4
    );
    let a = reopened.history("seller-a", 10).await.expect("history");
    assert_eq!((a.passes, a.fails), (3, 1));
    drop(reopened);
    // A clean stop checkpoints: the live store reopens with the same state.
    drop(store);
    let again = open(live.path());
    assert_written(&again).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_too_large_for_the_journal_is_committed_durably_instead() {
    let live = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    let store = open(live.path());
    let big = PaidAnswer {
        fingerprint: "f".into(),
        // Over the 4 MiB journal once written as JSON.
        body: "\\u0000".repeat(800_000),
        settlement: "{}".into(),
    };
    store
        .keep_paid_answer("big", &big, i64::MAX / 2)
        .await
        .expect("keep");
    // The durable commit is on disk: the B-tree alone has it.
    copy(live.path(), crashed.path(), "verifier.redb");
    // The journal goes on after it.
    store
        .record(outcome("seller-c", true))
        .await
        .expect("record");
    copy(live.path(), crashed.path(), "verifier.journal");
    let recovered = open(crashed.path());
    let kept = recovered.paid_answer("big", 0).await.expect("read");
    assert_eq!(kept.map(|a| a.body.len()), Some(big.body.len()));
    let c = recovered.history("seller-c", 1).await.expect("history");
    assert_eq!(c.passes, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_database_never_takes_the_journal_of_the_history_it_replaced() {
    let live = tempfile::tempdir().expect("tempdir");
    let backup = tempfile::tempdir().expect("tempdir");
    let crashed = tempfile::tempdir().expect("tempdir");
    let store = open(live.path());
    copy(live.path(), backup.path(), "verifier.redb");
    // Five writes of one shape: their journal entries have one length.
    for _ in 0..5 {
        store
            .claim_free("203.0.113.7", DAY, 100, Some(outcome("seller-a", true)))
            .await
            .expect("claim");
    }
    drop(store);
    // The operator puts the backup back; the journal's sequence starts again where the
    // backup's was, so the old entries' numbers follow the new ones.
    copy(backup.path(), live.path(), "verifier.redb");
    let store = open(live.path());
    copy(live.path(), crashed.path(), "verifier.redb");
    let claim = store
        .claim_free("203.0.113.7", DAY, 100, Some(outcome("seller-a", true)))
        .await
        .expect("claim");
    assert_eq!(claim, FreeClaim::Granted { used: 1 });
    copy(live.path(), crashed.path(), "verifier.journal");
    let recovered = open(crashed.path());
    assert_eq!(
        recovered.free_used("203.0.113.7", DAY).await.expect("read"),
        1
    );
    assert_eq!(
        recovered
            .history("seller-a", 10)
            .await
            .expect("history")
            .passes,
        1
    );
}

/// A group is answered once its journal entry is on disk, before its B-tree commit; a read
/// that follows an answer still sees that answer's writes (the caller reads its own writes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_an_answer_sees_its_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    for i in 0..400u64 {
        store
            .claim_free(
                "203.0.113.9",
                DAY,
                u64::MAX,
                Some(outcome("seller-r", true)),
            )
            .await
            .expect("claim");
        let history = store.history("seller-r", 0).await.expect("history");
        assert_eq!(
            history.passes,
            i + 1,
            "the outcome answered before the read"
        );
        let answer = PaidAnswer {
            fingerprint: "f".into(),
            body: i.to_string(),
            settlement: "{}".into(),
        };
        let id = format!("read-{i}");
        store
            .keep_paid_answer(&id, &answer, i64::MAX / 2)
            .await
            .expect("keep");
        let kept = store.paid_answer(&id, 0).await.expect("read");
        assert_eq!(kept.map(|a| a.body), Some(i.to_string()));
    }
}
