//! The DynamoDB store: one on-demand table (`pk`, `sk` strings), every write a conditional
//! update or a transaction, never read-modify-write.
//!
//! Items:
//! - `ALLOW#<client>#<day>` / `ALLOW`: `used` (N), `expires_at` (TTL, two days after the day);
//! - `AGENT#<id>` / `STATS`: `passes`, `fails`, `paid`, `checks` (N), `first_seen`,
//!   `last_seen` (S), and `recent`: the agent's newest outcomes, oldest first, 26–35 bytes
//!   each (`recent.rs`, `outcomes.rs`), so one update counts and keeps an outcome;
//! - `AGENT#<id>` / `OUT#<verified_at>#<verification_id>`: an outcome as versions before the
//!   `recent` list wrote it (`result`, `verified_at`, `verification_id`, `paid` (BOOL),
//!   `checks` (N)); still read, no longer written;
//! - `DELIV#<hash>` / `DELIV`: a signed deliverable's once-only marker;
//! - `PAY#<network>#<payer>#<nonce-or-tx>` / `PAY`: a claimed payment, `state` (`claimed`,
//!   `settling`, `settled`; none on rows older than payment states: settled), `expires_at`
//!   (TTL);
//! - `FREEBUDGET#<day>` / `TOTAL`: `used` (N), the day's free budget across all clients,
//!   claimed in blocks ([`LEASE_UNITS`], `lease.rs`), `expires_at` (TTL).
//!
//! A free verification is two round trips ([`Store::claims_before_work`]): before the work,
//! the client's conditional `UpdateItem` (`used < limit`, answering the new count; once per
//! [`LEASE_UNITS`] calls one more for a block of the budget); after it, one
//! conditional `UpdateItem` of the agent's item, counting the outcome and keeping it (one
//! in eight per agent is followed by a trim of its list); a signed deliverable's outcome and
//! once-only marker go in one `TransactWriteItems`. A claim whose answer is not given
//! is handed back (`used - 1`). `claim_free_within` with an outcome keeps the one-step form
//! (allowance, budget, counters and outcome in one transaction) for callers that want it.
//! Throttling and transient errors are retried by the SDK with backoff; transaction
//! conflicts (concurrent writers of one hot item) are retried here with jittered backoff;
//! when they persist the caller gets [`StoreError::Unavailable`] (a retryable 503), never a
//! wrong count or a lost outcome. Each transaction carries a client request token, so an SDK
//! retry of a request that did commit is not applied twice.

mod lease;
mod operator;
mod outcomes;
mod recent;

pub use lease::LEASE_UNITS;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification,
    TransactWriteItem, Update,
};
use lease::BudgetLease;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use verifier_ports::store::{
    ALLOWANCE_KEEP_DAYS, AgentHistory, Block, BlockTarget, FreeClaim, FreeLimit, Outcome,
    PaidAnswer, PaymentState, Settlement, Store, StoreError,
};

/// Attempts of a transaction that keeps conflicting with concurrent writers.
const CONFLICT_ATTEMPTS: u32 = 12;

/// The DynamoDB adapter.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Units of the day's free budget claimed and not yet granted by this process.
    lease: Arc<BudgetLease>,
    /// Held while the lease is refilled: one block claim at a time.
    refill: Arc<tokio::sync::Mutex<()>>,
    /// Outcomes are dropped this long after their verification; none: kept.
    outcome_retention: Option<i64>,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn num(item: &HashMap<String, AttributeValue>, key: &str) -> u64 {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

fn text(item: &HashMap<String, AttributeValue>, key: &str) -> Option<String> {
    item.get(key).and_then(|v| v.as_s().ok()).cloned()
}

/// A cancelled transaction's reasons, item by item: the code and (where asked) the old item.
type Reasons = Vec<(String, HashMap<String, AttributeValue>)>;

fn backend<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A conditional write's outcome: `Ok(true)` applied, `Ok(false)` its condition failed
/// (`condition_failed` recognises the operation's modeled error), any other error classified.
fn applied<O, E, R>(
    result: Result<O, SdkError<E, R>>,
    condition_failed: impl Fn(&E) -> bool,
) -> Result<bool, StoreError>
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(se)) if condition_failed(se.err()) => Ok(false),
        Err(e) => Err(classify(e)),
    }
}

