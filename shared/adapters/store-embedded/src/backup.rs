//! Backups of the embedded store: every table copied from one read transaction (a consistent
//! snapshot of every answered call, taken while the server keeps serving: redb's readers never
//! block its writer) into a new redb file; and the restore of such a file into a data directory
//! whose server is stopped.

use super::{
    AGENTS, ANSWERS, BLOCKS, DELIVERABLES, EmbeddedStore, JOURNAL_FILE, META, OUTCOMES,
    PAYMENT_EXPIRY, PAYMENT_STATES, PAYMENTS, SETTLEMENT_IDS, SETTLEMENTS, allowance, backend,
    make_private,
};
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use verifier_ports::store::StoreError;

/// The store file's name in the data directory.
pub const STORE_FILE: &str = "verifier.redb";

/// What a backup or a restore holds: rows per table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BackupSummary {
    /// Where the copy is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Client-day allowance rows.
    pub allowance_rows: u64,
    /// Agents with a history.
    pub agents: u64,
    /// Recorded outcomes.
    pub outcomes: u64,
    /// Payment claims and kept paid answers.
    pub payment_rows: u64,
}

fn copy<K: redb::Key + 'static, V: redb::Value + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    table: TableDefinition<K, V>,
) -> Result<u64, StoreError> {
    let source = from.open_table(table).map_err(backend)?;
    let mut target = to.open_table(table).map_err(backend)?;
    let mut rows = 0;
    for entry in source.iter().map_err(backend)? {
        let (key, value) = entry.map_err(backend)?;
        target.insert(key.value(), value.value()).map_err(backend)?;
        rows += 1;
    }
    Ok(rows)
}

/// Copy every table of `from` into a new store file at `path` (refused if it exists).
fn write_copy(from: &ReadTransaction, path: &Path) -> Result<BackupSummary, StoreError> {
    if path.exists() {
        return Err(StoreError::Backend(format!(
            "{} exists: a backup never overwrites a file",
            path.display()
        )));
    }
    let db = Database::create(path).map_err(backend)?;
    make_private(path).map_err(backend)?;
    let txn = db.begin_write().map_err(backend)?;
    let mut summary = BackupSummary {
        path: path.to_owned(),
        allowance_rows: copy(from, &txn, allowance::ALLOWANCE)?,
        agents: copy(from, &txn, AGENTS)?,
        outcomes: copy(from, &txn, OUTCOMES)?,
        payment_rows: copy(from, &txn, PAYMENTS)? + copy(from, &txn, ANSWERS)?,
        ..BackupSummary::default()
    };
    copy(from, &txn, PAYMENT_EXPIRY)?;
    copy(from, &txn, PAYMENT_STATES)?;
    copy(from, &txn, DELIVERABLES)?;
    copy(from, &txn, META)?;
    copy(from, &txn, BLOCKS)?;
    copy(from, &txn, SETTLEMENTS)?;
    copy(from, &txn, SETTLEMENT_IDS)?;
    txn.commit().map_err(backend)?;
    drop(db);
    summary.bytes = std::fs::metadata(path).map_err(backend)?.len();
    Ok(summary)
}

impl EmbeddedStore {
    /// Back the store up into a new file at `path`, while it serves: a snapshot of every call
    /// answered when it starts. Costs one read transaction and a copy of every row (the
    /// writer is not paused).
    pub async fn backup(&self, path: &Path) -> Result<BackupSummary, StoreError> {
        let snapshot = self.read().await?;
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || write_copy(&snapshot, &path))
            .await
            .map_err(backend)?
    }
}

/// Replace the store in `dir` with the backup at `from`, for a stopped server (an open store
/// holds the file's lock, and the restore is refused). The store it replaces is kept beside it
/// as `verifier.redb.before-restore-<unix seconds>`; the journal, which belongs to that store,
/// is removed so that nothing of it is replayed onto the backup.
pub fn restore(dir: &Path, from: &Path) -> Result<BackupSummary, StoreError> {
    // The backup must be a store file with every table.
    let summary = {
        let backup = Database::open(from).map_err(|e| {
            StoreError::Backend(format!("{} is not a store backup: {e}", from.display()))
        })?;
        let txn = backup.begin_read().map_err(backend)?;
        let count = |rows: Result<u64, redb::TableError>| rows.map_err(backend);
        let rows = |t: &ReadTransaction| -> Result<(u64, u64, u64, u64), StoreError> {
            use redb::ReadableTableMetadata;
            Ok((
                count(
                    t.open_table(allowance::ALLOWANCE)
                        .map(|x| x.len().unwrap_or(0)),
                )?,
                count(t.open_table(AGENTS).map(|x| x.len().unwrap_or(0)))?,
                count(t.open_table(OUTCOMES).map(|x| x.len().unwrap_or(0)))?,
                count(t.open_table(PAYMENTS).map(|x| x.len().unwrap_or(0)))?
                    + count(t.open_table(ANSWERS).map(|x| x.len().unwrap_or(0)))?,
            ))
        };
        let (allowance_rows, agents, outcomes, payment_rows) = rows(&txn)?;
        BackupSummary {
            path: dir.join(STORE_FILE),
            bytes: std::fs::metadata(from).map_err(backend)?.len(),
            allowance_rows,
            agents,
            outcomes,
            payment_rows,
        }
    };
    let current = dir.join(STORE_FILE);
    if current.exists() {
        // Refused while a server holds it: opening takes the file's lock.
        drop(Database::open(&current).map_err(|e| {
            StoreError::Backend(format!(
                "{} cannot be opened ({e}): stop the server before a restore",
                current.display()
            ))
        })?);
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let kept = dir.join(format!("{STORE_FILE}.before-restore-{now}"));
        std::fs::rename(&current, &kept).map_err(backend)?;
        tracing::info!(kept = %kept.display(), "the replaced store is kept");
    }
    super::create_private_dir(dir).map_err(backend)?;
    let next = dir.join(format!("{STORE_FILE}.restoring"));
    std::fs::copy(from, &next).map_err(backend)?;
    make_private(&next).map_err(backend)?;
    std::fs::rename(&next, &current).map_err(backend)?;
    match std::fs::remove_file(dir.join(JOURNAL_FILE)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(backend(e)),
    }
    Ok(summary)
}
