//! The embedded store: one redb file in the data directory, and its journal.
//!
//! Writes go through one writer thread that applies every waiting request in a single
//! transaction (group commit); claims are evaluated in order inside the transaction, so the
//! allowance is exact under any concurrency, and a claim and its outcome commit together.
//!
//! [`Durability::Sync`] makes every group durable before any of its calls is answered: an
//! answered call is on disk. The group's B-tree commit is not fsynced; its writes go to the
//! journal ([`journal`], one small write and one `fdatasync`, where a durable B-tree
//! commit writes and flushes about ten pages; the entry's write to disk starts before the
//! group is applied to the B-tree, and its `fdatasync` comes after), and a checkpoint (a
//! durable commit, then a journal reset) follows at most a second later or when the journal is
//! half full. A group whose entry is on disk is answered before its B-tree commit, which
//! follows at once; reads of what a call wrote wait for that commit, so a caller reads its own
//! writes. Opening the store replays what the journal holds beyond the B-tree's last
//! durable commit, once (each commit records the journal entry it is).
//! [`Durability::Periodic`] commits groups without an fsync and makes them durable at most one
//! interval later: more throughput, but a crash can lose the calls answered in the last
//! interval (their counts and outcomes together, never one without the other).

mod allowance;
mod apply;
pub mod backup;
pub mod journal;
mod lazy_table;
mod private;

use crate::journal::{Appended, Entry, Journal};
use apply::{Staged, apply, stage};
use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use verifier_ports::store::{
    AgentHistory, Block, BlockTarget, FreeClaim, FreeLimit, MAX_BLOCKS, Outcome, PaidAnswer,
    PaymentState, Settlement, Store, StoreError,
};

/// When commits reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync every group commit before answering.
    Sync,
    /// fsync at most this long after a commit.
    Periodic(Duration),
}

const AGENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("agents");
const OUTCOMES: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("outcomes");
/// Claimed payments: identity → unix second until which it is kept.
const PAYMENTS: TableDefinition<&str, i64> = TableDefinition::new("payments");
/// The same claims by expiry, for pruning.
const PAYMENT_EXPIRY: TableDefinition<(i64, &str), ()> = TableDefinition::new("payment_expiry");
/// Where a claimed payment stands (`claimed`, `settling`, `settled`); a claim without a row
/// here predates payment states and counts as settled.
const PAYMENT_STATES: TableDefinition<&str, &str> = TableDefinition::new("payment_states");
/// Paid answers kept under their payment identifier: id → JSON of [`KeptAnswer`]. Their expiry
/// is in [`PAYMENT_EXPIRY`] under [`ANSWER_PREFIX`] + id.
const ANSWERS: TableDefinition<&str, &[u8]> = TableDefinition::new("paid_answers");
/// Signed deliverables whose outcome is recorded (kept for good, like the history).
const DELIVERABLES: TableDefinition<&str, ()> = TableDefinition::new("signed_deliverables");
/// The operator's blocks: `client:<cidr>` or `agent:<id>` → since (unix seconds).
const BLOCKS: TableDefinition<&str, i64> = TableDefinition::new("blocks");
/// Settled payments for the accounting export: (unix second, `<network>#<transaction>`) →
/// JSON of a [`verifier_ports::store::Settlement`]; kept for good.
const SETTLEMENTS: TableDefinition<(i64, &str), &[u8]> = TableDefinition::new("settlements");
/// The same by `<network>#<transaction>` → its second, so one settlement is kept once.
const SETTLEMENT_IDS: TableDefinition<&str, i64> = TableDefinition::new("settlement_ids");
/// Marks an answer's entry in [`PAYMENT_EXPIRY`] (payment keys start with a network name).
const ANSWER_PREFIX: &str = "ANSWER#";
/// Expired claims removed per write transaction.
const PRUNE_PER_BATCH: usize = 64;

