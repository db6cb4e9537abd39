//! The storage port: the free allowance, the per-agent history and the payment replay guard.
//! Two adapters implement it beside the service: the embedded store (`verifier-store-embedded`,
//! the local server) and DynamoDB (`verifier-store-dynamo`, production); [`super::no_table`] is
//! the store of a function with no table.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Days an allowance row is kept after its day (DynamoDB's TTL removes it then; the embedded
/// store drops it once claims are made on a later day still).
pub const ALLOWANCE_KEEP_DAYS: i64 = 2;

/// The newest outcomes of an agent a store must keep for its history (what `/reputation`
/// lists); older ones may be dropped while the counts stay.
pub const RECENT_OUTCOMES_KEPT: usize = 20;

/// One verification's outcome, as an agent's history keeps it (no task content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub agent_id: String,
    pub verification_id: String,
    /// `pass` or `fail`.
    pub result: String,
    pub verified_at: String,
    /// For a key-based agent, its signed deliverable (SHA-256 of the signed message: agent,
    /// task, output): an outcome for a deliverable already recorded is not recorded again, so
    /// one signature counts once however often it is submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_deliverable: Option<String>,
    /// Whether the verification was paid for (not a free call).
    #[serde(default)]
    pub paid: bool,
    /// The checks the verification ran (at least 1: a verification that checked nothing is
    /// never recorded).
    #[serde(default)]
    pub checks: u64,
}

impl Outcome {
    /// Whether the verification passed.
    pub fn passed(&self) -> bool {
        self.result == "pass"
    }
}

/// The answer of a free-allowance claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreeClaim {
    /// Granted; `used` counts this call.
    Granted { used: u64 },
    /// The client's allowance for the day is spent; nothing was recorded.
    Exhausted { used: u64 },
    /// The day's free budget across all clients is spent; nothing was recorded.
    BudgetSpent,
}

/// How many free calls a day may grant: to one client, and to all clients together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeLimit {
    pub per_client: u64,
    /// The day's budget across all clients (none: no such budget).
    pub total: Option<u64>,
}

impl FreeLimit {
    /// A per-client limit and no total budget.
    pub fn per_client(per_client: u64) -> Self {
        FreeLimit {
            per_client,
            total: None,
        }
    }
}

/// An agent's pass/fail counts and most recent outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentHistory {
    pub passes: u64,
    pub fails: u64,
    /// Of the counted verifications, how many were paid for.
    pub paid: u64,
    /// The checks all counted verifications ran together.
    pub checks: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// Newest first.
    pub recent: Vec<Outcome>,
}

/// A settled paid answer kept under its x402 payment identifier, so a client whose answer was
/// lost can get it again without paying twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaidAnswer {
    /// What must match for the answer to be returned (see `payments::identifier::fingerprint`).
    pub fingerprint: String,
    /// The response body as it was answered (JSON).
    pub body: String,
    /// The settlement response (`PAYMENT-RESPONSE`), as JSON.
    pub settlement: String,
}

/// Where a claimed payment stands. A claim starts `Claimed`; it is `Settling` while the
/// facilitator settles it, `Settled` once it did. A claim that never reached settlement is
/// released (forgotten); one whose settlement outcome is unknown stays `Settling`, so the same
/// payment sent again can take it over ([`Store::advance_payment`]) instead of being a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PaymentState {
    Claimed,
    Settling,
    Settled,
}

impl PaymentState {
    /// The name stored for the state.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentState::Claimed => "claimed",
            PaymentState::Settling => "settling",
            PaymentState::Settled => "settled",
        }
    }
}

/// Whom an operator blocked: a client network (an address is its /32 or /128) or an agent ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum BlockTarget {
    /// A client network in CIDR form (`203.0.113.0/24`, `2001:db8::/48`, `198.51.100.7/32`).
    Client(String),
    /// An agent ID: requests naming it are refused.
    Agent(String),
}

impl BlockTarget {
    /// The key it is stored under (`client:<cidr>`, `agent:<id>`).
    pub fn key(&self) -> String {
        match self {
            BlockTarget::Client(net) => format!("client:{net}"),
            BlockTarget::Agent(id) => format!("agent:{id}"),
        }
    }

    /// The target a stored key names.
    pub fn from_key(key: &str) -> Option<Self> {
        if let Some(net) = key.strip_prefix("client:") {
            return Some(BlockTarget::Client(net.to_owned()));
        }
        key.strip_prefix("agent:")
            .map(|id| BlockTarget::Agent(id.to_owned()))
    }
}

/// One block and since when (unix seconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub target: BlockTarget,
    pub since: i64,
}

/// A settled payment as the accounting export lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    /// When it settled (unix seconds).
    pub at: i64,
    /// CAIP-2 network (`eip155:8453`, `solana:…`).
    pub network: String,
    /// The payer's address.
    pub payer: String,
    /// USDC atomic units (6 decimals).
    pub amount: String,
    /// The settlement transaction.
    pub transaction: String,
    /// The route it paid for (`/verify/schema`, `/score/{agent_id}`, the MCP tool's route).
    pub route: String,
}

