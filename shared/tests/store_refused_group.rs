//! A group the B-tree refuses is answered with an error and taken back from the store's
//! journal, so a restart does not apply writes whose calls were told they failed. The refusal
//! is a real kernel fault: the B-tree's file may not grow (`RLIMIT_FSIZE`, writes past it fail
//! with `EFBIG`), while the journal, written once to its full size, only overwrites its blocks.
//! One test in its own binary, because the limit is the whole process's.

#![cfg(unix)]

use std::time::Duration;
use verifier_core::store::embedded::{Durability, EmbeddedStore};
use verifier_core::store::{Outcome, Store};

const DAY: &str = "2026-12-06";

fn outcome(agent: &str) -> Outcome {
    Outcome {
        agent_id: agent.into(),
        verification_id: uuid::Uuid::new_v4().to_string(),
        result: "pass".into(),
        verified_at: "2026-12-06T10:00:00.000000+00:00".into(),
        signed_deliverable: None,
        paid: false,
        checks: 3,
    }
}

/// Limit the size of any file this process writes (`None`: no limit).
fn limit_file_size(bytes: Option<u64>) {
    let limit = libc::rlimit {
        rlim_cur: bytes.unwrap_or(libc::RLIM_INFINITY),
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain system calls with a valid pointer to a local. SIGXFSZ is ignored so a
    // write past the limit fails with EFBIG instead of ending the process.
    let set = unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        libc::setrlimit(libc::RLIMIT_FSIZE, &limit)
    };
    assert_eq!(set, 0, "setrlimit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_the_btree_refuses_is_not_replayed_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = || {
        EmbeddedStore::open_with_checkpoints(
            dir.path(),
            Durability::Sync,
            Duration::from_secs(3600),
        )
        .expect("store opens")
    };
    let store = open();
    // Answered: in the journal, not yet in a durable B-tree commit.
    store
        .claim_free("198.51.100.1", DAY, 10, Some(outcome("seller-kept")))
        .await
        .expect("the first claim is granted");
    let size = std::fs::metadata(dir.path().join("verifier.redb"))
        .expect("the store's file")
        .len();
    limit_file_size(Some(size));
    // Enough new rows that the B-tree must grow its file: refused, and told so.
    let mut refused = None;
    for n in 0..10_000 {
        let client = format!("203.0.113.{}", n % 250);
        if let Err(e) = store
            .claim_free(&client, DAY, 1000, Some(outcome(&format!("seller-{n}"))))
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
    let reopened = open();
    assert_eq!(reopened.free_used("198.51.100.1", DAY).await.ok(), Some(1));
    assert_eq!(reopened.free_used(&client, DAY).await.ok(), Some(0));
    let kept = reopened.history("seller-kept", 10).await.expect("history");
    assert_eq!(kept.passes, 1);
}