/// The journal's sequence number the last B-tree commit holds ([`JOURNAL_SEQ`]).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const JOURNAL_SEQ: &str = "journal_seq";
/// The journal's file in the data directory, and its size: with a checkpoint at half of it,
/// room for thousands of calls between checkpoints.
const JOURNAL_FILE: &str = "verifier.journal";
const JOURNAL_BYTES: u64 = 4 * 1024 * 1024;
/// The longest a write stays in the journal only, before a checkpoint commits the B-tree
/// durably (under load the journal's half fills first).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Expired outcomes of an agent dropped per write of one of its outcomes.
pub const PRUNE_OUTCOMES_PER_WRITE: usize = 4;

/// Most requests applied in one write transaction.
const MAX_BATCH: usize = 512;

/// A group commit or checkpoint that takes longer is logged: every call waiting on the store
/// waited that long (a slow or stalled disk).
const SLOW_COMMIT: Duration = Duration::from_millis(100);

/// Run `commit`, and warn when it took [`SLOW_COMMIT`] or longer.
fn warn_if_slow<T>(what: &'static str, commit: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = commit();
    let took = started.elapsed();
    if took >= SLOW_COMMIT {
        tracing::warn!(
            what,
            ms = took.as_millis() as u64,
            "the store's disk was slow: every call waiting on the store waited this long"
        );
    }
    result
}

#[derive(Serialize, Deserialize)]
struct KeptAnswer {
    answer: PaidAnswer,
    keep_until: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AgentStats {
    passes: u64,
    fails: u64,
    #[serde(default)]
    paid: u64,
    #[serde(default)]
    checks: u64,
    first_seen: Option<String>,
    last_seen: Option<String>,
    next_seq: u64,
}

/// A write, as the writer applies it and the journal keeps it.
#[derive(Serialize, Deserialize)]
enum Op {
    Claim {
        key: String,
        limit: u64,
        /// The day's budget across all clients (journals written before it have none).
        #[serde(default)]
        total: Option<u64>,
        outcome: Option<Outcome>,
        /// With an outcome: drop the agent's outcomes verified before this unix second
        /// (outcome retention; the oldest few per write).
        #[serde(default)]
        prune_before: Option<i64>,
    },
    Record {
        outcome: Outcome,
        #[serde(default)]
        prune_before: Option<i64>,
    },
    /// Give back one free call claimed without an outcome (and its unit of the day's budget
    /// with `total`); never below zero.
    GiveBack { key: String, total: bool },
    /// A payment claim; answered `Granted` when first, `Exhausted` when a replay.
    Payment { key: String, keep_until: i64 },
    /// Move a payment claim from one state to another; `Granted` when it moved.
    Advance {
        key: String,
        from: PaymentState,
        to: PaymentState,
    },
    /// Forget a payment claim that was never settled.
    Release { key: String },
    /// Keep a paid answer under its payment identifier (the first one stays).
    Answer {
        id: String,
        kept: Vec<u8>,
        keep_until: i64,
    },
    /// Keep a settled payment (once per `id`, `<network>#<transaction>`).
    Settle {
        id: String,
        at: i64,
        record: Vec<u8>,
    },
    /// Block (`since` set) or unblock (`None`) a client network or an agent: `Granted` when
    /// it changed.
    Block { key: String, since: Option<i64> },
    /// Erase an agent's counters and outcomes: `Granted { used }`, `used` the outcomes erased.
    Erase { agent_id: String },
}

impl Op {
    /// Whether the write is about a payment (its claim, state or kept answer).
    fn is_payment(&self) -> bool {
        matches!(
            self,
            Op::Payment { .. } | Op::Advance { .. } | Op::Release { .. } | Op::Answer { .. }
        )
    }
}

/// A group of writes as one transaction applies them and one journal entry keeps them: the
/// time it was applied at (unix seconds; what expired claims are pruned against, so a replay
/// prunes as the first application did) and the writes, in order.
#[derive(Serialize, Deserialize)]
struct Group<W> {
    now: i64,
    ops: Vec<W>,
}

/// A write waiting for the writer, and where its result goes.
struct Job {
    op: Op,
    reply: oneshot::Sender<Result<FreeClaim, StoreError>>,
}

/// The embedded (redb) store.
pub struct EmbeddedStore {
    db: Arc<Database>,
    /// The writer's queue (taken when the store is dropped, which ends the writer).
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// What a read waits for, so a caller that got an answer reads its own writes.
    visible: Arc<Visibility>,
    /// Outcomes are dropped this many seconds after their verification; none: kept.
    outcome_retention: Option<i64>,
}

/// Between a group's answers and its B-tree commit: what reads wait for.
#[derive(Default)]
struct Visibility {
    /// Write-held by the writer from a group's first answer to its commit.
    gate: tokio::sync::RwLock<()>,
    /// Set when the B-tree no longer matches what calls were told, until a restart: an answered
    /// group could not be committed (the restart replays it from the journal), or a group whose
    /// calls got an error is in it (its durable commit failed; the restart drops it). Reads are
    /// refused too.
    lost: AtomicBool,
}

impl Drop for EmbeddedStore {
    /// End the writer after its last checkpoint, so the file is closed when this returns.
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Create a directory (and its parents) readable by its owner only (mode 0700 on Unix); an
/// existing one that others can read is made owner-only too.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    make_private(dir)
}

pub use private::make_private;

fn backend<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// redb's page cache. Its default (1 GiB) lets the resident set grow with every history
/// record written; the hot pages (allowance items, agent counters, the newest outcomes) fit in
/// a few MiB, and the OS page cache keeps the rest of the file close.
const CACHE_BYTES: usize = 8 * 1024 * 1024;

impl EmbeddedStore {
    /// Open (or create) the store file `verifier.redb` in `dir`, fsyncing every commit.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with(dir, Durability::Sync)
    }

