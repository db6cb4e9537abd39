//! A group the B-tree refuses is answered with an error and taken back from the store's
//! journal, so a restart does not apply writes whose calls were told they failed. The refusal
//! is a real kernel fault: the B-tree's file may not grow (`RLIMIT_FSIZE`, writes past it fail
//! with `EFBIG`), while the journal, written once to its full size, only overwrites its blocks.
//! One test in its own binary, because the limit is the whole process's.

#![cfg(unix)]

mod disk_fault;

use disk_fault::{btree_file_size, limit_file_size, open_store, outcome};
use verifier_ports::store::Store;

const DAY: &str = "2026-12-06";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_the_btree_refuses_is_not_replayed_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(dir.path());
    // Answered: in the journal, not yet in a durable B-tree commit.
    store
        .claim_free("198.51.100.1", DAY, 10, Some(outcome("seller-kept", None)))
        .await
        .expect("the first claim is granted");
    limit_file_size(Some(btree_file_size(dir.path())));
    // Enough new rows that the B-tree must grow its file: refused, and told so.
    let mut refused = None;
    for n in 0..10_000 {
        let client = format!("203.0.113.{}", n % 250);
        if let Err(e) = store
            .claim_free(
                &client,
                DAY,
                1000,
                Some(outcome(&format!("seller-{n}"), None)),
            )
            .await
        {
            refused = Some((client, e));
            break;
        }
    }
    let (client, error) = refused.expect("a claim is refused once the file may not grow");
    assert!(error.to_string().contains("store failed"), "{error}");
    drop(store);
    limit_file_size(None);
    // What a restart finds: the answered claim, replayed from the journal; nothing of the
    // refused one.
    let reopened = open_store(dir.path());
    assert_eq!(reopened.free_used("198.51.100.1", DAY).await.ok(), Some(1));
    assert_eq!(reopened.free_used(&client, DAY).await.ok(), Some(0));
    let kept = reopened.history("seller-kept", 10).await.expect("history");
    assert_eq!(kept.passes, 1);
}
