//! The free allowance's rows in the embedded store, and how old days leave it.
//!
//! One row per client address and UTC day, keyed day first — `(YYYY-MM-DD, client)` → calls
//! used — so every row of the days no longer kept is one range at the front of the table. A
//! group of writes with claims on day D first drops rows of days before D − 2 (the day and the
//! two after it are kept, as DynamoDB's TTL keeps them): at most [`PRUNE_PER_GROUP`] more rows
//! than the group has claims, so a group's pruning costs at most its own writes plus a
//! constant, and while claims come, old days' rows leave at least as fast as new ones arrive.
//!
//! Pruning depends only on the claims' days, which the journal keeps, so a replay prunes
//! exactly as the first application did, and a server whose clock a test sets never loses the
//! day it is on. The days come from the server's clock: one that jumps three days ahead and
//! back drops the rows of the days it left, which hands their clients a fresh allowance (more
//! free calls, never fewer).

use redb::{ReadableTable, TableDefinition, WriteTransaction};

use verifier_ports::store::ALLOWANCE_KEEP_DAYS;

/// Calls used: `(day, client)` → count.
pub(super) const ALLOWANCE: TableDefinition<(&str, &str), u64> =
    TableDefinition::new("allowance_by_day");
/// The table of stores written before days were pruned: `client|day` → count. Opening the
/// store moves its rows into [`ALLOWANCE`] and deletes it.
const LEGACY: TableDefinition<&str, u64> = TableDefinition::new("allowance");
/// The client column of a day's row counting the free calls of all clients together (the
/// free budget): no client address is `*`.
pub(super) const TOTAL_CLIENT: &str = "*";
/// Rows of old days dropped per group beyond its number of claims.
pub(super) const PRUNE_PER_GROUP: usize = 64;

/// A claim's key as writes carry it (and journals written before keep it): `client|day`.
pub(super) fn claim_key(client: &str, day: &str) -> String {
    format!("{client}|{day}")
}

/// A claim key's `(day, client)` ([`ALLOWANCE`]'s key); `None` for a key without a day.
pub(super) fn split_claim_key(key: &str) -> Option<(&str, &str)> {
    key.rsplit_once('|').map(|(client, day)| (day, client))
}

