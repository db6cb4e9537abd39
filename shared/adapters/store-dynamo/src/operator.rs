//! The operator's items: blocks, the settled-payments ledger, erasing an agent's history.
//!
//! - `BLOCKS` / `client:<cidr>` or `agent:<id>`: `since` (N); at most
//!   [`MAX_BLOCKS`](verifier_ports::store::MAX_BLOCKS) of them;
//! - `SETTLED#<YYYY-MM>` / `<unix second, 12 digits>#<network>#<transaction>`: one settled
//!   payment (`network`, `payer`, `amount`, `transaction`, `route`, `at`), kept for good, one
//!   partition a month so the ledger never makes a hot partition.

use super::{DynamoStore, backend, classify, n, num, s, text};
use aws_sdk_dynamodb::types::{DeleteRequest, ReturnValue, Select, WriteRequest};
use std::collections::HashMap;
use verifier_ports::store::{Block, BlockTarget, MAX_BLOCKS, Settlement, StoreError};

const BLOCKS_PK: &str = "BLOCKS";

fn month_of(at: i64) -> String {
    let t =
        time::OffsetDateTime::from_unix_timestamp(at).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

fn settlement_sort_key(at: i64, rest: &str) -> String {
    format!("{at:012}#{rest}")
}

/// The first second of the month after the one `at` is in.
fn next_month(at: i64) -> i64 {
    let t =
        time::OffsetDateTime::from_unix_timestamp(at).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let (year, month) = match t.month() {
        time::Month::December => (t.year() + 1, time::Month::January),
        m => (t.year(), m.next()),
    };
    time::Date::from_calendar_date(year, month, 1)
        .map(|d| d.midnight().assume_utc().unix_timestamp())
        .unwrap_or(i64::MAX)
}

impl DynamoStore {
    pub(super) async fn put_settlement(&self, x: &Settlement) -> Result<(), StoreError> {
        let id = format!("{}#{}", x.network, x.transaction);
        let item = HashMap::from([
            ("pk".to_owned(), s(format!("SETTLED#{}", month_of(x.at)))),
            ("sk".to_owned(), s(settlement_sort_key(x.at, &id))),
            ("at".to_owned(), n(x.at)),
            ("network".to_owned(), s(&x.network)),
            ("payer".to_owned(), s(&x.payer)),
            ("amount".to_owned(), s(&x.amount)),
            ("transaction".to_owned(), s(&x.transaction)),
            ("route".to_owned(), s(&x.route)),
        ]);
        // Kept already (the same settlement recorded twice): nothing to do.
        self.put_if_absent(item).await.map(|_| ())
    }

    pub(super) async fn query_settlements(
        &self,
        since: i64,
        until: i64,
        limit: usize,
    ) -> Result<Vec<Settlement>, StoreError> {
        let mut list = Vec::new();
        let mut month_start = since;
        while month_start < until && list.len() < limit {
            // The SDK's paginator follows LastEvaluatedKey; it stops being polled at `limit`.
            let mut items = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(format!("SETTLED#{}", month_of(month_start))))
                .expression_attribute_values(":lo", s(settlement_sort_key(since, "")))
                .expression_attribute_values(":hi", s(settlement_sort_key(until - 1, "~")))
                .consistent_read(true)
                .into_paginator()
                .items()
                .send();
            while list.len() < limit {
                let Some(item) = items.next().await else {
                    break;
                };
                let item = item.map_err(classify)?;
                list.push(Settlement {
                    at: num(&item, "at") as i64,
                    network: text(&item, "network").unwrap_or_default(),
                    payer: text(&item, "payer").unwrap_or_default(),
                    amount: text(&item, "amount").unwrap_or_default(),
                    transaction: text(&item, "transaction").unwrap_or_default(),
                    route: text(&item, "route").unwrap_or_default(),
                });
            }
            month_start = next_month(month_start);
        }
        Ok(list)
    }

    pub(super) async fn put_block(
        &self,
        target: &BlockTarget,
        blocked: bool,
        now: i64,
    ) -> Result<bool, StoreError> {
        if !blocked {
            let old = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key("pk", s(BLOCKS_PK))
                .key("sk", s(target.key()))
                .return_values(ReturnValue::AllOld)
                .send()
                .await
                .map_err(classify)?;
            return Ok(old.attributes.is_some());
        }
        let count = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(BLOCKS_PK))
            .select(Select::Count)
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?
            .count;
        if count as usize >= MAX_BLOCKS {
            return Err(StoreError::Backend(format!(
                "at most {MAX_BLOCKS} blocks are kept: unblock some first"
            )));
        }
        self.put_if_absent(HashMap::from([
            ("pk".to_owned(), s(BLOCKS_PK)),
            ("sk".to_owned(), s(target.key())),
            ("since".to_owned(), n(now)),
        ]))
        .await
    }

    pub(super) async fn query_blocks(&self) -> Result<Vec<Block>, StoreError> {
        let mut items = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(BLOCKS_PK))
            .into_paginator()
            .items()
            .send();
        let mut list = Vec::new();
        while list.len() < MAX_BLOCKS {
            let Some(item) = items.next().await else {
                break;
            };
            let item = item.map_err(classify)?;
            if let Some(target) = text(&item, "sk").and_then(|k| BlockTarget::from_key(&k)) {
                list.push(Block {
                    target,
                    since: num(&item, "since") as i64,
                });
            }
        }
        Ok(list)
    }

    /// Delete every item of the agent (its counters and outcomes), 25 at a time; the number of
    /// verifications its counts recorded.
    pub(super) async fn delete_agent(&self, agent_id: &str) -> Result<u64, StoreError> {
        let pk = super::agent_key(agent_id);
        let mut erased = 0;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(&pk))
                .projection_expression("pk, sk, passes, fails")
                .limit(100)
                .consistent_read(true)
                .send()
                .await
                .map_err(classify)?;
            let keys = out.items.unwrap_or_default();
            if keys.is_empty() {
                return Ok(erased);
            }
            // The verifications the agent's counts recorded (its outcomes, kept or not).
            erased += keys
                .iter()
                .filter(|k| text(k, "sk").as_deref() == Some("STATS"))
                .map(|k| num(k, "passes") + num(k, "fails"))
                .sum::<u64>();
            for chunk in keys.chunks(25) {
                let mut requests: Vec<WriteRequest> = chunk
                    .iter()
                    .map(|item| {
                        let key = item
                            .iter()
                            .filter(|(name, _)| *name == "pk" || *name == "sk")
                            .map(|(name, v)| (name.clone(), v.clone()))
                            .collect();
                        let delete = DeleteRequest::builder()
                            .set_key(Some(key))
                            .build()
                            .map_err(backend)?;
                        Ok(WriteRequest::builder().delete_request(delete).build())
                    })
                    .collect::<Result<_, StoreError>>()?;
                for attempt in 0..8 {
                    let out = self
                        .client
                        .batch_write_item()
                        .request_items(&self.table, requests)
                        .send()
                        .await
                        .map_err(classify)?;
                    requests = out
                        .unprocessed_items
                        .and_then(|mut m| m.remove(&self.table))
                        .unwrap_or_default();
                    if requests.is_empty() {
                        break;
                    }
                    super::backoff(attempt).await;
                }
                if !requests.is_empty() {
                    return Err(StoreError::Unavailable);
                }
            }
        }
    }
}