    /// Open (or create) the store with a durability mode.
    pub fn open_with(dir: &Path, durability: Durability) -> Result<Self, StoreError> {
        Self::open_with_checkpoints(dir, durability, CHECKPOINT_EVERY)
    }

    /// Open (or create) the store with a durability mode and, with [`Durability::Sync`], the
    /// longest a write stays in the journal only before a checkpoint (default one second).
    pub fn open_with_checkpoints(
        dir: &Path,
        durability: Durability,
        checkpoint_every: Duration,
    ) -> Result<Self, StoreError> {
        create_private_dir(dir).map_err(backend)?;
        let file = dir.join("verifier.redb");
        let db = Arc::new(
            Database::builder()
                .set_cache_size(CACHE_BYTES)
                .create(&file)
                .map_err(backend)?,
        );
        // Client addresses and agents' histories: the owner's only.
        make_private(&file).map_err(backend)?;
        {
            let txn = db.begin_write().map_err(backend)?;
            txn.open_table(allowance::ALLOWANCE).map_err(backend)?;
            txn.open_table(AGENTS).map_err(backend)?;
            txn.open_table(OUTCOMES).map_err(backend)?;
            txn.open_table(PAYMENTS).map_err(backend)?;
            txn.open_table(PAYMENT_EXPIRY).map_err(backend)?;
            txn.open_table(PAYMENT_STATES).map_err(backend)?;
            txn.open_table(ANSWERS).map_err(backend)?;
            txn.open_table(DELIVERABLES).map_err(backend)?;
            txn.open_table(META).map_err(backend)?;
            txn.open_table(BLOCKS).map_err(backend)?;
            txn.open_table(SETTLEMENTS).map_err(backend)?;
            txn.open_table(SETTLEMENT_IDS).map_err(backend)?;
            let moved = allowance::migrate(&txn).map_err(backend)?;
            txn.commit().map_err(backend)?;
            if moved > 0 {
                tracing::info!(
                    rows = moved,
                    "the free allowance's rows are now kept by day"
                );
            }
        }
        // Calls answered before an unclean stop whose B-tree commit did not reach the disk.
        let (mut journal, entries) =
            Journal::open(&dir.join(JOURNAL_FILE), JOURNAL_BYTES).map_err(backend)?;
        let last_seq = recover(&db, entries)?;
        journal.reset().map_err(backend)?;
        let flushing = match durability {
            Durability::Sync => Flushing::Journal {
                journal,
                next_seq: last_seq + 1,
                every: checkpoint_every,
            },
            Durability::Periodic(every) => Flushing::Periodic(every),
        };
        let (tx, rx) = mpsc::channel();
        let writer_db = db.clone();
        let visible = Arc::new(Visibility::default());
        let writer_visible = visible.clone();
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer(writer_db, rx, flushing, writer_visible))
            .map_err(backend)?;
        Ok(EmbeddedStore {
            db,
            jobs: Some(tx),
            writer: Some(writer),
            visible,
            outcome_retention: None,
        })
    }

    /// Drop an agent's outcomes `days` after their verification (0: keep them, the default).
    /// Each write of an agent's outcome drops up to [`PRUNE_OUTCOMES_PER_WRITE`] of its
    /// oldest expired ones, so an agent no longer verified keeps its last rows; its counters
    /// stay.
    pub fn with_outcome_retention(mut self, days: u32) -> Self {
        self.outcome_retention = (days > 0).then_some(i64::from(days) * 86_400);
        self
    }

    /// The cutoff an outcome written now prunes before.
    fn prune_before(&self) -> Option<i64> {
        self.outcome_retention
            .map(|keep| time::OffsetDateTime::now_utc().unix_timestamp() - keep)
    }

    /// A read transaction that sees every write whose call was answered.
    async fn read(&self) -> Result<redb::ReadTransaction, StoreError> {
        let _visible = self.visible.gate.read().await;
        if self.visible.lost.load(Ordering::Acquire) {
            return Err(StoreError::Unavailable);
        }
        self.db.begin_read().map_err(backend)
    }

    async fn submit(&self, op: Op) -> Result<FreeClaim, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .as_ref()
            .ok_or(StoreError::Unavailable)?
            .send(Job { op, reply })
            .map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }
}

