//! A table of a write transaction, opened the first time a write needs it.
//!
//! Opening a table in a redb write transaction looks it up and marks the transaction dirty,
//! whether or not anything is written to it. A group of free claims writes four tables (the
//! allowance, the agents, their outcomes and the journal's sequence number; five with a signed
//! deliverable); opening the other five for it too cost about 6 µs of the writer's ~55 µs per
//! group at one connection (docs/performance.md, "The answer before the B-tree commit").

use redb::{Key, Table, TableDefinition, TableError, Value, WriteTransaction};

/// One table of `txn`, opened on first use and kept open for the rest of the transaction.
pub(super) struct LazyTable<'t, K: Key + 'static, V: Value + 'static> {
    txn: &'t WriteTransaction,
    definition: TableDefinition<'static, K, V>,
    table: Option<Table<'t, K, V>>,
}

impl<'t, K: Key + 'static, V: Value + 'static> LazyTable<'t, K, V> {
    /// The table `definition` names, in `txn`, not opened yet.
    pub(super) fn new(
        txn: &'t WriteTransaction,
        definition: TableDefinition<'static, K, V>,
    ) -> Self {
        LazyTable {
            txn,
            definition,
            table: None,
        }
    }

    /// The open table, opening it now if no write needed it before.
    pub(super) fn open(&mut self) -> Result<&mut Table<'t, K, V>, TableError> {
        match &mut self.table {
            Some(table) => Ok(table),
            slot @ None => Ok(slot.insert(self.txn.open_table(self.definition)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata};

    const USED: TableDefinition<&str, u64> = TableDefinition::new("used");
    const UNUSED: TableDefinition<&str, u64> = TableDefinition::new("unused");

    #[test]
    fn only_the_tables_a_write_asks_for_are_opened() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Database::create(dir.path().join("t.redb")).expect("db");
        let txn = db.begin_write().expect("write");
        {
            let mut used = LazyTable::new(&txn, USED);
            let _unused = LazyTable::new(&txn, UNUSED);
            used.open().expect("open").insert("a", 1).expect("insert");
            // The second use finds the same open table, with the first write in it.
            let table = used.open().expect("open again");
            assert_eq!(table.get("a").expect("get").map(|g| g.value()), Some(1));
            table.insert("b", 2).expect("insert");
        }
        txn.commit().expect("commit");

        let read = db.begin_read().expect("read");
        assert_eq!(read.open_table(USED).expect("used").len().expect("len"), 2);
        assert!(
            matches!(
                read.open_table(UNUSED),
                Err(TableError::TableDoesNotExist(_))
            ),
            "a table never asked for is not created"
        );
    }
}