/// Whether an `UpdateItem` failed only on its condition (for [`applied`]).
fn update_condition_failed(e: &aws_sdk_dynamodb::operation::update_item::UpdateItemError) -> bool {
    matches!(
        e,
        aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(
            _
        )
    )
}

/// Throttling, timeouts and dispatch failures that outlived the SDK's retries are transient:
/// the caller may retry. Other service errors are backend failures.
fn classify<E, R>(e: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match &e {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => StoreError::Unavailable,
        SdkError::ServiceError(se) => {
            let code = se.err().code().unwrap_or("");
            // The modeled variant's name is in its Debug text when the metadata has no code.
            let kind = format!("{code} {:?}", se.err());
            if [
                "Throttl",
                "ProvisionedThroughputExceeded",
                "RequestLimitExceeded",
                "InternalServerError",
                "ServiceUnavailable",
            ]
            .iter()
            .any(|k| kind.contains(k))
            {
                StoreError::Unavailable
            } else {
                StoreError::Backend(format!("{code}: {}", se.err().message().unwrap_or("")))
            }
        }
        _ => StoreError::Backend(format!("{e:?}")),
    }
}

fn allowance_key(client: &str, day: &str) -> String {
    format!("ALLOW#{client}#{day}")
}

/// The item counting the free calls of all clients on `day` (the free budget).
fn budget_key(day: &str) -> String {
    format!("FREEBUDGET#{day}")
}

fn agent_key(agent: &str) -> String {
    format!("AGENT#{agent}")
}

/// Unix seconds at the end of the kept period of a `YYYY-MM-DD` day.
fn allowance_expiry(day: &str) -> i64 {
    let parsed = time::Date::parse(
        day,
        time::macros::format_description!("[year]-[month]-[day]"),
    );
    let start = parsed.map_or_else(
        |_| time::OffsetDateTime::now_utc().unix_timestamp(),
        |d| d.midnight().assume_utc().unix_timestamp(),
    );
    start + (1 + ALLOWANCE_KEEP_DAYS) * 86_400
}

/// Jittered exponential backoff for conflicting transactions.
async fn backoff(attempt: u32) {
    let mut r = [0u8; 2];
    let _ = getrandom::fill(&mut r);
    let base = 5u64 << attempt.min(6);
    let jitter = u64::from(u16::from_le_bytes(r)) % base.max(1);
    tokio::time::sleep(Duration::from_millis(base + jitter)).await;
}

impl DynamoStore {
    /// Put `item` unless an item with its key exists (a conditional put): `Ok(false)` when one
    /// did, and nothing was written.
    async fn put_if_absent(
        &self,
        item: HashMap<String, AttributeValue>,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        applied(result, |e| {
            matches!(
                e,
                aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(_)
            )
        })
    }

    /// A store over `table` with a client built from the environment (`AWS_REGION`,
    /// credentials, `AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local).
    pub async fn from_env(table: &str) -> Self {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self::new(Client::new(&config), table)
    }

    /// A store over `table` with a given client.
    pub fn new(client: Client, table: &str) -> Self {
        DynamoStore {
            client,
            table: table.to_owned(),
            lease: Arc::default(),
            refill: Arc::default(),
            outcome_retention: None,
        }
    }

    /// Outcomes are dropped `days` after their verification: a history no longer lists them,
    /// and the agent's next write removes them from its item (rows of earlier versions carry
    /// `expires_at`, which the table's TTL deletes); the agent's counters stay. 0: kept for
    /// good (the default).
    pub fn with_outcome_retention(mut self, days: u32) -> Self {
        self.outcome_retention = (days > 0).then_some(i64::from(days) * 86_400);
        self
    }

