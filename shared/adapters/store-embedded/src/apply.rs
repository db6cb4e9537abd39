//! A group's writes in the B-tree: one write transaction, each write in order, each call's
//! result; committed at once ([`apply`]) or after the group's calls are answered ([`stage`]).

use super::allowance;
use super::lazy_table::LazyTable;
use super::{
    AGENTS, ANSWER_PREFIX, ANSWERS, AgentStats, BLOCKS, DELIVERABLES, Group, JOURNAL_SEQ, META,
    OUTCOMES, Op, PAYMENT_EXPIRY, PAYMENT_STATES, PAYMENTS, PRUNE_OUTCOMES_PER_WRITE,
    PRUNE_PER_BATCH, SETTLEMENT_IDS, SETTLEMENTS,
};
use redb::{Database, Key, ReadableTable, Value};
use verifier_ports::store::MAX_BLOCKS;
use verifier_ports::store::{FreeClaim, PaymentState};

/// Drop a few claims whose keeping time has passed.
fn prune_payments(
    payments: &mut redb::Table<&str, i64>,
    states: &mut redb::Table<&str, &str>,
    expiry: &mut redb::Table<(i64, &str), ()>,
    answers: &mut redb::Table<&str, &[u8]>,
    now: i64,
) -> Result<(), redb::StorageError> {
    let mut expired: Vec<(i64, String)> = Vec::new();
    for item in expiry
        .range((i64::MIN, "")..(now, ""))?
        .take(PRUNE_PER_BATCH)
    {
        let (k, _) = item?;
        let (at, key) = k.value();
        expired.push((at, key.to_owned()));
    }
    for (at, key) in expired {
        expiry.remove((at, key.as_str()))?;
        if let Some(id) = key.strip_prefix(ANSWER_PREFIX) {
            answers.remove(id)?;
        } else {
            payments.remove(key.as_str())?;
            states.remove(key.as_str())?;
        }
    }
    Ok(())
}

/// Drop up to [`PRUNE_OUTCOMES_PER_WRITE`] of `agent`'s oldest outcomes verified before
/// `cutoff` (unix seconds); outcomes are in the order they were recorded.
fn prune_outcomes(
    outcomes: &mut redb::Table<(&str, u64), &[u8]>,
    agent: &str,
    cutoff: i64,
) -> Result<(), redb::StorageError> {
    #[derive(serde::Deserialize)]
    struct When {
        verified_at: String,
    }
    let mut expired = Vec::new();
    for item in outcomes
        .range((agent, 0u64)..=(agent, u64::MAX))?
        .take(PRUNE_OUTCOMES_PER_WRITE)
    {
        let (k, v) = item?;
        let at = serde_json::from_slice::<When>(v.value())
            .ok()
            .and_then(|w| {
                time::OffsetDateTime::parse(
                    &w.verified_at,
                    &time::format_description::well_known::Rfc3339,
                )
                .ok()
            })
            .map(|t| t.unix_timestamp());
        match at {
            Some(at) if at < cutoff => expired.push(k.value().1),
            _ => break,
        }
    }
    for seq in expired {
        outcomes.remove((agent, seq))?;
    }
    Ok(())
}

/// Before a group's claims, drop rows of the days their latest day no longer keeps: at most
/// [`allowance::PRUNE_PER_GROUP`] more than the group has claims.
fn prune_allowance(
    allowance: &mut LazyTable<(&str, &str), u64>,
    ops: &[&Op],
) -> Result<(), redb::Error> {
    let days = ops.iter().filter_map(|op| match op {
        Op::Claim { key, .. } => allowance::split_claim_key(key).map(|(day, _)| day),
        _ => None,
    });
    let (mut claims, mut latest) = (0, None);
    for day in days {
        claims += 1;
        latest = latest.max(Some(day));
    }
    if let Some(first_kept) = latest.and_then(allowance::first_kept_day) {
        allowance::prune(
            allowance.open()?,
            &first_kept,
            allowance::PRUNE_PER_GROUP + claims,
        )?;
    }
    Ok(())
}

/// `lazy`'s table, opened now if no write needed it before; its error as the writer reports it.
fn table<'a, 't, K: Key + 'static, V: Value + 'static>(
    lazy: &'a mut LazyTable<'t, K, V>,
) -> Result<&'a mut redb::Table<'t, K, V>, String> {
    lazy.open().map_err(|e| e.to_string())
}

/// Apply a group's writes in one write transaction and commit it; see [`stage`].
pub(super) fn apply(
    db: &Database,
    group: &Group<&Op>,
    durable: bool,
    seq: Option<u64>,
) -> Result<Vec<FreeClaim>, String> {
    stage(db, group, durable, seq)?.commit()
}