/// Store failures; all are retryable from the caller's point of view.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend is busy or briefly unreachable.
    #[error("the store is temporarily unavailable")]
    Unavailable,
    /// The backend failed.
    #[error("the store failed: {0}")]
    Backend(String),
}

/// The free allowance and agent history.
#[async_trait]
pub trait Store: Send + Sync {
    /// Claim one free call for `client` on `day` if fewer than `limit` were used, and record
    /// `outcome` in the same atomic step. Exhausted claims record nothing.
    async fn claim_free(
        &self,
        client: &str,
        day: &str,
        limit: u64,
        outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError> {
        self.claim_free_within(client, day, FreeLimit::per_client(limit), outcome)
            .await
    }

    /// Claim one free call for `client` on `day` if fewer than `limit.per_client` were used by
    /// it and, with a total, fewer than `limit.total` by all clients together; record `outcome`
    /// in the same atomic step (exact under concurrency). Refused claims record nothing.
    async fn claim_free_within(
        &self,
        client: &str,
        day: &str,
        limit: FreeLimit,
        outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError>;

    /// Free calls `client` used on `day`.
    async fn free_used(&self, client: &str, day: &str) -> Result<u64, StoreError>;

    /// Whether free calls are cheaper claimed before the work (`claim_free_within` without an
    /// outcome) and recorded after it ([`Store::record`]) than claimed with their outcome in
    /// one step: DynamoDB, where one conditional update returns the new count and a transaction
    /// of every item costs double. A claim whose answer is not given is then handed back with
    /// [`Store::release_free`].
    fn claims_before_work(&self) -> bool {
        false
    }

    /// Give back one free call of `client` on `day` (and, with `total`, its unit of the day's
    /// budget) that was claimed without an outcome and not answered; never below zero.
    async fn release_free(&self, client: &str, day: &str, total: bool) -> Result<(), StoreError>;

    /// Record a paid verification's outcome.
    async fn record(&self, outcome: Outcome) -> Result<(), StoreError>;

    /// An agent's history with up to `recent` newest outcomes.
    async fn history(&self, agent_id: &str, recent: usize) -> Result<AgentHistory, StoreError>;

    /// Claim a payment's identity (network, payer and nonce or transaction) once, in state
    /// `Claimed`, keeping it until `keep_until` (unix seconds). `Ok(false)` when it was
    /// claimed before.
    async fn claim_payment(&self, key: &str, keep_until: i64) -> Result<bool, StoreError>;

    /// Move a claimed payment from state `from` to `to` if it is in `from` (one caller wins a
    /// race); `Ok(false)` when it is not (another state, or no claim). A claim made before
    /// payment states existed counts as settled.
    async fn advance_payment(
        &self,
        key: &str,
        from: PaymentState,
        to: PaymentState,
    ) -> Result<bool, StoreError>;

    /// Forget a payment claimed by [`Store::claim_payment`] that was never settled, so the
    /// same payment can be sent again. Forgetting an unknown key is not an error.
    async fn release_payment(&self, key: &str) -> Result<(), StoreError>;

    /// The answer kept under payment identifier `id`, unless none is or it expired before `now`
    /// (unix seconds).
    async fn paid_answer(&self, id: &str, now: i64) -> Result<Option<PaidAnswer>, StoreError>;

    /// Keep `answer` under `id` until `keep_until` (unix seconds). The first answer kept under
    /// an id stays; keeping another is a no-op.
    async fn keep_paid_answer(
        &self,
        id: &str,
        answer: &PaidAnswer,
        keep_until: i64,
    ) -> Result<(), StoreError>;

    /// Keep a settled payment for the accounting export (kept for good). Recording the same
    /// settlement (network and transaction) twice keeps one.
    async fn record_settlement(&self, _settlement: &Settlement) -> Result<(), StoreError> {
        Err(unsupported())
    }

    /// The settled payments from `since` (unix seconds, inclusive) to `until` (exclusive),
    /// oldest first, at most `limit`.
    async fn settlements(
        &self,
        _since: i64,
        _until: i64,
        _limit: usize,
    ) -> Result<Vec<Settlement>, StoreError> {
        Err(unsupported())
    }

    /// Block (`blocked`) or unblock a client network or an agent ID; `Ok(false)` when it
    /// already was so.
    async fn set_blocked(
        &self,
        _target: &BlockTarget,
        _blocked: bool,
        _now: i64,
    ) -> Result<bool, StoreError> {
        Err(unsupported())
    }

    /// Every block, at most [`MAX_BLOCKS`].
    async fn blocks(&self) -> Result<Vec<Block>, StoreError> {
        Ok(Vec::new())
    }

    /// Erase an agent's history (its counters and outcomes): its score answers as for an agent
    /// without data. Receipts already issued stay valid (they are signed, not stored). The
    /// number of outcomes erased.
    async fn erase_agent(&self, _agent_id: &str) -> Result<u64, StoreError> {
        Err(unsupported())
    }
}

/// The most blocks a store keeps: each request is checked against every client network, so
/// this bounds the check (about 3 µs at the limit).
pub const MAX_BLOCKS: usize = 1000;

fn unsupported() -> StoreError {
    StoreError::Backend("this store keeps no operator data (blocks, settlements)".into())
}