/// The first day kept when claims are made on `day` (`YYYY-MM-DD`): rows of earlier days go.
/// `None` for a day that is not a date, whose claims prune nothing.
pub(super) fn first_kept_day(day: &str) -> Option<String> {
    let date = time::Date::parse(
        day,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .ok()?;
    let first = date.checked_sub(time::Duration::days(ALLOWANCE_KEEP_DAYS))?;
    Some(verifier_ports::clock::utc_day(
        first.midnight().assume_utc(),
    ))
}

/// Drop up to `limit` rows of days before `first_kept`; how many were dropped.
pub(super) fn prune(
    table: &mut redb::Table<(&str, &str), u64>,
    first_kept: &str,
    limit: usize,
) -> Result<usize, redb::StorageError> {
    let mut old: Vec<(String, String)> = Vec::new();
    for row in table.range(("", "")..(first_kept, ""))?.take(limit) {
        let (key, _) = row?;
        let (day, client) = key.value();
        old.push((day.to_owned(), client.to_owned()));
    }
    for (day, client) in &old {
        table.remove((day.as_str(), client.as_str()))?;
    }
    Ok(old.len())
}

/// Move the rows of a store written before days were pruned into [`ALLOWANCE`], and delete
/// their table; how many rows moved. Only the rows of the newest day that table holds and the
/// two before it move (counted from its own rows, not the clock); older ones go with the table.
/// A count [`ALLOWANCE`] already holds for a row is added to (a store an older binary wrote to
/// after an earlier move loses no call). Once per store: later the old table does not exist.
pub(super) fn migrate(txn: &WriteTransaction) -> Result<u64, redb::Error> {
    let mut moved = 0;
    {
        let legacy = txn.open_table(LEGACY)?;
        let mut newest: Option<String> = None;
        for row in legacy.iter()? {
            let (key, _) = row?;
            if let Some((day, _)) = split_claim_key(key.value())
                && newest.as_deref().is_none_or(|n| day > n)
            {
                newest = Some(day.to_owned());
            }
        }
        let first_kept = newest.as_deref().and_then(first_kept_day);
        let mut table = txn.open_table(ALLOWANCE)?;
        for row in legacy.iter()? {
            let (key, used) = row?;
            let Some((day, client)) = split_claim_key(key.value()) else {
                continue;
            };
            if first_kept.as_deref().is_some_and(|first| day < first) {
                continue;
            }
            let held = table.get((day, client))?.map_or(0, |g| g.value());
            table.insert((day, client), held.saturating_add(used.value()))?;
            moved += 1;
        }
    }
    txn.delete_table(LEGACY)?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::{Database, ReadableDatabase};

    #[test]
    fn the_first_kept_day_is_two_days_before_the_claims_day() {
        assert_eq!(first_kept_day("2026-12-06").as_deref(), Some("2026-12-04"));
        assert_eq!(first_kept_day("2027-01-01").as_deref(), Some("2026-12-30"));
        assert_eq!(first_kept_day("2028-03-01").as_deref(), Some("2028-02-28"));
        assert_eq!(first_kept_day("not a day"), None);
        assert_eq!(first_kept_day(""), None);
    }

    #[test]
    fn a_claim_key_splits_at_its_last_bar() {
        let key = claim_key("2001:db8::/64", "2026-12-06");
        assert_eq!(split_claim_key(&key), Some(("2026-12-06", "2001:db8::/64")));
        assert_eq!(split_claim_key("no day"), None);
    }

    /// A store's file with rows of three days (three clients on each).
    fn rows(db: &Database) {
        let txn = db.begin_write().expect("write");
        {
            let mut table = txn.open_table(ALLOWANCE).expect("table");
            for day in ["2026-12-01", "2026-12-02", "2026-12-03"] {
                for client in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
                    table.insert((day, client), 1).expect("insert");
                }
            }
        }
        txn.commit().expect("commit");
    }

    fn days_left(db: &Database) -> Vec<String> {
        let txn = db.begin_read().expect("read");
        let table = txn.open_table(ALLOWANCE).expect("table");
        table
            .iter()
            .expect("iter")
            .map(|row| row.expect("row").0.value().0.to_owned())
            .collect()
    }

    #[test]
    fn pruning_drops_only_days_before_the_first_kept_and_no_more_than_asked() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Database::create(dir.path().join("t.redb")).expect("db");
        rows(&db);
        let txn = db.begin_write().expect("write");
        {
            let mut table = txn.open_table(ALLOWANCE).expect("table");
            assert_eq!(prune(&mut table, "2026-12-03", 4).expect("prune"), 4);
            assert_eq!(prune(&mut table, "2026-12-03", 4).expect("prune"), 2);
            assert_eq!(prune(&mut table, "2026-12-03", 4).expect("prune"), 0);
        }
        txn.commit().expect("commit");
        assert_eq!(days_left(&db), vec!["2026-12-03"; 3]);
    }

    #[test]
    fn an_old_stores_kept_days_move_to_the_table_by_day_once_adding_to_what_it_holds() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Database::create(dir.path().join("t.redb")).expect("db");
        let txn = db.begin_write().expect("write");
        {
            let mut legacy = txn.open_table(LEGACY).expect("table");
            legacy.insert("10.0.0.1|2026-12-05", 7).expect("insert");
            legacy
                .insert("2001:db8::/64|2026-12-06", 3)
                .expect("insert");
            // Older than the newest day and the two before it: not moved.
            legacy.insert("10.0.0.9|2026-12-03", 4).expect("insert");
            // What a move before an older binary's run left.
            let mut table = txn.open_table(ALLOWANCE).expect("table");
            table
                .insert(("2026-12-06", "2001:db8::/64"), 2)
                .expect("insert");
        }
        txn.commit().expect("commit");

        let txn = db.begin_write().expect("write");
        assert_eq!(migrate(&txn).expect("migrate"), 2);
        assert_eq!(migrate(&txn).expect("again"), 0);
        txn.commit().expect("commit");

        let txn = db.begin_read().expect("read");
        let table = txn.open_table(ALLOWANCE).expect("table");
        let used = |day, client| table.get((day, client)).expect("get").map(|g| g.value());
        assert_eq!(used("2026-12-05", "10.0.0.1"), Some(7));
        assert_eq!(used("2026-12-06", "2001:db8::/64"), Some(5));
        assert_eq!(used("2026-12-03", "10.0.0.9"), None);
        assert!(txn.open_table(LEGACY).is_err(), "the old table is gone");
    }
}