/// How the writer makes its commits durable.
enum Flushing {
    /// Each group is written to the journal (one small write, one `fdatasync`) and to the B-tree
    /// without an fsync; its calls are answered once the entry is flushed, and its B-tree
    /// transaction is committed after. The B-tree is committed durably at checkpoints.
    Journal {
        journal: Journal,
        next_seq: u64,
        /// The longest a write stays in the journal only.
        every: Duration,
    },
    /// Groups are committed without an fsync and made durable at most this long after.
    Periodic(Duration),
}

fn writer(
    db: Arc<Database>,
    rx: mpsc::Receiver<Job>,
    mut flushing: Flushing,
    visible: Arc<Visibility>,
) {
    let every = match &flushing {
        Flushing::Journal { every, .. } => *every,
        Flushing::Periodic(d) => *d,
    };
    // When the oldest write not yet in a durable B-tree commit was made.
    let mut dirty_since: Option<Instant> = None;
    loop {
        // A job already waiting means calls are arriving faster than groups commit (load).
        let waiting = rx.try_recv().ok();
        let under_load = waiting.is_some();
        let first = match (waiting, dirty_since) {
            (Some(job), _) => job,
            (None, None) => match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
            (None, Some(t)) => match rx.recv_timeout(every.saturating_sub(t.elapsed())) {
                Ok(job) => job,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // A failed checkpoint is tried again an interval later, not at once.
                    dirty_since = (!checkpoint(&db, &mut flushing)).then(Instant::now);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    checkpoint(&db, &mut flushing);
                    return;
                }
            },
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let (ops, replies): (Vec<Op>, Vec<_>) =
            batch.into_iter().map(|job| (job.op, job.reply)).unzip();
        let group = Group {
            now: time::OffsetDateTime::now_utc().unix_timestamp(),
            ops: ops.iter().collect(),
        };
        let committed = warn_if_slow("group commit", || match &mut flushing {
            Flushing::Journal {
                journal, next_seq, ..
            } => commit_journaled(&db, journal, next_seq, &group, !under_load),
            Flushing::Periodic(every) => {
                let durable = dirty_since.is_some_and(|t| t.elapsed() >= *every);
                apply(&db, &group, durable, None)
                    .map(|results| Committed::Done { results, durable })
                    .map_err(GroupError::Refused)
            }
        });
        let (results, durable, pending) = match committed {
            Ok(Committed::Done { results, durable }) => (Ok(results), durable, None),
            Ok(Committed::Answerable(staged)) => {
                let Staged { txn, results } = *staged;
                (Ok(results), false, Some(txn))
            }
            Err(GroupError::Refused(e)) => (Err(e), false, None),
            Err(GroupError::Stranded(e)) => {
                // Before its calls hear of the error, so none of them reads the group.
                visible.lost.store(true, Ordering::Release);
                (Err(e), false, None)
            }
        };
        // Reads wait from the first answer to the commit.
        let hiding = pending.as_ref().map(|_| visible.gate.blocking_write());
        match results {
            Ok(results) => {
                if durable {
                    dirty_since = None;
                } else {
                    dirty_since.get_or_insert_with(Instant::now);
                }
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(Ok(result));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Backend(e.clone())));
                }
            }
        }
        if let Some(txn) = pending
            && !warn_if_slow("group commit", || finish(txn))
        {
            visible.lost.store(true, Ordering::Release);
        }
        drop(hiding);
        if visible.lost.load(Ordering::Acquire) {
            refuse_all(&rx);
            return;
        }
        drop(group);
        if let Flushing::Journal { journal, .. } = &flushing
            && (journal.used() >= journal.capacity() / 2
                || dirty_since.is_some_and(|t| t.elapsed() >= every))
            && checkpoint(&db, &mut flushing)
        {
            dirty_since = None;
        }
    }
}

