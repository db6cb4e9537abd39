//! Recording an agent's outcomes and reading its history: the counters and the newest outcomes
//! live in one item (`AGENT#<id>` / `STATS`, its `recent` list: `recent.rs`), so a verification
//! is one plain conditional `UpdateItem` (1 WRU while the item is under 1 KB) and a history is
//! one `GetItem`.
//!
//! Why each invariant holds without a transaction:
//! - **Counted with its entry, or not at all**: the counters and the entry change in one
//!   update, which DynamoDB applies whole or not.
//! - **Counted once**: the update's condition is that the entry is not in the list yet. An SDK
//!   retry of an update that did commit (its answer lost) fails that condition and is taken as
//!   done; entries are unique (the verification ID), and a trim keeps the newest [`KEEP`], so
//!   the entry is still there for any retry that follows it.
//! - **A signed deliverable counts once**: its once-only marker is a second item, so that
//!   update and the marker's conditional put go in one transaction, as before.
//! - **Bounded**: the writer whose update answers a list of [`TRIM_AT`] entries removes the
//!   oldest down to [`KEEP`], conditional on the length it saw, so concurrent trims never
//!   remove twice; the condition refuses an append at [`CAP`] entries (at [`TRIM_AT`] in a
//!   transaction, which does not answer the length), and a refused append trims and tries
//!   again.
//! - **Retention**: a history skips outcomes past the retention, and the writer whose update
//!   answers a list that starts with such outcomes removes them the same way.
//!
//! Items written by versions before this one (`OUT#…` rows beside the counters) are still
//! read: a history whose list is short of what the counts say lists those rows after it.

use super::recent::{self, CAP, KEEP, TRIM_AT};
use super::{DynamoStore, agent_key, applied, backend, classify, n, num, s, text};
use super::{Reasons, update_condition_failed};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use std::collections::HashMap;
use verifier_ports::store::{AgentHistory, Outcome, StoreError};

/// Attempts of an append whose list was full (each after a trim).
const FULL_ATTEMPTS: usize = 4;

/// What a refused append's old item says.
enum Room {
    /// The entry is there: an earlier attempt of this write committed.
    Seen,
    /// The list is at its cap (this many entries).
    Full(usize),
    /// Neither: a concurrent trim moved the list; try again.
    Free,
}

/// Whether `o` was verified before `cutoff` (unix seconds); an unreadable time is kept.
fn expired(o: &Outcome, cutoff: i64) -> bool {
    recent::unix_seconds(o).is_some_and(|at| at < cutoff)
}

fn room(old: &HashMap<String, AttributeValue>, entry: &AttributeValue, cap: usize) -> Room {
    let list = recent::entries(old);
    if list.contains(entry) {
        Room::Seen
    } else if list.len() >= cap {
        Room::Full(list.len())
    } else {
        Room::Free
    }
}