/// A group's writes made in a write transaction not committed yet, and each call's result.
/// Dropped uncommitted, the writes are rolled back.
pub(super) struct Staged {
    pub(super) txn: redb::WriteTransaction,
    pub(super) results: Vec<FreeClaim>,
}

impl Staged {
    pub(super) fn commit(self) -> Result<Vec<FreeClaim>, String> {
        self.txn.commit().map_err(|e| e.to_string())?;
        Ok(self.results)
    }
}

/// Make a group's writes in one write transaction, in order, without committing it; with
/// `seq`, record it as the journal entry these writes are (in the same transaction, so a replay
/// skips what the file already holds).
pub(super) fn stage(
    db: &Database,
    group: &Group<&Op>,
    durable: bool,
    seq: Option<u64>,
) -> Result<Staged, String> {
    let ops = &group.ops;
    let mut txn = db.begin_write().map_err(|e| e.to_string())?;
    if !durable {
        txn.set_durability(redb::Durability::None)
            .map_err(|e| e.to_string())?;
    }
    let mut results = Vec::with_capacity(ops.len());
    {
        // Each opened when a write first needs it: a group of free claims opens four of nine
        // (five with a signed deliverable).
        let mut allowance = LazyTable::new(&txn, allowance::ALLOWANCE);
        let mut agents = LazyTable::new(&txn, AGENTS);
        let mut outcomes = LazyTable::new(&txn, OUTCOMES);
        let mut payments = LazyTable::new(&txn, PAYMENTS);
        let mut expiry = LazyTable::new(&txn, PAYMENT_EXPIRY);
        let mut states = LazyTable::new(&txn, PAYMENT_STATES);
        let mut answers = LazyTable::new(&txn, ANSWERS);
        let mut deliverables = LazyTable::new(&txn, DELIVERABLES);
        // Expired claims matter only to the payment writes (reads check expiry themselves), so
        // only a group with one prunes, first, as before each of its payment writes.
        if ops.iter().any(|op| op.is_payment()) {
            prune_payments(
                table(&mut payments)?,
                table(&mut states)?,
                table(&mut expiry)?,
                table(&mut answers)?,
                group.now,
            )
            .map_err(|e| e.to_string())?;
        }
        prune_allowance(&mut allowance, ops).map_err(|e| e.to_string())?;
        if let Some(seq) = seq {
            let mut meta = txn.open_table(META).map_err(|e| e.to_string())?;
            meta.insert(JOURNAL_SEQ, seq).map_err(|e| e.to_string())?;
        }
        for op in ops {
            let (outcome, prune_before, claim) = match op {
                Op::Claim {
                    key,
                    limit,
                    total,
                    outcome,
                    prune_before,
                } => {
                    let row =
                        allowance::split_claim_key(key).ok_or("a free claim's key has no day")?;
                    let budget_row = (row.0, allowance::TOTAL_CLIENT);
                    let mut count = |row| -> Result<u64, String> {
                        Ok(table(&mut allowance)?
                            .get(row)
                            .map_err(|e| e.to_string())?
                            .map_or(0, |g| g.value()))
                    };
                    let used = count(row)?;
                    let budget_used = match total {
                        Some(_) => count(budget_row)?,
                        None => 0,
                    };
                    if used >= *limit {
                        results.push(FreeClaim::Exhausted { used });
                        continue;
                    }
                    if total.is_some_and(|total| budget_used >= total) {
                        results.push(FreeClaim::BudgetSpent);
                        continue;
                    }
                    let counts = table(&mut allowance)?;
                    counts.insert(row, used + 1).map_err(|e| e.to_string())?;
                    if total.is_some() {
                        counts
                            .insert(budget_row, budget_used + 1)
                            .map_err(|e| e.to_string())?;
                    }
                    (
                        outcome.as_ref(),
                        *prune_before,
                        FreeClaim::Granted { used: used + 1 },
                    )
                }
                Op::Record {
                    outcome,
                    prune_before,
                } => (Some(outcome), *prune_before, FreeClaim::Granted { used: 0 }),
                Op::GiveBack { key, total } => {
                    let row = allowance::split_claim_key(key)
                        .ok_or("a free call given back has no day")?;
                    let counts = table(&mut allowance)?;
                    let rows = [Some(row), total.then_some((row.0, allowance::TOTAL_CLIENT))];
                    for row in rows.into_iter().flatten() {
                        let used = counts
                            .get(row)
                            .map_err(|e| e.to_string())?
                            .map_or(0, |g| g.value());
                        if used > 0 {
                            counts.insert(row, used - 1).map_err(|e| e.to_string())?;
                        }
                    }
                    results.push(FreeClaim::Granted { used: 0 });
                    continue;
                }
                Op::Payment { key, keep_until } => {
                    let seen = table(&mut payments)?
                        .get(key.as_str())
                        .map_err(|e| e.to_string())?
                        .is_some();
                    if seen {
                        results.push(FreeClaim::Exhausted { used: 1 });
                    } else {
                        table(&mut payments)?
                            .insert(key.as_str(), *keep_until)
                            .map_err(|e| e.to_string())?;
                        table(&mut states)?
                            .insert(key.as_str(), PaymentState::Claimed.as_str())
                            .map_err(|e| e.to_string())?;
                        table(&mut expiry)?
                            .insert((*keep_until, key.as_str()), ())
                            .map_err(|e| e.to_string())?;
                        results.push(FreeClaim::Granted { used: 1 });
                    }
                    continue;
                }
                Op::Advance { key, from, to } => {
                    let claimed = table(&mut payments)?
                        .get(key.as_str())
                        .map_err(|e| e.to_string())?
                        .is_some();
                    let current = table(&mut states)?
                        .get(key.as_str())
                        .map_err(|e| e.to_string())?
                        .map(|g| g.value().to_owned());
                    let current = current.as_deref().unwrap_or(PaymentState::Settled.as_str());
                    if claimed && current == from.as_str() {
                        table(&mut states)?
                            .insert(key.as_str(), to.as_str())
                            .map_err(|e| e.to_string())?;
                        results.push(FreeClaim::Granted { used: 1 });
                    } else {
                        results.push(FreeClaim::Exhausted { used: 1 });
                    }
                    continue;
                }
                Op::Release { key } => {
                    table(&mut states)?
                        .remove(key.as_str())
                        .map_err(|e| e.to_string())?;
                    let kept = table(&mut payments)?
                        .remove(key.as_str())
                        .map_err(|e| e.to_string())?
                        .map(|g| g.value());
                    if let Some(until) = kept {
                        table(&mut expiry)?
                            .remove((until, key.as_str()))
                            .map_err(|e| e.to_string())?;
                    }
                    results.push(FreeClaim::Granted { used: 0 });
                    continue;
                }
                Op::Settle { id, at, record } => {
                    let mut ids = txn.open_table(SETTLEMENT_IDS).map_err(|e| e.to_string())?;
                    let seen = ids.get(id.as_str()).map_err(|e| e.to_string())?.is_some();
                    if !seen {
                        ids.insert(id.as_str(), *at).map_err(|e| e.to_string())?;
                        txn.open_table(SETTLEMENTS)
                            .map_err(|e| e.to_string())?
                            .insert((*at, id.as_str()), record.as_slice())
                            .map_err(|e| e.to_string())?;
                    }
                    results.push(FreeClaim::Granted { used: 0 });
                    continue;
                }
                Op::Block { key, since } => {
                    let mut blocks = txn.open_table(BLOCKS).map_err(|e| e.to_string())?;
                    let present = blocks
                        .get(key.as_str())
                        .map_err(|e| e.to_string())?
                        .is_some();
                    // A full list is this call's answer (`BudgetSpent`), never the group's error.
                    let full = redb::ReadableTableMetadata::len(&blocks)
                        .map_err(|e| e.to_string())?
                        >= MAX_BLOCKS as u64;
                    let answer = match since {
                        Some(_) if present => FreeClaim::Exhausted { used: 0 },
                        Some(_) if full => FreeClaim::BudgetSpent,
                        Some(at) => {
                            blocks
                                .insert(key.as_str(), *at)
                                .map_err(|e| e.to_string())?;
                            FreeClaim::Granted { used: 1 }
                        }
                        None if blocks
                            .remove(key.as_str())
                            .map_err(|e| e.to_string())?
                            .is_some() =>
                        {
                            FreeClaim::Granted { used: 1 }
                        }
                        None => FreeClaim::Exhausted { used: 0 },
                    };
                    results.push(answer);
                    continue;
                }
                Op::Erase { agent_id } => {
                    table(&mut agents)?
                        .remove(agent_id.as_str())
                        .map_err(|e| e.to_string())?;
                    let outcomes = table(&mut outcomes)?;
                    let mut seqs = Vec::new();
                    for item in outcomes
                        .range((agent_id.as_str(), 0u64)..=(agent_id.as_str(), u64::MAX))
                        .map_err(|e| e.to_string())?
                    {
                        let (k, _) = item.map_err(|e| e.to_string())?;
                        seqs.push(k.value().1);
                    }
                    for seq in &seqs {
                        outcomes
                            .remove((agent_id.as_str(), *seq))
                            .map_err(|e| e.to_string())?;
                    }
                    results.push(FreeClaim::Granted {
                        used: seqs.len() as u64,
                    });
                    continue;
                }
                Op::Answer {
                    id,
                    kept,
                    keep_until,
                } => {
                    let present = table(&mut answers)?
                        .get(id.as_str())
                        .map_err(|e| e.to_string())?
                        .is_some();
                    if !present {
                        table(&mut answers)?
                            .insert(id.as_str(), kept.as_slice())
                            .map_err(|e| e.to_string())?;
                        let marker = format!("{ANSWER_PREFIX}{id}");
                        table(&mut expiry)?
                            .insert((*keep_until, marker.as_str()), ())
                            .map_err(|e| e.to_string())?;
                    }
                    results.push(FreeClaim::Granted { used: 0 });
                    continue;
                }
            };
            let seen = match outcome.and_then(|o| o.signed_deliverable.as_deref()) {
                Some(d) => table(&mut deliverables)?
                    .insert(d, ())
                    .map_err(|e| e.to_string())?
                    .is_some(),
                None => false,
            };
            if let Some(o) = outcome.filter(|_| !seen) {
                let mut stats: AgentStats = table(&mut agents)?
                    .get(o.agent_id.as_str())
                    .map_err(|e| e.to_string())?
                    .and_then(|g| serde_json::from_slice(g.value()).ok())
                    .unwrap_or_default();
                if o.passed() {
                    stats.passes += 1;
                } else {
                    stats.fails += 1;
                }
                stats.paid += u64::from(o.paid);
                stats.checks = stats.checks.saturating_add(o.checks);
                stats
                    .first_seen
                    .get_or_insert_with(|| o.verified_at.clone());
                stats.last_seen = Some(o.verified_at.clone());
                let seq = stats.next_seq;
                stats.next_seq += 1;
                let record = serde_json::to_vec(o).map_err(|e| e.to_string())?;
                table(&mut outcomes)?
                    .insert((o.agent_id.as_str(), seq), record.as_slice())
                    .map_err(|e| e.to_string())?;
                let stats_bytes = serde_json::to_vec(&stats).map_err(|e| e.to_string())?;
                table(&mut agents)?
                    .insert(o.agent_id.as_str(), stats_bytes.as_slice())
                    .map_err(|e| e.to_string())?;
                if let Some(cutoff) = prune_before {
                    prune_outcomes(table(&mut outcomes)?, &o.agent_id, cutoff)
                        .map_err(|e| e.to_string())?;
                }
            }
            results.push(claim);
        }
    }
    Ok(Staged { txn, results })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A passing outcome of agent `a` with one check.
    fn sample_outcome() -> Outcome {
        Outcome {
            agent_id: "a".into(),
            verification_id: "v".into(),
            result: "pass".into(),
            verified_at: "2026-12-06T00:00:00.000000+00:00".into(),
            signed_deliverable: None,
            paid: false,
            checks: 1,
        }
    }
    use redb::ReadableTableMetadata;
    use verifier_ports::store::Outcome;

    #[test]
    fn a_group_of_ten_claims_drops_up_to_74_old_rows_and_a_group_without_claims_none() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Database::create(dir.path().join("t.redb")).expect("db");
        let clients: Vec<String> = (0..100).map(|i| format!("198.51.100.{i}")).collect();
        let txn = db.begin_write().expect("write");
        {
            let mut table = txn.open_table(allowance::ALLOWANCE).expect("table");
            for client in &clients {
                table
                    .insert(("2026-11-20", client.as_str()), 1)
                    .expect("insert");
            }
            let claims: Vec<Op> = clients[..10]
                .iter()
                .map(|client| Op::Claim {
                    key: allowance::claim_key(client, "2026-12-06"),
                    limit: 5,
                    total: None,
                    outcome: None,
                    prune_before: None,
                })
                .collect();
            let record = Op::Record {
                outcome: sample_outcome(),
                prune_before: None,
            };
            drop(table);
            let mut table = LazyTable::new(&txn, allowance::ALLOWANCE);
            let rows = |table: &mut LazyTable<(&str, &str), u64>| {
                table.open().expect("table").len().expect("len")
            };
            prune_allowance(&mut table, &[&record]).expect("prune");
            assert_eq!(rows(&mut table), 100);
            let group: Vec<&Op> = claims.iter().chain([&record]).collect();
            prune_allowance(&mut table, &group).expect("prune");
            assert_eq!(rows(&mut table), 100 - 74);
        }
        txn.commit().expect("commit");
    }
}