    /// Create the table (on demand, `pk`/`sk`, TTL on `expires_at`) unless it exists.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let exists = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
            .is_ok();
        if !exists {
            let attr = |name: &str| {
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(backend)
            };
            let key = |name: &str, kind: KeyType| {
                KeySchemaElement::builder()
                    .attribute_name(name)
                    .key_type(kind)
                    .build()
                    .map_err(backend)
            };
            self.client
                .create_table()
                .table_name(&self.table)
                .billing_mode(BillingMode::PayPerRequest)
                .attribute_definitions(attr("pk")?)
                .attribute_definitions(attr("sk")?)
                .key_schema(key("pk", KeyType::Hash)?)
                .key_schema(key("sk", KeyType::Range)?)
                .send()
                .await
                .map_err(classify)?;
        }
        for _ in 0..100 {
            let status = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(classify)?
                .table
                .and_then(|t| t.table_status);
            if status == Some(aws_sdk_dynamodb::types::TableStatus::Active) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ttl = TimeToLiveSpecification::builder()
            .attribute_name("expires_at")
            .enabled(true)
            .build()
            .map_err(backend)?;
        // Already enabled is not an error worth failing on.
        let _ = self
            .client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(ttl)
            .send()
            .await;
        Ok(())
    }

    fn allowance_update(&self, client: &str, day: &str, limit: u64) -> Result<Update, StoreError> {
        Update::builder()
            .table_name(&self.table)
            .key("pk", s(allowance_key(client, day)))
            .key("sk", s("ALLOW"))
            .update_expression("ADD #used :one SET #exp = if_not_exists(#exp, :exp)")
            .condition_expression("attribute_not_exists(#used) OR #used < :limit")
            .expression_attribute_names("#used", "used")
            .expression_attribute_names("#exp", "expires_at")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(limit))
            .expression_attribute_values(":exp", n(allowance_expiry(day)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(backend)
    }

    /// The conditional update claiming `units` of the day's free budget across all clients:
    /// applied only while they fit (`used + units <= total`).
    fn budget_update(&self, day: &str, total: u64, units: u64) -> Result<Update, StoreError> {
        Update::builder()
            .table_name(&self.table)
            .key("pk", s(budget_key(day)))
            .key("sk", s("TOTAL"))
            .update_expression("ADD #used :units SET #exp = if_not_exists(#exp, :exp)")
            .condition_expression("attribute_not_exists(#used) OR #used <= :max")
            .expression_attribute_names("#used", "used")
            .expression_attribute_names("#exp", "expires_at")
            .expression_attribute_values(":units", n(units))
            .expression_attribute_values(":max", n(total.saturating_sub(units)))
            .expression_attribute_values(":exp", n(allowance_expiry(day)))
            .build()
            .map_err(backend)
    }

    /// Send one [`Update`] on its own (not in a transaction), answering the new values.
    async fn update_alone(
        &self,
        update: &Update,
    ) -> Result<
        aws_sdk_dynamodb::operation::update_item::UpdateItemOutput,
        SdkError<
            aws_sdk_dynamodb::operation::update_item::UpdateItemError,
            aws_sdk_dynamodb::config::http::HttpResponse,
        >,
    > {
        self.client
            .update_item()
            .table_name(update.table_name())
            .set_key(Some(update.key().clone()))
            .update_expression(update.update_expression())
            .set_condition_expression(update.condition_expression().map(str::to_owned))
            .set_expression_attribute_names(update.expression_attribute_names().cloned())
            .set_expression_attribute_values(update.expression_attribute_values().cloned())
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await
    }

    /// Claim a block of [`LEASE_UNITS`] of the day's budget (one conditional update); when a
    /// block no longer fits, one unit. The units claimed: 0 when the budget is spent.
    async fn lease_budget(&self, day: &str, total: u64) -> Result<u64, StoreError> {
        let block = LEASE_UNITS.min(total);
        let sizes: &[u64] = if block > 1 { &[block, 1] } else { &[1] };
        for &units in sizes {
            let update = self.budget_update(day, total, units)?;
            let claimed = applied(self.update_alone(&update).await, update_condition_failed)?;
            if claimed {
                return Ok(units);
            }
        }
        Ok(0)
    }

    /// A free claim before the work ([`Store::claims_before_work`]): the client's conditional
    /// update, which answers the new count; then, with a budget, a unit of this process's
    /// lease — refilled with a block (one more round trip, once per [`LEASE_UNITS`] calls)
    /// by one caller at a time, so a process answers "spent" only when the table has no unit
    /// left and it holds none. Units are taken only for granted calls, so none is stranded
    /// by a client whose own allowance is spent.
    async fn claim_before_work(
        &self,
        client: &str,
        day: &str,
        limit: FreeLimit,
    ) -> Result<FreeClaim, StoreError> {
        let update = self.allowance_update(client, day, limit.per_client)?;
        let claim = self.claim_allowance(update, limit.per_client).await?;
        let (Some(total), FreeClaim::Granted { .. }) = (limit.total, claim) else {
            return Ok(claim);
        };
        let unit = match self.budget_unit(day, total).await {
            Ok(unit) => unit,
            Err(e) => {
                self.give_back(client, day).await?;
                return Err(e);
            }
        };
        if unit {
            Ok(claim)
        } else {
            self.give_back(client, day).await?;
            Ok(FreeClaim::BudgetSpent)
        }
    }

    /// One unit of the day's budget: from the lease, or from a block claimed now.
    async fn budget_unit(&self, day: &str, total: u64) -> Result<bool, StoreError> {
        if self.lease.take(day) {
            return Ok(true);
        }
        let _refilling = self.refill.lock().await;
        if self.lease.take(day) {
            return Ok(true);
        }
        let units = self.lease_budget(day, total).await?;
        self.lease.add(day, units.saturating_sub(1));
        Ok(units > 0)
    }

    /// Take one free call back from `client`'s count of `day` (never below zero).
    async fn give_back(&self, client: &str, day: &str) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(allowance_key(client, day)))
            .key("sk", s("ALLOW"))
            .update_expression("ADD #used :minus_one")
            .condition_expression("#used > :zero")
            .expression_attribute_names("#used", "used")
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        applied(result, update_condition_failed).map(|_| ())
    }

    /// The free allowance alone: the same conditional update, on its own.
    async fn claim_allowance(&self, update: Update, limit: u64) -> Result<FreeClaim, StoreError> {
        let result = self.update_alone(&update).await;
        match result {
            Ok(out) => Ok(FreeClaim::Granted {
                used: out.attributes.as_ref().map_or(1, |a| num(a, "used")),
            }),
            Err(SdkError::ServiceError(se)) => match se.err() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                    Ok(FreeClaim::Exhausted {
                        used: c.item().map_or(limit, |i| num(i, "used")),
                    })
                }
                _ => Err(classify(SdkError::ServiceError(se))),
            },
            Err(e) => Err(classify(e)),
        }
    }

    /// Run a transaction, retrying conflicts. `Ok(None)` when it committed;
    /// `Ok(Some(reasons))` when a condition failed (the cancellation reasons, item by item).
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Option<Reasons>, StoreError> {
        for attempt in 0..CONFLICT_ATTEMPTS {
            let token = uuid::Uuid::new_v4().to_string();
            let sent = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .client_request_token(token)
                .send()
                .await;
            let err = match sent {
                Ok(_) => return Ok(None),
                Err(e) => e,
            };
            if let SdkError::ServiceError(se) = &err
                && let aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(tc) = se.err()
            {
                let reasons: Vec<(String, HashMap<String, AttributeValue>)> = tc
                    .cancellation_reasons()
                    .iter()
                    .map(|r| (r.code().unwrap_or("None").to_owned(), r.item().cloned().unwrap_or_default()))
                    .collect();
                let transient = reasons
                    .iter()
                    .any(|(code, _)| code == "TransactionConflict" || code.contains("Throttl"));
                if !transient {
                    return Ok(Some(reasons));
                }
                backoff(attempt).await;
                continue;
            }
            if let SdkError::ServiceError(se) = &err
                && aws_sdk_dynamodb::error::ProvideErrorMetadata::code(se.err())
                    == Some("TransactionInProgressException")
            {
                backoff(attempt).await;
                continue;
            }
            return Err(classify(err));
        }
        Err(StoreError::Unavailable)
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn claim_free_within(
        &self,
        client: &str,
        day: &str,
        limit: FreeLimit,
        outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError> {
        // A budget of 0 grants nothing (the condition below would let a first call through).
        if limit.total == Some(0) {
            return Ok(FreeClaim::BudgetSpent);
        }
        // Nor does an allowance of 0 (the client's condition would let a first call through).
        if limit.per_client == 0 {
            return Ok(FreeClaim::Exhausted { used: 0 });
        }
        let Some(outcome) = outcome else {
            return self.claim_before_work(client, day, limit).await;
        };
        let update = self.allowance_update(client, day, limit.per_client)?;
        // The client's count, then (with a budget) the day's total: one transaction, so both
        // conditions hold together or nothing is written.
        let mut counts = vec![TransactWriteItem::builder().update(update.clone()).build()];
        if let Some(total) = limit.total {
            let budget = self.budget_update(day, total, 1)?;
            counts.push(TransactWriteItem::builder().update(budget).build());
        }
        let first_outcome_item = counts.len();
        let mut items = counts.clone();
        let entry = recent::encode(&outcome);
        items.extend(self.outcome_items(&outcome, &entry)?);
        let reasons = match self
            .transact_outcome(items, first_outcome_item, &entry, &outcome.agent_id)
            .await?
        {
            // The signed deliverable was recorded before: the call is granted, its outcome
            // is not counted twice.
            Some(reasons) if deliverable_seen(&reasons, first_outcome_item) => {
                if limit.total.is_none() {
                    return self.claim_allowance(update, limit.per_client).await;
                }
                self.transact(counts).await?
            }
            other => other,
        };
        match reasons {
            None => {
                // Committed; read the new count for the headers (consistent).
                let used = self.free_used(client, day).await.unwrap_or(1);
                Ok(FreeClaim::Granted { used })
            }
            Some(reasons) => match reasons
                .iter()
                .position(|(code, _)| code == "ConditionalCheckFailed")
            {
                Some(0) => {
                    let item = &reasons[0].1;
                    Ok(FreeClaim::Exhausted {
                        used: if item.is_empty() {
                            limit.per_client
                        } else {
                            num(item, "used")
                        },
                    })
                }
                Some(1) if limit.total.is_some() => Ok(FreeClaim::BudgetSpent),
                _ => Err(StoreError::Backend(format!(
                    "transaction cancelled: {:?}",
                    reasons.iter().map(|r| &r.0).collect::<Vec<_>>()
                ))),
            },
        }
    }

    async fn free_used(&self, client: &str, day: &str) -> Result<u64, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(allowance_key(client, day)))
            .key("sk", s("ALLOW"))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.item.as_ref().map_or(0, |i| num(i, "used")))
    }

    fn claims_before_work(&self) -> bool {
        true
    }

    async fn release_free(&self, client: &str, day: &str, total: bool) -> Result<(), StoreError> {
        self.give_back(client, day).await?;
        if total {
            // The budget's unit stays claimed in the table; this process grants it again.
            self.lease.add(day, 1);
        }
        Ok(())
    }

    async fn record(&self, outcome: Outcome) -> Result<(), StoreError> {
        if outcome.signed_deliverable.is_none() {
            return self.append_outcome(&outcome).await;
        }
        let entry = recent::encode(&outcome);
        let items = self.outcome_items(&outcome, &entry)?;
        match self
            .transact_outcome(items, 0, &entry, &outcome.agent_id)
            .await?
        {
            None => Ok(()),
            Some(reasons) if deliverable_seen(&reasons, 0) => Ok(()),
            Some(reasons) => Err(StoreError::Backend(format!(
                "transaction cancelled: {:?}",
                reasons.iter().map(|r| &r.0).collect::<Vec<_>>()
            ))),
        }
    }

    async fn record_settlement(&self, settlement: &Settlement) -> Result<(), StoreError> {
        self.put_settlement(settlement).await
    }

    async fn settlements(
        &self,
        since: i64,
        until: i64,
        limit: usize,
    ) -> Result<Vec<Settlement>, StoreError> {
        self.query_settlements(since, until, limit).await
    }

    async fn set_blocked(
        &self,
        target: &BlockTarget,
        blocked: bool,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.put_block(target, blocked, now).await
    }

    async fn blocks(&self) -> Result<Vec<Block>, StoreError> {
        self.query_blocks().await
    }

    async fn erase_agent(&self, agent_id: &str) -> Result<u64, StoreError> {
        self.delete_agent(agent_id).await
    }

    async fn history(&self, agent_id: &str, recent: usize) -> Result<AgentHistory, StoreError> {
        self.read_history(agent_id, recent).await
    }

    async fn claim_payment(&self, key: &str, keep_until: i64) -> Result<bool, StoreError> {
        self.put_if_absent(HashMap::from([
            ("pk".to_owned(), s(format!("PAY#{key}"))),
            ("sk".to_owned(), s("PAY")),
            ("state".to_owned(), s(PaymentState::Claimed.as_str())),
            ("expires_at".to_owned(), n(keep_until)),
        ]))
        .await
    }

    async fn advance_payment(
        &self,
        key: &str,
        from: PaymentState,
        to: PaymentState,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(format!("PAY#{key}")))
            .key("sk", s("PAY"))
            .update_expression("SET #state = :to")
            .condition_expression("#state = :from")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":from", s(from.as_str()))
            .expression_attribute_values(":to", s(to.as_str()))
            .send()
            .await;
        applied(result, update_condition_failed)
    }

    async fn release_payment(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(format!("PAY#{key}")))
            .key("sk", s("PAY"))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn paid_answer(&self, id: &str, now: i64) -> Result<Option<PaidAnswer>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(format!("PAYID#{id}")))
            .key("sk", s("ANSWER"))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        // TTL deletion lags expiry by up to days: an expired item is treated as gone.
        if i64::try_from(num(&item, "expires_at")).unwrap_or(0) <= now {
            return Ok(None);
        }
        let text = |name: &str| {
            item.get(name)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .ok_or_else(|| StoreError::Backend(format!("paid answer without {name}")))
        };
        Ok(Some(PaidAnswer {
            fingerprint: text("fingerprint")?,
            body: text("body")?,
            settlement: text("settlement")?,
        }))
    }

    async fn keep_paid_answer(
        &self,
        id: &str,
        answer: &PaidAnswer,
        keep_until: i64,
    ) -> Result<(), StoreError> {
        self.put_if_absent(HashMap::from([
            ("pk".to_owned(), s(format!("PAYID#{id}"))),
            ("sk".to_owned(), s("ANSWER")),
            ("fingerprint".to_owned(), s(answer.fingerprint.clone())),
            ("body".to_owned(), s(answer.body.clone())),
            ("settlement".to_owned(), s(answer.settlement.clone())),
            ("expires_at".to_owned(), n(keep_until)),
        ]))
        .await
        .map(|_| ())
    }
}

/// Whether a cancelled transaction failed only on a signed deliverable's once-only marker:
/// `first` is the index of the outcome's first item (the marker is the one after it).
fn deliverable_seen(reasons: &[(String, HashMap<String, AttributeValue>)], first: usize) -> bool {
    reasons
        .iter()
        .enumerate()
        .all(|(i, (code, _))| (code == "ConditionalCheckFailed") == (i == first + 1))
        && reasons.len() > first + 1
}