/// Append `group` to the journal as entry `next_seq`, make its writes in a B-tree transaction,
/// then flush the entry; with `overlap`, the entry's write to disk starts before the B-tree
/// writes, so its calls wait for the two overlapped (under load this is not done: a shorter
/// group only makes the next one smaller, and more groups cost more CPU per call). A group
/// whose entry is on disk comes back [`Committed::Answerable`]: durable, its transaction not
/// committed yet. An entry the journal has no room for (or cannot take) is made durable by a
/// durable B-tree commit instead. A group the B-tree refuses is taken back from the journal, so
/// no replay applies writes whose calls were answered with an error.
fn commit_journaled(
    db: &Database,
    journal: &mut Journal,
    next_seq: &mut u64,
    group: &Group<&Op>,
    overlap: bool,
) -> Result<Committed, GroupError> {
    let seq = *next_seq;
    let appended = serde_json::to_vec(group)
        .map_err(|e| e.to_string())
        .and_then(|entry| journal.append(seq, &entry).map_err(|e| e.to_string()));
    let written = matches!(appended, Ok(Appended::Written));
    // Whether the entry is on disk, or why it is not.
    let (staged, flushed) = match appended {
        Ok(Appended::Written) => {
            if overlap {
                journal.start_writeback();
            }
            let staged = stage(db, group, false, Some(seq));
            let flushed = journal.flush();
            (staged, flushed.map(|()| true).map_err(|e| e.to_string()))
        }
        Ok(Appended::Full) => (stage(db, group, false, Some(seq)), Ok(false)),
        Err(e) => (stage(db, group, false, Some(seq)), Err(e)),
    };
    // An entry on disk makes the group durable: its calls are answered before the commit.
    let staged = match staged {
        Ok(staged) if matches!(flushed, Ok(true)) => {
            *next_seq += 1;
            return Ok(Committed::Answerable(Box::new(staged)));
        }
        staged => staged,
    };
    let results = match staged.and_then(Staged::commit) {
        Ok(results) => results,
        Err(e) => {
            if written {
                take_back(db, journal);
            }
            return Err(GroupError::Refused(e));
        }
    };
    if let Err(e) = &flushed {
        tracing::warn!(error = %e, "the store's journal cannot be written; committing durably instead");
    }
    if let Err(e) = flush(db) {
        // Its calls are answered with an error: no replay may apply the group, and the B-tree,
        // which shows it until a restart, is not read again.
        if written {
            take_back(db, journal);
        }
        return Err(GroupError::Stranded(e));
    }
    *next_seq += 1;
    // Everything the journal holds is durable now. A journal that cannot be reset takes no
    // entries until it can: the groups are committed durably meanwhile.
    if let Err(e) = journal.reset() {
        tracing::warn!(error = %e, "the store's journal cannot be reset; committing durably until it can");
    }
    Ok(Committed::Done {
        results,
        durable: true,
    })
}