impl DynamoStore {
    /// The update counting `o` and appending `entry` to the agent's list, conditional on the
    /// entry not being there and the list holding fewer than `cap`; a refusal answers the old
    /// item.
    fn stats_update(
        &self,
        o: &Outcome,
        entry: &AttributeValue,
        cap: usize,
    ) -> Result<Update, StoreError> {
        let counter = if o.passed() { "passes" } else { "fails" };
        Update::builder()
            .table_name(&self.table)
            .key("pk", s(agent_key(&o.agent_id)))
            .key("sk", s("STATS"))
            .update_expression(
                "ADD #c :one, #paid :paid, #checks :checks \
                 SET #first = if_not_exists(#first, :at), #last = :at, \
                 #recent = list_append(if_not_exists(#recent, :none), :entry)",
            )
            .condition_expression(
                "attribute_not_exists(#recent) OR (size(#recent) < :cap AND NOT contains(#recent, :e))",
            )
            .expression_attribute_names("#c", counter)
            .expression_attribute_names("#paid", "paid")
            .expression_attribute_names("#checks", "checks")
            .expression_attribute_names("#first", "first_seen")
            .expression_attribute_names("#last", "last_seen")
            .expression_attribute_names("#recent", "recent")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":paid", n(u64::from(o.paid)))
            .expression_attribute_values(":checks", n(o.checks))
            .expression_attribute_values(":at", s(&o.verified_at))
            .expression_attribute_values(":none", AttributeValue::L(Vec::new()))
            .expression_attribute_values(":entry", AttributeValue::L(vec![entry.clone()]))
            .expression_attribute_values(":e", entry.clone())
            .expression_attribute_values(":cap", n(cap))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(backend)
    }

    /// The transaction items recording `o`: the counters' update (refused at [`TRIM_AT`]
    /// entries: a transaction does not answer the list's length) and, for a signed
    /// deliverable, its once-only marker (the second item).
    pub(super) fn outcome_items(
        &self,
        o: &Outcome,
        entry: &AttributeValue,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut items = vec![
            TransactWriteItem::builder()
                .update(self.stats_update(o, entry, TRIM_AT)?)
                .build(),
        ];
        if let Some(d) = &o.signed_deliverable {
            let marker = Put::builder()
                .table_name(&self.table)
                .item("pk", s(format!("DELIV#{d}")))
                .item("sk", s("DELIV"))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .map_err(backend)?;
            items.push(TransactWriteItem::builder().put(marker).build());
        }
        Ok(items)
    }

    /// Record an outcome without a signed deliverable: one conditional `UpdateItem`, and when
    /// it leaves the list at [`TRIM_AT`], one trim.
    pub(super) async fn append_outcome(&self, o: &Outcome) -> Result<(), StoreError> {
        let entry = recent::encode(o);
        let update = self.stats_update(o, &entry, CAP)?;
        for _ in 0..FULL_ATTEMPTS {
            match self.update_alone(&update).await {
                Ok(out) => {
                    let list = out.attributes.as_ref().map_or(&[][..], recent::entries);
                    let over = if list.len() >= TRIM_AT {
                        list.len() - KEEP
                    } else {
                        0
                    };
                    let remove = over.max(self.expired_prefix(&o.agent_id, list));
                    // The outcome is recorded; a failed trim is retried by a later append.
                    if remove > 0
                        && let Err(e) = self.trim(&o.agent_id, list.len(), remove).await
                    {
                        tracing::warn!(error = %e, "trimming an agent's recent outcomes failed");
                    }
                    return Ok(());
                }
                Err(SdkError::ServiceError(se)) if update_condition_failed(se.err()) => {
                    let old = match se.err() {
                        aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => c.item().cloned().unwrap_or_default(),
                        _ => HashMap::new(),
                    };
                    match room(&old, &entry, CAP) {
                        Room::Seen => return Ok(()),
                        Room::Full(len) => self.trim(&o.agent_id, len, len - KEEP).await?,
                        Room::Free => {}
                    }
                }
                Err(e) => return Err(classify(e)),
            }
        }
        Err(StoreError::Unavailable)
    }

    /// Run a transaction whose items from `first` record an outcome (`entry`, of `agent_id`):
    /// when the agent's list is full, trim it and run the transaction again. `Ok(None)` when
    /// it committed (or an earlier attempt did); otherwise the cancellation reasons.
    pub(super) async fn transact_outcome(
        &self,
        items: Vec<TransactWriteItem>,
        first: usize,
        entry: &AttributeValue,
        agent_id: &str,
    ) -> Result<Option<Reasons>, StoreError> {
        for _ in 0..FULL_ATTEMPTS {
            let Some(reasons) = self.transact(items.clone()).await? else {
                return Ok(None);
            };
            match reasons.get(first) {
                Some((code, old)) if code == "ConditionalCheckFailed" => {
                    match room(old, entry, TRIM_AT) {
                        Room::Seen => return Ok(None),
                        Room::Full(len) => self.trim(agent_id, len, len - KEEP).await?,
                        Room::Free => {}
                    }
                }
                _ => return Ok(Some(reasons)),
            }
        }
        Err(StoreError::Unavailable)
    }

    /// Unix seconds before which an outcome is past the retention; none without one.
    fn retention_cutoff(&self) -> Option<i64> {
        self.outcome_retention
            .map(|keep| time::OffsetDateTime::now_utc().unix_timestamp() - keep)
    }

    /// How many of the oldest entries of `list` are past the outcome retention.
    fn expired_prefix(&self, agent_id: &str, list: &[AttributeValue]) -> usize {
        let Some(cutoff) = self.retention_cutoff() else {
            return 0;
        };
        list.iter()
            .take_while(|e| recent::decode(agent_id, e).is_some_and(|o| expired(&o, cutoff)))
            .count()
    }

    /// Remove the `remove` oldest entries of an agent's list, if it still holds `len`
    /// (otherwise another writer moved it, and a later append trims).
    async fn trim(&self, agent_id: &str, len: usize, remove: usize) -> Result<(), StoreError> {
        let remove = remove.min(len);
        if remove == 0 {
            return Ok(());
        }
        let paths: Vec<String> = (0..remove).map(|i| format!("#recent[{i}]")).collect();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(agent_key(agent_id)))
            .key("sk", s("STATS"))
            .update_expression(format!("REMOVE {}", paths.join(", ")))
            .condition_expression("size(#recent) = :len")
            .expression_attribute_names("#recent", "recent")
            .expression_attribute_values(":len", n(len))
            .send()
            .await;
        applied(result, update_condition_failed).map(|_| ())
    }

    /// An agent's counts and its `recent` newest outcomes (within the outcome retention):
    /// one consistent `GetItem`, and a `Query` (at most `recent` rows) only when the list is
    /// shorter than both [`KEEP`] and the counts: an agent with rows of earlier versions, or,
    /// with a retention, one whose expired outcomes were removed.
    pub(super) async fn read_history(
        &self,
        agent_id: &str,
        recent: usize,
    ) -> Result<AgentHistory, StoreError> {
        let stats = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(agent_key(agent_id)))
            .key("sk", s("STATS"))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = stats.item else {
            return Ok(AgentHistory::default());
        };
        let entries = recent::entries(&item);
        let cutoff = self.retention_cutoff();
        let mut list: Vec<Outcome> = entries
            .iter()
            .rev()
            .filter_map(|e| recent::decode(agent_id, e))
            .filter(|o| cutoff.is_none_or(|cutoff| !expired(o, cutoff)))
            .take(recent)
            .collect();
        let counted = num(&item, "passes") + num(&item, "fails");
        let written_before = entries.len() < KEEP && counted > entries.len() as u64;
        if list.len() < recent && written_before {
            list.extend(
                self.rows_of_earlier_versions(agent_id, recent - list.len())
                    .await?,
            );
        }
        Ok(AgentHistory {
            passes: num(&item, "passes"),
            fails: num(&item, "fails"),
            paid: num(&item, "paid"),
            checks: num(&item, "checks"),
            first_seen: text(&item, "first_seen"),
            last_seen: text(&item, "last_seen"),
            recent: list,
        })
    }

    /// Up to `limit` outcome rows (`OUT#…`) of an agent, newest first, as versions before the
    /// `recent` list wrote them.
    async fn rows_of_earlier_versions(
        &self,
        agent_id: &str,
        limit: usize,
    ) -> Result<Vec<Outcome>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :out)")
            .expression_attribute_values(":pk", s(agent_key(agent_id)))
            .expression_attribute_values(":out", s("OUT#"))
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out
            .items
            .unwrap_or_default()
            .iter()
            .map(|o| Outcome {
                agent_id: agent_id.to_owned(),
                verification_id: text(o, "verification_id").unwrap_or_default(),
                result: text(o, "result").unwrap_or_default(),
                verified_at: text(o, "verified_at").unwrap_or_default(),
                signed_deliverable: None,
                paid: matches!(o.get("paid"), Some(AttributeValue::Bool(true))),
                checks: num(o, "checks"),
            })
            .collect())
    }
}
