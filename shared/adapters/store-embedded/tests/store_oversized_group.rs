//! A group too large for the store's journal is made durable by a B-tree commit instead; when
//! the disk refuses it, its call is answered with an error, nothing reads its writes, and a
//! restart keeps the answered groups before it and nothing of it. The refusal is a real kernel
//! fault: the B-tree's file may not grow (`RLIMIT_FSIZE`, writes past it fail with `EFBIG`).
//! One test in its own binary, because the limit is the whole process's.

#![cfg(unix)]

mod disk_fault;

use disk_fault::{btree_file_size, limit_file_size, open_store, outcome};
use verifier_ports::store::Store;

const DAY: &str = "2026-12-06";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_too_large_for_the_journal_that_the_disk_refuses_is_not_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(dir.path());
    // Answered: in the journal, not yet in a durable B-tree commit.
    store
        .claim_free("198.51.100.1", DAY, 10, Some(outcome("seller-kept", None)))
        .await
        .expect("the first claim is granted");
    limit_file_size(Some(btree_file_size(dir.path())));
    // More than the journal's 4 MiB, so the B-tree must take it durably, and grow its file.
    let large = "x".repeat(5 * 1024 * 1024);
    let error = store
        .claim_free(
            "203.0.113.7",
            DAY,
            10,
            Some(outcome("seller-large", Some(large))),
        )
        .await
        .expect_err("the file may not grow: the claim fails");
    assert!(error.to_string().contains("store failed"), "{error}");
    // Nothing reads the refused claim: a count of 0, or an error, never 1.
    assert_ne!(store.free_used("203.0.113.7", DAY).await.ok(), Some(1));
    drop(store);
    limit_file_size(None);
    let reopened = open_store(dir.path());
    assert_eq!(reopened.free_used("198.51.100.1", DAY).await.ok(), Some(1));
    assert_eq!(reopened.free_used("203.0.113.7", DAY).await.ok(), Some(0));
    let kept = reopened.history("seller-kept", 10).await.expect("history");
    assert_eq!(kept.passes, 1);
    let large = reopened.history("seller-large", 10).await.expect("history");
    assert_eq!(large.passes, 0);
}