/// Why a group's calls are answered with an error.
enum GroupError {
    /// Nothing of the group is in the B-tree: the store goes on.
    Refused(String),
    /// The group's commit succeeded but the durable one after it failed: the B-tree shows writes
    /// whose calls are told they failed (until a restart drops them) and redb refuses every
    /// later write transaction, so the store refuses reads and writes until a restart.
    Stranded(String),
}

/// What the writer made of a group.
enum Committed {
    /// Committed to the B-tree; whether durably.
    Done {
        results: Vec<FreeClaim>,
        durable: bool,
    },
    /// Durable by its journal entry: its calls can be answered, and its B-tree transaction is
    /// committed after that ([`finish`]).
    Answerable(Box<Staged>),
}

/// Commit the B-tree transaction of a group whose calls were answered (its journal entry is on
/// disk); false when that fails. redb then refuses every later write transaction, and the
/// B-tree lacks writes whose calls were answered: the store must refuse reads and writes until
/// a restart replays its journal, which holds them.
fn finish(txn: redb::WriteTransaction) -> bool {
    match txn.commit() {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(
                error = %e,
                "the store cannot commit a group it has answered (its journal keeps it): it refuses reads and writes until a restart replays the journal"
            );
            false
        }
    }
}

/// Answer every write that comes with the store unavailable, until the store is dropped.
fn refuse_all(rx: &mpsc::Receiver<Job>) {
    for job in rx.iter() {
        let _ = job.reply.send(Err(StoreError::Unavailable));
    }
}

/// Take back the journal's last entry, whose group the B-tree refused. When that fails, make
/// the earlier groups durable and reset the journal instead; only when both fail could a replay
/// still apply the refused group, which is logged.
fn take_back(db: &Database, journal: &mut Journal) {
    let Err(e) = journal.retract() else {
        return;
    };
    tracing::warn!(
        error = %e,
        "the store's journal cannot take back a refused group; checkpointing instead"
    );
    let reset = flush(db).and_then(|()| journal.reset().map_err(|e| e.to_string()));
    if let Err(e) = reset {
        tracing::error!(
            error = %e,
            "a group the store refused stays in its journal: a restart before the next checkpoint would apply it"
        );
    }
}

/// Make every commit durable; with a journal, then reset it. Whether the commit succeeded.
fn checkpoint(db: &Database, flushing: &mut Flushing) -> bool {
    if let Err(e) = warn_if_slow("checkpoint", || flush(db)) {
        tracing::error!(error = %e, "the store's checkpoint failed");
        return false;
    }
    if let Flushing::Journal { journal, .. } = flushing
        && let Err(e) = journal.reset()
    {
        // What it holds is in the B-tree now, and a replay skips it; until a reset succeeds
        // the groups are committed durably.
        tracing::warn!(error = %e, "the store's journal cannot be reset; committing durably until it can");
    }
    true
}

/// Apply the journal's entries the B-tree does not hold yet (those after the sequence number
/// its last commit recorded), then commit durably. The last sequence number applied.
fn recover(db: &Database, entries: Vec<Entry>) -> Result<u64, StoreError> {
    let applied = {
        let txn = db.begin_read().map_err(backend)?;
        let meta = txn.open_table(META).map_err(backend)?;
        meta.get(JOURNAL_SEQ)
            .map_err(backend)?
            .map_or(0, |g| g.value())
    };
    let mut last = applied;
    for entry in entries.into_iter().filter(|e| e.seq > applied) {
        if entry.seq != last + 1 {
            tracing::warn!(
                expected = last + 1,
                found = entry.seq,
                "the store's journal does not follow its database (was verifier.redb replaced?); the rest of it is ignored"
            );
            break;
        }
        let group: Group<Op> = serde_json::from_slice(&entry.payload).map_err(|e| {
            StoreError::Backend(format!(
                "entry {} of the store's journal ({JOURNAL_FILE}) cannot be read: {e}",
                entry.seq
            ))
        })?;
        let group = Group {
            now: group.now,
            ops: group.ops.iter().collect(),
        };
        apply(db, &group, false, Some(entry.seq)).map_err(StoreError::Backend)?;
        last = entry.seq;
    }
    if last > applied {
        flush(db).map_err(StoreError::Backend)?;
        tracing::warn!(
            entries = last - applied,
            "the store's journal was replayed (writes answered before an unclean stop)"
        );
    }
    Ok(last)
}

