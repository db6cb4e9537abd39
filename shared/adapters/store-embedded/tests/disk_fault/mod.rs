//! What the disk-fault tests share: a store that checkpoints only when closed, an outcome to
//! record, and a real kernel fault — no file this process writes may grow past a size
//! (`RLIMIT_FSIZE`; writes past it fail with `EFBIG`). Each test that sets the limit is alone in
//! its binary, because the limit is the whole process's.

use std::path::Path;
use std::time::Duration;
use verifier_ports::store::Outcome;
use verifier_store_embedded::{Durability, EmbeddedStore};

/// The store in `dir`, every write fsynced through its journal, with no checkpoint before it
/// is closed: what an answered call wrote stays in the journal only.
pub fn open_store(dir: &Path) -> EmbeddedStore {
    EmbeddedStore::open_with_checkpoints(dir, Durability::Sync, Duration::from_secs(3600))
        .expect("store opens")
}

/// The size of the store's B-tree file in `dir`.
pub fn btree_file_size(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("verifier.redb"))
        .expect("the store's file")
        .len()
}

/// A passing outcome of `agent`, with `deliverable` as its signed deliverable.
pub fn outcome(agent: &str, deliverable: Option<String>) -> Outcome {
    Outcome {
        agent_id: agent.into(),
        verification_id: uuid::Uuid::new_v4().to_string(),
        result: "pass".into(),
        verified_at: "2026-12-06T10:00:00.000000+00:00".into(),
        signed_deliverable: deliverable,
        paid: false,
        checks: 3,
    }
}

/// Limit the size of any file this process writes (`None`: no limit).
pub fn limit_file_size(bytes: Option<u64>) {
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