/// An empty durable commit: makes every earlier non-durable commit durable.
fn flush(db: &Database) -> Result<(), String> {
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    txn.commit().map_err(|e| e.to_string())
}

#[async_trait]
impl Store for EmbeddedStore {
    async fn claim_free_within(
        &self,
        client: &str,
        day: &str,
        limit: FreeLimit,
        outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError> {
        let key = allowance::claim_key(client, day);
        let prune_before = outcome.as_ref().and(self.prune_before());
        self.submit(Op::Claim {
            key,
            limit: limit.per_client,
            total: limit.total,
            outcome,
            prune_before,
        })
        .await
    }

    async fn free_used(&self, client: &str, day: &str) -> Result<u64, StoreError> {
        let txn = self.read().await?;
        let table = txn.open_table(allowance::ALLOWANCE).map_err(backend)?;
        Ok(table
            .get((day, client))
            .map_err(backend)?
            .map_or(0, |g| g.value()))
    }

    async fn record(&self, outcome: Outcome) -> Result<(), StoreError> {
        let prune_before = self.prune_before();
        self.submit(Op::Record {
            outcome,
            prune_before,
        })
        .await
        .map(|_| ())
    }

    async fn release_free(&self, client: &str, day: &str, total: bool) -> Result<(), StoreError> {
        let key = allowance::claim_key(client, day);
        self.submit(Op::GiveBack { key, total }).await.map(|_| ())
    }

    async fn claim_payment(&self, key: &str, keep_until: i64) -> Result<bool, StoreError> {
        let key = key.to_owned();
        let claim = self.submit(Op::Payment { key, keep_until }).await?;
        Ok(matches!(claim, FreeClaim::Granted { .. }))
    }

    async fn advance_payment(
        &self,
        key: &str,
        from: PaymentState,
        to: PaymentState,
    ) -> Result<bool, StoreError> {
        let key = key.to_owned();
        let moved = self.submit(Op::Advance { key, from, to }).await?;
        Ok(matches!(moved, FreeClaim::Granted { .. }))
    }

    async fn release_payment(&self, key: &str) -> Result<(), StoreError> {
        let key = key.to_owned();
        self.submit(Op::Release { key }).await?;
        Ok(())
    }

    async fn paid_answer(&self, id: &str, now: i64) -> Result<Option<PaidAnswer>, StoreError> {
        let txn = self.read().await?;
        let table = txn.open_table(ANSWERS).map_err(backend)?;
        let Some(bytes) = table.get(id).map_err(backend)? else {
            return Ok(None);
        };
        let kept: KeptAnswer = serde_json::from_slice(bytes.value()).map_err(backend)?;
        Ok((kept.keep_until > now).then_some(kept.answer))
    }

    async fn keep_paid_answer(
        &self,
        id: &str,
        answer: &PaidAnswer,
        keep_until: i64,
    ) -> Result<(), StoreError> {
        let kept = serde_json::to_vec(&KeptAnswer {
            answer: answer.clone(),
            keep_until,
        })
        .map_err(backend)?;
        let id = id.to_owned();
        self.submit(Op::Answer {
            id,
            kept,
            keep_until,
        })
        .await?;
        Ok(())
    }

    async fn record_settlement(&self, settlement: &Settlement) -> Result<(), StoreError> {
        let record = serde_json::to_vec(settlement).map_err(backend)?;
        self.submit(Op::Settle {
            id: format!("{}#{}", settlement.network, settlement.transaction),
            at: settlement.at,
            record,
        })
        .await
        .map(|_| ())
    }

    async fn settlements(
        &self,
        since: i64,
        until: i64,
        limit: usize,
    ) -> Result<Vec<Settlement>, StoreError> {
        let txn = self.read().await?;
        let table = txn.open_table(SETTLEMENTS).map_err(backend)?;
        let mut list = Vec::new();
        for item in table
            .range((since, "")..(until, ""))
            .map_err(backend)?
            .take(limit)
        {
            let (_, v) = item.map_err(backend)?;
            list.push(serde_json::from_slice(v.value()).map_err(backend)?);
        }
        Ok(list)
    }

    async fn set_blocked(
        &self,
        target: &BlockTarget,
        blocked: bool,
        now: i64,
    ) -> Result<bool, StoreError> {
        let changed = self
            .submit(Op::Block {
                key: target.key(),
                since: blocked.then_some(now),
            })
            .await?;
        match changed {
            FreeClaim::BudgetSpent => Err(StoreError::Backend(format!(
                "at most {MAX_BLOCKS} blocks are kept: unblock some first"
            ))),
            other => Ok(matches!(other, FreeClaim::Granted { .. })),
        }
    }

    async fn blocks(&self) -> Result<Vec<Block>, StoreError> {
        let txn = self.read().await?;
        let table = txn.open_table(BLOCKS).map_err(backend)?;
        let mut list = Vec::new();
        for item in table.iter().map_err(backend)?.take(MAX_BLOCKS) {
            let (k, v) = item.map_err(backend)?;
            if let Some(target) = BlockTarget::from_key(k.value()) {
                list.push(Block {
                    target,
                    since: v.value(),
                });
            }
        }
        Ok(list)
    }

    async fn erase_agent(&self, agent_id: &str) -> Result<u64, StoreError> {
        let erased = self
            .submit(Op::Erase {
                agent_id: agent_id.to_owned(),
            })
            .await?;
        Ok(match erased {
            FreeClaim::Granted { used } => used,
            _ => 0,
        })
    }

    async fn history(&self, agent_id: &str, recent: usize) -> Result<AgentHistory, StoreError> {
        let txn = self.read().await?;
        let agents = txn.open_table(AGENTS).map_err(backend)?;
        let Some(stats) = agents.get(agent_id).map_err(backend)? else {
            return Ok(AgentHistory::default());
        };
        let stats: AgentStats = serde_json::from_slice(stats.value()).map_err(backend)?;
        let outcomes = txn.open_table(OUTCOMES).map_err(backend)?;
        let mut list = Vec::with_capacity(recent);
        for item in outcomes
            .range((agent_id, 0u64)..(agent_id, u64::MAX))
            .map_err(backend)?
            .rev()
            .take(recent)
        {
            let (_, v) = item.map_err(backend)?;
            list.push(serde_json::from_slice(v.value()).map_err(backend)?);
        }
        Ok(AgentHistory {
            passes: stats.passes,
            fails: stats.fails,
            paid: stats.paid,
            checks: stats.checks,
            first_seen: stats.first_seen,
            last_seen: stats.last_seen,
            recent: list,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The log lines written while `f` runs on this thread.
    fn logged(f: impl FnOnce()) -> String {
        #[derive(Clone)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("log buffer").extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines(Arc::new(Mutex::new(Vec::new())));
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = lines.0.lock().expect("log buffer").clone();
        String::from_utf8(bytes).expect("UTF-8 log")
    }

    #[test]
    fn a_slow_commit_is_logged_with_its_duration_and_a_fast_one_is_not() {
        let slow = logged(|| {
            let answer = warn_if_slow("checkpoint", || {
                std::thread::sleep(SLOW_COMMIT + Duration::from_millis(20));
                7
            });
            assert_eq!(answer, 7);
        });
        assert!(slow.contains("the store's disk was slow"), "{slow}");
        assert!(slow.contains("what=\"checkpoint\""), "{slow}");
        let ms: u64 = slow
            .split("ms=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("the duration in ms");
        assert!(ms >= 120, "{slow}");

        let fast = logged(|| {
            warn_if_slow("group commit", || ());
        });
        assert!(fast.is_empty(), "{fast}");
    }
}
